//! The control block's side of the switch: what the worker holding the run reference installs,
//! reads and takes back around a resumption (`worker/switch.rs`: the coroutine, its trap
//! handler and guard page, the worker it runs on), what the overflow handler reads, and how a
//! running thread suspends itself.

use super::Task;
use corosensei::{Coroutine, Yielder};
use std::sync::atomic::Ordering;

/// Why a green thread gave its worker back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Requeue me behind the other ready threads.
    Yield,
    /// Park me (the park protocol finishes on the worker's stack).
    Park,
    /// Move me to this worker (`placement::migrate_current`).
    Migrate(usize),
}

/// What a coroutine returns: normal completion or a recovered stack overflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    Finished,
    Overflow,
}

pub(crate) type Co = Coroutine<(), Reason, Exit, crate::stack::GreenStack>;
pub(crate) type GreenYielder = Yielder<(), Reason>;

impl Task {
    /// Whether the thread has its coroutine (it started and has not finished).
    ///
    /// # Safety
    /// The caller holds the run reference (or the block's only reference).
    #[inline(always)]
    pub(crate) unsafe fn has_coroutine(&self) -> bool {
        // SAFETY: per the contract the switch fields are the caller's.
        unsafe { (*self.co.get()).is_some() }
    }

    /// The thread's coroutine, to resume.
    ///
    /// # Safety
    /// The caller holds the run reference, the thread has its coroutine, and no other borrow of
    /// it is live.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn coroutine(&self) -> &mut Co {
        // SAFETY: per the contract.
        unsafe { (*self.co.get()).as_mut().expect("coroutine present") }
    }

    /// Gives the thread its coroutine, whose stack's guard page starts at `stack_limit`; the
    /// overflow handler finds both here.
    ///
    /// # Safety
    /// The caller holds the run reference and the thread has no coroutine.
    #[inline]
    pub(crate) unsafe fn install_coroutine(&self, co: Co, stack_limit: usize) {
        // SAFETY: per the contract the switch fields are the caller's.
        unsafe {
            *self.stack_limit.get() = stack_limit;
            *self.trap.get() = Some(co.trap_handler());
            *self.co.get() = Some(co);
        }
    }

    /// Takes the finished thread's coroutine back (its stack goes back to a pool).
    ///
    /// # Safety
    /// The caller holds the run reference and the coroutine has returned.
    #[inline]
    pub(crate) unsafe fn take_coroutine(&self) -> Co {
        // SAFETY: per the contract the switch fields are the caller's.
        unsafe {
            *self.trap.get() = None;
            (*self.co.get()).take().expect("coroutine present")
        }
    }

    /// The trap handler and the guard page's address of the running coroutine, for the
    /// overflow handler.
    ///
    /// # Safety
    /// Called on the OS thread that runs this thread's coroutine (which set them before
    /// resuming it).
    #[inline]
    pub(crate) unsafe fn trap_and_limit(
        &self,
    ) -> Option<(corosensei::trap::CoroutineTrapHandler<Exit>, usize)> {
        // SAFETY: per the contract nothing writes them meanwhile.
        unsafe { (*self.trap.get()).map(|th| (th, *self.stack_limit.get())) }
    }

    /// Records the running coroutine's yielder (its first frame does, once).
    ///
    /// # Safety
    /// Called from the thread's own first frame; `y` lives as long as the coroutine.
    #[inline]
    pub(crate) unsafe fn set_yielder(&self, y: *const GreenYielder) {
        // SAFETY: per the contract.
        unsafe { *self.yielder.get() = y };
    }

    /// The stack size it asked for.
    ///
    /// # Safety
    /// The caller holds the run reference (or the thread runs on its OS thread).
    #[inline]
    pub(crate) unsafe fn stack_size(&self) -> usize {
        // SAFETY: written by `init` before the thread was published, not changed after.
        unsafe { *self.stack_size.get() }
    }

    /// The worker it last ran on.
    #[inline(always)]
    pub(crate) fn last_worker(&self) -> usize {
        self.last_worker.load(Ordering::Relaxed)
    }

    /// Stamps the worker about to resume it.
    #[inline(always)]
    pub(crate) fn set_last_worker(&self, worker: usize) {
        self.last_worker.store(worker, Ordering::Relaxed);
    }

    /// Suspends the running green thread (this one) back to its worker.
    ///
    /// # Safety
    /// Called from inside this thread's coroutine (its yielder was set when it started and
    /// stays valid while it runs).
    #[inline]
    pub(crate) unsafe fn suspend(&self, r: Reason) {
        // SAFETY: per the contract.
        unsafe {
            let y = *self.yielder.get();
            (*y).suspend(r);
        }
    }
}
