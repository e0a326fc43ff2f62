//! Loom model of the green-thread park permit protocol: the runtime's own [`ParkState`]
//! (`task/states.rs`), whose steps `parking::park_current`, `WorkerLocal::finish_park` and
//! `Task::unpark_task` call. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-runtime --release --target-dir target/loom --test loom_park`.
//!
//! The owner waits for two `join` halves in turn (`while !done { park() }`); a thief finishes
//! each (`done = true; unpark()`). The first half leaves a stale permit behind, which is the case
//! where an unpark that merely *loads* NOTIFIED loses the wake-up. Loom explores every
//! interleaving and weak-memory outcome; a lost wake-up shows as the owner never finishing
//! (loom reports a deadlock). (With the old `NOTIFIED => return` arm, loom reports a deadlock
//! here within milliseconds.)
#![cfg(loom)]

mod loom_support;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use loom_support::{model, Green};

#[test]
fn two_joins_with_a_stale_permit_never_lose_a_wakeup() {
    model(3, || {
        let g = Arc::new(Green::new());
        let done1 = Arc::new(AtomicBool::new(false));
        let done2 = Arc::new(AtomicBool::new(false));
        let thief = {
            let (g, d1, d2) = (g.clone(), done1.clone(), done2.clone());
            thread::spawn(move || {
                d1.store(true, Ordering::Release);
                g.unpark();
                d2.store(true, Ordering::Release);
                g.unpark();
            })
        };
        while !done1.load(Ordering::Acquire) {
            g.park();
        }
        while !done2.load(Ordering::Acquire) {
            g.park();
        }
        thief.join().unwrap();
    });
}

#[test]
fn two_unparkers_schedule_a_parked_thread_once() {
    // Two wakers race to unpark one thread: at most one may win PARKED -> EMPTY (two winners
    // would resume one stack twice), and the owner never waits unscheduled (a deadlock).
    model(3, || {
        let g = Arc::new(Green::new());
        let flag = Arc::new(AtomicBool::new(false));
        let wakers: Vec<_> = (0..2)
            .map(|_| {
                let (g, flag) = (g.clone(), flag.clone());
                thread::spawn(move || {
                    flag.store(true, Ordering::Release);
                    usize::from(g.unpark())
                })
            })
            .collect();
        let mut parks = 0;
        while !flag.load(Ordering::Acquire) {
            g.park();
            parks += 1;
        }
        let wins: usize = wakers.into_iter().map(|w| w.join().unwrap()).sum();
        assert!(wins <= 1, "two unparkers both scheduled the thread");
        assert!(wins <= parks, "a thread that never parked was scheduled");
    });
}
