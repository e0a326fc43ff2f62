//! The stop / progress handshake between a [`BackgroundSampler`](crate::BackgroundSampler) and
//! its thread: one mutex-protected control block and one condition variable. The thread waits
//! for its next tick with a timeout but is woken at once by `stop`, so dropping a sampler never
//! waits out an interval; waiters for progress are woken by every published interval. Modelled
//! with loom (`RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-pmu --lib --release ticker`), where
//! timeouts never fire, so a lost wake-up shows up as a deadlock.

use std::time::{Duration, Instant};

#[cfg(loom)]
use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::sys::Tid;

/// CPU cost of the background sampler.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SamplerOverhead {
    /// CPU time of the sampler thread, ns.
    pub cpu_ns: u64,
    /// Wall time since the sampler thread started, ns.
    pub wall_ns: u64,
    /// Snapshots taken (the baseline included).
    pub snapshots: u64,
}

impl SamplerOverhead {
    /// CPU time over wall time: the share of one core the sampler uses (budget: 0.01).
    pub fn fraction_of_one_core(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            self.cpu_ns as f64 / self.wall_ns as f64
        }
    }

    /// Mean CPU time per snapshot.
    pub fn per_snapshot(&self) -> Duration {
        Duration::from_nanos(self.cpu_ns / self.snapshots.max(1))
    }
}

/// What the sampler thread publishes and the owner reads.
#[derive(Debug, Default)]
pub(crate) struct Control {
    pub(crate) stop: bool,
    pub(crate) intervals: u64,
    pub(crate) errors: u64,
    pub(crate) last_error: Option<String>,
    pub(crate) overhead: SamplerOverhead,
    pub(crate) sampler_tid: Option<Tid>,
}

#[derive(Debug, Default)]
pub(crate) struct Ticker {
    control: Mutex<Control>,
    cv: Condvar,
}

impl Ticker {
    pub(crate) fn new() -> Ticker {
        Ticker::default()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Control> {
        // Every update of the control block is a whole-field store: a panic elsewhere cannot
        // leave it half-written, so a poisoned lock is still consistent.
        self.control
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sampler thread: blocks until `next` or until stopped. `true` if it is time to sample,
    /// `false` if the sampler was stopped.
    pub(crate) fn wait_until(&self, next: Instant) -> bool {
        let mut c = self.lock();
        loop {
            if c.stop {
                return false;
            }
            let now = Instant::now();
            if now >= next {
                return true;
            }
            c = self
                .cv
                .wait_timeout(c, next - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// Sampler thread: updates the control block and wakes every waiter.
    pub(crate) fn publish(&self, update: impl FnOnce(&mut Control)) {
        update(&mut self.lock());
        self.cv.notify_all();
    }

    /// Owner: asks the thread to stop and wakes it (and every waiter).
    pub(crate) fn stop(&self) {
        self.publish(|c| c.stop = true);
    }

    /// Owner: blocks until `n` intervals are published, the sampler stops, or `timeout` passes.
    pub(crate) fn wait_for_intervals(&self, n: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut c = self.lock();
        while c.intervals < n {
            let now = Instant::now();
            if now >= deadline || c.stop {
                return false;
            }
            c = self
                .cv
                .wait_timeout(c, deadline - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        true
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    const FAR: Duration = Duration::from_secs(3600);

    #[test]
    fn stop_always_wakes_the_waiting_sampler() {
        loom::model(|| {
            let t = Arc::new(Ticker::new());
            let t2 = Arc::clone(&t);
            let h = loom::thread::spawn(move || t2.wait_until(Instant::now() + FAR));
            t.stop();
            // Timeouts never fire under loom: this join only returns if stop woke the thread.
            assert!(!h.join().unwrap());
        });
    }

    #[test]
    fn a_published_interval_always_wakes_a_waiter() {
        loom::model(|| {
            let t = Arc::new(Ticker::new());
            let t2 = Arc::clone(&t);
            let h = loom::thread::spawn(move || t2.publish(|c| c.intervals += 1));
            assert!(t.wait_for_intervals(1, FAR));
            h.join().unwrap();
            assert_eq!(t.lock().intervals, 1);
        });
    }

    #[test]
    fn stop_releases_a_waiter_that_will_never_be_satisfied() {
        loom::model(|| {
            let t = Arc::new(Ticker::new());
            let t2 = Arc::clone(&t);
            let h = loom::thread::spawn(move || t2.wait_for_intervals(5, FAR));
            t.publish(|c| c.intervals += 1);
            t.stop();
            assert!(!h.join().unwrap());
        });
    }
}
