//! Condition variable working with the guards of every mutex of this crate.

use crate::hook::{current_hook, PriorityClass};
use crate::raw::RawLock;
use crate::sync::{AtomicU32, Ordering};
use crate::wait::{ClassScope, HeldToken, Informed, WaitQueue};
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
/// a futex) and publish `Waiter` while parked. No lost wake-ups: a notification that comes after
/// a waiter released the mutex always reaches it (a sequence number is re-checked after the waiter
/// is queued). Spurious wake-ups are possible, as with std: wait in a loop or use
/// [`wait_while`](Condvar::wait_while).
///
/// ```
/// use footprint_locks::{Condvar, Mutex};
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
    seq: AtomicU32,
    queue: WaitQueue,
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
            seq: AtomicU32::new(0),
            queue: WaitQueue::new(),
        }
    }

    /// A condition variable with no waiters.
    #[cfg(loom)]
    pub fn new() -> Condvar {
        Condvar {
            seq: AtomicU32::new(0),
            queue: WaitQueue::new(),
        }
    }

    /// Parks until a notification newer than `seq` (or the deadline). Returns `false` on timeout.
    fn block(&self, seq: u32, deadline: Option<Instant>) -> bool {
        let scope = ClassScope::enter::<Informed>();
        scope.publish(PriorityClass::Waiter);
        let notified = self.queue.park_once(
            current_hook(),
            0,
            &mut || self.seq.load(Ordering::SeqCst) == seq,
            deadline,
        );
        scope.restore();
        notified
    }

    /// Releases the lock behind `guard`, waits for a notification, and re-acquires the lock.
    #[cfg(not(loom))]
    pub fn wait<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
    ) {
        let seq = self.seq.load(Ordering::SeqCst);
        lock_api::MutexGuard::unlocked(guard, || self.block(seq, None));
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
        let deadline = Instant::now().checked_add(timeout);
        let seq = self.seq.load(Ordering::SeqCst);
        let notified = lock_api::MutexGuard::unlocked(guard, || self.block(seq, deadline));
        WaitTimeoutResult(!notified)
    }

    /// Like [`wait_while`](Self::wait_while), giving up after `timeout` (in total). Returns
    /// whether it timed out with the condition still true.
    #[cfg(not(loom))]
    pub fn wait_while_timeout<R: lock_api::RawMutex, T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, R, T>,
        mut condition: impl FnMut(&mut T) -> bool,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        let deadline = Instant::now().checked_add(timeout);
        while condition(&mut **guard) {
            let seq = self.seq.load(Ordering::SeqCst);
            let notified = lock_api::MutexGuard::unlocked(guard, || self.block(seq, deadline));
            if !notified {
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
        let seq = self.seq.load(Ordering::SeqCst);
        // SAFETY: the caller holds `lock` through `token`.
        unsafe { lock.unlock(token) };
        self.block(seq, None);
        lock.lock()
    }

    /// Wakes one waiting thread. Returns whether one was parked.
    pub fn notify_one(&self) -> bool {
        self.seq.fetch_add(1, Ordering::SeqCst);
        self.queue.notify_one()
    }

    /// Wakes every waiting thread. Returns how many were parked.
    pub fn notify_all(&self) -> usize {
        self.seq.fetch_add(1, Ordering::SeqCst);
        if self.queue.has_waiters() {
            self.queue.notify(usize::MAX, &|_| true)
        } else {
            0
        }
    }
}
