//! Loom model of the green-thread park permit protocol (`Task::unpark_task`, `park_current`,
//! `WorkerLocal::finish_park`), reduced to its atomics. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-runtime --release --test loom_park`.
//!
//! The owner waits for two `join` halves in turn (`while !done { park() }`); a thief finishes
//! each (`done = true; unpark()`). The first half leaves a stale permit behind, which is the case
//! where an unpark that merely *loads* NOTIFIED loses the wake-up. Loom explores every
//! interleaving and weak-memory outcome; a lost wake-up shows as the owner never finishing.
//! (With the old `NOTIFIED => return` arm, loom reports a deadlock here within milliseconds.)
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use loom::sync::{Arc, Notify};
use loom::thread;

const EMPTY: u8 = 0;
const NOTIFIED: u8 = 1;
const PARKED: u8 = 2;

struct Green {
    park: AtomicU8,
    /// Signalled when an unparker "schedules" the parked thread (stands for the run queue).
    scheduled: Notify,
}

impl Green {
    fn unpark(&self) {
        let mut s = self.park.load(Ordering::Acquire);
        loop {
            let r = match s {
                NOTIFIED => self.park.compare_exchange(
                    NOTIFIED,
                    NOTIFIED,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ),
                EMPTY => {
                    self.park
                        .compare_exchange(EMPTY, NOTIFIED, Ordering::AcqRel, Ordering::Acquire)
                }
                _ => match self.park.compare_exchange(
                    PARKED,
                    EMPTY,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        self.scheduled.notify();
                        return;
                    }
                    Err(x) => Err(x),
                },
            };
            match r {
                Ok(_) => return,
                Err(x) => s = x,
            }
        }
    }

    /// `park_current` plus the worker's `finish_park` and a later resumption.
    fn park(&self) {
        if self
            .park
            .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        if self
            .park
            .compare_exchange(EMPTY, PARKED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.scheduled.wait();
        } else {
            self.park.swap(EMPTY, Ordering::Acquire);
        }
    }
}

#[test]
fn two_joins_with_a_stale_permit_never_lose_a_wakeup() {
    loom::model(|| {
        let g = Arc::new(Green {
            park: AtomicU8::new(EMPTY),
            scheduled: Notify::new(),
        });
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
