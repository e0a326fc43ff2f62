//! The scheduler hook's interface: the [`SchedulerHook`] trait and the values a lock and its
//! scheduler exchange through it ([`PriorityClass`], [`ClassCell`], [`Placement`],
//! [`RunState`], [`ThreadTag`], [`Unpark`], [`Unparker`]). Public as [`crate::hook`] (which adds the per-thread installation); the OS-thread
//! implementation in [`crate::os`] builds on this module alone.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Priority classes of 002 §4, from lowest to highest. `Holder > ImmediateWaiter > Running >
/// Waiter > BarrierWaiter`.
///
/// Rules: (a) a holder is never descheduled in favour of another thread of the application;
/// (b) a waiter never runs at the expense of a thread that is not synchronising, except the waiter
/// that a FIFO lock grants the lock to next (`ImmediateWaiter`); (c) a thread that reached a
/// barrier is below everyone.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum PriorityClass {
    /// Arrived at a barrier and waits for the others.
    BarrierWaiter = 0,
    /// Waits for a lock that is held by someone else.
    Waiter = 1,
    /// Not synchronising: the basic class.
    #[default]
    Running = 2,
    /// Next in line for a FIFO lock: the lock is (about to be) handed to it.
    ImmediateWaiter = 3,
    /// Holds a lock.
    Holder = 4,
}

impl PriorityClass {
    /// All classes, lowest first.
    pub const ALL: [PriorityClass; 5] = [
        PriorityClass::BarrierWaiter,
        PriorityClass::Waiter,
        PriorityClass::Running,
        PriorityClass::ImmediateWaiter,
        PriorityClass::Holder,
    ];

    /// The class encoded as `u8` (as stored in a [`ClassCell`]).
    #[inline]
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// Decodes a value stored in a [`ClassCell`]; values above 4 saturate to `Holder`.
    #[inline]
    pub const fn from_u8(v: u8) -> PriorityClass {
        match v {
            0 => PriorityClass::BarrierWaiter,
            1 => PriorityClass::Waiter,
            2 => PriorityClass::Running,
            3 => PriorityClass::ImmediateWaiter,
            _ => PriorityClass::Holder,
        }
    }
}

/// The published priority class of one thread. Readable by every thread; updated by its owner
/// with plain stores, and by another thread (a lock releaser promoting its successor) with
/// [`ClassCell::compare_exchange`] — the single atomic update of 002.
#[repr(transparent)]
#[derive(Default)]
pub struct ClassCell(AtomicU8);

impl ClassCell {
    /// A cell holding `class`.
    pub const fn new(class: PriorityClass) -> ClassCell {
        ClassCell(AtomicU8::new(class as u8))
    }

    /// The class published now.
    #[inline]
    pub fn get(&self) -> PriorityClass {
        PriorityClass::from_u8(self.0.load(Ordering::Acquire))
    }

    /// Publishes `class` and returns the class it replaces.
    #[inline]
    pub fn replace(&self, class: PriorityClass) -> PriorityClass {
        PriorityClass::from_u8(self.0.swap(class as u8, Ordering::AcqRel))
    }

    /// Publishes `class`.
    #[inline]
    pub fn set(&self, class: PriorityClass) {
        self.0.store(class as u8, Ordering::Release)
    }

    /// Replaces `current` by `new` in one atomic step; `Err(actual)` when the cell held something
    /// else.
    #[inline]
    pub fn compare_exchange(
        &self,
        current: PriorityClass,
        new: PriorityClass,
    ) -> Result<PriorityClass, PriorityClass> {
        self.0
            .compare_exchange(
                current as u8,
                new as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .map(PriorityClass::from_u8)
            .map_err(PriorityClass::from_u8)
    }
}

impl fmt::Debug for ClassCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ClassCell").field(&self.get()).finish()
    }
}

