//! One of 000's lock micro-benchmarks (`crates/workloads/src/lock_hot.rs`) in a loop, alone in its
//! process, with what the runtime did per critical section: for profilers and for explaining a
//! ratio of the `lock_hot` bench; or all seven, green and std runs alternating.
//!
//! ```text
//! cargo run --release --example lock_hot_probe -- multiple_ctr 200
//! perf stat -e task-clock,context-switches target/release/examples/lock_hot_probe multiple_ctr 200 std
//! cargo run --release --example lock_hot_probe -- all 200 alternating
//! ```
//!
//! Arguments: the benchmark's name (as in the bench, or `all`), the number of runs, and `green`
//! (default: footprint green threads on a 2-worker runtime, lock-hot placement on), `green_off`
//! (lock-hot off), `std` (OS threads with `std::sync`) or `alternating` (green with lock-hot on
//! and std, one run of each in turn). Prints the median run time and, for green runs, runs
//! (starts and resumes), parks and steals per critical section; `alternating` prints both
//! medians and green ÷ std, with the cache-line hand-off time between CPUs 0 and 1 before and
//! after (`footprint_workloads::handoff`).
//!
//! Why `alternating`: on a virtual machine the time a cache line takes between the two CPUs can
//! change by 4-5× for seconds at a time, and the counter benchmarks' times with it, green and
//! std alike. Criterion times one variant for seconds, then the next, so the ratio of a `cargo
//! bench` run can read the host's change; runs in turn meet the same state.

use clap::builder::PossibleValuesParser;
use clap::{Parser, ValueEnum};
use footprint_workloads::lock_hot as bodies;

use bodies::{Green, LockBench, OsThreads, ALL, OPS, THREADS, WORKERS};
use footprint_workloads::handoff::cache_line_handoff_ns;
use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::time::Duration;

/// One of 000's lock micro-benchmarks (or all) in a loop, alone in its process: the median run
/// time and, for green runs, runs, parks and steals per critical section.
#[derive(Parser)]
#[command(name = "lock_hot_probe")]
struct Args {
    /// The benchmark, named as in the `lock_hot` bench, or `all` (the seven in turn)
    #[arg(value_parser = PossibleValuesParser::new(
        ALL.iter().map(|b| b.name).chain(std::iter::once("all"))
    ))]
    name: String,
    /// Runs of the benchmark (at least 1; `alternating`: of each side)
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
    /// Green (lock-hot on) and std, one run of each in turn.
    Alternating,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let args = Args::parse();
    let benches: Vec<&LockBench> = ALL
        .iter()
        .filter(|b| args.name == "all" || b.name == args.name)
        .collect();
    let runs = args.runs.get();
    let variant = args.variant;
    footprint::locks::placement::set_lock_hot(variant != Variant::GreenOff);
    let green = (variant != Variant::Std).then(|| Green {
        rt: footprint::Runtime::builder()
            .workers(WORKERS)
            .build()
            .expect("a 2-worker runtime"),
        threads: THREADS,
    });
    let handoff = || cache_line_handoff_ns(0, 1);
    if variant == Variant::Alternating {
        println!("cache-line hand-off CPU 0 <-> 1: {:.0} ns", handoff());
    }
    for bench in benches {
        match (&green, variant) {
            (_, Variant::Std) => {
                let t: Vec<Duration> = (0..runs)
                    .map(|_| (bench.os)(&OsThreads::default()))
                    .collect();
                println!("{} std: median {:?} per run", bench.name, median(t));
            }
            (Some(green), Variant::Alternating) => {
                let (mut g, mut o) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
                for _ in 0..runs {
                    g.push((bench.green)(green));
                    o.push((bench.os)(&OsThreads::default()));
                }
                let (g, o) = (median(g), median(o));
                println!(
                    "{} alternating: green {:.1} us, std {:.1} us, green / std {:.3}",
                    bench.name,
                    g.as_secs_f64() * 1e6,
                    o.as_secs_f64() * 1e6,
                    g.as_secs_f64() / o.as_secs_f64()
                );
            }
            (Some(green), _) => probe_green(bench, green, runs, variant),
            (None, _) => unreachable!("only std runs without a runtime"),
        }
    }
    if variant == Variant::Alternating {
        println!("cache-line hand-off CPU 0 <-> 1: {:.0} ns", handoff());
    }
    ExitCode::SUCCESS
}

/// `runs` green runs of `bench`: the median and what the runtime did per critical section.
fn probe_green(bench: &LockBench, green: &Green, runs: usize, variant: Variant) {
    let name = if variant == Variant::Green {
        "green"
    } else {
        "green_off"
    };
    let sections = (runs * THREADS * OPS) as f64;
    let before = green.rt.stats();
    let t: Vec<Duration> = (0..runs).map(|_| (bench.green)(green)).collect();
    let after = green.rt.stats();
    let sum = |s: &footprint::RuntimeStats, f: fn(&footprint::WorkerStats) -> u64| {
        s.workers.iter().map(f).sum::<u64>()
    };
    let per = |f: fn(&footprint::WorkerStats) -> u64| {
        (sum(&after, f) - sum(&before, f)) as f64 / sections
    };
    println!(
        "{} {name}: median {:?} per run; per critical section: runs {:.3}, parks {:.3}, steals \
         {:.3}, inbox wake-ups {:.3}, sleeps {:.3}",
        bench.name,
        median(t),
        per(|w| w.runs),
        per(|w| w.parks),
        per(|w| w.steals()),
        per(|w| w.inbox_wakeups),
        per(|w| w.sleeps),
    );
}
