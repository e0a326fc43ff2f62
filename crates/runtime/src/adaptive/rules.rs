//! Algorithm 1's two judgements (003 ch. 2) on two measured profiles: `terminate` (is the
//! configuration with more workers no better?) and `full_step` (how far to step next); and
//! `close_call` (is a throughput comparison too close to judge on one measurement each?).

use super::decision::Reason;
use super::sample::Sample;
use super::thresholds::{Limits, Thresholds};

/// `new` rose sharply over `old` (high ΔVCX, ΔMIGR).
fn rose_sharply(th: &Thresholds, old: f64, new: f64) -> bool {
    new - old >= (th.rate_delta_rel * old).max(th.rate_delta_abs)
}

/// `new` rose slowly over `old`, or fell (low ΔVCX, ΔMIGR).
fn rose_slowly(th: &Thresholds, old: f64, new: f64) -> bool {
    new - old < (th.rate_delta_low_rel * old).max(th.rate_delta_low_abs)
}

/// LOCK is low (unknown counts as low: no lock contention seen).
fn lock_low(th: &Thresholds, p: &Sample) -> bool {
    p.lock_time.is_none_or(|l| l < th.lock_low)
}

fn lock_high(th: &Thresholds, p: &Sample) -> bool {
    p.lock_time.is_some_and(|l| l >= th.lock_high)
}

fn lock_rising(th: &Thresholds, best: &Sample, tried: &Sample) -> bool {
    match (best.lock_time, tried.lock_time) {
        (Some(b), Some(t)) => t - b >= th.lock_delta_high,
        _ => false,
    }
}

fn migrations_rising(th: &Thresholds, best: &Sample, tried: &Sample) -> bool {
    match (best.migrations_per_s, tried.migrations_per_s) {
        (Some(b), Some(t)) => rose_sharply(th, b, t),
        _ => false,
    }
}

/// Algorithm 1's Terminate: `Some(why)` when `tried` (more workers) is no better than `best`
/// (fewer), so the search keeps `best`.
///
/// Where the program reports progress, throughput alone decides: lock time and switch rates are
/// 003's stand-ins for a throughput it cannot see, and they mislead where the program's phases
/// are shorter than a measurement (a lock-bound burst inside a fork-join run read as contention
/// and kept a 2-worker-friendly program at 1 worker: the bench's `phases`, 2.01× the best fixed
/// count).
pub(crate) fn terminate(
    th: &Thresholds,
    l: &Limits,
    best: &Sample,
    tried: &Sample,
) -> Option<Reason> {
    let added = tried.active.saturating_sub(best.active).max(1) as f64;
    if let (Some(b), Some(t)) = (best.throughput, tried.throughput) {
        if b > 0.0 {
            return (t < b * (1.0 + th.throughput_gain)).then_some(Reason::NoMoreParallelism);
        }
    }
    if tried.cpu - best.cpu < th.cpu_gain_low * added {
        return Some(Reason::NoMoreParallelism);
    }
    if lock_high(th, tried) {
        let vcx = rose_sharply(th, best.voluntary_per_s, tried.voluntary_per_s);
        if lock_rising(th, best, tried)
            || (tried.active <= l.cores && vcx)
            || (tried.active > l.cores && migrations_rising(th, best, tried))
        {
            return Some(Reason::LockContention);
        }
    }
    None
}

/// Algorithm 1's ComputeNextT: whether the next step is a full `T_step` (low LOCK, or low
/// ΔVCX — ΔMIGR above the core count — or high LOCK with low ΔLOCK).
pub(crate) fn full_step(th: &Thresholds, l: &Limits, best: &Sample, tried: &Sample) -> bool {
    let slow = if tried.active <= l.cores {
        rose_slowly(th, best.voluntary_per_s, tried.voluntary_per_s)
    } else {
        match (best.migrations_per_s, tried.migrations_per_s) {
            (Some(b), Some(t)) => rose_slowly(th, b, t),
            _ => true,
        }
    };
    let lock_delta_low = match (best.lock_time, tried.lock_time) {
        (Some(b), Some(t)) => t - b < th.lock_delta_low,
        _ => true,
    };
    lock_low(th, tried) || slow || (lock_high(th, tried) && lock_delta_low)
}

/// Where both report throughput: whether `tried`'s relative gain over `best` is within
/// [`Thresholds::recheck_band`] of [`Thresholds::throughput_gain`], so that one measurement of
/// each cannot tell a real gain from noise.
pub(crate) fn close_call(th: &Thresholds, best: &Sample, tried: &Sample) -> bool {
    match (best.throughput, tried.throughput) {
        (Some(b), Some(t)) if b > 0.0 => {
            ((t / b - 1.0) - th.throughput_gain).abs() < th.recheck_band
        }
        _ => false,
    }
}
