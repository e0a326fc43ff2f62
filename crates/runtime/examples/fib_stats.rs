//! Runs `fib(n)` with `join` at every level and prints the time and the runtime's counters
//! (steals, green threads created for stolen halves, stacks mapped).
//! `cargo run --release -p footprint-hpc-runtime --example fib_stats -- 30 2 [unpinned]`

use footprint_runtime::{join, Runtime};
use std::time::Instant;

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn fib_rayon(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1), || fib_rayon(n - 2));
    a + b
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(30);
    let workers: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let pin = args.next().is_none_or(|a| a != "unpinned");
    let rt = Runtime::builder()
        .workers(workers)
        .pin(pin)
        .build()
        .expect("runtime");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .build()
        .expect("rayon");
    for _ in 0..3 {
        let t0 = Instant::now();
        let v = pool.install(|| fib_rayon(n));
        println!(
            "rayon: fib({n}) = {v} on {workers} threads in {:?}",
            t0.elapsed()
        );
        let before = rt.stats();
        let t0 = Instant::now();
        let v = rt.block_on(|| fib(n));
        let el = t0.elapsed();
        let after = rt.stats();
        println!(
            "fib({n}) = {v} on {workers} workers in {el:?}; green threads {}, steals {}, stacks mapped {}",
            after.spawned - before.spawned,
            after.steals - before.steals,
            after.stacks_mapped - before.stacks_mapped
        );
    }
}
