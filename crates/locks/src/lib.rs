//! Informing locks, barriers and condition variables with priority classes (after
//! Antonopoulos, Nikolopoulos and Papatheodorou, 002), usable on plain OS threads and on the green
//! threads of `footprint-runtime`.
//!
//! # Algorithms
//! - Locks ([`raw`]): test-and-test-and-set with exponential backoff ([`RawTtasLock`]), ticket
//!   ([`RawTicketLock`]), MCS ([`RawMcsLock`]) and Anderson's array-based queue lock
//!   ([`RawArrayLock`]); each implements `lock_api::RawMutex`, so [`Mutex<T>`] and friends are
//!   `lock_api::Mutex` aliases with RAII guards.
//! - Barriers ([`barrier`]): central sense-reversing ("incremental"), MCS tree, dissemination.
//! - [`Condvar`], working with the guards of every mutex here.
//!
//! # Priority classes
//! Every informing waiter and holder publishes its [`PriorityClass`] through the
//! [`SchedulerHook`] of its thread: `Holder > ImmediateWaiter > Running > Waiter >
//! BarrierWaiter`, saved before each operation and restored after it (nesting works when locks
//! are released in reverse order of acquisition). The default TTAS mutex publishes only where
//! the class can be read: on a thread with a scheduler hook (a green thread), for a waiter that
//! parked, and for every holder once the lock is informing: a waiter went past its quick spin
//! while the lock's holds read as spanning switches (most of its timed holds outlasted half a
//! switch, or most green waiters that parked behind a hold saw it do so). A green holder stops
//! running only where it parks or yields, so a short hold's class tells the scheduler nothing,
//! and its bookkeeping lengthened every hand-over of a hot lock. Its uncontended lock and
//! unlock touch no class at all.
//!
//! # How waiting decides
//! Each primitive takes a [`WaitPolicy`] type parameter: [`Informed`] (default), [`AlwaysSpin`]
//! or [`ImmediateBlock`] (the two scheduler-oblivious baselines of 002). An informed waiter:
//! 1. hands its processor to a ready thread of a higher class, if the hook knows one;
//! 2. parks at once when the expected wait is long: Bellosa's rule, the mean of the lock's last
//!    8 hold times (times the waiter's distance from the head in FIFO locks) above half of the
//!    hook's `switch_cost_ns()`; on OS threads also when the kernel reports more runnable
//!    threads than CPUs ([`os::oversubscribed`]);
//! 3. otherwise spins with exponential backoff for about one switch cost, parking early if it
//!    was preempted while spinning (its involuntary context switches grew) or the machine became
//!    oversubscribed, and spinning longer only while the holder is seen running and not preempted.
//!
//! A contended green thread on the default TTAS mutex follows [`green_wait`]'s rule: on a
//! runtime of one or two workers it parks after a quick spin (a release wakes it onto the
//! releaser's worker, where the critical section's data is), on more it polls the lock while
//! the lock changes hands and parks only when it stops (a long hold, or a holder that does not
//! run).
//!
//! # Example
//! ```
//! use footprint::sync::{Barrier, Condvar, Mutex};
//! use std::sync::Arc;
//!
//! let counter = Arc::new(Mutex::new(0u64));
//! let barrier = Arc::new(Barrier::new(2));
//! let handles: Vec<_> = (0..2)
//!     .map(|_| {
//!         let (c, b) = (counter.clone(), barrier.clone());
//!         std::thread::spawn(move || {
//!             for _ in 0..1000 {
//!                 *c.lock() += 1;
//!             }
//!             b.wait().is_leader()
//!         })
//!     })
//!     .collect();
//! let leaders = handles.into_iter().filter(|_| true).map(|h| h.join().unwrap()).filter(|&l| l).count();
//! assert_eq!(leaders, 1);
//! assert_eq!(*counter.lock(), 2000);
//! let _cv = Condvar::new();
//! ```

pub mod barrier;
pub mod channel;
mod condvar;
pub mod green_wait;
mod handoff;
pub mod hook;
mod interface;
mod once;
pub mod os;
pub mod placement;
pub mod raw;
mod rwlock;
mod semaphore;
mod spin;
pub mod stats;
mod sync;
mod timed;
mod wait;

