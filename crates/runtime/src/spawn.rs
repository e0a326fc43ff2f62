//! Creating green threads and queueing their work: `spawn_raw`, the stealable halves of `join`
//! (push and take back), the spawn-then-join fast path, and the finish count that
//! `Runtime::drop` waits on.

use crate::job::{Job, RawJob, StackJobHeader, StackJobRef};
use crate::placement;
use crate::pool::recycle_on;
use crate::registry::Shared;
use crate::spare::{entry_ref, keep_entry_ref};
use crate::task::{self, PlacementHints, Task, TaskSetup};
use crate::worker::local::{ThreadCtx, WorkerLocal};
use std::ptr;
use std::sync::Arc;

/// What a green thread is spawned with besides its closure. The default (no name, the
/// runtime's stack size, no scope, no placement hints) is a plain `footprint::spawn`; the
/// others set the fields they need (`SpawnOptions { scope, ..SpawnOptions::default() }`).
#[derive(Default)]
pub(crate) struct SpawnOptions {
    /// Shown in panic and overflow reports, and listed while the thread lives
    /// (`Shared::named`).
    pub(crate) name: Option<Arc<str>>,
    /// Usable stack bytes; `None`: the runtime's size.
    pub(crate) stack_size: Option<usize>,
    /// The scope that counts the thread (`join::scope`).
    pub(crate) scope: Option<Arc<task::ScopeShared>>,
    /// Placement hints: the thread goes to the bound queue of the worker they name.
    pub(crate) hints: Option<Box<PlacementHints>>,
}

/// Creates a green thread for `f` on runtime `shared`, with a join handle, and queues it: on the
/// calling worker's start deque (or the injector off a worker), or, with placement hints, in
/// the bound queue of the worker they name (`placement::place_new`).
///
/// `c` is the calling OS thread's context (`context::ctx_ptr()`, null off a runtime), passed in
/// so that a caller that needed it to find the runtime does not read the thread-local twice.
///
/// # Safety
/// `f` and its result must stay valid until the task completes; callers with non-`'static`
/// closures wait for completion before their borrows end. `c` was read on the calling OS
/// thread since the caller last yielded or parked.
#[inline]
pub(crate) unsafe fn spawn_raw<F, T>(
    c: *const ThreadCtx,
    shared: &Shared,
    f: F,
    opts: SpawnOptions,
) -> Arc<Task>
where
    F: FnOnce() -> T,
{
    let SpawnOptions {
        name,
        stack_size,
        scope,
        hints,
    } = opts;
    let stack_size = stack_size.unwrap_or(shared.stack_size());
    let rt: *const () = ptr::from_ref(shared).cast();
    // Registered before the task is published, so that its finish always finds the entry.
    let register = |t: &Arc<Task>| {
        if let Some(n) = name.clone() {
            shared.named_live(|m| m.insert(Arc::as_ptr(t) as usize, n));
        }
    };
    // SAFETY: context pointers are alive while non-null; the worker's pools and deque are used
    // only from its own OS thread, which is the caller.
    unsafe {
        if !c.is_null() && ptr::eq((*c).shared(), shared) && !(*c).worker().is_null() {
            let w = &*(*c).worker();
            let t = w.take_task();
            register(&t);
            t.init(
                f,
                TaskSetup {
                    runtime: rt,
                    with_handle: true,
                    stack_size,
                    name,
                    scope,
                    worker: w.index(),
                },
            );
            shared.workers()[w.index()].count_spawned();
            match hints {
                None => {
                    w.deque().push(RawJob::task(entry_ref(&t)));
                    w.notify_after_local_push();
                }
                Some(h) => {
                    let route = placement::place_new(shared, &t, h, Some(w.index()));
                    placement::enqueue(shared, Some(w), route, t.clone());
                }
            }
            t
        } else {
            let t = shared.pools().take_task();
            register(&t);
            t.init(
                f,
                TaskSetup {
                    runtime: rt,
                    with_handle: true,
                    stack_size,
                    name,
                    scope,
                    worker: 0,
                },
            );
            shared.count_external_spawn();
            match hints {
                None => {
                    shared.injector().push(RawJob::task(entry_ref(&t)));
                    shared.notify_one(0);
                }
                Some(h) => {
                    let route = placement::place_new(shared, &t, h, None);
                    placement::enqueue(shared, None, route, t.clone());
                }
            }
            t
        }
    }
}

