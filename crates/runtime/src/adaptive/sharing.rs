//! The sharing rule: how many workers a runtime should keep active when it shares the machine
//! with other programs (002's multiprogramming case, 003 ch. 5's FaithFul scheduling, 004
//! §3.3.2's "lower the number of running kernel threads").
//!
//! # The rule
//!
//! *Others* is the number of runnable threads on the machine that are not ours: the kernel's
//! runnable count from `/proc/loadavg` (the signal the informing locks use), less the one
//! reading it (the controller), less our own runnable threads (our CPU utilisation plus our run
//! delay share, both in threads). The machine is **oversubscribed** for us when
//!
//! - `others + wanted > cpus` (there is not a CPU for each worker we want), or
//! - our workers wait for a CPU a quarter of the time or more (`run delay share / active ≥
//!   0.25`, from `schedstat`), or are preempted often (`involuntary switches / active ≥ 100/s`)
//!   while others run (`others ≥ 0.5`).
//!
//! Oversubscribed, the runtime keeps `cap` workers active, between `free = cpus − others`
//! (floored at 1) and `wanted`, by FaithFul's scaling factor `sf = 1 − max(miss ratio, lock
//! time)` (each where measured; 1 when neither is):
//!
//! `cap = max(min, round(wanted − (1 − sf) · (wanted − max(free, 1))))`
//!
//! A scalable program (`sf ≈ 1`: little lock time, few misses) keeps its workers: lowering them
//! would only hand its CPU share to the others. A lock- or memory-bound one (`sf ≈ 0`) comes
//! down to the CPUs that are free, so that its workers are not preempted while they hold locks
//! (FaithFul gives such programs long time quanta for the same reason). When the machine frees
//! up the cap is lifted (`None`).

/// What the sharing rule reads, over one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SharingSignals {
    /// CPUs the runtime may use.
    pub cpus: usize,
    /// Runnable threads on the whole machine (`/proc/loadavg`, the reader included), if known.
    pub runnable: Option<f64>,
    /// Our CPU utilisation, in CPUs' worth (mean running threads of this process).
    pub own_cpu: f64,
    /// Our run delay share: mean number of our threads waiting for a CPU, if known.
    pub run_delay: Option<f64>,
    /// Involuntary context switches of this process per second.
    pub involuntary_per_s: f64,
    /// Last-level cache miss ratio, where counted.
    pub miss_ratio: Option<f64>,
    /// Lock time (share of the green threads' time spent waiting for locks), where known.
    pub lock_time: Option<f64>,
}

/// Thresholds of the sharing rule (see the module docs).
pub const RUN_DELAY_PER_WORKER: f64 = 0.25;
/// Involuntary switches per active worker per second that count as preemption.
pub const PREEMPTIONS_PER_WORKER_S: f64 = 100.0;

impl SharingSignals {
    /// Runnable threads that are not ours (0 when unknown).
    pub fn others(&self) -> f64 {
        match self.runnable {
            Some(r) => (r - 1.0 - self.own_cpu - self.run_delay.unwrap_or(0.0)).max(0.0),
            None => 0.0,
        }
    }

    /// FaithFul's scaling factor `1 − max(miss ratio, lock time)`, clamped to 0..=1.
    pub fn scaling_factor(&self) -> f64 {
        let worst = self
            .miss_ratio
            .unwrap_or(0.0)
            .max(self.lock_time.unwrap_or(0.0));
        (1.0 - worst).clamp(0.0, 1.0)
    }

    /// Whether the machine is oversubscribed for a runtime that wants `wanted` workers and runs
    /// `active` now.
    pub fn oversubscribed(&self, wanted: usize, active: usize) -> bool {
        if self.runnable.is_none() {
            return false;
        }
        let others = self.others();
        if others + wanted as f64 > self.cpus as f64 + 0.5 {
            return true;
        }
        let active = active.max(1) as f64;
        let delayed = self
            .run_delay
            .is_some_and(|d| d / active >= RUN_DELAY_PER_WORKER);
        let preempted = self.involuntary_per_s / active >= PREEMPTIONS_PER_WORKER_S;
        others >= 0.5 && (delayed || preempted)
    }
}

