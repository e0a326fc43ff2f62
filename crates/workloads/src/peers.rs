//! The footprint runtime and the rayon pool that the fork-join benches (`fib.rs`, `skynet.rs`)
//! run side by side, built the same way for both.

/// A footprint runtime and a rayon pool with `workers` workers each.
pub fn runtime_and_rayon(workers: usize) -> (footprint::Runtime, rayon::ThreadPool) {
    let rt = footprint::Runtime::builder()
        .workers(workers)
        .oversubscribe(true) // an experiment's explicit count: more workers than CPUs is meant
        .build()
        .unwrap_or_else(|e| panic!("a {workers}-worker runtime: {e}"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .build()
        .unwrap_or_else(|e| panic!("a {workers}-thread rayon pool: {e}"));
    (rt, pool)
}
