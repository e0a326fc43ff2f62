//! A parked thread that another thread completes: the waiter node of the channel and the
//! semaphore.
//!
//! The node lives on the waiter's stack and is linked into its owner's list under the owner's
//! lock. A completer, holding that lock, unlinks the node, may move a value in or out of its slot,
//! sets the outcome (`Release`), and wakes the waiter after releasing the lock, with an unparker
//! cloned *before* the outcome store (after it the waiter may return and free the node). The
//! waiter parks through the scheduler hook (a green thread parks off its worker) until the
//! outcome is set or its deadline passes; it publishes `Waiter` meanwhile.

use crate::hook::{current_hook, Placement, PriorityClass, Unparker, WaitOn};
use crate::sync::{AtomicUsize, Ordering};
use crate::wait::{ClassScope, Informed};
use std::cell::UnsafeCell;
use std::time::Instant;

/// Not completed yet.
pub(crate) const WAITING: usize = 0;
/// Completed: the operation happened (a value was handed over, permits were granted).
pub(crate) const DONE: usize = 1;
/// Completed: the other side is gone.
pub(crate) const DISCONNECTED: usize = 2;
/// Unlinked by its owner after a timeout.
pub(crate) const CANCELLED: usize = 3;
/// Unlinked by a select that chose to send to this (receiving) node and will complete it: the
/// owner waits for that completion past its deadline (channels only).
pub(crate) const CLAIMED: usize = 4;
/// Completed without the operation: the select that claimed the node, or that the node's owner
/// claimed, dropped its chosen operation; the owner tries its operation again (channels only).
pub(crate) const RETRY: usize = 5;
/// Completed without the operation: the state the owner waits on changed (a channel's ring got a
/// message or a free place); the owner tries its operation again (channels only).
pub(crate) const NOTIFIED: usize = 6;

/// Yields before a waiter parks (none under loom: the model explores parking).
const YIELDS_BEFORE_PARK: u32 = if cfg!(loom) { 0 } else { 2 };

pub(crate) struct Handoff<T> {
    outcome: AtomicUsize,
    slot: UnsafeCell<Option<T>>,
    /// Taken by the completer (under the owner's lock, before the outcome store).
    unparker: UnsafeCell<Option<Unparker>>,
}

impl<T> Handoff<T> {
    /// A node for the calling thread, holding `value` (a sender's message) or nothing.
    pub(crate) fn new(value: Option<T>) -> Handoff<T> {
        Handoff {
            outcome: AtomicUsize::new(WAITING),
            slot: UnsafeCell::new(value),
            unparker: UnsafeCell::new(Some(current_hook().current_unparker())),
        }
    }

    /// Moves `value` into the slot.
    ///
    /// # Safety
    /// The caller is the owner before linking or after completion, or a completer holding the
    /// owner's lock while the node is linked.
    pub(crate) unsafe fn put(&self, value: T) {
        // SAFETY: exclusive access per the contract.
        unsafe { *self.slot.get() = Some(value) }
    }

    /// Takes the value out of the slot.
    ///
    /// # Safety
    /// As for [`put`](Self::put).
    pub(crate) unsafe fn take(&self) -> Option<T> {
        // SAFETY: exclusive access per the contract.
        unsafe { (*self.slot.get()).take() }
    }

    /// Sets the outcome of a linked node that the caller has just unlinked under the owner's
    /// lock; returns the unparker to call once that lock is released.
    pub(crate) fn complete(&self, outcome: usize) -> Unparker {
        // SAFETY: a linked node is completed once, by the holder of the owner's lock, and its
        // owner does not touch the unparker (only this call takes it).
        let u = unsafe { (*self.unparker.get()).take() }.expect("a node is completed once");
        self.outcome.store(outcome, Ordering::Release);
        u
    }

