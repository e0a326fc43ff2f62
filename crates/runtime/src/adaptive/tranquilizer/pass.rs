//! One pass of Thread Tranquilizer (003 Fig. 3.7) as pure functions: [`plan`] says, from the
//! profile measured under the settings in force, what the program is and which setting to
//! measure next; [`judge`] says, from both profiles, which setting to keep and why. The daemon
//! (`daemon.rs`) measures and applies; everything it decides is decided here.
//!
//! # The paper's pass and ours
//!
//! Fig. 3.7 starts every pass from the defaults (next-touch memory, TS class), measures ten
//! 100 ms samples, then:
//!
//! - **memory-intensive** (mean miss rate above the threshold): applies Random memory and FX
//!   with a 100 ms quantum, measures again, keeps Random if the miss rate's mean *and* standard
//!   deviation both fell, else goes back to next-touch (FX stays);
//! - **CPU-intensive**: applies FX with a 20 ms quantum, measures again, keeps FX if the ICX
//!   rate's mean *and* standard deviation both fell, else goes back to TS.
//!
//! A pass that starts with the tranquil setting already in force would compare that setting
//! with itself, and drop it on noise half the time. So each pass measures the setting in force
//! first and the *other* setting of the same choice second, and [`judge`] compares the two by
//! role (default vs tranquil), whichever was measured first: the tranquil one is kept exactly
//! when, in the paper's words, its mean and standard deviation are both lower. With no miss
//! counter the program cannot be classified: the memory policy is left as it is and the pass
//! makes the CPU-intensive (ICX) choice only.

use super::config::{MemPolicy, SchedClass, TranquilizerConfig};
use std::fmt;

/// Mean and standard deviation of one figure over a profile's samples.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// Mean of the samples.
    pub mean: f64,
    /// Sample standard deviation (`n − 1`; 0 for a single sample).
    pub std_dev: f64,
}

impl Spread {
    /// The spread of `values` (`None` when empty or when any value is not finite).
    ///
    /// ```
    /// use footprint_runtime::tranquilizer::Spread;
    /// let s = Spread::of([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
    /// assert_eq!(s.mean, 5.0);
    /// assert!((s.std_dev - 2.138).abs() < 1e-3);
    /// ```
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() || v.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let ss: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
        let std_dev = if v.len() > 1 {
            (ss / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some(Spread { mean, std_dev })
    }

    /// Whether `self` is below `other` in mean *and* standard deviation, each by more than the
    /// fraction `min_fall` of `other`'s (0: strictly below, the paper's rule).
    pub fn both_below(&self, other: &Spread, min_fall: f64) -> bool {
        let k = 1.0 - min_fall;
        self.mean < other.mean * k && self.std_dev < other.std_dev * k
    }
}

/// What one measurement (the config's `samples` intervals) saw.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PassProfile {
    /// Last-level cache miss ratio (misses per reference), where a hardware counter exists.
    pub miss_ratio: Option<Spread>,
    /// Involuntary context switches of the workers per second.
    pub icx_per_s: Spread,
}

/// What [`plan`] took the program to be.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Mean miss ratio above the threshold.
    MemoryIntensive,
    /// Mean miss ratio at or below the threshold.
    CpuIntensive,
    /// No miss counter on this machine: only the scheduling class is chosen.
    Unclassified,
}

/// The two levers' positions. `memory: None` is "leave as it is" (never changed).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// Memory policy of the workers and the runtime's stacks; `None`: left as it is.
    pub memory: Option<MemPolicy>,
    /// Scheduling class of the workers.
    pub class: SchedClass,
}

/// The plan of one pass: the setting measured first (the one in force) and the one measured
/// second, and which of the two is the tranquil one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// What the first profile says the program is.
    pub workload: Workload,
    /// The setting in force (already measured).
    pub first: Setting,
    /// The setting to apply and measure next.
    pub second: Setting,
    /// Whether `second` is the tranquil setting (else `first` is).
    pub tranquil_second: bool,
}

/// Why a pass kept what it kept.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TranquilReason {
    /// Memory-intensive; the miss ratio's mean and spread were both lower interleaved: the
    /// interleaved policy and the fixed class are kept.
    MissesFellInterleaved,
    /// Memory-intensive; interleaving did not lower both mean and spread of the miss ratio:
    /// local memory, fixed class (Fig. 3.7's "Next-Touch and FX").
    MissesDidNotFall,
    /// CPU-intensive; the ICX rate's mean and spread were both lower in the fixed class: kept.
    IcxFellFixed,
    /// CPU-intensive; the fixed class did not lower both mean and spread of the ICX rate: the
    /// default class.
    IcxDidNotFall,
    /// No miss counter (memory policy left as it is); the ICX rate's mean and spread were both
    /// lower in the fixed class: kept.
    NoMissCounterIcxFell,
    /// No miss counter (memory policy left as it is); the fixed class did not lower both: the
    /// default class.
    NoMissCounterIcxDidNotFall,
    /// A lever was refused (see the decision's refusal): the setting measured first stays.
    LeverRefused,
}

