//! How a thread waits: the three waiting policies, the per-object queue of parked threads
//! ([`queue`]), the hold-time history of Bellosa's two-phase rule, the class bookkeeping of an
//! acquisition, and the informed spin-or-park decision ([`informed`]).

use crate::hook::{
    current_class_cell, current_hook, scheduler_class_cell, ClassCell, PriorityClass, ThreadTag,
};
use crate::stats::{self, LockTimes};
use crate::sync::{spin_hint, Ordering, SpinBackoff};
use std::ptr;
use std::sync::atomic::AtomicU32 as StdAtomicU32;

pub(crate) mod history;
mod informed;
mod queue;

#[cfg(not(loom))]
pub(crate) use history::LONG_HOLD_FLOOR_NS;
pub(crate) use history::{sample_this_hold, HoldHistory};
pub(crate) use informed::{
    green_may_spin, poll_while_changing_hands, quick_spin, spin_budget_ns, wait_until,
    wait_until_woken, yield_phase, Awaited, WaitFor, MAX_BACKOFF_SHIFT,
};
pub(crate) use queue::{Enqueued, WaitNode, WaitQueue};

mod sealed {
    pub trait Sealed {}
}

/// How a waiting thread waits. Chosen by type: every lock and barrier takes one as a type
/// parameter (default [`Informed`]).
pub trait WaitPolicy: sealed::Sealed + Send + Sync + 'static {
    /// The mode.
    const MODE: WaitMode;
}

/// The waiting mode of a [`WaitPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Publishes priority classes and decides between handing off, spinning and parking from
    /// what the scheduler (the hook) and the kernel tell.
    Informed,
    /// Spins with exponential backoff; never parks, publishes nothing (the "active spinning"
    /// baseline of 002).
    Spin,
    /// Parks as soon as it cannot proceed; publishes nothing (the "immediate blocking" baseline).
    Block,
}

/// Informed waiting (the default): see the crate docs, "How waiting decides".
#[derive(Clone, Copy, Debug, Default)]
pub struct Informed;
/// Always spin (scheduler-oblivious baseline). The waiter never parks. On a green thread it
/// still hands its worker to the other green threads every few microseconds of spinning: green
/// threads are not preempted, so a pure spin could wait forever for a holder queued on its own
/// worker.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysSpin;
/// Block at once (scheduler-oblivious baseline).
#[derive(Clone, Copy, Debug, Default)]
pub struct ImmediateBlock;

impl sealed::Sealed for Informed {}
impl sealed::Sealed for AlwaysSpin {}
impl sealed::Sealed for ImmediateBlock {}
impl WaitPolicy for Informed {
    const MODE: WaitMode = WaitMode::Informed;
}
impl WaitPolicy for AlwaysSpin {
    const MODE: WaitMode = WaitMode::Spin;
}
impl WaitPolicy for ImmediateBlock {
    const MODE: WaitMode = WaitMode::Block;
}

// ---------------------------------------------------------------------------------------------
// The per-lock metadata.

/// What every lock carries besides its algorithm's words. `repr(C)`, hot fields first: a lock
/// whose word precedes its meta (the TTAS lock) finds the counters a contended acquisition
/// updates and the queue's count that every release reads in the first 64 bytes, on the cache
/// line its word is on; the hold-time history (touched once in `SAMPLE_EVERY` acquisitions)
/// follows.
#[repr(C)]
pub(crate) struct LockMeta {
    pub(crate) times: LockTimes,
    pub(crate) queue: WaitQueue,
    pub(crate) history: HoldHistory,
    /// OS thread id of the holder (informing locks only; 0 when unknown).
    pub(crate) holder_tid: std::sync::atomic::AtomicI32,
    /// The tag of the last holder that published a class (a green thread on an informing
    /// lock; 0: none yet): whom a waiter asks the scheduler about
    /// ([`SchedulerHook::run_state`](crate::SchedulerHook::run_state)). Advisory (a plain `std`
    /// atomic also under loom): a stale value costs a waiter at most a short spin or an early
    /// park. (The TTAS lock keeps its holder's tag beside its word instead.)
    pub(crate) holder: StdAtomicU32,
    /// 1 while a green waiter yields its worker in the lock's yield phase (`yield_phase`): the
    /// lock's other green waiters park instead of yielding too. Advisory (a plain `std` atomic
    /// also under loom) and off the word's cache line: a waiter writes it twice per wait, never
    /// per look.
    pub(crate) yielder: StdAtomicU32,
}