/// The cap on active workers for a runtime that wants `wanted` (at least `min`) and runs
/// `active` now: `None` when the machine has room, else the count of the module docs. E.g. on
/// 2 CPUs with 2 other busy threads, a lock-bound program (lock time 0.9) that wants 2 workers
/// gets 1 (see the tests).
pub fn sharing_cap(s: &SharingSignals, min: usize, wanted: usize, active: usize) -> Option<usize> {
    if !s.oversubscribed(wanted, active) {
        return None;
    }
    let free = (s.cpus as f64 - s.others()).max(1.0);
    let w = wanted as f64;
    let cap = (w - (1.0 - s.scaling_factor()) * (w - free).max(0.0)).round() as usize;
    Some(cap.clamp(min, wanted.max(min)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy_machine(lock: f64) -> SharingSignals {
        // 2 CPUs; the reader, our 2 running workers and 2 threads of another program.
        SharingSignals {
            cpus: 2,
            runnable: Some(5.0),
            own_cpu: 2.0,
            run_delay: Some(0.0),
            lock_time: Some(lock),
            ..SharingSignals::default()
        }
    }

    #[test]
    fn a_free_machine_sets_no_cap() {
        let s = SharingSignals {
            cpus: 2,
            runnable: Some(3.0), // the reader and our two workers
            own_cpu: 2.0,
            ..SharingSignals::default()
        };
        assert_eq!(s.others(), 0.0);
        assert_eq!(sharing_cap(&s, 1, 2, 2), None);
    }

    #[test]
    fn a_lock_bound_program_backs_off_to_the_free_cpus() {
        assert_eq!(sharing_cap(&busy_machine(0.9), 1, 2, 2), Some(1));
        // Never below min.
        assert_eq!(sharing_cap(&busy_machine(0.9), 2, 2, 2), Some(2));
    }

    #[test]
    fn a_scalable_program_keeps_its_workers() {
        assert_eq!(sharing_cap(&busy_machine(0.0), 1, 2, 2), Some(2));
        assert_eq!(busy_machine(0.0).scaling_factor(), 1.0);
    }

    #[test]
    fn the_miss_ratio_counts_like_lock_time() {
        let mut s = busy_machine(0.0);
        s.miss_ratio = Some(0.8);
        assert!((s.scaling_factor() - 0.2).abs() < 1e-12);
        assert_eq!(sharing_cap(&s, 1, 2, 2), Some(1));
    }

    #[test]
    fn the_cap_interpolates_by_the_scaling_factor() {
        // 8 CPUs, 6 other runnable threads: 2 free; wanting 8.
        let s = |lock| SharingSignals {
            cpus: 8,
            runnable: Some(15.0),
            own_cpu: 8.0,
            lock_time: Some(lock),
            ..SharingSignals::default()
        };
        assert_eq!(sharing_cap(&s(1.0), 1, 8, 8), Some(2));
        assert_eq!(sharing_cap(&s(0.5), 1, 8, 8), Some(5));
        assert_eq!(sharing_cap(&s(0.0), 1, 8, 8), Some(8));
    }

    #[test]
    fn run_delay_or_preemption_with_others_running_is_oversubscription() {
        let mut s = SharingSignals {
            cpus: 2,
            runnable: Some(2.0),
            own_cpu: 0.5,
            run_delay: Some(0.0),
            lock_time: Some(1.0),
            ..SharingSignals::default()
        };
        assert!((s.others() - 0.5).abs() < 1e-12);
        assert!(!s.oversubscribed(2, 2));
        s.involuntary_per_s = 250.0;
        assert!(s.oversubscribed(2, 2));
        s.involuntary_per_s = 0.0;
        s.runnable = Some(3.0);
        s.run_delay = Some(0.6); // others: 3 - 1 - 0.5 - 0.6 = 0.9
        assert!(
            s.oversubscribed(1, 2),
            "each worker waited 30 % of the time"
        );
        s.run_delay = Some(0.4);
        assert!(!s.oversubscribed(1, 2), "20 % is below the threshold");
        // Preemption with nobody else runnable is not sharing (our own threads fight).
        let alone = SharingSignals {
            cpus: 2,
            runnable: Some(1.0),
            involuntary_per_s: 1000.0,
            ..SharingSignals::default()
        };
        assert!(!alone.oversubscribed(2, 2));
    }

    #[test]
    fn unknown_load_is_no_cap() {
        let s = SharingSignals {
            cpus: 2,
            lock_time: Some(1.0),
            ..SharingSignals::default()
        };
        assert_eq!(sharing_cap(&s, 1, 2, 2), None);
    }
}