impl fmt::Display for TranquilReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TranquilReason::MissesFellInterleaved => {
                "memory-intensive: miss ratio mean and std-dev both fell interleaved: \
                 interleaved memory and fixed class kept"
            }
            TranquilReason::MissesDidNotFall => {
                "memory-intensive: interleaving did not lower both mean and std-dev of the \
                 miss ratio: local memory, fixed class"
            }
            TranquilReason::IcxFellFixed => {
                "CPU-intensive: ICX rate mean and std-dev both fell in the fixed class: kept"
            }
            TranquilReason::IcxDidNotFall => {
                "CPU-intensive: the fixed class did not lower both mean and std-dev of the ICX \
                 rate: default class"
            }
            TranquilReason::NoMissCounterIcxFell => {
                "no miss counter: memory policy left as it is; ICX rate mean and std-dev both \
                 fell in the fixed class: kept"
            }
            TranquilReason::NoMissCounterIcxDidNotFall => {
                "no miss counter: memory policy left as it is; the fixed class did not lower \
                 both mean and std-dev of the ICX rate: default class"
            }
            TranquilReason::LeverRefused => "a lever was refused: the setting in force stays",
        })
    }
}

/// What a pass keeps, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The setting to keep (apply if it is not the one in force).
    pub keep: Setting,
    /// Why.
    pub reason: TranquilReason,
}

/// Classifies the program from the profile measured under `current` and says what to measure
/// next (see the module docs). `current.memory` is `None` only before the first memory
/// decision (the OS default, which is local).
pub fn plan(config: &TranquilizerConfig, current: Setting, first: &PassProfile) -> Plan {
    let fixed = config.fixed_class;
    let default = config.default_class;
    let workload = match first.miss_ratio {
        None => Workload::Unclassified,
        Some(m) if m.mean > config.miss_ratio_threshold => Workload::MemoryIntensive,
        Some(_) => Workload::CpuIntensive,
    };
    match workload {
        Workload::MemoryIntensive => {
            // Default: local memory (in the class in force); tranquil: interleaved + fixed.
            let tranquil = Setting {
                memory: Some(MemPolicy::Interleave),
                class: fixed,
            };
            let tranquil_in_force = current == tranquil;
            let other = if tranquil_in_force {
                Setting {
                    memory: Some(MemPolicy::Local),
                    class: fixed,
                }
            } else {
                tranquil
            };
            Plan {
                workload,
                first: current,
                second: other,
                tranquil_second: !tranquil_in_force,
            }
        }
        Workload::CpuIntensive | Workload::Unclassified => {
            let memory = if workload == Workload::Unclassified {
                current.memory
            } else {
                // CPU-intensive programs get the default memory policy back (Fig. 3.7's
                // CPU branch starts from next-touch).
                Some(MemPolicy::Local)
            };
            let fixed_in_force = current.class == fixed && fixed != default;
            let second = Setting {
                memory,
                class: if fixed_in_force { default } else { fixed },
            };
            Plan {
                workload,
                first: current,
                second,
                tranquil_second: !fixed_in_force,
            }
        }
    }
}

/// The verdict of a pass: which of the plan's two settings to keep, from the profile of each
/// (`first` measured under `plan.first`, `second` under `plan.second`).
pub fn judge(
    config: &TranquilizerConfig,
    plan: &Plan,
    first: &PassProfile,
    second: &PassProfile,
) -> Verdict {
    let (default_p, tranquil_p) = if plan.tranquil_second {
        (first, second)
    } else {
        (second, first)
    };
    let tranquil_s = if plan.tranquil_second {
        plan.second
    } else {
        plan.first
    };
    let fell = |t: &Spread, d: &Spread| t.both_below(d, config.min_fall);
    match plan.workload {
        Workload::MemoryIntensive => {
            let misses_fell = match (tranquil_p.miss_ratio, default_p.miss_ratio) {
                (Some(t), Some(d)) => fell(&t, &d),
                _ => false, // the counter failed in between: nothing shows a fall
            };
            if misses_fell {
                Verdict {
                    keep: tranquil_s,
                    reason: TranquilReason::MissesFellInterleaved,
                }
            } else {
                Verdict {
                    keep: Setting {
                        memory: Some(MemPolicy::Local),
                        class: config.fixed_class,
                    },
                    reason: TranquilReason::MissesDidNotFall,
                }
            }
        }
        Workload::CpuIntensive | Workload::Unclassified => {
            let icx_fell = fell(&tranquil_p.icx_per_s, &default_p.icx_per_s);
            let reason = match (plan.workload, icx_fell) {
                (Workload::CpuIntensive, true) => TranquilReason::IcxFellFixed,
                (Workload::CpuIntensive, false) => TranquilReason::IcxDidNotFall,
                (_, true) => TranquilReason::NoMissCounterIcxFell,
                (_, false) => TranquilReason::NoMissCounterIcxDidNotFall,
            };
            // The branch's memory policy (local, or as it is without a miss counter) with
            // the class the ICX rates chose.
            Verdict {
                keep: Setting {
                    memory: plan.second.memory,
                    class: if icx_fell {
                        config.fixed_class
                    } else {
                        config.default_class
                    },
                },
                reason,
            }
        }
    }
}
