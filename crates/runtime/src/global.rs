//! The global runtime (built on first use, or installed by `Builder::build_global`) and the
//! runtime a free function runs on: the caller's own, else the global one.

use crate::builder::Builder;
use crate::context;
use crate::error::Error;
use crate::handle;
use crate::pin::Pin;
use crate::registry::Shared;
use crate::runtime::{live_runtimes, resume_with_message, Runtime};
use crate::spawn::spawn_plain;
use std::sync::OnceLock;

static GLOBAL: OnceLock<Runtime> = OnceLock::new();

impl Builder {
    /// Builds the runtime and makes it the global one: the runtime that
    /// [`spawn`](crate::spawn), [`join`](crate::join), [`scope`](crate::scope), footprint's
    /// parallel loops and the other free functions use when called outside any runtime (see
    /// [`global`]), like rayon's `ThreadPoolBuilder::build_global`. Call it once, early in
    /// `main`: once the global runtime has started (an earlier `build_global`, or a free
    /// function called outside any runtime, which starts it with the defaults) it fails with
    /// [`Error::GlobalAlreadyStarted`]. The global runtime lives until the process exits.
    ///
    /// ```
    /// footprint::Builder::new().workers(2).thread_name("solver").build_global()?;
    /// assert_eq!(footprint::current_num_threads(), 2);
    /// let err = footprint::Builder::new().build_global().unwrap_err();
    /// assert!(matches!(err, footprint::Error::GlobalAlreadyStarted));
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn build_global(self) -> Result<(), Error> {
        if GLOBAL.get().is_some() {
            return Err(Error::GlobalAlreadyStarted);
        }
        let rt = self.build()?;
        // Another thread may have started the global runtime meanwhile: ours is then dropped.
        GLOBAL.set(rt).map_err(|_| Error::GlobalAlreadyStarted)
    }
}

/// The global runtime used by [`spawn`](crate::spawn), [`crate::join`], [`crate::scope`],
/// footprint's parallel loops and the other free functions outside any runtime: the one
/// [`Builder::build_global`] installed, or else built on first use with the defaults (one pinned
/// worker per core of the allowed set, `FOOTPRINT_NUM_THREADS` and `FOOTPRINT_PIN` honoured;
/// unpinned if pinning is refused).
///
/// Called from a green thread of any runtime, the free functions use *that* runtime, never this
/// one. Called from another thread while a runtime the program built is alive, they start this
/// one beside it (two pools on the same CPUs): the first time that happens a line on stderr
/// says so and names the cures (run the call inside `rt.block_on(..)`, or install the runtime
/// with [`Builder::build_global`]).
///
/// # Panics
/// If no runtime can be built at all (no thread can be started, or `FOOTPRINT_NUM_THREADS` /
/// `FOOTPRINT_PIN` hold values that cannot be used: the message names the variable).
pub fn global() -> &'static Runtime {
    GLOBAL.get_or_init(|| {
        let others = live_runtimes();
        let rt = Builder::new()
            .thread_name("footprint-global")
            .build()
            .or_else(|e| match e {
                Error::Pin { .. } => Builder::new()
                    .thread_name("footprint-global")
                    .pin(Pin::Off)
                    .build(),
                e => Err(e),
            })
            .unwrap_or_else(|e| panic!("footprint: building the global runtime failed: {e}"));
        if others > 0 {
            let msg = format!(
                "footprint: starting the global runtime ({} workers) beside {others} runtime(s) this program built: a free function (spawn, join, scope, a par loop, ...) was called outside every runtime. The pools now share the CPUs. Call it inside rt.block_on(..), or install your runtime with Builder::build_global().",
                rt.workers()
            );
            crate::trace::second_pool(&msg);
        }
        rt
    })
}

pub(crate) fn global_shared() -> *const Shared {
    global().shared_ptr()
}

/// Runs `f` with the runtime of the calling worker, or the global runtime.
pub(crate) fn current_or_global<R>(f: impl FnOnce(&RuntimeRef) -> R) -> R {
    let s = context::current_shared();
    let r = RuntimeRef {
        shared: if s.is_null() { global_shared() } else { s },
    };
    f(&r)
}

/// The runtime a loop or `scope` started here runs on: the caller's own, or the global one.
fn current_or_global_shared() -> *const Shared {
    current_or_global(|r| r.shared)
}

/// A process-unique number of the runtime [`crate::current_num_threads`] counts (never reused
/// after a runtime is dropped), so state kept across calls can tell runtimes apart.
///
/// ```
/// let a = footprint::Runtime::builder().workers(1).build()?;
/// let b = footprint::Runtime::builder().workers(1).build()?;
/// let ida = a.block_on(footprint::runtime::current_runtime_id);
/// assert_eq!(ida, a.block_on(footprint::runtime::current_runtime_id));
/// assert_ne!(ida, b.block_on(footprint::runtime::current_runtime_id));
/// # Ok::<(), footprint::Error>(())
/// ```
pub fn current_runtime_id() -> u64 {
    // SAFETY: the caller's runtime outlives its workers and green threads; the global one lives
    // for the whole process.
    let shared = unsafe { &*current_or_global_shared() };
    shared.id()
}

/// A borrowed runtime (by its shared state).
pub(crate) struct RuntimeRef {
    shared: *const Shared,
}

impl RuntimeRef {
    pub(crate) fn block_on<F, R>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        if context::same_runtime_green(self.shared) {
            return f();
        }
        // SAFETY: the runtime is the caller's own (alive while it runs) or the global one; we
        // wait for completion before `f`'s borrows end.
        let t = unsafe { spawn_plain(&*self.shared, f) };
        // SAFETY: result type R, sole handle.
        match unsafe { handle::join_task::<R>(t, None) } {
            Ok(v) => v,
            Err(p) => resume_with_message(p),
        }
    }
}
