//! Loom model of `join`'s stolen-half latch (`join.rs`): the thief runs the half, writes its
//! result, sets the runtime's own [`Latch`] and unparks the owner through the owner's
//! [`ParkState`]; the owner parks until the latch is set, then reads the result. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-runtime --release --target-dir target/loom --test loom_join`.
//!
//! Proves, with up to 3 preemptions (loom's bound): the owner always wakes (no lost wake-up: loom
//! reports a deadlock otherwise), and it reads the result only after the thief's write is visible
//! (the result lives in a loom cell, so a read that is not ordered after the write is reported as a
//! data race), also when a permit left by an earlier half is still pending.
#![cfg(loom)]

mod loom_support;

use footprint_runtime::loom_protocols::Latch;
use loom::sync::Arc;
use loom::thread;
use loom_support::{model, Cell, Green};

/// The stolen half of a `join` (`StackJob`): its result slot and its latch.
struct Half {
    result: Cell<Option<u32>>,
    done: Latch,
}

impl Half {
    fn new() -> Half {
        Half {
            result: Cell::new(None),
            done: Latch::new(),
        }
    }

    /// `exec_stack_job` on the thief: write the result, set the latch, unpark the owner (whose
    /// reference the thief took before the latch, as the real code does).
    fn run_stolen(&self, owner: &Green, value: u32) {
        self.result.replace(Some(value));
        self.done.set();
        owner.unpark();
    }

    /// The owner in `join` after failing to take the half back.
    fn wait(&self, owner: &Green) -> u32 {
        while !self.done.probe() {
            owner.park();
        }
        self.result
            .replace(None)
            .expect("latch set before the result was written")
    }
}

#[test]
fn the_owner_of_a_stolen_half_wakes_and_sees_its_result() {
    model(3, || {
        let owner = Arc::new(Green::new());
        let half = Arc::new(Half::new());
        let thief = {
            let (owner, half) = (owner.clone(), half.clone());
            thread::spawn(move || half.run_stolen(&owner, 7))
        };
        assert_eq!(half.wait(&owner), 7);
        thief.join().unwrap();
    });
}

#[test]
fn two_stolen_halves_in_turn_with_a_stale_permit() {
    // A nested join: the first half's unpark may leave a permit the owner consumes while
    // waiting for the second.
    model(3, || {
        let owner = Arc::new(Green::new());
        let first = Arc::new(Half::new());
        let second = Arc::new(Half::new());
        let thief = {
            let (owner, first, second) = (owner.clone(), first.clone(), second.clone());
            thread::spawn(move || {
                first.run_stolen(&owner, 1);
                second.run_stolen(&owner, 2);
            })
        };
        assert_eq!(first.wait(&owner), 1);
        assert_eq!(second.wait(&owner), 2);
        thief.join().unwrap();
    });
}
