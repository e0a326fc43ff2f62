//! A worker's start deque: the Chase-Lev deque (owner LIFO, thieves FIFO) plus the one thing the
//! owner knows about it for free, the entry on top when the owner's last operation was a push.
//!
//! A joiner whose thread's entry is not on top (joining in spawn order: the thread spawned last
//! sits above it) used to pop the top entry and push it back to find that out, two deque
//! operations with a full fence each, on every such join. The hint answers it with one load: the
//! entry pushed last and not popped since is on top, unless thieves took it, and then they took
//! everything below it too (they take from the bottom), so the deque is empty and the joiner's
//! entry is not on top either.

use crate::job::RawJob;
use crossbeam_deque::Worker as Deque;
use std::cell::Cell;
use std::ptr;

/// A worker's start deque with its top hint. Owner-only (like the crossbeam `Worker` inside).
pub(crate) struct StartDeque {
    inner: Deque<RawJob>,
    /// The data word of the entry on top when the owner's last operation was a push; null when
    /// it was a pop (the new top is then unknown).
    top: Cell<*const ()>,
}

impl StartDeque {
    /// Wraps the owner side of a deque (its stealers were taken before).
    pub(crate) fn new(inner: Deque<RawJob>) -> StartDeque {
        StartDeque {
            inner,
            top: Cell::new(ptr::null()),
        }
    }

    /// Pushes `job` on top.
    #[inline]
    pub(crate) fn push(&self, job: RawJob) {
        self.top.set(job.data());
        self.inner.push(job);
    }

    /// Pops the top entry.
    #[inline]
    pub(crate) fn pop(&self) -> Option<RawJob> {
        self.top.set(ptr::null());
        self.inner.pop()
    }

    /// Whether the deque is empty (thieves may empty it at any time).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Whether the entry whose data word is `data` is certainly not on top: the entry pushed
    /// last (not popped since) is another one. `false` means "unknown", not "on top".
    #[inline]
    pub(crate) fn top_is_not(&self, data: *const ()) -> bool {
        let top = self.top.get();
        !top.is_null() && top != data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::StackJobRef;

    unsafe fn nothing(_: *const ()) {}

    fn job(at: &u64) -> RawJob {
        RawJob::stack(StackJobRef {
            data: ptr::from_ref(at).cast(),
            exec: nothing,
        })
    }

    #[test]
    fn the_hint_names_the_last_push_and_forgets_at_a_pop() {
        let (a, b) = (1u64, 2u64);
        let (pa, pb): (*const (), *const ()) = (ptr::from_ref(&a).cast(), ptr::from_ref(&b).cast());
        let d = StartDeque::new(Deque::new_lifo());
        assert!(!d.top_is_not(pa), "empty and never pushed: unknown");
        d.push(job(&a));
        assert!(!d.top_is_not(pa), "a is on top");
        d.push(job(&b));
        assert!(d.top_is_not(pa), "b was pushed after a");
        assert!(!d.top_is_not(pb));
        assert_eq!(d.pop().map(|j| j.data()), Some(pb));
        assert!(
            !d.top_is_not(pa),
            "after a pop the top is unknown (it is a)"
        );
        assert!(!d.top_is_not(pb), "after a pop the top is unknown");
    }

    #[test]
    fn a_stolen_top_leaves_an_empty_deque_so_the_hint_still_holds() {
        let (a, b) = (1u64, 2u64);
        let pa: *const () = ptr::from_ref(&a).cast();
        let d = StartDeque::new(Deque::new_lifo());
        let thief = d.inner.stealer();
        d.push(job(&a));
        d.push(job(&b));
        assert!(thief.steal().is_success());
        assert!(thief.steal().is_success());
        assert!(d.top_is_not(pa));
        assert!(
            d.is_empty(),
            "the hint's other entry was stolen with everything below it"
        );
    }
}
