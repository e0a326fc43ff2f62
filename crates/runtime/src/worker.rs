//! The worker loop: where a worker looks for work (its fairness tick, ready structure, inbox,
//! start deque, then stealing nearest tier first), how it runs a job until it finishes, yields
//! or parks, and how it goes idle (the sleeper side of the protocol in `sleep.rs`: it searches,
//! counted as a searcher, then sleeps until a publisher wakes it).

use crate::accounting::bump;
use crate::clock;
use crate::counters::WorkerSource;
use crate::job::{Job, RawJob, StackJobRef};
use crate::pool::recycle;
use crate::ready::ReadyQueue;
use crate::registry::{Shared, WorkerLocal, WorkerShared};
use crate::sleep::Slept;
use crate::spawn::count_finished;
use crate::task::{Co, Exit, Reason, Task, LIFE_RUNNING};
use corosensei::CoroutineResult;
use crossbeam_deque::Steal;
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The idle search's polls before it sleeps, and the longest wait between two, in pauses: the
/// waits double from one pause up to `SPIN_MAX_PAUSES`, so that an idle worker polls the other
/// workers' deques 20 times over ≈ 1800 pauses (≈ 60 µs on the 2-core development VM) instead of 64
/// times over ≈ 1500 (each poll reads the ends of a busy worker's deque, whose next push and pop
/// then miss in cache: the cost of spawn + join on 2 workers).
const SPIN_ROUNDS: u32 = 20;
const SPIN_MAX_PAUSES: u32 = 128;

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
            if let Steal::Success(j) = shared.injector.steal() {
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
            if ready.len() > 1 && shared.idle.load(Ordering::Relaxed) > 0 {
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
        let inbox = &self.me().inbox;
        inbox.len.load(Ordering::Acquire) == 0
            && inbox.bound_len.load(Ordering::Acquire) == 0
            && self.deque.is_empty()
    }

    /// The next job from this worker's own inbox. With a policy order the inbox is first moved
    /// into the ready heap (keyed for this worker) and the heap's best runs. The emptiness check
    /// comes first, so the default orders pay nothing more than before.
    #[inline]
    fn pop_own_inbox(&self, me: &WorkerShared) -> Option<Job> {
        if me.inbox.len.load(Ordering::Acquire) == 0 {
            // placement: threads placed here by a hint wait in the bound queue.
            if me.inbox.bound_len.load(Ordering::Acquire) == 0 {
                return None;
            }
            return me.inbox.pop_bound();
        }
        if let Some(j) = me.inbox.pop_bound() {
            return Some(j);
        }
        match self.ready() {
            ReadyQueue::Policy(p) => p.pop(),
            _ => me.inbox.pop(),
        }
    }

    /// Whether a thread woken for this worker (by the thread running here) should wait in this
    /// worker's inbox rather than its ready structure: where another thread already waits in
    /// the ready structure (a queue order) and another worker idles. The ready structure is this
    /// worker's alone, and the running thread keeps the worker until it parks, yields or ends;
    /// the inbox is this worker's too (it takes from it right after its ready threads) but
    /// others may steal from it. Without this, a barrier whose last arrival woke 8 threads here
    /// while the other worker slept left them all waiting until that thread had finished its
    /// own part (the second worker of `lock_hot`'s runs started 340–450 µs after the
    /// first, and the threads split 5 to 3). The first woken thread stays in the ready
    /// structure (lock-hot placement's hand-over to the releaser's worker); a policy order keeps
    /// every thread in its heap (it orders them by key).
    #[inline]
    pub(crate) fn offers_woken(&self) -> bool {
        let ready = self.ready();
        ready.len() > 0
            && !matches!(ready, ReadyQueue::Policy(_))
            && self.shared().idle.load(Ordering::Relaxed) > 0
    }

    /// Offers half of the ready threads to idle workers: through this worker's inbox, or with a
    /// policy order (whose worker takes its inbox's resumptions back into its heap) through the
    /// injector.
    #[cold]
    fn spill(&self) {
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
                shared.injector.push(match j {
                    Job::Task(t) => RawJob::task(t),
                    Job::Stack(r) => RawJob::stack(r),
                });
            }
        } else {
            shared.workers[self.index].inbox.push_many(cold);
        }
        shared.notify_one(self.index);
    }

    /// Steals: own inbox, then victims tier by tier (their start deques, then inboxes), then the
    /// injector.
    fn steal(&self) -> Option<Job> {
        let shared = self.shared();
        let me = &shared.workers[self.index];
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
        for (ti, tier) in me.steal_tiers.iter().enumerate() {
            let n = tier.len();
            let start = (self.next_rand() as usize) % n;
            for i in 0..n {
                let v = &shared.workers[tier[(start + i) % n]];
                loop {
                    match v.stealer.steal() {
                        Steal::Success(j) => {
                            self.count_steal(me, ti);
                            return Some(j.into_job());
                        }
                        Steal::Retry => continue,
                        Steal::Empty => break,
                    }
                }
                if let Some(j) = v.inbox.pop() {
                    self.count_steal(me, ti);
                    return Some(j);
                }
            }
        }
        loop {
            match shared.injector.steal() {
                Steal::Success(j) => {
                    bump(&me.acct.injector_takes, 1);
                    return Some(j.into_job());
                }
                Steal::Retry => continue,
                Steal::Empty => return None,
            }
        }
    }

    /// Counts a steal from tier `tier` and marks the job about to run as stolen.
    #[inline]
    fn count_steal(&self, me: &WorkerShared, tier: usize) {
        bump(&me.acct.steals_by_tier[tier], 1);
        crate::trace::steal(self.index, tier);
        self.stolen.set(true);
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

    /// This worker found work: if it was searching it stops, and wakes one more worker if it
    /// was the last searcher while others sleep (`sleep.rs`).
    #[inline]
    fn found_while_searching(&self) {
        if self.searching.replace(false) {
            self.stop_searching_found();
        }
    }

    /// This worker stops searching without work (to sleep, rest or leave).
    #[inline]
    fn stop_searching_idle(&self) {
        if self.searching.replace(false) {
            self.shared().sleepers.stop_searching();
        }
    }

    fn idle(&self) -> Idle {
        let shared = self.shared();
        let since = clock::ticks();
        shared.idle.fetch_add(1, Ordering::SeqCst);
        let r = self.idle_inner(shared);
        shared.idle.fetch_sub(1, Ordering::SeqCst);
        let acct = &shared.workers[self.index].acct;
        let now = clock::ticks();
        bump(&acct.idle_ticks, now.wrapping_sub(since));
        self.run_start.set(now);
        self.tick_stale.set(false);
        r
    }

    fn idle_inner(&self, shared: &Shared) -> Idle {
        if !self.searching.replace(true) {
            shared.sleepers.start_searching();
        }
        // Starts where the last search stopped if that found only a stale entry (see `start`).
        for round in self.idle_round.replace(0)..SPIN_ROUNDS {
            if self.surplus() {
                self.stop_searching_idle();
                return Idle::Woke; // run_loop sends it to rest
            }
            if let Some(j) = self.steal() {
                self.idle_round.set(round + 1);
                self.found_while_searching();
                return Idle::Found(j);
            }
            if shared.may_exit() {
                self.stop_searching_idle();
                return Idle::Exit;
            }
            for _ in 0..(1u32 << round).min(SPIN_MAX_PAUSES) {
                std::hint::spin_loop();
            }
        }
        self.stop_searching_idle();
        // Never sleep on local work (defensive: the loop only gets here with both empty).
        if self.ready().len() > 0 || !self.deque.is_empty() {
            return Idle::Woke;
        }
        let me = &shared.workers[self.index];
        let slept = me.sleep.sleep(
            &shared.sleepers,
            crate::sleep::safety_net(),
            || self.steal(),
            || shared.may_exit(),
            || bump(&me.acct.sleeps, 1),
        );
        match slept {
            Slept::Found(j, woken) => {
                if woken {
                    self.searching.set(true);
                    self.found_while_searching();
                }
                Idle::Found(j)
            }
            Slept::Woke => {
                // Its waker counted it as searching.
                self.searching.set(true);
                Idle::Woke
            }
            Slept::Expired => {
                bump(&me.acct.expired_sleeps, 1);
                // One look at once, before this worker counts itself as searching: work it
                // finds while nobody searches was there for a sleeper to be woken for (a
                // wake-up the protocol lost, which the safety net made up for).
                let nobody_searching = shared.sleepers.searching(Ordering::SeqCst) == 0;
                match self.steal() {
                    Some(j) => {
                        if nobody_searching {
                            bump(&me.acct.expired_with_work, 1);
                        }
                        Idle::Found(j)
                    }
                    None => Idle::Woke,
                }
            }
            Slept::Exit => Idle::Exit,
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
        self.idle_resume.set(self.idle_round.replace(0));
        let mut next = Some(job);
        while let Some(job) = next {
            let task = match job {
                Job::Task(t) => t,
                Job::Stack(r) => self.stack_job_task(r),
            };
            next = self.run_task(task);
        }
    }

    /// A green thread for a stolen `join` half.
    #[inline(never)]
    fn stack_job_task(&self, r: StackJobRef) -> Arc<Task> {
        let run = StackRun(r);
        // SAFETY: the stack job stays alive until it reports done (its owner waits).
        unsafe { spawn_job_local(self, move || run.run()) }
    }

    /// Runs `task` until it finishes, yields or parks; returns the local work to run next. A
    /// yield that hands the worker to another started thread (`next_after_yield`) resumes that
    /// thread in this loop, so one call may run several threads in turn.
    #[inline]
    fn run_task(&self, mut task: Arc<Task>) -> Option<Job> {
        // SAFETY: we hold the task's run reference, so its plain fields are ours.
        unsafe {
            if (*task.co.get()).is_none() {
                match self.start(task) {
                    Some(started) => task = started,
                    None => return self.next_local(false),
                }
            }
            loop {
                let t: &Task = &task;
                let co = &mut *t.co.get();
                debug_assert_eq!(t.life.load(Ordering::Relaxed), LIFE_RUNNING);
                bump(&self.me().acct.runs, 1);
                if self.timed {
                    self.begin_run(t);
                }
                t.last_worker.store(self.index, Ordering::Relaxed);
                self.ctx
                    .current
                    .store(ptr::from_ref(t).cast_mut(), Ordering::Relaxed);
                // SAFETY: `t` runs on this OS thread until the resumption returns, and its control
                // block (the cell's owner) outlives that: we hold its run reference.
                crate::hook::publish_running(self.me(), &t.class);
                let co = co.as_mut().expect("coroutine present");
                // Two resume sites used in turn (see `resume_at_site_0`).
                let site = self.resume_site.get();
                self.resume_site.set(!site);
                let r = if site {
                    resume_at_site_1(co)
                } else {
                    resume_at_site_0(co)
                };
                // SAFETY: nothing runs on this thread's behalf now.
                crate::hook::publish_running(self.me(), ptr::null());
                self.ctx.current.store(ptr::null_mut(), Ordering::Relaxed);
                let misses = if self.timed { self.end_run(t) } else { None };
                // The yield first, ahead of the match: it is the switch that a ping-pong of two
                // threads takes every time (tested here rather than as a match arm, criterion's
                // yield read 0.5-1 ns less on the 2-core AMD EPYC development VM).
                if let CoroutineResult::Yield(Reason::Yield) = r {
                    match self.next_after_yield(task, misses) {
                        // A yield to another started thread (two threads taking turns): resumed
                        // right here, without a round trip through `run`.
                        Some(Job::Task(next)) if (*next.co.get()).is_some() => {
                            task = next;
                            continue;
                        }
                        other => return other,
                    }
                }
                match r {
                    CoroutineResult::Yield(Reason::Yield) => unreachable!("handled above"),
                    CoroutineResult::Yield(Reason::Park) => self.finish_park(task, misses),
                    // placement: the thread asked to move
                    // (`placement::migrate_current`).
                    CoroutineResult::Yield(Reason::Migrate(to)) => {
                        crate::placement::finish_migrate(self, task, to)
                    }
                    CoroutineResult::Return(exit) => self.finish(task, exit),
                }
                return self.next_local(false);
            }
        }
    }

    /// The job `run` started with was a stale queue entry: nothing ran, so the next idle
    /// search goes on where the last one stopped instead of polling fast again (a thief that
    /// keeps finding entries their joiners ran inline kept polling the spawner's deque at the
    /// fastest rate).
    #[inline]
    fn stale_found(&self) {
        self.idle_round.set(self.idle_resume.get());
    }

    /// Gives a new green thread its stack and coroutine and hands the run reference back; `None`
    /// when there is nothing to run (its joiner ran it inline, or no stack could be had: then
    /// it is finished with the error and recycled).
    ///
    /// # Safety
    /// The caller holds `task`'s run reference and the thread has no coroutine yet.
    #[inline(never)]
    unsafe fn start(&self, task: Arc<Task>) -> Option<Arc<Task>> {
        let t: &Task = &task;
        if !t.claim() {
            // Its joiner ran it inline already; this queue entry is stale. Joining in spawn
            // order leaves one such entry per thread, usually the block's last reference: it
            // goes back to the pool here (dropping it freed the block, and every spawn then
            // allocated a new one, which profiles of skynet showed).
            self.stolen.set(false);
            self.stale_found();
            recycle(task);
            return None;
        }
        // SAFETY: per the contract the plain fields are ours.
        unsafe {
            let size = *t.stack_size.get();
            match self.take_stack(size) {
                Ok(stack) => {
                    let tp = t as *const Task as usize;
                    *t.stack_limit.get() = corosensei::stack::Stack::limit(&stack).get();
                    let c = Co::with_stack(stack, move |y, ()| green_entry(tp, y));
                    *t.trap.get() = Some(c.trap_handler());
                    *t.co.get() = Some(c);
                    Some(task)
                }
                Err(e) => {
                    // The joiner gets the typed error naming the limit; the first refusal of
                    // the runtime is said at once (nobody may be joining yet).
                    crate::stack_refusal::stack_refused(self.shared(), &e);
                    crate::task::fail_unrun(t, Box::new(e));
                    // Counted before the joiner is woken, so its next `stats()` includes it.
                    count_finished(t);
                    t.complete();
                    recycle(task);
                    None
                }
            }
        }
    }

    /// A green thread's closure returned (or its stack overflowed): its stack goes back to the
    /// pool (an overflowed one is discarded), the joiner is woken, the block is recycled.
    ///
    /// # Safety
    /// The caller holds `task`'s run reference and its coroutine just returned `exit`.
    #[inline(never)]
    unsafe fn finish(&self, task: Arc<Task>, exit: Exit) {
        let t: &Task = &task;
        self.tick_stale.set(true);
        // SAFETY: per the contract the plain fields are ours.
        unsafe {
            *t.trap.get() = None;
            let co = (*t.co.get()).take().expect("coroutine present");
            let size = *t.stack_size.get();
            if exit == Exit::Overflow {
                let msg = format!(
                    "footprint: green thread {} overflowed its stack of {size} bytes; give it a larger one with Builder::stack_size",
                    describe(t)
                );
                crate::task::fail_running(t, Box::new(msg));
                self.shared().overflows.fetch_add(1, Ordering::Relaxed);
                // The stack was abandoned mid-call; do not reuse it.
                self.discard_stack(co.into_stack());
            } else {
                self.put_stack(co.into_stack(), size);
            }
            // Counted before `complete` wakes the joiner: a `stats()` right after the join (or
            // `block_on`) returns then includes this thread.
            count_finished(t);
            t.complete();
        }
        recycle(task);
    }

    /// Accounts the start of a run of `t` (counters on): the run, a migration, a steal, the
    /// parked time, and the counter source's start reading.
    ///
    /// One clock read per switch: a run starts at the tick its worker's previous run ended
    /// (so the scheduler's pick of the next thread, a few ns, is counted in the run it
    /// picked), unless the worker did something longer since (finished a thread, stole, went
    /// idle), which asks for a fresh read (`tick_stale`).
    // Out of line: the default counters never call it, and the switch path stays small.
    #[inline(never)]
    fn begin_run(&self, t: &Task) {
        let now = if self.tick_stale.replace(false) {
            clock::ticks()
        } else {
            self.run_start.get()
        };
        let moved = t.last_worker.load(Ordering::Relaxed) != self.index;
        t.acct.begin_run(now, moved, self.stolen.replace(false));
        // SAFETY: owner-only; no other borrow of the source is live.
        if let Some(src) = unsafe { &mut *self.source.get() } {
            if let Err(e) = src.begin() {
                self.counter_failed(&e);
            }
        }
        self.run_start.set(now);
    }

    /// Accounts the end of a run of `t`; returns the run's cache misses where counted.
    #[inline(never)]
    fn end_run(&self, t: &Task) -> Option<u64> {
        let now = clock::ticks();
        let ticks = now.wrapping_sub(self.run_start.get());
        self.run_start.set(now);
        // SAFETY: owner-only; no other borrow of the source is live.
        let misses = match unsafe { &mut *self.source.get() } {
            None => None,
            Some(src) => match src.end() {
                Ok(m) => Some(m),
                Err(e) => {
                    self.counter_failed(&e);
                    None
                }
            },
        };
        t.acct.end_run(ticks, misses);
        let acct = &self.shared().workers[self.index].acct;
        bump(&acct.busy_ticks, ticks);
        if let Some(m) = misses {
            bump(&acct.misses, m);
        }
        misses
    }

    /// A counter source failed: count it, keep the first error, and account time only from now
    /// on (the source is dropped).
    #[cold]
    fn counter_failed(&self, e: &dyn std::fmt::Display) {
        let shared = self.shared();
        bump(&shared.workers[self.index].acct.counter_failures, 1);
        let mut first = shared
            .counter_error
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        first.get_or_insert_with(|| format!("worker {}: {e}", self.index));
        drop(first);
        // SAFETY: owner-only; called outside any other borrow of the source (the callers'
        // borrows ended with the failed read).
        unsafe { *self.source.get() = None };
    }

    /// Makes this worker's counter source (on its own OS thread), if misses are counted.
    pub(crate) fn open_source(&self) {
        let Some(make) = &self.shared().counters.source else {
            return;
        };
        match make(self.index) {
            // SAFETY: owner-only, before the loop runs.
            Ok(src) => unsafe { *self.source.get() = Some(WorkerSource::new(src)) },
            Err(e) => self.counter_failed(&e),
        }
    }

    fn finish_park(&self, task: Arc<Task>, misses: Option<u64>) {
        bump(&self.shared().workers[self.index].acct.parks, 1);
        crate::trace::park(self.index);
        if self.timed {
            task.acct.parked_at(self.run_start.get());
        }
        // SAFETY: we hold the run reference (it just parked here); the record is written before
        // the park state publishes the thread to unparkers.
        unsafe { self.ready().on_park(&task, misses) };
        let raw = Arc::into_raw(task);
        // SAFETY: raw came from into_raw just now; the task stays alive through the reference we
        // leaked until an unparker takes it back.
        unsafe {
            if !(*raw).park.publish_parked() {
                // A permit arrived between the park request and now (`publish_parked` consumed
                // it): run the thread again.
                let task = Arc::from_raw(raw);
                self.ready().push_woken(Job::Task(task));
            }
        }
    }
}

enum Idle {
    Found(Job),
    Woke,
    Exit,
}

struct StackRun(StackJobRef);

impl StackRun {
    fn run(self) {
        // SAFETY: the job's owner keeps it alive until exec reports completion.
        unsafe { (self.0.exec)(self.0.data) }
    }
}

/// Creates a detached green thread on worker `w` (not queued) for a stolen join half.
///
/// # Safety
/// As for [`spawn_raw`].
unsafe fn spawn_job_local<F: FnOnce()>(w: &WorkerLocal, f: F) -> Arc<Task> {
    let shared = w.shared();
    let t = w.take_task();
    // SAFETY: pooled blocks are unique.
    unsafe {
        t.init(
            f,
            std::ptr::from_ref(shared).cast(),
            false,
            shared.stack_size,
            None,
            None,
            w.index,
        )
    };
    let s = &shared.workers[w.index].spawned;
    s.store(s.load(Ordering::Relaxed) + 1, Ordering::Release);
    t
}

/// The first frame on every green-thread stack.
fn green_entry(tp: usize, y: &crate::task::GreenYielder) -> Exit {
    let t = tp as *const Task;
    // SAFETY: the worker holds the run reference while the coroutine runs; the yielder lives on
    // this stack for the coroutine's whole life.
    unsafe {
        *(*t).yielder.get() = y;
        (*t).run_job_in_place();
        crate::local::clear_task_locals(&*t);
    }
    Exit::Finished
}

/// "'name'" or "<unnamed>" for messages.
pub(crate) fn describe(t: &Task) -> String {
    match t.name() {
        Some(n) => format!("'{n}'"),
        None => "<unnamed>".to_string(),
    }
}

/// Defines a copy of the resumption of a green thread (see `resume_at_site_0`); the marker is
/// an empty assembly statement that only makes the copies differ, so that the compiler keeps
/// each.
macro_rules! resume_site {
    ($(#[$doc:meta])* $name:ident, $marker:literal) => {
        $(#[$doc])*
        #[inline(always)]
        fn $name(co: &mut Co) -> CoroutineResult<Reason, Exit> {
            // SAFETY: an empty assembly statement (a comment): it reads and writes nothing.
            unsafe { std::arch::asm!($marker, options(nomem, nostack, preserves_flags)) };
            co.resume(())
        }
    };
}

resume_site!(
    /// Resumes a green thread: one of two copies of the resumption, used in turn by
    /// [`WorkerLocal::run_task`].
    ///
    /// A resumption is an indirect call to where the green thread last suspended (corosensei's
    /// `switch_and_link`), and the CPU predicts its target from the call site and the recent
    /// branch history. With one site, two green threads that take turns on a worker (a yield
    /// ping-pong, a producer and its consumer) make that target alternate between their two
    /// suspension points. On a 2-core AMD EPYC VM the predictor sometimes
    /// learned the alternation and sometimes did not, for millions of resumptions at a time: a
    /// yield took ≈12 ns or ≈26 ns, switching between the two during a run. With two sites used
    /// in turn, each site sees one target in such a ping-pong, and six processes took
    /// 12.4–12.5 ns each (`micro_probe yield`). The other direction, the green thread's return
    /// into the worker, is a `ret` paired with the call, which the return-address stack
    /// predicts.
    resume_at_site_0,
    "/* resume site 0 */"
);
resume_site!(
    /// The second copy of [`resume_at_site_0`].
    resume_at_site_1,
    "/* resume site 1 */"
);
