//! The informing side of the TTAS lock: the guard state each acquisition leaves (which class it
//! publishes, whether it times the hold) and when a waiter turns the lock's `INFORMING` bit on.
//! The word's protocol (acquire, park, release, wake) is in the parent module; nothing here
//! changes the word except the one `fetch_or` that sets `INFORMING` for good.

use super::{RawTtasLock, INFORMING, LOCKED};
#[cfg(not(loom))]
use crate::hook::current_hook;
use crate::hook::scheduler_class_cell;
use crate::stats;
use crate::sync::Ordering;
#[cfg(not(loom))]
use crate::wait::LONG_HOLD_FLOOR_NS;
use crate::wait::{sample_this_hold, ClassScope, HeldToken, WaitMode, WaitPolicy};

/// More of the last 8 timed holds than this must count as long, or more of the last 8 parks
/// behind a hold than this must have found it spanning a switch, for a waiter to turn
/// informing on: most of them, so that one hold stretched by the machine (a preempted worker's
/// vCPU) does not turn it on for good.
#[cfg_attr(loom, allow(dead_code))]
const LONG_HOLDS_TO_INFORM: usize = 4;

impl<W: WaitPolicy> RawTtasLock<W> {
    /// The guard state of an acquisition whose compare-and-swap found `INFORMING` clear (`lock`'s
    /// fast path).
    ///
    /// A lock that is not informing, with statistics off, publishes nothing: the holder's class
    /// is read only by a scheduler whose threads wait on holds long enough to span a switch, and
    /// there are none (a waiter past the quick spin sets `INFORMING` once most sampled holds are
    /// that long, and from then on every holder publishes `Holder`). So this is one flag test, with no thread-local, no class store and no restore
    /// at the release; the statistics path is out of line (`held_informing`).
    #[inline(always)]
    pub(super) fn held_plain(&self) -> HeldToken {
        if !stats::enabled() {
            return HeldToken::unpublished();
        }
        self.held_informing()
    }

    /// The guard state of an acquisition that did no bookkeeping before it (`try_lock`'s, a
    /// timed acquisition's and a fair hand-over's): [`held_plain`](Self::held_plain) where the
    /// lock is not informing, else the bookkeeping now, inside the critical section.
    #[inline]
    pub(super) fn held_fast(&self) -> HeldToken {
        if self.state.load(Ordering::Relaxed) & INFORMING == 0 {
            return self.held_plain();
        }
        self.held_informing()
    }

    /// The bookkeeping of an informing lock's acquisition, done *before* it tries to take the
    /// lock (see [`INFORMING`]): the class scope (the thread-local lookups of the hook and its
    /// class cell) and whether this hold is timed. Inside the critical section only the
    /// `Holder` store and the token remain.
    #[inline]
    pub(super) fn before_informing_hold(&self) -> (ClassScope, bool) {
        (ClassScope::enter_for_scheduler::<W>(), sample_this_hold())
    }

    /// The guard state from [`before_informing_hold`](Self::before_informing_hold)'s result,
    /// once the lock is taken.
    #[inline]
    pub(super) fn held_prepared(&self, (scope, sample): (ClassScope, bool)) -> HeldToken {
        scope
            .into_held_sampled(
                &self.meta,
                &self.holder,
                sample,
                W::MODE == WaitMode::Informed,
            )
            .with_lock_mark()
    }

    /// `lock` on an informing lock whose word read `INFORMING` alone (free, nobody parked): the
    /// bookkeeping, then one compare-and-swap from that word; the slow path if it changed.
    #[inline(never)]
    pub(super) fn lock_informing(&self) -> HeldToken {
        let prepared = self.before_informing_hold();
        match self.state.compare_exchange(
            INFORMING,
            INFORMING | LOCKED,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => self.held_prepared(prepared),
            Err(seen) => self.lock_slow(seen),
        }
    }

    /// An informing lock that looked free: the bookkeeping, then one try.
    #[inline(never)]
    pub(super) fn acquire_informing(&self) -> Option<HeldToken> {
        let prepared = self.before_informing_hold();
        self.try_acquire().then(|| self.held_prepared(prepared))
    }

    /// [`held_fast`](Self::held_fast) once the lock is informing (or statistics are on): saves
    /// the class and publishes `Holder`, counts and samples the hold.
    #[inline(never)]
    pub(super) fn held_informing(&self) -> HeldToken {
        self.held_counted(ClassScope::enter_for_scheduler::<W>())
    }

    /// The guard state of an acquisition that waited (its class scope entered, `Waiter`
    /// published under informed waiting): publishes `Holder`, counts, and times one hold in
    /// [`HOLD_SAMPLE_EVERY`](crate::wait::history::HOLD_SAMPLE_EVERY) of the thread's waited holds even
    /// where the lock is not informing, so that Bellosa's rule and the spin phase's look at the
    /// holder have a hold time and a holder to go by on OS threads too.
    #[inline]
    pub(super) fn held(&self, scope: ClassScope) -> HeldToken {
        let sample = W::MODE == WaitMode::Informed && sample_this_hold();
        if !sample && self.state.load(Ordering::Relaxed) & INFORMING == 0 && !stats::enabled() {
            return scope.into_held_untimed();
        }
        scope.into_held_sampled(
            &self.meta,
            &self.holder,
            sample,
            W::MODE == WaitMode::Informed,
        )
    }

