//! Running one green thread: starting its coroutine on a stack, resuming it, and what follows
//! its suspension (a yield, a park, a migration) or its return (the stack back to the pool, the
//! joiner woken); the per-run accounting and counter readings around each resumption.

use crate::accounting::bump;
use crate::clock;
use crate::counters::WorkerSource;
use crate::job::{Job, StackJobRef};
use crate::pool::recycle;
use crate::spawn::count_finished;
use crate::task::{Co, Exit, Reason, Task, TaskSetup};
use crate::worker::local::WorkerLocal;
use corosensei::CoroutineResult;
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::describe;

impl WorkerLocal {
    /// A green thread for a stolen `join` half.
    #[inline(never)]
    pub(super) fn stack_job_task(&self, r: StackJobRef) -> Arc<Task> {
        let run = StackRun(r);
        // SAFETY: the stack job stays alive until it reports done (its owner waits).
        unsafe { spawn_job_local(self, move || run.run()) }
    }

    /// Runs `task` until it finishes, yields or parks; returns the local work to run next. A
    /// yield that hands the worker to another started thread (`next_after_yield`) resumes that
    /// thread in this loop, so one call may run several threads in turn.
    #[inline]
    pub(super) fn run_task(&self, mut task: Arc<Task>) -> Option<Job> {
        // SAFETY: we hold the task's run reference, so its plain fields are ours.
        unsafe {
            if !task.has_coroutine() {
                match self.start(task) {
                    Some(started) => task = started,
                    None => return self.next_local(false),
                }
            }
            loop {
                let t: &Task = &task;
                debug_assert!(t.is_running());
                bump(&self.me().account().runs, 1);
                if self.timed {
                    self.begin_run(t);
                }
                t.set_last_worker(self.index);
                self.ctx
                    .current
                    .store(ptr::from_ref(t).cast_mut(), Ordering::Relaxed);
                // SAFETY: `t` runs on this OS thread until the resumption returns, and its control
                // block (the cell's owner) outlives that: we hold its run reference.
                crate::hook::publish_running(self.me(), t.class_cell());
                let co = t.coroutine();
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
                        Some(Job::Task(next)) if next.has_coroutine() => {
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

    /// Gives a new green thread its stack and coroutine and hands the run reference back; `None`
    /// when there is nothing to run (its joiner ran it inline, or no stack could be had: then
    /// it is finished with the error and recycled).
    ///
    /// # Safety
    /// The caller holds `task`'s run reference and the thread has no coroutine yet.
    #[inline(never)]
    pub(super) unsafe fn start(&self, task: Arc<Task>) -> Option<Arc<Task>> {
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
            let size = t.stack_size();
            match self.take_stack(size) {
                Ok(stack) => {
                    let tp = t as *const Task as usize;
                    let limit = corosensei::stack::Stack::limit(&stack).get();
                    let c = Co::with_stack(stack, move |y, ()| green_entry(tp, y));
                    t.install_coroutine(c, limit);
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
    pub(super) unsafe fn finish(&self, task: Arc<Task>, exit: Exit) {
        let t: &Task = &task;
        self.tick_stale.set(true);
        // SAFETY: per the contract the plain fields are ours.
        unsafe {
            let co = t.take_coroutine();
            let size = t.stack_size();
            if exit == Exit::Overflow {
                let msg = format!(
                    "footprint: green thread {} overflowed its stack of {size} bytes; give it a larger one with Builder::stack_size",
                    describe(t)
                );
                crate::task::fail_running(t, Box::new(msg));
                self.shared().count_overflow();
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
    pub(super) fn begin_run(&self, t: &Task) {
        let now = if self.tick_stale.replace(false) {
            clock::ticks()
        } else {
            self.run_start.get()
        };
        let moved = t.last_worker() != self.index;
        t.account()
            .begin_run(now, moved, self.stolen.replace(false));
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
    pub(super) fn end_run(&self, t: &Task) -> Option<u64> {
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
        t.account().end_run(ticks, misses);
        let acct = &self.shared().workers()[self.index].account();
        bump(&acct.busy_ticks, ticks);
        if let Some(m) = misses {
            bump(&acct.misses, m);
        }
        misses
    }

    /// A counter source failed: count it, keep the first error, and account time only from now
    /// on (the source is dropped).
    #[cold]
    pub(super) fn counter_failed(&self, e: &dyn std::fmt::Display) {
        let shared = self.shared();
        bump(&shared.workers()[self.index].account().counter_failures, 1);
        shared.note_counter_error(|| format!("worker {}: {e}", self.index));
        // SAFETY: owner-only; called outside any other borrow of the source (the callers'
        // borrows ended with the failed read).
        unsafe { *self.source.get() = None };
    }

    /// Makes this worker's counter source (on its own OS thread), if misses are counted.
    pub(crate) fn open_source(&self) {
        let Some(make) = &self.shared().counters().source else {
            return;
        };
        match make(self.index) {
            // SAFETY: owner-only, before the loop runs.
            Ok(src) => unsafe { *self.source.get() = Some(WorkerSource::new(src)) },
            Err(e) => self.counter_failed(&e),
        }
    }

    pub(super) fn finish_park(&self, task: Arc<Task>, misses: Option<u64>) {
        bump(&self.shared().workers()[self.index].account().parks, 1);
        crate::trace::park(self.index);
        if self.timed {
            task.account().parked_at(self.run_start.get());
        }
        // SAFETY: we hold the run reference (it just parked here); the record is written before
        // the park state publishes the thread to unparkers.
        unsafe { self.ready().on_park(&task, misses) };
        let raw = Arc::into_raw(task);
        // SAFETY: raw came from into_raw just now; the task stays alive through the reference we
        // leaked until an unparker takes it back.
        unsafe {
            if !(*raw).park_state().publish_parked() {
                // A permit arrived between the park request and now (`publish_parked` consumed
                // it): run the thread again.
                let task = Arc::from_raw(raw);
                self.ready().push_woken(Job::Task(task));
            }
        }
    }
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
            TaskSetup {
                runtime: std::ptr::from_ref(shared).cast(),
                with_handle: false,
                stack_size: shared.stack_size(),
                name: None,
                scope: None,
                worker: w.index,
            },
        )
    };
    shared.workers()[w.index].count_spawned();
    t
}

/// The first frame on every green-thread stack.
fn green_entry(tp: usize, y: &crate::task::GreenYielder) -> Exit {
    let t = tp as *const Task;
    // SAFETY: the worker holds the run reference while the coroutine runs; the yielder lives on
    // this stack for the coroutine's whole life.
    unsafe {
        (*t).set_yielder(y);
        (*t).run_job_in_place();
        crate::local::clear_task_locals(&*t);
    }
    Exit::Finished
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
