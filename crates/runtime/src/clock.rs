//! The switch clock: a cheap tick counter read at every green-thread switch when accounting is
//! on, and its conversion to wall time.
//!
//! On x86_64 a tick is one time-stamp-counter increment (`rdtsc`, about 20 cycles, no system
//! call); elsewhere it is a nanosecond of [`Instant`] since the clock's anchor. Ticks are
//! converted to time only when statistics are read: the first conversion calibrates the TSC
//! against [`Instant`] over the time since the anchor (at least [`MIN_CALIBRATION`], waited for
//! if the anchor is younger), once per process. The TSC is invariant on the machines this
//! runtime targets (`constant_tsc`, `nonstop_tsc`); where it is not, run times are approximate.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The shortest baseline the TSC is calibrated over (a relative error of about 1e-5 with
/// `Instant`'s resolution).
pub(crate) const MIN_CALIBRATION: Duration = Duration::from_millis(2);

/// The instant and tick count the calibration measures from.
struct Anchor {
    at: Instant,
    ticks: u64,
}

static ANCHOR: OnceLock<Anchor> = OnceLock::new();
static NS_PER_TICK: OnceLock<f64> = OnceLock::new();

fn anchor() -> &'static Anchor {
    ANCHOR.get_or_init(|| {
        let (at, ticks) = pair(|| raw_ticks_since(None));
        Anchor { at, ticks }
    })
}

/// An instant and a tick count read together: retried until no preemption came between them
/// (both readings within 20 µs), at most 100 times.
fn pair(read: impl Fn() -> u64) -> (Instant, u64) {
    let mut best = None;
    for _ in 0..100 {
        let a = Instant::now();
        let t = read();
        let b = Instant::now();
        let gap = b.duration_since(a);
        let mid = a + gap / 2;
        if gap < Duration::from_micros(20) {
            return (mid, t);
        }
        best.get_or_insert((mid, t));
    }
    best.expect("at least one reading")
}

/// Fixes the clock's anchor (call before the first switch is timed, e.g. when a runtime is
/// built, so that the calibration baseline is long by the time statistics are read).
pub(crate) fn init() {
    anchor();
}

/// The current tick count (monotonic on one CPU; see the module doc across CPUs).
#[inline(always)]
pub(crate) fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` exists on every x86_64 CPU and has no preconditions.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        raw_ticks_since(Some(anchor()))
    }
}

/// Ticks without the anchor (`None`: while the anchor itself is being made).
#[inline]
fn raw_ticks_since(anchor: Option<&Anchor>) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let _ = anchor;
        // SAFETY: as in `ticks`.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        anchor.map_or(0, |a| {
            u64::try_from(a.at.elapsed().as_nanos()).unwrap_or(u64::MAX)
        })
    }
}

/// Nanoseconds per tick, calibrated on first use.
fn ns_per_tick() -> f64 {
    *NS_PER_TICK.get_or_init(|| {
        if !cfg!(target_arch = "x86_64") {
            return 1.0;
        }
        let a = anchor();
        // Wait (rarely: only when statistics are read right after the first build) until the
        // baseline is long enough.
        while a.at.elapsed() < MIN_CALIBRATION {
            std::hint::spin_loop();
        }
        let (now, t) = pair(ticks);
        let dt = t.wrapping_sub(a.ticks);
        if dt == 0 {
            1.0
        } else {
            now.duration_since(a.at).as_nanos() as f64 / dt as f64
        }
    })
}

/// How many ticks `d` lasts (calibrated on first use, as [`to_duration`]).
pub(crate) fn ticks_in(d: Duration) -> u64 {
    (d.as_nanos() as f64 / ns_per_tick()) as u64
}

/// `ticks` as wall time.
pub(crate) fn to_duration(ticks: u64) -> Duration {
    if ticks == 0 {
        return Duration::ZERO;
    }
    let ns = ticks as f64 * ns_per_tick();
    Duration::from_nanos(if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        ns as u64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calibrated clock agrees with `Instant` over a measured interval to within a few
    /// percent (a ratio, not a time bound: both clocks measure the same interval).
    #[test]
    fn ticks_convert_to_instant_time() {
        init();
        let (i0, t0) = pair(ticks);
        let mut x = 0u64;
        while i0.elapsed() < Duration::from_millis(5) {
            x = x.wrapping_add(1);
            std::hint::black_box(x);
        }
        let (i1, t1) = pair(ticks);
        let by_ticks = to_duration(t1 - t0).as_nanos() as f64;
        let by_instant = i1.duration_since(i0).as_nanos() as f64;
        let ratio = by_ticks / by_instant;
        assert!(
            (0.9..1.1).contains(&ratio),
            "tick time / Instant time = {ratio}"
        );
        assert_eq!(to_duration(0), Duration::ZERO);
    }
}
