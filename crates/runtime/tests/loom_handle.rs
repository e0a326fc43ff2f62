//! Loom model of the `JoinHandle` result slot: the runtime's own [`HandleState`]
//! (`task/states.rs`), driven as `Task::complete` (the finisher), `handle::join_task` (the
//! joiner) and `handle::detach_task` (a dropped handle) drive it, with the result and the
//! waiter in loom cells and the joiner parking through [`ParkState`]. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-runtime --release --target-dir target/loom --test loom_handle`.
//!
//! Proves, with up to 3 preemptions (loom's bound): the result is delivered exactly once, whether
//! the joiner comes before or after the finish (never lost, never read twice, never read before it
//! is written: the cells report such races); the joiner always wakes; a dropped handle frees the
//! result exactly once, whichever of the finisher and the dropper comes second (counted drops).
#![cfg(loom)]

mod loom_support;

use footprint_runtime::loom_protocols::{claim, HandleState, LIFE_DONE, LIFE_NEW};
use loom::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use loom_support::{model, Cell, Green};

/// A result that counts its drops.
struct Value {
    v: u32,
    drops: Arc<AtomicUsize>,
}

impl Drop for Value {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

/// The parts of a control block the slot protocol touches.
struct Block {
    life: AtomicU8,
    handle: HandleState,
    result: Cell<Option<Value>>,
    waiter: Cell<Option<Arc<Green>>>,
}

impl Block {
    fn new() -> Block {
        Block {
            life: AtomicU8::new(LIFE_NEW),
            handle: HandleState::new(true),
            result: Cell::new(None),
            waiter: Cell::new(None),
        }
    }

    /// `run_job_in_place` then `Task::complete`.
    fn finish(&self, value: Value) {
        self.result.replace(Some(value));
        let f = self.handle.finish();
        if f.dispose {
            drop(self.result.replace(None));
        }
        if f.wake {
            let w = self.waiter.replace(None);
            w.expect("a registered waiter").unpark();
        }
    }

    /// `join_task` on a thread that has started (no inline run).
    fn join(&self, me: &Arc<Green>) -> Value {
        if !self.handle.is_done() {
            self.waiter.replace(Some(me.clone()));
            if !self.handle.register_waiter() {
                // Finished meanwhile: the finisher saw no waiter; the cell is still ours.
                self.waiter.replace(None);
            } else {
                while !self.handle.is_done() {
                    me.park();
                }
            }
        }
        let v = self.result.replace(None);
        self.handle.release();
        v.expect("the result was delivered")
    }

    /// `detach_task`: a dropped handle.
    fn detach(&self) {
        if self.handle.detach() {
            drop(self.result.replace(None));
        }
    }
}

#[test]
fn a_joiner_gets_the_result_once_before_or_after_the_finish() {
    model(3, || {
        let drops = Arc::new(AtomicUsize::new(0));
        let block = Arc::new(Block::new());
        let worker = {
            let (block, drops) = (block.clone(), drops.clone());
            thread::spawn(move || block.finish(Value { v: 5, drops }))
        };
        let me = Arc::new(Green::new());
        let got = block.join(&me);
        assert_eq!(got.v, 5);
        worker.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 0, "dropped while delivered");
        drop(got);
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        assert!(block.result.read(Option::is_none));
    });
}

#[test]
fn a_dropped_handle_frees_the_result_exactly_once() {
    model(3, || {
        let drops = Arc::new(AtomicUsize::new(0));
        let block = Arc::new(Block::new());
        let worker = {
            let (block, drops) = (block.clone(), drops.clone());
            thread::spawn(move || block.finish(Value { v: 9, drops }))
        };
        block.detach();
        worker.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        assert!(block.result.read(Option::is_none));
    });
}

#[test]
fn a_thread_joined_before_it_started_runs_exactly_once() {
    // The worker's `run_task` and the joiner's `join_task` race to claim a spawned thread; the
    // winner runs it (the joiner inline, publishing nothing but `life`), the other side finds
    // a stale queue entry (worker) or waits for the finish (joiner).
    model(3, || {
        let drops = Arc::new(AtomicUsize::new(0));
        let runs = Arc::new(AtomicUsize::new(0));
        let block = Arc::new(Block::new());
        let worker = {
            let (block, drops, runs) = (block.clone(), drops.clone(), runs.clone());
            thread::spawn(move || {
                if claim(&block.life) {
                    runs.fetch_add(1, Ordering::Relaxed);
                    block.finish(Value { v: 3, drops });
                }
            })
        };
        let me = Arc::new(Green::new());
        let got = if claim(&block.life) {
            runs.fetch_add(1, Ordering::Relaxed);
            block.result.replace(Some(Value {
                v: 3,
                drops: drops.clone(),
            }));
            block.life.store(LIFE_DONE, Ordering::Release);
            let v = block.result.replace(None).expect("ran inline");
            block.handle.release();
            v
        } else {
            block.join(&me)
        };
        worker.join().unwrap();
        assert_eq!(
            runs.load(Ordering::Relaxed),
            1,
            "the thread ran twice or never"
        );
        assert_eq!(got.v, 3);
        drop(got);
        assert_eq!(drops.load(Ordering::Relaxed), 1);
    });
}