/// [`spawn_raw`] with the default [`SpawnOptions`], from wherever the caller runs.
///
/// # Safety
/// As for [`spawn_raw`]'s `f`.
pub(crate) unsafe fn spawn_plain<F, T>(shared: &Shared, f: F) -> Arc<Task>
where
    F: FnOnce() -> T,
{
    // SAFETY: per our contract; the context is read just now on this OS thread.
    unsafe {
        spawn_raw(
            crate::context::ctx_ptr(),
            shared,
            f,
            SpawnOptions::default(),
        )
    }
}

/// Pushes the stealable half of a `join` on worker `w`'s start deque; returns `w`'s index.
///
/// # Safety
/// `w` must be the calling green thread's worker, obtained since its last yield or park.
#[inline]
pub(crate) unsafe fn push_stack_job(w: *const WorkerLocal, r: StackJobRef) -> (usize, u64) {
    // SAFETY: per the contract `w` is the calling OS thread's live worker.
    unsafe {
        let w = &*w;
        let seq = w.next_push_seq();
        (*(r.data as *const StackJobHeader)).seq.set(seq);
        w.deque().push(RawJob::stack(r));
        w.notify_after_local_push();
        (w.index(), seq)
    }
}

/// Tries to take back the `join` half `r` from the calling worker's deque. Other jobs found above
/// it (pushed meanwhile by other green threads) go to this worker's inbox, where the worker or a
/// thief runs them. Returns whether `r` was taken back (the caller then runs it inline).
///
/// # Safety
/// `owner` must be the calling green thread and `w` the worker it ran on when it pushed the half
/// (`pushed_on`). The worker is only touched if the green thread still runs there, which its
/// `last_worker` (stamped by every resumption) tells without a thread-local read.
#[inline]
pub(crate) unsafe fn take_back_stack_job(
    owner: *const Task,
    w: *const WorkerLocal,
    data: *const (),
    seq: u64,
    pushed_on: usize,
) -> bool {
    // SAFETY: per the contract; a green thread that still runs on `pushed_on` runs on `w`'s OS
    // thread, so the owner-only deque is ours to pop.
    unsafe {
        if (*owner).last_worker() != pushed_on {
            return false;
        }
        let w = &*w;
        // The common case in line: our half is on top (nothing pushed since, not stolen).
        match w.deque().pop().map(RawJob::into_job) {
            Some(Job::Stack(s)) if s.data == data => true,
            None => false,
            Some(other) => take_back_below(w, other, data, seq),
        }
    }
}

/// [`take_back_stack_job`] when the top of the deque was `top`, not our half: goes on popping
/// until it finds the half (`true`), an older one (ours was stolen; put back) or the bottom.
///
/// # Safety
/// As for [`take_back_stack_job`], with `w` the calling green thread's worker.
#[cold]
unsafe fn take_back_below(w: &WorkerLocal, top: Job, data: *const (), seq: u64) -> bool {
    let mut others = Vec::new();
    let mut found = false;
    let mut next = Some(top);
    while let Some(j) = next {
        match j {
            Job::Stack(s) if s.data == data => {
                found = true;
                break;
            }
            // SAFETY: a half still in the deque is unexecuted, so its owner is still inside
            // `join` and the half (with its header) is alive.
            Job::Stack(s) if unsafe { (*(s.data as *const StackJobHeader)).seq.get() } < seq => {
                // Older than ours: ours was stolen. Put it back where it was (the top).
                w.deque().push(RawJob::stack(s));
                break;
            }
            // A spawned thread its joiner already ran inline: the stale entry goes (and the
            // block back to the pool when the joiner is done with it).
            // SAFETY: `w` is the calling OS thread's worker (our contract).
            Job::Task(t) if t.has_started() => unsafe { recycle_on(t, w) },
            // Newer than ours (spawned threads, other green threads' join halves): hand
            // them to this worker's inbox, where it or a thief runs them.
            other => others.push(other),
        }
        next = w.deque().pop().map(RawJob::into_job);
    }
    if !others.is_empty() {
        let shared = w.shared();
        shared.workers()[w.index()].inbox().push_many(others);
        shared.notify_one(w.index());
    }
    found
}