pub use barrier::{
    Barrier, BarrierError, BarrierWaitResult, CentralBarrier, DisseminationBarrier, TreeBarrier,
};
pub use condvar::{Condvar, WaitTimeoutResult};
pub use hook::{
    current_hook, install_hook, uninstall_hook, ClassCell, Placement, PriorityClass, RunState,
    SchedulerHook, ThreadTag, Unpark, Unparker, WaitOn,
};
pub use once::{LazyLock, Once, OnceLock, OnceState};
pub use raw::{RawArrayLock, RawLock, RawMcsLock, RawTicketLock, RawTtasLock};
pub use rwlock::RawRwLock;
pub use semaphore::{Semaphore, SemaphorePermit};
pub use wait::{AlwaysSpin, HeldToken, ImmediateBlock, Informed, WaitMode, WaitPolicy};

/// The raw lock behind [`Mutex`] (see the README for why this algorithm).
pub type DefaultRawLock = RawTtasLock<Informed>;

#[cfg(not(loom))]
mod aliases {
    use super::*;

    /// A mutex with the default algorithm ([`DefaultRawLock`]), informed waiting, RAII guard.
    ///
    /// ```
    /// let m = footprint::sync::Mutex::new(vec![1, 2]);
    /// m.lock().push(3);
    /// assert_eq!(m.lock().len(), 3);
    /// ```
    pub type Mutex<T> = lock_api::Mutex<DefaultRawLock, T>;
    /// Guard of [`Mutex`].
    pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, DefaultRawLock, T>;
    /// A [`MutexGuard`] narrowed to a part of the data (`MutexGuard::map`).
    pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, DefaultRawLock, T>;

    /// A reader-writer lock: many readers or one writer, writers not starved, waiters parked
    /// off their worker and informing like the mutexes (see [`RawRwLock`]).
    ///
    /// ```
    /// let lock = footprint::sync::RwLock::new(vec![1]);
    /// {
    ///     let (a, b) = (lock.read(), lock.read());
    ///     assert_eq!(a.len() + b.len(), 2);
    /// }
    /// lock.write().push(2);
    /// assert_eq!(*lock.read(), [1, 2]);
    /// ```
    pub type RwLock<T> = lock_api::RwLock<RawRwLock<Informed>, T>;
    /// Shared guard of [`RwLock`].
    pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock<Informed>, T>;
    /// Exclusive guard of [`RwLock`].
    pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock<Informed>, T>;
    /// A [`RwLockReadGuard`] narrowed to a part of the data.
    pub type MappedRwLockReadGuard<'a, T> =
        lock_api::MappedRwLockReadGuard<'a, RawRwLock<Informed>, T>;
    /// A [`RwLockWriteGuard`] narrowed to a part of the data.
    pub type MappedRwLockWriteGuard<'a, T> =
        lock_api::MappedRwLockWriteGuard<'a, RawRwLock<Informed>, T>;

    /// Informing TTAS mutex.
    pub type TtasMutex<T> = lock_api::Mutex<RawTtasLock<Informed>, T>;
    /// Informing ticket mutex (FIFO).
    pub type TicketMutex<T> = lock_api::Mutex<RawTicketLock<Informed>, T>;
    /// Informing MCS mutex (FIFO, local spinning).
    pub type McsMutex<T> = lock_api::Mutex<RawMcsLock<Informed>, T>;
    /// Informing array-based queue mutex (FIFO, 32 slots).
    pub type ArrayMutex<T> = lock_api::Mutex<RawArrayLock<Informed>, T>;

    /// Always-spin TTAS mutex (baseline).
    pub type SpinTtasMutex<T> = lock_api::Mutex<RawTtasLock<AlwaysSpin>, T>;
    /// Always-spin ticket mutex (baseline).
    pub type SpinTicketMutex<T> = lock_api::Mutex<RawTicketLock<AlwaysSpin>, T>;
    /// Always-spin MCS mutex (baseline).
    pub type SpinMcsMutex<T> = lock_api::Mutex<RawMcsLock<AlwaysSpin>, T>;
    /// Always-spin array mutex (baseline).
    pub type SpinArrayMutex<T> = lock_api::Mutex<RawArrayLock<AlwaysSpin>, T>;

    /// Immediate-block TTAS mutex (baseline).
    pub type BlockTtasMutex<T> = lock_api::Mutex<RawTtasLock<ImmediateBlock>, T>;
    /// Immediate-block ticket mutex (baseline).
    pub type BlockTicketMutex<T> = lock_api::Mutex<RawTicketLock<ImmediateBlock>, T>;
    /// Immediate-block MCS mutex (baseline).
    pub type BlockMcsMutex<T> = lock_api::Mutex<RawMcsLock<ImmediateBlock>, T>;
    /// Immediate-block array mutex (baseline).
    pub type BlockArrayMutex<T> = lock_api::Mutex<RawArrayLock<ImmediateBlock>, T>;
}
#[cfg(not(loom))]
pub use aliases::*;
