//! A worker's inbox: the mutex-protected queue through which other threads hand it woken green
//! threads and through which it offers surplus ready threads to idle workers.
//!
//! `len` mirrors the queue's length so that the owner's fast path (and `notify_worker`'s load
//! check) reads one atomic instead of taking the lock.
//!
//! A thread that the owner's running thread wakes for the owner itself (lock-hot placement: a
//! releaser wakes its waiter onto its own worker) waits here too, not in the owner-only ready
//! structure: the running thread keeps the worker until it parks, yields or ends, which may be
//! long after the wake-up (a releaser that takes the lock again at once never parks), and an
//! idle worker must be able to take the woken thread meanwhile. Thieves leave such a thread to
//! the owner for [`WOKEN_GRACE`] after it arrived: a waker that is about to block (the other
//! side of a ping-pong) runs it on this worker within that time, with its data in this cache.
//!
//! Beside the stealable queue sits the *bound* queue : threads placed on
//! this worker by a placement hint (a data-fragment batch, a partner, an explicit
//! `migrate_to`). Only the owner pops it, in batch order (smaller key first, FIFO on ties), so
//! a fragment's batch runs back to back on the worker whose cache holds the fragment; thieves
//! never take from it. `bound_len` mirrors its length.

use crate::job::Job;
use footprint_affinity::ready::ReadyHeap;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How long thieves leave a thread woken by this worker's running thread (`push_local`) to this
/// worker. A waker that blocks right after its wake-up (a condition-variable or channel
/// ping-pong, a releaser that waits for the lock again) switches to it within a microsecond;
/// three cover that with room, and are far below what a thread that waits for a busy worker
/// loses (a releaser that keeps the lock keeps the worker for the rest of its run). Without the
/// grace a searching worker took the woken half of a two-thread condition-variable ping-pong
/// on 2 workers at one hand-off in three, and a round trip took 320 ns instead of 195.
pub(crate) const WOKEN_GRACE: Duration = Duration::from_micros(3);

/// [`WOKEN_GRACE`] in clock ticks (calibrated on first use).
pub(crate) fn grace_ticks() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| crate::clock::ticks_in(WOKEN_GRACE))
}

/// What a thief's look at an inbox gave.
pub(crate) enum Steal {
    Taken(Job),
    Empty,
    /// A thread woken here by the owner's running thread waits, still left to the owner.
    InGrace,
}

/// Jobs handed to one worker by others (see the module docs).
pub(crate) struct Inbox {
    pub(crate) queue: Mutex<VecDeque<Job>>,
    pub(crate) len: AtomicUsize,
    /// Woken threads handed over with `push` (written under the lock).
    woken: AtomicU64,
    /// The tick at which a thread woken by the owner's running thread (`push_local`) arrived
    /// while none such waited (0: none waits). Read and written under the lock (an atomic so
    /// that the owner's empty-queue check needs no lock). A later one does not move it, so a
    /// queue the owner leaves waiting only ages.
    local_since: AtomicU64,
    // placement: the owner-only bound queue (see the module docs).
    pub(crate) bound: Mutex<ReadyHeap<Job>>,
    pub(crate) bound_len: AtomicUsize,
}

impl Inbox {
    pub(crate) fn new() -> Inbox {
        Inbox {
            queue: Mutex::new(VecDeque::new()),
            len: AtomicUsize::new(0),
            woken: AtomicU64::new(0),
            local_since: AtomicU64::new(0),
            bound: Mutex::new(ReadyHeap::new()),
            bound_len: AtomicUsize::new(0),
        }
    }

    pub(crate) fn push(&self, j: Job) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.push_back(j);
        self.len.store(q.len(), Ordering::Release);
        crate::accounting::bump(&self.woken, 1);
    }

    /// Hands the owner a thread that its running thread woke for this worker, at tick `now`
    /// (see the module docs): thieves leave it for [`WOKEN_GRACE`].
    pub(crate) fn push_local(&self, j: Job, now: u64) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.push_back(j);
        if self.local_since.load(Ordering::Relaxed) == 0 {
            // 0 means "none": a clock that reads 0 is taken as one tick later.
            self.local_since.store(now.max(1), Ordering::Relaxed);
        }
        self.len.store(q.len(), Ordering::Release);
    }

    /// Woken threads handed to this inbox so far (`push`; not `push_many`, which spills).
    pub(crate) fn woken(&self) -> u64 {
        self.woken.load(Ordering::Relaxed)
    }

    pub(crate) fn push_many(&self, js: Vec<Job>) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.extend(js);
        self.len.store(q.len(), Ordering::Release);
    }

    /// The owner's next job (or a draining worker's).
    pub(crate) fn pop(&self) -> Option<Job> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.pop_locked()
    }

    /// A thief's take: the next job, unless a thread woken here by the owner's running thread
    /// arrived less than [`WOKEN_GRACE`] before tick `now` (then [`Steal::InGrace`]).
    pub(crate) fn steal(&self, now: u64) -> Steal {
        if self.len.load(Ordering::Acquire) == 0 {
            return Steal::Empty;
        }
        // Under the lock: read outside it, the mark could be that of a thread the owner has
        // just taken, and the job popped one that arrived after it, still in its grace.
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let since = self.local_since.load(Ordering::Relaxed);
        if since != 0 && now.wrapping_sub(since) < grace_ticks() {
            return Steal::InGrace;
        }
        let j = q.pop_front();
        self.popped(&q);
        j.map_or(Steal::Empty, Steal::Taken)
    }

    fn pop_locked(&self) -> Option<Job> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let j = q.pop_front();
        self.popped(&q);
        j
    }

    /// After a pop from `q` (locked): its length, and no mark once it is empty.
    fn popped(&self, q: &VecDeque<Job>) {
        if q.is_empty() {
            self.local_since.store(0, Ordering::Relaxed);
        }
        self.len.store(q.len(), Ordering::Release);
    }
}

// placement
impl Inbox {
    /// Hands `j` to this worker's bound queue with ready key `key` (smaller runs first).
    pub(crate) fn push_bound(&self, key: u64, j: Job) {
        let mut q = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        q.push(key, j);
        self.bound_len.store(q.len(), Ordering::Release);
    }

    /// The owner's next bound job.
    #[cold]
    pub(crate) fn pop_bound(&self) -> Option<Job> {
        if self.bound_len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut q = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        let j = q.pop().map(|(_, j)| j);
        self.bound_len.store(q.len(), Ordering::Release);
        j
    }
}
