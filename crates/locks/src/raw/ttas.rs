//! Test-and-test-and-set lock with a quick spin, informed waiting, a "threads are parked" bit and
//! a "wake-up in flight" mark in its word.

use super::{impl_raw_mutex, RawLock};
use crate::green_wait;
use crate::hook::{current_hook, hook_installed, scheduler_class_cell, PriorityClass};
use crate::interface::ThreadTag;
use crate::stats::{self, LockTimesSnapshot};
use crate::sync::{spin_hint, AtomicU32, Ordering};
use crate::wait::{
    awaited_in, poll_while_changing_hands, quick_spin, spin_budget_ns, wait_until_woken,
    yield_phase, ClassScope, HeldToken, Informed, LockMeta, WaitFor, WaitMode, WaitPolicy,
};
use std::marker::PhantomData;
use std::sync::atomic::AtomicU32 as StdAtomicU32;

mod informing;

/// The lock is held.
const LOCKED: u32 = 1;
/// Threads are parked in the lock's queue (or one linked itself and is about to park): a release
/// that sees it goes to the slow path and wakes one. Set by a waiter after it linked itself and
/// before it parks; cleared only under the queue's guard, by a waker that found the queue empty
/// or popped its last thread.
const PARKED: u32 = 2;
/// A releaser woke a parked waiter that has not run since ("waker in flight"): later releases
/// wake nobody until it has competed again.
const WAKING: u32 = 4;
/// A fair unlock left `LOCKED` set for a waiter to take over (`unlock_fair`): the first waiter
/// that clears this mark owns the lock.
const HANDOFF: u32 = 8;
/// "Informing on", set for good by a waiter on a thread that a scheduler hook schedules (a
/// green thread, where classes are read) that went past the quick spin, once the lock's holds
/// read as spanning switches ([`holds_worth_informing`]): from then on
/// holders publish `Holder` and time one hold in
/// [`HOLD_SAMPLE_EVERY`](crate::wait::history::HOLD_SAMPLE_EVERY) (picked by a per-thread count,
/// [`sample_this_hold`](crate::wait::history::sample_this_hold)). In the word, so that the fast path's compare-and-swap `0 → LOCKED`
/// fails on an informing lock and the acquisition does its bookkeeping (the thread-local
/// lookups, the sampling count) *before* it takes the lock (`lock_informing`,
/// `acquire_informing`): inside the critical section only the `Holder` store remains.
///
/// Why only for long holds: a green thread stops running only where it parks or yields, so a
/// holder's class can tell the scheduler something only about holds long enough to span such
/// a switch. On a hot lock with short holds the informing acquisition (the failed
/// compare-and-swap, the bookkeeping, the class and tag stores beside the word) lengthens
/// each hand-over between the cores, and the lock turned lock-bound: 8 green threads on 2
/// workers through `multiple_ctr`'s loop (holds of tens of nanoseconds) took 1.4× as long with
/// informing on as with it off; of 000's seven benchmarks five were faster with it off and two
/// (`mlt_ctr_mlt_lock`, `prod_cons`) level within their run-to-run spread.
///
/// [`holds_worth_informing`]: RawTtasLock::holds_worth_informing
const INFORMING: u32 = 16;
/// Looks at the word of an OS-thread waiter on an oversubscribed machine before it parks
/// ([`RawTtasLock::poll_while_held`]).
const OVERSUBSCRIBED_POLLS: u32 = if cfg!(loom) { 1 } else { 100 };
/// Test-and-test-and-set lock: waiters read the word (locally cached) and try the atomic
/// compare-and-swap only when it looks free. Not FIFO: the lock barges. Its waiters publish
/// `Waiter` (no thread is "next" in a TTAS lock).
///
/// # Protocol
/// - **Acquire**: one compare-and-swap `0 → LOCKED` on the fast path (on an informing lock,
///   whose word reads `INFORMING` when free, the bookkeeping and then `INFORMING → INFORMING |
///   LOCKED`). On failure, a quick spin
///   (a few hundred nanoseconds of backoff, no bookkeeping) and, on an OS thread, a few yields,
///   both only while nobody is parked (`PARKED` clear; after parking_lot's `SpinWait`); then, on
///   a thread a scheduler hook schedules (a green thread), informed waiting (publish `Waiter`,
///   spin or park as the scheduler says, see the crate docs), and on a plain OS thread a park
///   (the kernel's signals decide only whether it spins and yields first, `lock_os_thread`).
/// - **Park**: a waiter links itself into the queue, then sets `PARKED` with a read-modify-write
///   that requires `LOCKED` set (and no `HANDOFF`), and parks only if that held.
/// - **Release** never hands the lock over: it swaps the word to 0 (one `xchg`, as std's futex
///   mutex), and if more than `LOCKED` was set it puts `PARKED` and `INFORMING` back (not
///   `WAKING`: see `released_marked` for why the window between the two loses no wake-up); a
///   bookkept hold (mostly on an informing lock) swaps in `INFORMING` where it read it set.
///   Only if `PARKED` was set *and no wake-up is in flight* (or the lock is free again when the
///   marks go back) it wakes one: under the queue's guard it pops one thread, sets `WAKING` and
///   clears `PARKED` if the queue is now empty (or only clears `PARKED` if it was empty). A
///   woken thread clears `WAKING` when it resumes and then competes like any arrival. So a hot
///   lock costs at most one wake-up (one switch) per "generation" of waiters instead of one per
///   release, and a releaser whose own loop takes the lock again keeps running, as an OS thread
///   does with a futex mutex. Mutual exclusion is the `LOCKED` bit alone.
/// - **No lost wake-up**: all on the one word, by its modification order and the queue guard's
///   happens-before. If a waiter parks, its `PARKED` step saw `LOCKED` set; the release of that
///   hold comes later on the word and sees `PARKED` (a release's swap takes it off only to put
///   it back before it wakes anyone), unless a waker cleared it in between, and a
///   waker clears it only under the guard with the queue empty, which it cannot be (the waiter
///   linked itself under the guard before its `PARKED` step, so a guard section that comes after
///   the link sees it, and one that comes before it precedes the `PARKED` step on the word).
///   `WAKING` only suppresses wake-ups while a woken thread is on its way; that thread clears it
///   before it looks at the lock. The loom models in `tests/loom.rs` check both.
#[repr(C)]
pub struct RawTtasLock<W: WaitPolicy = Informed> {
    state: AtomicU32,
    /// The tag of the last holder that published a class (`ThreadTag`; 0: none yet), for the
    /// waiters' question "does the holder run?" (`green_may_spin`). Beside the word, in what
    /// would be padding: the holder stores it on the line its compare-and-swap has just taken.
    holder: StdAtomicU32,
    meta: LockMeta,
    /// Under loom (no clock, no hold samples): whether the lock's holds count as long, so that
    /// a waiter turns informing on ([`holds_worth_informing`](Self::holds_worth_informing)).
    #[cfg(loom)]
    long_holds: bool,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> RawTtasLock<W> {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawTtasLock {
            state: AtomicU32::new(0),
            holder: StdAtomicU32::new(0),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// An unlocked lock whose holds count as long: a waiter past the quick spin turns
    /// informing on.
    #[cfg(loom)]
    pub fn new() -> Self {
        RawTtasLock {
            state: AtomicU32::new(0),
            holder: StdAtomicU32::new(0),
            meta: LockMeta::new(),
            long_holds: true,
            _policy: PhantomData,
        }
    }

    /// An unlocked lock whose holds count as short: no waiter turns informing on, as on a hot
    /// lock with short holds.
    #[cfg(loom)]
    pub fn with_short_holds() -> Self {
        RawTtasLock {
            long_holds: false,
            ..Self::new()
        }
    }

    /// Whether a waiter has turned informing on.
    #[cfg(loom)]
    pub fn is_informing(&self) -> bool {
        self.state.load(Ordering::Relaxed) & INFORMING != 0
    }

    /// Takes the lock if it looks free (test, then test-and-set); keeps the other bits.
    #[inline]
    fn try_acquire(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & LOCKED == 0
            && self
                .state
                .compare_exchange(s, s | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Whether the lock looks free, or handed over by a fair unlock to a waiter that a notifier
    /// `popped` (see [`took_over`](Self::took_over)).
    #[inline]
    fn may_take(&self, popped: bool) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & LOCKED == 0 || popped && s & HANDOFF != 0
    }

    /// A linked waiter's last look before it parks: sets `PARKED` if the lock is held (and not
    /// handed over to it: `popped`, see [`took_over`](Self::took_over)) and returns whether to
    /// park. A thread that no notifier popped parks behind a hand-over like behind any hold: the
    /// thread that takes the lock over releases it later and sees `PARKED`. Coherence on the
    /// word is all it needs (see the protocol): every waker that clears `PARKED` does so under
    /// the queue guard, which this thread held to link itself before this read-modify-write.
    fn park_marked(&self, popped: bool) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & LOCKED == 0 || popped && s & HANDOFF != 0 {
                return false;
            }
            if s & PARKED != 0 {
                return true;
            }
            match self
                .state
                .compare_exchange(s, s | PARKED, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// [`park_marked`](Self::park_marked) for a green waiter: stamps the park first, so that
    /// the release that sees it records whether the hold spanned a switch
    /// ([`HoldHistory::stamp_park`](crate::wait::history::HoldHistory::stamp_park): how a lock whose
    /// long holds begin on a free lock comes to inform).
    fn park_marked_stamped(&self, popped: bool) -> bool {
        let stamp = self.meta.history.stamp_park();
        let parks = self.park_marked(popped);
        if let (false, Some(stamp)) = (parks, stamp) {
            self.meta.history.unstamp_park(stamp);
        }
        parks
    }

    /// Whether no thread is parked (the quick spin and the yield phase run only then: a thread
    /// that finds others parked is behind them and parks too, as with parking_lot's `SpinWait`).
    #[inline]
    fn nobody_parked(&self) -> bool {
        self.state.load(Ordering::Relaxed) & PARKED == 0
    }

    /// Takes over a lock handed over by a fair unlock (it stayed locked: clear the mark only).
    ///
    /// Only a waiter that a notifier popped during its acquisition calls this: the thread the
    /// fair unlock woke, or one an earlier release woke, both waiting since before the hand-over.
    /// A thread that arrives afterwards must not: the fair unlock's own thread calling `lock`
    /// again at once (`MutexGuard::bump`, parking_lot's condvar requeue test) took every
    /// hand-over back before the woken waiter ran, and on a green thread's worker that waiter
    /// never got the lock.
    #[inline]
    fn took_over(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & HANDOFF != 0
            && self
                .state
                .compare_exchange(s, s & !HANDOFF, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Our wake-up has arrived (or we are leaving): let the next release wake someone again.
    /// When it was somebody else's wake-up in flight, the cost is one spare wake-up later.
    #[inline]
    fn clear_waking(&self) {
        self.state.fetch_and(!WAKING, Ordering::Relaxed);
    }

    /// Acquires the lock unless `deadline` passes first (`lock_api::RawMutexTimed`, which the
    /// loom build leaves out).
    #[cfg_attr(loom, allow(dead_code))]
    pub(super) fn lock_until(&self, deadline: std::time::Instant) -> Option<HeldToken> {
        if self.try_acquire() {
            return Some(self.held_fast());
        }
        let scope = ClassScope::enter_for_scheduler::<W>();
        self.mark_contended(&scope);
        scope.publish(PriorityClass::Waiter);
        let hook = current_hook();
        hook.note_wait(crate::hook::WaitOn::Lock(self as *const Self as usize));
        let mut popped = false;
        loop {
            // `park_marked` as the condition: it sets `PARKED` whenever it finds the lock held.
            let parked = self.meta.queue.park_timed(
                hook,
                0,
                &mut || self.park_marked(popped),
                Some(deadline),
            );
            if parked == Some(true) {
                // A release may have woken this thread (and set `WAKING`): clear the mark as
                // `lock_slow`'s woken waiters do, or every later release would wake nobody.
                popped = true;
                self.clear_waking();
            }
            // Also after a timeout, one last try: a hand-over to this thread must be taken (the
            // queue reports a pop that raced the deadline as a pop).
            if popped && self.took_over() || self.try_acquire() {
                return Some(self.held(scope));
            }
            if parked.is_none() || std::time::Instant::now() >= deadline {
                scope.restore();
                return None;
            }
        }
    }

    /// The model of a timed acquisition whose deadline passes during its first park (loom has
    /// no clock; its timed park returns at once, which the queue takes for the timeout): takes
    /// the lock if it is free, else links itself, parks once and then takes the lock if it is
    /// free or leaves with `None`. What `lock_until` does when its deadline passes, including a
    /// waiter that a release popped (and marked `WAKING` for) just as it timed out.
    #[cfg(loom)]
    pub fn lock_or_leave(&self) -> Option<HeldToken> {
        if self.try_acquire() {
            return Some(self.held_fast());
        }
        let scope = ClassScope::enter_for_scheduler::<W>();
        self.mark_contended(&scope);
        scope.publish(PriorityClass::Waiter);
        let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        // A timeout that raced a pop counts as the pop (`park_timed` reports it so).
        let popped = self
            .meta
            .queue
            .park_timed(
                crate::hook::current_hook(),
                0,
                &mut || self.park_marked(false),
                Some(far),
            )
            .unwrap_or(false);
        self.clear_waking();
        if popped && self.took_over() || self.try_acquire() {
            return Some(self.held(scope));
        }
        scope.restore();
        None
    }

    /// [`RawLock::unlock_fair`], returning whether it handed the lock to a parked waiter (the
    /// model build's view of the hand-over, for the loom models).
    ///
    /// # Safety
    /// As for `RawLock::unlock`.
    #[cfg(loom)]
    pub unsafe fn unlock_fair_handed(&self, token: HeldToken) -> bool {
        // SAFETY: per the contract.
        unsafe { self.unlock_fair_token(token) }
    }

    /// Hands the lock to a parked waiter without unlocking it, if one is parked
    /// (`lock_api::RawMutexFair`): `LOCKED` stays set and `HANDOFF` marks it as the popped
    /// waiter's (see [`took_over`](Self::took_over)); otherwise an ordinary unlock. Returns
    /// whether it handed the lock over.
    ///
    /// # Safety
    /// As for `RawLock::unlock`.
    pub(super) unsafe fn unlock_fair_token(&self, token: HeldToken) -> bool {
        if W::MODE != WaitMode::Spin && self.state.load(Ordering::Relaxed) & PARKED != 0 {
            token.releasing(&self.meta);
            self.meta.history.record_park_outcome();
            let handed = self.meta.queue.notify_one_deciding(
                |linked| {
                    if !linked {
                        self.state.fetch_and(!PARKED, Ordering::Relaxed);
                    }
                    linked
                },
                // The popped waiter (or a spinning one) takes the lock over (`took_over`).
                |more| self.popped_one(HANDOFF, more),
            );
            if !handed {
                self.release();
            }
            token.released();
            return handed;
        }
        // SAFETY: per the contract.
        unsafe { self.unlock(token) };
        false
    }

    #[cold]
    fn lock_slow(&self, seen: u32) -> HeldToken {
        // The word was not 0 but the lock may be free (only `INFORMING`, `PARKED` or `WAKING`
        // set): an informing lock's every acquisition comes here, to do its bookkeeping before
        // it takes the lock.
        if seen & LOCKED == 0 {
            if seen & INFORMING != 0 {
                if let Some(t) = self.acquire_informing() {
                    return t;
                }
            } else if self.try_acquire() {
                return self.held_fast();
            }
        }
        // A plain OS thread (no scheduler hook: nobody reads its class) waits as parking_lot's
        // mutex does, with the kernel's signals (`lock_os_thread`).
        if W::MODE == WaitMode::Informed && !hook_installed() {
            return self.lock_os_thread(seen);
        }
        // A green thread always tries the quick spin (a few hundred nanoseconds, no hook call)
        // and asks the runtime only before the yield phase: the holder's tag beside the word is
        // stored just after the holder's compare-and-swap, the one this thread's has just lost
        // to, so a look now reads the previous holder's tag (often a thread queued on this
        // worker, which the runtime rightly calls not running). 8 green threads on 2 workers
        // (the scaling suite's mutex row) skipped the spin at a fifth of their contended
        // acquisitions that way, and went through the park path for a hold of tens of
        // nanoseconds. Another scheduled thread skips both where the kernel last reported more
        // runnable threads than CPUs (informed waiting parks at once there, 002).
        // A green thread under the polling rule (`green_wait`: `Poll`, or `Auto` on more than
        // two workers) polls first, whether or not others are parked.
        let (crowded, polls) = if W::MODE == WaitMode::Informed {
            let hook = current_hook();
            let green = hook.is_green();
            (
                !green && crate::os::oversubscribed_hint(),
                green && green_wait::polls(|| hook.workers()),
            )
        } else {
            (false, false)
        };
        if polls {
            if let Some(token) = self.acquire_polling() {
                return token;
            }
        }
        if W::MODE != WaitMode::Block && !crowded && self.nobody_parked() {
            // An informing lock's bookkeeping before the spin, not after it (see `INFORMING`).
            let prepared = (self.state.load(Ordering::Relaxed) & INFORMING != 0)
                .then(|| self.before_informing_hold());
            if let Some(pauses) = quick_spin(|| self.try_acquire()) {
                self.meta.times.holder_add_wait(stats::pauses_to_ns(pauses));
                return self.held_after_spin(prepared);
            }
            // Off the line for a while (a green thread yields its worker to the threads queued
            // there if no other waiter of the lock does so; a hooked OS thread yields), unless
            // the lock's holds are longer than half a switch (Bellosa's rule, as in
            // `lock_os_thread`): then the informed wait parks at once, and the worker runs
            // other green threads instead.
            if W::MODE == WaitMode::Informed
                && self.nobody_parked()
                && self.meta.history.mean_ns() <= current_hook().switch_cost_ns() / 2
            {
                // Went past the quick spin: informing on where the holds are long (see
                // `mark_contended`), so that the holders from now on publish their class and
                // leave their tag for the scheduler's questions.
                self.mark_contended_if_scheduled();
                if let Some(ns) = yield_phase(|| self.try_acquire(), &self.meta.yielder) {
                    self.meta.times.holder_add_wait(ns);
                    return self.held_after_spin(prepared);
                }
            }
        }
        let scope = ClassScope::enter_for_scheduler::<W>();
        self.mark_contended(&scope);
        scope.publish(PriorityClass::Waiter);
        // A green thread parks now, without the informed spin, even where the holder runs on
        // another worker: polling that holder's line makes its release pay a transfer, and a
        // parked waiter is woken onto the releaser's worker, where the data is (see
        // `yield_phase`). The expected wait says so to the informed wait, as a barrier's does
        // where more arrivals are missing than can run.
        let green = W::MODE == WaitMode::Informed && current_hook().is_green();
        let mut waited = 0;
        // Whether a notifier popped this thread: only then may it take a hand-over.
        let popped = std::cell::Cell::new(false);
        loop {
            let w = WaitFor {
                queue: &self.meta.queue,
                key: 0,
                expected_ns: if green {
                    u64::MAX
                } else {
                    self.meta.history.mean_ns()
                },
                holder_tid: self.meta.holder_tid.load(Ordering::Relaxed),
                awaited: awaited_in(&self.holder),
                class: PriorityClass::Waiter,
                cell: None,
                what: crate::hook::WaitOn::Lock(self as *const Self as usize),
            };
            waited += wait_until_woken::<W>(
                &w,
                &mut || self.may_take(popped.get()),
                &mut || {
                    if green {
                        self.park_marked_stamped(popped.get())
                    } else {
                        self.park_marked(popped.get())
                    }
                },
                &|| {
                    popped.set(true);
                    self.clear_waking();
                },
            );
            if popped.get() && self.took_over() || self.try_acquire() {
                break;
            }
        }
        self.meta.times.holder_add_wait(waited);
        self.held(scope)
    }

    /// The polling rule (`green_wait`'s `Poll`, and `Auto` on many workers): a green thread
    /// polls while the lock changes hands, whether or not others are parked; `None` (the caller
    /// goes on to park) when it stops changing hands (a long hold, or a holder that does not
    /// run), or where the lock's holds are longer than half a switch.
    ///
    /// Without informing bookkeeping: where the lock is not informing, the poll publishes no
    /// class and times nothing, as the quick spin. The change of hands it watches for is a free
    /// word, a lost compare-and-swap, or a new tag in `holder`, which each thread that takes the
    /// lock from a poll stores there (on the line its compare-and-swap has just taken), as an
    /// informing lock's holders do. On 16 cores the baseline that never parks and keeps no
    /// bookkeeping took 0.35–0.89× std's time on a hot lock where a poll that kept the informing
    /// bookkeeping took as long as parking; on 2 workers the bookkeeping made the polling rule
    /// 1.4× std's time on the same loop, level with parking without it.
    #[inline(never)]
    fn acquire_polling(&self) -> Option<HeldToken> {
        let hook = current_hook();
        if self.meta.history.mean_ns() > hook.switch_cost_ns() / 2 {
            return None;
        }
        let tag = ThreadTag::of(scheduler_class_cell()).to_bits();
        let ns = poll_while_changing_hands(
            hook,
            || self.try_acquire(),
            || {
                let s = self.state.load(Ordering::Relaxed);
                (s & LOCKED == 0, self.holder.load(Ordering::Relaxed))
            },
            spin_budget_ns(hook),
        )?;
        self.holder.store(tag, Ordering::Relaxed);
        self.meta.times.holder_add_wait(ns);
        Some(self.held_after_spin(None))
    }

    /// The algorithm's part of an unlock: clears `LOCKED`, leaving `base` (see
    /// [`release_to`](Self::release_to)), and wakes a parked thread if needed.
    #[inline(always)]
    fn release_word(&self, base: u32) {
        if W::MODE == WaitMode::Spin {
            // Nobody parks: only LOCKED is ever set.
            self.state.store(0, Ordering::Release);
        } else {
            self.release_to(base);
        }
    }

    /// An unlock whose token has a class to restore or a hold to time (an informing lock, or
    /// statistics on): out of line, so that the uncontended loop carries one test of the token.
    #[inline(never)]
    fn unlock_bookkept(&self, token: HeldToken) {
        token.releasing(&self.meta);
        // `INFORMING` is set for good: where the hold began on an informing word (the token's
        // mark) the swap puts it in without a look at the word. A look costs a second transfer
        // of the line where a waiter read it during the hold (a read miss, then the swap's
        // ownership request), and it lengthens the hold that the waiters wait for (8 green
        // threads on 2 workers, the scaling suite's mutex row: this release was 13 % of the
        // samples, a third of them on the load). Otherwise the holder's read of the word (a
        // releaser's window may hide the bit, and then the swap's result puts it back).
        let base = if token.lock_mark() {
            INFORMING
        } else {
            self.state.load(Ordering::Relaxed) & INFORMING
        };
        self.release_word(base);
        token.released();
    }

    /// The contended acquisition of a plain OS thread under informed waiting (no scheduler hook:
    /// the kernel schedules it and reads no class, so it publishes none), shaped after
    /// parking_lot's `lock_slow` and `SpinWait`: while nobody is parked,
    /// the quick spin (three backoff rounds, 14 pauses) and the yield phase (seven
    /// `sched_yield`s), each followed by a try; then link, set `PARKED` and park; after each
    /// wake-up the same again. Informed by the kernel and the hold times:
    /// - where the kernel last reported more runnable threads than CPUs (`oversubscribed`), no
    ///   yields (each gives the CPU to a thread that may not want the lock) but up to 100
    ///   read-only looks at the word, one pause apart, while it stays held with nobody parked,
    ///   as std's futex mutex spins ([`poll_while_held`](Self::poll_while_held)); then a park.
    ///   Formerly the thread parked at once there (002's rule for informed
    ///   waiting): on 8 threads on 2 CPUs with 0.1 µs holds, 45 K context switches in 3 s
    ///   against std's 3.2 K, for holders that were running nearly always; with the looks,
    ///   3.6 K. (A quick spin and a yield there took 1.05-1.32x std's time.)
    /// - where the lock's last holds were longer than half a park-and-wake (Bellosa's rule), it
    ///   parks without spinning.
    ///
    /// The informed spin phase (spinning for half a switch, asking the kernel whether the holder
    /// runs) is for threads a scheduler hook schedules; an OS thread that ran it after its
    /// yields polled the lock's line for 3 µs more and parked rarely (`contended2/empty`: 306
    /// futex calls per CPU-second against parking_lot's 14,600), at 1.2–1.9× parking_lot's time per
    /// acquisition.
    ///
    /// `seen` is the word as the failed fast path's compare-and-swap returned it: the first
    /// round's "nobody parked?" test reads that instead of the word, whose line the holder has
    /// just taken back (a load there was the costliest instruction of the contended loop, issue
    /// 15, sixth round); after a park the word is read afresh.
    #[inline(never)]
    fn lock_os_thread(&self, seen: u32) -> HeldToken {
        let hook = current_hook();
        let half_switch = hook.switch_cost_ns() / 2;
        let mut waited = 0;
        let mut parked_seen = seen & PARKED != 0;
        let mut popped = false;
        loop {
            if !parked_seen
                && self.meta.history.mean_ns() <= half_switch
                && crate::os::oversubscribed_hint()
            {
                if let Some(pauses) = self.poll_while_held() {
                    self.meta
                        .times
                        .holder_add_wait(waited + stats::pauses_to_ns(pauses));
                    return self.held_after_spin(None);
                }
            } else if !parked_seen && self.meta.history.mean_ns() <= half_switch {
                if let Some(pauses) = quick_spin(|| self.try_acquire()) {
                    self.meta
                        .times
                        .holder_add_wait(waited + stats::pauses_to_ns(pauses));
                    return self.held_after_spin(None);
                }
                if let Some(ns) = yield_phase(|| self.try_acquire(), &self.meta.yielder) {
                    self.meta.times.holder_add_wait(waited + ns);
                    return self.held_after_spin(None);
                }
            }
            // Samples the kernel's run queue again (at most once per `SAMPLE_INTERVAL_NS`) for
            // the next round and the next waiter.
            let _ = crate::os::oversubscribed();
            let start = stats::now_ns();
            if self
                .meta
                .queue
                .park_notified(hook, 0, &mut || self.park_marked(popped))
            {
                popped = true;
                self.clear_waking();
            }
            waited += stats::now_ns().saturating_sub(start);
            if popped && self.took_over() || self.try_acquire() {
                self.meta.times.holder_add_wait(waited);
                return self.held(ClassScope::unpublished());
            }
            parked_seen = !self.nobody_parked();
        }
    }

    /// An OS thread's wait on an oversubscribed machine before it parks: reads the word (no
    /// write) up to [`OVERSUBSCRIBED_POLLS`] times, one pause apart, while it stays held with
    /// nobody parked, and tries when it reads free (std's futex mutex spins the same way).
    /// Returns the pauses spent when it took the lock.
    #[inline(never)]
    fn poll_while_held(&self) -> Option<u32> {
        for polls in 1..=OVERSUBSCRIBED_POLLS {
            spin_hint();
            let s = self.state.load(Ordering::Relaxed);
            if s & PARKED != 0 {
                return None;
            }
            if s & LOCKED == 0 && self.try_acquire() {
                return Some(polls);
            }
        }
        None
    }

    /// Clears the word (the holder set `LOCKED`) in one swap, as `std`'s futex mutex does (an
    /// `xchg`: the `lock xadd` of a `fetch_sub` was the 1–3 % left between the
    /// uncontended loop and std's), and, if anything but `LOCKED` was set, puts the marks back
    /// and wakes a parked thread where needed ([`released_marked`](Self::released_marked)).
    #[inline(always)]
    fn release(&self) {
        self.release_to(0);
    }

    /// [`release`](Self::release) that swaps in `base` (0 or `INFORMING`, the bits the
    /// releaser read from the word while it held the lock) instead of 0: a bookkept hold, mostly
    /// one on an informing lock, keeps `INFORMING` without a second read-modify-write.
    #[inline(always)]
    fn release_to(&self, base: u32) {
        let was = self.state.swap(base, Ordering::Release);
        if was != LOCKED | base {
            self.released_marked(was, base);
        }
    }

    /// The slow part of a release whose swap took more than `LOCKED` off the word (`was`, the
    /// word before it; `base`, what the swap left): puts `PARKED` and `INFORMING` back, then,
    /// where a thread was parked, records how the hold it parked behind ended (the lock's
    /// history) and wakes one parked thread unless a wake-up is in flight and the lock is held
    /// again.
    ///
    /// Between the swap and the restore the word lacks those bits: an arrival may take the lock
    /// (and an informing lock's arrival then skips its bookkeeping once), and a waiter's last
    /// look sees it free and does not park. Neither loses a wake-up:
    /// - `PARKED` is back before this thread wakes anyone, and the only other thread that clears
    ///   it is a waker under the queue's guard with the queue empty (as in the protocol). A hold
    ///   taken in the window and released before the restore saw no `PARKED` and woke nobody:
    ///   this thread is the waker then.
    /// - `WAKING` is not put back: a woken thread may already have cleared it (the clear would
    ///   be lost, and later releases would wake nobody). Dropping it costs one spare wake-up at
    ///   most. But where `WAKING` was set, this release leaves the wake-up to the thread in
    ///   flight only while the lock is held again when the marks go back (its holder's release
    ///   will see `PARKED`); if the lock is free then (the thread in flight may have come and
    ///   gone in the window, its release seeing no `PARKED`), this thread wakes one itself.
    ///   The loom models `ttas_{block,informed}_park_barge_plain` deadlock without that case,
    ///   and so do they where `WAKING` is put back.
    #[cold]
    #[inline(never)]
    fn released_marked(&self, was: u32, base: u32) {
        let keep = was & (PARKED | INFORMING) & !base;
        let now = if keep != 0 {
            self.state.fetch_or(keep, Ordering::Relaxed) | keep
        } else {
            base
        };
        if was & PARKED != 0 {
            self.meta.history.record_park_outcome();
            if was & WAKING == 0 || now & LOCKED == 0 {
                self.wake_one();
            }
        }
    }

    /// Under the queue's guard, after popping a thread: sets `mark` (`WAKING` or `HANDOFF`) and
    /// clears `PARKED` if nobody is left in the queue. `Release`: setting `HANDOFF` is the
    /// holder's release of the critical section to the thread that takes the lock over.
    fn popped_one(&self, mark: u32, more: bool) {
        if more {
            self.state.fetch_or(mark, Ordering::Release);
        } else {
            let mut s = self.state.load(Ordering::Relaxed);
            while let Err(now) = self.state.compare_exchange(
                s,
                (s | mark) & !PARKED,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                s = now;
            }
        }
    }

    /// After a release that saw `PARKED`: under the queue's guard, wakes one parked thread unless
    /// a wake-up is in flight (that thread will compete, and release in its turn), or clears
    /// `PARKED` if nobody is parked any more (a waiter that left, or one that saw the lock free
    /// after linking itself).
    #[cold]
    fn wake_one(&self) {
        self.meta.queue.notify_one_deciding(
            |linked| {
                if self.state.load(Ordering::Relaxed) & WAKING != 0 {
                    return false;
                }
                if !linked {
                    self.state.fetch_and(!PARKED, Ordering::Relaxed);
                }
                linked
            },
            |more| self.popped_one(WAKING, more),
        );
    }
}

impl<W: WaitPolicy> Default for RawTtasLock<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the LOCKED bit is taken with an Acquire CAS that requires it clear, and released with a
// Release RMW or store by the holder only (or kept set for a fair hand-over, whose taker clears
// HANDOFF with an Acquire CAS).
unsafe impl<W: WaitPolicy> RawLock for RawTtasLock<W> {
    #[inline(always)]
    fn lock(&self) -> HeldToken {
        match self
            .state
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => self.held_plain(),
            // Free and informing: the bookkeeping, then a compare-and-swap from the word seen.
            Err(INFORMING) => self.lock_informing(),
            Err(seen) => self.lock_slow(seen),
        }
    }

    #[inline]
    fn try_lock(&self) -> Option<HeldToken> {
        if self.state.load(Ordering::Relaxed) & INFORMING != 0 {
            return self.acquire_informing();
        }
        self.try_acquire().then(|| self.held_fast())
    }

    #[inline(always)]
    unsafe fn unlock(&self, token: HeldToken) {
        if token.is_bare() {
            self.release_word(0);
        } else {
            self.unlock_bookkept(token);
        }
    }

    unsafe fn unlock_fair(&self, token: HeldToken) {
        // SAFETY: per the contract.
        unsafe { self.unlock_fair_token(token) };
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn word(bits: u32) -> RawTtasLock<Informed> {
        let lock = RawTtasLock::<Informed>::new();
        lock.state.store(bits, Ordering::Relaxed);
        lock
    }

    #[test]
    fn a_bare_release_leaves_a_plain_word_at_zero() {
        let lock = word(LOCKED);
        lock.release();
        assert_eq!(lock.state.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_release_keeps_informing_on() {
        // Bare (swap to 0, then the mark goes back) and bookkept (swap to INFORMING).
        for base in [0, INFORMING] {
            let lock = word(LOCKED | INFORMING);
            lock.release_to(base);
            assert_eq!(lock.state.load(Ordering::Relaxed), INFORMING, "base {base}");
        }
    }

    #[test]
    fn a_release_drops_waking_and_a_parked_mark_with_nobody_queued() {
        // `PARKED` goes back, then the wake-up finds the queue empty and clears it; `WAKING` is
        // never put back (a woken thread may have cleared it in the window).
        let lock = word(LOCKED | PARKED | WAKING | INFORMING);
        lock.release();
        assert_eq!(lock.state.load(Ordering::Relaxed), INFORMING);
        let lock = word(LOCKED | WAKING);
        lock.release();
        assert_eq!(lock.state.load(Ordering::Relaxed), 0);
    }
}
