//! Bellosa's hold-time history of one lock (the last 8 timed holds, for the two-phase rule and
//! the gate of the TTAS lock's informing), which of a thread's holds are timed, and how parks
//! behind a hold tell whether it spanned a switch.

use crate::stats;
use crate::sync::Ordering;
use std::sync::atomic::{AtomicBool, AtomicU32 as StdAtomicU32, AtomicU64 as StdAtomicU64};

/// A holder times one acquisition in this many once the lock has been contended.
pub(crate) const SAMPLE_EVERY: u32 = 32;

/// The TTAS lock times one hold in this many of a thread's holds of contended locks
/// ([`sample_this_hold`]): its holds are the shortest (a few ns to a few hundred), so two clock
/// reads (55-75 ns each on this project's VM) in 32 holds were 6 % of a 2-thread loop's samples.
/// (Under loom no hold is timed, see [`sample_this_hold`].)
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const HOLD_SAMPLE_EVERY: u32 = 256;

#[cfg(not(loom))]
std::thread_local! {
    /// Holds of contended TTAS locks begun on this OS thread (see [`sample_this_hold`]).
    static HOLDS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether the hold beginning now should be timed: one in [`HOLD_SAMPLE_EVERY`] of the calling OS
/// thread's holds of contended locks. A per-thread count keeps the choice off the lock's cache
/// line. Under loom never (a count shared by the model's runs would make them differ).
#[inline]
pub(crate) fn sample_this_hold() -> bool {
    #[cfg(loom)]
    {
        false
    }
    #[cfg(not(loom))]
    HOLDS.with(|c| {
        let n = c.get().wrapping_add(1);
        c.set(n);
        n.is_multiple_of(HOLD_SAMPLE_EVERY)
    })
}

/// The shortest hold that counts as long for the gate of a lock's informing (with half the
/// hook's switch estimate, whichever is longer; a green thread's estimate is 300 ns by
/// default): a hold of tens of nanoseconds reads 100–600 ns where it is measured (two clock
/// reads, the lock line's transfers between the cores; the time from a waiter's park to the
/// release behind it, on the 2-core VM), while a hold that spans a switch (its holder yields or
/// parks with the lock held) lasts as long as what runs meanwhile, microseconds at least.
/// Against half the green estimate alone, the short holds of a hot lock read long in some runs
/// and turned informing on.
pub(crate) const LONG_HOLD_FLOOR_NS: u64 = 1_000;
/// Bits of a park stamp's clock (the rest: the parked waiter's OS thread id, below 2^22 on
/// Linux): the clock wraps every 73 minutes, far beyond any park this measures.
const STAMP_TIME_BITS: u32 = 42;
const STAMP_TIME_MASK: u64 = (1 << STAMP_TIME_BITS) - 1;

/// The calling OS thread's part of a park stamp (its id, in the bits above the clock's).
fn stamp_thread() -> u64 {
    crate::os::current_tid() as u64 & ((1 << (64 - STAMP_TIME_BITS)) - 1)
}

/// The last 8 hold times of one lock (nanoseconds, saturated to u32), for the two-phase rule,
/// and how the last 8 parks of green waiters behind its holds ended, for the gate of its
/// informing.
#[derive(Default)]
pub(crate) struct HoldHistory {
    slots: [StdAtomicU32; 8],
    next: StdAtomicU32,
    /// Set by the first waiter: from then on the holder samples its hold times.
    sampling: AtomicBool,
    /// Acquisitions since sampling started (written by holders only).
    acquisitions: StdAtomicU32,
    /// The pending park of a green waiter behind a hold ([`stamp_park`](Self::stamp_park)):
    /// its OS thread's id above [`STAMP_TIME_BITS`] bits of its clock; 0: none. Advisory (a
    /// plain `std` atomic also under loom, where the clock reads 0 and nothing is stamped).
    park_stamp: StdAtomicU64,
    /// How the last 8 parks behind a hold ended, one bit each, newest lowest: 1 where the hold
    /// spanned a switch ([`record_park_outcome`](Self::record_park_outcome)).
    park_spans: StdAtomicU32,
}

impl HoldHistory {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> HoldHistory {
        HoldHistory {
            slots: [const { StdAtomicU32::new(0) }; 8],
            next: StdAtomicU32::new(0),
            sampling: AtomicBool::new(false),
            acquisitions: StdAtomicU32::new(0),
            park_stamp: StdAtomicU64::new(0),
            park_spans: StdAtomicU32::new(0),
        }
    }

    pub(crate) fn mean_ns(&self) -> u64 {
        let sum: u64 = self
            .slots
            .iter()
            .map(|s| s.load(Ordering::Relaxed) as u64)
            .sum();
        sum / 8
    }

    /// How many of the last 8 recorded holds took longer than `ns` (slots not yet written
    /// read 0).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn holds_longer_than(&self, ns: u64) -> usize {
        self.slots
            .iter()
            .filter(|s| s.load(Ordering::Relaxed) as u64 > ns)
            .count()
    }

    /// Records one hold (called by the holder only).
    pub(crate) fn record(&self, ns: u64) {
        let i = self.next.load(Ordering::Relaxed);
        self.next.store(i.wrapping_add(1), Ordering::Relaxed);
        self.slots[(i & 7) as usize].store(ns.min(u32::MAX as u64) as u32, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn sampling(&self) -> bool {
        self.sampling.load(Ordering::Relaxed)
    }

    pub(crate) fn start_sampling(&self) {
        if !self.sampling.load(Ordering::Relaxed) {
            self.sampling.store(true, Ordering::Relaxed);
        }
    }

    /// A green waiter is about to mark the lock parked-on behind the hold in progress: stamps
    /// the time and its OS thread unless another park's stamp is pending. Returns the stamp it
    /// left (to take back with [`unstamp_park`](Self::unstamp_park) if it does not park after
    /// all).
    ///
    /// Why: the holds the history times are those that began with a wait, so a lock whose
    /// long holds (a holder that yields or parks while holding) all begin on a free lock never
    /// read as long, and its waiters never turned informing on. The release that first sees a
    /// park ([`record_park_outcome`](Self::record_park_outcome)) tells whether the hold that the
    /// waiter parked behind spanned a switch, whoever began it.
    pub(crate) fn stamp_park(&self) -> Option<u64> {
        let now = stats::now_ns();
        if now == 0 {
            return None;
        }
        let stamp = stamp_thread() << STAMP_TIME_BITS | now & STAMP_TIME_MASK;
        (stamp != 0
            && self
                .park_stamp
                .compare_exchange(0, stamp, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok())
        .then_some(stamp)
    }

    /// Takes back a stamp of [`stamp_park`](Self::stamp_park) whose waiter did not park (the
    /// lock was free when it looked): no release would see a park and take it.
    pub(crate) fn unstamp_park(&self, stamp: u64) {
        let _ = self
            .park_stamp
            .compare_exchange(stamp, 0, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// At a release that saw a parked waiter: takes the pending park's stamp, if any, and
    /// records whether the hold it parked behind spanned a switch: the release runs on the
    /// parked waiter's own OS thread (the holder ran there only after the waiter left it: it
    /// was not running when the waiter parked), or it came more than [`LONG_HOLD_FLOOR_NS`]
    /// after the park. A hold whose holder runs on another worker throughout ends within a few
    /// hundred nanoseconds of the park.
    pub(crate) fn record_park_outcome(&self) {
        let stamp = self.park_stamp.load(Ordering::Relaxed);
        if stamp == 0
            || self
                .park_stamp
                .compare_exchange(stamp, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let elapsed = stats::now_ns().wrapping_sub(stamp) & STAMP_TIME_MASK;
        let spanned = stamp >> STAMP_TIME_BITS == stamp_thread() || elapsed > LONG_HOLD_FLOOR_NS;
        let spans = self.park_spans.load(Ordering::Relaxed);
        self.park_spans
            .store((spans << 1 | spanned as u32) & 0xff, Ordering::Relaxed);
    }

    /// How many of the last 8 parks behind a hold found it spanning a switch.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn parks_behind_long_holds(&self) -> usize {
        self.park_spans.load(Ordering::Relaxed).count_ones() as usize
    }

    /// Whether the holder should time this acquisition: one in [`SAMPLE_EVERY`] once sampling.
    #[inline]
    pub(crate) fn sample_this(&self) -> bool {
        if !self.sampling() {
            return false;
        }
        // Holder-only counter: time one acquisition in SAMPLE_EVERY (two clock reads cost
        // 40-150 ns, more than a short critical section: amortised they must not show).
        let n = self.acquisitions.load(Ordering::Relaxed);
        self.acquisitions
            .store(n.wrapping_add(1), Ordering::Relaxed);
        n.is_multiple_of(SAMPLE_EVERY)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_release_on_the_parked_waiters_own_thread_spanned_a_switch() {
        // The holder ran on the waiter's OS thread after the park: it was not running then.
        let h = HoldHistory::new();
        assert!(h.stamp_park().is_some());
        h.record_park_outcome();
        assert_eq!(h.parks_behind_long_holds(), 1);
    }

    #[test]
    fn a_release_elsewhere_spanned_a_switch_only_if_it_came_late() {
        let h = HoldHistory::new();
        std::thread::scope(|s| {
            s.spawn(|| assert!(h.stamp_park().is_some()));
        });
        // Past the floor, on another thread than the waiter's.
        let at = std::time::Instant::now();
        while at.elapsed() < std::time::Duration::from_nanos(2 * LONG_HOLD_FLOOR_NS) {
            std::hint::spin_loop();
        }
        h.record_park_outcome();
        assert_eq!(h.parks_behind_long_holds(), 1);
        // No stamp pending: the next release records nothing.
        h.record_park_outcome();
        assert_eq!(h.park_spans.load(Ordering::Relaxed), 0b1);
    }

    #[test]
    fn one_park_is_pending_at_a_time_and_a_taken_back_one_records_nothing() {
        let h = HoldHistory::new();
        let stamp = h.stamp_park().expect("nothing pending");
        assert_eq!(h.stamp_park(), None, "the first park's stamp is pending");
        h.unstamp_park(stamp);
        h.record_park_outcome();
        assert_eq!(h.parks_behind_long_holds(), 0);
        assert!(
            h.stamp_park().is_some(),
            "taken back: a new park stamps again"
        );
    }

    #[test]
    fn the_outcomes_are_the_last_eight() {
        let h = HoldHistory::new();
        for _ in 0..20 {
            h.stamp_park();
            h.record_park_outcome();
        }
        assert_eq!(h.parks_behind_long_holds(), 8);
    }
}
