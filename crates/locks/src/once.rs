//! One-time initialisation whose waiters park green threads: [`Once`], [`OnceLock`] and
//! [`LazyLock`] (std's names and behaviour).
//!
//! What a panicking initialiser leaves behind (std's rules; never a hang for the next caller,
//! whose wait ends when the panic unwinds out of the initialiser):
//! - [`Once`]: poisoned. Later [`call_once`](Once::call_once) calls panic;
//!   [`call_once_force`](Once::call_once_force) runs its closure again (seeing the poison).
//! - [`OnceLock`]: nothing. It stays empty and the next `get_or_init` runs its initialiser.
//! - [`LazyLock`]: poisoned. Its initialiser was consumed; later accesses panic.

use crate::sync::{AtomicUsize, Ordering};
use crate::timed::park_until;
use crate::wait::WaitQueue;
use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::ops::Deref;

const INCOMPLETE: usize = 0;
const RUNNING: usize = 1;
const COMPLETE: usize = 2;
const POISONED: usize = 3;

/// Runs an initialiser exactly once; concurrent callers park until it has run.
///
/// ```
/// use footprint::sync::Once;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// static INIT: Once = Once::new();
/// static RUNS: AtomicUsize = AtomicUsize::new(0);
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| INIT.call_once(|| { RUNS.fetch_add(1, Ordering::SeqCst); }));
///     }
/// });
/// assert_eq!(RUNS.load(Ordering::SeqCst), 1);
/// assert!(INIT.is_completed());
/// ```
pub struct Once {
    state: AtomicUsize,
    queue: WaitQueue,
}

/// What [`Once::call_once_force`] tells its closure.
#[derive(Debug)]
pub struct OnceState {
    poisoned: bool,
}

impl OnceState {
    /// Whether an earlier initialiser panicked.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }
}

/// Publishes the outcome of a run (complete, or poisoned when the initialiser unwinds) and
/// wakes the waiters.
struct Completion<'a> {
    once: &'a Once,
    outcome: usize,
}

impl Drop for Completion<'_> {
    fn drop(&mut self) {
        self.once.state.swap(self.outcome, Ordering::SeqCst);
        self.once.queue.notify_all();
    }
}

impl Default for Once {
    fn default() -> Self {
        Self::new()
    }
}

impl Once {
    /// A `Once` that has not run.
    #[cfg(not(loom))]
    pub const fn new() -> Once {
        Once {
            state: AtomicUsize::new(INCOMPLETE),
            queue: WaitQueue::new(),
        }
    }

    /// A `Once` that has not run.
    #[cfg(loom)]
    pub fn new() -> Once {
        Once {
            state: AtomicUsize::new(INCOMPLETE),
            queue: WaitQueue::new(),
        }
    }

    /// Whether an initialiser has completed (without panicking).
    pub fn is_completed(&self) -> bool {
        self.state.load(Ordering::Acquire) == COMPLETE
    }

    /// Runs `f` if no initialiser has completed yet; waits while another caller's runs.
    ///
    /// # Panics
    /// If an earlier initialiser panicked (the `Once` is poisoned).
    pub fn call_once(&self, f: impl FnOnce()) {
        if self.is_completed() {
            return;
        }
        let mut f = Some(f);
        self.run(false, &mut |_| (f.take().expect("runs once"))());
    }

    /// Like [`call_once`](Self::call_once), also running after a panicked initialiser (the
    /// closure learns about it through [`OnceState::is_poisoned`]).
    pub fn call_once_force(&self, f: impl FnOnce(&OnceState)) {
        if self.is_completed() {
            return;
        }
        let mut f = Some(f);
        self.run(true, &mut |s| (f.take().expect("runs once"))(s));
    }

    /// Waits until an initialiser has completed.
    ///
    /// # Panics
    /// If an initialiser panicked.
    pub fn wait(&self) {
        self.park_until_state(|s| s == COMPLETE || s == POISONED);
        if self.state.load(Ordering::Acquire) == POISONED {
            panic!("Once instance has previously been poisoned");
        }
    }

    /// Waits until an initialiser has completed, ignoring poison: after a panicked
    /// initialiser it goes on waiting for a [`call_once_force`](Self::call_once_force) to
    /// complete the `Once` (std's `Once::wait_force`).
    ///
    /// ```
    /// use footprint_locks::Once;
    /// let once = Once::new();
    /// let _ = std::panic::catch_unwind(|| once.call_once(|| panic!("first try")));
    /// std::thread::scope(|s| {
    ///     s.spawn(|| once.call_once_force(|state| assert!(state.is_poisoned())));
    ///     once.wait_force(); // returns once the forced run completed it
    /// });
    /// assert!(once.is_completed());
    /// ```
    pub fn wait_force(&self) {
        self.park_until_state(|s| s == COMPLETE);
    }

    fn park_while_running(&self) {
        self.park_until_state(|s| s != RUNNING);
    }

