//! [`BandwidthError`]: why a bandwidth call of the runtime failed.

use footprint_bandwidth::{AdmissionError, CalibrateError};
use std::fmt;

/// Why a bandwidth call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BandwidthError {
    /// The admission rules refused the reservation (the error says what is left).
    Refused(AdmissionError),
    /// The machine's bandwidth could not be calibrated.
    Calibration(CalibrateError),
    /// The capacity cannot change while reservations are granted.
    CapacityInUse {
        /// Reservations granted now.
        reservations: usize,
    },
    /// Called on a green thread of another runtime.
    OtherRuntime,
}

impl fmt::Display for BandwidthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BandwidthError::Refused(e) => e.fmt(f),
            BandwidthError::Calibration(e) => e.fmt(f),
            BandwidthError::CapacityInUse { reservations } => write!(
                f,
                "the bandwidth capacity cannot change while {reservations} reservations are granted: drop them first"
            ),
            BandwidthError::OtherRuntime => f.write_str(
                "reserve_bandwidth reserves for the calling green thread, which belongs to another runtime: call it on that runtime",
            ),
        }
    }
}

impl std::error::Error for BandwidthError {}
