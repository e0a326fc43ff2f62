//! The scheduler hook's interface: the [`SchedulerHook`] trait and the values a lock and its
//! scheduler exchange through it ([`PriorityClass`], [`ClassCell`], [`Placement`], [`Unpark`],
//! [`Unparker`]). Public as [`crate::hook`] (which adds the per-thread installation); the OS-thread
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
}
