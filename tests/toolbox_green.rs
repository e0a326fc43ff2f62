//! RwLock, Once, OnceLock and Semaphore on green threads (2 workers, more threads than workers):
//! exact counts, with watchdogs (a waiter that blocked its worker instead of parking, or a lost
//! wake-up, shows as a hang).

mod common;

use common::{runtime, with_watchdog};
use footprint::sync::{Once, OnceLock, RwLock, Semaphore};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn rwlock_read_mostly_on_green_threads() {
    const THREADS: usize = 16;
    const PER: usize = 2_000;
    with_watchdog(120, "RwLock on green threads", || {
        let rt = runtime(2);
        let lock = Arc::new(RwLock::new((0u64, 0u64)));
        rt.block_on(|| {
            let hs: Vec<_> = (0..THREADS)
                .map(|t| {
                    let lock = lock.clone();
                    footprint::spawn(move || {
                        for i in 0..PER {
                            if (t + i) % 20 == 0 {
                                let mut g = lock.write();
                                g.0 += 1;
                                footprint::yield_now(); // hold across a switch
                                g.1 += 1;
                            } else {
                                let g = lock.read();
                                assert_eq!(g.0, g.1, "a reader saw a half-done write");
                                if i % 7 == 0 {
                                    footprint::yield_now(); // readers overlap
                                }
                            }
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        });
        let writes = (0..THREADS)
            .map(|t| (0..PER).filter(|i| (t + i) % 20 == 0).count())
            .sum::<usize>() as u64;
        assert_eq!(*lock.read(), (writes, writes));
    });
}

#[test]
fn once_and_once_lock_on_green_threads() {
    with_watchdog(60, "Once on green threads", || {
        let rt = runtime(2);
        let once = Arc::new(Once::new());
        let cell = Arc::new(OnceLock::new());
        let runs = Arc::new(AtomicUsize::new(0));
        rt.block_on(|| {
            let hs: Vec<_> = (0..32)
                .map(|i| {
                    let (once, cell, runs) = (once.clone(), cell.clone(), runs.clone());
                    footprint::spawn(move || {
                        once.call_once(|| {
                            // The initialiser parks: the others must park on the Once too.
                            footprint::yield_now();
                            runs.fetch_add(1, Ordering::SeqCst);
                        });
                        assert_eq!(runs.load(Ordering::SeqCst), 1);
                        *cell.get_or_init(|| {
                            footprint::yield_now();
                            i
                        })
                    })
                })
                .collect();
            let values: Vec<usize> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            assert!(values.iter().all(|&v| v == values[0]), "one value for all");
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn semaphore_on_green_threads() {
    const PERMITS: usize = 2;
    with_watchdog(60, "Semaphore on green threads", || {
        let rt = runtime(2);
        let sem = Arc::new(Semaphore::new(PERMITS));
        let inside = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        rt.block_on(|| {
            let hs: Vec<_> = (0..16)
                .map(|_| {
                    let (sem, inside, done) = (sem.clone(), inside.clone(), done.clone());
                    footprint::spawn(move || {
                        for _ in 0..500 {
                            let _p = sem.acquire();
                            assert!(inside.fetch_add(1, Ordering::SeqCst) < PERMITS);
                            footprint::yield_now(); // hold the permit across a switch
                            inside.fetch_sub(1, Ordering::SeqCst);
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), 16 * 500);
        assert_eq!(sem.available_permits(), PERMITS);
    });
}
