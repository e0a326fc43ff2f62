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
//! footprint::sync::stats::set_enabled(true);
//! let m = footprint::sync::Mutex::new(0u32);
//! *m.lock() += 1;
//! let totals = footprint::sync::stats::process_totals();
//! assert!(totals.acquisitions >= 1);
//! ```

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// The process-wide counters of one OS thread. Only the owning thread writes them (a relaxed
/// load and store, no locked instruction: a contended lock's slow path must not bounce a shared
/// cache line between the cores); readers sum every thread's counters.
#[derive(Default)]
struct Counters {
    wait_ns: AtomicU64,
    hold_ns: AtomicU64,
    acquisitions: AtomicU64,
    contended: AtomicU64,
    barrier_wait_ns: AtomicU64,
    barrier_waits: AtomicU64,
}

impl Counters {
    fn totals(&self) -> ProcessLockTotals {
        ProcessLockTotals {
            wait_ns: self.wait_ns.load(Ordering::Relaxed),
            hold_ns: self.hold_ns.load(Ordering::Relaxed),
            acquisitions: self.acquisitions.load(Ordering::Relaxed),
            contended: self.contended.load(Ordering::Relaxed),
            barrier_wait_ns: self.barrier_wait_ns.load(Ordering::Relaxed),
            barrier_waits: self.barrier_waits.load(Ordering::Relaxed),
        }
    }
}

/// Adds `by` to a counter that only the calling thread writes.
#[inline]
fn bump(c: &AtomicU64, by: u64) {
    c.store(
        c.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

/// Every live thread's counters, and the sums of the threads that exited (`retired`, written
/// only under the registry's mutex).
struct Registry {
    live: Vec<Arc<Counters>>,
    retired: ProcessLockTotals,
}

fn registry() -> &'static Mutex<Registry> {
    static R: OnceLock<Mutex<Registry>> = OnceLock::new();
    R.get_or_init(|| {
        Mutex::new(Registry {
            live: Vec::new(),
            retired: ProcessLockTotals::default(),
        })
    })
}

fn lock_registry() -> std::sync::MutexGuard<'static, Registry> {
    // The registry holds plain sums; a panic elsewhere cannot leave it inconsistent.
    registry().lock().unwrap_or_else(|e| e.into_inner())
}

/// This thread's registration: registers on first use, folds its counts into `retired` when the
/// thread exits.
struct Mine(Arc<Counters>);

impl Mine {
    fn register() -> Mine {
        let c = Arc::new(Counters::default());
        lock_registry().live.push(c.clone());
        Mine(c)
    }
}

impl Drop for Mine {
    fn drop(&mut self) {
        let mut r = lock_registry();
        let t = self.0.totals();
        r.retired.add(&t);
        r.live.retain(|c| !Arc::ptr_eq(c, &self.0));
    }
}

std::thread_local! {
    static MINE: Mine = Mine::register();
}

/// Counters for threads whose thread-local storage is already gone (a lock used from another
/// thread-local's destructor): shared atomics.
static LATE: Counters = Counters {
    wait_ns: AtomicU64::new(0),
    hold_ns: AtomicU64::new(0),
    acquisitions: AtomicU64::new(0),
    contended: AtomicU64::new(0),
    barrier_wait_ns: AtomicU64::new(0),
    barrier_waits: AtomicU64::new(0),
};

/// Runs `f` on the calling thread's counters. Not inlined: a green thread may resume on another
/// OS thread, so the thread-local's address must not be kept across a park in the caller.
#[inline(never)]
fn with_mine(f: impl Fn(&Counters, fn(&AtomicU64, u64))) {
    if MINE.try_with(|m| f(&m.0, bump)).is_err() {
        f(&LATE, |c, by| {
            c.fetch_add(by, Ordering::Relaxed);
        });
    }
}

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
    process_totals().wait_ns
}

/// Total nanoseconds locks of this crate were held (counted only while [`enabled`]).
pub fn process_lock_hold_ns() -> u64 {
    process_totals().hold_ns
}

