//! The numbers the controller decides by: Algorithm 1's thresholds and the phase-change watch's
//! ([`Thresholds`]), and the range it searches ([`Limits`]).

/// The thresholds of Algorithm 1 and of the phase-change watch. 003 does not print its values;
/// these are chosen for this runtime (documented in the README's adaptive section).
///
/// # The phase-change watch
///
/// After a search the controller keeps a running mean and deviation of the settled intervals'
/// throughput (where the program reports progress) or else lock time and CPU utilisation
/// (exponentially weighted over the last [`phase_window`](Self::phase_window) intervals, the
/// deviation trusted once [`phase_baseline`](Self::phase_baseline) intervals are in). An
/// interval is *shifted* when a figure is further from its mean than both a floor
/// ([`phase_rel_shift`](Self::phase_rel_shift) of the mean for throughput and CPU utilisation,
/// at least [`phase_cpu_shift`](Self::phase_cpu_shift) CPUs for the latter;
/// [`phase_lock_shift`](Self::phase_lock_shift) for lock time) and
/// [`phase_spread_k`](Self::phase_spread_k) deviations; [`phase_confirm`](Self::phase_confirm)
/// shifted intervals in a row, all to the same side, are a phase change (after re-searches that
/// changed nothing, up to [`phase_backoff`](Self::phase_backoff) times as many). Shifted intervals followed by an unshifted one
/// were noise and join the running figures. Where the program reports progress, throughput
/// alone is watched: a change of the background load (runnable threads, involuntary switches,
/// the CPU share the kernel gives us) that leaves the work done per second as it was is not a
/// phase change.
///
/// # Noise (where the program reports progress)
///
/// The intervals of each measurement give its spread: the squared relative deviations of the
/// intervals' throughput from the measurement's mean, pooled over the measurements of the
/// controller's life (about the last 40 degrees of freedom). A comparison of two counts is
/// *too close to call* when the relative gain of the one with more workers lies within
/// `t₉₅(dof) · √(v/n₁ + v/n₂)` of [`throughput_gain`](Self::throughput_gain) (`v` the pooled
/// variance, `n` the intervals behind each mean, `t₉₅` Student's one-sided 95 % quantile).
/// A try too close to call is measured best–tried–best like a close call by
/// [`recheck_band`](Self::recheck_band); the re-measurement of the best, a re-search's try with
/// fewer workers, and the counts of "Large ranges" go on measuring, one interval at a time, up
/// to [`measure_most`](Self::measure_most) intervals, while too close to call. Without noise
/// (equal intervals) nothing is too close: the decisions are those of Algorithm 1 above.
///
/// # Large ranges
///
/// 003's `T_step` is a third of the range: on 16 CPUs each try adds 5 workers, and a lock-bound
/// program whose throughput at 6 workers is 0.9 of that at 1 can read as good on noisy
/// intervals (the lent 16-CPU machine's `lock_bound`: 1 → 6 → 8 → 6 → 13 → 8, kept 8, 1.6×
/// slower than 1). Where the range is large ([`Limits::large`], `T_step ≥ 4`, 12 workers or
/// more), the climb at most doubles the count above `min − 1` (1, 2, 4, 8, 13, 16 on
/// `1..=16`; Algorithm 1's `T_step` or `T_step/2` stays the largest step). Where the program
/// reports progress, after the climb stops, counts between the best and its measured
/// neighbours are tried (halfway into the wider gap, on a tie towards the neighbour that did
/// more; at most `log2(range) − 1` of them, capped by [`refine_probes`](Self::refine_probes));
/// a count between replaces the best where it did as much (with fewer workers) or
/// `throughput_gain` more (with more). On every range, before a search with progress figures
/// settles, a *rival* — a count it measured that did better than the chosen one by Algorithm
/// 1's rule (a count with fewer workers that the chosen one does not beat by
/// `throughput_gain`, or one with more workers that beats it by that much) — is measured again
/// and the better of the two kept, once per search: a search never settles on a count
/// measured slower than another beyond the threshold without measuring that one again.
/// Shown on a model (`search_model_tests.rs`), not measured on a machine with more than 2
/// CPUs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// LOCK is low below this lock time (003's shuffling triggers at 5 %).
    pub lock_low: f64,
    /// LOCK is high from this lock time on (between the two it is neither).
    pub lock_high: f64,
    /// ΔLOCK is low below this absolute rise.
    pub lock_delta_low: f64,
    /// ΔLOCK is high from this absolute rise on.
    pub lock_delta_high: f64,
    /// ΔVCX and ΔMIGR are low when the rate grows by less than this factor of the old one (or
    /// less than `rate_delta_low_abs` per second)...
    pub rate_delta_low_rel: f64,
    /// ...(the absolute floor of a rise that is not low)...
    pub rate_delta_low_abs: f64,
    /// ...and high when it grows by this factor of the old one...
    pub rate_delta_rel: f64,
    /// ...and by at least this many per second.
    pub rate_delta_abs: f64,
    /// ΔCPU_UTIL is low below this many CPUs gained per added worker.
    pub cpu_gain_low: f64,
    /// With progress reported: more workers are an improvement only with this relative
    /// throughput gain, and a sharing cap that loses more than this share is lifted.
    pub throughput_gain: f64,
    /// With progress reported: a try whose relative throughput gain is within this of
    /// `throughput_gain` is a close call, and the best count is measured again first.
    pub recheck_band: f64,
    /// Phase watch: the floor of a lock-time shift (absolute)...
    pub phase_lock_shift: f64,
    /// ...the floor of a throughput or CPU-utilisation shift, relative to the running mean...
    pub phase_rel_shift: f64,
    /// ...and of a CPU-utilisation shift in CPUs...
    pub phase_cpu_shift: f64,
    /// ...and a shift must also exceed this many running deviations...
    pub phase_spread_k: f64,
    /// ...for this many intervals in a row, all to the same side of the mean.
    pub phase_confirm: u32,
    /// A re-search that ends at the count it started from doubles the intervals the next phase
    /// change needs, up to this factor of `phase_confirm` (a re-search that moves the count
    /// resets it).
    pub phase_backoff: u32,
    /// Phase watch: the running mean and deviation weigh about this many recent intervals.
    pub phase_window: u32,
    /// Phase watch: intervals in the running figures before their deviation is trusted (until
    /// then only the floors apply).
    pub phase_baseline: u32,
    /// Intervals skipped after each change of the active count.
    pub settle: u32,
    /// Intervals averaged into a configuration's profile.
    pub measure: u32,
    /// Where the program reports progress: a measurement whose comparison is too close to call
    /// (see "Noise") goes on, one interval at a time, up to this many intervals.
    pub measure_most: u32,
    /// On a large range ([`Limits::large`]), where the program reports progress: the most
    /// counts tried between the best and its measured neighbours after the climb stopped (see
    /// "Large ranges"; a search tries `log2(range) − 1` of them, 3 on `1..=16`, if this allows).
    pub refine_probes: u32,
    /// Intervals in a row the machine must look shared (or free) before the cap moves.
    pub sharing_confirm: u32,
    /// An interval with less CPU use than this (CPUs' worth) is idle: the program waits for
    /// something else (I/O, its caller), so it says nothing about worker counts and is skipped.
    /// So is an interval without progress from a program that reports progress (the CPU time
    /// went to work it does not count, e.g. its caller's: there is nothing to judge counts by).
    pub idle_cpu: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            lock_low: 0.05,
            lock_high: 0.10,
            lock_delta_low: 0.02,
            lock_delta_high: 0.05,
            rate_delta_low_rel: 0.2,
            rate_delta_low_abs: 20.0,
            rate_delta_rel: 0.5,
            rate_delta_abs: 100.0,
            cpu_gain_low: 0.3,
            throughput_gain: 0.02,
            recheck_band: 0.03,
            phase_lock_shift: 0.2,
            phase_rel_shift: 0.25,
            phase_cpu_shift: 0.5,
            phase_spread_k: 3.0,
            phase_confirm: 5,
            phase_backoff: 4,
            phase_window: 16,
            phase_baseline: 4,
            settle: 1,
            measure: 2,
            measure_most: 4,
            refine_probes: 6,
            sharing_confirm: 2,
            idle_cpu: 0.1,
        }
    }
}