impl LockMeta {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> LockMeta {
        LockMeta {
            queue: WaitQueue::new(),
            history: HoldHistory::new(),
            times: LockTimes::new(),
            holder_tid: std::sync::atomic::AtomicI32::new(0),
            holder: StdAtomicU32::new(0),
            yielder: StdAtomicU32::new(0),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> LockMeta {
        LockMeta {
            queue: WaitQueue::new(),
            history: HoldHistory::default(),
            times: LockTimes::new(),
            holder_tid: std::sync::atomic::AtomicI32::new(0),
            holder: StdAtomicU32::new(0),
            yielder: StdAtomicU32::new(0),
        }
    }
}

impl LockMeta {
    /// Who a waiter on this lock waits for: its last recorded holder.
    #[inline]
    pub(crate) fn awaited(&self) -> Awaited {
        awaited_in(&self.holder)
    }
}

/// Who a waiter waits for, from a holder slot ([`LockMeta::holder`] or a lock's own).
#[inline]
pub(crate) fn awaited_in(slot: &StdAtomicU32) -> Awaited {
    Awaited::Holder(ThreadTag::from_bits(slot.load(Ordering::Relaxed)))
}

/// Key under which threads wait at a FIFO lock's door while the machine is oversubscribed.
pub(crate) const CROWD_KEY: usize = usize::MAX - 1;

impl LockMeta {
    /// The door in front of an informing FIFO lock (a Malthusian cull, after Dice 2017): while
    /// the kernel reports more runnable threads than CPUs, an arriving OS thread does not queue:
    /// it takes the lock only from free (`try_enter()`, the lock's compare-and-swap from "free"),
    /// looks for a while when it finds the lock taken (`crowded()`), and then parks here; each
    /// release that leaves the lock free lets one in. Without the kernel support of 002, a FIFO
    /// queue on an oversubscribed machine hands the lock from one preempted waiter to the next
    /// (each hand-off waits for a time slice: measured here, ≈10⁻⁴ of a pthread mutex's
    /// throughput); with the door the queue stays empty and the lock behaves like a parking
    /// mutex that lets running threads in first. FIFO order holds again as soon as the machine
    /// is not oversubscribed.
    ///
    /// Returns `Some(ns)` when the thread took the lock at the door (`ns` spent there), `None`
    /// when it is to queue: the machine is not oversubscribed (any more), the lock's policy is
    /// not informed, or the thread is a green thread (the runtime schedules those).
    ///
    /// Why the door takes the lock itself rather than letting the thread queue once it sees the
    /// lock free: every thread looking at the door saw the lock free at
    /// the same release and took a ticket; all but one found themselves queued behind it, parked
    /// (an oversubscribed waiter that is not next in line parks at once), and the lock stayed
    /// taken until each was woken and ran, long enough that the next arrivals' looks ran out
    /// and they parked too. On 8 OS threads on 2 CPUs the array lock queued 3.9 % of its
    /// acquisitions and parked 5.7 % at the door, the ticket lock 0.3 % and 0.08 %.
    #[inline]
    pub(crate) fn crowd_door<W: WaitPolicy>(
        &self,
        try_enter: &dyn Fn() -> bool,
        crowded: &dyn Fn() -> bool,
    ) -> Option<u64> {
        if W::MODE != WaitMode::Informed || !crate::os::oversubscribed_hint() {
            return None;
        }
        if try_enter() {
            return Some(0);
        }
        self.crowd_wait(try_enter, crowded)
    }

