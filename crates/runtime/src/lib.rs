//! Green threads on a work-stealing pool of pinned workers (after Bellosa's ELiTE).
//!
//! Stackful, async-free green threads: users write ordinary blocking code. A [`Runtime`] runs
//! one pinned worker OS thread per core of the process's allowed CPU set (configurable:
//! [`Builder::workers`], [`Pin`], the variables `FOOTPRINT_NUM_THREADS` and `FOOTPRINT_PIN`);
//! green threads run on `corosensei` stacks with guard pages, pooled per worker.
//!
//! ```
//! let rt = footprint::Runtime::builder()
//!     .workers(4)                     // unset: FOOTPRINT_NUM_THREADS, else one per core; 0 is an error
//!     .stack_size(8 << 20)            // usable bytes per green thread, guard page not included
//!     .build()?;                      // Result<Runtime, footprint::Error>
//! let v = rt.block_on(|| {
//!     let h = footprint::spawn(|| 1 + 1);                 // JoinHandle<T>
//!     let (a, b) = footprint::join(|| 2, || 3);
//!     let r = footprint::scope(|s| s.spawn(|| a + b).join().unwrap()); // borrows allowed
//!     footprint::yield_now();
//!     h.join().unwrap() + r
//! });
//! assert_eq!(v, 7);
//! # Ok::<(), footprint::Error>(())
//! ```
//!
//! # Scheduling
//! Each worker has a start deque for new work (owner LIFO, thieves FIFO), a ready structure for
//! resumed green threads ([`ReadyOrder`]), an inbox for threads woken from elsewhere, and pools
//! of control blocks and stacks with a shared overflow level. An idle worker steals in topology
//! order (same CPU, same L2, same L3 / NUMA node, the rest), spins briefly, then sleeps on a
//! futex: an idle runtime uses no CPU. A spawned green thread gets its stack only when it first
//! runs; a green thread joined before it started runs inline on its joiner.
//!
//! `join(a, b)` runs `a` inline and offers `b` to thieves; if `b` was not stolen it runs inline
//! (no green thread is created); if it was stolen and is unfinished, the caller parks and its
//! worker runs other work.
//!
//! # Blocking
//! Locks of `footprint-locks` find this scheduler through the `SchedulerHook` installed on every
//! worker: a waiting green thread parks off its worker, and `unpark` may name the worker it
//! should resume on (`Placement::Worker`). Use [`block_in_place`] / [`spawn_blocking`] for
//! blocking system calls.
//!
//! # Thread-local storage
//! `std::thread_local!` values are per **worker OS thread**, not per green thread: a green
//! thread that yields or parks may resume on another worker and then sees that worker's values,
//! and green threads on one worker share them. Never keep a reference to a thread-local across
//! a yield or park (nor a `!Send` value whose correctness depends on the OS thread, such as a
//! guard of an OS-level lock). Use [`GreenLocal`] for per-green-thread values.
//!
//! # Failure
//! A panic in a green thread is caught at its boundary: [`JoinHandle::join`] returns
//! `Err(payload)`, [`join`] and [`scope`] re-raise it, and the worker keeps running. A stack
//! overflow hits the guard page. On x86-64 Linux, outside a `join`, the joiner gets
//! `Err(String)` naming the thread and its stack size and the runtime keeps running (the
//! overflowed thread's frames are abandoned without running destructors). Inside a `join` (whose
//! other half still references the stack), and on other targets, the process prints that report
//! and aborts.
//!
//! # Diagnostics
//! Each runtime has a watcher thread that costs the switch path nothing (it reads what the
//! workers publish at every switch already). Its blocking detector
//! ([`Builder::blocking_warning`], default 100 ms) names a worker that has run one green thread
//! that long while blocked in the kernel (a `std` lock, `std::thread::sleep`, blocking I/O),
//! with the system call where `/proc` shows it. Its hang watchdog ([`Builder::watchdog`], on by
//! default in debug builds) prints, when nothing has run for the period while green threads
//! wait and nothing can wake them, every worker's state and every parked green thread with what
//! it waits on (lock, barrier with its arrivals, condition variable, channel, join, sleep) and,
//! for joins, sleeps and barriers, where it was called; [`Runtime::debug_state`] gives the
//! same report at any time.
//!
//! # Shutdown
//! Dropping a [`Runtime`] waits until all its green threads (detached ones included) have
//! finished, then stops the workers and frees the pools.
//!
//! # Limits
//! Each started, unfinished green thread holds one stack, carved from 64 MiB slabs; a
//! spawned-but-not-started thread holds none. Where the kernel has lightweight guard regions
//! (`MADV_GUARD_INSTALL`, Linux 6.13+) a guard page costs no mapping, so with the defaults
//! (guard pages on, [`DEFAULT_STACK_SIZE`]) the number of blocked green threads is bounded by
//! memory (a blocked thread touches a few KiB of its stack: about 4.6 KB each for a million
//! threads on a barrier, `examples/million`) and address space (2 MiB + 4 KiB reserved per
//! stack: 47 bits hold about 60 million), not by mappings. On older kernels each guard page is
//! an `mprotect` that splits its slab into two mappings, and `vm.max_map_count` (65,530 by
//! default) bounds the *started, unfinished* green threads to roughly 30,000; there
//! [`Builder::guard_pages`]`(false)` keeps a slab one mapping (no overflow detection then).
//! At a limit ([`Builder::max_stacks`], memory, mappings) [`GreenBuilder::spawn`] returns the
//! typed [`Error`] and [`spawn`] panics with its message; a thread that cannot get a stack when
//! it first runs fails its [`JoinHandle`] with that error, and the first such failure of a
//! runtime is said on stderr at once (what was live, the limit hit, the remedies) and counted
//! in [`RuntimeStats::stack_failures`].

