//! What Thread Tranquilizer decided ([`TranquilizerStats`], part of
//! [`RuntimeStats`](crate::RuntimeStats)) and its log.

use super::levers::{Lever, Refusal};
use super::pass::{PassProfile, Setting, TranquilReason, Workload};
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// Decisions kept (the oldest are dropped).
const DECISIONS_KEPT: usize = 32;

/// One pass's decision.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct TranquilizerDecision {
    /// When, since the runtime was built.
    pub at: Duration,
    /// What the first profile said the program is.
    pub workload: Workload,
    /// The setting kept from then on.
    pub kept: Setting,
    /// Why.
    pub reason: TranquilReason,
    /// The profile of the setting in force at the start of the pass.
    pub first: PassProfile,
    /// The profile of the other setting (`None` when a lever refused it).
    pub second: Option<PassProfile>,
    /// The lever the kernel refused, and why, if one was.
    pub refusal: Option<(Lever, Refusal)>,
}

impl fmt::Display for TranquilizerDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mem = self
            .kept
            .memory
            .map_or_else(|| "as it is".to_string(), |m| m.to_string());
        write!(
            f,
            "{:.1} s: memory {mem}, {}: {}",
            self.at.as_secs_f64(),
            self.kept.class,
            self.reason
        )?;
        if let Some((lever, why)) = &self.refusal {
            write!(f, " ({lever} refused: {why})")?;
        }
        Ok(())
    }
}

/// Thread Tranquilizer's state and decisions (`RuntimeStats::tranquilizer`).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TranquilizerStats {
    /// Passes completed.
    pub passes: u64,
    /// The setting in force (`memory: None` until a memory decision was applied).
    pub setting: Option<Setting>,
    /// NUMA nodes the interleaved policy spreads over (0 before the daemon read them), or why
    /// none could be read.
    pub nodes: Result<usize, Refusal>,
    /// Whether a miss counter exists ("available") or why not.
    pub miss_counter: String,
    /// The last decisions, oldest first.
    pub decisions: Vec<TranquilizerDecision>,
    /// Levers refused so far (each is also in its decision).
    pub refusals: u64,
    /// Samples that could not be read.
    pub sample_errors: u64,
}

impl Default for TranquilizerStats {
    fn default() -> Self {
        TranquilizerStats {
            passes: 0,
            setting: None,
            nodes: Ok(0),
            miss_counter: "not read yet".into(),
            decisions: Vec::new(),
            refusals: 0,
            sample_errors: 0,
        }
    }
}

impl fmt::Display for TranquilizerStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nodes = match &self.nodes {
            Ok(n) => format!("{n} NUMA node(s)"),
            Err(r) => format!("NUMA nodes unknown: {r}"),
        };
        writeln!(
            f,
            "tranquilizer: {} passes, {nodes}, miss counter: {}, {} refusals",
            self.passes, self.miss_counter, self.refusals
        )?;
        for d in &self.decisions {
            writeln!(f, "    {d}")?;
        }
        Ok(())
    }
}

/// The daemon's log (read by `Runtime::stats`).
#[derive(Debug, Default)]
pub(crate) struct Log {
    pub(crate) stats: TranquilizerStats,
    decisions: VecDeque<TranquilizerDecision>,
}

impl Log {
    pub(crate) fn decide(&mut self, d: TranquilizerDecision) {
        if self.decisions.len() == DECISIONS_KEPT {
            self.decisions.pop_front();
        }
        if d.refusal.is_some() {
            self.stats.refusals += 1;
        }
        self.stats.passes += 1;
        self.stats.setting = Some(d.kept);
        self.decisions.push_back(d);
    }

    pub(crate) fn view(&self) -> TranquilizerStats {
        let mut s = self.stats.clone();
        s.decisions = self.decisions.iter().copied().collect();
        s
    }
}

// The profiles' figures come from `Spread::of`, which never yields NaN (it refuses non-finite
// samples), so equality is an equivalence (needed by `RuntimeStats: Eq`).
impl Eq for TranquilizerStats {}
