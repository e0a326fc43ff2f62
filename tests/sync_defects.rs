//! Regression tests for two defects of the blocking toolbox on green threads (issues 9 and 18).
//! Deterministic versions of both windows are in `crates/locks/tests/windows.rs`; these run the
//! programs the issues report, with watchdogs.

mod common;

use common::{runtime, with_watchdog};
use std::sync::Arc;

/// 40 green threads × 500 increments of an `ArrayMutex` (32 slots) on 2 workers hung
/// in most runs: the door waiters past the capacity kept the `Running` class and yielded their
/// workers to one another forever. Several rounds, so that the old code fails almost surely.
#[test]
fn array_mutex_past_capacity_on_green_threads() {
    const THREADS: usize = 40;
    const PER_THREAD: usize = 500;
    const ROUNDS: usize = 8;
    with_watchdog(240, "ArrayMutex, 40 green threads on 2 workers", || {
        let rt = runtime(2);
        for round in 0..ROUNDS {
            let m = Arc::new(footprint::sync::ArrayMutex::new(0u64));
            let total = rt.block_on(|| {
                let hs: Vec<_> = (0..THREADS)
                    .map(|_| {
                        let m = m.clone();
                        footprint::spawn(move || {
                            for _ in 0..PER_THREAD {
                                let mut g = m.lock();
                                let v = *g;
                                std::hint::black_box(&v);
                                *g = v + 1;
                            }
                        })
                    })
                    .collect();
                for h in hs {
                    h.join().unwrap();
                }
                *m.lock()
            });
            assert_eq!(total, (THREADS * PER_THREAD) as u64, "round {round}");
        }
    });
}

/// One round of a regression pattern: a waiter waits for a flag; the notifier sets it under the
/// mutex once the waiter is waiting, then loops `while !cv.notify_one() {}`. With the old
/// condvar, a notify in the window between the waiter's unlock and its queueing returned
/// `false` while still ending the wait, and the loop spun forever.
fn notify_until_counted(spawn: impl Fn(Box<dyn FnOnce() + Send>) -> Box<dyn FnOnce() + Send>) {
    let state = Arc::new((
        footprint::sync::Mutex::new((false, false)),
        footprint::sync::Condvar::new(),
    ));
    let s = state.clone();
    let join = spawn(Box::new(move || {
        let (m, cv) = &*s;
        let mut g = m.lock();
        g.0 = true; // waiting
        while !g.1 {
            cv.wait(&mut g);
        }
    }));
    let (m, cv) = &*state;
    loop {
        let mut g = m.lock();
        if g.0 {
            g.1 = true;
            break;
        }
        drop(g);
        footprint::yield_now();
    }
    while !cv.notify_one() {}
    join();
}

#[test]
fn condvar_notify_one_reports_the_waiter_on_green_threads() {
    with_watchdog(120, "while !notify_one() on green threads", || {
        let rt = runtime(2);
        rt.block_on(|| {
            for _ in 0..2_000 {
                notify_until_counted(|f| {
                    let h = footprint::spawn(f);
                    Box::new(move || h.join().unwrap())
                });
            }
        });
    });
}

#[test]
fn condvar_notify_one_reports_the_waiter_on_os_threads() {
    with_watchdog(120, "while !notify_one() on OS threads", || {
        for _ in 0..2_000 {
            notify_until_counted(|f| {
                let h = std::thread::spawn(f);
                Box::new(move || h.join().unwrap())
            });
        }
    });
}

/// The soak's hang (seed 17813, round 25103: `SpinMcsMutex`, 7 green threads on 4 workers): a
/// green thread spinning under the `AlwaysSpin` policy never gave its worker up, so a holder
/// (or an MCS predecessor) that had yielded on that worker never ran again. On one worker: the
/// holder spawns a waiter and yields while holding the lock; the waiter spins. It must hand the
/// worker back now and then (it stays runnable) so that the holder can finish.
macro_rules! spinner_lets_a_yielded_holder_run {
    ($name:ident, $ty:ident) => {
        #[test]
        fn $name() {
            use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
            let what = concat!(
                stringify!($ty),
                ": a spinner waits for a holder that yielded"
            );
            with_watchdog(30, what, || {
                let rt = runtime(1);
                let m = Arc::new(footprint::sync::baseline::$ty::new(0u64));
                let m2 = m.clone();
                rt.block_on(move || {
                    footprint::spawn(move || {
                        let mut g = m2.lock();
                        let tried = Arc::new(AtomicBool::new(false));
                        let (m3, t3) = (m2.clone(), tried.clone());
                        let waiter = footprint::spawn(move || {
                            t3.store(true, SeqCst);
                            *m3.lock() += 1;
                        });
                        while !tried.load(SeqCst) {
                            footprint::yield_now();
                        }
                        *g += 1;
                        drop(g);
                        waiter.join().unwrap();
                    })
                    .join()
                    .unwrap()
                });
                assert_eq!(*m.lock(), 2);
            });
        }
    };
}

