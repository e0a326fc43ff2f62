//! The sleep-lateness measurement: `N` green threads each `footprint::sleep` once on a
//! two-worker runtime. Shared by `benches/sleep.rs` (the round's total time, criterion) and
//! `examples/sleep_lateness.rs` (the lateness distribution: p50, p99, max).

use std::time::{Duration, Instant};

/// Green threads per round.
pub const THREADS: usize = 10_000;
/// Workers of the runtime.
pub const WORKERS: usize = 2;
/// What each thread sleeps.
pub const SLEEP: Duration = Duration::from_millis(1);

/// The runtime the rounds run on: `workers` workers, 64 KiB guarded stacks.
pub fn runtime(workers: usize) -> Result<footprint::Runtime, footprint::Error> {
    footprint::Runtime::builder()
        .workers(workers)
        .oversubscribe(true) // an experiment's explicit count: more workers than CPUs is meant
        .stack_size(64 << 10)
        .build()
}

/// One round, called on a green thread: spawns `n` green threads that each sleep `dur` once and
/// returns how late each woke (its time asleep minus `dur`; never negative, `sleep` is never
/// early).
pub fn sleep_round(n: usize, dur: Duration) -> Vec<Duration> {
    let handles: Vec<_> = (0..n)
        .map(|_| {
            footprint::spawn(move || {
                let t0 = Instant::now();
                footprint::sleep(dur);
                t0.elapsed()
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| {
            let slept = h.join().expect("a sleeping green thread panicked");
            assert!(slept >= dur, "sleep returned early: {slept:?} < {dur:?}");
            slept - dur
        })
        .collect()
}

/// The `p`-th percentile (0–100) of `sorted` (nearest rank).
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    assert!(!sorted.is_empty(), "no samples");
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
