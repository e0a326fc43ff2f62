//! Jobs: what the start deques, the injector, the inboxes and the ready structures hold.
//!
//! A [`Job`] is a green thread (new or ready to resume) or the stolen half of a `join` that lives
//! on its caller's stack ([`StackJobRef`], whose target starts with a [`StackJobHeader`]). In the
//! deques and the injector a job travels as a two-word [`RawJob`].

use crate::task::Task;
use std::cell::Cell;
use std::sync::Arc;

/// A unit of work in a queue.
pub(crate) enum Job {
    /// A green thread: new (never ran, no stack yet) or ready to resume.
    Task(Arc<Task>),
    /// The stolen half of a `join`, living on its caller's stack; it gets a green thread (and a
    /// stack) only when it runs.
    Stack(StackJobRef),
}

/// A pointer to a `join` half on its caller's stack plus the function that runs it.
#[derive(Clone, Copy)]
pub(crate) struct StackJobRef {
    pub(crate) data: *const (),
    pub(crate) exec: unsafe fn(*const ()),
}

/// The first field of every `join` half (`#[repr(C)]`), so that a joiner can read the push order
/// of any half it pops from its own deque.
#[repr(C)]
pub(crate) struct StackJobHeader {
    /// Push order on its worker (stamped by `push_stack_job`): entries of one deque are ordered
    /// by it, which lets a joiner tell "mine was stolen" from "newer work sits on top of mine".
    pub(crate) seq: Cell<u64>,
}

/// A [`Job`] as stored in the start deques and the injector: two plain words (like rayon's
/// `JobRef`), which the compiler moves through the deque's volatile slot writes straight from
/// registers. (The two-variant enum went through a stack temporary and a 16-byte reload, a
/// store-forwarding stall on every `join`.) `exec == 0` marks a green thread (`data` is then an
/// `Arc<Task>` turned into a raw pointer). No `Drop`: every `RawJob` is turned back into a `Job`
/// exactly once (deques are drained when a worker stops).
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct RawJob {
    data: *const (),
    exec: usize,
}

// SAFETY: a RawJob is a Job (Send) in another representation.
unsafe impl Send for RawJob {}

impl RawJob {
    #[inline]
    pub(crate) fn task(t: Arc<Task>) -> RawJob {
        RawJob {
            data: Arc::into_raw(t).cast(),
            exec: 0,
        }
    }

    #[inline]
    pub(crate) fn stack(r: StackJobRef) -> RawJob {
        RawJob {
            data: r.data,
            exec: r.exec as usize,
        }
    }

    /// The first word: the task's control block or the `join` half's address (what identifies
    /// the entry).
    #[inline]
    pub(crate) fn data(&self) -> *const () {
        self.data
    }

    /// Whether it is a green thread (not a `join` half).
    #[inline]
    pub(crate) fn is_task(&self) -> bool {
        self.exec == 0
    }

    /// The job, taking back ownership of its task reference.
    #[inline]
    pub(crate) fn into_job(self) -> Job {
        if self.exec == 0 {
            // SAFETY: made by RawJob::task from Arc::into_raw; converted back exactly once.
            Job::Task(unsafe { Arc::from_raw(self.data.cast::<Task>()) })
        } else {
            Job::Stack(StackJobRef {
                data: self.data,
                // SAFETY: made by RawJob::stack from a fn pointer of this exact type.
                exec: unsafe { std::mem::transmute::<usize, unsafe fn(*const ())>(self.exec) },
            })
        }
    }
}

// SAFETY: the referenced job is Send (join requires it) and stays alive until it reports done.
unsafe impl Send for StackJobRef {}