    /// Parks until `done(state)`; every change of state out of `RUNNING` wakes the waiters.
    fn park_until_state(&self, done: impl Fn(usize) -> bool) {
        park_until(
            &self.queue,
            0,
            &mut || done(self.state.load(Ordering::SeqCst)),
            None,
            crate::hook::WaitOn::Once(self as *const Self as usize),
        );
    }

    #[cold]
    fn run(&self, ignore_poison: bool, f: &mut dyn FnMut(&OnceState)) {
        loop {
            let s = self.state.load(Ordering::Acquire);
            match s {
                COMPLETE => return,
                POISONED if !ignore_poison => {
                    panic!("Once instance has previously been poisoned")
                }
                INCOMPLETE | POISONED => {
                    if self
                        .state
                        .compare_exchange(s, RUNNING, Ordering::Acquire, Ordering::Acquire)
                        .is_err()
                    {
                        continue;
                    }
                    let mut done = Completion {
                        once: self,
                        outcome: POISONED,
                    };
                    f(&OnceState {
                        poisoned: s == POISONED,
                    });
                    done.outcome = COMPLETE;
                    return;
                }
                _ => self.park_while_running(),
            }
        }
    }
}

impl std::fmt::Debug for Once {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Once")
            .field("completed", &self.is_completed())
            .finish()
    }
}

/// A cell written once; readers that arrive during the initialisation park until it is done.
/// A panicking initialiser leaves the cell empty, and the next caller initialises it.
///
/// ```
/// use footprint::sync::OnceLock;
///
/// static CONFIG: OnceLock<String> = OnceLock::new();
/// assert!(CONFIG.get().is_none());
/// assert_eq!(CONFIG.get_or_init(|| "ready".to_string()), "ready");
/// assert_eq!(CONFIG.set("other".to_string()), Err("other".to_string()));
/// ```
pub struct OnceLock<T> {
    once: Once,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written once, before `once` completes (Release), and only read after
// observing completion (Acquire); it may be dropped on any thread, hence `T: Send`; shared reads
// from several threads need `T: Sync`.
unsafe impl<T: Send + Sync> Sync for OnceLock<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for OnceLock<T> {}

impl<T> Default for OnceLock<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> OnceLock<T> {
    /// An empty cell.
    #[cfg(not(loom))]
    pub const fn new() -> OnceLock<T> {
        OnceLock {
            once: Once::new(),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// An empty cell.
    #[cfg(loom)]
    pub fn new() -> OnceLock<T> {
        OnceLock {
            once: Once::new(),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// The value, if initialised.
    pub fn get(&self) -> Option<&T> {
        // SAFETY: completed means written (see the Sync impl).
        self.once
            .is_completed()
            .then(|| unsafe { (*self.value.get()).assume_init_ref() })
    }

    /// The value, initialising it with `f` if it is empty (waiting while another caller runs
    /// its initialiser).
    pub fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
        if let Some(v) = self.get() {
            return v;
        }
        let mut f = Some(f);
        self.once.call_once_force(|_| {
            let v = (f.take().expect("runs once"))();
            // SAFETY: we run the only initialiser; nobody reads before completion.
            unsafe { (*self.value.get()).write(v) };
        });
        self.get().expect("initialised")
    }

    /// The value, if initialised, mutably (no waiting: `&mut self` excludes every other caller).
    ///
    /// ```
    /// let mut cell = footprint_locks::OnceLock::new();
    /// assert!(cell.get_mut().is_none());
    /// cell.set(1).unwrap();
    /// *cell.get_mut().unwrap() += 1;
    /// assert_eq!(cell.get(), Some(&2));
    /// ```
    pub fn get_mut(&mut self) -> Option<&mut T> {
        if !self.once.is_completed() {
            return None;
        }
        // SAFETY: completed means written, and `&mut self` excludes every reader.
        Some(unsafe { self.value.get_mut().assume_init_mut() })
    }

    /// Stores `value` if the cell is empty; gives it back otherwise.
    pub fn set(&self, value: T) -> Result<(), T> {
        let mut value = Some(value);
        self.get_or_init(|| value.take().expect("taken once"));
        value.map_or(Ok(()), Err)
    }

    /// Waits until the cell is initialised (by another caller) and returns the value.
    pub fn wait(&self) -> &T {
        self.once.park_until_state(|s| s == COMPLETE);
        self.get().expect("completed")
    }

    /// The value, if initialised, by value.
    pub fn into_inner(mut self) -> Option<T> {
        self.take()
    }

    /// Empties the cell, returning its value.
    pub fn take(&mut self) -> Option<T> {
        if !self.once.is_completed() {
            return None;
        }
        self.once = Once::new();
        // SAFETY: it was completed, and `&mut self` excludes every reader; the state is reset so
        // the value is not dropped again.
        Some(unsafe { (*self.value.get()).assume_init_read() })
    }
}

impl<T> Drop for OnceLock<T> {
    fn drop(&mut self) {
        if self.once.is_completed() {
            // SAFETY: initialised and exclusively ours.
            unsafe { (*self.value.get()).assume_init_drop() }
        }
    }
}

/// A cell holding a clone of the value, if there is one (an empty cell clones as empty).
///
/// ```
/// let a = footprint_locks::OnceLock::from(String::from("x"));
/// let b = a.clone();
/// assert_eq!(a, b);
/// assert_eq!(footprint_locks::OnceLock::<u8>::new().clone().get(), None);
/// ```
impl<T: Clone> Clone for OnceLock<T> {
    fn clone(&self) -> OnceLock<T> {
        let cell = OnceLock::new();
        if let Some(v) = self.get() {
            let _ = cell.set(v.clone());
        }
        cell
    }
}

/// An initialised cell.
impl<T> From<T> for OnceLock<T> {
    fn from(value: T) -> OnceLock<T> {
        let cell = OnceLock::new();
        let _ = cell.set(value);
        cell
    }
}

/// Equal when both are empty or both hold equal values.
impl<T: PartialEq> PartialEq for OnceLock<T> {
    fn eq(&self, other: &OnceLock<T>) -> bool {
        self.get() == other.get()
    }
}

impl<T: Eq> Eq for OnceLock<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for OnceLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OnceLock").field(&self.get()).finish()
    }
}

/// A value initialised on first access by `F`; concurrent first accesses park until it is done.
/// If `F` panics, the `LazyLock` is poisoned and later accesses panic (std's behaviour).
///
/// ```
/// use footprint::sync::LazyLock;
/// use std::collections::HashMap;
///
/// static SQUARES: LazyLock<HashMap<u32, u32>> =
///     LazyLock::new(|| (1..=10).map(|i| (i, i * i)).collect());
/// assert_eq!(SQUARES[&7], 49);
/// ```
pub struct LazyLock<T, F = fn() -> T> {
    cell: OnceLock<T>,
    init: Cell<Option<F>>,
}

// SAFETY: `init` is taken only inside the cell's one-time initialisation (one thread at a time).
unsafe impl<T: Send + Sync, F: Send> Sync for LazyLock<T, F> {}

impl<T, F: FnOnce() -> T> LazyLock<T, F> {
    /// A value to be computed by `f` on first access.
    #[cfg(not(loom))]
    pub const fn new(f: F) -> LazyLock<T, F> {
        LazyLock {
            cell: OnceLock::new(),
            init: Cell::new(Some(f)),
        }
    }

