//! Where a green thread runs: the runtime's own rule for a wake-up that names no
//! worker ([`Placement::Anywhere`](footprint_locks::Placement)), and the placement hints that
//! programs give through [`GreenBuilder`](crate::GreenBuilder) and while running.
//!
//! **The plain rule.** A woken thread goes back to the worker it last ran on (its stack and data
//! are in that worker's cache), handed over through that worker's inbox (where idle workers may
//! still steal it: load balance wins), or run by the waker's worker directly when that *is* its
//! last worker. One exception, for load balance: when its last worker is asleep and the waker is
//! an awake worker of the same runtime, the waker's worker takes it (waking a sleeper costs a
//! futex call on the waker's path and the sleeper's cache has nothing else to lose; this keeps
//! `join`'s wake-up as fast as before). A wake-up with `Placement::LastWorker` (a barrier's
//! release, whose waker goes on running) has no such exception: the sleeping worker is woken.
//! Lock-hot placement (000) overrides the rule by naming the
//! releaser's worker; with `footprint_locks::placement::set_lock_hot(false)` the rule holds.
//!
//! **Hints** (a thread with any hint is *bound*: it waits in its worker's bound queue, which
//! thieves do not touch, so the hint holds; see `inbox.rs`):
//! - fragment (001): threads on one data fragment are batched on one worker by the affinity
//!   crate's `FragmentBatcher` and run back to back there (the bound queue orders by batch);
//! - partner (004 §5.3, attract): runs on the worker its partner last ran on;
//! - rival (004 §5.3, repulse): runs on a worker other than its rival's.
//!
//! A partner or rival that has finished is ignored (counted in
//! [`PlacementStats::finished_hint_ignored`]); the thread is then placed by the plain rule.

pub(crate) mod monitor;
pub(crate) mod shuffle;
pub(crate) mod state;

use crate::context::{ctx_ptr, current_task_ptr};
use crate::error::Error;
use crate::job::Job;
use crate::registry::Shared;
use crate::task::{PlacementHints, Reason, Task};
use crate::worker::local::WorkerLocal;
use state::PlacementCounters;
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use monitor::record_lock_wait;
pub use shuffle::{LockTimeSource, ShuffleConfig};
pub use state::PlacementStats;

/// Key of bound threads that are not part of a fragment batch: after every batch.
const UNBATCHED: u64 = u64::MAX;

/// Where a woken or new thread goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// The calling worker's ready structure.
    Local,
    /// Worker `w`'s (stealable) inbox.
    Inbox(usize),
    /// Worker `w`'s bound queue, with this ready key.
    Bound(usize, u64),
}

/// The calling worker if it belongs to `shared`.
#[inline]
pub(crate) fn here(shared: &Shared) -> Option<&WorkerLocal> {
    let c = ctx_ptr();
    // SAFETY: a non-null context is alive; its worker (if any) is the calling OS thread's.
    unsafe {
        if !c.is_null() && ptr::eq((*c).shared(), shared) && !(*c).worker().is_null() {
            Some(&*(*c).worker())
        } else {
            None
        }
    }
}

/// The route of a thread woken with `Placement::Anywhere` (see the module docs), or with
/// `Placement::LastWorker` (`waker_may_take` false: no load-balance exception, a sleeping last
/// worker is woken for it).
#[inline]
pub(crate) fn woken_route(
    shared: &Shared,
    task: &Task,
    here: Option<usize>,
    waker_may_take: bool,
) -> Route {
    // SAFETY: a woken thread is not running; its hints were written before the park hand-over.
    if let Some(h) = unsafe { (*task.extras().hints.get()).as_deref() } {
        if let Some(r) = hinted_route(shared, task, h, here) {
            return r;
        }
    }
    let n = shared.workers().len();
    let home = task.last_worker() % n;
    match here {
        Some(h) if h == home => Route::Local,
        Some(_) if waker_may_take && shared.workers()[home].sleep().is_sleeping() => Route::Local,
        _ => Route::Inbox(home),
    }
}

/// The worker a partner or rival runs on, `None` (counted) if it has finished.
fn live_worker(shared: &Shared, other: &Task) -> Option<usize> {
    if other.has_finished() {
        PlacementCounters::bump(&shared.placement().counters.finished_hint_ignored);
        return None;
    }
    Some(other.last_worker() % shared.workers().len())
}

/// The route a thread's hints ask for (fragment first, then partner, then rival); `None` when
/// no hint applies (finished partner or rival).
#[cold]
fn hinted_route(
    shared: &Shared,
    task: &Task,
    h: &PlacementHints,
    here: Option<usize>,
) -> Option<Route> {
    let n = shared.workers().len();
    let c = &shared.placement().counters;
    if h.fragment.is_some() {
        let p = shared.placement().batcher().placement_of(thread_id(task))?;
        return Some(Route::Bound(p.worker % n, p.order));
    }
    if let Some(p) = &h.partner {
        if let Some(w) = live_worker(shared, p) {
            PlacementCounters::bump(&c.partner_placements);
            return Some(Route::Bound(w, UNBATCHED));
        }
    }
    if let Some(r) = &h.rival {
        if let Some(rw) = live_worker(shared, r) {
            PlacementCounters::bump(&c.rival_placements);
            let home = here.unwrap_or(task.last_worker() % n);
            let w = if home != rw || n == 1 {
                home
            } else {
                (rw + 1) % n
            };
            return Some(Route::Bound(w, UNBATCHED));
        }
    }
    None
}

