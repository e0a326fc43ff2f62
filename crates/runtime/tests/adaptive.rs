//! The active-worker limit: typed errors for bad ranges, surplus workers that rest
//! and hand their queued threads on, and exact counts while the limit moves under load (no
//! thread lost or stranded when a worker rests mid-queue). A watchdog on every test.

mod common;
use common::with_watchdog;
use footprint_locks::Mutex;
use footprint_runtime::{
    join, migrate_to, progress, spawn, yield_now, AdaptiveReason, Error, Runtime,
};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

fn allowed_cpus() -> usize {
    footprint_affinity::allowed_cpus().map_or(1, |c| c.len().max(1))
}

#[test]
fn bad_ranges_are_typed_errors() {
    let cpus = allowed_cpus();
    // min 0, min > max (an empty range, on purpose), max above the CPUs.
    for range in [0..=1, std::ops::RangeInclusive::new(2, 1), 1..=cpus + 1] {
        match Runtime::builder().adaptive_workers(range.clone()).build() {
            Err(Error::AdaptiveRange { min, max, .. }) => {
                assert_eq!((min, max), (*range.start(), *range.end()))
            }
            other => panic!("{range:?}: expected AdaptiveRange, got {other:?}"),
        }
    }
    let rt = Runtime::builder().workers(2).pin(false).build().unwrap();
    assert!(matches!(
        rt.set_active_workers(0),
        Err(Error::ZeroActiveWorkers { .. })
    ));
    assert!(matches!(
        rt.set_active_workers(3),
        Err(Error::NoSuchWorker { workers: 2, .. })
    ));
}

#[test]
fn an_adaptive_runtime_starts_at_min_and_the_others_rest() {
    with_watchdog(60, "adaptive start", || {
        let max = allowed_cpus().min(2);
        let rt = Runtime::builder()
            .adaptive_workers(1..=max)
            .pin(false)
            .build()
            .unwrap();
        assert_eq!(rt.workers(), max);
        let a = rt.stats().adaptive.expect("adaptive stats");
        assert_eq!((a.min, a.max), (1, max));
        assert_eq!(a.decisions[0].reason, AdaptiveReason::Start);
        assert_eq!(a.decisions[0].active, 1);
        // Every green thread still runs, and a program that never reports progress works.
        let sum: u64 = rt.block_on(|| {
            (0..100u64)
                .map(|i| spawn(move || i))
                .map(|h| h.join().unwrap())
                .sum()
        });
        assert_eq!(sum, 4950);
        // An idle adaptive runtime uses no CPU: every worker asleep or resting.
        while rt.sleeping_workers() < rt.workers() {
            std::thread::yield_now();
        }
    });
}

