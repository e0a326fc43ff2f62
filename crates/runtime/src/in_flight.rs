//! Blocking-pool jobs in flight, counted apart from the pool itself so that the watcher can read
//! the count without depending on the pool (which depends on the runtime).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Jobs submitted to the blocking pool and not finished (all runtimes): while any is, a runtime
/// whose green threads all wait may be waiting for it, not hung (`watch/`).
pub(crate) static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// How many blocking-pool jobs are in flight now.
pub(crate) fn in_flight() -> usize {
    IN_FLIGHT.load(Ordering::Relaxed)
}
