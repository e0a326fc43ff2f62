//! Green-thread set-ups shared by the root benches (`channel.rs`, `rwlock.rs`).

/// A footprint runtime with exactly `workers` workers.
pub fn runtime(workers: usize) -> footprint::Runtime {
    footprint::Runtime::builder()
        .workers(workers)
        .oversubscribe(true) // an experiment's explicit count: more workers than CPUs is meant
        .build()
        .unwrap_or_else(|e| panic!("a {workers}-worker runtime: {e}"))
}
