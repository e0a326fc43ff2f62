//! The sleeper side of the idle protocol (`sleep.rs`): a worker without work searches the
//! other workers' queues, counted as a searcher, in rounds of polls whose waits double; if that
//! finds nothing it sleeps until a publisher wakes it (or the safety net runs out).

use crate::accounting::bump;
use crate::clock;
use crate::job::Job;
use crate::registry::Shared;
use crate::sleep::Slept;
use crate::worker::idle_state::IdleState;
use crate::worker::local::WorkerLocal;

impl WorkerLocal {
    /// This worker found work: if it was searching it stops, and wakes one more worker if it
    /// was the last searcher while others sleep (`sleep.rs`).
    #[inline]
    pub(super) fn found_while_searching(&self) {
        if self.idle.set_searching(false) {
            self.stop_searching_found();
        }
    }

    /// This worker stops searching without work (to sleep, rest or leave).
    #[inline]
    pub(super) fn stop_searching_idle(&self) {
        if self.idle.set_searching(false) {
            self.shared().sleepers().stop_searching();
        }
    }

    pub(super) fn idle(&self) -> Idle {
        let shared = self.shared();
        let since = clock::ticks();
        shared.enter_idle();
        let r = self.idle_inner(shared, since);
        shared.leave_idle();
        let acct = &shared.workers()[self.index].account();
        let now = clock::ticks();
        bump(&acct.idle_ticks, now.wrapping_sub(since));
        self.run_start.set(now);
        self.tick_stale.set(false);
        r
    }

    pub(super) fn idle_inner(&self, shared: &Shared, since: u64) -> Idle {
        if !self.idle.set_searching(true) {
            shared.sleepers().start_searching();
        }
        self.idle.take_left_young();
        // With more workers than CPUs a worker that waits for a CPU may hold the work this one
        // looks for: between two polls this one gives its CPU away instead of pausing on it.
        let crowded = shared.workers().len() > footprint_locks::os::cpus();
        // Starts where the last search stopped if that found only a stale entry (see `start`);
        // its length follows how soon this worker was last woken (`idle_state.rs`).
        for round in self.idle.take_start_round(since)..self.idle.rounds() {
            if self.surplus() {
                self.stop_searching_idle();
                return Idle::Woke; // run_loop sends it to rest
            }
            if let Some(j) = self.steal() {
                self.idle.found_at(round + 1);
                self.found_while_searching();
                return Idle::Found(j);
            }
            if shared.may_exit() {
                self.stop_searching_idle();
                return Idle::Exit;
            }
            if crowded {
                std::thread::yield_now();
            } else {
                for _ in 0..IdleState::wait_after(round) {
                    std::hint::spin_loop();
                }
            }
        }
        // A look left a thread in its grace on a busy worker (`inbox.rs`): one more look once
        // the grace is over, while still searching (taking it here spares the sleep's heavy
        // barrier; `last_search` looks again for a thread that arrives after this).
        if self.idle.take_left_young() {
            if let Some(j) = self.steal_after_grace() {
                self.found_while_searching();
                return Idle::Found(j);
            }
        }
        self.stop_searching_idle();
        // Never sleep on local work (defensive: the loop only gets here with both empty).
        if self.ready().len() > 0 || !self.deque.is_empty() {
            return Idle::Woke;
        }
        let me = &shared.workers()[self.index];
        let asleep_from = clock::ticks();
        let slept = me.sleep().sleep(
            shared.sleepers(),
            crate::sleep::safety_net(),
            || self.last_search(),
            || shared.may_exit(),
            || bump(&me.account().sleeps, 1),
        );
        match slept {
            Slept::Found(j, woken) => {
                if woken {
                    self.idle.set_searching(true);
                    self.found_while_searching();
                }
                Idle::Found(j)
            }
            Slept::Woke => {
                // Its waker counted it as searching.
                self.idle.set_searching(true);
                self.idle.slept(asleep_from, clock::ticks(), true, !crowded);
                Idle::Woke
            }
            Slept::Expired => {
                self.idle.slept(asleep_from, clock::ticks(), false, false);
                bump(&me.account().expired_sleeps, 1);
                // One look at once, before this worker counts itself as searching. Work found
                // while nobody searches and every other worker waits past its last search (or
                // rests) had nobody to run it: a wake-up the protocol lost, which the safety
                // net made up for. Checked after the find: work a searcher, a woken worker or
                // a worker about to end its last search would have run is not counted.
                match self.steal() {
                    Some(j) => {
                        if shared.nobody_else_looking(self.index) {
                            bump(&me.account().expired_with_work, 1);
                        }
                        Idle::Found(j)
                    }
                    None => Idle::Woke,
                }
            }
            Slept::Exit => Idle::Exit,
        }
    }

    /// The search a worker makes after it counted itself sleeping: [`steal`](Self::steal), and
    /// where that left a thread in its grace on another worker, one more look once the grace is
    /// over. A thread woken onto a busy worker is runnable by that worker only once its running
    /// thread gives the worker up, which may be long after the wake-up; the publisher's
    /// wake-up went to this worker while it still searched, so nobody else would take it.
    fn last_search(&self) -> Option<Job> {
        self.idle.take_left_young();
        let found = self.steal();
        if found.is_none() && self.idle.take_left_young() {
            return self.steal_after_grace();
        }
        found
    }

    /// Waits out a thread's grace (`inbox.rs`), then steals.
    #[cold]
    fn steal_after_grace(&self) -> Option<Job> {
        let until = clock::ticks().wrapping_add(crate::inbox::grace_ticks());
        while clock::ticks() < until {
            std::hint::spin_loop();
        }
        self.steal()
    }

    /// The job `run` started with was a stale queue entry: nothing ran, so the next idle
    /// search goes on where the last one stopped instead of polling fast again (a thief that
    /// keeps finding entries their joiners ran inline kept polling the spawner's deque at the
    /// fastest rate).
    #[inline]
    pub(super) fn stale_found(&self) {
        self.idle.stale_found();
    }
}

/// How an idle spell ended.
pub(super) enum Idle {
    Found(Job),
    Woke,
    Exit,
}
