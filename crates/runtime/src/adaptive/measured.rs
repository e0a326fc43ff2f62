//! What a search measured, where the program reports progress: each count's intervals (merged
//! over its measurements) and the pooled noise of one interval's throughput, so that a
//! difference between two counts can be told from noise (the rule is in [`Thresholds`]' docs,
//! "Noise").

use super::sample::Acc;
use super::thresholds::Thresholds;

/// One-sided 95 % quantiles of Student's t for 1..=30 degrees of freedom (1.645 beyond).
const T95: [f64; 30] = [
    6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771,
    1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706,
    1.703, 1.701, 1.699, 1.697,
];

/// The pooled noise keeps about this many degrees of freedom (older measurements fade).
const NOISE_DOF: f64 = 40.0;

/// The quantile for `dof` degrees of freedom (at least 1).
fn t95(dof: f64) -> f64 {
    let i = dof.floor().max(1.0) as usize;
    T95.get(i - 1).copied().unwrap_or(1.645)
}

/// The measurements of the current search (by count) and the noise pooled over the
/// controller's life.
#[derive(Clone, Debug, Default)]
pub(crate) struct Measured {
    by_count: Vec<Acc>,
    /// Σ squared relative deviations of the intervals from their measurement's mean...
    ss: f64,
    /// ...and their degrees of freedom.
    dof: f64,
}

impl Measured {
    /// Forgets the counts measured (a new search); the noise estimate stays.
    pub(crate) fn new_search(&mut self) {
        self.by_count.clear();
    }

    /// Adds a complete measurement of `t` workers.
    pub(crate) fn add(&mut self, t: usize, acc: &Acc) {
        if t >= self.by_count.len() {
            self.by_count.resize(t + 1, Acc::default());
        }
        self.by_count[t].merge(acc);
        if let Some((ss, dof)) = acc.relative_spread() {
            self.ss += ss;
            self.dof += f64::from(dof);
            if self.dof > NOISE_DOF {
                let k = NOISE_DOF / self.dof;
                self.ss *= k;
                self.dof = NOISE_DOF;
            }
        }
    }

    /// Everything measured at `t` workers so far, with `current` (a measurement in progress)
    /// added.
    pub(crate) fn at(&self, t: usize, current: Option<&Acc>) -> Acc {
        let mut a = self.by_count.get(t).copied().unwrap_or_default();
        if let Some(c) = current {
            a.merge(c);
        }
        a
    }

    /// The nearest measured counts below and above `t`.
    pub(crate) fn neighbours(&self, t: usize) -> (Option<usize>, Option<usize>) {
        let measured = |c: &usize| self.by_count.get(*c).is_some_and(|a| a.n > 0);
        let below = (0..t).rev().find(measured);
        let above = (t + 1..self.by_count.len()).find(measured);
        (below, above)
    }

    /// The relative throughput difference between `a` and `b` that the noise alone explains
    /// (one-sided 95 %), with `current` (a measurement in progress) in the pool; 0 while
    /// nothing is known of the noise.
    fn margin(&self, a: &Acc, b: &Acc, current: Option<&Acc>) -> f64 {
        let (mut ss, mut dof) = (self.ss, self.dof);
        if let Some((s, d)) = current.and_then(Acc::relative_spread) {
            ss += s;
            dof += f64::from(d);
        }
        if dof < 1.0 || a.n == 0 || b.n == 0 {
            return 0.0;
        }
        let v = ss / dof;
        t95(dof) * (v / f64::from(a.n) + v / f64::from(b.n)).sqrt()
    }

    /// The relative throughput gain of `more` (workers) over `fewer`, if both report progress.
    pub(crate) fn gain(fewer: &Acc, more: &Acc) -> Option<f64> {
        let (f, m) = (fewer.throughput()?, more.throughput()?);
        (f > 0.0).then(|| m / f - 1.0)
    }

