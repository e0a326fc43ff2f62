//! Yield, park and unpark of green threads, and where a woken thread goes (placement).
//!
//! A green thread parks by consuming its permit or by suspending with `Reason::Park`; the worker
//! then publishes it as parked (`worker/switch.rs`). An unparker that wins `PARKED -> EMPTY` owns the
//! thread again and schedules it: onto the calling worker's ready structure when the placement
//! hint allows, else into the target worker's inbox (the hint's worker, or by the runtime's own
//! rule in `placement/`: the thread's last worker, its placement hints).

use crate::bandwidth::thread as bandwidth;
use crate::context::{ctx_ptr, current_task_ptr};
use crate::job::Job;
use crate::placement::{self, Route};
use crate::task::{Reason, Task};
use footprint_locks::{Placement, Unpark};
use std::sync::Arc;

/// Gives the worker back from the running green thread.
///
/// # Safety
/// `task` must be the running green thread of the calling OS thread.
#[inline]
unsafe fn suspend(task: *const Task, r: Reason) {
    // SAFETY: per the contract we are inside the thread's coroutine.
    unsafe { (*task).suspend(r) }
}

/// Yields the worker to other ready green threads (an OS-thread yield outside the runtime).
#[inline]
pub fn yield_now() {
    let t = current_task_ptr();
    if t.is_null() {
        std::thread::yield_now();
    } else {
        // The throttle's switch point: charge the run; a thread that owes a delay sleeps it
        // instead of yielding (the sleep gives the worker away just the same).
        let mut timed = false;
        if bandwidth::engaged() {
            let c = bandwidth::before_yield();
            if serve_throttle(c.delay) {
                return;
            }
            timed = c.reserved;
        }
        // SAFETY: t is the running green thread of this OS thread.
        unsafe { suspend(t, Reason::Yield) }
        if timed {
            bandwidth::after_resume();
        }
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
        if (*t).park_state().take_permit() {
            return;
        }
        let timed = bandwidth::engaged() && bandwidth::before_park();
        suspend(t, Reason::Park);
        if timed {
            bandwidth::after_resume();
        }
    }
}

/// Serves a throttle delay of the calling green thread (bandwidth control): it sleeps on the
/// runtime's timer, parked, so that its worker runs other work meanwhile (or sleeps if there is
/// none); never a spin.
/// Returns whether it slept.
#[cold]
pub(crate) fn serve_throttle(delay: std::time::Duration) -> bool {
    if delay.is_zero() {
        return false;
    }
    let Some(deadline) = std::time::Instant::now().checked_add(delay) else {
        return false;
    };
    bandwidth::begin_delay(delay);
    // As `sleep_until`: one timer entry; an earlier (spurious) return parks again.
    crate::timer::wake_at(deadline, footprint_locks::current_hook().current_unparker());
    while std::time::Instant::now() < deadline {
        park_current();
    }
    bandwidth::end_delay();
    true
}

/// Puts a woken green thread on a run queue (called by `Task::unpark_task`): on the worker the
/// hint names, else by the runtime's own rule (`placement::woken_route`: its last worker, its
/// placement hints, the load-balance exception).
pub(crate) fn schedule_woken(task: Arc<Task>, hint: Placement) {
    // SAFETY: a parked task is unfinished, so its runtime is alive (Runtime::drop waits for
    // every unfinished green thread).
    let shared = unsafe { &*task.runtime() };
    let here = placement::here(shared);
    let here_index = here.map(|w| w.index());
    // placement: a home given by thread shuffling (003) wins across domains.
    if let Some(s) = &shared.placement().shuffle {
        let hinted = match hint {
            Placement::Worker(w) if w < shared.workers().len() => Some(w),
            _ => None,
        };
        if let Some(home) = s.redirect(&task, hinted) {
            return placement::enqueue(shared, here, Route::Bound(home, u64::MAX), task);
        }
    }
    let route = match hint {
        Placement::Worker(w) if Some(w) == here_index => Route::Local,
        Placement::Worker(w) if w < shared.workers().len() => Route::Inbox(w),
        Placement::LastWorker => placement::woken_route(shared, &task, here_index, false),
        _ => placement::woken_route(shared, &task, here_index, true),
    };
    placement::enqueue(shared, here, route, task);
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
        let w = (*c).worker();
        !w.is_null() && (*(*w).ready_mut()).promote_first(scan, pred)
    }
}

impl Task {
    /// Makes a permit available and schedules the thread if it is parked.
    pub(crate) fn unpark_task(self: &Task, hint: Placement) {
        if self.park_state().unpark() {
            // SAFETY: a parked task's run reference was leaked with Arc::into_raw by the worker
            // that parked it; winning PARKED -> EMPTY (`ParkState::unpark`) makes it ours.
            let task = unsafe { Arc::from_raw(self as *const Task) };
            schedule_woken(task, hint);
        }
    }
}

impl Unpark for Task {
    fn unpark(&self, hint: Placement) {
        self.unpark_task(hint)
    }
}
