//! The process-wide switch for lock-hot placement (000, FAST), for experiments.
//!
//! When a lock, barrier or condition variable wakes a parked thread, it passes a [`Placement`]
//! hint to the woken thread's [`Unparker`](crate::Unparker). With lock-hot placement on (the
//! default), a releaser that runs on a runtime worker asks for the woken thread to run on *its*
//! worker ([`Placement::Worker`]), whose cache holds the critical section's data; a releaser on a
//! plain OS thread passes [`Placement::Anywhere`]. With it off, every wake-up passes
//! [`Placement::Anywhere`] and the scheduler places the woken thread by its own rules.
//!
//! The switch is read only on the wake path (after a release found a parked thread), never on an
//! uncontended lock or unlock.
//!
//! ```
//! use footprint::locks::placement;
//!
//! assert!(placement::lock_hot(), "on by default");
//! let was = placement::set_lock_hot(false); // e.g. to measure a benchmark without it
//! assert!(was);
//! assert!(!placement::lock_hot());
//! placement::set_lock_hot(true);
//! ```

use crate::hook::{current_hook, Placement};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether releasers ask for lock-hot placement (see the module docs). A plain `std` atomic also
/// under loom: it is configuration, not part of any synchronisation protocol.
static LOCK_HOT: AtomicBool = AtomicBool::new(true);

/// Turns lock-hot placement on or off for the whole process; returns the previous setting.
///
/// Takes effect for wake-ups that start after the call (relaxed: a wake-up racing with the call
/// may still use the old setting). Meant for experiments that compare the two; the default (on)
/// is what the runtime is designed for.
pub fn set_lock_hot(on: bool) -> bool {
    LOCK_HOT.swap(on, Ordering::Relaxed)
}

/// Whether lock-hot placement is on (the default).
#[inline]
pub fn lock_hot() -> bool {
    LOCK_HOT.load(Ordering::Relaxed)
}

/// The hint a releaser on the current thread passes to the threads it wakes: the releaser's
/// worker when lock-hot placement is on and the releaser runs on a runtime worker, otherwise
/// [`Placement::Anywhere`].
#[inline]
pub(crate) fn wake_placement() -> Placement {
    if !lock_hot() {
        return Placement::Anywhere;
    }
    current_hook()
        .worker_id()
        .map_or(Placement::Anywhere, Placement::Worker)
}