/// Where a woken thread should run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Placement {
    /// Wherever the scheduler likes (its own rules, e.g. the worker the thread last ran on).
    #[default]
    Anywhere,
    /// On this worker (lock-hot placement: the releaser's worker), unless load balance forbids.
    Worker(usize),
    /// On the worker the woken thread last ran on, even where that worker sleeps and must be
    /// woken for it: for a waker that goes on running, so that the woken thread runs beside it
    /// instead of queued behind it. A barrier's release passes it (under `Anywhere` a runtime
    /// may let the waker's worker take a thread whose worker sleeps, which is right for a
    /// waker about to block or finish, as a joined thread is).
    LastWorker,
}

/// What a scheduler knows about a thread that a waiter waits for (the holder of a lock): the
/// input of 002's rule that a waiter spins only while the thread it waits for runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunState {
    /// Runs now on another processor of the same scheduler (a green thread on another worker):
    /// it may finish what the waiter waits for while the waiter spins.
    RunningElsewhere,
    /// Does not run now: it waits in a run queue (perhaps behind the waiter, on the waiter's own
    /// worker) or is parked. Spinning cannot help until it runs; the waiter's processor may be
    /// the one it needs.
    NotRunning,
    /// The scheduler cannot tell (a plain OS thread, whose kernel is the scheduler, or no thread
    /// known): the waiter decides from the kernel's signals.
    Unknown,
}

/// A short name for a thread, small enough that a lock keeps its holder's in a spare word of
/// the lock's own cache line: the low 32 bits of the address of the thread's [`ClassCell`]
/// (every informing thread has one, at a fixed address while it lives). Two live threads whose
/// cells lie a multiple of 4 GiB apart share a tag; the tag is advisory (a waiter spins or parks
/// by it, never trusts it for correctness), so such a rare collision costs at most a short spin.
///
/// ```
/// use footprint_locks::{ClassCell, PriorityClass, ThreadTag};
/// let cell = ClassCell::new(PriorityClass::Running);
/// assert_eq!(ThreadTag::of(&cell), ThreadTag::of(&cell));
/// assert!(!ThreadTag::of(&cell).is_none());
/// assert!(ThreadTag::of(std::ptr::null()).is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ThreadTag(u32);

impl ThreadTag {
    /// No thread.
    pub const NONE: ThreadTag = ThreadTag(0);

    /// The tag of the thread whose class cell is `cell` ([`NONE`](Self::NONE) for null).
    #[inline]
    pub fn of(cell: *const ClassCell) -> ThreadTag {
        let low = cell as usize as u32;
        // A non-null cell whose low bits are all zero (4 GiB-aligned) still names a thread.
        ThreadTag(if cell.is_null() { 0 } else { low.max(1) })
    }

    /// Whether this names no thread.
    #[inline]
    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The tag as stored in a lock's word (0: none).
    #[inline]
    pub fn to_bits(self) -> u32 {
        self.0
    }

    /// A tag read back from [`to_bits`](Self::to_bits).
    #[inline]
    pub fn from_bits(bits: u32) -> ThreadTag {
        ThreadTag(bits)
    }
}

/// Something that can wake one parked thread. Implemented by the runtime's green-thread control
/// block and by the OS-thread hook.
pub trait Unpark: Send + Sync {
    /// Makes a permit available to the thread and wakes it if it is parked.
    fn unpark(&self, hint: Placement);
}

/// A cloneable handle that wakes one particular thread (see [`SchedulerHook::current_unparker`]).
#[derive(Clone)]
pub struct Unparker(Arc<dyn Unpark>);

impl Unparker {
    /// Wraps an implementation.
    pub fn new(inner: Arc<dyn Unpark>) -> Unparker {
        Unparker(inner)
    }

    /// Wakes the thread (see [`Unpark::unpark`]).
    #[inline]
    pub fn unpark(&self, hint: Placement) {
        self.0.unpark(hint)
    }

    /// Whether both handles wake the same thread.
    pub fn same_thread(&self, other: &Unparker) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.0), Arc::as_ptr(&other.0))
    }
}

impl fmt::Debug for Unparker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unparker").finish_non_exhaustive()
    }
}

