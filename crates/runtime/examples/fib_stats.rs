//! Runs `fib(n)` with `join` at every level and prints the time and the runtime's counters
//! (steals, green threads created for stolen halves, stacks mapped).
//! `cargo run --release -p footprint-hpc-runtime --example fib_stats -- 30 2 [unpinned]`

use clap::{Parser, ValueEnum};
use footprint_runtime::{join, Runtime};
use std::num::NonZeroUsize;
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

/// fib(n) with a join at every level on the runtime and on rayon: the times and the runtime's
/// counters.
#[derive(Parser)]
#[command(name = "fib_stats")]
struct Args {
    /// n of fib(n)
    #[arg(default_value_t = 30)]
    n: u64,
    /// Workers (and rayon threads)
    #[arg(default_value = "2")]
    workers: NonZeroUsize,
    /// Whether the runtime pins its workers to CPUs
    #[arg(value_enum, default_value_t = Pin::Pinned)]
    pin: Pin,
}

/// Worker pinning.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Pin {
    Pinned,
    Unpinned,
}

fn main() {
    let args = Args::parse();
    let (n, workers, pin) = (args.n, args.workers.get(), args.pin == Pin::Pinned);
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
