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

use footprint_workloads::lock_hot as bodies;

use bodies::{Green, OsThreads, ALL, OPS, THREADS, WORKERS};
use std::process::ExitCode;
use std::time::Duration;

fn usage() -> ExitCode {
    let names: Vec<&str> = ALL.iter().map(|b| b.name).collect();
    eprintln!(
        "usage: lock_hot_probe NAME RUNS [green|green_off|std]  (NAME is one of: {})",
        names.join(", ")
    );
    ExitCode::from(2)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let Some(bench) = a
        .first()
        .and_then(|n| ALL.iter().find(|b| b.name == n.as_str()))
    else {
        return usage();
    };
    let Some(runs) = a
        .get(1)
        .and_then(|r| r.parse::<usize>().ok())
        .filter(|&r| r > 0)
    else {
        return usage();
    };
    let variant = a.get(2).map(String::as_str).unwrap_or("green");
    let sections = (runs * THREADS * OPS) as f64;
    match variant {
        "std" => {
            let t: Vec<Duration> = (0..runs).map(|_| (bench.os)(&OsThreads)).collect();
            println!("{} std: median {:?} per run", bench.name, median(t));
        }
        "green" | "green_off" => {
            footprint::locks::placement::set_lock_hot(variant == "green");
            let rt = footprint::Runtime::builder()
                .workers(WORKERS)
                .build()
                .expect("a 2-worker runtime");
            let green = Green { rt };
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
        _ => return usage(),
    }
    ExitCode::SUCCESS
}
