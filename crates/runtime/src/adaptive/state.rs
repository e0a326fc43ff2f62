//! An adaptive runtime's state in its `Shared` (the progress counters, the workers' thread ids,
//! the controller's log) and the checks of `Builder::adaptive_workers`. Below the runtime's
//! registry in the import graph: it names nothing of the runtime.

use super::stats::{AdaptiveStats, Log};
use crate::error::Error;
use crossbeam_utils::CachePadded;
use footprint_pmu::ThreadRegistry;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The controller's sampling interval (003's Reinforcer measures each try for 100 ms).
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);

/// Checks `min..=max` against the CPUs the runtime may use.
pub(crate) fn check_range(range: &RangeInclusive<usize>, cpus: usize) -> Result<(), Error> {
    let (min, max) = (*range.start(), *range.end());
    let reason = if min == 0 {
        "min is 0: at least one worker must stay active"
    } else if min > max {
        "min is above max"
    } else if max > cpus {
        "max is above the CPUs the runtime may use"
    } else {
        return Ok(());
    };
    Err(Error::AdaptiveRange {
        min,
        max,
        cpus,
        reason,
    })
}

/// An adaptive runtime's controller state, in its `Shared`.
pub(crate) struct AdaptiveState {
    pub(crate) min: usize,
    pub(crate) max: usize,
    /// CPUs the runtime may use (Algorithm 1's `NumCores`).
    pub(crate) cpus: usize,
    /// Progress units reported by green threads, per worker (written by the worker's own OS
    /// thread only, like the accounting counters).
    pub(crate) progress: Box<[CachePadded<AtomicU64>]>,
    /// The workers' kernel thread ids (the profile's per-thread rows).
    pub(crate) threads: ThreadRegistry,
    /// What the controller decided and saw (read by `Runtime::stats`).
    pub(crate) log: Mutex<Log>,
    /// Rests of workers above the active count, and hand-offs of queued threads they made.
    pub(crate) rests: AtomicU64,
    pub(crate) handed_off: AtomicU64,
    pub(crate) started: Instant,
    /// Set when the runtime drops: the controller thread stops.
    pub(crate) stop: AtomicBool,
    pub(crate) controller: Mutex<Option<std::thread::Thread>>,
}

/// Progress reported off the workers of any runtime (e.g. by the thread that called
/// `block_on`): every adaptive runtime of the process counts it.
pub(crate) static EXTERNAL_PROGRESS: AtomicU64 = AtomicU64::new(0);

impl AdaptiveState {
    pub(crate) fn new(range: &RangeInclusive<usize>, workers: usize, cpus: usize) -> AdaptiveState {
        AdaptiveState {
            min: *range.start(),
            max: *range.end(),
            cpus,
            progress: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            threads: ThreadRegistry::new(),
            log: Mutex::new(Log::default()),
            rests: AtomicU64::new(0),
            handed_off: AtomicU64::new(0),
            started: Instant::now(),
            stop: AtomicBool::new(false),
            controller: Mutex::new(None),
        }
    }

    /// Progress units reported so far (this runtime's workers and off-worker callers).
    pub(crate) fn progress_total(&self) -> u64 {
        let own: u64 = self
            .progress
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum();
        own + EXTERNAL_PROGRESS.load(Ordering::Relaxed)
    }

    /// Stops the controller thread (the runtime is dropping).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self
            .controller
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            t.unpark();
        }
    }
}

impl AdaptiveState {
    /// The public view of this state (`Runtime::stats().adaptive`).
    pub(crate) fn stats(&self) -> AdaptiveStats {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        AdaptiveStats {
            min: self.min,
            max: self.max,
            active: log.active,
            wanted: log.wanted,
            settled: log.settled,
            intervals: log.intervals,
            decisions_total: log.decisions_total,
            decisions: log.decisions.iter().copied().collect(),
            rests: self.rests.load(Ordering::Relaxed),
            handed_off: self.handed_off.load(Ordering::Relaxed),
            controller_cpu: log.controller_cpu,
            elapsed: self.started.elapsed(),
            sample_errors: log.sample_errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_ranges_are_typed_errors_that_say_what_to_do() {
        for (range, why) in [
            (0..=2, "min is 0"),
            (RangeInclusive::new(3, 2), "min is above max"),
            (1..=5, "above the CPUs"),
        ] {
            let e = check_range(&range, 4).unwrap_err();
            assert!(matches!(e, Error::AdaptiveRange { .. }), "{e:?}");
            let msg = e.to_string();
            assert!(
                msg.contains(why) && msg.contains("adaptive_workers"),
                "{msg}"
            );
        }
        assert!(check_range(&(1..=4), 4).is_ok());
        assert!(check_range(&(2..=2), 4).is_ok());
    }
}
