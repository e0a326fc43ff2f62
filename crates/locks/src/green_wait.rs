//! How a contended green thread waits on the default `Mutex` once its quick spin has run out:
//! the process-wide switch for comparing two rules on many cores.
//!
//! - [`GreenLockWait::Park`] (the default): it parks (after yielding its worker to the threads
//!   queued there, if no other waiter of the lock does). A release wakes it onto the
//!   releaser's worker, where the critical section's data is cached (lock-hot placement, 000).
//!   Measured best on 2 cores, where it gathers a hot lock's threads on one worker.
//! - [`GreenLockWait::Poll`]: from its first failed try it polls the lock (with the always-spin
//!   policy's backoff, yielding its worker every 16 rounds when threads are queued there) for
//!   as long as the lock keeps changing hands, whether or not other waiters are parked, and
//!   parks only when no hold began or ended for half a park's cost (at least 1 µs): a long
//!   hold, or a holder that does not run. Nobody parks on a lock that changes hands, so no
//!   release wakes anyone and no worker goes to sleep for want of runnable threads. Measured
//!   on 16 cores, the baseline that never parks (`SpinTtasMutex`) took 0.35–0.9× std's time
//!   on the hot-lock loop where parking took 1.4–5.3×; this rule is that behaviour for the
//!   default `Mutex`, with the park kept for long holds. Not measured on many cores yet:
//!   `scripts/many_core.sh` compares the two (`footprint_poll` rows).
//!
//! The switch is read only on the contended path, after the quick spin.
//!
//! ```
//! use footprint::locks::green_wait::{self, GreenLockWait};
//!
//! assert_eq!(green_wait::green_lock_wait(), GreenLockWait::Park, "the default");
//! let was = green_wait::set_green_lock_wait(GreenLockWait::Poll);
//! assert_eq!(was, GreenLockWait::Park);
//! green_wait::set_green_lock_wait(was);
//! ```

use std::sync::atomic::{AtomicBool, Ordering};

/// What a contended green thread does after its quick spin (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GreenLockWait {
    /// Park (the default).
    Park,
    /// Poll while the lock changes hands; park when it does not.
    Poll,
}

/// Whether the rule is [`GreenLockWait::Poll`]. A plain `std` atomic also under loom: it is
/// configuration, not part of any synchronisation protocol.
static POLL: AtomicBool = AtomicBool::new(false);

/// Sets the rule for the whole process; returns the previous one. Takes effect for waits that
/// start after the call (relaxed: a wait racing with the call may use the old rule).
pub fn set_green_lock_wait(rule: GreenLockWait) -> GreenLockWait {
    if POLL.swap(rule == GreenLockWait::Poll, Ordering::Relaxed) {
        GreenLockWait::Poll
    } else {
        GreenLockWait::Park
    }
}

/// Runs `f` under `rule` and puts the previous rule back afterwards, also when `f` panics.
///
/// ```
/// use footprint::locks::green_wait::{self, GreenLockWait};
///
/// let seen = green_wait::with_green_lock_wait(GreenLockWait::Poll, green_wait::green_lock_wait);
/// assert_eq!(seen, GreenLockWait::Poll);
/// assert_eq!(green_wait::green_lock_wait(), GreenLockWait::Park);
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

/// The rule in force.
#[inline]
pub fn green_lock_wait() -> GreenLockWait {
    if POLL.load(Ordering::Relaxed) {
        GreenLockWait::Poll
    } else {
        GreenLockWait::Park
    }
}
