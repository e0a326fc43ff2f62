//! The runtime's implementation of `footprint_locks::SchedulerHook`, installed on every worker.

use crate::job::Job;
use crate::registry::{Shared, WorkerShared};
use crate::timer;
use crate::worker::local::WorkerLocal;
use crate::{context, parking};
use footprint_locks::os::os_hook;
use footprint_locks::{ClassCell, PriorityClass, RunState, SchedulerHook, ThreadTag, Unparker};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Publishes the class cell of the green thread that `worker` resumes now (null when it stops
/// running it): for the locks on this OS thread (`set_scheduled_class_cell`, the running
/// thread's cell in one thread-local read) and for waiters on other workers, which compare a
/// lock's holder with what each worker runs (`run_state`). Called by the worker loop around
/// every resumption.
///
/// # Safety
/// A non-null `cell` is the class cell of the thread the calling worker runs until the next
/// call, alive until then (`set_scheduled_class_cell`'s contract).
#[inline(always)]
pub(crate) unsafe fn publish_running(worker: &WorkerShared, cell: *const ClassCell) {
    worker.set_running(cell);
    // SAFETY: per this function's contract.
    unsafe { footprint_locks::hook::set_scheduled_class_cell(cell) };
}

/// The runtime and the worker of the calling OS thread, when it is a worker running a green
/// thread.
fn here() -> Option<(&'static Shared, &'static WorkerLocal)> {
    let c = context::ctx_ptr();
    if c.is_null() || context::current_task_ptr().is_null() {
        return None;
    }
    // SAFETY: the context, its runtime and its worker belong to the calling OS thread and
    // outlive the green thread running on it (the caller); the references do not leave the
    // hook's methods.
    unsafe {
        let (s, w) = ((*c).shared(), (*c).worker());
        if s.is_null() || w.is_null() {
            None
        } else {
            Some((&*s, &*w))
        }
    }
}

/// How many ready threads `higher_class_ready` inspects (the cheap end of the ready structure).
const SCAN: usize = 32;

pub(crate) struct GreenHook;

pub(crate) static GREEN_HOOK: GreenHook = GreenHook;

/// Whether the calling worker's ready structure holds a green thread with a class above `than`.
fn find_higher(than: PriorityClass) -> Option<usize> {
    let c = context::ctx_ptr();
    if c.is_null() {
        return None;
    }
    // SAFETY: the context and its worker belong to the calling OS thread; the ready structure is
    // owner-only and we hold no other borrow of it.
    unsafe {
        let w = (*c).worker();
        if w.is_null() {
            return None;
        }
        let ready = &*(*w).ready_mut();
        ready.find_recent(SCAN, |j| higher(j, than))
    }
}

fn higher(j: &Job, than: PriorityClass) -> bool {
    match j {
        Job::Task(t) => t.class_cell().get() > than,
        Job::Stack(_) => PriorityClass::Running > than,
    }
}

impl SchedulerHook for GreenHook {
    fn class_cell(&self) -> &ClassCell {
        let t = context::current_task_ptr();
        if t.is_null() {
            os_hook().class_cell()
        } else {
            // SAFETY: the control block outlives the green thread (contract of class_cell: valid
            // while the current thread lives).
            unsafe { (*t).class_cell() }
        }
    }

    fn higher_class_ready(&self, than: PriorityClass) -> bool {
        !context::current_task_ptr().is_null() && find_higher(than).is_some()
    }

    fn yield_to_higher(&self, than: PriorityClass) -> bool {
        if context::current_task_ptr().is_null() {
            return false;
        }
        if parking::promote_ready(SCAN, |j| higher(j, than)) {
            parking::yield_now();
            true
        } else {
            false
        }
    }

    fn yield_now(&self) {
        parking::yield_now()
    }

    fn current_unparker(&self) -> Unparker {
        match context::current_task_arc() {
            Some(t) => Unparker::new(t as Arc<dyn footprint_locks::Unpark>),
            None => os_hook().current_unparker(),
        }
    }

    fn park(&self) {
        // placement: timed per green thread when the runtime shuffles (003).
        crate::placement::monitor::timed_lock_park()
    }

    fn park_timeout(&self, timeout: Duration) -> bool {
        if context::current_task_ptr().is_null() {
            return os_hook().park_timeout(timeout);
        }
        let deadline = Instant::now() + timeout;
        timer::wake_at(deadline, self.current_unparker());
        parking::park_current();
        Instant::now() < deadline
    }

    fn worker_id(&self) -> Option<usize> {
        if context::current_task_ptr().is_null() {
            None
        } else {
            context::current_worker_index()
        }
    }

    fn note_wait(&self, what: footprint_locks::WaitOn) {
        let t = context::current_task_ptr();
        if !t.is_null() {
            let rt = context::current_shared() as usize;
            // SAFETY: the running green thread's control block is alive while it runs.
            unsafe { (*t).extras().wait.note_lock(what, rt) };
        }
    }

    fn run_state(&self, thread: ThreadTag) -> RunState {
        let Some((shared, me)) = here() else {
            return RunState::Unknown;
        };
        if thread.is_none() {
            return RunState::Unknown;
        }
        let running = shared
            .workers()
            .iter()
            .enumerate()
            .any(|(i, w)| i != me.index() && ThreadTag::of(w.running()) == thread);
        if running {
            RunState::RunningElsewhere
        } else {
            RunState::NotRunning
        }
    }

    fn queued_here(&self) -> bool {
        let Some((_, me)) = here() else {
            return false;
        };
        let inbox = &me.me().inbox();
        // SAFETY: the ready structure is the calling worker's own; no borrow of it is live.
        let ready = unsafe { (*me.ready_mut()).len() };
        ready > 0
            || inbox.len.load(Ordering::Relaxed) > 0
            || inbox.bound_len.load(Ordering::Relaxed) > 0
            || !me.deque().is_empty()
    }

    fn running_elsewhere(&self) -> Option<usize> {
        let (shared, me) = here()?;
        Some(
            shared
                .workers()
                .iter()
                .enumerate()
                .filter(|(i, w)| *i != me.index() && !w.running().is_null())
                .count(),
        )
    }

    fn workers(&self) -> Option<usize> {
        let s = context::current_shared();
        // SAFETY: a non-null runtime of the calling worker is alive while it runs.
        (!s.is_null()).then(|| unsafe { (*s).workers().len() })
    }

    fn switch_cost_ns(&self) -> u64 {
        let s = context::current_shared();
        if s.is_null() {
            os_hook().switch_cost_ns()
        } else {
            // SAFETY: the runtime of the calling worker is alive.
            unsafe { (*s).switch_cost_ns() }
        }
    }
}

/// The locks' wait sink on every worker (`footprint_locks::stats::set_thread_wait_sink`): adds a
/// lock wait that ended on this worker to the green thread running there (the one that waited).
pub(crate) fn lock_wait_sink(ns: u64) {
    let t = context::current_task_ptr();
    if !t.is_null() {
        // SAFETY: the running green thread of this worker is alive while it runs; only it
        // writes its lock wait (it is the caller).
        unsafe { (*t).account().add_lock_wait(ns) };
    }
}
