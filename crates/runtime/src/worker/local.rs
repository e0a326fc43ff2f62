//! The owner-only part of a worker ([`WorkerLocal`], on the worker OS thread's stack) and the
//! per-thread record of where a thread runs ([`ThreadCtx`]).
//!
//! Their fields are the worker's own: only `worker/` (this module's parent and its children)
//! writes them. The rest of the crate reaches a worker through the methods below, each named
//! for what it does: the queues (`deque`, `ready_mut`), the pools (`pools`), the `join`
//! halves' push count (`next_push_seq`), the running thread's clock (`running_ticks`).

use crate::counters::WorkerSource;
use crate::job::RawJob;
use crate::pool::levels::LocalPools;
use crate::ready::ReadyQueue;
use crate::registry::{Shared, WorkerShared};
use crate::start_deque::StartDeque;
use crate::task::Task;
use crate::worker::idle_state::IdleState;
use crossbeam_deque::Worker as Deque;
use std::cell::{Cell, UnsafeCell};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

/// What a thread knows about where it runs: set on workers (and blocking-pool threads).
pub(crate) struct ThreadCtx {
    pub(super) shared: *const Shared,
    /// The worker this context belongs to (null on a blocking-pool thread).
    pub(super) worker: *const WorkerLocal,
    /// The green thread running now on this worker (null in the scheduler loop). Written by
    /// this OS thread only (relaxed stores, plain moves), read by it and by the runtime's
    /// watcher (`watch/`), which is why it is atomic.
    pub(super) current: AtomicPtr<Task>,
}

impl ThreadCtx {
    /// The context of a thread of `shared` that is not a worker (a blocking-pool thread): no
    /// worker, no green thread.
    pub(crate) fn off_worker(shared: *const Shared) -> ThreadCtx {
        ThreadCtx {
            shared,
            worker: ptr::null(),
            current: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The runtime this thread belongs to.
    #[inline]
    pub(crate) fn shared(&self) -> *const Shared {
        self.shared
    }

    /// This thread's worker, or null on a thread that is not one.
    #[inline]
    pub(crate) fn worker(&self) -> *const WorkerLocal {
        self.worker
    }

    /// The green thread running on this thread now, or null.
    #[inline]
    pub(crate) fn current(&self) -> *const Task {
        self.current.load(Ordering::Relaxed).cast_const()
    }

    /// The cell [`current`](Self::current) reads, for the watcher to sample.
    pub(crate) fn current_cell(&self) -> &AtomicPtr<Task> {
        &self.current
    }
}

/// The owner-only part of a worker; lives on the worker OS thread's stack.
pub(crate) struct WorkerLocal {
    pub(super) index: usize,
    pub(super) shared: *const Shared,
    /// `&shared.workers[index]`, kept so that the switch path finds it without an index check.
    pub(super) me: *const WorkerShared,
    pub(super) deque: StartDeque,
    pub(super) ready: UnsafeCell<ReadyQueue>,
    /// This worker's own level of the pools (`pool.rs`).
    pub(super) pools: LocalPools,
    pub(super) ctx: ThreadCtx,
    /// Picks of local work left until the next fairness check (`worker/mod.rs`, `FAIR_TICK`).
    pub(super) tick: Cell<u32>,
    pub(super) rng: Cell<u64>,
    /// How many `join` halves this worker has pushed (`next_push_seq`).
    pub(super) push_seq: Cell<u64>,
    // accounting: per-thread accounting on (`Shared::counters.timed`), the tick
    // the current run began at (between runs: the tick the last one ended at), whether that
    // tick is too old to start the next run with, whether the job about to run was stolen,
    // the counter source.
    pub(super) timed: bool,
    pub(super) run_start: Cell<u64>,
    pub(super) tick_stale: Cell<bool>,
    pub(super) stolen: Cell<bool>,
    /// The idle search's state between two idle spells.
    pub(super) idle: IdleState,
    /// Which of the two resume sites the next resumption uses (`worker/switch.rs`, `run_task`): it
    /// alternates, so that two green threads taking turns on this worker are each resumed from
    /// a site of their own.
    pub(super) resume_site: Cell<bool>,
    pub(super) source: UnsafeCell<Option<WorkerSource>>,
}

impl WorkerLocal {
    pub(crate) fn new(index: usize, shared: &Arc<Shared>, deque: Deque<RawJob>) -> WorkerLocal {
        WorkerLocal {
            index,
            shared: Arc::as_ptr(shared),
            me: &shared.workers()[index],
            deque: StartDeque::new(deque),
            ready: UnsafeCell::new(ReadyQueue::new(
                shared.ready_order(),
                shared
                    .affinity()
                    .map(|a| (a.policy, a.workers[index].clone())),
                shared.workers()[index].inbox(),
            )),
            pools: LocalPools::new(),
            ctx: ThreadCtx::off_worker(Arc::as_ptr(shared)),
            tick: Cell::new(0),
            push_seq: Cell::new(0),
            timed: shared.counters().timed,
            run_start: Cell::new(0),
            tick_stale: Cell::new(true),
            stolen: Cell::new(false),
            idle: IdleState::default(),
            resume_site: Cell::new(false),
            source: UnsafeCell::new(None),
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1)),
        }
    }

    /// Points this worker's context at the worker, now that it sits where it stays until its
    /// loop returns, and returns the context for the thread-local (`context::set_ctx`).
    pub(crate) fn bind_context(&mut self) -> *const ThreadCtx {
        self.ctx.worker = ptr::from_ref(self);
        &self.ctx
    }

    /// The context [`bind_context`](Self::bind_context) returned.
    pub(crate) fn context(&self) -> &ThreadCtx {
        &self.ctx
    }

    /// This worker's index in `Shared::workers`.
    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// This worker's shared part (`shared().workers[index]`).
    #[inline]
    pub(crate) fn me(&self) -> &WorkerShared {
        // SAFETY: it lives in `Shared::workers`, alive while the worker loop runs (see `shared`).
        unsafe { &*self.me }
    }

    #[inline]
    pub(crate) fn shared(&self) -> &Shared {
        // SAFETY: the worker holds an Arc<Shared> for as long as its loop runs.
        unsafe { &*self.shared }
    }

    /// This worker's start deque (owner end).
    #[inline]
    pub(crate) fn deque(&self) -> &StartDeque {
        &self.deque
    }

    /// This worker's ready structure.
    ///
    /// # Safety
    /// Called on the worker's own OS thread, with no other borrow of the ready structure live
    /// (none is held across a resumption).
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn ready_mut(&self) -> &mut ReadyQueue {
        // SAFETY: per the contract.
        unsafe { &mut *self.ready.get() }
    }

    /// This worker's own level of the control-block and stack pools.
    #[inline]
    pub(crate) fn pools(&self) -> &LocalPools {
        &self.pools
    }

    /// Counts one more `join` half pushed by this worker and returns its number (from 1): the
    /// mark by which `spawn.rs` tells its own entry from a later push.
    #[inline]
    pub(crate) fn next_push_seq(&self) -> u64 {
        let seq = self.push_seq.get() + 1;
        self.push_seq.set(seq);
        seq
    }

    /// Clock ticks since the running green thread was resumed (0 when per-thread accounting
    /// is off).
    #[inline]
    pub(crate) fn running_ticks(&self) -> u64 {
        if self.timed {
            crate::clock::ticks().wrapping_sub(self.run_start.get())
        } else {
            0
        }
    }
}
