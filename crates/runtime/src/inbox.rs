//! A worker's inbox: the mutex-protected queue through which other threads hand it woken green
//! threads and through which it offers surplus ready threads to idle workers.
//!
//! `len` mirrors the queue's length so that the owner's fast path (and `notify_worker`'s load
//! check) reads one atomic instead of taking the lock.

use crate::job::Job;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Jobs handed to one worker by others (see the module docs).
pub(crate) struct Inbox {
    pub(crate) queue: Mutex<VecDeque<Job>>,
    pub(crate) len: AtomicUsize,
    /// Woken threads handed over with `push` (written under the lock).
    woken: AtomicU64,
}

impl Inbox {
    pub(crate) fn new() -> Inbox {
        Inbox {
            queue: Mutex::new(VecDeque::new()),
            len: AtomicUsize::new(0),
            woken: AtomicU64::new(0),
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

    /// Like [`pop`](Inbox::pop), for a thief: leaves a thread that is moving to this worker
    /// (`Task::moving`) at the front, so only the owner takes it.
    pub(crate) fn pop_unbound(&self) -> Option<Job> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Job::Task(t)) = q.front() {
            if t.moving.load(Ordering::Relaxed) {
                return None;
            }
        }
        let j = q.pop_front();
        self.len.store(q.len(), Ordering::Release);
        j
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
