//! Condition variable working with the guards of every mutex of this crate.

use crate::hook::{current_hook, PriorityClass};
use crate::raw::RawLock;
use crate::sync::{AtomicUsize, Ordering};
use crate::wait::{ClassScope, Enqueued, HeldToken, Informed, WaitNode, WaitQueue};
#[cfg(not(loom))]
use std::time::Duration;
use std::time::Instant;

/// Whether a timed wait on a [`Condvar`] returned because its time ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// `true` when the wait ended by timeout rather than by a notification.
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

/// A condition variable (parking_lot-style API: the wait methods take `&mut` guard).
///
/// Waiters park through the scheduler hook (green threads park off their worker; OS threads on
/// a futex) and publish `Waiter` while parked. A waiter is queued *before* it releases the
/// mutex, so a notifier that takes the mutex after the waiter released it always finds, wakes
/// and counts that waiter: [`notify_one`](Condvar::notify_one) returns `true` and
/// [`notify_all`](Condvar::notify_all) counts it (parking_lot's contract; code such as
/// `while !cv.notify_one() {}` relies on it). Spurious wake-ups are possible, as with std: wait
/// in a loop or use [`wait_while`](Condvar::wait_while).
///
/// ```
/// use footprint::sync::{Condvar, Mutex};
/// use std::sync::Arc;
///
/// let pair = Arc::new((Mutex::new(false), Condvar::new()));
/// let p = pair.clone();
/// let t = std::thread::spawn(move || {
///     *p.0.lock() = true;
///     p.1.notify_one();
/// });
/// let mut ready = pair.0.lock();
/// pair.1.wait_while(&mut ready, |r| !*r);
/// assert!(*ready);
/// drop(ready);
/// t.join().unwrap();
/// ```
pub struct Condvar {
    queue: WaitQueue,
    /// Number of [`notify_all`](Condvar::notify_all) calls that found waiters. A waiter parks
    /// under the value it read when it queued, and a `notify_all` wakes only the waiters queued
    /// before its own increment: a waiter it woke that waits again while the call is still
    /// popping (the queue is popped in batches, newest first) queues under the new value and
    /// is left parked, so it is neither woken twice nor counted twice, and the call ends.
    epoch: AtomicUsize,
}

impl Default for Condvar {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}

impl Condvar {
    /// A condition variable with no waiters.
    #[cfg(not(loom))]
    pub const fn new() -> Condvar {
        Condvar {
            queue: WaitQueue::new(),
            epoch: AtomicUsize::new(0),
        }
    }

    /// A condition variable with no waiters.
    #[cfg(loom)]
    pub fn new() -> Condvar {
        Condvar {
            queue: WaitQueue::new(),
            epoch: AtomicUsize::new(0),
        }
    }

    /// Queues the caller, runs `release` (which releases the mutex, parks through `park` and
    /// re-acquires the mutex), and returns what `release` returns.
    fn queued<U>(&self, release: impl FnOnce(&dyn Fn(Option<Instant>) -> bool) -> U) -> U {
        // Read before queueing, with the mutex held: a `notify_all` that takes the mutex after
        // we release it increments later, so it wakes us (see `epoch`).
        let node = WaitNode::new(current_hook(), self.epoch.load(Ordering::SeqCst));
        let queued = std::cell::Cell::new(Some(self.queue.enqueue(&node)));
        release(&|deadline| match queued.take() {
            Some(q) => Self::block(q, deadline),
            None => true,
        })
    }

    /// Parks the queued caller (the mutex already released) until notified or `deadline`.
    /// Returns `false` on timeout.
    fn block(queued: Enqueued<'_>, deadline: Option<Instant>) -> bool {
        let scope = ClassScope::enter::<Informed>();
        scope.publish(PriorityClass::Waiter);
        let hook = current_hook();
        hook.note_wait(crate::hook::WaitOn::Condvar(queued.queue_addr()));
        let notified = queued.park(hook, &mut || true, deadline);
        scope.restore();
        notified
    }