    #[cold]
    fn crowd_wait(&self, try_enter: &dyn Fn() -> bool, crowded: &dyn Fn() -> bool) -> Option<u64> {
        let hook = current_hook();
        if hook.is_green() {
            // Green threads park off their worker anyway; the runtime schedules them.
            return None;
        }
        let start = stats::now_ns();
        let took = || Some(stats::now_ns().saturating_sub(start));
        // A short critical section ends while we look: poll a little before paying a park and
        // a wake-up, as a futex mutex does (10 backoff rounds, 319 pauses: ≈10 µs where a pause
        // takes 33 ns; 5 rounds, ≈1 µs, measured no different on 8 threads on 2 CPUs).
        // Under the model: one look, then the door (so that loom checks the park and the
        // admission, which a spin that yields to the holder would always avoid).
        let rounds = if cfg!(loom) { 1 } else { 10u32 };
        let mut backoff = SpinBackoff::new(MAX_BACKOFF_SHIFT);
        for _ in 0..rounds {
            backoff.pause();
            if !crowded() && try_enter() {
                return took();
            }
        }
        while crate::os::oversubscribed() {
            if !crowded() {
                if try_enter() {
                    return took();
                }
                // Another thread took it between the look and the compare-and-swap.
                spin_hint();
                continue;
            }
            self.queue.park_once(
                hook,
                CROWD_KEY,
                &mut || crowded() && crate::os::oversubscribed_hint(),
                None,
            );
        }
        None
    }

    /// After a release: lets one thread in from the door (each release admits one, and a thread
    /// parks at the door only while at least two releases are still to come).
    #[inline]
    pub(crate) fn admit_one(&self) {
        if self.queue.has_waiters() {
            self.queue.notify(1, &|k| k == CROWD_KEY);
        }
    }

    /// A FIFO lock's release in one pass over the queue: wakes every thread whose key
    /// `matches` (the new holder, the new next-in-line, an array lock's door) and, where
    /// `admit()` says the release left the lock free, one thread from the crowd door
    /// ([`admit_one`](Self::admit_one)). One guard section instead of one per key: on 8 threads
    /// on 2 CPUs the crowd door keeps threads parked, so a release finds waiters nearly every
    /// time.
    ///
    /// A release that hands the lock to a queued successor admits nobody: the lock stays
    /// taken, and the admitted thread would find it so and park again (an
    /// array lock's release woke a door thread at every hand-over, 51 K futex parks in 3 s
    /// where the ticket lock made 3 K). The crowd's wake-up is not lost: the successor's own
    /// release (or the last one of the chain) leaves the lock free and admits. `admit` is
    /// called only when the queue has waiters.
    #[inline]
    pub(crate) fn notify_released(
        &self,
        matches: &dyn Fn(usize) -> bool,
        admit: impl FnOnce() -> bool,
    ) {
        if self.queue.has_waiters() {
            let admits_left = std::cell::Cell::new(admit());
            self.queue.notify(usize::MAX, &|k| {
                matches(k) || (k == CROWD_KEY && admits_left.replace(false))
            });
        }
    }
}

/// What a lock acquisition remembers until its release (the `lock_api` guard state): the class
/// to restore, the class cell to restore it in, and when the hold started.
///
/// Two words, so that it is returned in registers: the class cell (null when the acquisition
/// published no class) and a stamp holding when the hold started (nanoseconds, 0 when the hold
/// is not timed) above 3 bits of the class to restore.
pub struct HeldToken {
    cell: *const ClassCell,
    stamp: u64,
}

/// Low bits of [`HeldToken`]'s stamp that hold the saved class (5 classes fit in 3 bits).
const CLASS_BITS: u32 = 3;
/// The stamp's bit above the class: the lock's own mark ([`HeldToken::with_lock_mark`]).
const LOCK_MARK: u64 = 1 << CLASS_BITS;
/// Where the start time begins in the stamp (it overflows after 36 years of process time).
const TIME_SHIFT: u32 = CLASS_BITS + 1;

// SAFETY: a shared reference to a token gives no access to anything (its fields are private and
// only read by `releasing`/`released`, which take it by value or from its owner). It is
// deliberately not `Send`: the class it restores belongs to the thread that locked.
unsafe impl Sync for HeldToken {}

impl std::fmt::Debug for HeldToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldToken")
            .field("saved", &self.saved())
            .field("since_ns", &self.since_ns())
            .finish_non_exhaustive()
    }
}

