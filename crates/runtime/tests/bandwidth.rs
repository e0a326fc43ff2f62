//! Bandwidth reservation and throttling of green threads, with scripted traffic (declared
//! bytes: this machine has no PMU and no resctrl). Waits are for conditions, each bounded by a
//! watchdog deadline; no assertion depends on how fast anything runs.

use footprint_runtime::bandwidth::{self, BandwidthError, Capacity};
use footprint_runtime::{Error, GreenBuilder, Runtime};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WATCHDOG: Duration = Duration::from_secs(60);

fn runtime(workers: usize, capacity: f64) -> Runtime {
    let rt = Runtime::builder().workers(workers).build().unwrap();
    rt.set_bandwidth_capacity(Capacity::new(capacity, workers).unwrap())
        .unwrap();
    rt
}

/// Spins for about `d` of the green thread's time (work between switch points).
fn busy(d: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn admission_refuses_with_what_is_left_and_releases_on_drop() {
    let rt = runtime(4, 1e9);
    rt.block_on(|| {
        let a = rt.reserve_bandwidth(500e6).unwrap();
        match rt.reserve_bandwidth(400e6) {
            Err(Error::Bandwidth(BandwidthError::Refused(e))) => {
                let msg = e.to_string();
                assert!(msg.contains("MB/s free now"), "{msg}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(rt.stats().bandwidth.reservations, 1);
        assert!(matches!(
            rt.set_bandwidth_capacity(Capacity::new(2e9, 4).unwrap()),
            Err(Error::Bandwidth(BandwidthError::CapacityInUse {
                reservations: 1
            }))
        ));
        drop(a);
        assert_eq!(rt.stats().bandwidth.reservations, 0);
        assert!(rt.reserve_bandwidth(400e6).is_ok());
    });
    let other = runtime(2, 1e9);
    let r = other.block_on(|| rt.reserve_bandwidth(1e6).map(|_| ()));
    assert!(matches!(
        r,
        Err(Error::Bandwidth(BandwidthError::OtherRuntime))
    ));
    assert!(matches!(
        rt.reserve_bandwidth(1e6),
        Err(Error::NotGreen { .. })
    ));
}

/// A streamer beside a reserved thread that moves far less than it reserved (scripted: 1 byte
/// per 2 ms step against 100 MB/s) is throttled: it serves delays, the reserved thread none,
/// and the runtime shows the limit and the declared source.
#[test]
fn a_reserved_thread_behind_its_rate_throttles_the_streamer() {
    let rt = runtime(2, 1e9);
    let stop = Arc::new(AtomicBool::new(false));
    let (reserved_delays, streamer_delays) = rt.block_on(|| {
        let s2 = stop.clone();
        let streamer = GreenBuilder::new()
            .traffic(1 << 20)
            .spawn(move || {
                let deadline = Instant::now() + WATCHDOG;
                while !s2.load(Ordering::Relaxed) {
                    assert!(Instant::now() < deadline, "watchdog: never throttled");
                    busy(Duration::from_micros(50));
                    footprint_runtime::yield_now();
                }
                bandwidth::current_delays()
            })
            .unwrap();
        let s3 = stop.clone();
        let rt2 = &rt;
        let reserved = footprint_runtime::scope(|s| {
            s.spawn(move || {
                let _r = rt2.reserve_bandwidth(100e6).unwrap();
                let deadline = Instant::now() + WATCHDOG;
                // Behind until the streamer has been throttled a few times.
                while rt2.stats().bandwidth.delays < 5 {
                    assert!(
                        Instant::now() < deadline,
                        "watchdog: {}",
                        rt2.stats().bandwidth
                    );
                    busy(Duration::from_millis(2));
                    bandwidth::record_traffic(1);
                    footprint_runtime::yield_now();
                }
                s3.store(true, Ordering::Relaxed);
                bandwidth::current_delays()
            })
            .join()
            .unwrap()
        });
        (reserved, streamer.join().unwrap())
    });
    assert_eq!(reserved_delays.0, 0, "a reserved thread is never delayed");
    assert!(streamer_delays.0 >= 1, "{streamer_delays:?}");
    let s = rt.stats().bandwidth;
    assert!(s.behind_intervals >= 1, "{s}");
    assert_eq!(s.source.name(), "declared", "{s}");
    assert!(s.declared_bytes >= 1 << 20, "{s}");
}

/// Without a reservation, or with one that keeps its rate, nobody is throttled.
#[test]
fn no_throttle_while_reservations_keep_their_rate() {
    let rt = runtime(2, 1e9);
    rt.block_on(|| {
        let streamer = GreenBuilder::new()
            .traffic(1 << 20)
            .spawn(|| {
                for _ in 0..200 {
                    busy(Duration::from_micros(50));
                    footprint_runtime::yield_now();
                }
                bandwidth::current_delays()
            })
            .unwrap();
        let _r = rt.reserve_bandwidth(100e6).unwrap();
        for _ in 0..20 {
            busy(Duration::from_millis(1));
            // Far above its reservation per second of running time.
            bandwidth::record_traffic(1 << 30);
            footprint_runtime::yield_now();
        }
        assert_eq!(streamer.join().unwrap().0, 0);
    });
    let s = rt.stats().bandwidth;
    assert_eq!((s.delays, s.behind_intervals), (0, 0), "{s}");
    assert!(s.limit_per_thread.is_none());
}

#[test]
fn stats_name_the_source_or_why_there_is_none() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let s = rt.stats();
    let text = s.to_string();
    assert!(text.contains("bandwidth: traffic source"), "{text}");
    match &s.bandwidth.source {
        bandwidth::TrafficSource::None { reason } => {
            assert!(reason.contains("resctrl"), "{reason}")
        }
        bandwidth::TrafficSource::Resctrl { .. } | bandwidth::TrafficSource::Hardware { .. } => {}
        other => panic!("nothing declared yet: {other:?}"),
    }
}
