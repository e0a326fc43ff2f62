//! The storage of the pools: a runtime's shared level ([`Pools`]) and a worker's own level
//! ([`LocalPools`]); `pool.rs` moves items between them.

use crate::spare::Pooled;
use crate::stack::GreenStack;
use crate::sync::Mutex;
use crate::task::Task;
use std::cell::UnsafeCell;
use std::sync::Arc;

/// A runtime's shared pool level (`Shared::pools`): the control blocks and stacks that workers
/// gave back beyond their own level ([`LocalPools`]), and the blocks of spawns from off the
/// workers.
pub(crate) struct Pools {
    pub(super) tasks: Mutex<Vec<Pooled>>,
    pub(super) stacks: Mutex<Vec<GreenStack>>,
}

impl Pools {
    pub(crate) fn new() -> Pools {
        Pools {
            tasks: Mutex::new(Vec::new()),
            stacks: Mutex::new(Vec::new()),
        }
    }

    /// A control block for a spawn from off the workers: a pooled one, else a new one.
    pub(crate) fn take_task(&self) -> Arc<Task> {
        self.tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .map(Pooled::take)
            .unwrap_or_else(crate::task::blocks::new_task)
    }

    /// Returns the memory of the pooled stacks to the system; how many.
    pub(crate) fn trim_stacks(&self) -> usize {
        let pool = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        for s in pool.iter() {
            s.release_memory();
        }
        pool.len()
    }
}

/// A worker's own pool level (`WorkerLocal::pools`), touched only by the worker's OS thread.
pub(crate) struct LocalPools {
    pub(super) tasks: UnsafeCell<Vec<Pooled>>,
    pub(super) stacks: UnsafeCell<Vec<GreenStack>>,
}

impl LocalPools {
    pub(crate) fn new() -> LocalPools {
        LocalPools {
            tasks: UnsafeCell::new(Vec::new()),
            stacks: UnsafeCell::new(Vec::new()),
        }
    }
}