/// What a thread is about to park on, told to its scheduler with
/// [`SchedulerHook::note_wait`] (for diagnostics: a runtime's report of a hang names what each
/// parked thread waits on). Addresses identify the object (two threads parked on the same lock
/// show the same address); they are never dereferenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitOn {
    /// A mutex (any of the raw locks, or a timed acquisition).
    Lock(usize),
    /// A reader-writer lock.
    RwLock(usize),
    /// A barrier: the waiter arrived as `arrived`-th of `expected` participants.
    Barrier {
        /// The barrier's address.
        addr: usize,
        /// Arrivals in this phase, the waiter's own included, when it parked.
        arrived: usize,
        /// Participants per phase.
        expected: usize,
        /// Where the waiter called `wait`.
        at: &'static std::panic::Location<'static>,
    },
    /// A condition variable.
    Condvar(usize),
    /// A channel: `send` true for a sender waiting for room or a receiver, false for a
    /// receiver waiting for a message.
    Channel {
        /// The channel's address.
        addr: usize,
        /// Which side waits.
        send: bool,
    },
    /// A semaphore.
    Semaphore(usize),
    /// A `Once`, `OnceLock` or `LazyLock` being initialised by another thread.
    Once(usize),
}

/// The scheduler of the calling thread, as a lock sees it. See the module docs for the contract.
pub trait SchedulerHook: Send + Sync {
    /// The current thread's published class.
    fn class_cell(&self) -> &ClassCell;

    /// Whether a ready thread of a class strictly above `than` waits for a processor that the
    /// current thread could give it (same worker, or the same runtime when the scheduler can tell).
    fn higher_class_ready(&self, than: PriorityClass) -> bool;

    /// Hands the processor to a ready thread of a class strictly above `than`, if there is one.
    /// Returns whether the current thread gave up its processor.
    fn yield_to_higher(&self, than: PriorityClass) -> bool;

    /// Gives up the processor to any ready thread (a plain yield).
    fn yield_now(&self);

    /// A handle that wakes the current thread.
    fn current_unparker(&self) -> Unparker;

    /// Blocks the current thread until a permit is available (see the module docs).
    fn park(&self);

    /// Like [`park`](Self::park), returning after at most `timeout`. Returns `false` on timeout.
    fn park_timeout(&self, timeout: Duration) -> bool;

    /// The worker the current thread runs on, if it runs on a runtime worker.
    fn worker_id(&self) -> Option<usize>;

    /// Whether the current thread is a green thread of a runtime (not a plain OS thread).
    fn is_green(&self) -> bool {
        self.worker_id().is_some()
    }

    /// Estimated cost in nanoseconds of blocking and later resuming the current thread (one park
    /// plus one unpark), used by the two-phase spin-or-block rule.
    fn switch_cost_ns(&self) -> u64;

    /// Tells the scheduler what the current thread is about to park on (called before the
    /// park loop of every blocking wait; the default ignores it). A runtime keeps it for its
    /// hang report.
    fn note_wait(&self, what: WaitOn) {
        let _ = what;
    }

    /// Whether the thread tagged `thread` (a lock's last holder, [`ThreadTag::of`] its class
    /// cell) runs now on another processor of this scheduler. A stale tag is harmless (at worst
    /// a short spin or an early park). The default knows nothing ([`RunState::Unknown`]).
    fn run_state(&self, thread: ThreadTag) -> RunState {
        let _ = thread;
        RunState::Unknown
    }

    /// Whether other threads wait in the current processor's own queues (ready, woken for it,
    /// never started): threads that cannot run while the current thread spins on this
    /// processor. The default: none known.
    fn queued_here(&self) -> bool {
        false
    }

    /// How many other processors of this scheduler run a thread now (`None`: unknown, e.g. on a
    /// plain OS thread). A waiter for `k` threads that are not all running (fewer than `k` run
    /// elsewhere) waits for one that needs a processor.
    fn running_elsewhere(&self) -> Option<usize> {
        None
    }

    /// How many processors (workers) this scheduler has in all, busy or not (`None`: unknown,
    /// e.g. on a plain OS thread). The default `Mutex` parks or polls by it
    /// ([`GreenLockWait::Auto`](crate::green_wait::GreenLockWait::Auto)).
    fn workers(&self) -> Option<usize> {
        None
    }
}
