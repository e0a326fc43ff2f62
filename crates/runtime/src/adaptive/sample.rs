//! What the controller reads: one interval's profile ([`Sample`]) and the mean of a
//! configuration's measured intervals (`Acc`, whose [`Acc::profile`] is again a [`Sample`]).

use super::sharing::SharingSignals;

/// One interval as the controller sees it; also a configuration's profile (the mean of its
/// measured intervals, with no sharing signals).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Workers that were active during the interval.
    pub active: usize,
    /// CPU utilisation of the process, in CPUs' worth.
    pub cpu: f64,
    /// Lock time: share of the green threads' time spent waiting for locks, if known.
    pub lock_time: Option<f64>,
    /// Voluntary context switches of the process per second.
    pub voluntary_per_s: f64,
    /// Migrations of the workers between CPUs per second, if known.
    pub migrations_per_s: Option<f64>,
    /// Progress units per second (`progress(n)`), if the program reported any.
    pub throughput: Option<f64>,
    /// What the sharing rule reads.
    pub sharing: SharingSignals,
}

/// Sums of measured intervals, for their mean profile.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Acc {
    /// Intervals added.
    pub(crate) n: u32,
    /// Of those, intervals in which the machine looked oversubscribed (see `add`).
    pub(crate) shared: u32,
    cpu: f64,
    lock: Option<f64>,
    vcx: f64,
    migr: Option<f64>,
    thr: Option<f64>,
    /// Sum of the squared throughputs (for the spread between intervals).
    thr_sq: Option<f64>,
}

fn add_opt(acc: &mut Option<f64>, v: Option<f64>, first: bool) {
    *acc = match (first, *acc, v) {
        (true, _, v) => v,
        (false, Some(a), Some(v)) => Some(a + v),
        _ => None,
    };
}

impl Acc {
    /// Adds one interval; `shared` says whether the machine looked oversubscribed during it.
    pub(crate) fn add(&mut self, s: &Sample, shared: bool) {
        let first = self.n == 0;
        self.n += 1;
        self.shared += u32::from(shared);
        self.cpu += s.cpu;
        self.vcx += s.voluntary_per_s;
        add_opt(&mut self.lock, s.lock_time, first);
        add_opt(&mut self.migr, s.migrations_per_s, first);
        add_opt(&mut self.thr, s.throughput, first);
        add_opt(&mut self.thr_sq, s.throughput.map(|t| t * t), first);
    }

    /// Adds the intervals of `other` (another measurement of the same count).
    pub(crate) fn merge(&mut self, other: &Acc) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let sum = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a + b);
        self.n += other.n;
        self.shared += other.shared;
        self.cpu += other.cpu;
        self.vcx += other.vcx;
        self.lock = sum(self.lock, other.lock);
        self.migr = sum(self.migr, other.migr);
        self.thr = sum(self.thr, other.thr);
        self.thr_sq = sum(self.thr_sq, other.thr_sq);
    }

    /// The mean throughput of the intervals added, if every one reported progress.
    pub(crate) fn throughput(&self) -> Option<f64> {
        (self.n > 0)
            .then_some(self.thr?)
            .map(|t| t / f64::from(self.n))
    }

    /// The squared relative deviations of the intervals' throughput from their mean, summed
    /// (`Σ (x/mean − 1)²`, 0 within rounding), with `n − 1` degrees of freedom: this
    /// measurement's share of the pooled noise estimate.
    pub(crate) fn relative_spread(&self) -> Option<(f64, u32)> {
        let mean = self.throughput().filter(|&m| m > 0.0)?;
        let n = f64::from(self.n);
        let ss = (self.thr_sq? / (mean * mean) - n).max(0.0);
        // Below rounding error of equal intervals: none.
        Some((if ss < 1e-9 * n { 0.0 } else { ss }, self.n - 1))
    }

    /// Whether most of the intervals were measured on an oversubscribed machine.
    pub(crate) fn mostly_shared(&self) -> bool {
        self.n > 0 && 2 * self.shared > self.n
    }

    /// The mean of the intervals added, as the profile of `active` workers.
    pub(crate) fn profile(&self, active: usize) -> Sample {
        let n = f64::from(self.n.max(1));
        Sample {
            active,
            cpu: self.cpu / n,
            lock_time: self.lock.map(|v| v / n),
            voluntary_per_s: self.vcx / n,
            migrations_per_s: self.migr.map(|v| v / n),
            throughput: self.thr.map(|v| v / n),
            sharing: SharingSignals::default(),
        }
    }
}