/// Queues a woken `task` for any active worker (its route named a worker above the active
/// limit) and wakes one, searching from worker 0.
fn to_injector(shared: &Shared, task: Arc<Task>) {
    shared
        .injector()
        .push(crate::job::RawJob::from(Job::Task(task)));
    // The ring after the last worker starts at worker 0, among the active ones.
    shared.notify_one(shared.workers().len() - 1);
}

/// Queues `task` on `route` (`Local` needs `here`).
pub(crate) fn enqueue(shared: &Shared, here: Option<&WorkerLocal>, route: Route, task: Arc<Task>) {
    match (route, here) {
        // adaptive: a worker above the active limit hands wake-ups on (its own
        // threads go to the injector when it rests).
        (Route::Local, Some(w)) if w.index() >= shared.active_limit() => to_injector(shared, task),
        // A policy order keeps every thread woken here in its heap, by key.
        // SAFETY: the owner-only ready structure of the calling worker; no borrow is live.
        (Route::Local, Some(w)) if w.orders_by_policy() => unsafe {
            (*w.ready_mut()).push_woken(Job::Task(task))
        },
        // In the inbox, where an idle worker can take it once the grace is over (`inbox.rs`):
        // the thread running here may keep the worker for long.
        (Route::Local, Some(w)) => {
            shared.workers()[w.index()]
                .inbox()
                .push_local(Job::Task(task), crate::clock::ticks());
            shared.notify_one(w.index());
        }
        (Route::Local, None) => unreachable!("a local route needs a worker"),
        // adaptive: a worker above the active limit runs nothing it could hand on,
        // so a wake-up placed there (its last worker, say) goes to the injector instead.
        (Route::Inbox(w), _) if w >= shared.active_limit() => to_injector(shared, task),
        (Route::Inbox(w), _) => {
            shared.workers()[w].inbox().push(Job::Task(task));
            shared.notify_worker(w);
        }
        (Route::Bound(w, key), _) => {
            shared.workers()[w].inbox().push_bound(key, Job::Task(task));
            shared.notify_worker(w);
        }
    }
}

/// The batcher's id of a thread: its control block's address (unique among live threads).
pub(crate) fn thread_id(t: &Task) -> u64 {
    t as *const Task as u64
}

/// Stores `hints` on a new thread (not yet published) and returns where it starts.
///
/// # Safety
/// The caller is the only holder of `task` (it was just initialised and not yet queued).
pub(crate) unsafe fn place_new(
    shared: &Shared,
    task: &Task,
    mut hints: Box<PlacementHints>,
    spawner: Option<usize>,
) -> Route {
    let n = shared.workers().len();
    let c = &shared.placement().counters;
    let route = if let Some((id, _)) = hints.fragment {
        let p = shared.placement().batcher().place(thread_id(task), id);
        PlacementCounters::bump(&c.fragment_placements);
        if p.new_fragment {
            PlacementCounters::bump(&c.fragment_batches);
        }
        hints.batch_order = p.order;
        Some(Route::Bound(p.worker % n, p.order))
    } else {
        None
    };
    // SAFETY: exclusive per the contract.
    unsafe { *task.extras().hints.get() = Some(hints) };
    task.extras().bound.store(true, Ordering::Relaxed);
    // SAFETY: as above; the hints were just stored.
    let h = unsafe { (*task.extras().hints.get()).as_deref().expect("stored") };
    route
        .or_else(|| hinted_route(shared, task, h, spawner))
        .unwrap_or(Route::Bound(spawner.unwrap_or(0), UNBATCHED))
}

/// Forgets a finished thread's hints (its batch membership, its partner references).
///
/// # Safety
/// The caller holds the run reference of the finished thread.
pub(crate) unsafe fn on_finish(shared: &Shared, t: &Task) {
    // SAFETY: per the contract.
    if let Some(h) = unsafe { (*t.extras().hints.get()).take() } {
        if h.fragment.is_some() {
            let mut b = shared.placement().batcher();
            b.remove(thread_id(t));
            if b.is_empty() {
                // No hinted thread left: forget the emptied batches (an empty batch stays its
                // fragment's home only while other hinted threads live), so the batcher's
                // memory is bounded by the live threads' fragments.
                b.rebalance();
            }
        }
    }
}

/// Moves the calling green thread to worker `to`'s bound queue and suspends it until that
/// worker runs it.
///
/// # Safety
/// `t` is the calling green thread.
unsafe fn migrate_current(t: *const Task, to: usize) {
    // SAFETY: per the contract we are inside t's coroutine.
    unsafe { (*t).suspend(Reason::Migrate(to)) }
}

