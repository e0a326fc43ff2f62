//! The active wait of a channel waiter on green threads before it parks (on a bounded channel
//! with places: a poll while the other side moves, yielding to the threads queued on its
//! worker; on the locked path: the first waiter of a side spins while the other side runs
//! elsewhere): a three-stage pipeline with one green thread per stage on two workers, so that a
//! waiter often finds nothing queued on its worker, with the kernel's oversubscription signal
//! forced off (the machine the tests run on may be loaded, and then no waiter polls or spins);
//! and a farm of more receivers than may poll at once. Exact
//! counts and per-stage order, small and large buffers, blocking and timed operations; a
//! watchdog turns a lost wake-up into a failure. Its own test binary: the forced signal is
//! process-wide.

mod common;

use common::{runtime, with_watchdog};
use footprint::channel;
use std::time::Duration;

/// Serialises the tests of this binary: each forces the process-wide signal and puts it back.
static SIGNAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Messages per run: enough that both sides wait many times at each capacity.
const MESSAGES: u64 = 20_000;

/// producer → `bounded(cap)` → stage (`v * 3`) → `bounded(cap)` → consumer; returns the
/// consumer's count and sum, checking that messages arrive in order. `timed`: the stage
/// and the consumer use the timeout variants (long timeouts: they never expire here).
fn pipeline(rt: &footprint::Runtime, cap: usize, timed: bool) -> (u64, u64) {
    rt.block_on(|| {
        let (tx1, rx1) = channel::bounded::<u64>(cap);
        let (tx2, rx2) = channel::bounded::<u64>(cap);
        let long = Duration::from_secs(60);
        let producer = footprint::spawn(move || {
            for v in 0..MESSAGES {
                tx1.send(v).expect("the stage receives");
            }
        });
        let stage = footprint::spawn(move || loop {
            let v = if timed {
                match rx1.recv_timeout(long) {
                    Ok(v) => v,
                    Err(channel::RecvTimeoutError::Disconnected) => break,
                    Err(channel::RecvTimeoutError::Timeout) => panic!("a 60 s timeout expired"),
                }
            } else {
                match rx1.recv() {
                    Ok(v) => v,
                    Err(channel::RecvError) => break,
                }
            };
            if timed {
                tx2.send_timeout(v * 3, long)
                    .expect("the consumer receives in time");
            } else {
                tx2.send(v * 3).expect("the consumer receives");
            }
        });
        let consumer = footprint::spawn(move || {
            let (mut n, mut sum, mut last) = (0u64, 0u64, None);
            for v in rx2.iter() {
                assert!(last < Some(v), "{v} after {last:?}: out of order");
                last = Some(v);
                n += 1;
                sum += v;
            }
            (n, sum)
        });
        producer.join().unwrap();
        stage.join().unwrap();
        consumer.join().unwrap()
    })
}

/// A farm: one producer → `bounded(cap)` → `receivers` green receivers, each message taken
/// once. Returns how many each receiver took, summed, and the sum of the messages.
fn farm(rt: &footprint::Runtime, cap: usize, receivers: usize) -> (u64, u64) {
    rt.block_on(|| {
        let (tx, rx) = channel::bounded::<u64>(cap);
        let handles: Vec<_> = (0..receivers)
            .map(|_| {
                let rx = rx.clone();
                footprint::spawn(move || rx.iter().fold((0u64, 0u64), |(n, s), v| (n + 1, s + v)))
            })
            .collect();
        drop(rx);
        for v in 0..MESSAGES {
            tx.send(v).expect("the receivers receive");
        }
        drop(tx);
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .fold((0, 0), |(n, s), (a, b)| (n + a, s + b))
    })
}

/// More receivers than may poll one side at once (4 per worker): the ones over the cap park
/// at once, the pollers take messages as the producer sends them, and every message is
/// delivered exactly once with nobody left waiting.
#[test]
fn farm_with_more_receivers_than_pollers_exact_counts() {
    let _serial = SIGNAL.lock().unwrap_or_else(|e| e.into_inner());
    footprint::locks::os::force_oversubscribed(Some(false));
    with_watchdog(
        120,
        "channel farm with pollers and parked receivers",
        || {
            let rt = runtime(2);
            let want = (MESSAGES, MESSAGES * (MESSAGES - 1) / 2);
            for (cap, receivers) in [(1, 3), (4, 64), (64, 200)] {
                assert_eq!(
                    farm(&rt, cap, receivers),
                    want,
                    "capacity {cap}, {receivers} receivers"
                );
            }
        },
    );
    footprint::locks::os::force_oversubscribed(None);
}

#[test]
fn pipeline_with_spinning_waiters_exact_counts() {
    let _serial = SIGNAL.lock().unwrap_or_else(|e| e.into_inner());
    footprint::locks::os::force_oversubscribed(Some(false));
    with_watchdog(120, "channel pipeline with spinning waiters", || {
        let rt = runtime(2);
        let want = (MESSAGES, 3 * MESSAGES * (MESSAGES - 1) / 2);
        for cap in [1, 2, 64] {
            for timed in [false, true] {
                assert_eq!(
                    pipeline(&rt, cap, timed),
                    want,
                    "capacity {cap}, timed {timed}"
                );
            }
        }
    });
    footprint::locks::os::force_oversubscribed(None);
}