spinner_lets_a_yielded_holder_run!(spin_ttas_waiter_yields_on_green_threads, SpinTtasMutex);
spinner_lets_a_yielded_holder_run!(spin_ticket_waiter_yields_on_green_threads, SpinTicketMutex);
spinner_lets_a_yielded_holder_run!(spin_mcs_waiter_yields_on_green_threads, SpinMcsMutex);
spinner_lets_a_yielded_holder_run!(spin_array_waiter_yields_on_green_threads, SpinArrayMutex);

/// parking_lot's `test_condvar_requeue`, as a user ports it: the waiter takes the mutex and
/// waits; the notifier holds the mutex and, until `notify_one` reports the waiter, bumps the
/// guard (a fair unlock and a lock) and yields. On green threads it hung: the waiter, spinning
/// behind the holder, yielded to it (a higher class) again and again without ever parking, so
/// the fair unlock found nobody to hand the lock to; and once it did park, the bumping thread's
/// own `lock` took the hand-over back before the woken waiter ran.
fn condvar_requeue(spawn: impl Fn(Box<dyn FnOnce() + Send>) -> Box<dyn FnOnce() + Send>) {
    use footprint::sync::MutexGuard;
    let state = Arc::new((
        footprint::sync::Mutex::new(()),
        footprint::sync::Condvar::new(),
    ));
    let s = state.clone();
    let join = spawn(Box::new(move || {
        let (m, cv) = &*s;
        let mut g = m.lock();
        cv.wait(&mut g);
    }));
    let (m, cv) = &*state;
    let mut g = m.lock();
    while !cv.notify_one() {
        // The waiter gets into `wait` through the fair hand-over.
        MutexGuard::bump(&mut g);
        footprint::yield_now();
    }
    drop(g);
    join();
}

fn condvar_requeue_on_green_threads(workers: usize) {
    let what = format!("condvar requeue on {workers} worker(s)");
    with_watchdog(60, &what, move || {
        let rt = runtime(workers);
        rt.block_on(|| {
            for _ in 0..200 {
                condvar_requeue(|f| {
                    let h = footprint::spawn(f);
                    Box::new(move || h.join().unwrap())
                });
            }
        });
    });
}

#[test]
fn condvar_requeue_on_one_worker() {
    condvar_requeue_on_green_threads(1);
}

#[test]
fn condvar_requeue_on_two_workers() {
    condvar_requeue_on_green_threads(2);
}

#[test]
fn condvar_requeue_on_os_threads() {
    with_watchdog(60, "condvar requeue on OS threads", || {
        for _ in 0..200 {
            condvar_requeue(|f| {
                let h = std::thread::spawn(f);
                Box::new(move || h.join().unwrap())
            });
        }
    });
}

/// `notify_all` called without the mutex while the waiters it wakes wait again at once. The
/// queue is popped in batches, newest first, so a waiter woken by the first batch that waited
/// again before the call ended was popped (and counted) again by a later batch: one call
/// reported more waiters than there are threads, and could go on popping for as long as they
/// kept coming back. Each call must wake and count each waiter at most once; and one call made
/// with the mutex after the flag is set must end every wait.
#[test]
fn condvar_notify_all_wakes_each_waiter_once_per_call() {
    const WAITERS: usize = 48;
    /// Wake-ups to deliver in all (each waiter waits again at once after each).
    const WAKEUPS: usize = 200 * WAITERS;
    with_watchdog(120, "notify_all with waiters that wait again", || {
        let rt = runtime(3);
        let state = Arc::new((
            footprint::sync::Mutex::new(false),
            footprint::sync::Condvar::new(),
        ));
        let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let waiters: Vec<_> = (0..WAITERS)
            .map(|_| {
                let (s, started) = (state.clone(), started.clone());
                rt.spawn(move || {
                    let (m, cv) = &*s;
                    let mut stop = m.lock();
                    started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let mut woken = 0u64;
                    while !*stop {
                        cv.wait(&mut stop);
                        woken += 1;
                    }
                    woken
                })
            })
            .collect();
        // Every waiter has taken the mutex once; once we have taken it too, each of them has
        // released it in `wait`, queued.
        while started.load(std::sync::atomic::Ordering::SeqCst) < WAITERS {
            std::thread::yield_now();
        }
        drop(state.0.lock());
        // The notifier is an OS thread, not a worker: all three workers run the waiters.
        let (mut most, mut total) = (0, 0);
        while total < WAKEUPS {
            let n = state.1.notify_all();
            most = most.max(n);
            total += n;
        }
        let (m, cv) = &*state;
        *m.lock() = true;
        // Every waiter still waiting queued before this lock was taken: one call ends them all.
        let last = cv.notify_all();
        let woken: u64 = waiters.into_iter().map(|w| w.join().unwrap()).sum();
        assert!(
            most <= WAITERS,
            "one notify_all reported {most} waiters; there are {WAITERS} threads"
        );
        assert_eq!(
            woken,
            (total + last) as u64,
            "the waits that ended and the waiters the calls reported differ"
        );
    });
}
