//! Parallel loops nest inside green threads, `scope`s and other loops, may block on footprint's
//! locks, and hand a panic to their caller once every participant has stopped. All under
//! watchdogs: a hang fails the test.

mod common;

use common::{runtime, with_watchdog, WORKER_COUNTS};
use footprint::par::{self, prelude::*, Affinity, Schedule};
use footprint::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

fn schedules() -> [Schedule; 5] {
    [
        Schedule::Static,
        Schedule::Dynamic(3),
        Schedule::Guided(2),
        Schedule::Affinity(Affinity::new()),
        Schedule::default(),
    ]
}

#[test]
fn loops_nest_inside_loops_scopes_and_spawned_green_threads() {
    for workers in WORKER_COUNTS {
        with_watchdog(120, "nested loops", move || {
            let rt = runtime(workers);
            for s in schedules() {
                let count = AtomicU64::new(0);
                rt.block_on(|| {
                    par::for_each(0..12, s.clone(), |i| {
                        par::for_each(0..(i * 10), s.clone(), |_| {
                            count.fetch_add(1, Ordering::Relaxed);
                        })
                    })
                });
                assert_eq!(
                    count.into_inner(),
                    (0..12).map(|i| i * 10).sum::<usize>() as u64
                );
                let sums = rt.block_on(|| {
                    footprint::scope(|sc| {
                        let hs: Vec<_> = (0..4u64)
                            .map(|k| {
                                let s = s.clone();
                                sc.spawn(move || {
                                    par::map_reduce(
                                        0..1000,
                                        s,
                                        |i| i as u64 * k,
                                        || 0,
                                        |a, b| a + b,
                                    )
                                })
                            })
                            .collect();
                        hs.into_iter()
                            .map(|h| h.join().unwrap())
                            .collect::<Vec<_>>()
                    })
                });
                assert_eq!(sums, (0..4u64).map(|k| 499_500 * k).collect::<Vec<_>>());
                let s2 = s.clone();
                let h = rt.spawn(move || {
                    (0..500usize)
                        .into_par_iter()
                        .with_schedule(s2)
                        .sum::<usize>()
                });
                assert_eq!(h.join().unwrap(), 124_750);
            }
        });
    }
}

#[test]
fn a_body_may_block_on_a_footprint_mutex() {
    for workers in WORKER_COUNTS {
        with_watchdog(120, "blocking body", move || {
            let rt = runtime(workers);
            for s in schedules() {
                let total = Mutex::new(0u64);
                rt.block_on(|| {
                    par::for_each(0..2000, s.clone(), |i| {
                        let mut g = total.lock();
                        // Yield while holding the lock: the other participants' lock calls
                        // wait (spin, then park their green thread) meanwhile.
                        if i % 50 == 0 {
                            footprint::yield_now();
                        }
                        *g += i as u64;
                    })
                });
                assert_eq!(total.into_inner(), 1_999_000);
            }
        });
    }
}

#[test]
fn a_loop_in_a_loop_body_may_wait_for_a_green_thread_of_the_same_runtime() {
    with_watchdog(60, "body joins a spawned thread", || {
        let rt = runtime(2);
        let sum = rt.block_on(|| {
            par::map_reduce(
                0..16,
                Schedule::Dynamic(1),
                |i| footprint::spawn(move || i * 2).join().unwrap(),
                || 0,
                |a, b| a + b,
            )
        });
        assert_eq!(sum, 240);
    });
}

/// Counts bodies running right now (the guard leaves on panic too).
struct Active<'a>(&'a AtomicI64);
impl<'a> Active<'a> {
    fn enter(a: &'a AtomicI64) -> Active<'a> {
        a.fetch_add(1, Ordering::SeqCst);
        Active(a)
    }
}
impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn a_panic_reaches_the_caller_after_the_loop_has_stopped() {
    for workers in WORKER_COUNTS {
        with_watchdog(120, "panicking body", move || {
            let rt = runtime(workers);
            for s in schedules() {
                let active = Arc::new(AtomicI64::new(0));
                let ran = AtomicU64::new(0);
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    rt.block_on(|| {
                        par::for_each(0..10_000, s.clone(), |i| {
                            let _a = Active::enter(&active);
                            ran.fetch_add(1, Ordering::Relaxed);
                            if i == 4321 {
                                panic!("iteration {i} failed");
                            }
                        })
                    })
                }));
                assert_eq!(
                    active.load(Ordering::SeqCst),
                    0,
                    "no body runs after the panic"
                );
                let msg = r.expect_err("the panic reaches the caller");
                assert_eq!(
                    msg.downcast_ref::<String>().map(|s| s.as_str()),
                    Some("iteration 4321 failed")
                );
                assert!(ran.load(Ordering::Relaxed) >= 1);
                // The runtime keeps working.
                let n: usize = rt.block_on(|| (0..100usize).into_par_iter().with_schedule(s).sum());
                assert_eq!(n, 4950);
            }
            // A panic in a nested loop reaches the outer caller too.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                rt.block_on(|| {
                    par::for_each(0..4, Schedule::Dynamic(1), |i| {
                        par::for_each(0..4, Schedule::Static, |j| {
                            assert!(!(i == 2 && j == 3), "inner failure");
                        })
                    })
                })
            }));
            assert!(r.is_err());
        });
    }
}

#[test]
fn many_short_loops_in_a_row_finish() {
    with_watchdog(120, "short loops", || {
        let rt = runtime(2);
        let total = AtomicU64::new(0);
        rt.block_on(|| {
            for _ in 0..5000 {
                par::for_each(0..2, Schedule::default(), |i| {
                    total.fetch_add(i as u64 + 1, Ordering::Relaxed);
                });
            }
        });
        assert_eq!(total.into_inner(), 15_000);
    });
}
