//! footprint: green threads for HPC codes on a cache-affine work-stealing pool, with informing
//! locks and barriers.
//!
//! ```
//! let rt = footprint::Runtime::builder()
//!     .workers(4)                     // unset: one per core of the allowed CPU set; 0 is an error
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

pub use footprint_affinity as affinity;
pub use footprint_locks as locks;
pub use footprint_pmu as pmu;
pub use footprint_runtime as runtime;

pub use footprint_runtime::{
    block_in_place, join, scope, spawn, spawn_blocking, yield_now, Builder, Error, GreenBuilder,
    GreenLocal, JoinHandle, Runtime, Scope, ScopedJoinHandle,
};

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
pub mod sync {
    pub use footprint_locks::{
        ArrayMutex, Barrier, BarrierError, BarrierWaitResult, CentralBarrier, Condvar,
        DisseminationBarrier, McsMutex, Mutex, MutexGuard, TicketMutex, TreeBarrier, TtasMutex,
        WaitTimeoutResult,
    };
}
