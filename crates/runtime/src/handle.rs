//! Join handles: joining a green thread (inline when it has not started, else by parking until
//! it completes) and detaching it.

use crate::context::{current_green_of, current_worker_ptr};
use crate::parking::park_current;
use crate::pool::{recycle, recycle_on};
use crate::spawn::{count_finished_on, take_own_top};
use crate::stats::ThreadStats;
use crate::task::{ScopeShared, Task, Waiter};
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Waits for a task to finish and moves its result out.
///
/// # Safety
/// `task` must carry a job of result type `T` and the caller must own its join handle.
pub(crate) unsafe fn join_task<T>(
    task: Arc<Task>,
    at: Option<&'static std::panic::Location<'static>>,
) -> std::thread::Result<T> {
    let t = &*task;
    // The worker to recycle the block on, when the last thread-local read was after the joiner's
    // last suspension; else it is read again at the end.
    let mut recycle_worker = None;
    if !t.is_done() {
        // Fast path: a green thread that has not started yet runs inline on the joiner's stack
        // (same runtime only), with no stack, no switch and no queue round trip. When its queue
        // entry is still on top of our own deque (spawn, then join), popping it makes it ours
        // without a claim race; otherwise a thief may hold the entry and we race by `claim`.
        // A thread placed by a hint runs where it was placed.
        let here = if t.extras().bound.load(Ordering::Relaxed) {
            None
        } else {
            // SAFETY: the runtime is set by `init` before the task is published and not changed
            // until the block is recycled, which needs our handle (we still hold it).
            current_green_of(unsafe { t.runtime() })
        };
        let inline = match here {
            Some((me, w)) => {
                // SAFETY: `w` was read just now on this OS thread, and nothing suspended since.
                let popped = unsafe { take_own_top(w, t) };
                if popped {
                    // SAFETY: we popped its only queue entry and hold its handle.
                    unsafe { t.claim_owned() };
                }
                (popped || t.claim()).then_some(me)
            }
            None => None,
        };
        if let Some(me) = inline {
            // SAFETY: we own the run reference and the handle; the joiner (`me`) is the running
            // green thread. The worker under it may change if the inline thread yields or parks,
            // so it is read again after.
            unsafe {
                t.run_inline(&*me);
                let w = current_worker_ptr();
                count_finished_on(t, w);
                recycle_worker = Some(w);
            }
        } else {
            // SAFETY: we own the handle.
            if unsafe { t.register_waiter(Waiter::current()) } {
                crate::watch::note::note_current(
                    crate::watch::record::WaitKind::Join,
                    ptr_of(t),
                    at,
                );
                while !t.is_done() {
                    park_current();
                }
            }
        }
    }
    // SAFETY: the result is ready (`is_done` seen), we own the handle, and its T is ours by
    // contract.
    let out = unsafe { t.take_result::<T>() };
    let w = recycle_worker.unwrap_or_else(current_worker_ptr);
    // SAFETY: `w` was read on this OS thread after its last suspension (taking the result and
    // releasing the handle do not suspend).
    unsafe { recycle_on(task, w) };
    out
}

/// Detaches a task: its result will be dropped by whoever finishes last.
/// A panic payload found this way goes to `scope` when the task belongs to one.
pub(crate) fn detach_task(task: Arc<Task>, scope: Option<&ScopeShared>) {
    // SAFETY: the caller gives up the handle it owned.
    if unsafe { task.detach(scope) } {
        recycle(task);
    }
}

/// Owned permission to join a green thread. Dropping it detaches the thread.
///
/// ```
/// let rt = footprint::Runtime::builder().workers(2).build().unwrap();
/// let v = rt.block_on(|| footprint::spawn(|| 6 * 7).join().unwrap());
/// assert_eq!(v, 42);
/// ```
pub struct JoinHandle<T> {
    pub(crate) task: Option<Arc<Task>>,
    pub(crate) _marker: PhantomData<fn() -> T>,
}

// SAFETY: the handle only moves the result (T: Send) to the joining thread.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: &JoinHandle exposes only `is_finished`, `name` and `stats` (atomics and a name
// written before the thread was published).
unsafe impl<T> Sync for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// Waits for the green thread to finish and returns its value, or `Err(payload)` if it
    /// panicked (or overflowed its stack, with a `String` payload saying so). A thread that has
    /// not started yet when it is joined from a green thread of the same runtime runs inline on
    /// the joiner's stack.
    #[track_caller]
    pub fn join(mut self) -> std::thread::Result<T> {
        let task = self.task.take().expect("join handle used twice");
        // SAFETY: a JoinHandle<T> is only created for a job with result type T, and we own it.
        unsafe { join_task::<T>(task, Some(std::panic::Location::caller())) }
    }

    /// Whether the green thread has finished (its result is ready).
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_some_and(|t| t.is_done())
    }

    /// The name given to the green thread, if any.
    pub fn name(&self) -> Option<Arc<str>> {
        self.task.as_ref().and_then(|t| t.name())
    }

    /// What the green thread did so far: run time, runs, migrations, steals, parked time and
    /// misses (see [`ThreadStats`]; zero when [`Counters`](crate::Counters) are off). Final
    /// once [`JoinHandle::is_finished`] says so; while it runs, the figures may lag by a run.
    ///
    /// ```
    /// use footprint::{Counters, Runtime};
    /// let rt = Runtime::builder().workers(1).counters(Counters::Time).build()?;
    /// let h = rt.spawn(|| footprint::yield_now());
    /// while !h.is_finished() {
    ///     std::thread::yield_now();
    /// }
    /// assert_eq!(h.stats().runs, 2);
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn stats(&self) -> ThreadStats {
        self.task
            .as_ref()
            .map(|t| ThreadStats::from_account(t.account(), 0))
            .unwrap_or_default()
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            detach_task(task, None);
        }
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}

/// The address of a control block (the key of the runtime's table of named threads).
fn ptr_of(t: &crate::task::Task) -> usize {
    t as *const crate::task::Task as usize
}
