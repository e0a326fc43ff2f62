//! Thread Tranquilizer (003 ch. 3): every pass (5 s) a daemon reads the workers' last-level
//! miss ratio (where a hardware counter exists) and involuntary-switch (ICX) rate, and chooses
//! the memory policy of the workers and the runtime's stacks (local vs interleaved over the
//! allowed NUMA nodes) and the workers' scheduling class (the default class vs a fixed one),
//! keeping a tranquil setting only where it lowered both the mean and the spread of the
//! figure it is meant to calm (Fig. 3.7).
//!
//! - `config.rs`: the levers' positions ([`MemPolicy`], [`SchedClass`]) and the numbers
//!   ([`TranquilizerConfig`], with where each default comes from);
//! - `pass.rs`: one pass as pure functions ([`plan`], [`judge`]): every branch of Fig. 3.7 is
//!   tested on scripted profiles in `pass_tests.rs`;
//! - `levers.rs`: `sched_setscheduler`, `set_mempolicy`, `mbind`, and what their refusals mean
//!   ([`Refusal`]);
//! - `daemon.rs`: the daemon thread (measure, plan, apply, measure, judge, apply, log);
//! - `stats.rs`: what it decided ([`TranquilizerStats`], in
//!   [`RuntimeStats::tranquilizer`](crate::RuntimeStats::tranquilizer)).

pub(crate) mod config;
pub(crate) mod daemon;
mod levers;
mod pass;
#[cfg(test)]
mod pass_tests;
mod stats;

pub use config::{MemPolicy, SchedClass, TranquilizerConfig};
pub use levers::{Lever, Refusal};
pub use pass::{
    judge, plan, PassProfile, Plan, Setting, Spread, TranquilReason, Verdict, Workload,
};
pub use stats::{TranquilizerDecision, TranquilizerStats};

use crate::builder::Builder;

impl Builder {
    /// Turns Thread Tranquilizer on (default off; 003 ch. 3): a daemon thread that, every
    /// `config.pass`, measures the workers' profile, tries the tranquil setting (interleaved
    /// memory and the fixed class for a memory-intensive program, the fixed class for a
    /// CPU-intensive one) and keeps it only if the miss ratio (memory-intensive) or the ICX
    /// rate (otherwise) fell in mean *and* standard deviation. Without a miss counter (no
    /// PMU) the memory policy is left as it is. Decisions, with their reasons and any lever
    /// the kernel refused, are in [`RuntimeStats::tranquilizer`](crate::RuntimeStats::tranquilizer)
    /// (and `tracing` events, target `footprint::tranquilizer`, with the `tracing` feature).
    ///
    /// Errors from [`build`](Builder::build): [`Error::InvalidConfig`](crate::Error) for a
    /// config that cannot work (fewer than 2 samples, a pass shorter than its two profiles, a
    /// real-time priority outside 1..=99).
    ///
    /// ```
    /// use footprint_runtime::tranquilizer::TranquilizerConfig;
    /// use std::time::Duration;
    /// let rt = footprint_runtime::Runtime::builder()
    ///     .workers(1)
    ///     .tranquilizer(TranquilizerConfig::new().sampling(Duration::from_millis(10), 2)
    ///         .pass(Duration::from_millis(50)))
    ///     .build()?;
    /// assert_eq!(rt.block_on(|| 6 * 7), 42);
    /// assert!(rt.stats().tranquilizer.is_some());
    /// # Ok::<(), footprint_runtime::Error>(())
    /// ```
    pub fn tranquilizer(mut self, config: TranquilizerConfig) -> Builder {
        self.tranquilizer = Some(config);
        self
    }
}