/// Pops the top of the calling worker's deque if it is `t`'s entry (spawn, then join): the caller
/// then owns `t` exclusively. When the deque's top hint says another entry is on top (joining in
/// spawn order: the thread spawned last sits above), nothing is popped. Otherwise stale entries
/// found on top (threads their joiners already ran inline) are dropped on the way, and anything
/// else is put back where it was.
///
/// # Safety
/// `w` must be the calling OS thread's worker (read since the caller last yielded or parked).
pub(crate) unsafe fn take_own_top(w: *const WorkerLocal, t: &Task) -> bool {
    // SAFETY: per the contract the owner-only deque is ours to pop.
    unsafe {
        // The deque bound once, the worker pointer kept only for `recycle_on`: the spawn +
        // join path then saves one register less (two instructions per spawn + join).
        let deque = (*w).deque();
        // Joining in spawn order: the thread spawned last is on top, known without a pop.
        if deque.top_is_not(ptr::from_ref(t).cast()) {
            return false;
        }
        loop {
            match deque.pop().map(RawJob::into_job) {
                Some(Job::Task(top)) if ptr::eq(Arc::as_ptr(&top), t) => {
                    // We popped its only queue entry and our caller holds its handle (the
                    // contract of `keep_entry_ref`).
                    keep_entry_ref(top);
                    return true;
                }
                // A stale entry (see `take_back_stack_job`): the last reference recycles.
                Some(Job::Task(top)) if top.has_started() => recycle_on(top, w),
                // Not ours: put it back on top of the LIFO deque, where it was.
                Some(other) => {
                    deque.push(match other {
                        Job::Task(t) => RawJob::task(t),
                        Job::Stack(r) => RawJob::stack(r),
                    });
                    return false;
                }
                None => return false,
            }
        }
    }
}

/// Counts a green thread as finished (for `Runtime::drop`'s wait).
pub(crate) fn count_finished(t: &Task) {
    // SAFETY: a worker read just now, on the calling OS thread.
    unsafe { count_finished_on(t, crate::context::current_worker_ptr()) }
}

/// [`count_finished`] with the calling OS thread's worker already read (null off a worker).
/// In line: a finished thread without hints or a name costs one counter store (the `join` of a
/// thread run inline pays it per thread).
///
/// # Safety
/// `w` is null or the calling OS thread's worker, read since the caller last yielded or parked.
#[inline]
pub(crate) unsafe fn count_finished_on(t: &Task, w: *const WorkerLocal) {
    // SAFETY: the task is unfinished until this call, so its runtime is alive. The caller holds
    // the run reference of the finished thread; its hints and name were written before it was
    // published and are not changed by anyone else while it finishes.
    unsafe {
        let shared = &*t.runtime();
        if t.extras().has_hints() || t.has_name() {
            leave_finished(shared, t);
        }
        // Per our contract `w` is null or our live worker (its `me` is its `WorkerShared`).
        if !w.is_null() && ptr::eq((*w).shared(), shared) {
            (*w).me().count_finished();
        } else {
            shared.count_external_finish();
        }
        if shared.is_shutting_down() {
            notify_if_last(shared);
        }
    }
}

/// A finished thread with placement hints or a name leaves its fragment batch and
/// the table of live named threads.
///
/// # Safety
/// As for [`count_finished_on`].
#[cold]
unsafe fn leave_finished(shared: &Shared, t: &Task) {
    // SAFETY: per the contract (the caller holds the run reference).
    unsafe {
        if t.extras().has_hints() {
            placement::on_finish(shared, t);
        }
        if t.has_name() {
            shared.named_live(|m| m.remove(&(ptr::from_ref(t) as usize)));
        }
    }
}

/// During shutdown, the last thread to finish wakes `Runtime::drop`'s wait.
#[cold]
fn notify_if_last(shared: &Shared) {
    if shared.live() == 0 {
        shared.notify_all();
    }
}
