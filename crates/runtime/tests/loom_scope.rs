//! Loom model of scope completion (`join.rs` `scope`, `task.rs` `ScopeShared`): the runtime's
//! own [`ScopeCount`] counts spawned, unfinished threads; the last to finish unparks the
//! scope's owner through its [`ParkState`]; the owner parks until the count is zero. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-runtime --release --target-dir target/loom --test loom_scope`.
//!
//! Proves, with up to 3 preemptions (loom's bound): the owner always wakes (no lost wake-up), and
//! only after every scoped thread, including one spawned by a scoped thread, has finished and its
//! writes to the borrowed data are visible (the data are loom cells: a read not ordered after a
//! write is reported as a data race).
#![cfg(loom)]

mod loom_support;

use footprint_runtime::loom_protocols::ScopeCount;
use loom::sync::Arc;
use loom::thread;
use loom_support::{model, Cell, Green};

/// A scope's shared part (`ScopeShared`) and the data its threads borrow.
struct Scope {
    pending: ScopeCount,
    owner: Arc<Green>,
    data: [Cell<u32>; 3],
}

impl Scope {
    /// `ScopeShared::task_done`, after the scoped thread's closure returned.
    fn task_done(&self) {
        if self.pending.done() {
            self.owner.unpark();
        }
    }

    /// The end of `scope`: wait until nothing is pending.
    fn wait(&self) {
        while !self.pending.is_zero() {
            self.owner.park();
        }
    }
}

#[test]
fn the_scope_owner_wakes_after_every_thread_and_a_nested_spawn() {
    model(3, || {
        let owner = Arc::new(Green::new());
        let s = Arc::new(Scope {
            pending: ScopeCount::new(),
            owner: owner.clone(),
            data: [Cell::new(0), Cell::new(0), Cell::new(0)],
        });
        // Scope::spawn counts before publishing the thread.
        s.pending.add();
        let a = {
            let s = s.clone();
            thread::spawn(move || {
                s.data[0].replace(1);
                // A scoped thread spawns into the same scope (counted while it still runs).
                s.pending.add();
                let inner = {
                    let s = s.clone();
                    thread::spawn(move || {
                        s.data[2].replace(3);
                        s.task_done();
                    })
                };
                s.task_done();
                inner
            })
        };
        s.pending.add();
        let b = {
            let s = s.clone();
            thread::spawn(move || {
                s.data[1].replace(2);
                s.task_done();
            })
        };
        s.wait();
        let seen: Vec<u32> = s.data.iter().map(|d| d.read(|v| *v)).collect();
        assert_eq!(seen, [1, 2, 3]);
        let inner = a.join().unwrap();
        b.join().unwrap();
        inner.join().unwrap();
    });
}
