//! RwLock, Once, OnceLock, LazyLock and Semaphore on OS threads: exact counts, the documented
//! behaviour after a panicking initialiser, and never a hang for the next caller.
#![cfg(not(loom))]

use footprint_locks::{LazyLock, Once, OnceLock, RwLock, RwLockWriteGuard, Semaphore};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod common;
use common::iters;

/// Writers keep `pair.0 == pair.1` (two separate writes); readers must never see them differ.
#[test]
fn rwlock_exact_counts_and_no_torn_reads() {
    let lock = Arc::new(RwLock::new((0u64, 0u64)));
    let per = iters(20_000);
    let hs: Vec<_> = (0..6)
        .map(|t| {
            let lock = lock.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    if t < 2 || i % 20 == 0 {
                        let mut g = lock.write();
                        g.0 += 1;
                        std::hint::black_box(&*g);
                        g.1 += 1;
                    } else {
                        let g = lock.read();
                        assert_eq!(g.0, g.1, "a reader saw a half-done write");
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let writes = 2 * per + 4 * per.div_ceil(20);
    assert_eq!(*lock.read(), (writes as u64, writes as u64));
}

#[test]
fn rwlock_downgrade_and_map() {
    let lock = RwLock::new(vec![1, 2, 3]);
    let mut w = lock.write();
    w.push(4);
    let r = RwLockWriteGuard::downgrade(w);
    assert!(
        lock.try_read().is_some(),
        "downgraded: other readers may enter"
    );
    assert!(lock.try_write().is_none());
    drop(r);
    let first = footprint_locks::RwLockReadGuard::map(lock.read(), |v| &v[0]);
    assert_eq!(*first, 1);
}

/// A writer waiting behind a reader blocks later readers (writers are not starved).
#[test]
fn rwlock_waiting_writer_blocks_new_readers() {
    let lock = RwLock::new(0);
    let r = lock.read();
    std::thread::scope(|s| {
        let h = s.spawn(|| *lock.write() += 1);
        // Until the writer has registered, readers still get in; once it has, they do not.
        while lock.try_read().is_some() {
            std::thread::yield_now();
        }
        drop(r);
        h.join().unwrap();
    });
    assert_eq!(*lock.read(), 1);
}

#[test]
fn once_runs_once_under_contention() {
    let once = Arc::new(Once::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..8)
        .map(|_| {
            let (once, runs) = (once.clone(), runs.clone());
            std::thread::spawn(move || {
                once.call_once(|| {
                    runs.fetch_add(1, Ordering::SeqCst);
                });
                assert_eq!(runs.load(Ordering::SeqCst), 1, "visible after call_once");
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn once_poisoned_by_a_panic_like_std() {
    let once = Once::new();
    let r = catch_unwind(AssertUnwindSafe(|| {
        once.call_once(|| panic!("init failed"))
    }));
    assert!(r.is_err());
    assert!(!once.is_completed());
    let again = catch_unwind(AssertUnwindSafe(|| once.call_once(|| {})));
    assert!(again.is_err(), "call_once on a poisoned Once panics");
    let mut saw_poison = false;
    once.call_once_force(|s| saw_poison = s.is_poisoned());
    assert!(saw_poison);
    assert!(once.is_completed());
    once.wait();
}

#[test]
fn once_lock_retries_after_a_panic() {
    let cell: OnceLock<u32> = OnceLock::new();
    let r = catch_unwind(AssertUnwindSafe(|| {
        cell.get_or_init(|| panic!("first try"))
    }));
    assert!(r.is_err());
    assert_eq!(cell.get(), None);
    assert_eq!(*cell.get_or_init(|| 7), 7);
    assert_eq!(cell.set(8), Err(8));
    assert_eq!(cell.into_inner(), Some(7));
}

/// A caller parked on a running initialiser that panics is not left hanging: it runs its own.
#[test]
fn once_lock_waiter_survives_a_panicking_initialiser() {
    let cell: OnceLock<u32> = OnceLock::new();
    let started = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            catch_unwind(AssertUnwindSafe(|| {
                cell.get_or_init(|| {
                    started.store(1, Ordering::SeqCst);
                    // Wait (bounded by the other thread's progress) until it is waiting on us.
                    while started.load(Ordering::SeqCst) != 2 {
                        std::thread::yield_now();
                    }
                    panic!("initialiser fails")
                })
            }))
            .is_err()
        });
        while started.load(Ordering::SeqCst) != 1 {
            std::thread::yield_now();
        }
        started.store(2, Ordering::SeqCst);
        assert_eq!(*cell.get_or_init(|| 5), 5);
        assert!(first.join().unwrap());
    });
}

#[test]
fn lazy_lock_poisoned_by_a_panic_like_std() {
    let lazy: LazyLock<u32> = LazyLock::new(|| panic!("no value"));
    assert!(catch_unwind(AssertUnwindSafe(|| *lazy)).is_err());
    let again = catch_unwind(AssertUnwindSafe(|| *lazy)).unwrap_err();
    let msg = again.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(msg.contains("poisoned"), "{msg}");
    let ok = LazyLock::new(|| 6 * 7);
    assert_eq!(*ok, 42);
}

/// At most `permits` threads inside at once, and every acquisition ran.
#[test]
fn semaphore_bounds_concurrency_exactly() {
    const PERMITS: usize = 3;
    let sem = Arc::new(Semaphore::new(PERMITS));
    let inside = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let per = iters(5_000);
    let hs: Vec<_> = (0..8)
        .map(|_| {
            let (sem, inside, peak, done) =
                (sem.clone(), inside.clone(), peak.clone(), done.clone());
            std::thread::spawn(move || {
                for _ in 0..per {
                    let _p = sem.acquire();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    inside.fetch_sub(1, Ordering::SeqCst);
                    done.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert!(peak.load(Ordering::SeqCst) <= PERMITS);
    assert_eq!(done.load(Ordering::SeqCst), 8 * per);
    assert_eq!(sem.available_permits(), PERMITS);
}

#[test]
fn semaphore_acquire_many_is_woken_when_enough_return() {
    let sem = Semaphore::new(0);
    std::thread::scope(|s| {
        let h = s.spawn(|| sem.acquire_many(3).forget());
        sem.add_permits(1);
        sem.add_permits(2);
        h.join().unwrap();
    });
    assert_eq!(sem.available_permits(), 0);
}
