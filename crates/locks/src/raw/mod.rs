//! The raw lock algorithms. Each is generic over a [`WaitPolicy`](crate::WaitPolicy) and
//! implements [`RawLock`] (and, outside `cfg(loom)`, `lock_api::RawMutex`, so that
//! `lock_api::Mutex<RawXxx, T>` is a safe mutex with RAII guards).

use crate::hook::PriorityClass;
use crate::stats::LockTimesSnapshot;
use crate::wait::HeldToken;

mod array;
mod mcs;
mod ticket;
mod ttas;

pub use array::RawArrayLock;
pub use mcs::RawMcsLock;
pub use ticket::RawTicketLock;
pub use ttas::RawTtasLock;

/// The class a waiter of a FIFO lock (ticket, array) publishes: `ImmediateWaiter` when it is
/// next in line (`ahead == 1` places behind the holder), `Waiter` further back.
#[inline]
fn queued_class(ahead: usize) -> PriorityClass {
    if ahead == 1 {
        PriorityClass::ImmediateWaiter
    } else {
        PriorityClass::Waiter
    }
}

/// The operations every raw lock of this crate offers.
///
/// # Safety
/// Implementations provide mutual exclusion with acquire semantics on `lock`/`try_lock` and
/// release semantics on `unlock`.
pub unsafe trait RawLock: Send + Sync {
    /// Acquires the lock, waiting as the lock's policy says.
    fn lock(&self) -> HeldToken;
    /// Acquires the lock if that needs no waiting.
    fn try_lock(&self) -> Option<HeldToken>;
    /// Releases the lock and hands it to the next waiter.
    ///
    /// # Safety
    /// The caller holds the lock through `token`, returned by `lock`/`try_lock` of this lock.
    unsafe fn unlock(&self, token: HeldToken);
    /// Releases the lock so that a waiting thread gets it before any thread that arrives later
    /// (`lock_api::RawMutexFair`). The FIFO locks (ticket, MCS, array) always hand over in
    /// arrival order, so for them this is [`unlock`](Self::unlock); the TTAS lock hands the held
    /// lock to a parked waiter.
    ///
    /// # Safety
    /// As for [`unlock`](Self::unlock).
    unsafe fn unlock_fair(&self, token: HeldToken) {
        // SAFETY: per the contract.
        unsafe { self.unlock(token) }
    }
    /// Whether the lock is held now (a snapshot).
    fn is_locked(&self) -> bool;
    /// This lock's wait and hold times (see [`crate::stats`]).
    fn times(&self) -> LockTimesSnapshot;
    /// Mean of the last 8 sampled hold times, in nanoseconds (Bellosa's rule; 0 until the lock
    /// has been contended).
    fn mean_hold_ns(&self) -> u64;
    /// A value that changes whenever a thread joins the lock's queue (the ticket counter or the
    /// queue tail); FIFO tests use it to know that a waiter has enqueued. Not for other uses.
    #[doc(hidden)]
    fn arrival_token(&self) -> usize {
        0
    }
}

/// Implements `lock_api::RawMutex` by delegation to [`RawLock`].
macro_rules! impl_raw_mutex {
    ($ty:ident $(, const $n:ident: usize)?) => {
        #[cfg(not(loom))]
        // SAFETY: delegates to the RawLock implementation, which provides mutual exclusion.
        unsafe impl<W: $crate::wait::WaitPolicy $(, const $n: usize)?> lock_api::RawMutex for $ty<W $(, $n)?> {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = Self::new();
            type Guard = $crate::wait::HeldToken;
            #[inline]
            fn lock(&self) -> $crate::wait::HeldToken {
                $crate::raw::RawLock::lock(self)
            }
            #[inline]
            fn try_lock(&self) -> Option<$crate::wait::HeldToken> {
                $crate::raw::RawLock::try_lock(self)
            }
            #[inline]
            unsafe fn unlock(&self, guard: $crate::wait::HeldToken) {
                // SAFETY: lock_api passes the token of the acquisition being released.
                unsafe { $crate::raw::RawLock::unlock(self, guard) }
            }
            #[inline]
            fn is_locked(&self) -> bool {
                $crate::raw::RawLock::is_locked(self)
            }
        }

        #[cfg(not(loom))]
        // SAFETY: delegates to the RawLock implementation (see `RawLock::unlock_fair`).
        unsafe impl<W: $crate::wait::WaitPolicy $(, const $n: usize)?> lock_api::RawMutexFair for $ty<W $(, $n)?> {
            #[inline]
            unsafe fn unlock_fair(&self, guard: $crate::wait::HeldToken) {
                // SAFETY: lock_api passes the token of the acquisition being released.
                unsafe { $crate::raw::RawLock::unlock_fair(self, guard) }
            }
        }
    };
}
pub(crate) use impl_raw_mutex;
