//! A worker's inbox: the mutex-protected queue through which other threads hand it woken green
//! threads and through which it offers surplus ready threads to idle workers.
//!
//! `len` mirrors the queue's length so that the owner's fast path (and `notify_worker`'s load
//! check) reads one atomic instead of taking the lock.
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
use std::sync::Mutex;

/// Jobs handed to one worker by others (see the module docs).
pub(crate) struct Inbox {
    pub(crate) queue: Mutex<VecDeque<Job>>,
    pub(crate) len: AtomicUsize,
    /// Woken threads handed over with `push` (written under the lock).
    woken: AtomicU64,
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

    /// Woken threads handed to this inbox so far (`push`; not `push_many`, which spills).
    pub(crate) fn woken(&self) -> u64 {
        self.woken.load(Ordering::Relaxed)
    }

    pub(crate) fn push_many(&self, js: Vec<Job>) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.extend(js);
        self.len.store(q.len(), Ordering::Release);
    }

    pub(crate) fn pop(&self) -> Option<Job> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let j = q.pop_front();
        self.len.store(q.len(), Ordering::Release);
        j
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
