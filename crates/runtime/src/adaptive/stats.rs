//! What an adaptive runtime decided and saw: the controller's log and its public view
//! ([`AdaptiveStats`], part of [`RuntimeStats`](crate::RuntimeStats)).

use super::controller::Reason;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// Decisions kept (the oldest are dropped).
const DECISIONS_KEPT: usize = 32;
/// Sampled intervals kept (about 50 s at 100 ms).
const SAMPLES_KEPT: usize = 512;

/// One decision of the controller.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AdaptiveDecision {
    /// When, since the runtime was built.
    pub at: Duration,
    /// Active workers from then on.
    pub active: usize,
    /// Why.
    pub reason: Reason,
}

/// One sampled interval, as the controller saw it (see
/// [`Runtime::adaptive_samples`](crate::Runtime::adaptive_samples)).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AdaptiveSample {
    /// End of the interval, since the runtime was built.
    pub at: Duration,
    /// Active workers during the interval.
    pub active: usize,
    /// CPU utilisation of the process, CPUs' worth.
    pub cpu: f64,
    /// Lock time (share of the green threads' time spent waiting for locks), if known.
    pub lock_time: Option<f64>,
    /// Voluntary context switches per second.
    pub voluntary_per_s: f64,
    /// Involuntary context switches per second.
    pub involuntary_per_s: f64,
    /// Worker migrations per second, if known.
    pub migrations_per_s: Option<f64>,
    /// Progress units per second, if the program reported any.
    pub throughput: Option<f64>,
    /// Runnable threads of other programs (from `/proc/loadavg`), if known.
    pub others: Option<f64>,
}

#[derive(Debug, Default)]
pub(crate) struct Log {
    pub(crate) active: usize,
    pub(crate) wanted: usize,
    pub(crate) settled: bool,
    pub(crate) intervals: u64,
    pub(crate) decisions_total: u64,
    pub(crate) decisions: VecDeque<AdaptiveDecision>,
    pub(crate) samples: VecDeque<AdaptiveSample>,
    pub(crate) controller_cpu: Duration,
    pub(crate) sample_errors: u64,
}

impl Log {
    pub(crate) fn decide(&mut self, d: AdaptiveDecision) {
        self.decisions_total += 1;
        if self.decisions.len() == DECISIONS_KEPT {
            self.decisions.pop_front();
        }
        self.decisions.push_back(d);
    }

    pub(crate) fn sampled(&mut self, s: AdaptiveSample) {
        self.intervals += 1;
        if self.samples.len() == SAMPLES_KEPT {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
    }
}

/// What the adaptive controller did (see
/// [`Builder::adaptive_workers`](crate::Builder::adaptive_workers)); `Display` prints the
/// decisions.
///
/// ```
/// let rt = footprint::Runtime::builder().adaptive_workers(1..=1).build()?;
/// let a = rt.stats().adaptive.expect("adaptive");
/// assert_eq!((a.min, a.max, a.active), (1, 1, 1));
/// println!("{a}");
/// # Ok::<(), footprint::Error>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AdaptiveStats {
    /// The range given to `adaptive_workers`.
    pub min: usize,
    /// See `min`.
    pub max: usize,
    /// Workers active now.
    pub active: usize,
    /// The count the search wants (above `active` while the sharing rule caps it).
    pub wanted: usize,
    /// Whether the search is over (it starts again on a phase change).
    pub settled: bool,
    /// Intervals sampled so far.
    pub intervals: u64,
    /// Decisions made so far (the last ones are in `decisions`).
    pub decisions_total: u64,
    /// The last decisions, oldest first.
    pub decisions: Vec<AdaptiveDecision>,
    /// Times a worker above the active count went to rest.
    pub rests: u64,
    /// Queued threads such workers handed to the active ones.
    pub handed_off: u64,
    /// CPU time the controller thread used so far.
    pub controller_cpu: Duration,
    /// Time since the runtime was built (`controller_cpu / elapsed` is the controller's cost).
    pub elapsed: Duration,
    /// Intervals whose profile could not be read.
    pub sample_errors: u64,
}

impl AdaptiveStats {
    /// The controller's CPU time as a share of one core over the runtime's life.
    pub fn controller_share(&self) -> f64 {
        self.controller_cpu.as_secs_f64() / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl fmt::Display for AdaptiveStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "adaptive workers {}..={}: {} active (search wants {}, {}); {} intervals, {} decisions; rests {}, threads handed off {}; controller {:.3} % of a core",
            self.min,
            self.max,
            self.active,
            self.wanted,
            if self.settled { "settled" } else { "searching" },
            self.intervals,
            self.decisions_total,
            self.rests,
            self.handed_off,
            100.0 * self.controller_share()
        )?;
        for d in &self.decisions {
            writeln!(
                f,
                "  {:>9.3} s  -> {} active: {}",
                d.at.as_secs_f64(),
                d.active,
                d.reason
            )?;
        }
        Ok(())
    }
}
