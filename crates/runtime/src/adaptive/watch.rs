//! The phase-change watch: after a search, is the program still the one the choice was made
//! on? Running figures of the settled intervals and the rule of
//! [`Thresholds`](super::thresholds::Thresholds)' docs ("The phase-change watch").

use super::sample::{Acc, Sample};
use super::thresholds::Thresholds;

/// A running mean and deviation, exponentially weighted over about `window` values (the exact
/// mean and population deviation of the first `window`).
#[derive(Clone, Copy, Debug, Default)]
struct Spread {
    n: u32,
    mean: f64,
    var: f64,
}

impl Spread {
    fn add(&mut self, x: f64, window: u32) {
        self.n = self.n.saturating_add(1);
        let a = 1.0 / f64::from(self.n.min(window.max(1)));
        let d = x - self.mean;
        let step = a * d;
        self.mean += step;
        self.var = (1.0 - a) * (self.var + d * step);
    }

    /// Whether `x` is further from the mean than `floor` and than k deviations (the deviation
    /// counts once the baseline is in).
    fn away(&self, th: &Thresholds, x: f64, floor: f64) -> bool {
        let spread = if self.n >= th.phase_baseline {
            th.phase_spread_k * self.var.max(0.0).sqrt()
        } else {
            0.0
        };
        (x - self.mean).abs() > floor.max(spread)
    }
}

/// The watch over one settled choice.
#[derive(Clone, Debug)]
pub(crate) struct Watch {
    /// Throughput, where the choice was made with progress figures (then it alone is watched).
    thr: Option<Spread>,
    lock: Option<Spread>,
    cpu: Spread,
    /// The shifted intervals of the current run.
    drift: Vec<Sample>,
}

impl Watch {
    /// A watch over the choice whose measured profile is `best` (the first running value).
    pub(crate) fn new(th: &Thresholds, best: &Sample) -> Watch {
        let seed = |v: f64| {
            let mut s = Spread::default();
            s.add(v, th.phase_window);
            s
        };
        Watch {
            thr: best.throughput.map(seed),
            lock: best.lock_time.map(seed),
            cpu: seed(best.cpu),
            drift: Vec::new(),
        }
    }

    /// Forgets a run of shifted intervals (the count was changed from outside the search).
    pub(crate) fn restart(&mut self) {
        self.drift.clear();
    }

    /// Feeds one settled interval; returns the new phase's profile (the mean of the shifted
    /// intervals but the first, which may straddle the change) when `confirm` shifted intervals in a row, all to the same side, make a phase
    /// change.
    pub(crate) fn observe(&mut self, th: &Thresholds, s: &Sample, confirm: u32) -> Option<Sample> {
        let side = self.shifted(th, s);
        let same_side = side.is_some()
            && self
                .drift
                .first()
                .is_none_or(|d| self.shifted(th, d) == side);
        if same_side {
            self.drift.push(*s);
            if self.drift.len() < confirm.max(1) as usize {
                return None;
            }
            // The first shifted interval may straddle the change (the end of the old phase and
            // the start of the new one): a phase whose rate fell 50-fold read 7.5 times its new
            // rate there, and a profile that included it made the next try look like no gain.
            // The new phase is the intervals after it (that one alone where it is all).
            let mut acc = Acc::default();
            let from = usize::from(self.drift.len() > 1);
            for d in &self.drift[from..] {
                acc.add(d, false);
            }
            self.drift.clear();
            return Some(acc.profile(s.active));
        }
        // A run of shifted intervals that ended (or turned to the other side) was noise: it
        // belongs to the spread.
        for d in std::mem::take(&mut self.drift) {
            self.add(th, &d);
        }
        if side.is_some() {
            self.drift.push(*s); // a new run, on the other side
        } else {
            self.add(th, s);
        }
        None
    }

    fn add(&mut self, th: &Thresholds, s: &Sample) {
        let w = th.phase_window;
        if let (Some(t), Some(x)) = (&mut self.thr, s.throughput) {
            t.add(x, w);
        }
        if let (Some(l), Some(x)) = (&mut self.lock, s.lock_time) {
            l.add(x, w);
        }
        self.cpu.add(s.cpu, w);
    }

    /// Whether `s` counts towards a phase change, and to which side: the signs of the shifts
    /// (throughput's alone where it is watched; else lock time's and CPU use's, 0 where that
    /// figure did not shift).
    fn shifted(&self, th: &Thresholds, s: &Sample) -> Option<(i8, i8)> {
        let side = |away: bool, x: f64, mean: f64| match (away, x > mean) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => -1,
        };
        if let (Some(t), Some(x)) = (&self.thr, s.throughput) {
            // Progress reported: the work done decides, not the background's footprint on us.
            let away = t.away(th, x, th.phase_rel_shift * t.mean.abs());
            return away.then(|| (side(true, x, t.mean), 0));
        }
        let lock = match (&self.lock, s.lock_time) {
            (Some(l), Some(x)) => side(l.away(th, x, th.phase_lock_shift), x, l.mean),
            _ => 0,
        };
        let cpu_floor = (th.phase_rel_shift * self.cpu.mean.abs()).max(th.phase_cpu_shift);
        let cpu = side(self.cpu.away(th, s.cpu, cpu_floor), s.cpu, self.cpu.mean);
        (lock != 0 || cpu != 0).then_some((lock, cpu))
    }
}