// docs.rs (`--cfg docsrs`, nightly) badges the items that need a cargo feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod accounting;
mod adaptive;
pub mod bandwidth;
mod blocking;
mod builder;
mod clock;
mod config;
mod context;
mod counters;
mod error;
mod exits;
mod global;
mod green_builder;
mod handle;
mod hook;
mod in_flight;
mod inbox;
mod introspect;
mod job;
mod join;
mod local;
mod loops;
pub mod node;
mod overflow;
mod parking;
mod pin;
mod placement;
mod pool;
mod ready;
mod registry;
mod runtime;
mod shutdown;
mod sleep;
mod spare;
mod spawn;
mod stack;
mod stack_refusal;
mod start_deque;
mod stats;
mod sync;
mod sys;
mod task;
mod timed_sleep;
mod timer;
mod trace;
mod watch;
mod worker;

// adaptive
pub use adaptive::{progress, AdaptiveDecision, AdaptiveReason, AdaptiveSample, AdaptiveStats};
// Thread Tranquilizer (003 ch. 3): `Builder::tranquilizer`.
pub use adaptive::tranquilizer;
pub use blocking::{block_in_place, spawn_blocking};
pub use builder::{Builder, MAX_WORKERS_PER_CPU};
pub use counters::{Counters, SourceFactory};
pub use error::Error;
pub use global::{current_runtime_id, global};
pub use green_builder::{spawn, GreenBuilder};
pub use handle::JoinHandle;
pub use introspect::record_affinity_loop;
pub use introspect::{current_num_threads, current_thread_index, BroadcastContext};
pub use join::{join, scope, Scope, ScopedJoinHandle};
pub use local::GreenLocal;
pub use loops::LoopStats;
pub use parking::yield_now;
pub use pin::{Pin, NUM_THREADS_VAR, PIN_VAR};
pub use placement::{
    current_thread_id, migrate_to, set_fragment, LockTimeSource, PlacementStats, ShuffleConfig,
};
pub use ready::ReadyOrder;
pub use runtime::Runtime;
pub use sleep::wake_idle_workers;
pub use stack::{DEFAULT_STACK_SIZE, MAX_STACK_SIZE, MIN_STACK_SIZE};
pub use stats::{current_stats, RuntimeStats, ThreadStats, WorkerStats};
pub use sys::process_cpu_time;
pub use timed_sleep::{sleep, sleep_until};
pub use watch::{DEFAULT_BLOCKING_WARNING, DEFAULT_WATCHDOG};

/// The runtime's hand-off protocols, for the loom models in `tests/loom_*.rs` only (built under
/// `RUSTFLAGS="--cfg loom"`, where their atomics are loom's). These are the functions the
/// runtime itself calls; nothing here is public API.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_protocols {
    pub use crate::pool::{put_pooled, take_pooled, Levels};
    pub use crate::sleep::word::{
        wake_all, wake_many, wake_one, SleepWord, SleeperCount, Slept, AWAKE, NOTIFIED, SLEEPING,
    };
    pub use crate::task::states::{
        claim, Finished, HandleState, Latch, ParkState, ScopeCount, H_DONE, H_HANDLE, H_WAITER,
        LIFE_DONE, LIFE_NEW, LIFE_RUNNING, P_EMPTY, P_NOTIFIED, P_PARKED,
    };
}

/// Park/unpark for the calling thread (green or OS), for building your own blocking primitives.
pub mod park {
    use footprint_locks::{SchedulerHook, Unparker};

    /// A handle that wakes the calling thread (see [`footprint_locks::Unparker`]).
    pub fn current_unparker() -> Unparker {
        footprint_locks::current_hook().current_unparker()
    }

    /// Blocks the calling thread until a permit from its unparker is available. An unpark that
    /// came first is not lost; spurious returns are possible, so re-check in a loop.
    pub fn park() {
        crate::watch::note::note_current(crate::watch::record::WaitKind::Park, 0, None);
        crate::parking::park_current()
    }

    /// Like [`park`], returning after at most `timeout`; `false` on timeout.
    pub fn park_timeout(timeout: std::time::Duration) -> bool {
        crate::watch::note::note_current(crate::watch::record::WaitKind::Park, 0, None);
        footprint_locks::current_hook().park_timeout(timeout)
    }

    pub use crate::placement::record_lock_wait;

    /// The index of the worker the calling green thread runs on (`None` outside green threads).
    pub fn current_worker() -> Option<usize> {
        footprint_locks::current_hook().worker_id()
    }

    #[doc(hidden)]
    pub fn _assert_hook(_: &dyn SchedulerHook) {}
}