/// Called by the worker when a green thread suspended with `Reason::Migrate(to)`: the thread
/// is off its stack now and goes to `to`'s bound queue.
pub(crate) fn finish_migrate(w: &WorkerLocal, task: Arc<Task>, to: usize) {
    let shared = w.shared();
    // SAFETY: the worker holds the run reference: the thread just suspended there.
    let key = unsafe { (*task.extras().hints.get()).as_deref() }
        .filter(|h| h.fragment.is_some())
        .map_or(UNBATCHED, |h| h.batch_order);
    PlacementCounters::bump(&shared.placement().counters.migrations);
    task.extras().bound.store(true, Ordering::Relaxed);
    enqueue(shared, Some(w), Route::Bound(to, key), task);
}

/// The calling green thread, its runtime and its worker index, or `Error::NotGreen`.
fn current_green(what: &'static str) -> Result<(*const Task, &'static Shared, usize), Error> {
    let t = current_task_ptr();
    let c = ctx_ptr();
    if t.is_null() || c.is_null() {
        return Err(Error::NotGreen { what });
    }
    // SAFETY: the context of a running green thread and its runtime outlive this call (the
    // runtime waits for its unfinished threads); 'static stands for "while this thread runs".
    unsafe {
        let w = (*c).worker();
        if w.is_null() {
            return Err(Error::NotGreen { what });
        }
        Ok((t, &*(*c).shared(), (*w).index()))
    }
}

/// Moves the calling green thread to worker `worker` of its runtime: it suspends and resumes
/// there (bound: no other worker steals it on the way). A no-op when it runs there already.
///
/// Errors: [`Error::NotGreen`] outside a green thread, [`Error::NoSuchWorker`] for an index not
/// below the runtime's worker count.
///
/// ```
/// let rt = footprint::Runtime::builder().workers(2).build().unwrap();
/// rt.block_on(|| {
///     footprint::migrate_to(1).unwrap();
///     assert_eq!(footprint::runtime::park::current_worker(), Some(1));
/// });
/// assert!(footprint::migrate_to(0).is_err()); // not on a green thread
/// ```
pub fn migrate_to(worker: usize) -> Result<(), Error> {
    let (t, shared, here) = current_green("migrate_to")?;
    let workers = shared.workers().len();
    if worker >= workers {
        return Err(Error::NoSuchWorker { worker, workers });
    }
    if worker != here {
        // SAFETY: t is the calling green thread.
        unsafe { migrate_current(t, worker) };
    }
    Ok(())
}

/// Declares that the calling green thread now works on data fragment `id` of about `bytes`
/// bytes (001): it joins that fragment's batch, moving to the batch's worker if it runs
/// elsewhere, so the threads of one fragment run back to back on one cache. Later wake-ups that
/// name no worker send it back to that worker.
///
/// Errors: [`Error::EmptyFragment`] for `bytes == 0` (a fragment with no data cannot be
/// cached; the call changes nothing), [`Error::NotGreen`] outside a green thread.
///
/// ```
/// let rt = footprint::Runtime::builder().workers(2).build().unwrap();
/// rt.block_on(|| {
///     footprint::set_fragment(42, 256 << 10).unwrap();
///     assert!(footprint::set_fragment(43, 0).is_err());
/// });
/// assert_eq!(rt.placement_stats().fragment_placements, 1);
/// ```
pub fn set_fragment(id: u64, bytes: usize) -> Result<(), Error> {
    if bytes == 0 {
        return Err(Error::EmptyFragment { fragment: id });
    }
    let (t, shared, here) = current_green("set_fragment")?;
    let c = &shared.placement().counters;
    // SAFETY: t is the calling green thread, alive while it runs.
    let task = unsafe { &*t };
    let p = shared.placement().batcher().place(thread_id(task), id);
    PlacementCounters::bump(&c.fragment_placements);
    if p.new_fragment {
        PlacementCounters::bump(&c.fragment_batches);
    }
    // SAFETY: a running thread's hints are written only by itself.
    unsafe {
        let h = (*task.extras().hints.get()).get_or_insert_with(Box::default);
        h.fragment = Some((id, bytes));
        h.batch_order = p.order;
    }
    let to = p.worker % shared.workers().len();
    if to != here {
        PlacementCounters::bump(&c.fragment_moves);
        // SAFETY: t is the calling green thread.
        unsafe { migrate_current(t, to) };
    }
    Ok(())
}

/// An id of the calling green thread, unique among the runtime's live green threads (`None`
/// outside a green thread); shuffling decisions in [`PlacementStats`] name threads by it.
///
/// ```
/// let rt = footprint::Runtime::builder().workers(1).build().unwrap();
/// let id = rt.block_on(footprint::current_thread_id);
/// assert!(id.is_some());
/// assert_eq!(footprint::current_thread_id(), None); // not a green thread
/// ```
pub fn current_thread_id() -> Option<u64> {
    let t = current_task_ptr();
    // SAFETY: a non-null current task is the running one.
    (!t.is_null()).then(|| thread_id(unsafe { &*t }))
}