    /// [`held`](Self::held) after a wait that ended in the quick spin or the yield phase:
    /// with the bookkeeping prepared before the spin where the lock was informing then
    /// (`prepared`), else, on a lock that is not informing, it publishes nothing and reads no
    /// thread-local beyond the sampling count.
    #[inline]
    pub(super) fn held_after_spin(&self, prepared: Option<(ClassScope, bool)>) -> HeldToken {
        if let Some(p) = prepared {
            return self.held_prepared(p);
        }
        if self.state.load(Ordering::Relaxed) & INFORMING != 0 || stats::enabled() {
            return self.held_informing();
        }
        if W::MODE == WaitMode::Informed && sample_this_hold() {
            return ClassScope::unpublished().into_held_sampled(
                &self.meta,
                &self.holder,
                true,
                true,
            );
        }
        HeldToken::unpublished()
    }

    /// [`held_fast`](Self::held_fast) once the lock is informing (or statistics are on). The
    /// choice of the timed hold is the holder's thread's count, not a counter in the lock: a
    /// contended lock's line moves between the cores, and a store to it per acquisition was
    /// 6 % of a 2-thread loop's samples.
    #[inline(never)]
    pub(super) fn held_counted(&self, scope: ClassScope) -> HeldToken {
        let informing = self.state.load(Ordering::Relaxed) & INFORMING != 0;
        let token = scope.into_held_sampled(
            &self.meta,
            &self.holder,
            informing && sample_this_hold(),
            W::MODE == WaitMode::Informed,
        );
        if informing {
            token.with_lock_mark()
        } else {
            token
        }
    }

    /// Turns informing on (a wait went past the quick spin on a thread whose class a scheduler
    /// reads, on a lock whose holds are long: [`holds_worth_informing`](Self::holds_worth_informing)):
    /// from now on its holders publish `Holder` and time one hold in
    /// [`HOLD_SAMPLE_EVERY`](crate::wait::history::HOLD_SAMPLE_EVERY). Called before the waiter publishes
    /// `Waiter`, so that whoever sees the waiter's class sees the mark too. A waiter on a plain
    /// OS thread leaves it alone: the kernel schedules both sides and reads no class.
    #[inline]
    pub(super) fn mark_contended(&self, scope: &ClassScope) {
        if W::MODE != WaitMode::Spin
            && scope.cell().is_some()
            && self.state.load(Ordering::Relaxed) & INFORMING == 0
            && self.holds_worth_informing()
        {
            self.state.fetch_or(INFORMING, Ordering::Relaxed);
        }
    }

    /// [`mark_contended`](Self::mark_contended) for a waiter that has not entered its class
    /// scope yet: the same test on the thread's class cell (null on a plain OS thread).
    #[inline]
    pub(super) fn mark_contended_if_scheduled(&self) {
        if W::MODE != WaitMode::Spin
            && self.state.load(Ordering::Relaxed) & INFORMING == 0
            && !scheduler_class_cell().is_null()
            && self.holds_worth_informing()
        {
            self.state.fetch_or(INFORMING, Ordering::Relaxed);
        }
    }

    /// Whether the lock's holds are long enough for informing to pay (see [`INFORMING`]): most
    /// of its last 8 timed holds took longer than half a switch (the hook's estimate, and at
    /// least [`LONG_HOLD_FLOOR_NS`]), or most of the last 8 green waiters that parked behind a
    /// hold found it spanning a switch ([`HoldHistory::record_park_outcome`]). A lock with
    /// neither yet reads as short. The timed holds are those that began with a wait (an
    /// uncontended acquisition reads no clock and no thread-local); the parks cover a lock whose
    /// long holds all begin on a free lock, with short ones behind its waits. Under loom (no
    /// clock, no samples) the lock's constructor says (`new`: long, `with_short_holds`: short),
    /// so that the models check the protocol both on a word whose bit a waiter sets and on one
    /// where nobody does.
    ///
    /// [`HoldHistory::record_park_outcome`]: crate::wait::history::HoldHistory::record_park_outcome
    #[inline]
    pub(super) fn holds_worth_informing(&self) -> bool {
        #[cfg(loom)]
        {
            self.long_holds
        }
        #[cfg(not(loom))]
        {
            let history = &self.meta.history;
            let long = (current_hook().switch_cost_ns() / 2).max(LONG_HOLD_FLOOR_NS);
            history.holds_longer_than(long) > LONG_HOLDS_TO_INFORM
                || history.parks_behind_long_holds() > LONG_HOLDS_TO_INFORM
        }
    }
}