/// The limits of the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Fewest active workers.
    pub min: usize,
    /// Most active workers.
    pub max: usize,
    /// Cores the runtime may use (Algorithm 1's `NumCores`).
    pub cores: usize,
    /// Algorithm 1's `T_step` (at least 1).
    pub step: usize,
}

/// `T_step` from which a range counts as large ([`Limits::large`]): 12 workers or more.
pub const LARGE_STEP: usize = 4;

impl Limits {
    /// Whether the range is large (`T_step ≥ LARGE_STEP`, 12 workers or more): the climb
    /// then at most doubles the count above `min − 1` at each try (1, 2, 4, 8, ... on
    /// `1..=16`, until the doubling exceeds `T_step`), and the best is refined between its
    /// measured neighbours (see [`Thresholds`]' docs, "Large ranges"). Smaller ranges climb by
    /// Algorithm 1's steps alone, as before. E.g. `1..=2` (`T_step` 1) and `1..=11` (3) are
    /// not large, `1..=16` (5) is (the model tests use these; the type is internal).
    pub fn large(&self) -> bool {
        self.step >= LARGE_STEP
    }

    /// The next count to try from `t`: `t + T_step`, or `t + T_step / 2` (at least 1) when
    /// `half`; on a large range at most `2t − min + 1` (doubling); never above `max`.
    pub fn next_try(&self, t: usize, half: bool) -> usize {
        let mut dt = if half {
            (self.step / 2).max(1)
        } else {
            self.step
        };
        if self.large() {
            dt = dt.min(t + 1 - self.min.min(t));
        }
        (t + dt).min(self.max)
    }

    /// Limits for `min..=max` on `cores` cores with 003's proportion of `T_step` (8 of 24
    /// cores): a third of the range, at least 1.
    pub fn new(min: usize, max: usize, cores: usize) -> Limits {
        Limits {
            min,
            max,
            cores,
            step: ((max - min + 1) / 3).max(1),
        }
    }
}