/// Total nanoseconds all threads spent waiting at barriers of this crate.
pub fn process_barrier_wait_ns() -> u64 {
    process_totals().barrier_wait_ns
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

impl ProcessLockTotals {
    fn add(&mut self, o: &ProcessLockTotals) {
        self.wait_ns = self.wait_ns.wrapping_add(o.wait_ns);
        self.hold_ns = self.hold_ns.wrapping_add(o.hold_ns);
        self.acquisitions = self.acquisitions.wrapping_add(o.acquisitions);
        self.contended = self.contended.wrapping_add(o.contended);
        self.barrier_wait_ns = self.barrier_wait_ns.wrapping_add(o.barrier_wait_ns);
        self.barrier_waits = self.barrier_waits.wrapping_add(o.barrier_waits);
    }
}

/// All process-wide totals: the sum over every thread that ever counted (a few hundred
/// nanoseconds per live thread; meant for samplers, not for hot paths).
pub fn process_totals() -> ProcessLockTotals {
    let r = lock_registry();
    let mut t = r.retired;
    for c in &r.live {
        t.add(&c.totals());
    }
    t.add(&LATE.totals());
    t
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

    /// Counts one contended acquisition that waited `ns`, from any thread (atomic adds).
    pub(crate) fn add_wait(&self, ns: u64) {
        self.wait_ns.fetch_add(ns, Ordering::Relaxed);
        self.contended.fetch_add(1, Ordering::Relaxed);
        add_process_wait(ns);
    }

    /// Like [`add_wait`](Self::add_wait), called by the lock's holder: the lock orders the
    /// holders' updates, so a relaxed load and store suffice (no locked instruction).
    pub(crate) fn holder_add_wait(&self, ns: u64) {
        bump(&self.wait_ns, ns);
        bump(&self.contended, 1);
        add_process_wait(ns);
    }

    /// Counts one hold of `ns` (called by the holder, see [`holder_add_wait`](Self::holder_add_wait)).
    pub(crate) fn add_hold(&self, ns: u64) {
        bump(&self.hold_ns, ns);
        bump(&self.acquisitions, 1);
        with_mine(|c, add| {
            add(&c.hold_ns, ns);
            add(&c.acquisitions, 1);
        });
    }
}

/// The process-wide side of a contended acquisition: this thread's counters and its wait sink
/// (see [`set_thread_wait_sink`]). Not inlined, like `with_mine`: thread-locals are read afresh.
#[inline(never)]
fn add_process_wait(ns: u64) {
    with_mine(|c, add| {
        add(&c.wait_ns, ns);
        add(&c.contended, 1);
    });
    if let Some(sink) = WAIT_SINK.with(Cell::get) {
        sink(ns);
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
/// let previous = footprint::sync::stats::set_thread_wait_sink(Some(sink));
/// assert!(previous.is_none());
/// footprint::sync::stats::set_thread_wait_sink(previous);
/// ```
pub fn set_thread_wait_sink(sink: Option<fn(u64)>) -> Option<fn(u64)> {
    WAIT_SINK.with(|s| s.replace(sink))
}

pub(crate) fn add_barrier_wait(ns: u64) {
    with_mine(|c, add| {
        add(&c.barrier_wait_ns, ns);
        add(&c.barrier_waits, 1);
    });
}

/// Nanoseconds that `pauses` pause instructions ([`std::hint::spin_loop`]) take on this machine.
/// The quick spin of a contended acquisition counts pauses instead of reading the clock (a clock
/// read costs 30-70 ns on this project's VM, a pause 33 ns); this converts. The pause is measured
/// once (256 pauses between two clock reads, ≈10 µs at the first call). 0 under loom.
pub(crate) fn pauses_to_ns(pauses: u32) -> u64 {
    if cfg!(loom) {
        return 0;
    }
    static PAUSE_PS: AtomicU64 = AtomicU64::new(0);
    let mut ps = PAUSE_PS.load(Ordering::Relaxed);
    if ps == 0 {
        ps = measure_pause_ps();
        PAUSE_PS.store(ps, Ordering::Relaxed);
    }
    pauses as u64 * ps / 1000
}

#[cold]
fn measure_pause_ps() -> u64 {
    const N: u64 = 256;
    // The least of three tries: a preemption inside one must not inflate every later estimate.
    let best = (0..3)
        .map(|_| {
            let t = std::time::Instant::now();
            for _ in 0..N {
                std::hint::spin_loop();
            }
            t.elapsed().as_nanos() as u64
        })
        .min()
        .unwrap_or(0);
    // Picoseconds per pause, at least 1 (so that 0 keeps meaning "not measured").
    (best * 1000 / N).max(1)
}