    /// Completes a linked node that the caller has just unlinked under the owner's lock, unless
    /// its owner cancelled it first ([`try_cancel`](Self::try_cancel), which needs no lock);
    /// returns the unparker to call once that lock is released, `None` when the owner won.
    pub(crate) fn try_complete(&self, outcome: usize) -> Option<Unparker> {
        // SAFETY: as in `complete`: only a completer holding the owner's lock takes the
        // unparker, and the owner never reads it. Taken before the exchange: once the outcome
        // is set the owner may return and free the node.
        let u = unsafe { (*self.unparker.get()).take() }?;
        self.outcome
            .compare_exchange(WAITING, outcome, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        Some(u)
    }

    /// The owner gives its linked node up without the lock (it found what it waited for, or its
    /// deadline passed); `false` when a completer set the outcome first. The owner then unlinks
    /// the node under the owner's lock (a completer that loses the race unlinks it too).
    pub(crate) fn try_cancel(&self) -> bool {
        self.outcome
            .compare_exchange(WAITING, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Marks a linked node that the caller has just unlinked under the owner's lock to complete
    /// it later (a select's chosen send): its owner waits for the completion past its deadline.
    pub(crate) fn claim(&self) {
        self.outcome.store(CLAIMED, Ordering::Release);
    }

    /// Marks a node its owner unlinked itself (after a timeout), under the owner's lock.
    pub(crate) fn cancel(&self) {
        self.outcome.store(CANCELLED, Ordering::Relaxed);
    }

    /// The outcome now (`WAITING` while linked and not completed).
    pub(crate) fn outcome(&self) -> usize {
        self.outcome.load(Ordering::Acquire)
    }

    /// Parks until completed or `deadline`. Returns the outcome, or `WAITING` at the deadline
    /// (the caller then unlinks the node under the owner's lock, or finds it completed). A
    /// `CLAIMED` node is waited for past the deadline, until its claimer completes it.
    // Under loom `YIELDS_BEFORE_PARK` is 0, so the yield loop's range is empty on purpose.
    #[cfg_attr(loom, allow(clippy::reversed_empty_ranges))]
    pub(crate) fn park(&self, deadline: Option<Instant>, what: WaitOn) -> usize {
        let mut outcome = self.outcome();
        if outcome != WAITING && outcome != CLAIMED {
            return outcome;
        }
        let hook = current_hook();
        let scope = ClassScope::enter::<Informed>();
        scope.publish(PriorityClass::Waiter);
        // First let the threads ready on this worker (or CPU) run: the one that completes us is
        // often among them (a ping-pong partner, a producer), and then a yield or two replaces a
        // park and a wake-up (the completer's unpark only leaves a permit; a later park returns
        // at once and its loop re-checks). A green thread yields only where the runtime says
        // threads wait in its worker's queues: with none there, the completer runs elsewhere
        // or not at all, and a yield would come straight back.
        let yields = if hook.is_green() && !hook.queued_here() {
            0
        } else {
            YIELDS_BEFORE_PARK
        };
        for _ in 0..yields {
            hook.yield_now();
            outcome = self.outcome();
            if outcome != WAITING && outcome != CLAIMED {
                scope.restore();
                return outcome;
            }
            if outcome == WAITING && deadline.is_some_and(|d| Instant::now() >= d) {
                scope.restore();
                return outcome;
            }
        }
        hook.note_wait(what);
        while outcome == WAITING || outcome == CLAIMED {
            match deadline {
                Some(d) if outcome == WAITING => {
                    let now = Instant::now();
                    if now >= d {
                        break;
                    }
                    hook.park_timeout(d - now);
                }
                _ => hook.park(),
            }
            outcome = self.outcome();
        }
        scope.restore();
        outcome
    }
}

/// Wakes the threads of completed nodes (after the owner's lock is released), each where its
/// data is: on the worker it last ran on, by the scheduler's own rule
/// ([`Placement::Anywhere`]), not on the completer's. A channel's woken receiver carries its
/// message in its node and goes on with its own state (its stack, what it accumulates), and a
/// woken sender goes on producing from its own; lock-hot placement, right for a lock whose
/// critical section's data the releaser has just touched, would move the pipeline's stages
/// onto the worker of whichever thread completed them.
pub(crate) fn wake_all(unparkers: impl IntoIterator<Item = Unparker>) {
    for u in unparkers {
        u.unpark(Placement::Anywhere);
    }
}
