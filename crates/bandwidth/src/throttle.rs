//! The throttling policy (004 §4.2.2): when to slow the threads without a guarantee, and how
//! much. A pure state machine over explicit time: the runtime and the simulator call
//! [`ThrottleController::update`] once per interval with what the reserved threads achieved.
//!
//! The paper sets every unreserved thread's limit to the free bandwidth of the admission rules
//! as soon as a guarantee exists, and raises a thread's idle-loop count whenever it exceeds its
//! limit ("after a few ticks, the memory bandwidth is adjusted"). Here the limit is engaged only
//! while it is needed, with feedback from the reserved threads themselves:
//!
//! - an interval in which some reserved thread moved fewer bytes per second of its own running
//!   time than it reserved is *behind*;
//! - the first behind interval engages the limit at the admission's free bandwidth (factor 1);
//!   each further behind interval halves the factor (down to `min_factor`), each interval on
//!   rate raises it by `increase` (up to 1);
//! - after `release_after` without a behind interval, at factor 1, the limit is released.
//!
//! The per-thread limit is the engaged total divided by the unreserved threads that moved
//! bytes in the interval, so that their sum stays within it however they share the CPUs.

use std::time::Duration;

/// Tunables of the controller.
#[derive(Clone, Debug, PartialEq)]
pub struct ThrottleConfig {
    /// How often the controller decides (and how long a reserved thread's rate is averaged
    /// over: the paper's "smoothing function").
    pub interval: Duration,
    /// Time without a behind interval after which the limit is released.
    pub release_after: Duration,
    /// Factor applied per behind interval (below 1).
    pub decrease: f64,
    /// Factor applied per interval on rate (above 1).
    pub increase: f64,
    /// The smallest factor of the free bandwidth the unreserved threads are held to.
    pub min_factor: f64,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig {
            interval: Duration::from_millis(5),
            release_after: Duration::from_millis(500),
            decrease: 0.5,
            increase: 1.1,
            min_factor: 1.0 / 256.0,
        }
    }
}

/// What one reservation achieved during an interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReservedSample {
    /// Its reserved rate, bytes per second.
    pub reserved: f64,
    /// Bytes it moved during the interval.
    pub bytes: u64,
    /// How long it ran during the interval (bytes per second of running time are compared with
    /// the reservation: a thread that waits for its next period is not behind).
    pub run_time: Duration,
}

impl ReservedSample {
    /// Whether it ran and moved fewer bytes per second of running time than it reserved.
    pub fn behind(&self) -> bool {
        let t = self.run_time.as_secs_f64();
        t > 0.0 && (self.bytes as f64) < self.reserved * t
    }
}

/// The controller's decision: no limit, or a total for all unreserved threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Throttle {
    /// Unreserved threads run unthrottled.
    Released,
    /// Unreserved threads together may move at most this many bytes per second.
    Engaged {
        /// Bytes per second for all unreserved threads together.
        total: f64,
        /// The factor of the free bandwidth in force.
        factor: f64,
    },
}

impl Throttle {
    /// The rate of one of `threads` unreserved threads (`None`: unthrottled).
    pub fn per_thread(&self, threads: usize) -> Option<f64> {
        match *self {
            Throttle::Released => None,
            Throttle::Engaged { total, .. } => Some(total / threads.max(1) as f64),
        }
    }
}

/// The feedback loop from reserved threads' rates to the unreserved threads' limit.
///
/// ```
/// use footprint_bandwidth::{ReservedSample, Throttle, ThrottleController, ThrottleConfig};
/// use std::time::Duration;
/// let mut c = ThrottleController::new(ThrottleConfig::default());
/// let ms = Duration::from_millis(1);
/// let behind = ReservedSample { reserved: 100e6, bytes: 50_000, run_time: ms }; // 50 MB/s
/// let on_rate = ReservedSample { reserved: 100e6, bytes: 150_000, run_time: ms };
/// assert_eq!(c.update(0, 300e6, &[on_rate]), Throttle::Released);
/// assert_eq!(c.update(5_000_000, 300e6, &[behind]), Throttle::Engaged { total: 300e6, factor: 1.0 });
/// assert_eq!(c.update(10_000_000, 300e6, &[behind]), Throttle::Engaged { total: 150e6, factor: 0.5 });
/// ```
#[derive(Clone, Debug)]
pub struct ThrottleController {
    cfg: ThrottleConfig,
    factor: Option<f64>,
    last_behind_ns: u64,
    behind_intervals: u64,
    intervals: u64,
}

