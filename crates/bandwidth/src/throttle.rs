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
//! - each behind interval sets the unreserved threads' total to `decrease` × the lesser of the
//!   admission's free bandwidth and what they moved in that interval (never above the total in
//!   force, never below `min_factor` × the free bandwidth): the faucet closes from where it is;
//! - each interval on rate opens it by `increase` (up to the free bandwidth); after
//!   `release_after` without a behind interval, fully open, the limit is released.
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
        /// The total as a share of the admission's free bandwidth.
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
/// // Free bandwidth 300 MB/s; the unreserved threads moved 200 MB/s in each interval.
/// assert_eq!(c.update(0, 300e6, 200e6, &[on_rate]), Throttle::Released);
/// assert_eq!(c.update(5_000_000, 300e6, 200e6, &[behind]).per_thread(1), Some(100e6));
/// assert_eq!(c.update(10_000_000, 300e6, 100e6, &[behind]).per_thread(2), Some(25e6));
/// ```
#[derive(Clone, Debug)]
pub struct ThrottleController {
    cfg: ThrottleConfig,
    total: Option<f64>,
    last_behind_ns: u64,
    behind_intervals: u64,
    intervals: u64,
}

impl ThrottleController {
    /// Released, with tunables `cfg`.
    pub fn new(cfg: ThrottleConfig) -> ThrottleController {
        ThrottleController {
            cfg,
            total: None,
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
    /// bandwidth, what the unreserved threads moved per second in the interval, and what each
    /// reservation achieved in it.
    pub fn update(
        &mut self,
        now_ns: u64,
        free_bandwidth: f64,
        unreserved_rate: f64,
        samples: &[ReservedSample],
    ) -> Throttle {
        self.intervals += 1;
        let free = free_bandwidth.max(0.0);
        let floor = free * self.cfg.min_factor;
        if samples.iter().any(ReservedSample::behind) {
            self.behind_intervals += 1;
            self.last_behind_ns = now_ns;
            let moved = if unreserved_rate.is_finite() {
                unreserved_rate.max(0.0)
            } else {
                free
            };
            let closed = free.min(moved) * self.cfg.decrease;
            let total = self.total.map_or(closed, |t| t.min(closed));
            self.total = Some(total.max(floor));
        } else if let Some(t) = self.total {
            let quiet = now_ns.saturating_sub(self.last_behind_ns);
            if t >= free && quiet >= self.cfg.release_after.as_nanos() as u64 {
                self.total = None;
            } else {
                self.total = Some((t * self.cfg.increase).max(floor).min(free));
            }
        }
        self.current(free_bandwidth)
    }

    /// The decision in force, for a free bandwidth of `free_bandwidth`.
    pub fn current(&self, free_bandwidth: f64) -> Throttle {
        match self.total {
            None => Throttle::Released,
            Some(total) => Throttle::Engaged {
                total,
                factor: if free_bandwidth > 0.0 {
                    total / free_bandwidth
                } else {
                    0.0
                },
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

    /// Scripted traffic: a reserved thread behind for 3 intervals while the unreserved threads
    /// move 160 MB/s, then on rate. The limit closes from what they moved (80, 40, 20 MB/s),
    /// opens by 10 % per interval up to the free bandwidth, and is released only after
    /// `release_after` of quiet, fully open.
    #[test]
    fn engages_tightens_recovers_and_releases() {
        let cfg = ThrottleConfig {
            release_after: Duration::from_millis(50),
            ..ThrottleConfig::default()
        };
        let mut c = ThrottleController::new(cfg);
        let free = 200e6;
        let mut t = 0;
        // `moved`: what the unreserved threads moved (they move what they are allowed).
        let mut step = |c: &mut ThrottleController, mb: f64, moved: f64| {
            t += 5 * MS;
            c.update(t, free, moved, &[sample(mb)])
        };
        assert_eq!(step(&mut c, 150.0, 160e6), Throttle::Released);
        assert_eq!(step(&mut c, 80.0, 160e6).per_thread(2), Some(40e6));
        assert_eq!(step(&mut c, 80.0, 80e6).per_thread(1), Some(40e6));
        assert_eq!(step(&mut c, 80.0, 40e6).per_thread(1), Some(20e6));
        let mut released_at = None;
        for i in 0..200 {
            if step(&mut c, 120.0, 20e6) == Throttle::Released {
                released_at = Some(i);
                break;
            }
        }
        // 20 · 1.1^k ≥ 200 after 25 intervals; released at the next one (the last behind
        // interval is long past).
        assert_eq!(released_at, Some(25));
        assert_eq!(c.counts(), (30, 3));
    }

    /// What the unreserved threads move bounds the limit: a limit far above their rate would
    /// not slow them at all.
    #[test]
    fn the_limit_closes_from_the_measured_rate_not_the_free_bandwidth() {
        let mut c = ThrottleController::new(ThrottleConfig::default());
        let t = c.update(MS, 10e9, 1e9, &[sample(1.0)]);
        assert_eq!(t.per_thread(1), Some(0.5e9));
        // Nothing measured (infinite rate: unknown): from the free bandwidth.
        let mut c = ThrottleController::new(ThrottleConfig::default());
        assert_eq!(
            c.update(MS, 10e9, f64::INFINITY, &[sample(1.0)])
                .per_thread(1),
            Some(5e9)
        );
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
        assert_eq!(c.update(MS, 1e9, 1e9, &[idle]), Throttle::Released);
        assert_eq!(c.update(2 * MS, 1e9, 1e9, &[]), Throttle::Released);
    }

    #[test]
    fn the_factor_floor_holds() {
        let mut c = ThrottleController::new(ThrottleConfig::default());
        let mut last = Throttle::Released;
        let mut moved = 256e6;
        for i in 1..100 {
            last = c.update(i * MS, 256e6, moved, &[sample(1.0)]);
            moved = last.per_thread(1).unwrap();
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
