//! Ticket lock: FIFO by a take-a-number counter.

use super::{impl_raw_mutex, queued_class, RawLock};
use crate::hook::PriorityClass;
use crate::stats::LockTimesSnapshot;
use crate::sync::{AtomicU32, Ordering};
use crate::wait::{
    wait_until, ClassScope, HeldToken, Informed, LockMeta, WaitFor, WaitMode, WaitPolicy,
};
use crossbeam_utils::CachePadded;
use std::marker::PhantomData;

/// Ticket lock: an arriving thread takes the next ticket and waits until `serving` reaches it;
/// FIFO. The waiter whose ticket is next publishes `ImmediateWaiter` (it promotes itself: only
/// the owner writes its class here, so no atomic update is needed); the others `Waiter`.
/// A releaser wakes exactly the parked thread whose ticket is now served. The expected wait of
/// a waiter is its distance to the head times the mean hold time.
pub struct RawTicketLock<W: WaitPolicy = Informed> {
    next: CachePadded<AtomicU32>,
    serving: AtomicU32,
    meta: LockMeta,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> RawTicketLock<W> {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawTicketLock {
            next: CachePadded::new(AtomicU32::new(0)),
            serving: AtomicU32::new(0),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        RawTicketLock {
            next: CachePadded::new(AtomicU32::new(0)),
            serving: AtomicU32::new(0),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    #[cold]
    fn lock_slow(&self, scope: ClassScope, my: u32, serving: u32) -> HeldToken {
        self.meta.history.start_sampling();
        let ahead = my.wrapping_sub(serving);
        let class = queued_class(ahead as usize);
        scope.publish(class);
        let cell = scope.cell();
        let w = WaitFor {
            queue: &self.meta.queue,
            key: my as usize,
            expected_ns: self.meta.history.mean_ns() * ahead as u64,
            holder_tid: self.meta.holder_tid.load(Ordering::Relaxed),
            awaited: self.meta.awaited(),
            class,
            cell,
            what: crate::hook::WaitOn::Lock(self as *const Self as usize),
        };
        let mut promoted = ahead == 1;
        let waited = wait_until::<W>(&w, &mut || {
            let s = self.serving.load(Ordering::Acquire);
            if s == my {
                return true;
            }
            if !promoted && s.wrapping_add(1) == my {
                promoted = true;
                if let Some(c) = cell {
                    c.set(PriorityClass::ImmediateWaiter);
                }
            }
            false
        });
        self.meta.times.add_wait(waited);
        scope.into_held(&self.meta)
    }

    /// Takes the ticket being served if nobody holds it: the lock's compare-and-swap from free.
    #[inline]
    fn take_if_free(&self) -> bool {
        let s = self.serving.load(Ordering::Acquire);
        self.next
            .compare_exchange(s, s.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
}

impl<W: WaitPolicy> Default for RawTicketLock<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: a thread enters only when `serving` equals its unique ticket (Acquire load); the holder
// releases by advancing `serving` (Release or SeqCst).
unsafe impl<W: WaitPolicy> RawLock for RawTicketLock<W> {
    #[inline]
    fn lock(&self) -> HeldToken {
        let scope = ClassScope::enter::<W>();
        let door = self.meta.crowd_door::<W>(&|| self.take_if_free(), &|| {
            let s = self.serving.load(Ordering::SeqCst);
            self.next.load(Ordering::SeqCst).wrapping_sub(s) >= 1
        });
        if let Some(waited) = door {
            if waited != 0 {
                self.meta.times.add_wait(waited);
            }
            return scope.into_held(&self.meta);
        }
        let my = self.next.fetch_add(1, Ordering::Relaxed);
        let serving = self.serving.load(Ordering::Acquire);
        if serving == my {
            return scope.into_held(&self.meta);
        }
        self.lock_slow(scope, my, serving)
    }

    #[inline]
    fn try_lock(&self) -> Option<HeldToken> {
        let scope = ClassScope::enter::<W>();
        self.take_if_free().then(|| scope.into_held(&self.meta))
    }

    #[inline]
    unsafe fn unlock(&self, token: HeldToken) {
        token.releasing(&self.meta);
        if W::MODE == WaitMode::Spin {
            // Only the holder writes `serving`.
            let s = self.serving.load(Ordering::Relaxed);
            self.serving.store(s.wrapping_add(1), Ordering::Release);
        } else {
            let now = self.serving.fetch_add(1, Ordering::SeqCst).wrapping_add(1);
            if W::MODE == WaitMode::Informed {
                // Wake the new holder and, off the critical path, the new next-in-line, so that
                // it is running when its turn comes (002: the immediate waiter may spin).
                let (holder, next) = (now as usize, now.wrapping_add(1) as usize);
                // Admit from the crowd door only where nobody took a ticket behind ours.
                self.meta
                    .notify_released(&|k| k == holder || k == next, || {
                        self.next.load(Ordering::SeqCst) == now
                    });
            } else {
                self.meta.queue.notify_key(now as usize);
            }
        }
        token.released();
    }

    fn is_locked(&self) -> bool {
        self.next.load(Ordering::Relaxed) != self.serving.load(Ordering::Relaxed)
    }

    fn times(&self) -> LockTimesSnapshot {
        self.meta.times.snapshot()
    }

    fn mean_hold_ns(&self) -> u64 {
        self.meta.history.mean_ns()
    }

    fn arrival_token(&self) -> usize {
        self.next.load(Ordering::SeqCst) as usize
    }
}

impl_raw_mutex!(RawTicketLock);