impl ThrottleController {
    /// Released, with tunables `cfg`.
    pub fn new(cfg: ThrottleConfig) -> ThrottleController {
        ThrottleController {
            cfg,
            factor: None,
            last_behind_ns: 0,
            behind_intervals: 0,
            intervals: 0,
        }
    }

    /// The tunables.
    pub fn config(&self) -> &ThrottleConfig {
        &self.cfg
    }

    /// Intervals decided so far, and of those, intervals in which a reservation was behind.
    pub fn counts(&self) -> (u64, u64) {
        (self.intervals, self.behind_intervals)
    }

    /// The decision for the interval that ends at `now_ns`, given the admission's free
    /// bandwidth and what each reservation achieved in it.
    pub fn update(
        &mut self,
        now_ns: u64,
        free_bandwidth: f64,
        samples: &[ReservedSample],
    ) -> Throttle {
        self.intervals += 1;
        let behind = samples.iter().any(ReservedSample::behind);
        if behind {
            self.behind_intervals += 1;
            self.last_behind_ns = now_ns;
            self.factor = Some(match self.factor {
                None => 1.0,
                Some(f) => (f * self.cfg.decrease).max(self.cfg.min_factor),
            });
        } else if let Some(f) = self.factor {
            let quiet = now_ns.saturating_sub(self.last_behind_ns);
            if f >= 1.0 && quiet >= self.cfg.release_after.as_nanos() as u64 {
                self.factor = None;
            } else {
                self.factor = Some((f * self.cfg.increase).min(1.0));
            }
        }
        self.current(free_bandwidth)
    }

    /// The decision in force, for a free bandwidth of `free_bandwidth`.
    pub fn current(&self, free_bandwidth: f64) -> Throttle {
        match self.factor {
            None => Throttle::Released,
            Some(factor) => Throttle::Engaged {
                total: free_bandwidth.max(0.0) * factor,
                factor,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn sample(achieved_mb: f64) -> ReservedSample {
        ReservedSample {
            reserved: 100e6,
            bytes: (achieved_mb * 1e6 * 1e-3) as u64,
            run_time: Duration::from_millis(1),
        }
    }

    /// Scripted traffic: a reserved thread behind for 3 intervals, then on rate. The limit
    /// engages at the free bandwidth, halves twice, climbs back, and is released only after
    /// `release_after` of quiet at factor 1.
    #[test]
    fn engages_tightens_recovers_and_releases() {
        let cfg = ThrottleConfig {
            release_after: Duration::from_millis(50),
            ..ThrottleConfig::default()
        };
        let mut c = ThrottleController::new(cfg);
        let free = 200e6;
        let mut t = 0;
        let mut step = |c: &mut ThrottleController, mb: f64| {
            t += 5 * MS;
            c.update(t, free, &[sample(mb)])
        };
        assert_eq!(step(&mut c, 150.0), Throttle::Released);
        assert_eq!(step(&mut c, 80.0).per_thread(2), Some(100e6));
        assert_eq!(step(&mut c, 80.0).per_thread(1), Some(100e6));
        assert_eq!(step(&mut c, 80.0).per_thread(1), Some(50e6));
        let mut released_at = None;
        for i in 0..200 {
            if step(&mut c, 120.0) == Throttle::Released {
                released_at = Some(i);
                break;
            }
        }
        // 1.1^k ≥ 4 after 15 intervals; then 50 ms of quiet at factor 1 counted from the last
        // behind interval (already past by then).
        assert_eq!(released_at, Some(15));
        assert_eq!(c.counts(), (20, 3));
    }

    #[test]
    fn a_thread_that_did_not_run_is_not_behind() {
        let idle = ReservedSample {
            reserved: 1e9,
            bytes: 0,
            run_time: Duration::ZERO,
        };
        assert!(!idle.behind());
        let mut c = ThrottleController::new(ThrottleConfig::default());
        assert_eq!(c.update(MS, 1e9, &[idle]), Throttle::Released);
        assert_eq!(c.update(2 * MS, 1e9, &[]), Throttle::Released);
    }

    #[test]
    fn the_factor_floor_holds() {
        let mut c = ThrottleController::new(ThrottleConfig::default());
        let mut last = Throttle::Released;
        for i in 1..100 {
            last = c.update(i * MS, 256e6, &[sample(1.0)]);
        }
        assert_eq!(
            last,
            Throttle::Engaged {
                total: 1e6,
                factor: 1.0 / 256.0
            }
        );
    }
}
