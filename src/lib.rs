//! footprint: green threads for HPC codes on a cache-affine work-stealing pool, with informing
//! locks and barriers.
//!
//! ```
//! let rt = footprint::Runtime::builder()
//!     .workers(4)                     // unset: FOOTPRINT_NUM_THREADS, else one per core; 0 is an error
//!     .stack_size(8 << 20)            // usable bytes per green thread (guard page not included)
//!     .build()?;                      // Result<Runtime, footprint::Error>
//! let v = rt.block_on(|| {                                       // runs on a green thread
//!     let h = footprint::spawn(|| 1 + 1);                        // JoinHandle<T>
//!     let (a, b) = footprint::join(|| 2, || 3);
//!     let r = footprint::scope(|s| s.spawn(|| a + b).join().unwrap());   // borrows allowed
//!     footprint::yield_now();
//!     h.join().unwrap() + r
//! });
//! assert_eq!(v, 7);
//! # Ok::<(), footprint::Error>(())
//! ```
//!
//! # Depending on it
//! The package is `footprint-hpc` on crates.io (`footprint` is another crate's name); the
//! library keeps the name `footprint`:
//!
//! ```toml
//! [dependencies]
//! footprint-hpc = "0.1"   # then `use footprint::...` as in every example here
//! ```
//!
//! The member crates are `footprint-hpc-runtime`, `-locks`, `-affinity`, `-pmu` and `-sim`
//! (libraries `footprint_runtime`, ...), re-exported here as [`runtime`], [`locks`],
//! [`affinity`], [`pmu`]. Linux only. MSRV: Rust 1.95 (set by `lock_api`
//! 0.5, which the locks build on).
//!
//! Cargo features: `tracing` (events for runtime build and shutdown and adaptive decisions
//! at `INFO`, steals and parks at `TRACE`), `serde` (`Serialize` for [`RuntimeStats`],
//! [`WorkerStats`], [`ThreadStats`], [`LoopStats`]), `hwloc` (topology through the system
//! libhwloc) and `mpi` (rsmpi over the system MPI: the module `mpi`).
//!
//! # Configuring the pool
//! [`Runtime::builder`] (or [`Builder::build_global`] for the runtime that the free functions
//! use outside any runtime) sets the worker count and the [`Pin`] choice; what it leaves unset
//! comes from the environment, like `RAYON_NUM_THREADS` and `OMP_PROC_BIND` for those pools:
//!
//! | variable | values | default |
//! |---|---|---|
//! | `FOOTPRINT_NUM_THREADS` | a worker count (0 or empty: the default) | one per core |
//! | `FOOTPRINT_PIN` | `off`, `cores`, `threads`, `spread` | `cores` |
//!
//! `RAYON_NUM_THREADS` and `OMP_NUM_THREADS` are not read: they size other pools of the same
//! process (an OpenMP BLAS is often given `OMP_NUM_THREADS=1` under an outer parallel runtime).
//! An unusable value is a typed [`Error::BadEnvironment`] from `build`. The free functions
//! ([`spawn`], [`join`], [`scope`], [`par`] loops, ...) run on the runtime of the green thread
//! that calls them, and on the global runtime from any other thread; the first time the global
//! runtime starts beside a runtime the program built, a line on stderr says so.

// docs.rs (`--cfg docsrs`, nightly) badges the items that need a cargo feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use footprint_affinity as affinity;
pub use footprint_locks as locks;
// Under `--cfg loom` the locks crate swaps its types for loom's and leaves these names out: the
// facade then builds without them, for the loom models of its own lock-free parts (`par`).
#[cfg(not(loom))]
pub use footprint_locks::channel;
pub use footprint_pmu as pmu;
pub use footprint_runtime as runtime;

pub mod par;

/// Memory bandwidth as a scheduled resource (Bellosa's Process Cruise Control): calibration,
/// `Runtime::reserve_bandwidth`, declared traffic and the throttling of unreserved green
/// threads. See [`footprint_runtime::bandwidth`].
pub mod bandwidth {
    pub use footprint_runtime::bandwidth::*;
}

#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
pub mod mpi;

