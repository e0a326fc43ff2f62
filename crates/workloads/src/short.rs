//! The criterion settings every root bench runs with: short warm-up and measurement, so a full
//! `cargo bench` stays within minutes on a small shared machine.

use std::time::Duration;

use criterion::Criterion;

/// One second of warm-up, three seconds of measurement.
pub fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}
