//! The active-worker limit: workers whose index is at or above `Shared::active` are *surplus*.
//!
//! A worker checks the limit where it is cheap — on the fairness tick of its local pick (every
//! 61st pick) and when its local queues run dry, before it steals — so the hot path (popping
//! local work) is unchanged. A surplus worker:
//!
//! 1. hands off: moves its ready threads, start deque and inbox into the injector (where every
//!    active worker looks, at least on its fairness tick) and wakes a sleeping active worker;
//! 2. rests (`SleepWord::announce_rest`/`rest` in `sleep/word.rs`): `sleep = SURPLUS`, SeqCst fence, re-reads the limit and its inbox; if still surplus
//!    and nothing arrived, it waits on the futex while the word reads `SURPLUS`.
//!
//! Who wakes it (each CASes `SURPLUS → NOTIFIED` and wakes the futex, or `notify_all` swaps):
//! the controller after raising the limit (`set_active`: store the limit, SeqCst fence, read
//! the word), a publisher that put a thread in its inbox (`notify_worker`: push, fence, read),
//! and shutdown (`notify_all`). Each pairs store → SeqCst fence → load against the worker's
//! store → fence → load, so either the waker sees `SURPLUS` and wakes it, or the worker sees the
//! new limit or the new inbox entry and does not wait. Woken, it hands off again (a thread
//! placed in its inbox goes to the injector) or, when active again, returns to its loop.
//! Threads bound to it by explicit placement (`migrate_to`, fragment batches, `broadcast`) are
//! run, not handed off: it returns to its loop for them and rests again afterwards.
//!
//! General wake-ups (`notify_one`) only pick `SLEEPING` workers, so a resting worker never
//! swallows one; a worker that was asleep when the limit fell and is woken by one passes it on
//! (`notify_one` on entering its rest). During shutdown no worker is surplus (all help finish).

use crate::job::{Job, RawJob};
use crate::registry::Shared;
use crate::worker::local::WorkerLocal;
use std::sync::atomic::Ordering;

impl WorkerLocal {
    /// Whether this worker is above the active limit (never during shutdown).
    #[inline]
    pub(crate) fn surplus(&self) -> bool {
        let sh = self.shared();
        self.index() >= sh.active_limit() && !sh.is_shutting_down()
    }

    /// [`surplus`](Self::surplus), out of line, for the fairness tick of the local pick (so
    /// that the pick's inlined code is unchanged by the check).
    #[cold]
    #[inline(never)]
    pub(crate) fn surplus_on_tick(&self) -> bool {
        self.surplus()
    }

    /// Hands this worker's queued threads to the injector and rests until it is active again,
    /// the runtime shuts down, or a thread is bound to it (see the module docs).
    #[cold]
    pub(crate) fn rest_surplus(&self) {
        let sh = self.shared();
        let me = &sh.workers()[self.index()];
        if let Some(a) = sh.adaptive() {
            a.rests.fetch_add(1, Ordering::Relaxed);
        }
        // It may have been woken from an ordinary sleep by a `notify_one` meant for work it will
        // not take: pass the wake-up on.
        sh.notify_one(self.index());
        loop {
            self.hand_off(sh);
            if me.inbox().bound_len.load(Ordering::Acquire) > 0 {
                break;
            }
            me.sleep().announce_rest();
            if !self.surplus() {
                break;
            }
            if me.inbox().len.load(Ordering::SeqCst) > 0
                || me.inbox().bound_len.load(Ordering::SeqCst) > 0
            {
                continue; // arrived before the store: hand it off (or run it) first
            }
            me.sleep().rest();
            if !self.surplus() {
                break;
            }
        }
        me.sleep().set_awake();
    }

    /// Moves the ready structure, the start deque and the stealable inbox into the injector and
    /// wakes a sleeping worker if anything moved.
    fn hand_off(&self, sh: &Shared) {
        let me = &sh.workers()[self.index()];
        let mut moved = 0u64;
        // SAFETY: owner-only ready structure; no borrow of it is live in the scheduler loop.
        let ready = unsafe { &mut *self.ready_mut() };
        while let Some(j) = ready.pop() {
            sh.injector().push(RawJob::from(j));
            moved += 1;
        }
        while let Some(j) = self.deque().pop() {
            sh.injector().push(j);
            moved += 1;
        }
        while let Some(j) = me.inbox().pop() {
            sh.injector().push(RawJob::from(j));
            moved += 1;
        }
        if moved > 0 {
            if let Some(a) = sh.adaptive() {
                a.handed_off.fetch_add(moved, Ordering::Relaxed);
            }
            sh.notify_one(self.index());
        }
    }
}

impl From<Job> for RawJob {
    fn from(j: Job) -> RawJob {
        match j {
            Job::Task(t) => RawJob::task(t),
            Job::Stack(r) => RawJob::stack(r),
        }
    }
}
