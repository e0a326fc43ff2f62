//! The small atomic state machines through which green threads hand things to each other: who
//! starts a never-started thread ([`claim`]), the park permit ([`ParkState`]), the join handle's
//! result slot ([`HandleState`]), a `join` half's completion ([`Latch`]) and a scope's count of
//! unfinished threads ([`ScopeCount`]).
//!
//! Each is one atomic and the transitions the runtime makes on it, written against
//! `crate::sync` so that the loom models in `tests/loom_*.rs` drive these same functions
//! (under `cfg(loom)` the atomics are loom's). The runtime calls them from `parking.rs`,
//! `worker/switch.rs` (`finish_park`), `handle.rs`, `task.rs` (`Task::complete`) and `join.rs`.

use crate::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// Lifecycle of a green thread: spawned, not started.
pub const LIFE_NEW: u8 = 0;
/// Claimed: its worker, or its joiner inline, runs it.
pub const LIFE_RUNNING: u8 = 1;
/// Finished.
pub const LIFE_DONE: u8 = 2;

/// Claims a never-started thread for running: its worker (`run_task`) and its joiner (running it
/// inline in `join_task`) both try, and exactly one wins; the loser's queue entry is stale.
#[inline]
pub fn claim(life: &AtomicU8) -> bool {
    life.load(Ordering::Relaxed) == LIFE_NEW
        && life
            .compare_exchange(LIFE_NEW, LIFE_RUNNING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
}

/// Park states: no permit, a permit, parked (its run reference leaked to the unparker).
pub const P_EMPTY: u8 = 0;
/// A permit is available: the next park returns at once.
pub const P_NOTIFIED: u8 = 1;
/// Parked off its worker: the unparker that moves it to [`P_EMPTY`] schedules it.
pub const P_PARKED: u8 = 2;

/// A green thread's park permit and parked flag.
///
/// The thread parks in two steps: on its own stack [`take_permit`](Self::take_permit) (a permit
/// there: do not suspend), else it suspends and its worker, back on its own stack, calls
/// [`publish_parked`](Self::publish_parked) (only then may an unparker resume it). An unparker
/// calls [`unpark`](Self::unpark).
pub struct ParkState(AtomicU8);

impl Default for ParkState {
    fn default() -> Self {
        ParkState::new()
    }
}

impl ParkState {
    /// No permit, not parked.
    pub fn new() -> ParkState {
        ParkState(AtomicU8::new(P_EMPTY))
    }

    /// Whether the thread is parked (published by its worker, not yet unparked); for reports.
    pub fn is_parked(&self) -> bool {
        self.0.load(Ordering::Relaxed) == P_PARKED
    }

    /// Back to no permit (a control block being reused; not yet published).
    #[inline]
    pub fn reset(&self) {
        self.0.store(P_EMPTY, Ordering::Relaxed);
    }

    /// The parking thread's first step: consumes a permit if one is there (then it must not
    /// suspend: it returns to re-check its condition).
    #[inline]
    pub fn take_permit(&self) -> bool {
        self.0
            .compare_exchange(P_NOTIFIED, P_EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// The worker's step after the thread suspended to park: publishes it as parked (`true`:
    /// from now on an unparker owns its resumption). `false`: a permit arrived between the park
    /// request and now; it is consumed here and the worker runs the thread again.
    ///
    /// The permit is consumed with an RMW (Acquire), which reads the latest permit write: the
    /// thread then sees what every unparker published, including one that refreshed the permit
    /// after the failed CAS (a plain store would not synchronise with it).
    #[inline]
    pub fn publish_parked(&self) -> bool {
        if self
            .0
            .compare_exchange(P_EMPTY, P_PARKED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return true;
        }
        self.0.swap(P_EMPTY, Ordering::Acquire);
        false
    }

    /// Makes a permit available; `true` when this call won `PARKED -> EMPTY`, which makes the
    /// caller the owner of the parked thread's run reference: it must schedule the thread.
    ///
    /// A permit already there is refreshed with an RMW (Release) rather than left alone: the
    /// parker that consumes the permit must also see what the unparker published before this
    /// call (a `join` half's latch, a handle's result). After a plain load that store may still
    /// be invisible to a parker that consumes the older permit right after the load: it
    /// re-checks its condition, finds it false and parks for good (a lost wake-up; store
    /// buffering, seen on x86 as a hung join).
    #[inline]
    pub fn unpark(&self) -> bool {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            let (from, to) = match s {
                P_NOTIFIED => (P_NOTIFIED, P_NOTIFIED),
                P_EMPTY => (P_EMPTY, P_NOTIFIED),
                _ => (P_PARKED, P_EMPTY),
            };
            match self
                .0
                .compare_exchange_weak(from, to, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return from == P_PARKED,
                Err(x) => s = x,
            }
        }
    }
}

/// `HandleState` bits: a join handle exists.
pub const H_HANDLE: u8 = 1;
/// The result is written.
pub const H_DONE: u8 = 2;
/// A joiner waits (its waiter cell is written).
pub const H_WAITER: u8 = 4;

/// Who owns a finished green thread's result: its join handle, or (detached) the finisher.
///
/// The finisher writes the result, then [`finish`](Self::finish); a joiner either sees
/// [`is_done`](Self::is_done) and takes the result, or writes its waiter cell and
/// [`register_waiter`](Self::register_waiter)s; dropping the handle is
/// [`detach`](Self::detach). Exactly one side drops the result: the joiner that takes it, or
/// whichever of the finisher and the detacher comes second.
pub struct HandleState(AtomicU8);

/// What [`HandleState::finish`] tells the finisher to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    /// No handle is left: the finisher drops the result.
    pub dispose: bool,
    /// A joiner registered a waiter: the finisher takes the waiter cell and wakes it.
    pub wake: bool,
}

impl Default for HandleState {
    fn default() -> Self {
        HandleState::new(false)
    }
}

impl HandleState {
    /// Not finished; with or without a join handle.
    pub fn new(with_handle: bool) -> HandleState {
        HandleState(AtomicU8::new(if with_handle { H_HANDLE } else { 0 }))
    }

    /// Resets a control block being reused (not yet published).
    #[inline]
    pub fn reset(&self, with_handle: bool) {
        self.0
            .store(if with_handle { H_HANDLE } else { 0 }, Ordering::Relaxed);
    }

    /// Whether the result is written (Acquire: it may be read then).
    #[inline]
    pub fn is_done(&self) -> bool {
        self.0.load(Ordering::Acquire) & H_DONE != 0
    }

    /// The finisher, after writing the result: publishes it.
    #[inline]
    pub fn finish(&self) -> Finished {
        let prev = self.0.fetch_or(H_DONE, Ordering::AcqRel);
        Finished {
            dispose: prev & H_HANDLE == 0,
            wake: prev & H_WAITER != 0,
        }
    }

    /// The joiner, after writing its waiter cell: `true` if it must wait (park until
    /// [`is_done`](Self::is_done)); `false` if the thread finished meanwhile, in which case the
    /// finisher saw no waiter and the cell is still the joiner's to clear.
    #[inline]
    pub fn register_waiter(&self) -> bool {
        self.0.fetch_or(H_WAITER, Ordering::AcqRel) & H_DONE == 0
    }

    /// The joiner, after taking the result: the handle is gone and the block may be reused.
    #[inline]
    pub fn release(&self) {
        self.0.store(0, Ordering::Release);
    }

    /// Dropping the handle: `true` if the thread had finished, in which case the finisher left
    /// the result to the caller, which drops it.
    #[inline]
    pub fn detach(&self) -> bool {
        self.0.fetch_and(!H_HANDLE, Ordering::AcqRel) & H_DONE != 0
    }
}

/// The completion flag of a stolen `join` half: set once by the thief after it wrote the
/// result, probed by the owner (which parks between probes).
pub struct Latch(AtomicBool);

impl Default for Latch {
    fn default() -> Self {
        Latch::new()
    }
}

impl Latch {
    /// Not set.
    pub fn new() -> Latch {
        Latch(AtomicBool::new(false))
    }

    /// Sets it (Release: the result written before is visible to whoever sees it set). After
    /// this the setter must not touch the memory the latch lives in.
    #[inline]
    pub fn set(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether it is set (Acquire).
    #[inline]
    pub fn probe(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// A scope's count of spawned, unfinished green threads: the scope's owner waits (parking)
/// until it is zero; the thread whose [`done`](Self::done) brings it to zero wakes the owner.
pub struct ScopeCount(AtomicUsize);

impl Default for ScopeCount {
    fn default() -> Self {
        ScopeCount::new()
    }
}

impl ScopeCount {
    /// Nothing spawned.
    pub fn new() -> ScopeCount {
        ScopeCount(AtomicUsize::new(0))
    }

    /// Counts a spawn (before the thread is published, by a thread the scope waits for or by
    /// its owner, so the count cannot reach zero meanwhile).
    #[inline]
    pub fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a finish; `true` for the last one, whose caller wakes the owner.
    #[inline]
    pub fn done(&self) -> bool {
        self.0.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Whether every counted thread has finished (Acquire: their writes are visible).
    #[inline]
    pub fn is_zero(&self) -> bool {
        self.0.load(Ordering::Acquire) == 0
    }
}
