//! The worker: its loop, where it looks for local work (its fairness tick, ready structure,
//! inbox, start deque) and how it runs what it found. The rest of a worker's life is in the
//! submodules: [`switch`] runs one green thread until it finishes, yields or parks; [`steal`]
//! takes work from other workers, nearest tier first; [`idle`] is the sleeper side of the idle
//! protocol (`sleep.rs`): it searches, counted as a searcher, then sleeps until a publisher wakes
//! it. The worker's state itself is [`WorkerLocal`] ([`local`]: owner-only, on the worker OS
//! thread's stack, written only here); its idle-search state is an
//! [`IdleState`](idle_state::IdleState).

mod idle;
pub(crate) mod idle_state;
pub(crate) mod local;
mod steal;
mod switch;

use crate::job::{Job, RawJob};
use crate::ready::ReadyQueue;
use crate::task::Task;
use crate::worker::local::WorkerLocal;
use crossbeam_deque::Steal;
use idle::Idle;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const FAIR_TICK: u32 = 61;

impl WorkerLocal {
    #[inline]
    #[allow(clippy::mut_from_ref)]
    fn ready(&self) -> &mut ReadyQueue {
        // SAFETY: owner-only; callers never hold the borrow across a resume.
        unsafe { &mut *self.ready.get() }
    }

    fn next_rand(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }

    /// Local work, in order: (fairness tick: inbox, injector, start deque), ready structure,
    /// inbox, start deque; after a yield (`yielded`) the inbox and the start deque go before the
    /// ready structure, so that a yield lets queued new work start.
    #[inline]
    fn next_local(&self, yielded: bool) -> Option<Job> {
        let shared = self.shared();
        let me = self.me();
        if self.fair_tick_due() {
            // adaptive: above the active limit, take no more local work (the loop
            // then rests, handing it off). Out of line: the pick's code stays as it was.
            if self.surplus_on_tick() {
                return None;
            }
            if let Some(j) = self.pop_own_inbox(me) {
                return Some(j);
            }
            if let Steal::Success(j) = shared.injector().steal() {
                return Some(j.into_job());
            }
            if let Some(j) = self.deque.pop() {
                return Some(j.into_job());
            }
        }
        if yielded {
            if let Some(j) = self.pop_own_inbox(me) {
                return Some(j);
            }
            if let Some(j) = self.deque.pop() {
                return Some(j.into_job());
            }
        }
        let ready = self.ready();
        if let Some(j) = ready.pop() {
            if ready.len() > 1 && shared.has_idle_workers() {
                self.spill();
            }
            return Some(j);
        }
        if let Some(j) = self.pop_own_inbox(me) {
            return Some(j);
        }
        self.deque.pop().map(RawJob::into_job)
    }

    /// Counts one pick of local work; every `FAIR_TICK`-th is due the fairness checks (a
    /// count-down: one decrement and one test per pick).
    #[inline]
    fn fair_tick_due(&self) -> bool {
        let left = self.tick.get();
        if left == 0 {
            self.tick.set(FAIR_TICK - 1);
            true
        } else {
            self.tick.set(left - 1);
            false
        }
    }

    /// The next job after `task` yielded (`misses`: the run's cache misses, where counted).
    ///
    /// The same pick as queueing `task` behind the ready threads and calling
    /// [`next_local`](Self::next_local) after a yield, with one shortcut for the common case of
    /// two threads taking turns: when no fairness check is due, the inbox and the start deque
    /// are empty and exactly one other thread is ready (a queue order), `task` takes its place
    /// in the ready structure and that thread is returned (one swap instead of a push and a
    /// pop).
    #[inline]
    fn next_after_yield(&self, task: Arc<Task>, misses: Option<u64>) -> Option<Job> {
        let left = self.tick.get();
        let ready = self.ready();
        let task = if left != 0 && self.no_new_local_work() {
            match ready.swap_lone(task) {
                Ok(next) => {
                    self.tick.set(left - 1);
                    return Some(next);
                }
                Err(task) => task,
            }
        } else {
            task
        };
        self.requeue_yielded(task, misses)
    }

    /// A yield that is not a hand-off to a lone ready thread: `task` joins the ready structure
    /// and the next job is picked as after any yield. Out of line, so that the hand-off's loop in
    /// `run_task` stays small.
    #[inline(never)]
    fn requeue_yielded(&self, task: Arc<Task>, misses: Option<u64>) -> Option<Job> {
        // SAFETY: we hold the run reference of `task`, which just yielded on this worker.
        unsafe { self.ready().push_yielded(task, misses) };
        self.next_local(true)
    }

    /// Whether this worker's inbox (both queues) and start deque are empty: after a yield
    /// those go first.
    #[inline]
    fn no_new_local_work(&self) -> bool {
        let inbox = &self.me().inbox();
        inbox.len.load(Ordering::Acquire) == 0
            && inbox.bound_len.load(Ordering::Acquire) == 0
            && self.deque.is_empty()
    }

    /// The scheduler loop. Returns when the runtime shuts down and no green thread is left.
    pub(crate) fn run_loop(&self) {
        // Found by a steal or the idle search: runs before any local pick.
        let mut found: Option<Job> = None;
        loop {
            if let Some(j) = found.take().or_else(|| self.next_local(false)) {
                self.found_while_searching();
                // Returns when `next_local` found nothing more (or found this worker surplus).
                self.run(j);
            }
            // adaptive: a worker above the active limit does not steal; it rests.
            if self.surplus() {
                self.stop_searching_idle();
                self.rest_surplus();
                continue;
            }
            if let Some(j) = self.steal() {
                self.tick_stale.set(true);
                self.found_while_searching();
                found = Some(j);
                continue;
            }
            match self.idle() {
                Idle::Found(j) => found = Some(j),
                Idle::Woke => {}
                Idle::Exit => return,
            }
        }
    }

    /// Runs `job`, then the local work that follows it (`next_local` after each switch), until
    /// there is none: the loop around the switch stays here, so that a yield to the next ready
    /// thread does not return to [`run_loop`](Self::run_loop) and call back in.
    ///
    /// The switch path (resume, then a yield or park) is inlined here; starting a coroutine,
    /// finishing a thread and migrating are out of line (`start`, `finish`), so that this
    /// frame stays small.
    fn run(&self, job: Job) {
        // The idle search starts afresh after work ran (`start` restores the round if the job
        // was a stale entry).
        self.idle.work_runs();
        let mut next = Some(job);
        while let Some(job) = next {
            let task = match job {
                Job::Task(t) => t,
                Job::Stack(r) => self.stack_job_task(r),
            };
            next = self.run_task(task);
        }
    }
}

/// "'name'" or "<unnamed>" for messages.
pub(crate) fn describe(t: &Task) -> String {
    match t.name() {
        Some(n) => format!("'{n}'"),
        None => "<unnamed>".to_string(),
    }
}