    /// A value to be computed by `f` on first access.
    #[cfg(loom)]
    pub fn new(f: F) -> LazyLock<T, F> {
        LazyLock {
            cell: OnceLock::new(),
            init: Cell::new(Some(f)),
        }
    }

    /// Forces the initialisation and returns the value.
    ///
    /// # Panics
    /// If the initialiser panicked now or before.
    pub fn force(this: &LazyLock<T, F>) -> &T {
        this.cell.get_or_init(|| match this.init.take() {
            Some(f) => f(),
            None => panic!("LazyLock instance has previously been poisoned"),
        })
    }
}

impl<T, F: FnOnce() -> T> LazyLock<T, F> {
    /// Forces the initialisation and returns the value mutably (no waiting: `&mut` excludes
    /// every other caller).
    ///
    /// # Panics
    /// If the initialiser panicked now or before.
    ///
    /// ```
    /// use footprint_locks::LazyLock;
    /// let mut lazy = LazyLock::new(|| 20);
    /// *LazyLock::force_mut(&mut lazy) += 1;
    /// assert_eq!(*lazy, 21);
    /// ```
    pub fn force_mut(this: &mut LazyLock<T, F>) -> &mut T {
        LazyLock::force(this);
        this.cell.get_mut().expect("forced")
    }

    /// The value mutably, if it has been initialised (without initialising it).
    ///
    /// ```
    /// use footprint_locks::LazyLock;
    /// let mut lazy = LazyLock::new(|| 1);
    /// assert!(LazyLock::get_mut(&mut lazy).is_none());
    /// LazyLock::force(&lazy);
    /// assert_eq!(LazyLock::get_mut(&mut lazy), Some(&mut 1));
    /// ```
    pub fn get_mut(this: &mut LazyLock<T, F>) -> Option<&mut T> {
        this.cell.get_mut()
    }
}

/// A value initialised on first access with `T::default()`.
///
/// ```
/// let lazy: footprint_locks::LazyLock<Vec<u8>> = Default::default();
/// assert!(lazy.is_empty());
/// ```
impl<T: Default> Default for LazyLock<T> {
    fn default() -> LazyLock<T> {
        LazyLock::new(T::default)
    }
}

impl<T, F: FnOnce() -> T> Deref for LazyLock<T, F> {
    type Target = T;
    fn deref(&self) -> &T {
        LazyLock::force(self)
    }
}

impl<T: std::fmt::Debug, F> std::fmt::Debug for LazyLock<T, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LazyLock").field(&self.cell.get()).finish()
    }
}
