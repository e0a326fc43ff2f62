//! A worker's start deque: the Chase-Lev deque (owner LIFO, thieves FIFO) plus the one thing the
//! owner knows about it for free, the green thread it pushed last while no green thread was popped
//! since.
//!
//! A joiner whose thread's entry is not on top (joining in spawn order: the thread spawned last
//! sits above it) used to pop the top entry and push it back to find that out, two deque
//! operations with a full fence each, on every such join. The hint answers it with one load.
//!
//! The invariant: when the hint names a green thread X, no green thread was pushed after X and
//! none was popped since X was pushed, so everything above X is a `join` half (`join` pushes and
//! pops its halves without touching the hint, so `join` pays nothing for it). Thieves take from
//! the bottom: if they took X, they took everything below it too. Either way no other green
//! thread's entry is on top.

use crate::job::RawJob;
use crossbeam_deque::Worker as Deque;
use std::cell::Cell;
use std::ptr;

/// A worker's start deque with its top hint. Owner-only (like the crossbeam `Worker` inside).
pub(crate) struct StartDeque {
    inner: Deque<RawJob>,
    /// The green thread pushed last, while no green thread was popped since (null: unknown).
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
        if job.is_task() {
            self.top.set(job.data());
        }
        self.inner.push(job);
    }

    /// Pops the top entry.
    #[inline]
    pub(crate) fn pop(&self) -> Option<RawJob> {
        let job = self.inner.pop();
        if job.is_some_and(|j| j.is_task()) {
            self.top.set(ptr::null());
        }
        job
    }

    /// Whether the deque is empty (thieves may empty it at any time).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Whether the green thread whose control block is at `data` is certainly not on top: the
    /// hint names another one. `false` means "unknown", not "on top".
    #[inline]
    pub(crate) fn top_is_not(&self, data: *const ()) -> bool {
        let top = self.top.get();
        !top.is_null() && top != data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Job, StackJobRef};
    use crate::task::Task;
    use std::sync::Arc;

    unsafe fn nothing(_: *const ()) {}

    fn half(at: &u64) -> RawJob {
        RawJob::stack(StackJobRef {
            data: ptr::from_ref(at).cast(),
            exec: nothing,
        })
    }

    fn thread(t: &Arc<Task>) -> RawJob {
        RawJob::task(t.clone())
    }

    fn at(t: &Arc<Task>) -> *const () {
        Arc::as_ptr(t).cast()
    }

    /// A deque with two green threads pushed, `a` then `b`.
    fn a_then_b() -> (Arc<Task>, Arc<Task>, StartDeque) {
        let (a, b) = (Arc::new(Task::new()), Arc::new(Task::new()));
        let d = StartDeque::new(Deque::new_lifo());
        d.push(thread(&a));
        d.push(thread(&b));
        (a, b, d)
    }

    /// Pops (or steals) everything left, giving the task references back.
    fn drain(d: &StartDeque) {
        while let Some(j) = d.pop() {
            drop(j.into_job());
        }
    }

    #[test]
    fn the_hint_names_the_thread_pushed_last_and_forgets_at_a_thread_pop() {
        let (a, b) = (Arc::new(Task::new()), Arc::new(Task::new()));
        let d = StartDeque::new(Deque::new_lifo());
        assert!(!d.top_is_not(at(&a)), "never pushed: unknown");
        d.push(thread(&a));
        assert!(!d.top_is_not(at(&a)), "a is on top");
        d.push(thread(&b));
        assert!(d.top_is_not(at(&a)), "b was pushed after a");
        assert!(!d.top_is_not(at(&b)));
        let popped = d.pop().map(RawJob::into_job);
        assert!(matches!(&popped, Some(Job::Task(t)) if Arc::ptr_eq(t, &b)));
        drop(popped);
        assert!(
            !d.top_is_not(at(&a)),
            "after a thread's pop the top is unknown (it is a)"
        );
        drain(&d);
    }

    #[test]
    fn join_halves_leave_the_hint_alone_and_never_hide_a_thread_on_top() {
        let (h1, h2) = (1u64, 2u64);
        let (a, b, d) = a_then_b();
        d.push(half(&h1));
        assert!(
            d.top_is_not(at(&a)),
            "a half above b: a is still not on top"
        );
        assert!(d.pop().is_some_and(|j| !j.is_task()));
        assert!(d.top_is_not(at(&a)), "popping the half leaves b on top");
        assert!(!d.top_is_not(at(&b)));
        let popped = d.pop().map(RawJob::into_job);
        drop(popped);
        d.push(half(&h2));
        assert!(
            !d.top_is_not(at(&a)),
            "after b's pop nothing is known, though a half is on top"
        );
        drain(&d);
    }

    #[test]
    fn a_stolen_top_thread_took_everything_below_it_so_the_hint_still_holds() {
        let (a, _b, d) = a_then_b();
        let thief = d.inner.stealer();
        for _ in 0..2 {
            match thief.steal() {
                crossbeam_deque::Steal::Success(j) => drop(j.into_job()),
                _ => panic!("a steal from a deque of two fails only when it is empty"),
            }
        }
        assert!(d.top_is_not(at(&a)));
        assert!(
            d.is_empty(),
            "the hint's thread was stolen with everything below it"
        );
        assert_eq!(Arc::strong_count(&a), 1, "every reference given back");
    }
}
