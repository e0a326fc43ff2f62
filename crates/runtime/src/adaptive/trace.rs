//! The controller's decisions as `tracing` events (cargo feature `tracing`; without it this is
//! a no-op). One event per decision, at `INFO` level with target `footprint::adaptive` and the
//! fields:
//!
//! - `from`, `to`: active workers before and after (`from` is 0 for the first decision, made
//!   before any limit was set);
//! - `reason`: the reason as the stats print it, and `reason_kind`: its `Debug` form;
//! - the interval the decision was made on, where there was one (not for the first):
//!   `cpu`, `lock_time`, `voluntary_per_s`, `involuntary_per_s`, `migrations_per_s`,
//!   `throughput`, `others` (optional figures are left out when unknown).
//!
//! ```text
//! INFO footprint::adaptive: adaptive decision from=2 to=1 reason=phase change: search around
//!     the settled count reason_kind=PhaseChange cpu=1.93 lock_time=0.41 ... throughput=10400.0
//! ```

use super::controller::Decision;
use super::stats::AdaptiveSample;

/// Emits the event for decision `d`, taken at `from` active workers on interval `s`.
#[cfg(feature = "tracing")]
pub(crate) fn decision(from: usize, d: &Decision, s: Option<&AdaptiveSample>) {
    tracing::info!(
        target: "footprint::adaptive",
        from,
        to = d.active,
        reason = %d.reason,
        reason_kind = ?d.reason,
        cpu = s.map(|s| s.cpu),
        lock_time = s.and_then(|s| s.lock_time),
        voluntary_per_s = s.map(|s| s.voluntary_per_s),
        involuntary_per_s = s.map(|s| s.involuntary_per_s),
        migrations_per_s = s.and_then(|s| s.migrations_per_s),
        throughput = s.and_then(|s| s.throughput),
        others = s.and_then(|s| s.others),
        "adaptive decision"
    );
}

/// Without the `tracing` feature: nothing.
#[cfg(not(feature = "tracing"))]
pub(crate) fn decision(_from: usize, _d: &Decision, _s: Option<&AdaptiveSample>) {}