#[test]
fn resting_workers_take_no_work_and_come_back() {
    with_watchdog(60, "rest and return", || {
        let rt = Runtime::builder().workers(3).pin(false).build().unwrap();
        rt.set_active_workers(1).unwrap();
        assert_eq!(rt.active_workers(), 1);
        let batch = |rt: &Runtime| {
            rt.block_on(|| {
                let hs: Vec<_> = (0..64)
                    .map(|i| {
                        spawn(move || {
                            for _ in 0..10 {
                                yield_now();
                            }
                            i
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
            })
        };
        assert_eq!(batch(&rt), 2016);
        // Once idle, every worker sleeps or rests; from then on workers 1 and 2 run nothing.
        while rt.sleeping_workers() < 3 {
            std::thread::yield_now();
        }
        let before = rt.stats();
        assert_eq!(batch(&rt), 2016);
        let after = rt.stats();
        for w in 1..3 {
            assert_eq!(
                after.workers[w].runs, before.workers[w].runs,
                "worker {w} ran"
            );
        }
        assert!(after.workers[0].runs > before.workers[0].runs);
        rt.set_active_workers(3).unwrap();
        let on: Vec<Option<usize>> = rt.block_on(|| {
            let hs: Vec<_> = (0..3)
                .map(|w| {
                    spawn(move || migrate_to(w).map(|_| footprint_runtime::park::current_worker()))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect()
        });
        assert_eq!(
            on,
            vec![Some(0), Some(1), Some(2)],
            "every worker runs again"
        );
    });
}

/// Green threads that lock, yield, fork-join and migrate while another OS thread moves the
/// active limit between 1 and `workers`: every increment lands exactly once.
fn churn(workers: usize, threads: usize, iters: usize) {
    let rt = Arc::new(
        Runtime::builder()
            .workers(workers)
            .pin(false)
            .build()
            .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicUsize::new(0));
    let flipper = {
        let (rt, stop, flips) = (rt.clone(), stop.clone(), flips.clone());
        std::thread::spawn(move || {
            let mut n = 1usize;
            while !stop.load(Ordering::Acquire) {
                rt.set_active_workers(n).unwrap();
                flips.fetch_add(1, Ordering::Relaxed);
                n = n % workers + 1;
                for _ in 0..(n * 2000) {
                    std::hint::spin_loop();
                }
            }
            rt.set_active_workers(workers).unwrap();
        })
    };
    let counter = Arc::new(Mutex::new(0u64));
    let forks = Arc::new(AtomicU64::new(0));
    rt.block_on(|| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let (counter, forks, flips) = (counter.clone(), forks.clone(), flips.clone());
                spawn(move || {
                    // Live while the limit moves: wait for a few moves first.
                    while flips.load(Ordering::Relaxed) < 3 {
                        yield_now();
                    }
                    for k in 0..iters {
                        *counter.lock() += 1;
                        progress(1);
                        match (i + k) % 4 {
                            0 => yield_now(),
                            1 => {
                                let (a, b) = join(|| 1u64, || 1u64);
                                forks.fetch_add(a + b, Ordering::Relaxed);
                            }
                            2 => {
                                let _ = migrate_to((i + k) % workers);
                            }
                            _ => {}
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    stop.store(true, Ordering::Release);
    flipper.join().unwrap();
    assert_eq!(*counter.lock(), (threads * iters) as u64);
    let joins = (0..threads)
        .map(|i| (0..iters).filter(|k| (i + k) % 4 == 1).count() as u64)
        .sum::<u64>();
    assert_eq!(forks.load(Ordering::Relaxed), 2 * joins);
    // No thread left behind (the finish count of the last join lands just after it returns).
    while rt.stats().spawned != rt.stats().finished {
        std::thread::yield_now();
    }
}

#[test]
fn exact_counts_while_the_limit_moves_2_workers() {
    with_watchdog(120, "churn 2 workers", || churn(2, 64, 200));
}

#[test]
fn exact_counts_while_the_limit_moves_4_workers() {
    with_watchdog(120, "churn 4 workers", || churn(4, 128, 100));
}

#[test]
fn a_worker_resting_mid_queue_hands_every_thread_on() {
    with_watchdog(60, "rest mid-queue", || {
        if allowed_cpus() < 2 {
            return; // needs two workers of an adaptive runtime (max <= CPUs)
        }
        // min = max: the controller never moves the limit by itself (its one decision keeps 2).
        let rt = Arc::new(
            Runtime::builder()
                .adaptive_workers(2..=2)
                .pin(false)
                .build()
                .unwrap(),
        );
        for round in 0..20 {
            let done = Arc::new(AtomicUsize::new(0));
            let r2 = rt.clone();
            let d2 = done.clone();
            rt.block_on(move || {
                // Fill worker 1's queues: spawn from a thread running there.
                migrate_to(1).unwrap();
                let hs: Vec<_> = (0..200)
                    .map(|_| {
                        let d = d2.clone();
                        spawn(move || {
                            yield_now();
                            d.fetch_add(1, Ordering::Relaxed);
                        })
                    })
                    .collect();
                // Worker 1 must rest with its deque (and ready threads) full.
                r2.set_active_workers(1).unwrap();
                yield_now();
                for h in hs {
                    h.join().unwrap();
                }
            });
            assert_eq!(done.load(Ordering::Relaxed), 200, "round {round}");
            rt.set_active_workers(2).unwrap();
        }
        let a = rt.stats().adaptive.unwrap();
        assert!(a.rests > 0 && a.handed_off > 0, "{a}");
    });
}

#[test]
fn broadcast_reaches_resting_workers() {
    with_watchdog(60, "broadcast with resting workers", || {
        let rt = Runtime::builder().workers(3).pin(false).build().unwrap();
        rt.set_active_workers(1).unwrap();
        for _ in 0..20 {
            let seen = rt.broadcast(|ctx| (ctx.index(), footprint_runtime::current_thread_index()));
            assert_eq!(seen, vec![(0, Some(0)), (1, Some(1)), (2, Some(2))]);
        }
        assert_eq!(
            rt.active_workers(),
            1,
            "a broadcast does not change the limit"
        );
    });
}

/// CPU time the calling thread has used.
fn own_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out-pointer to a timespec we own.
    assert_eq!(
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) },
        0
    );
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[test]
fn the_controller_cost_is_the_controller_threads_own() {
    // Regression: the start decision was recorded on the building thread, and with it that
    // thread's CPU time as the controller's (a bench's main thread read "350 % of a core").
    with_watchdog(60, "controller cost", || {
        let mut x = 0u64;
        while own_cpu_time() < std::time::Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
        let rt = Runtime::builder()
            .adaptive_workers(1..=allowed_cpus().min(2))
            .pin(false)
            .build()
            .unwrap();
        let a = rt.stats().adaptive.expect("adaptive stats");
        assert!(
            a.controller_cpu < std::time::Duration::from_millis(100),
            "controller CPU {:?} right after the build (the builder used {:?})",
            a.controller_cpu,
            own_cpu_time()
        );
    });
}

#[test]
fn workers_above_a_lowered_limit_take_no_new_work() {
    // Regression: a worker asleep (not yet resting) when the limit came down was woken by a
    // local push, took the pushed threads and ran them beside the active worker (a 16-worker
    // runtime limited to 1 ran a lock-bound program 1.5x slower than a 1-worker runtime).
    with_watchdog(120, "lowered limit", || {
        let rt = Runtime::builder().workers(4).pin(false).build().unwrap();
        let data = Mutex::new(vec![0u64; 1024]);
        let round = |rt: &Runtime| {
            rt.block_on(|| {
                footprint_runtime::scope(|s| {
                    for t in 0..8u64 {
                        let data = &data;
                        s.spawn(move || {
                            for i in 0..300u64 {
                                let mut d = data.lock();
                                for (k, w) in d.iter_mut().enumerate() {
                                    *w = w.wrapping_add(t ^ i ^ k as u64);
                                }
                            }
                        });
                    }
                })
            })
        };
        round(&rt); // all four active
        rt.set_active_workers(1).unwrap();
        // Threads running when the limit came down finish where they are (no preemption).
        round(&rt);
        let runs =
            |rt: &Runtime| -> Vec<u64> { rt.stats().workers.iter().map(|w| w.runs).collect() };
        let before = runs(&rt);
        for _ in 0..10 {
            round(&rt);
        }
        let after = runs(&rt);
        assert!(after[0] > before[0], "the active worker ran the rounds");
        assert_eq!(
            &after[1..],
            &before[1..],
            "workers above the limit ran threads: runs before {before:?}, after {after:?}"
        );
    });
}
