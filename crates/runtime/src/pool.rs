//! Pools of control blocks and stacks (ELiTE's processor / node pools): a worker-local level
//! touched only by the worker's OS thread, overflowing to a shared level in [`Shared`].

use crate::context::ctx_ptr;
use crate::registry::{Shared, WorkerLocal};
use crate::task::Task;
use corosensei::stack::DefaultStack;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

const LOCAL_TASKS: usize = 256;
const SHARED_TASKS: usize = 4096;
const LOCAL_STACKS: usize = 16;
const SHARED_STACKS: usize = 64;

impl Shared {
    pub(crate) fn take_stack_shared(&self) -> Option<DefaultStack> {
        self.stack_pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
    }
}

impl WorkerLocal {
    pub(crate) fn take_task(&self) -> Arc<Task> {
        // SAFETY: owner-only pool, no borrow escapes this block.
        let pool = unsafe { &mut *self.tasks.get() };
        if let Some(t) = pool.pop() {
            return t;
        }
        {
            let mut g = self
                .shared()
                .task_pool
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let k = g.len().min(32);
            let at = g.len() - k;
            pool.extend(g.drain(at..));
        }
        pool.pop().unwrap_or_else(|| Arc::new(Task::new()))
    }

    pub(crate) fn put_task(&self, t: Arc<Task>) {
        // SAFETY: owner-only pool.
        let pool = unsafe { &mut *self.tasks.get() };
        if pool.len() < LOCAL_TASKS {
            pool.push(t);
            return;
        }
        let mut g = self
            .shared()
            .task_pool
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let k = LOCAL_TASKS / 2;
        if g.len() + k <= SHARED_TASKS {
            let at = pool.len() - k;
            g.extend(pool.drain(at..));
        }
        drop(g);
        pool.push(t);
        pool.truncate(LOCAL_TASKS);
    }

    pub(crate) fn take_stack(&self, size: usize) -> Result<DefaultStack, std::io::Error> {
        let shared = self.shared();
        if size == shared.stack_size {
            // SAFETY: owner-only pool.
            let pool = unsafe { &mut *self.stacks.get() };
            if let Some(s) = pool.pop() {
                return Ok(s);
            }
            if let Some(s) = shared.take_stack_shared() {
                return Ok(s);
            }
        }
        shared.stacks_mapped.fetch_add(1, Ordering::Relaxed);
        DefaultStack::new(size)
    }

    pub(crate) fn put_stack(&self, s: DefaultStack, size: usize) {
        let shared = self.shared();
        if size != shared.stack_size {
            return;
        }
        // SAFETY: owner-only pool.
        let pool = unsafe { &mut *self.stacks.get() };
        if pool.len() < LOCAL_STACKS {
            pool.push(s);
            return;
        }
        let mut g = shared.stack_pool.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() < SHARED_STACKS {
            g.push(s);
        }
    }
}

/// Returns a finished control block to the pool of the worker the caller runs on.
pub(crate) fn recycle(task: Arc<Task>) {
    let c = ctx_ptr();
    if c.is_null() {
        return;
    }
    // SAFETY: a non-null context is alive; the worker's pools are touched only by its OS thread.
    unsafe {
        let w = (*c).worker;
        if w.is_null() {
            return;
        }
        let w = &*w;
        // Unique: no other Arc (we never make Weak ones), so nobody else can reach the block.
        if Arc::strong_count(&task) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        if (*task.co.get()).is_some() {
            return;
        }
        *task.waiter.get() = None;
        *task.name.get() = None;
        *task.scope.get() = None;
        *task.locals.get() = None;
        w.put_task(task);
    }
}
