//! Green-thread set-ups shared by the root benches (`runtime_micro.rs`, `channel.rs`,
//! `rwlock.rs`).
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A footprint runtime with exactly `workers` workers.
pub fn runtime(workers: usize) -> footprint::Runtime {
    footprint::Runtime::builder()
        .workers(workers)
        .build()
        .unwrap_or_else(|e| panic!("a {workers}-worker runtime: {e}"))
}

/// Time of one `yield_now` handing a worker from one green thread to another: two green threads
/// alternate `iters` yields each on the caller's worker (call it from a green thread of a
/// one-worker runtime); the total is divided by two.
pub fn yield_pair(iters: u64) -> Duration {
    let started = Arc::new(AtomicBool::new(false));
    let partner_started = Arc::clone(&started);
    let partner = footprint::spawn(move || {
        partner_started.store(true, Ordering::Release);
        for _ in 0..iters {
            footprint::yield_now();
        }
    });
    // Both threads must be in their loops when timing starts.
    while !started.load(Ordering::Acquire) {
        footprint::yield_now();
    }
    let start = Instant::now();
    for _ in 0..iters {
        footprint::yield_now();
    }
    partner.join().expect("the partner does not panic");
    start.elapsed() / 2
}
