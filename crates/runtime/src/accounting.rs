//! What the runtime adds up at every green-thread switch: the per-thread record
//! ([`ThreadAccount`], in each control block) and the per-worker totals ([`WorkerAccount`], in
//! each worker's shared part). The switch path that fills them is `worker/switch.rs` (`run_task`); the
//! public views are `stats.rs`.
//!
//! Every field is written by one thread at a time: a thread's record by the worker holding its
//! run reference (hand-overs between workers go through the queues' Release/Acquire), a
//! worker's totals by that worker's own OS thread. So a write is a relaxed load and store, not
//! a locked read-modify-write; readers on other threads (`JoinHandle::stats`,
//! `Runtime::stats`) read relaxed values that may be one switch old.

use std::sync::atomic::{AtomicU64, Ordering};

/// Adds `n` to a counter that only the calling thread writes.
#[inline(always)]
pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// The accounting record of one green thread (reset when its control block is reused).
#[derive(Debug, Default)]
pub(crate) struct ThreadAccount {
    /// Clock ticks spent running (sum over its runs).
    pub(crate) run_ticks: AtomicU64,
    /// Times a worker resumed it (its first start included).
    pub(crate) runs: AtomicU64,
    /// Runs on another worker than the run before.
    pub(crate) migrations: AtomicU64,
    /// Runs that began with the thread reaching the worker by a steal.
    pub(crate) steals: AtomicU64,
    /// Ticks between stopping on a park and the next resume.
    pub(crate) parked_ticks: AtomicU64,
    /// Cache misses over the runs that were counted, and how many runs were.
    pub(crate) misses: AtomicU64,
    pub(crate) counted_runs: AtomicU64,
    /// The tick at which it last parked (0: not parked since its last run).
    pub(crate) park_stamp: AtomicU64,
    /// Nanoseconds it waited for locks (the locks' wait sink, written by the thread itself while
    /// it runs; counted whatever the counter setting).
    pub(crate) lock_wait_ns: AtomicU64,
}

impl ThreadAccount {
    /// Adds `ns` nanoseconds waited for a lock (written only by the green thread itself).
    #[inline]
    pub(crate) fn add_lock_wait(&self, ns: u64) {
        bump(&self.lock_wait_ns, ns);
    }

    /// Zeroes the record (the control block starts a new green thread). Every field but the
    /// lock wait stays zero until a first run is accounted, so a record with no runs and no lock
    /// wait is already clean (two loads on the spawn path when counters are off).
    #[inline]
    pub(crate) fn reset(&self) {
        if self.runs.load(Ordering::Relaxed) == 0 && self.lock_wait_ns.load(Ordering::Relaxed) == 0
        {
            return;
        }
        for c in [
            &self.run_ticks,
            &self.runs,
            &self.migrations,
            &self.steals,
            &self.parked_ticks,
            &self.misses,
            &self.counted_runs,
            &self.park_stamp,
            &self.lock_wait_ns,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }

    /// Accounts the start of a run at tick `now` on a worker: `moved` when the thread last ran
    /// on another worker, `stolen` when the worker took it by a steal.
    #[inline(always)]
    pub(crate) fn begin_run(&self, now: u64, moved: bool, stolen: bool) {
        let runs = self.runs.load(Ordering::Relaxed);
        self.runs.store(runs + 1, Ordering::Relaxed);
        if runs > 0 && moved {
            bump(&self.migrations, 1);
        }
        if stolen {
            bump(&self.steals, 1);
        }
        let parked = self.park_stamp.load(Ordering::Relaxed);
        if parked != 0 {
            bump(&self.parked_ticks, now.saturating_sub(parked));
            self.park_stamp.store(0, Ordering::Relaxed);
        }
    }

    /// Accounts the end of a run of `ticks` ticks with `misses` cache misses (if counted).
    #[inline(always)]
    pub(crate) fn end_run(&self, ticks: u64, misses: Option<u64>) {
        bump(&self.run_ticks, ticks);
        if let Some(m) = misses {
            bump(&self.misses, m);
            bump(&self.counted_runs, 1);
        }
    }

    /// Marks the thread parked at tick `now`.
    #[inline(always)]
    pub(crate) fn parked_at(&self, now: u64) {
        self.park_stamp.store(now.max(1), Ordering::Relaxed);
    }
}

/// The totals of one worker.
#[derive(Debug)]
pub(crate) struct WorkerAccount {
    /// Green-thread runs (resumes) on this worker. Counted whatever the counter setting.
    pub(crate) runs: AtomicU64,
    /// Green threads that parked here. Counted whatever the counter setting.
    pub(crate) parks: AtomicU64,
    /// Successful steals, by tier of the steal order (nearest first).
    pub(crate) steals_by_tier: Box<[AtomicU64]>,
    /// Jobs taken from the shared injector.
    pub(crate) injector_takes: AtomicU64,
    /// Ticks spent looking for work with nothing local (spinning and asleep).
    pub(crate) idle_ticks: AtomicU64,
    /// Times the worker slept on its futex.
    pub(crate) sleeps: AtomicU64,
    /// Sleeps that ran out (the safety net) instead of being woken.
    pub(crate) expired_sleeps: AtomicU64,
    /// Of those, the ones after which the worker's first look found work while no worker
    /// searched.
    pub(crate) expired_with_work: AtomicU64,
    /// Ticks green threads ran here (with accounting on).
    pub(crate) busy_ticks: AtomicU64,
    /// Cache misses counted during runs here.
    pub(crate) misses: AtomicU64,
    /// Counter-source failures (creation or reads); each turns the worker to time only.
    pub(crate) counter_failures: AtomicU64,
}

impl WorkerAccount {
    /// Totals for a worker with `tiers` steal tiers.
    pub(crate) fn new(tiers: usize) -> WorkerAccount {
        WorkerAccount {
            runs: AtomicU64::new(0),
            parks: AtomicU64::new(0),
            steals_by_tier: (0..tiers).map(|_| AtomicU64::new(0)).collect(),
            injector_takes: AtomicU64::new(0),
            idle_ticks: AtomicU64::new(0),
            sleeps: AtomicU64::new(0),
            expired_sleeps: AtomicU64::new(0),
            expired_with_work: AtomicU64::new(0),
            busy_ticks: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            counter_failures: AtomicU64::new(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_adds_what_it_did() {
        let a = ThreadAccount::default();
        a.begin_run(100, true, true); // first run: a move is not a migration
        a.end_run(40, Some(7));
        a.parked_at(150);
        a.begin_run(400, true, false);
        a.end_run(10, None);
        assert_eq!(a.runs.load(Ordering::Relaxed), 2);
        assert_eq!(a.migrations.load(Ordering::Relaxed), 1);
        assert_eq!(a.steals.load(Ordering::Relaxed), 1);
        assert_eq!(a.parked_ticks.load(Ordering::Relaxed), 250);
        assert_eq!(a.run_ticks.load(Ordering::Relaxed), 50);
        assert_eq!(a.misses.load(Ordering::Relaxed), 7);
        assert_eq!(a.counted_runs.load(Ordering::Relaxed), 1);
        assert_eq!(a.park_stamp.load(Ordering::Relaxed), 0);
        a.reset();
        assert_eq!(a.runs.load(Ordering::Relaxed), 0);
    }
}
