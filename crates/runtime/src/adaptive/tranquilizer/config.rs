//! What Thread Tranquilizer may set ([`MemPolicy`], [`SchedClass`]) and the numbers it decides
//! by ([`TranquilizerConfig`]).

use std::fmt;
use std::time::Duration;

/// Where the pages that the workers fault in (their green threads' stacks and whatever they
/// allocate and touch first) come from.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemPolicy {
    /// The node of the CPU that touches a page first (Linux `MPOL_DEFAULT`; 003's next-touch).
    Local,
    /// Pages spread round-robin over the NUMA nodes the process may use (`MPOL_INTERLEAVE`;
    /// 003's Random/round-robin policies).
    Interleave,
}

impl fmt::Display for MemPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemPolicy::Local => "local",
            MemPolicy::Interleave => "interleave",
        })
    }
}

/// A Linux scheduling class for the workers' kernel threads.
///
/// 003's FX class (one fixed priority for every thread of the program, so the scheduler stops
/// re-ordering them and preempts them less) has no exact Linux twin. `Batch` is the closest
/// one every process may choose (no wake-up preemption of the others, longer slices);
/// `RoundRobin`/`Fifo` are fixed real-time priorities, allowed only with `CAP_SYS_NICE` or an
/// `RLIMIT_RTPRIO` at or above the priority, and dangerous for workers that spin (a real-time
/// thread is never preempted by ordinary ones). The time quantum of Fig. 3.7 (20 ms / 100 ms) is
/// not settable per thread on Linux (`SCHED_RR`'s is system-wide), so it is not a field.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedClass {
    /// `SCHED_OTHER`: the default time-sharing class (003's TS).
    Other,
    /// `SCHED_BATCH`: time sharing for CPU-bound threads, no wake-up preemption.
    Batch,
    /// `SCHED_RR` at this real-time priority (1..=99).
    RoundRobin {
        /// Real-time priority, 1..=99.
        priority: u8,
    },
    /// `SCHED_FIFO` at this real-time priority (1..=99).
    Fifo {
        /// Real-time priority, 1..=99.
        priority: u8,
    },
}

impl fmt::Display for SchedClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedClass::Other => f.write_str("SCHED_OTHER"),
            SchedClass::Batch => f.write_str("SCHED_BATCH"),
            SchedClass::RoundRobin { priority } => write!(f, "SCHED_RR:{priority}"),
            SchedClass::Fifo { priority } => write!(f, "SCHED_FIFO:{priority}"),
        }
    }
}

/// Thread Tranquilizer's settings (003 ch. 3); [`TranquilizerConfig::new`] gives the defaults.
///
/// | field | default | source |
/// | --- | --- | --- |
/// | `pass` | 5 s | the paper: one pass every five seconds |
/// | `sample_interval`, `samples` | 100 ms, 10 | the paper: ten 100 ms samples per profile |
/// | `miss_ratio_threshold` | 0.25 misses per LLC reference | not given by the paper (it names a "miss-rate threshold" only); ours, **not measured**: this machine has no PMU. Set it from a memory-bound and a CPU-bound run on yours |
/// | `min_fall` | 0 | the paper: "less than" (strict); a fraction above 0 adds hysteresis |
/// | `fixed_class` | `SchedClass::Batch` | ours: the FX stand-in every process may use (see [`SchedClass`]) |
/// | `default_class` | `SchedClass::Other` | the paper's TS |
///
/// ```
/// use footprint_runtime::tranquilizer::{SchedClass, TranquilizerConfig};
/// use std::time::Duration;
/// let c = TranquilizerConfig::new()
///     .pass(Duration::from_secs(2))
///     .fixed_class(SchedClass::RoundRobin { priority: 1 });
/// assert_eq!(c.samples, 10);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TranquilizerConfig {
    /// Time from the start of one pass to the start of the next (at least the two profiles).
    pub pass: Duration,
    /// Length of one sample.
    pub sample_interval: Duration,
    /// Samples per profile (two profiles per pass).
    pub samples: usize,
    /// Mean LLC miss ratio above which the program is memory-intensive.
    pub miss_ratio_threshold: f64,
    /// Fraction by which mean and std-dev must both fall for the tranquil setting to be kept.
    pub min_fall: f64,
    /// The fixed-priority class tried (003's FX).
    pub fixed_class: SchedClass,
    /// The class restored when the fixed one does not help (003's TS).
    pub default_class: SchedClass,
}

impl Default for TranquilizerConfig {
    fn default() -> Self {
        TranquilizerConfig {
            pass: Duration::from_secs(5),
            sample_interval: Duration::from_millis(100),
            samples: 10,
            miss_ratio_threshold: 0.25,
            min_fall: 0.0,
            fixed_class: SchedClass::Batch,
            default_class: SchedClass::Other,
        }
    }
}

impl TranquilizerConfig {
    /// The defaults (see the table above).
    pub fn new() -> TranquilizerConfig {
        TranquilizerConfig::default()
    }

    /// Sets the pass length.
    pub fn pass(mut self, pass: Duration) -> TranquilizerConfig {
        self.pass = pass;
        self
    }

    /// Sets the sample length and the samples per profile.
    pub fn sampling(mut self, interval: Duration, samples: usize) -> TranquilizerConfig {
        self.sample_interval = interval;
        self.samples = samples;
        self
    }

    /// Sets the miss-ratio threshold of a memory-intensive program.
    pub fn miss_ratio_threshold(mut self, ratio: f64) -> TranquilizerConfig {
        self.miss_ratio_threshold = ratio;
        self
    }

    /// Sets the hysteresis: the fraction by which both figures must fall.
    pub fn min_fall(mut self, fraction: f64) -> TranquilizerConfig {
        self.min_fall = fraction;
        self
    }

    /// Sets the fixed-priority class tried.
    pub fn fixed_class(mut self, class: SchedClass) -> TranquilizerConfig {
        self.fixed_class = class;
        self
    }

    /// Sets the default class.
    pub fn default_class(mut self, class: SchedClass) -> TranquilizerConfig {
        self.default_class = class;
        self
    }

    /// Checks the settings; the message says what is wrong (returned by `Builder::build` as
    /// [`Error::Config`](crate::Error)).
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.samples < 2 {
            return Err(format!(
                "tranquilizer: samples is {}; a standard deviation needs at least 2",
                self.samples
            ));
        }
        if self.sample_interval < Duration::from_millis(1) {
            return Err(format!(
                "tranquilizer: sample_interval {:?} is below 1 ms; the paper uses 100 ms",
                self.sample_interval
            ));
        }
        let profiles = self.sample_interval * (2 * self.samples) as u32;
        if self.pass < profiles {
            return Err(format!(
                "tranquilizer: pass {:?} is shorter than its two profiles ({:?})",
                self.pass, profiles
            ));
        }
        if !(0.0..1.0).contains(&self.min_fall) {
            return Err(format!(
                "tranquilizer: min_fall {} is not in 0..1",
                self.min_fall
            ));
        }
        if !self.miss_ratio_threshold.is_finite() || self.miss_ratio_threshold < 0.0 {
            return Err(format!(
                "tranquilizer: miss_ratio_threshold {} is not a ratio",
                self.miss_ratio_threshold
            ));
        }
        for c in [self.fixed_class, self.default_class] {
            if let SchedClass::RoundRobin { priority } | SchedClass::Fifo { priority } = c {
                if !(1..=99).contains(&priority) {
                    return Err(format!(
                        "tranquilizer: {c}: real-time priorities are 1..=99"
                    ));
                }
            }
        }
        Ok(())
    }
}
