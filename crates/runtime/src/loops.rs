//! What footprint's parallel loops (`footprint::par`, in the facade) did on a runtime: the
//! public [`LoopStats`] and the runtime's atomic totals behind them.

use std::sync::atomic::{AtomicU64, Ordering};

/// What footprint's parallel loops with an `Affinity` schedule (`footprint::par`) did on a
/// runtime, summed over every handle used on it (each handle's own figures are
/// `Affinity::stats`).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoopStats {
    /// Loops run with an `Affinity` schedule.
    pub affinity_runs: u64,
    /// Chunks run, over all those loops.
    pub chunks_run: u64,
    /// Chunks run by another worker than the one whose list they were dealt to.
    pub stolen: u64,
    /// Of those, the ones stolen in a run without memory (a first run or right after a reset).
    pub stolen_first_run: u64,
    /// Chunks that ran on the worker that ran them the time before.
    pub replayed: u64,
    /// Times a handle's memory was dropped because the loop's shape or runtime changed.
    pub resets: u64,
}

impl LoopStats {
    /// The counts since `earlier` (never below zero).
    pub fn since(&self, earlier: &LoopStats) -> LoopStats {
        LoopStats {
            affinity_runs: self.affinity_runs.saturating_sub(earlier.affinity_runs),
            chunks_run: self.chunks_run.saturating_sub(earlier.chunks_run),
            stolen: self.stolen.saturating_sub(earlier.stolen),
            stolen_first_run: self
                .stolen_first_run
                .saturating_sub(earlier.stolen_first_run),
            replayed: self.replayed.saturating_sub(earlier.replayed),
            resets: self.resets.saturating_sub(earlier.resets),
        }
    }
}

/// The loop totals of a runtime: one atomic per [`LoopStats`] field.
#[derive(Debug, Default)]
pub(crate) struct LoopTotals([AtomicU64; 6]);

impl LoopTotals {
    pub(crate) fn add(&self, run: &LoopStats) {
        let v = [
            run.affinity_runs,
            run.chunks_run,
            run.stolen,
            run.stolen_first_run,
            run.replayed,
            run.resets,
        ];
        for (c, n) in self.0.iter().zip(v) {
            if n != 0 {
                c.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn get(&self) -> LoopStats {
        let [a, b, c, d, e, f] = self.0.each_ref().map(|x| x.load(Ordering::Relaxed));
        LoopStats {
            affinity_runs: a,
            chunks_run: b,
            stolen: c,
            stolen_first_run: d,
            replayed: e,
            resets: f,
        }
    }
}
