//! What a program can ask about the runtime it runs on: worker count, worker index, and
//! [`Runtime::broadcast`] (a closure once on every worker), after rayon's functions of the same
//! names.

use crate::context;
use crate::global::global;
use crate::join::scope;
use crate::loops::LoopStats;
use crate::placement::migrate_to;
use crate::runtime::Runtime;

/// The number of workers of the runtime the caller runs on, or of the global runtime (built
/// on first use) when the caller is not on a runtime's worker (rayon's `current_num_threads`).
///
/// ```
/// let rt = footprint::Runtime::builder().workers(3).build().unwrap();
/// assert_eq!(rt.block_on(footprint::current_num_threads), 3);
/// ```
pub fn current_num_threads() -> usize {
    let s = context::current_shared();
    if s.is_null() {
        global().workers()
    } else {
        // SAFETY: the runtime of the calling thread's context is alive while the thread runs.
        unsafe { &*s }.workers().len()
    }
}

/// The index of the worker running the caller (`0..current_num_threads()`), or `None` when the
/// caller is not on a worker (a plain OS thread, a `spawn_blocking` thread). A green thread may
/// move to another worker whenever it yields or blocks, so the answer holds until then.
///
/// ```
/// let rt = footprint::Runtime::builder().workers(2).build().unwrap();
/// assert!(rt.block_on(footprint::current_thread_index).unwrap() < 2);
/// assert_eq!(footprint::current_thread_index(), None);
/// ```
pub fn current_thread_index() -> Option<usize> {
    context::current_worker_index()
}

/// Where a [`Runtime::broadcast`] closure runs: the worker's index and the worker count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BroadcastContext {
    index: usize,
    num_threads: usize,
}

impl BroadcastContext {
    /// The index of the worker this call was made for (and started on).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The number of workers (= the number of calls of this broadcast).
    pub fn num_threads(&self) -> usize {
        self.num_threads
    }
}

impl Runtime {
    /// Runs `f` once on every worker and returns the results in worker order; for per-worker
    /// set-up such as first-touch allocation of NUMA-local data.
    ///
    /// Each call runs on a green thread that starts on its worker (it moves there bound, as
    /// [`migrate_to`](crate::migrate_to) does: no thief takes it on the way). If `f` blocks (a lock, a join) it may resume on another worker,
    /// like any green thread. A panic in any call is re-raised after every call has finished.
    /// May be called from an OS thread or from a green thread of any runtime.
    ///
    /// ```
    /// let rt = footprint::Runtime::builder().workers(2).build().unwrap();
    /// let seen = rt.broadcast(|ctx| (ctx.index(), footprint::current_thread_index()));
    /// assert_eq!(seen, vec![(0, Some(0)), (1, Some(1))]);
    /// ```
    pub fn broadcast<F, R>(&self, f: F) -> Vec<R>
    where
        F: Fn(BroadcastContext) -> R + Sync,
        R: Send,
    {
        let num_threads = self.workers();
        let f = &f;
        self.block_on(move || {
            scope(|s| {
                let handles: Vec<_> = (0..num_threads)
                    .map(|index| {
                        s.spawn(move || {
                            // Cannot fail: a green thread of this runtime, index < workers.
                            let _ = migrate_to(index);
                            f(BroadcastContext { index, num_threads })
                        })
                    })
                    .collect();
                let results: Vec<std::thread::Result<R>> =
                    handles.into_iter().map(|h| h.join()).collect();
                results
                    .into_iter()
                    .map(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            })
        })
    }
}

/// Adds what one `Affinity` loop run (or a handle's reset) did to the loop totals of the
/// runtime the caller runs on (the global one outside any). For `footprint::par`; not API.
#[doc(hidden)]
pub fn record_affinity_loop(run: LoopStats) {
    let s = context::current_shared();
    let shared = if s.is_null() {
        global().shared_ptr()
    } else {
        s
    };
    // SAFETY: the runtime of the calling thread's context is alive while the thread runs; the
    // global one lives for the whole process.
    unsafe { &*shared }.loops().add(&run);
}
