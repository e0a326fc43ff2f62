//! Test-and-test-and-set lock with a quick spin, informed waiting and a "wake-up in flight" mark.

use super::{impl_raw_mutex, RawLock};
use crate::hook::PriorityClass;
use crate::stats::{self, LockTimesSnapshot};
use crate::sync::{AtomicU32, Ordering};
use crate::wait::sample_this_hold;
use crate::wait::{
    quick_spin, wait_until_woken, yield_phase, ClassScope, HeldToken, Informed, LockMeta, WaitFor,
    WaitMode, WaitPolicy,
};
use std::marker::PhantomData;
use std::sync::atomic::AtomicU32 as StdAtomicU32;

/// The lock is held.
const LOCKED: u32 = 1;
/// A releaser woke a parked waiter that has not run since ("waker in flight"): later releases
/// wake nobody until it has competed again.
const WAKING: u32 = 2;
/// A fair unlock left `LOCKED` set for a waiter to take over (`unlock_fair`): the first waiter
/// that clears this mark owns the lock.
const HANDOFF: u32 = 4;
/// Test-and-test-and-set lock: waiters read the word (locally cached) and try the atomic
/// compare-and-swap only when it looks free. Not FIFO: the lock barges. Its waiters publish
/// `Waiter` (no thread is "next" in a TTAS lock).
///
/// # Protocol
/// - **Acquire**: one compare-and-swap `0 → LOCKED` on the fast path. On failure, a quick spin
///   (a few hundred nanoseconds of backoff, no bookkeeping); then informed waiting (publish
///   `Waiter`, spin or park as the scheduler says, see the crate docs).
/// - **Release** never hands the lock over: it clears `LOCKED` (one `fetch_sub`, `SeqCst`), and
///   only if threads are parked *and no wake-up is in flight* it sets `WAKING` and wakes one. A
///   woken thread clears `WAKING` when it resumes and then competes like any arrival. So a hot
///   lock costs at most one wake-up (one switch) per "generation" of waiters instead of one per
///   release, and a releaser whose own loop takes the lock again keeps running, as an OS thread
///   does with a futex mutex. Mutual exclusion is the `LOCKED` bit alone.
/// - **No lost wake-up**: a waiter links itself into the queue and re-checks `LOCKED` after a
///   `SeqCst` fence; a releaser clears `LOCKED` with a `SeqCst` RMW, then reads the queue's count
///   (the queue's protocol). `WAKING` only suppresses wake-ups while a woken thread is on its
///   way; that thread clears it before it looks at the lock, and a waker that found nobody to
///   pop clears it and looks again (`wake_one`). The loom models in `tests/loom.rs` check both.
#[repr(C)]
pub struct RawTtasLock<W: WaitPolicy = Informed> {
    state: AtomicU32,
    /// 0 until a wait went past the quick spin, then 1 for good ("informing on"): from then on
    /// holders publish `Holder` and time one hold in [`HOLD_SAMPLE_EVERY`](crate::wait::HOLD_SAMPLE_EVERY) (picked by a per-thread
    /// count, [`sample_this_hold`]). Written once; every acquisition reads it, on the word's
    /// cache line.
    contended: StdAtomicU32,
    meta: LockMeta,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> RawTtasLock<W> {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawTtasLock {
            state: AtomicU32::new(0),
            contended: StdAtomicU32::new(0),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        RawTtasLock {
            state: AtomicU32::new(0),
            contended: StdAtomicU32::new(0),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// Takes the lock if it looks free (test, then test-and-set).
    #[inline]
    fn try_acquire(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & LOCKED == 0
            && self
                .state
                .compare_exchange(s, s | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// The guard state of an acquisition that waited for nothing (`lock`'s and `try_lock`'s fast
    /// path), before any class is known.
    ///
    /// A lock that was never contended (`contended == 0`), with statistics off, publishes
    /// nothing: the holder's class is read only by threads that wait, and there are none (the
    /// first waiter that goes past the quick spin sets `contended`, and from then on every holder
    /// publishes `Holder`). So this is one load and one flag test, with no thread-local, no
    /// class store and no restore at the release; the informing path is out of line
    /// (`held_informing`).
    #[inline(always)]
    fn held_fast(&self) -> HeldToken {
        if self.contended.load(Ordering::Relaxed) == 0 && !stats::enabled() {
            return HeldToken::unpublished();
        }
        self.held_informing()
    }

    /// [`held_fast`](Self::held_fast) once the lock has been contended (or statistics are on):
    /// saves the class and publishes `Holder`, counts and samples the hold.
    #[inline(never)]
    fn held_informing(&self) -> HeldToken {
        self.held_counted(ClassScope::enter_for_scheduler::<W>())
    }

    /// The guard state of an acquisition that waited (its class scope entered, `Waiter`
    /// published under informed waiting): publishes `Holder`, counts and samples the hold.
    #[inline]
    fn held(&self, scope: ClassScope) -> HeldToken {
        if self.contended.load(Ordering::Relaxed) == 0 && !stats::enabled() {
            // Only `AlwaysSpin` waits without marking the lock contended; it publishes nothing.
            return scope.into_held_untimed();
        }
        self.held_counted(scope)
    }

    /// [`held`](Self::held) once the lock has been contended (or statistics are on). The
    /// choice of the timed hold is the holder's thread's count, not a counter in the lock: a
    /// contended lock's line moves between the cores, and a store to it per acquisition was
    /// 6 % of a 2-thread loop's samples.
    #[inline(never)]
    fn held_counted(&self, scope: ClassScope) -> HeldToken {
        let sample = self.contended.load(Ordering::Relaxed) != 0 && sample_this_hold();
        scope.into_held_sampled(&self.meta, sample, W::MODE == WaitMode::Informed)
    }

    /// Marks the lock contended (a wait went past the quick spin): from now on its holders
    /// publish `Holder` and time one hold in [`HOLD_SAMPLE_EVERY`](crate::wait::HOLD_SAMPLE_EVERY). Called before the waiter
    /// publishes `Waiter`, so that whoever sees the waiter's class sees the mark too.
    #[inline]
    fn mark_contended(&self) {
        if W::MODE != WaitMode::Spin && self.contended.load(Ordering::Relaxed) == 0 {
            self.contended.store(1, Ordering::Relaxed);
        }
    }

    /// Whether the lock looks free, or handed over by a fair unlock.
    #[inline]
    fn may_take(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & LOCKED == 0 || s & HANDOFF != 0
    }

    /// Takes over a lock handed over by a fair unlock (it stayed locked: clear the mark only).
    #[inline]
    fn took_over(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & HANDOFF != 0
            && self
                .state
                .compare_exchange(s, s & !HANDOFF, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Acquires the lock unless `deadline` passes first (`lock_api::RawMutexTimed`, which the
    /// loom build leaves out).
    #[cfg_attr(loom, allow(dead_code))]
    pub(super) fn lock_until(&self, deadline: std::time::Instant) -> Option<HeldToken> {
        if self.took_over() || self.try_acquire() {
            return Some(self.held_fast());
        }
        let scope = ClassScope::enter_for_scheduler::<W>();
        self.mark_contended();
        scope.publish(PriorityClass::Waiter);
        let mut free = true;
        loop {
            if !free {
                scope.restore();
                return None;
            }
            free = crate::timed::park_until(
                &self.meta.queue,
                0,
                &mut || self.may_take(),
                Some(deadline),
            );
            // A release may have woken this thread (and set `WAKING`): clear the mark as
            // `lock_slow`'s woken waiters do, or every later release would wake nobody. When
            // it was somebody else's wake-up in flight, the cost is one spare wake-up later.
            self.state.fetch_and(!WAKING, Ordering::SeqCst);
            if self.took_over() || self.try_acquire() {
                return Some(self.held(scope));
            }
        }
    }

    /// Hands the lock to a parked waiter without unlocking it, if one is parked
    /// (`lock_api::RawMutexFair`): `LOCKED` stays set and `HANDOFF` marks it as the next
    /// owner's; otherwise an ordinary unlock.
    ///
    /// # Safety
    /// As for `RawLock::unlock`.
    pub(super) unsafe fn unlock_fair_token(&self, token: HeldToken) {
        if W::MODE != WaitMode::Spin && self.meta.queue.has_waiters() {
            token.releasing(&self.meta);
            self.state.fetch_or(HANDOFF, Ordering::SeqCst);
            if self.meta.queue.notify_one() {
                // The woken waiter takes the lock over (`took_over`).
                token.released();
                return;
            }
            // Nobody was parked after all: take the mark back unless a spinning waiter took
            // the lock over meanwhile, and release normally. (Retried while only `WAKING`
            // changes under us: giving up there would leave the lock handed to nobody.)
            let mut s = self.state.load(Ordering::SeqCst);
            loop {
                if s & HANDOFF == 0 {
                    token.released();
                    return;
                }
                match self.state.compare_exchange(
                    s,
                    s & !(HANDOFF | LOCKED),
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                ) {
                    Ok(_) => break,
                    Err(now) => s = now,
                }
            }
            if self.meta.queue.has_waiters() {
                self.wake_one();
            }
            token.released();
            return;
        }
        // SAFETY: per the contract.
        unsafe { self.unlock(token) }
    }

    #[cold]
    fn lock_slow(&self) -> HeldToken {
        // No quick spin and no yield phase where the kernel last reported more runnable threads
        // than CPUs: there the holder may be waiting for this CPU (informed waiting parks at
        // once, 002; with yields, 8 threads on 2 CPUs ran 10-20 % slower).
        let crowded = W::MODE == WaitMode::Informed && crate::os::oversubscribed_hint();
        if W::MODE != WaitMode::Block && !crowded {
            if let Some(pauses) = quick_spin(|| self.try_acquire()) {
                self.meta.times.holder_add_wait(stats::pauses_to_ns(pauses));
                return self.held_fast();
            }
        }
        if W::MODE == WaitMode::Informed && !crowded {
            if let Some(ns) = yield_phase(|| self.try_acquire()) {
                self.meta.times.holder_add_wait(ns);
                return self.held_fast();
            }
        }
        let scope = ClassScope::enter_for_scheduler::<W>();
        self.mark_contended();
        scope.publish(PriorityClass::Waiter);
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
            waited += wait_until_woken::<W>(&w, &mut || self.may_take(), &|| {
                // Our wake-up has arrived: let the next release wake someone again.
                self.state.fetch_and(!WAKING, Ordering::SeqCst);
            });
            if self.took_over() || self.try_acquire() {
                break;
            }
        }
        self.meta.times.holder_add_wait(waited);
        self.held(scope)
    }

    /// After a release that found parked threads: wakes one unless a wake-up is in flight.
    #[cold]
    fn wake_one(&self) {
        loop {
            if self.state.fetch_or(WAKING, Ordering::SeqCst) & WAKING != 0 {
                return; // in flight: that thread will compete (and release in its turn)
            }
            if self.meta.queue.notify_one() {
                return; // the woken thread clears WAKING
            }
            // The parked thread left by itself (it saw the lock free). Take the mark back, then
            // look again: a release that came meanwhile saw the mark and woke nobody.
            self.state.fetch_and(!WAKING, Ordering::SeqCst);
            if self.state.load(Ordering::SeqCst) & LOCKED != 0 || !self.meta.queue.has_waiters() {
                return; // the holder's release (which sees no mark) or nobody needs a wake-up
            }
        }
    }
}

impl<W: WaitPolicy> Default for RawTtasLock<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the LOCKED bit is taken with an Acquire CAS that requires it clear, and released with a
// Release (or SeqCst) RMW or store by the holder only.
unsafe impl<W: WaitPolicy> RawLock for RawTtasLock<W> {
    #[inline(always)]
    fn lock(&self) -> HeldToken {
        if self
            .state
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return self.held_fast();
        }
        self.lock_slow()
    }

    #[inline]
    fn try_lock(&self) -> Option<HeldToken> {
        self.try_acquire().then(|| self.held_fast())
    }

    #[inline(always)]
    unsafe fn unlock(&self, token: HeldToken) {
        token.releasing(&self.meta);
        if W::MODE == WaitMode::Spin {
            // Nobody parks: only LOCKED is ever set.
            self.state.store(0, Ordering::Release);
        } else {
            // Clears LOCKED (the holder set it) in one read-modify-write, then looks for waiters.
            let was = self.state.fetch_sub(LOCKED, Ordering::SeqCst);
            if was & WAKING == 0 && self.meta.queue.has_waiters() {
                self.wake_one();
            }
        }
        token.released();
    }

    unsafe fn unlock_fair(&self, token: HeldToken) {
        // SAFETY: per the contract.
        unsafe { self.unlock_fair_token(token) }
    }

    fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) & LOCKED != 0
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
