//! Lock time: how long threads waited for and held locks, per lock and for the whole process.
//!
//! - **Wait time** is always counted, on the slow path only (a thread that acquires at once costs
//!   nothing): per lock in [`LockTimes`] and process-wide in [`process_lock_wait_ns`].
//! - **Hold time** needs a timestamp at every acquisition, so it is counted only while
//!   [`set_enabled`]`(true)` is in force (one relaxed load per acquisition when off).
//! - Barrier waits are counted separately ([`process_barrier_wait_ns`]).
//!
//! The PMU crate's sampler reads the process-wide totals for its lock-time channel (the facade
//! wires them; `footprint-pmu` and `footprint-locks` do not depend on each other).
//!
//! ```
//! footprint_locks::stats::set_enabled(true);
//! let m = footprint_locks::Mutex::new(0u32);
//! *m.lock() += 1;
//! let totals = footprint_locks::stats::process_totals();
//! assert!(totals.acquisitions >= 1);
//! ```

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);
static WAIT_NS: AtomicU64 = AtomicU64::new(0);
static HOLD_NS: AtomicU64 = AtomicU64::new(0);
static ACQUISITIONS: AtomicU64 = AtomicU64::new(0);
static CONTENDED: AtomicU64 = AtomicU64::new(0);
static BARRIER_WAIT_NS: AtomicU64 = AtomicU64::new(0);
static BARRIER_EPISODES: AtomicU64 = AtomicU64::new(0);

/// Turns hold-time and acquisition counting on or off for every lock of the process.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether hold times and acquisitions are being counted.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Total nanoseconds all threads of the process spent waiting to acquire a lock of this crate.
pub fn process_lock_wait_ns() -> u64 {
    WAIT_NS.load(Ordering::Relaxed)
}

/// Total nanoseconds locks of this crate were held (counted only while [`enabled`]).
pub fn process_lock_hold_ns() -> u64 {
    HOLD_NS.load(Ordering::Relaxed)
}

/// Total nanoseconds all threads spent waiting at barriers of this crate.
pub fn process_barrier_wait_ns() -> u64 {
    BARRIER_WAIT_NS.load(Ordering::Relaxed)
}

/// Process-wide totals, read with one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessLockTotals {
    /// Nanoseconds spent waiting for locks (always counted).
    pub wait_ns: u64,
    /// Nanoseconds locks were held (only while [`enabled`]).
    pub hold_ns: u64,
    /// Acquisitions (only while [`enabled`]).
    pub acquisitions: u64,
    /// Acquisitions that had to wait (always counted).
    pub contended: u64,
    /// Nanoseconds spent waiting at barriers.
    pub barrier_wait_ns: u64,
    /// Barrier waits that blocked or spun (always counted).
    pub barrier_waits: u64,
}

/// All process-wide totals.
pub fn process_totals() -> ProcessLockTotals {
    ProcessLockTotals {
        wait_ns: WAIT_NS.load(Ordering::Relaxed),
        hold_ns: HOLD_NS.load(Ordering::Relaxed),
        acquisitions: ACQUISITIONS.load(Ordering::Relaxed),
        contended: CONTENDED.load(Ordering::Relaxed),
        barrier_wait_ns: BARRIER_WAIT_NS.load(Ordering::Relaxed),
        barrier_waits: BARRIER_EPISODES.load(Ordering::Relaxed),
    }
}

/// Nanoseconds since the first call in this process (monotonic). Under loom: always 0, so that
/// the models stay deterministic.
#[inline]
pub(crate) fn now_ns() -> u64 {
    #[cfg(loom)]
    {
        0
    }
    #[cfg(not(loom))]
    {
        static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let base = *BASE.get_or_init(std::time::Instant::now);
        // Saturates after 584 years.
        base.elapsed().as_nanos() as u64 + 1
    }
}

/// Per-lock counters. Wait time and contended acquisitions are always counted; hold time and
/// acquisitions only while [`enabled`].
#[derive(Default, Debug)]
pub struct LockTimes {
    wait_ns: AtomicU64,
    hold_ns: AtomicU64,
    acquisitions: AtomicU64,
    contended: AtomicU64,
}

/// A copy of a lock's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockTimesSnapshot {
    /// Nanoseconds threads spent waiting to acquire this lock.
    pub wait_ns: u64,
    /// Nanoseconds this lock was held (only while [`enabled`]).
    pub hold_ns: u64,
    /// Acquisitions (only while [`enabled`]).
    pub acquisitions: u64,
    /// Acquisitions that had to wait.
    pub contended: u64,
}

impl LockTimes {
    /// Zeroed counters.
    pub const fn new() -> LockTimes {
        LockTimes {
            wait_ns: AtomicU64::new(0),
            hold_ns: AtomicU64::new(0),
            acquisitions: AtomicU64::new(0),
            contended: AtomicU64::new(0),
        }
    }

    /// The counters now.
    pub fn snapshot(&self) -> LockTimesSnapshot {
        LockTimesSnapshot {
            wait_ns: self.wait_ns.load(Ordering::Relaxed),
            hold_ns: self.hold_ns.load(Ordering::Relaxed),
            acquisitions: self.acquisitions.load(Ordering::Relaxed),
            contended: self.contended.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn add_wait(&self, ns: u64) {
        self.wait_ns.fetch_add(ns, Ordering::Relaxed);
        self.contended.fetch_add(1, Ordering::Relaxed);
        WAIT_NS.fetch_add(ns, Ordering::Relaxed);
        CONTENDED.fetch_add(1, Ordering::Relaxed);
        if let Some(sink) = WAIT_SINK.with(Cell::get) {
            sink(ns);
        }
    }

    pub(crate) fn add_hold(&self, ns: u64) {
        self.hold_ns.fetch_add(ns, Ordering::Relaxed);
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
        HOLD_NS.fetch_add(ns, Ordering::Relaxed);
        ACQUISITIONS.fetch_add(1, Ordering::Relaxed);
    }
}

thread_local! {
    static WAIT_SINK: Cell<Option<fn(u64)>> = const { Cell::new(None) };
}

/// Installs `sink` on the calling OS thread: every lock wait that ends on this thread (a contended
/// acquisition, counted as above) is also reported to it, in nanoseconds. A scheduler uses it to
/// attribute lock-wait time to the green thread running at that moment (the runtime installs
/// one on each worker). Returns the sink it replaces; `None` removes it. Called only on the
/// contended path: an uncontended acquisition costs nothing more.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// static WAITED: AtomicU64 = AtomicU64::new(0);
/// fn sink(ns: u64) {
///     WAITED.fetch_add(ns, Ordering::Relaxed);
/// }
/// let previous = footprint_locks::stats::set_thread_wait_sink(Some(sink));
/// assert!(previous.is_none());
/// footprint_locks::stats::set_thread_wait_sink(previous);
/// ```
pub fn set_thread_wait_sink(sink: Option<fn(u64)>) -> Option<fn(u64)> {
    WAIT_SINK.with(|s| s.replace(sink))
}

pub(crate) fn add_barrier_wait(ns: u64) {
    BARRIER_WAIT_NS.fetch_add(ns, Ordering::Relaxed);
    BARRIER_EPISODES.fetch_add(1, Ordering::Relaxed);
}
