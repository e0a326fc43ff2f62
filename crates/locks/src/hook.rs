//! The scheduler hook: how a lock, barrier or condition variable talks to whatever schedules the
//! calling thread.
//!
//! `footprint-locks` never depends on the runtime. Instead each OS thread may have a
//! [`SchedulerHook`] installed (the runtime installs its own on every worker thread with
//! [`install_hook`]); where none is installed, [`current_hook`] returns the OS-thread
//! implementation, for which the kernel is the scheduler.
//!
//! Through the hook a synchronising thread:
//! - publishes its [`PriorityClass`] (002 §4) in a [`ClassCell`] that other threads may read and,
//!   where two threads race on it, update with one atomic operation;
//! - asks whether a ready thread of a higher class waits for a processor, and hands its processor
//!   to it;
//! - parks, and is unparked through an [`Unparker`] with a [`Placement`] hint (lock-hot placement:
//!   a woken waiter should run on the releaser's worker).
//!
//! # The contract for implementors
//! - `park` blocks the *current* thread (green or OS) until a permit from its [`Unparker`] is
//!   available, then consumes the permit. An `unpark` that comes before the `park` is not lost:
//!   the next `park` returns at once. `park` may return spuriously; callers re-check their
//!   condition in a loop.
//! - [`SchedulerHook::class_cell`] returns a cell that stays valid for as long as the current thread
//!   (green or OS) lives; a lock keeps the pointer only while that thread is inside one of its
//!   operations.
//! - Every method is called from the thread it describes ("the current thread"), except that
//!   `Unparker::unpark` and `ClassCell` reads/updates may come from any thread.

pub use crate::interface::{
    ClassCell, Placement, PriorityClass, RunState, SchedulerHook, ThreadTag, Unpark, Unparker,
    WaitOn,
};

std::thread_local! {
    static INSTALLED: std::cell::Cell<Option<&'static dyn SchedulerHook>> =
        const { std::cell::Cell::new(None) };
    /// The class cell of the thread a scheduler runs on this OS thread now, where the scheduler
    /// publishes it ([`set_scheduled_class_cell`]); null otherwise.
    static SCHEDULED_CELL: std::cell::Cell<*const ClassCell> =
        const { std::cell::Cell::new(std::ptr::null()) };
}

/// Publishes the class cell of the thread the calling OS thread's scheduler is about to run
/// (`cell`), or null when it stops running it: the runtime calls this around each resumption of
/// a green thread, so that an informing lock finds the running thread's cell with one
/// thread-local read instead of a call through the hook and a second thread-local (this is
/// part of the informing bookkeeping that every acquisition of a contended lock
/// pays). Where it is null the locks ask the installed hook ([`SchedulerHook::class_cell`]).
///
/// # Safety
/// A non-null `cell` must be the class cell of the thread that runs on the calling OS thread
/// until the next call, and stay valid until then (as [`SchedulerHook::class_cell`]'s contract
/// asks).
///
/// ```
/// use footprint::locks::hook::{set_scheduled_class_cell, ClassCell, PriorityClass};
/// let cell = ClassCell::new(PriorityClass::Running);
/// // SAFETY: `cell` outlives the calls, and this thread "runs" its owner until the reset.
/// unsafe { set_scheduled_class_cell(&cell) };
/// unsafe { set_scheduled_class_cell(std::ptr::null()) };
/// ```
#[inline]
pub unsafe fn set_scheduled_class_cell(cell: *const ClassCell) {
    SCHEDULED_CELL.with(|c| c.set(cell));
}

/// Installs `hook` as the scheduler of the calling OS thread (the runtime does this on each worker
/// thread before running green threads). Returns the hook it replaces.
pub fn install_hook(hook: &'static dyn SchedulerHook) -> Option<&'static dyn SchedulerHook> {
    INSTALLED.with(|h| h.replace(Some(hook)))
}

/// Removes the hook of the calling OS thread, returning it.
pub fn uninstall_hook() -> Option<&'static dyn SchedulerHook> {
    INSTALLED.with(|h| h.replace(None))
}

/// The scheduler of the calling thread: the installed hook, or the OS-thread one.
///
/// Not inlined on purpose: a green thread may resume on another OS thread, and the address of a
/// thread-local must not be cached across a park.
#[inline(never)]
pub fn current_hook() -> &'static dyn SchedulerHook {
    INSTALLED
        .with(|h| h.get())
        .unwrap_or_else(crate::os::os_hook)
}

/// Whether a scheduler hook is installed on the calling thread (a green thread's worker, or a
/// test's hook): where none is, the kernel schedules the thread and nobody reads its class. Not
/// inlined, for the same reason as [`current_hook`].
#[inline(never)]
pub(crate) fn hook_installed() -> bool {
    INSTALLED.with(|h| h.get()).is_some()
}

/// The calling thread's class cell: `current_hook().class_cell()`, with no virtual call where no
/// hook is installed (an OS thread). Not inlined, for the same reason as [`current_hook`].
#[inline(never)]
pub(crate) fn current_class_cell() -> *const ClassCell {
    match INSTALLED.with(|h| h.get()) {
        Some(h) => h.class_cell(),
        None => crate::os::os_class_cell(),
    }
}

/// The calling thread's class cell where a scheduler hook is installed, null on a plain OS
/// thread (no hook: the kernel schedules it and nobody reads its class). Not inlined, for the
/// same reason as [`current_hook`].
#[inline(never)]
pub(crate) fn scheduler_class_cell() -> *const ClassCell {
    let scheduled = SCHEDULED_CELL.with(|c| c.get());
    if !scheduled.is_null() {
        return scheduled;
    }
    match INSTALLED.with(|h| h.get()) {
        Some(h) => h.class_cell(),
        None => std::ptr::null(),
    }
}
