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
    meta: LockMeta,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> RawTtasLock<W> {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawTtasLock {
            locked: AtomicBool::new(false),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        RawTtasLock {
            locked: AtomicBool::new(false),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
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
            waited += wait_until::<W>(&w, &mut || !self.locked.load(Ordering::Relaxed));
            if self
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
