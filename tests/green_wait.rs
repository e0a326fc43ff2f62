//! The default `Mutex` under `GreenLockWait::Poll` (contended green threads poll while the lock
//! changes hands, and park when it does not), and under the default `Auto` on four workers
//! (which polls there): exact counts, with short holds (the polling path)
//! and holds longer than the poll's budget mixed in (the park after the poll), on one worker
//! (where a holder that yielded is queued behind its pollers until they yield) and on two. Its own
//! test binary: the switch is process-wide.

mod common;

use common::{runtime, with_watchdog};
use footprint::locks::green_wait::{self, GreenLockWait};
use std::sync::Arc;

/// Spins for about `micros` µs on the clock (a hold longer than the poll's budget).
fn hold_for(micros: u64) {
    let until = std::time::Instant::now() + std::time::Duration::from_micros(micros);
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn counts_exactly(workers: usize, rule: GreenLockWait) {
    const THREADS: usize = 16;
    const PER_THREAD: u64 = 4_000;
    let what = format!("Mutex under GreenLockWait::{rule:?} on {workers} worker(s)");
    with_watchdog(120, &what, move || {
        let rt = runtime(workers);
        let m = Arc::new(footprint::sync::Mutex::new(0u64));
        let contended = footprint::sync::stats::process_totals().contended;
        let total = green_wait::with_green_lock_wait(rule, || {
            rt.block_on(|| {
                let hs: Vec<_> = (0..THREADS as u64)
                    .map(|t| {
                        let m = m.clone();
                        footprint::spawn(move || {
                            for i in 0..PER_THREAD {
                                let mut g = m.lock();
                                *g += 1;
                                if (t + i) % 500 == 0 {
                                    hold_for(20);
                                }
                                if (t + i) % 50 == 0 {
                                    // Queued behind the threads that now find the lock held.
                                    footprint::yield_now();
                                }
                            }
                        })
                    })
                    .collect();
                for h in hs {
                    h.join().unwrap();
                }
                *m.lock()
            })
        });
        assert_eq!(total, THREADS as u64 * PER_THREAD);
        assert!(
            footprint::sync::stats::process_totals().contended > contended,
            "the threads met the lock held (the path under test)"
        );
    });
}

#[test]
fn poll_rule_counts_exactly_on_one_worker() {
    counts_exactly(1, GreenLockWait::Poll);
}

#[test]
fn poll_rule_counts_exactly_on_two_workers() {
    counts_exactly(2, GreenLockWait::Poll);
}

#[test]
fn auto_rule_counts_exactly_on_four_workers() {
    assert_eq!(GreenLockWait::Auto.for_workers(4), GreenLockWait::Poll);
    counts_exactly(4, GreenLockWait::Auto);
}