pub use footprint_runtime::{
    block_in_place, current_num_threads, current_thread_index, join, scope, sleep, sleep_until,
    spawn, spawn_blocking, yield_now, BroadcastContext, Builder, Error, GreenBuilder, GreenLocal,
    JoinHandle, Pin, Runtime, Scope, ScopedJoinHandle,
};
pub use footprint_runtime::{
    current_stats, Counters, LoopStats, RuntimeStats, ThreadStats, WorkerStats,
};
// limits and diagnostics: the watcher's defaults and the worker-count limit.
pub use footprint_runtime::{DEFAULT_BLOCKING_WARNING, DEFAULT_WATCHDOG, MAX_WORKERS_PER_CPU};
// placement: hints, explicit moves and what the placement rules did.
pub use footprint_runtime::{current_thread_id, migrate_to, set_fragment, PlacementStats};
// adaptive: the runtime chooses how many workers run; `progress` feeds it.
pub use footprint_runtime::{
    progress, AdaptiveDecision, AdaptiveReason, AdaptiveSample, AdaptiveStats,
};
// Thread Tranquilizer (003 ch. 3: `Builder::tranquilizer`) and ADAPT co-scheduling of
// several programs on one node (003 ch. 6: `Builder::co_schedule`).
pub use footprint_runtime::{node, tranquilizer};

/// Locks, barriers and condition variables that work on green threads and on OS threads alike
/// (re-exported from [`footprint_locks`]). Waiting is informed: a waiter hands its processor to
/// a higher-priority thread, spins while the holder runs, and parks when the wait is long.
///
/// ```
/// use footprint::sync::{Barrier, Mutex};
/// let counter = Mutex::new(0u64);
/// let barrier = Barrier::new(2);
/// std::thread::scope(|s| {
///     for _ in 0..2 {
///         s.spawn(|| {
///             *counter.lock() += 1;
///             barrier.wait();
///         });
///     }
/// });
/// assert_eq!(*counter.lock(), 2);
/// ```
#[cfg(not(loom))]
pub mod sync {
    pub use footprint_locks::{
        stats, ArrayMutex, Barrier, BarrierError, BarrierWaitResult, CentralBarrier, Condvar,
        DisseminationBarrier, Informed, LazyLock, MappedMutexGuard, MappedRwLockReadGuard,
        MappedRwLockWriteGuard, McsMutex, Mutex, MutexGuard, Once, OnceLock, OnceState,
        PriorityClass, RawLock, RawRwLock, RwLock, RwLockReadGuard, RwLockWriteGuard, Semaphore,
        SemaphorePermit, TicketMutex, TreeBarrier, WaitPolicy, WaitTimeoutResult,
    };

    /// The baseline lock variants that the experiments compare the informing locks with: the
    /// same algorithms with a scheduler-oblivious wait (`Spin*`:
    /// [`AlwaysSpin`](baseline::AlwaysSpin), spin until the lock is free) or one that parks at
    /// once (`Block*`: [`ImmediateBlock`](baseline::ImmediateBlock)), and [`TtasMutex`](baseline::TtasMutex), the
    /// default [`Mutex`]'s algorithm under its own name. A program picks [`Mutex`] (or a FIFO
    /// [`TicketMutex`], [`McsMutex`], [`ArrayMutex`]); these are for measuring what informed
    /// waiting is worth.
    ///
    /// ```
    /// use footprint::sync::baseline::SpinTtasMutex;
    /// let m = SpinTtasMutex::new(1u32);
    /// *m.lock() += 1;
    /// assert_eq!(*m.lock(), 2);
    /// ```
    pub mod baseline {
        pub use footprint_locks::{
            AlwaysSpin, BlockArrayMutex, BlockMcsMutex, BlockTicketMutex, BlockTtasMutex,
            ImmediateBlock, SpinArrayMutex, SpinMcsMutex, SpinTicketMutex, SpinTtasMutex,
            TtasMutex,
        };
    }
}

/// Starts the run-time profile sampler of `footprint-pmu` for this process (CPU utilisation,
/// context-switch and migration rates, LLC miss ratio where counters exist) with the lock-wait
/// time of every [`sync`] lock wired into its lock-time channel.
///
/// The sampler runs on its own thread until the returned handle is dropped or stopped.
///
/// ```
/// use std::time::Duration;
/// let config = footprint::pmu::SamplerConfig {
///     interval: Duration::from_millis(20),
///     ..Default::default()
/// };
/// let sampler = footprint::start_profile_sampler(config)?;
/// assert!(sampler.wait_for_intervals(2, Duration::from_secs(10)));
/// let p = sampler.latest().expect("an interval");
/// assert!(p.lock_time_fraction.is_some(), "lock time is wired");
/// # Ok::<(), footprint::pmu::PmuError>(())
/// ```
#[cfg(not(loom))]
pub fn start_profile_sampler(
    config: footprint_pmu::SamplerConfig,
) -> Result<footprint_pmu::BackgroundSampler, footprint_pmu::PmuError> {
    footprint_pmu::ProfileSampler::procfs(config, footprint_pmu::ThreadSelection::All)?
        .with_lock_time(footprint_locks::stats::process_lock_wait_ns)
        .start()
}
