//! Taking work from elsewhere: this worker's own inbox, the other workers' start deques and
//! inboxes tier by tier (nearest first), then the injector; and the other direction, offering
//! this worker's surplus ready threads to idle workers.

use crate::accounting::bump;
use crate::clock;
use crate::inbox;
use crate::job::{Job, RawJob};
use crate::ready::ReadyQueue;
use crate::registry::WorkerShared;
use crate::worker::local::WorkerLocal;
use crossbeam_deque::Steal;
use std::sync::atomic::Ordering;

impl WorkerLocal {
    /// The next job from this worker's own inbox. With a policy order the inbox is first moved
    /// into the ready heap (keyed for this worker) and the heap's best runs. The emptiness check
    /// comes first, so the default orders pay nothing more than before.
    #[inline]
    pub(super) fn pop_own_inbox(&self, me: &WorkerShared) -> Option<Job> {
        if me.inbox().len.load(Ordering::Acquire) == 0 {
            // placement: threads placed here by a hint wait in the bound queue.
            if me.inbox().bound_len.load(Ordering::Acquire) == 0 {
                return None;
            }
            return me.inbox().pop_bound();
        }
        if let Some(j) = me.inbox().pop_bound() {
            return Some(j);
        }
        match self.ready() {
            ReadyQueue::Policy(p) => p.pop(),
            _ => me.inbox().pop(),
        }
    }

    /// Whether this worker orders its ready threads by a policy's keys (a heap that takes every
    /// thread woken here, and its inbox's resumptions, back in by key).
    #[inline]
    pub(crate) fn orders_by_policy(&self) -> bool {
        matches!(self.ready(), ReadyQueue::Policy(_))
    }

    /// Offers half of the ready threads to idle workers: through this worker's inbox, or with a
    /// policy order (whose worker takes its inbox's resumptions back into its heap) through the
    /// injector.
    #[cold]
    pub(super) fn spill(&self) {
        let ready = self.ready();
        let k = ready.len() / 2;
        if k == 0 {
            return;
        }
        let policy = matches!(ready, ReadyQueue::Policy(_));
        let cold = ready.take_cold(k);
        let shared = self.shared();
        if policy {
            for j in cold {
                shared.injector().push(match j {
                    Job::Task(t) => RawJob::task(t),
                    Job::Stack(r) => RawJob::stack(r),
                });
            }
        } else {
            shared.workers()[self.index].inbox().push_many(cold);
        }
        shared.notify_one(self.index);
    }

    /// Steals: own inbox, then victims tier by tier (their start deques, then inboxes), then the
    /// injector.
    pub(super) fn steal(&self) -> Option<Job> {
        let shared = self.shared();
        let me = &shared.workers()[self.index];
        if let Some(j) = self.pop_own_inbox(me) {
            return Some(j);
        }
        // adaptive: a worker above the active limit takes no one else's work. It
        // may be here after an ordinary sleep began while it was still active; without this
        // check it would take the next spawn from the injector and run its threads beside the
        // active workers until they next parked (a 16-worker runtime limited to 1 ran the
        // lock-bound bench 1.5x slower than a 1-worker one).
        if self.surplus() {
            return None;
        }
        for (ti, tier) in me.steal_tiers().iter().enumerate() {
            let n = tier.len();
            let start = (self.next_rand() as usize) % n;
            for i in 0..n {
                let v = &shared.workers()[tier[(start + i) % n]];
                loop {
                    match v.stealer().steal() {
                        Steal::Success(j) => {
                            self.count_steal(me, ti);
                            return Some(j.into_job());
                        }
                        Steal::Retry => continue,
                        Steal::Empty => break,
                    }
                }
                match v.inbox().steal(clock::ticks()) {
                    inbox::Steal::Taken(j) => {
                        self.count_steal(me, ti);
                        return Some(j);
                    }
                    inbox::Steal::InGrace => self.idle.left_young(),
                    inbox::Steal::Empty => {}
                }
            }
        }
        loop {
            match shared.injector().steal() {
                Steal::Success(j) => {
                    bump(&me.account().injector_takes, 1);
                    return Some(j.into_job());
                }
                Steal::Retry => continue,
                Steal::Empty => return None,
            }
        }
    }

    /// Counts a steal from tier `tier` and marks the job about to run as stolen.
    #[inline]
    pub(super) fn count_steal(&self, me: &WorkerShared, tier: usize) {
        bump(&me.account().steals_by_tier[tier], 1);
        crate::trace::steal(self.index, tier);
        self.stolen.set(true);
    }
}
