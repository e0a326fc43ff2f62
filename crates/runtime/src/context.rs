//! The thread-local context: which runtime, worker and green thread the calling OS thread runs.
//!
//! # TLS discipline
//! A green thread may resume on another OS thread, and LLVM may keep a thread-local's address in
//! a register across the stack switch. Every thread-local access goes through the
//! `#[inline(never)]` function [`ctx_ptr`], and no reference derived from it is held across a
//! suspension point (yield, park).

use crate::registry::Shared;
use crate::task::{Task, Waiter};
use crate::worker::local::{ThreadCtx, WorkerLocal};
use std::cell::Cell;
use std::ptr;
use std::sync::Arc;

std::thread_local! {
    static CTX: Cell<*const ThreadCtx> = const { Cell::new(ptr::null()) };
}

/// The calling OS thread's context (null outside runtimes). Never inlined: see the module docs.
#[inline(never)]
pub(crate) fn ctx_ptr() -> *const ThreadCtx {
    CTX.with(|c| c.get())
}

#[inline(never)]
pub(crate) fn set_ctx(p: *const ThreadCtx) {
    CTX.with(|c| c.set(p))
}

/// The green thread running on the calling OS thread, or null.
#[inline]
pub(crate) fn current_task_ptr() -> *const Task {
    let c = ctx_ptr();
    if c.is_null() {
        ptr::null()
    } else {
        // SAFETY: a non-null context lives as long as its OS thread's worker loop.
        unsafe { (*c).current() }
    }
}

/// A strong reference to the running green thread.
pub(crate) fn current_task_arc() -> Option<Arc<Task>> {
    let t = current_task_ptr();
    if t.is_null() {
        None
    } else {
        // SAFETY: the running task is kept alive by its worker's run reference (an Arc).
        unsafe {
            Arc::increment_strong_count(t);
            Some(Arc::from_raw(t))
        }
    }
}

/// The runtime the calling thread belongs to, if any.
pub(crate) fn current_shared() -> *const Shared {
    let c = ctx_ptr();
    if c.is_null() {
        ptr::null()
    } else {
        // SAFETY: as in current_task_ptr.
        unsafe { (*c).shared() }
    }
}

/// The index of the worker running the calling code, if it is a worker of some runtime.
pub(crate) fn current_worker_index() -> Option<usize> {
    let c = ctx_ptr();
    if c.is_null() {
        return None;
    }
    // SAFETY: as in current_task_ptr.
    unsafe {
        let w = (*c).worker();
        if w.is_null() {
            None
        } else {
            Some((*w).index())
        }
    }
}

/// Whether the caller is a green thread of the runtime `shared`.
pub(crate) fn same_runtime_green(shared: *const Shared) -> bool {
    let c = ctx_ptr();
    // SAFETY: as in current_task_ptr.
    !c.is_null()
        && unsafe {
            (*c).shared() == shared && !(*c).worker().is_null() && !(*c).current().is_null()
        }
}

/// The calling OS thread's worker (of any runtime), or null off a worker. Valid only until the
/// calling green thread next yields or parks.
#[inline]
pub(crate) fn current_worker_ptr() -> *const WorkerLocal {
    let c = ctx_ptr();
    if c.is_null() {
        ptr::null()
    } else {
        // SAFETY: as in current_task_ptr.
        unsafe { (*c).worker() }
    }
}

/// The running green thread and its worker, if the caller is a green thread on a worker of the
/// runtime `shared` (one thread-local read for both). The worker pointer is valid only until the
/// green thread next yields or parks.
#[inline]
pub(crate) fn current_green_of(shared: *const Shared) -> Option<(*const Task, *const WorkerLocal)> {
    green_on_worker(ctx_ptr(), Some(shared))
}

/// The running green thread and its worker, if the caller is a green thread on a worker.
/// The worker pointer is valid only until the green thread next yields or parks.
#[inline]
pub(crate) fn current_green_on_worker() -> Option<(*const Task, *const WorkerLocal)> {
    green_on_worker(ctx_ptr(), None)
}

/// The green thread and worker of context `c` (null: none), if it has both and, with `shared`,
/// belongs to that runtime.
#[inline]
fn green_on_worker(
    c: *const ThreadCtx,
    shared: Option<*const Shared>,
) -> Option<(*const Task, *const WorkerLocal)> {
    if c.is_null() {
        return None;
    }
    // SAFETY: a non-null context is alive while its OS thread runs the worker loop.
    unsafe {
        if shared.is_some_and(|s| !ptr::eq((*c).shared(), s)) {
            return None;
        }
        let t = (*c).current();
        let w = (*c).worker();
        if t.is_null() || w.is_null() {
            None
        } else {
            Some((t, w))
        }
    }
}

impl Waiter {
    /// The calling thread as a waiter.
    pub(crate) fn current() -> Waiter {
        match current_task_arc() {
            Some(t) => Waiter::Green(t),
            None => Waiter::Os(std::thread::current()),
        }
    }
}
