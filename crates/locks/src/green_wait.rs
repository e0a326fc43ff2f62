//! How a contended green thread waits on the default `Mutex` once its first try has failed:
//! the process-wide rule, and the two waits it chooses between.
//!
//! - [`GreenLockWait::Park`]: after the quick spin it parks (after yielding its worker to the
//!   threads queued there, if no other waiter of the lock does). A release wakes it onto the
//!   releaser's worker, where the critical section's data is cached (lock-hot placement, 000),
//!   so a hot lock's threads gather on one worker and run there without moving the lock's line
//!   between the cores. Measured best on 2 workers: `lock_hot`'s producer–consumer FIFO took a
//!   quarter of std's time gathered, 0.44× polling.
//! - [`GreenLockWait::Poll`]: it polls the lock (with the always-spin policy's backoff, yielding
//!   its worker every 16 rounds when threads are queued there) for as long as the lock keeps
//!   changing hands, whether or not other waiters are parked, and parks only when no hold began
//!   or ended for half a park's cost (at least 1 µs): a long hold, or a holder that does not
//!   run. Nobody parks on a lock that changes hands, so no release wakes anyone and no worker
//!   goes to sleep for want of runnable threads. The poll keeps no informing bookkeeping: the
//!   thread that takes the lock from a poll leaves its tag beside the word (a store to the line
//!   it has just taken), which is how the other pollers see the lock change hands.
//! - [`GreenLockWait::Auto`] (the default): `Park` on a runtime of at most
//!   [`AUTO_PARK_MAX_WORKERS`] workers, `Poll` on more. On many workers the threads that parking
//!   gathers on one worker are stolen back by the idle ones, and every release wakes someone: on
//!   a 16-vCPU machine (64 green threads bumping one `Mutex`), parking took 1.4× std's time at 4
//!   workers, 3.5× at 8 and 5.3× at 16, where the baseline that never parks took 0.35×, 0.71×
//!   and 0.89× (see `docs/performance-history.md`). The `Poll` rule itself has not been measured
//!   on many cores yet; `scripts/many_core.sh` compares the three (`footprint_park` and
//!   `footprint_poll` rows beside the default).
//!
//! The rule is read only on the contended path, after the first failed try.
//!
//! ```
//! use footprint::locks::green_wait::{self, GreenLockWait};
//!
//! assert_eq!(green_wait::green_lock_wait(), GreenLockWait::Auto, "the default");
//! assert_eq!(GreenLockWait::Auto.for_workers(2), GreenLockWait::Park);
//! assert_eq!(GreenLockWait::Auto.for_workers(16), GreenLockWait::Poll);
//! let was = green_wait::set_green_lock_wait(GreenLockWait::Poll);
//! assert_eq!(was, GreenLockWait::Auto);
//! green_wait::set_green_lock_wait(was);
//! ```

use std::sync::atomic::{AtomicU8, Ordering};

/// What a contended green thread does after its first failed try (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GreenLockWait {
    /// `Park` on a runtime of at most [`AUTO_PARK_MAX_WORKERS`] workers, `Poll` on more (the
    /// default).
    #[default]
    Auto,
    /// Park after the quick spin.
    Park,
    /// Poll while the lock changes hands; park when it does not.
    Poll,
}

/// The most workers a runtime may have for [`GreenLockWait::Auto`] to park: with two, the one
/// worker that could steal gathered threads back is also the one they came from.
pub const AUTO_PARK_MAX_WORKERS: usize = 2;

impl GreenLockWait {
    /// The rule a thread of a runtime with `workers` workers follows: [`Auto`](Self::Auto)
    /// resolved, the others as they are.
    ///
    /// ```
    /// use footprint::locks::green_wait::GreenLockWait;
    ///
    /// assert_eq!(GreenLockWait::Auto.for_workers(1), GreenLockWait::Park);
    /// assert_eq!(GreenLockWait::Auto.for_workers(3), GreenLockWait::Poll);
    /// assert_eq!(GreenLockWait::Park.for_workers(64), GreenLockWait::Park);
    /// ```
    pub fn for_workers(self, workers: usize) -> GreenLockWait {
        match self {
            GreenLockWait::Auto if workers <= AUTO_PARK_MAX_WORKERS => GreenLockWait::Park,
            GreenLockWait::Auto => GreenLockWait::Poll,
            rule => rule,
        }
    }

