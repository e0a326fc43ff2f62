//! [`BandwidthStats`]: what a runtime's bandwidth control saw and did (in
//! [`RuntimeStats::bandwidth`](crate::RuntimeStats::bandwidth)).

use footprint_bandwidth::TrafficSource;
use std::fmt;
use std::time::Duration;

/// Memory-traffic figures of a runtime (rates in bytes per second, rounded): the traffic source in force, the reservations, the
/// throttle, and the delays it imposed.
///
/// ```
/// let rt = footprint_runtime::Runtime::builder().workers(1).build()?;
/// let s = rt.stats().bandwidth;
/// assert_eq!(s.reservations, 0);
/// assert!(s.limit_per_thread.is_none());
/// println!("{s}"); // says which source measures traffic here, or why none does
/// # Ok::<(), footprint_runtime::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct BandwidthStats {
    /// Where per-thread traffic comes from (or why nothing measures it).
    pub source: TrafficSource,
    /// The copy rate admitted against, bytes per second (`None` until the first reservation
    /// or `Runtime::set_bandwidth_capacity`).
    pub capacity: Option<u64>,
    /// Sum of the granted reservations, bytes per second.
    pub reserved: u64,
    /// Granted reservations.
    pub reservations: usize,
    /// The bandwidth left to unreserved threads by the admission rules.
    pub free: Option<u64>,
    /// The rate each unreserved thread is held to now (`None`: unthrottled).
    pub limit_per_thread: Option<u64>,
    /// Unreserved threads that moved bytes in the last controller interval.
    pub throttled_threads: usize,
    /// Bytes declared (`GreenBuilder::traffic`, `record_traffic`, par chunks).
    pub declared_bytes: u64,
    /// Bytes measured (misses × 64 B or resctrl).
    pub measured_bytes: u64,
    /// Delays imposed on unreserved threads, and their total.
    pub delays: u64,
    /// Total time unreserved threads slept for throttling.
    pub delay_time: Duration,
    /// Controller intervals decided, and those in which a reserved thread was behind its rate.
    pub intervals: u64,
    /// See [`BandwidthStats::intervals`].
    pub behind_intervals: u64,
}

impl Default for BandwidthStats {
    fn default() -> Self {
        BandwidthStats {
            source: TrafficSource::None {
                reason: "not collected".into(),
            },
            capacity: None,
            reserved: 0,
            reservations: 0,
            free: None,
            limit_per_thread: None,
            throttled_threads: 0,
            declared_bytes: 0,
            measured_bytes: 0,
            delays: 0,
            delay_time: Duration::ZERO,
            intervals: 0,
            behind_intervals: 0,
        }
    }
}

impl fmt::Display for BandwidthStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mb = |b: u64| format!("{:.1} MB/s", b as f64 / 1e6);
        writeln!(f, "bandwidth: traffic source {}", self.source)?;
        write!(
            f,
            "  capacity {}, {} reservations ({}), free {}, limit per unreserved thread {}",
            self.capacity.map_or("not calibrated".into(), mb),
            self.reservations,
            mb(self.reserved),
            self.free.map_or("-".into(), mb),
            self.limit_per_thread.map_or("none".into(), mb),
        )?;
        writeln!(
            f,
            "; bytes declared {}, measured {}; {} delays ({:.1} ms); {} of {} intervals behind",
            self.declared_bytes,
            self.measured_bytes,
            self.delays,
            self.delay_time.as_secs_f64() * 1e3,
            self.behind_intervals,
            self.intervals
        )
    }
}