    /// Whether the comparison of `more` with `fewer` is too close to call yet: the gain is within
    /// the noise margin of [`Thresholds::throughput_gain`] (`current`: a measurement in
    /// progress, not yet added, whose spread counts too).
    pub(crate) fn too_close(
        &self,
        th: &Thresholds,
        fewer: &Acc,
        more: &Acc,
        current: Option<&Acc>,
    ) -> bool {
        let Some(g) = Self::gain(fewer, more) else {
            return false;
        };
        (g - th.throughput_gain).abs() < self.margin(fewer, more, current)
    }

    /// Whether `more` did better than `fewer` by [`Thresholds::throughput_gain`] (Algorithm 1's
    /// judgement by throughput); `None` where either reported no progress.
    pub(crate) fn more_wins(th: &Thresholds, fewer: &Acc, more: &Acc) -> Option<bool> {
        Self::gain(fewer, more).map(|g| g >= th.throughput_gain)
    }

    /// The measured count that did better than `best` (by the rule of [`Self::more_wins`]:
    /// a count with more workers must gain `throughput_gain`, one with fewer must not lose
    /// it), the one with the most throughput if several did.
    pub(crate) fn rival(&self, th: &Thresholds, best: usize) -> Option<usize> {
        let b = self.at(best, None);
        b.throughput()?;
        let beats = |c: usize, a: &Acc| {
            if c < best {
                Self::more_wins(th, a, &b) == Some(false)
            } else {
                Self::more_wins(th, &b, a) == Some(true)
            }
        };
        self.by_count
            .iter()
            .enumerate()
            .filter(|&(c, a)| c != best && a.n > 0 && beats(c, a))
            .max_by(|(_, x), (_, y)| {
                let (x, y) = (x.throughput(), y.throughput());
                x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)
            })
            .map(|(c, _)| c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive::sample::Sample;

    fn measured(thr: &[f64]) -> Acc {
        let mut a = Acc::default();
        for &t in thr {
            a.add(
                &Sample {
                    cpu: 1.0,
                    throughput: Some(t),
                    ..Sample::default()
                },
                false,
            );
        }
        a
    }

    #[test]
    fn equal_intervals_have_no_noise_and_every_gap_is_real() {
        let mut m = Measured::default();
        let one = measured(&[1000.0, 1000.0]);
        let two = measured(&[1030.0, 1030.0]);
        m.add(1, &one);
        m.add(2, &two);
        let th = Thresholds::default();
        assert!(!m.too_close(&th, &one, &two, None));
        assert_eq!(Measured::more_wins(&th, &one, &two), Some(true));
        assert_eq!(m.rival(&th, 1), Some(2));
        assert_eq!(m.rival(&th, 2), None);
    }

    #[test]
    fn a_gap_inside_the_measured_noise_is_too_close_until_measured_longer() {
        let th = Thresholds::default();
        let mut m = Measured::default();
        // ±10 % between intervals; 2 workers 20 % ahead on the means.
        let one = measured(&[900.0, 1100.0]);
        let two = measured(&[1080.0, 1320.0]);
        m.add(1, &one);
        m.add(2, &two);
        assert!(m.too_close(&th, &one, &two, None));
        // Measured 8 times as long, the same spread and means: the gap is real.
        let long = |a: f64, b: f64| measured(&[a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b]);
        let (one, two) = (long(900.0, 1100.0), long(1080.0, 1320.0));
        m.add(1, &one);
        m.add(2, &two);
        assert!(!m.too_close(&th, &one, &two, None));
    }

    #[test]
    fn neighbours_are_the_nearest_measured_counts() {
        let mut m = Measured::default();
        for t in [1, 2, 4, 8] {
            m.add(t, &measured(&[1000.0]));
        }
        assert_eq!(m.neighbours(4), (Some(2), Some(8)));
        assert_eq!(m.neighbours(1), (None, Some(2)));
        assert_eq!(m.neighbours(6), (Some(4), Some(8)));
        assert_eq!(m.neighbours(8), (Some(4), None));
    }
}