    /// Releases the lock behind `guard`, waits until notified or `deadline`, re-acquires the
    /// lock. Returns `false` on timeout.
    #[cfg(not(loom))]
    fn wait_guard<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        deadline: Option<Instant>,
    ) -> bool {
        self.queued(|park| lock_api::MutexGuard::unlocked(guard, || park(deadline)))
    }

    /// Releases the lock behind `guard`, waits for a notification, and re-acquires the lock.
    #[cfg(not(loom))]
    pub fn wait<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
    ) {
        self.wait_guard(guard, None);
    }

    /// Waits while `condition` holds on the protected data (checked with the lock held).
    #[cfg(not(loom))]
    pub fn wait_while<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        mut condition: impl FnMut(&mut T) -> bool,
    ) {
        while condition(&mut **guard) {
            self.wait(guard);
        }
    }

    /// Like [`wait`](Self::wait), giving up after `timeout`.
    #[cfg(not(loom))]
    pub fn wait_timeout<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        WaitTimeoutResult(!self.wait_guard(guard, Instant::now().checked_add(timeout)))
    }

    /// Like [`wait`](Self::wait), giving up after `timeout` (parking_lot's name for
    /// [`wait_timeout`](Self::wait_timeout)).
    ///
    /// ```
    /// use footprint_locks::{Condvar, Mutex};
    /// use std::time::Duration;
    ///
    /// let (m, cv) = (Mutex::new(()), Condvar::new());
    /// let mut g = m.lock();
    /// assert!(cv.wait_for(&mut g, Duration::from_millis(1)).timed_out());
    /// ```
    #[cfg(not(loom))]
    pub fn wait_for<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        self.wait_timeout(guard, timeout)
    }

    /// Like [`wait`](Self::wait), giving up at `deadline` (parking_lot's name).
    ///
    /// ```
    /// use footprint::sync::{Condvar, Mutex};
    /// use std::time::{Duration, Instant};
    ///
    /// let (m, cv) = (Mutex::new(()), Condvar::new());
    /// let mut g = m.lock();
    /// // Nobody notifies: the wait ends at the deadline, never before it.
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// assert!(cv.wait_until(&mut g, deadline).timed_out());
    /// assert!(Instant::now() >= deadline);
    /// ```
    #[cfg(not(loom))]
    pub fn wait_until<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        deadline: Instant,
    ) -> WaitTimeoutResult {
        WaitTimeoutResult(!self.wait_guard(guard, Some(deadline)))
    }

    /// Like [`wait_while`](Self::wait_while), giving up after `timeout` (in total). Returns
    /// whether it timed out with the condition still true.
    #[cfg(not(loom))]
    pub fn wait_while_timeout<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        condition: impl FnMut(&mut T) -> bool,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.wait_while_until(guard, condition, deadline),
            None => {
                self.wait_while(guard, condition);
                WaitTimeoutResult(false)
            }
        }
    }

    /// Like [`wait_while`](Self::wait_while), giving up at `deadline`. Returns whether it
    /// timed out with the condition still true.
    ///
    /// ```
    /// use footprint::sync::{Condvar, Mutex};
    /// use std::time::{Duration, Instant};
    ///
    /// let (m, cv) = (Mutex::new(0), Condvar::new());
    /// let mut g = m.lock();
    /// let r = cv.wait_while_until(&mut g, |v| *v == 0, Instant::now() + Duration::from_millis(5));
    /// assert!(r.timed_out());
    /// ```
    #[cfg(not(loom))]
    pub fn wait_while_until<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        mut condition: impl FnMut(&mut T) -> bool,
        deadline: Instant,
    ) -> WaitTimeoutResult {
        while condition(&mut **guard) {
            if !self.wait_guard(guard, Some(deadline)) {
                return WaitTimeoutResult(condition(&mut **guard));
            }
        }
        WaitTimeoutResult(false)
    }

    /// The same wait on a raw lock of this crate: releases `lock` (held through `token`), waits,
    /// re-acquires, and returns the new token.
    ///
    /// # Safety
    /// `token` must be the state of the current acquisition of `lock`.
    pub unsafe fn wait_raw<L: RawLock>(&self, lock: &L, token: HeldToken) -> HeldToken {
        self.queued(|park| {
            // SAFETY: the caller holds `lock` through `token`.
            unsafe { lock.unlock(token) };
            park(None);
            lock.lock()
        })
    }

    /// Wakes one waiting thread. Returns whether one was waiting (every thread that released
    /// its mutex in `wait` before the caller took that mutex counts).
    pub fn notify_one(&self) -> bool {
        self.queue.notify_one()
    }

    /// Wakes every waiting thread. Returns how many were waiting: a thread woken by this call
    /// that waits again before the call returns is neither woken again nor counted twice.
    pub fn notify_all(&self) -> usize {
        if self.queue.has_waiters() {
            let ended = self.epoch.fetch_add(1, Ordering::SeqCst);
            // Keys are epochs read at queueing time; "at or before `ended`" in wrapping order.
            self.queue.notify(usize::MAX, &|key| queued_by(key, ended))
        } else {
            0
        }
    }
}

/// Whether a waiter that queued under epoch `key` queued before the `notify_all` that moved the
/// epoch on from `ended` (wrapping order: a waiter is never 2^63 calls behind).
fn queued_by(key: usize, ended: usize) -> bool {
    (ended.wrapping_sub(key) as isize) >= 0
}
