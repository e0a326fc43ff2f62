//! Test-and-test-and-set lock with exponential backoff.

use super::{impl_raw_mutex, RawLock};
use crate::hook::PriorityClass;
use crate::stats::LockTimesSnapshot;
use crate::sync::{AtomicBool, Ordering};
use crate::wait::{
    wait_until, ClassScope, HeldToken, Informed, LockMeta, WaitFor, WaitMode, WaitPolicy,
};
use std::marker::PhantomData;

/// Test-and-test-and-set lock: waiters read the flag (locally cached) and try the atomic swap
/// only when it looks free. Not FIFO: a releaser wakes one parked waiter, which competes again.
/// Its waiters publish `Waiter` (no thread is "next" in a TTAS lock).
pub struct RawTtasLock<W: WaitPolicy = Informed> {
    locked: AtomicBool,
    /// Set by a fair unlock that left `locked` set for a waiter to take over.
    handoff: AtomicBool,
    meta: LockMeta,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> RawTtasLock<W> {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawTtasLock {
            locked: AtomicBool::new(false),
            handoff: AtomicBool::new(false),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        RawTtasLock {
            locked: AtomicBool::new(false),
            handoff: AtomicBool::new(false),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// Whether the lock looks free, or handed over by a fair unlock.
    #[inline]
    fn may_take(&self) -> bool {
        !self.locked.load(Ordering::Relaxed) || self.handoff.load(Ordering::Relaxed)
    }

    /// Takes over a lock handed over by a fair unlock (it stayed locked).
    #[inline]
    fn took_over(&self) -> bool {
        self.handoff.load(Ordering::Relaxed) && self.handoff.swap(false, Ordering::Acquire)
    }

    /// Acquires the lock unless `deadline` passes first (`lock_api::RawMutexTimed`).
    pub(super) fn lock_until(&self, deadline: std::time::Instant) -> Option<HeldToken> {
        let scope = ClassScope::enter::<W>();
        let mut free = true;
        loop {
            if self.took_over()
                || self
                    .locked
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return Some(scope.into_held(&self.meta));
            }
            if !free {
                scope.restore();
                return None;
            }
            scope.publish(PriorityClass::Waiter);
            free = crate::timed::park_until(
                &self.meta.queue,
                0,
                &mut || self.may_take(),
                Some(deadline),
            );
        }
    }

    /// Hands the lock to a parked waiter without unlocking it, if one is parked
    /// (`lock_api::RawMutexFair`); otherwise an ordinary unlock.
    ///
    /// # Safety
    /// As for `RawLock::unlock`.
    pub(super) unsafe fn unlock_fair_token(&self, token: HeldToken) {
        if W::MODE != WaitMode::Spin && self.meta.queue.has_waiters() {
            token.releasing(&self.meta);
            self.handoff.store(true, Ordering::SeqCst);
            if self.meta.queue.notify_one() || !self.handoff.swap(false, Ordering::SeqCst) {
                // A woken (or spinning) waiter takes the lock over.
                token.released();
                return;
            }
            // Nobody was parked after all and nobody took it: release normally.
            self.locked.swap(false, Ordering::SeqCst);
            self.meta.queue.notify_one();
            token.released();
            return;
        }
        // SAFETY: per the contract.
        unsafe { self.unlock(token) }
    }

    #[cold]
    fn lock_slow(&self, scope: ClassScope) -> HeldToken {
        scope.publish(PriorityClass::Waiter);
        self.meta.history.start_sampling();
        let mut waited = 0;
        loop {
            let w = WaitFor {
                queue: &self.meta.queue,
                key: 0,
                expected_ns: self.meta.history.mean_ns(),
                holder_tid: self.meta.holder_tid.load(Ordering::Relaxed),
                class: PriorityClass::Waiter,
                cell: None,
            };
            waited += wait_until::<W>(&w, &mut || self.may_take());
            if self.took_over()
                || self
                    .locked
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                break;
            }
        }
        self.meta.times.add_wait(waited);
        scope.into_held(&self.meta)
    }
}

impl<W: WaitPolicy> Default for RawTtasLock<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the flag is taken with an Acquire CAS and released with a Release (or SeqCst) store.
unsafe impl<W: WaitPolicy> RawLock for RawTtasLock<W> {
    #[inline]
    fn lock(&self) -> HeldToken {
        let scope = ClassScope::enter::<W>();
        if self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return scope.into_held(&self.meta);
        }
        self.lock_slow(scope)
    }

    #[inline]
    fn try_lock(&self) -> Option<HeldToken> {
        let scope = ClassScope::enter::<W>();
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| scope.into_held(&self.meta))
    }

    #[inline]
    unsafe fn unlock(&self, token: HeldToken) {
        token.releasing(&self.meta);
        if W::MODE == WaitMode::Spin {
            self.locked.store(false, Ordering::Release);
        } else {
            self.locked.swap(false, Ordering::SeqCst);
            self.meta.queue.notify_one();
        }
        token.released();
    }

    unsafe fn unlock_fair(&self, token: HeldToken) {
        // SAFETY: per the contract.
        unsafe { self.unlock_fair_token(token) }
    }

    fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }

    fn times(&self) -> LockTimesSnapshot {
        self.meta.times.snapshot()
    }

    fn mean_hold_ns(&self) -> u64 {
        self.meta.history.mean_ns()
    }
}

impl_raw_mutex!(RawTtasLock);

#[cfg(not(loom))]
// SAFETY: `lock_until` acquires with the same Acquire CAS (or hand-over) as `lock`, or returns
// `None` without holding the lock.
unsafe impl<W: WaitPolicy> lock_api::RawMutexTimed for RawTtasLock<W> {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;

    fn try_lock_for(&self, timeout: std::time::Duration) -> Option<HeldToken> {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.lock_until(deadline),
            None => Some(RawLock::lock(self)),
        }
    }

    fn try_lock_until(&self, deadline: std::time::Instant) -> Option<HeldToken> {
        self.lock_until(deadline)
    }
}