/// The class bookkeeping of one synchronisation operation (save, publish, restore).
pub(crate) struct ClassScope {
    pub(crate) cell: *const ClassCell,
    pub(crate) saved: PriorityClass,
}

impl ClassScope {
    /// [`enter`](Self::enter) where a scheduler can read the class: a thread with a scheduler hook
    /// installed (a green thread, or a test's hook). On a plain OS thread the kernel schedules
    /// and no other thread reads its class, so the scope publishes nothing there.
    #[inline]
    pub(crate) fn enter_for_scheduler<W: WaitPolicy>() -> ClassScope {
        let cell = if W::MODE == WaitMode::Informed {
            scheduler_class_cell()
        } else {
            ptr::null()
        };
        // SAFETY: the hook contract keeps the cell valid while this thread lives.
        let saved = unsafe { cell.as_ref() }.map_or(PriorityClass::Running, ClassCell::get);
        ClassScope { cell, saved }
    }

    /// A scope that publishes nothing and restores nothing (a thread whose class nobody reads).
    #[inline]
    pub(crate) const fn unpublished() -> ClassScope {
        ClassScope {
            cell: ptr::null(),
            saved: PriorityClass::Running,
        }
    }

    /// Saves the current class (informing mode only; a no-op scope otherwise).
    #[inline]
    pub(crate) fn enter<W: WaitPolicy>() -> ClassScope {
        if W::MODE == WaitMode::Informed {
            let cell = current_class_cell();
            // SAFETY: the hook contract keeps the cell valid while this thread lives.
            let saved = unsafe { (*cell).get() };
            ClassScope { cell, saved }
        } else {
            ClassScope {
                cell: ptr::null(),
                saved: PriorityClass::Running,
            }
        }
    }

    #[inline]
    pub(crate) fn cell(&self) -> Option<&ClassCell> {
        // SAFETY: the cell outlives the operation (hook contract); null when not informing.
        unsafe { self.cell.as_ref() }
    }

    /// Publishes `class` (informing mode only).
    #[inline]
    pub(crate) fn publish(&self, class: PriorityClass) {
        if let Some(c) = self.cell() {
            c.set(class);
        }
    }

    /// Publishes `Holder` and turns the scope into the guard state of the acquisition.
    #[inline]
    pub(crate) fn into_held(self, meta: &LockMeta) -> HeldToken {
        let sample = meta.history.sample_this();
        let informing = !self.cell.is_null();
        self.into_held_sampled(meta, &meta.holder, sample, informing)
    }

    /// The guard state of an acquisition that is neither timed nor counted (the uncontended
    /// fast path): publishes `Holder`, reads no clock.
    #[inline(always)]
    pub(crate) fn into_held_untimed(self) -> HeldToken {
        self.publish(PriorityClass::Holder);
        HeldToken::new(self.cell, self.saved, 0)
    }

