//! `footprint::par` loops and bandwidth control: a chunk loop declares the bytes of its slices,
//! and an unreserved loop beside a reserved thread that is behind its rate is throttled at its
//! chunk boundaries. Waits are for conditions under a watchdog deadline.

use footprint::bandwidth::{self, Capacity};
use footprint::par::{self, Schedule};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[test]
fn a_chunk_loop_declares_its_slices() {
    let rt = footprint::Runtime::builder().workers(2).build().unwrap();
    let mut v = vec![0u64; 10_000];
    rt.block_on(|| {
        par::for_each_chunk_mut(&mut v, 1000, Schedule::Dynamic(1), |i, c| c.fill(i as u64))
    });
    assert_eq!(rt.stats().bandwidth.declared_bytes, 8 * 10_000);
    assert_eq!(v[9_999], 9);
}

#[test]
fn an_unreserved_loop_is_throttled_per_chunk() {
    let rt = footprint::Runtime::builder().workers(2).build().unwrap();
    rt.set_bandwidth_capacity(Capacity::new(1e9, 2).unwrap())
        .unwrap();
    let stop = AtomicBool::new(false);
    rt.block_on(|| {
        footprint::scope(|s| {
            // The reserved thread: a green thread of its own, far behind its 100 MB/s.
            s.spawn(|| {
                let _r = rt.reserve_bandwidth(100e6).unwrap();
                let deadline = Instant::now() + Duration::from_secs(60);
                while rt.stats().bandwidth.delays < 3 {
                    assert!(
                        Instant::now() < deadline,
                        "watchdog: {}",
                        rt.stats().bandwidth
                    );
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(2) {
                        std::hint::spin_loop();
                    }
                    bandwidth::record_traffic(1);
                    footprint::yield_now();
                }
                assert_eq!(
                    bandwidth::current_delays().0,
                    0,
                    "reserved threads never wait"
                );
                stop.store(true, Ordering::Relaxed);
            });
            // The unreserved loop on this thread: its chunks are its switch points.
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut data = vec![0u8; 1 << 20];
            while !stop.load(Ordering::Relaxed) {
                assert!(
                    Instant::now() < deadline,
                    "watchdog: {}",
                    rt.stats().bandwidth
                );
                par::for_each_chunk_mut(&mut data, 64 << 10, Schedule::Static, |_, c| {
                    c.iter_mut().for_each(|x| *x = x.wrapping_add(1))
                });
                footprint::yield_now();
            }
        })
    });
    let s = rt.stats().bandwidth;
    assert!(s.delays >= 3 && s.behind_intervals >= 1, "{s}");
}
