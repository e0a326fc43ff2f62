//! Memory bandwidth as a scheduled resource: Bellosa's *Process Cruise Control* (004 ch. 4.2),
//! the parts that do not depend on a scheduler.
//!
//! - [`calibrate`]: the machine's STREAM-like copy rate with 1..N threads, cached per CPU model
//!   and count (the paper measures it at boot);
//! - [`Admission`]: whether a reservation fits the calibrated [`Capacity`] (the paper's rules
//!   4.3–4.11), with a typed [`AdmissionError`] saying what is left;
//! - [`TokenBucket`]: how a thread without a guarantee is slowed, one delay at a time;
//! - [`ThrottleController`]: when and how much to slow them, from the reserved threads' rates;
//! - [`TrafficSource`] and [`resctrl`]: where per-thread traffic comes from.
//!
//! `footprint-runtime` uses these for green threads (`Runtime::reserve_bandwidth`,
//! `GreenBuilder::traffic`); `footprint-sim` runs the same controller on a simulated memory bus.
//!
//! ```
//! use footprint_bandwidth::{Admission, Capacity, Throttle, ThrottleConfig, ThrottleController};
//! let mut adm = Admission::new(Capacity::new(406e6, 4)?);
//! adm.admit(61e6)?; // the video tool of §4.2.3
//! let mut ctl = ThrottleController::new(ThrottleConfig::default());
//! let behind = footprint_bandwidth::ReservedSample {
//!     reserved: 61e6, bytes: 40_000, run_time: std::time::Duration::from_millis(1),
//! };
//! let t = ctl.update(5_000_000, adm.free_bandwidth(), 200e6, &[behind]);
//! assert!(matches!(t, Throttle::Engaged { .. }));
//! # Ok::<(), footprint_bandwidth::AdmissionError>(())
//! ```

mod admission;
mod bucket;
mod calibrate;
mod source;
mod throttle;

pub use admission::{Admission, AdmissionError, Capacity, GrantId, MAX_REQUEST_SHARE};
pub use bucket::TokenBucket;
pub use calibrate::{
    calibrate, calibrate_with, default_array_bytes, default_cache_file, measure, CacheState,
    CalibrateError, CalibrateOptions, Calibration, MachineId, STALE_FACTOR,
};
pub use source::{resctrl, TrafficSource};
pub use throttle::{ReservedSample, Throttle, ThrottleConfig, ThrottleController};

/// Bytes moved per cache miss (one line), as the paper assumes for its counters.
pub const LINE_BYTES: u64 = 64;
