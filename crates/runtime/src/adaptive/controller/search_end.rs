//! The end of a search, where the program reports progress (the
//! rules are in [`Thresholds`](super::Thresholds)' docs, "Noise" and "Large ranges"): a measurement too close to
//! call within the measured noise goes on; on a large range the counts between the best and
//! its measured neighbours are tried after the climb stops; and a count this search measured
//! doing better than the chosen one is measured again before the search settles.

use super::{Controller, Decision, Measured, Mode, Phase, Reason, Sample};

impl Controller {
    /// Counts a search may try between its best and the neighbours: `log2` of the range less 1
    /// (3 on `1..=16`, 5 on `1..=64`: bisecting the gaps the doubling climb left), at most [`Thresholds::refine_probes`](super::Thresholds::refine_probes).
    pub(super) fn refine_probes(&self) -> u32 {
        let range = self.limits.max - self.limits.min + 1;
        (usize::BITS - range.leading_zeros())
            .saturating_sub(2)
            .min(self.th.refine_probes)
    }

    /// Whether the measurement in progress should go on (where the program reports progress):
    /// its comparison is too close to call within the measured noise and it is shorter than
    /// [`Thresholds::measure_most`](super::Thresholds::measure_most).
    pub(super) fn measure_longer(&self) -> bool {
        let Phase::Measuring { t, mode, acc, .. } = &self.phase else {
            return false;
        };
        if acc.n >= self.th.measure_most {
            return false;
        }
        let other = match mode {
            // The first measurement of a try is judged as it is (a close call, by the band or
            // the noise, is measured best–tried–best: a drifting load cancels out).
            Mode::Climb { .. } => return false,
            Mode::Fewer { upper } => upper.active,
            Mode::Recheck { tried } => tried.active,
            Mode::Refine { best, .. } | Mode::Rival { best, .. } => best.active,
        };
        let (this, that) = (
            self.measured.at(*t, Some(acc)),
            self.measured.at(other, None),
        );
        let (fewer, more) = if *t < other {
            (this, that)
        } else {
            (that, this)
        };
        self.measured.too_close(&self.th, &fewer, &more, Some(acc))
    }

    /// Whether `tried` (more workers than `best`, just measured) gained within the
    /// measured noise of [`Thresholds::throughput_gain`](super::Thresholds::throughput_gain).
    pub(super) fn within_noise(&self, best: &Sample, tried: &Sample) -> bool {
        let (b, t) = (
            self.measured.at(best.active, None),
            self.measured.at(tried.active, None),
        );
        self.measured.too_close(&self.th, &b, &t, None)
    }

    /// The better of `best` and `other` by their throughput measured in this search (the one
    /// with more workers must gain [`Thresholds::throughput_gain`](super::Thresholds::throughput_gain)), with the reason to keep it:
    /// `why` for `best`, [`Reason::BestMeasured`] for `other`.
    pub(super) fn better_of(
        &self,
        best: Sample,
        other: Sample,
        why: Reason,
        incumbent: bool,
    ) -> (Sample, Reason) {
        let best = self.profile(best.active, best);
        let (fewer, more) = if other.active < best.active {
            (other, best)
        } else {
            (best, other)
        };
        let (f, m) = (
            self.measured.at(fewer.active, None),
            self.measured.at(more.active, None),
        );
        let winner = match Measured::gain(&f, &m) {
            // A probe with fewer workers replaces the best only where it did as much: a
            // chain of probes, each a little worse than the last, would drift away.
            Some(g) if incumbent && other.active < best.active => {
                if g <= 0.0 {
                    fewer
                } else {
                    more
                }
            }
            Some(g) if g >= self.th.throughput_gain => more,
            Some(_) => fewer,
            None => best,
        };
        if winner.active == best.active {
            (best, why)
        } else {
            (winner, Reason::BestMeasured)
        }
    }

    /// The search would end at `best` (for `why`). Where the program reports progress: on a
    /// large range after the climb stopped (`refine`), first try counts between `best` and its
    /// measured neighbours; then, if a count measured in this search did better than `best`,
    /// measure it again and keep the better (once per search). Else settle.
    pub(super) fn conclude(&mut self, best: Sample, why: Reason, refine: bool) -> Option<Decision> {
        if self.measured.at(best.active, None).throughput().is_some() {
            if refine && self.limits.large() && self.refined < self.refine_probes() {
                if let Some(t) = self.between(best.active) {
                    self.refined += 1;
                    self.phase = self.measuring(t, Mode::Refine { best, why });
                    return Some(Decision {
                        active: self.active(),
                        reason: Reason::Refine,
                    });
                }
            }
            if !self.rival_checked {
                if let Some(t) = self.measured.rival(&self.th, best.active) {
                    self.rival_checked = true;
                    self.phase = self.measuring(t, Mode::Rival { best, why });
                    return Some(Decision {
                        active: self.active(),
                        reason: Reason::Rival,
                    });
                }
            }
        }
        self.settle(best, why)
    }

    /// The next count to try between `best` and a measured neighbour: halfway into the wider
    /// gap (a golden-section search's rule: the bracket around the best shrinks fastest), on
    /// a tie towards the neighbour that did more; `None` where no unmeasured count lies next
    /// to `best`.
    pub(super) fn between(&self, best: usize) -> Option<usize> {
        let thr = |t: usize| self.measured.at(t, None).throughput().unwrap_or(0.0);
        let (below, above) = self.measured.neighbours(best);
        let left = below.map_or(0, |n| best - n);
        let right = above.map_or(0, |n| n - best);
        if left.max(right) < 2 {
            return None;
        }
        let go_left = left > right || (left == right && below.map(thr) > above.map(thr));
        Some(if go_left {
            best - left / 2
        } else {
            best + right / 2
        })
    }
}