    /// [`into_held`](Self::into_held) for a lock that decides itself whether this hold is timed
    /// for the hold-time history (`sample`), e.g. from a counter in its lock word.
    /// `informing`: the lock waits informed, so its waiters look at the holder's thread (its id
    /// is stored on a timed hold).
    #[inline]
    pub(crate) fn into_held_sampled(
        self,
        meta: &LockMeta,
        holder: &StdAtomicU32,
        sample: bool,
        informing: bool,
    ) -> HeldToken {
        self.publish(PriorityClass::Holder);
        if informing && !self.cell.is_null() {
            // The holder's tag for the waiters' question "does it run?" (`holder`: a slot on a
            // line this thread has just written, where the lock keeps it there).
            holder.store(ThreadTag::of(self.cell).to_bits(), Ordering::Relaxed);
        }
        let since_ns = if sample || stats::enabled() {
            stats::now_ns()
        } else {
            0
        };
        if since_ns != 0 && informing {
            // Only once the lock has been contended: waiters look at the holder then.
            meta.holder_tid
                .store(crate::os::current_tid(), Ordering::Relaxed);
        }
        HeldToken::new(self.cell, self.saved, since_ns)
    }

    /// Restores the saved class.
    #[inline]
    pub(crate) fn restore(self) {
        self.publish(self.saved);
    }
}

impl HeldToken {
    /// The guard state of an acquisition that published no class and times nothing (an
    /// informing lock that was never contended: no thread reads its holder's class): the
    /// release restores nothing.
    #[inline(always)]
    pub(crate) const fn unpublished() -> HeldToken {
        HeldToken {
            cell: ptr::null(),
            stamp: 0,
        }
    }

    #[inline(always)]
    fn new(cell: *const ClassCell, saved: PriorityClass, since_ns: u64) -> HeldToken {
        HeldToken {
            cell,
            stamp: (since_ns << TIME_SHIFT) | saved.as_u8() as u64,
        }
    }

    /// Whether the release has nothing to do besides the algorithm's own (no class to restore,
    /// no hold to time): one `or` and one branch on the two words, so that an uncontended
    /// release tests the token once.
    #[inline(always)]
    pub(crate) fn is_bare(&self) -> bool {
        (self.cell as usize as u64 | self.stamp) == 0
    }

    /// When the hold started (0: not timed).
    #[inline(always)]
    fn since_ns(&self) -> u64 {
        self.stamp >> TIME_SHIFT
    }

    /// The token with one bit of the lock's own set, for its release to read instead of the
    /// lock's word (the TTAS lock: "the word had `INFORMING` when this hold began", which stays
    /// set for good). Only on a token that has a class to restore or a hold to time: a bare
    /// token stays bare.
    #[inline(always)]
    pub(crate) fn with_lock_mark(mut self) -> HeldToken {
        if !self.is_bare() {
            self.stamp |= LOCK_MARK;
        }
        self
    }

    /// Whether [`with_lock_mark`](Self::with_lock_mark) set the lock's bit.
    #[inline(always)]
    pub(crate) fn lock_mark(&self) -> bool {
        self.stamp & LOCK_MARK != 0
    }

    /// The class to restore at the release.
    #[inline(always)]
    fn saved(&self) -> PriorityClass {
        PriorityClass::from_u8((self.stamp & ((1 << CLASS_BITS) - 1)) as u8)
    }

    /// Bookkeeping of a release, before the algorithm hands the lock on: records the hold time.
    #[inline(always)]
    pub(crate) fn releasing(&self, meta: &LockMeta) {
        if self.since_ns() != 0 {
            self.record_hold(meta);
        }
    }

    /// The timed part of [`releasing`](Self::releasing), out of line (one hold in
    /// `SAMPLE_EVERY`, or every hold while statistics are on).
    #[cold]
    #[inline(never)]
    fn record_hold(&self, meta: &LockMeta) {
        let held = stats::now_ns().saturating_sub(self.since_ns());
        meta.history.record(held);
        if stats::enabled() {
            meta.times.add_hold(held);
        }
    }

    /// After the hand-off: restores the class saved at acquisition.
    #[inline]
    pub(crate) fn released(self) {
        // SAFETY: the cell outlives the thread's operations (hook contract); null when not informing.
        if let Some(c) = unsafe { self.cell.as_ref() } {
            c.set(self.saved());
        }
    }
}
