//! Loom model of the cross-worker pool hand-off (`pool.rs`): control blocks and stacks live on
//! a worker-local level and overflow to a shared level; the runtime's own [`take_pooled`] and
//! [`put_pooled`] move them (with small [`Levels`] here, so that the overflow, the refill and
//! the drop of a surplus all happen within a few steps). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-runtime --release --target-dir target/loom --test loom_pool`.
//!
//! Proves, with up to 3 preemptions (loom's bound): a block given back on one worker and taken on
//! another is held by one worker at a time (never handed out twice), none is lost (every block made
//! is at the end in exactly one level, or was dropped exactly once as surplus), and a worker finds
//! a block another gave back once it reaches the shared level.
#![cfg(loom)]

mod loom_support;

use footprint_runtime::loom_protocols::{put_pooled, take_pooled, Levels};
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use loom_support::model;

const BLOCKS: usize = 4;

const LEVELS: Levels = Levels {
    local: 2,
    shared: 2,
    batch: 2,
};

/// A pooled block: its number and the ledger that records who holds it.
struct Block {
    id: usize,
    ledger: Arc<Ledger>,
}

/// Per block: held by a worker right now, dropped.
struct Ledger {
    held: [AtomicBool; BLOCKS],
    dropped: [AtomicUsize; BLOCKS],
}

impl Block {
    /// A worker takes the block out of a pool: nobody else may hold it.
    fn hold(&self) {
        assert!(
            !self.ledger.held[self.id].swap(true, Ordering::Relaxed),
            "block {} handed out twice",
            self.id
        );
    }

    /// The worker gives it back.
    fn release(&self) {
        self.ledger.held[self.id].store(false, Ordering::Relaxed);
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        self.ledger.dropped[self.id].fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn blocks_given_back_on_one_worker_and_taken_on_another_are_never_lost_or_shared() {
    model(3, || {
        let ledger = Arc::new(Ledger {
            held: Default::default(),
            dropped: Default::default(),
        });
        let shared = Arc::new(Mutex::new(Vec::new()));
        // Worker 0 finishes four threads whose blocks it recycles: its level overflows to the
        // shared level (and, when that is full, the surplus is dropped).
        let giver = {
            let (shared, ledger) = (shared.clone(), ledger.clone());
            thread::spawn(move || {
                let mut local = Vec::new();
                for id in 0..BLOCKS {
                    let b = Block {
                        id,
                        ledger: ledger.clone(),
                    };
                    b.hold();
                    b.release();
                    put_pooled(&mut local, &shared, LEVELS, b);
                }
                local
            })
        };
        // Worker 1 spawns: takes blocks (refilling from the shared level), uses and returns one.
        let mut local = Vec::new();
        let mut taken = Vec::new();
        for _ in 0..2 {
            if let Some(b) = take_pooled(&mut local, &shared, LEVELS) {
                b.hold();
                taken.push(b);
            }
        }
        for b in taken {
            b.release();
            put_pooled(&mut local, &shared, LEVELS, b);
        }
        let giver_local = giver.join().unwrap();
        let shared_level = std::mem::take(&mut *shared.lock().unwrap());
        let mut seen = [0usize; BLOCKS];
        for b in giver_local.iter().chain(&local).chain(&shared_level) {
            seen[b.id] += 1;
            assert!(!ledger.held[b.id].load(Ordering::Relaxed));
        }
        for id in 0..BLOCKS {
            let dropped = ledger.dropped[id].load(Ordering::Relaxed);
            assert_eq!(
                seen[id] + dropped,
                1,
                "block {id}: pooled {} times, dropped {dropped}",
                seen[id]
            );
        }
    });
}

#[test]
fn a_block_in_the_shared_level_is_found_by_another_worker() {
    model(3, || {
        let ledger = Arc::new(Ledger {
            held: Default::default(),
            dropped: Default::default(),
        });
        let shared = Arc::new(Mutex::new(Vec::new()));
        let published = Arc::new(AtomicBool::new(false));
        let giver = {
            let (shared, ledger, published) = (shared.clone(), ledger.clone(), published.clone());
            thread::spawn(move || {
                let mut local = Vec::new();
                // Three give-backs on a level of two: the third moves one to the shared level.
                for id in 0..3 {
                    put_pooled(
                        &mut local,
                        &shared,
                        LEVELS,
                        Block {
                            id,
                            ledger: ledger.clone(),
                        },
                    );
                }
                published.store(true, Ordering::Release);
                local
            })
        };
        let mut local = Vec::new();
        let got = if published.load(Ordering::Acquire) {
            let b = take_pooled(&mut local, &shared, LEVELS);
            assert!(b.is_some(), "a block in the shared level was not found");
            b
        } else {
            None
        };
        let giver_local = giver.join().unwrap();
        let total = giver_local.len()
            + local.len()
            + usize::from(got.is_some())
            + shared.lock().unwrap().len();
        assert_eq!(total, 3);
    });
}