    const fn to_bits(self) -> u8 {
        match self {
            GreenLockWait::Auto => 0,
            GreenLockWait::Park => 1,
            GreenLockWait::Poll => 2,
        }
    }

    const fn from_bits(bits: u8) -> GreenLockWait {
        match bits {
            1 => GreenLockWait::Park,
            2 => GreenLockWait::Poll,
            _ => GreenLockWait::Auto,
        }
    }
}

/// The rule in force. A plain `std` atomic also under loom: it is configuration, not part of any
/// synchronisation protocol.
static RULE: AtomicU8 = AtomicU8::new(GreenLockWait::Auto.to_bits());

/// Sets the rule for the whole process; returns the previous one. Takes effect for waits that
/// start after the call (relaxed: a wait racing with the call may use the old rule).
pub fn set_green_lock_wait(rule: GreenLockWait) -> GreenLockWait {
    GreenLockWait::from_bits(RULE.swap(rule.to_bits(), Ordering::Relaxed))
}

/// Runs `f` under `rule` and puts the previous rule back afterwards, also when `f` panics.
///
/// ```
/// use footprint::locks::green_wait::{self, GreenLockWait};
///
/// let seen = green_wait::with_green_lock_wait(GreenLockWait::Poll, green_wait::green_lock_wait);
/// assert_eq!(seen, GreenLockWait::Poll);
/// assert_eq!(green_wait::green_lock_wait(), GreenLockWait::Auto);
/// ```
pub fn with_green_lock_wait<R>(rule: GreenLockWait, f: impl FnOnce() -> R) -> R {
    struct Restore(GreenLockWait);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_green_lock_wait(self.0);
        }
    }
    let _restore = Restore(set_green_lock_wait(rule));
    f()
}

/// The rule in force (possibly [`GreenLockWait::Auto`]; a waiter resolves it with its runtime's
/// worker count, [`GreenLockWait::for_workers`]).
#[inline]
pub fn green_lock_wait() -> GreenLockWait {
    GreenLockWait::from_bits(RULE.load(Ordering::Relaxed))
}

/// Whether a contended green thread of a runtime with `workers` workers (`None`: not known)
/// polls: the rule in force, resolved. An unknown count resolves `Auto` to `Park`.
#[inline]
pub(crate) fn polls(workers: impl FnOnce() -> Option<usize>) -> bool {
    let rule = match green_lock_wait() {
        GreenLockWait::Auto => {
            workers().map_or(GreenLockWait::Park, |n| GreenLockWait::Auto.for_workers(n))
        }
        rule => rule,
    };
    rule == GreenLockWait::Poll
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_parks_on_two_workers_or_fewer_and_polls_on_more() {
        // The default rule (no test of this crate sets another).
        assert_eq!(green_lock_wait(), GreenLockWait::Auto);
        assert!(!polls(|| Some(1)));
        assert!(!polls(|| Some(AUTO_PARK_MAX_WORKERS)));
        assert!(polls(|| Some(AUTO_PARK_MAX_WORKERS + 1)));
        assert!(!polls(|| None), "an unknown count parks");
    }

    #[test]
    fn explicit_rules_ignore_the_worker_count() {
        for n in [1, 2, 3, 64] {
            assert_eq!(GreenLockWait::Park.for_workers(n), GreenLockWait::Park);
            assert_eq!(GreenLockWait::Poll.for_workers(n), GreenLockWait::Poll);
        }
    }

    #[test]
    fn bits_round_trip() {
        for r in [
            GreenLockWait::Auto,
            GreenLockWait::Park,
            GreenLockWait::Poll,
        ] {
            assert_eq!(GreenLockWait::from_bits(r.to_bits()), r);
        }
    }
}
