//! Yield, park and unpark of green threads, and where a woken thread goes (placement).
//!
//! A green thread parks by consuming its permit or by suspending with `Reason::Park`; the worker
//! then publishes it as parked (`worker.rs`). An unparker that wins `PARKED -> EMPTY` owns the
//! thread again and schedules it: onto the calling worker's ready structure when the placement
//! hint allows, else into the target worker's inbox (the hint's worker, or the thread's last).

use crate::context::{ctx_ptr, current_task_ptr};
use crate::job::Job;
use crate::task::{Reason, Task, P_EMPTY, P_NOTIFIED, P_PARKED};
use footprint_locks::{Placement, Unpark};
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Gives the worker back from the running green thread.
///
/// # Safety
/// `task` must be the running green thread of the calling OS thread.
#[inline]
unsafe fn suspend(task: *const Task, r: Reason) {
    // SAFETY: the yielder pointer was set when the coroutine started and stays valid while it
    // runs; we are inside that coroutine.
    unsafe {
        let y = *(*task).yielder.get();
        (*y).suspend(r);
    }
}

/// Yields the worker to other ready green threads (an OS-thread yield outside the runtime).
#[inline]
pub fn yield_now() {
    let t = current_task_ptr();
    if t.is_null() {
        std::thread::yield_now();
    } else {
        // SAFETY: t is the running green thread of this OS thread.
        unsafe { suspend(t, Reason::Yield) }
    }
}

/// Blocks the calling thread until a permit from its unparker is available (green or OS).
pub(crate) fn park_current() {
    let t = current_task_ptr();
    if t.is_null() {
        std::thread::park();
        return;
    }
    // SAFETY: t is the running green thread, alive while it runs.
    unsafe {
        if (*t)
            .park
            .compare_exchange(P_NOTIFIED, P_EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        suspend(t, Reason::Park);
    }
}

/// Puts a woken green thread on a run queue (called by `Task::unpark_task`).
pub(crate) fn schedule_woken(task: Arc<Task>, hint: Placement) {
    // SAFETY: a parked task is unfinished, so its runtime is alive (Runtime::drop waits for
    // every unfinished green thread).
    let shared = unsafe { &*task.runtime() };
    let n = shared.workers.len();
    let target = match hint {
        Placement::Worker(w) if w < n => Some(w),
        _ => None,
    };
    let c = ctx_ptr();
    // SAFETY: a non-null context is alive; its worker (if any) is the calling OS thread's.
    unsafe {
        if !c.is_null() && ptr::eq((*c).shared, shared) && !(*c).worker.is_null() {
            let w = &*(*c).worker;
            if target.is_none() || target == Some(w.index) {
                (*w.ready.get()).push_woken(Job::Task(task));
                return;
            }
        }
    }
    let w = target.unwrap_or_else(|| task.last_worker.load(Ordering::Relaxed) % n);
    shared.workers[w].inbox.push(Job::Task(task));
    shared.notify_worker(w);
}

/// Makes the first of the calling worker's next `scan` ready jobs that satisfies `pred` the next
/// to run; returns whether one did.
pub(crate) fn promote_ready(scan: usize, pred: impl Fn(&Job) -> bool) -> bool {
    let c = ctx_ptr();
    if c.is_null() {
        return false;
    }
    // SAFETY: owner-only ready structure of the calling worker; no other borrow is live.
    unsafe {
        let w = (*c).worker;
        !w.is_null() && (*(*w).ready.get()).promote_first(scan, pred)
    }
}

impl Task {
    /// Makes a permit available and schedules the thread if it is parked.
    pub(crate) fn unpark_task(self: &Task, hint: Placement) {
        let mut s = self.park.load(Ordering::Acquire);
        loop {
            match s {
                // A permit is already there: refresh it with an RMW (Release) rather than just
                // return. The parker that consumes the permit must also see what we published
                // before this call (a `join` half's `done`, a handle's result). After a plain
                // load that store may still be invisible to a parker that consumes the older
                // permit right after our load: it re-checks its condition, finds it false and
                // parks for good (a lost wake-up; store buffering, seen on x86 as a hung join).
                P_NOTIFIED => match self.park.compare_exchange_weak(
                    P_NOTIFIED,
                    P_NOTIFIED,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return,
                    Err(x) => s = x,
                },
                P_EMPTY => match self.park.compare_exchange_weak(
                    P_EMPTY,
                    P_NOTIFIED,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return,
                    Err(x) => s = x,
                },
                _ => match self.park.compare_exchange_weak(
                    P_PARKED,
                    P_EMPTY,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        // SAFETY: a parked task's run reference was leaked with Arc::into_raw by
                        // the worker that parked it; winning PARKED -> EMPTY makes it ours.
                        let task = unsafe { Arc::from_raw(self as *const Task) };
                        schedule_woken(task, hint);
                        return;
                    }
                    Err(x) => s = x,
                },
            }
        }
    }
}

impl Unpark for Task {
    fn unpark(&self, hint: Placement) {
        self.unpark_task(hint)
    }
}

/// Moves the calling green thread to worker `w` and returns once it runs there. Outside a
/// green thread, or for a worker the runtime does not have, it returns at once.
pub(crate) fn move_current_to(w: usize) {
    let shared = crate::context::current_shared();
    if shared.is_null() {
        return;
    }
    // SAFETY: a non-null runtime pointer of the calling thread's context is alive while it runs.
    if w >= unsafe { &*shared }.workers.len() {
        return;
    }
    loop {
        let t = current_task_ptr();
        match crate::context::current_worker_index() {
            _ if t.is_null() => return,
            None => return,
            Some(i) if i == w => {
                // SAFETY: t is the running green thread of this OS thread.
                unsafe { (*t).moving.store(false, Ordering::Relaxed) };
                return;
            }
            // SAFETY: t is the running green thread of this OS thread.
            Some(_) => unsafe { suspend(t, Reason::MoveTo(w)) },
        }
    }
}
