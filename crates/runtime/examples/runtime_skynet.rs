//! Skynet: 1,000,000 leaf green threads (10 children per node, 6 levels), each returning its
//! number, summed up the tree with `spawn` + `JoinHandle::join`. Prints the time and the
//! process's peak RSS. `cargo run --release -p footprint-hpc-runtime --example runtime_skynet -- [workers]`

use clap::Parser;
use footprint_runtime::{spawn, Runtime};
use std::num::NonZeroUsize;
use std::time::Instant;

fn skynet(num: u64, size: u64) -> u64 {
    if size == 1 {
        return num;
    }
    let step = size / 10;
    let hs: Vec<_> = (0..10)
        .map(|i| spawn(move || skynet(num + i * step, step)))
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).sum()
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Skynet(1M) on the runtime: time, resident memory and steals per round.
#[derive(Parser)]
#[command(name = "runtime_skynet")]
struct Args {
    /// Workers of the runtime
    #[arg(default_value = "2")]
    workers: NonZeroUsize,
    /// Rounds
    #[arg(default_value_t = 3)]
    rounds: usize,
}

fn main() {
    let args = Args::parse();
    let (workers, rounds) = (args.workers.get(), args.rounds);
    let rt = Runtime::builder()
        .workers(workers)
        .build()
        .expect("runtime");
    for _ in 0..rounds {
        let t0 = Instant::now();
        let v = rt.block_on(|| skynet(0, 1_000_000));
        println!(
            "skynet(1M) = {v} on {workers} workers in {:?}; RSS {} MiB (peak {} MiB); steals {}",
            t0.elapsed(),
            status_kib("VmRSS:") / 1024,
            status_kib("VmHWM:") / 1024,
            rt.stats().steals
        );
        assert_eq!(v, 499_999_500_000);
    }
}
