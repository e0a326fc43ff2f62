//! One of 000's lock micro-benchmarks (`crates/workloads/src/lock_hot.rs`) in a loop, alone in its
//! process, with what the runtime did per critical section: for profilers and for explaining a
//! ratio of the `lock_hot` bench.
//!
//! ```text
//! cargo run --release --example lock_hot_probe -- multiple_ctr 200
//! perf stat -e task-clock,context-switches target/release/examples/lock_hot_probe multiple_ctr 200 std
//! ```
//!
//! Arguments: the benchmark's name (as in the bench), the number of runs, and `green` (default:
//! footprint green threads on a 2-worker runtime, lock-hot placement on), `green_off` (lock-hot
//! off) or `std` (OS threads with `std::sync`). Prints the median run time and, for green runs,
//! runs (starts and resumes), parks and steals per critical section.

use clap::builder::PossibleValuesParser;
use clap::{Parser, ValueEnum};
use footprint_workloads::lock_hot as bodies;

use bodies::{Green, OsThreads, ALL, OPS, THREADS, WORKERS};
use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::time::Duration;

/// One of 000's lock micro-benchmarks in a loop, alone in its process: the median run time and,
/// for green runs, runs, parks and steals per critical section.
#[derive(Parser)]
#[command(name = "lock_hot_probe")]
struct Args {
    /// The benchmark, named as in the `lock_hot` bench
    #[arg(value_parser = PossibleValuesParser::new(ALL.iter().map(|b| b.name)))]
    name: String,
    /// Runs of the benchmark (at least 1)
    runs: NonZeroUsize,
    /// Who runs it
    #[arg(value_enum, default_value_t = Variant::Green)]
    variant: Variant,
}

/// The threads and locks of a run.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Variant {
    /// footprint green threads on a 2-worker runtime, lock-hot placement on.
    Green,
    /// The same with lock-hot placement off.
    #[value(name = "green_off")]
    GreenOff,
    /// OS threads with `std::sync`.
    Std,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let args = Args::parse();
    let bench = ALL
        .iter()
        .find(|b| b.name == args.name)
        .expect("the parser admits only these names");
    let runs = args.runs.get();
    let variant = args.variant;
    let sections = (runs * THREADS * OPS) as f64;
    match variant {
        Variant::Std => {
            let t: Vec<Duration> = (0..runs)
                .map(|_| (bench.os)(&OsThreads::default()))
                .collect();
            println!("{} std: median {:?} per run", bench.name, median(t));
        }
        Variant::Green | Variant::GreenOff => {
            footprint::locks::placement::set_lock_hot(variant == Variant::Green);
            let variant = if variant == Variant::Green {
                "green"
            } else {
                "green_off"
            };
            let rt = footprint::Runtime::builder()
                .workers(WORKERS)
                .build()
                .expect("a 2-worker runtime");
            let green = Green {
                rt,
                threads: THREADS,
            };
            let before = green.rt.stats();
            let t: Vec<Duration> = (0..runs).map(|_| (bench.green)(&green)).collect();
            let after = green.rt.stats();
            let sum = |s: &footprint::RuntimeStats, f: fn(&footprint::WorkerStats) -> u64| {
                s.workers.iter().map(f).sum::<u64>()
            };
            let per = |f: fn(&footprint::WorkerStats) -> u64| {
                (sum(&after, f) - sum(&before, f)) as f64 / sections
            };
            println!(
                "{} {variant}: median {:?} per run; per critical section: runs {:.3}, parks \
                 {:.3}, steals {:.3}, inbox wake-ups {:.3}, sleeps {:.3}",
                bench.name,
                median(t),
                per(|w| w.runs),
                per(|w| w.parks),
                per(|w| w.steals()),
                per(|w| w.inbox_wakeups),
                per(|w| w.sleeps),
            );
        }
    }
    ExitCode::SUCCESS
}
