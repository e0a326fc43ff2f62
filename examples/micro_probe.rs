//! One runtime micro-operation in a loop, alone in its process, for profilers and for
//! process-to-process comparisons:
//!
//! ```text
//! cargo run --release --example micro_probe -- yield 10000000
//! valgrind --tool=callgrind target/release/examples/micro_probe yield 100000
//! perf stat -e task-clock target/release/examples/micro_probe spawn_join 10000000
//! ```
//!
//! Operations: `yield` (two green threads ping-pong on 1 worker; one yield is one iteration),
//! `spawn_join` (spawn an empty green thread from a green thread and join it, 1 worker),
//! `spawn_join2` (the same on 2 workers), `fib` and `fib_rayon` (one `fib(30)` with a join at
//! every level, footprint on 2 workers or a 2-thread rayon pool), `mutex` (lock + unlock of an uncontended
//! `footprint::sync::Mutex` on the main OS thread), `std_mutex` (the same with
//! `std::sync::Mutex`), `skynet` (a skynet of `--leaves` leaves, 2 workers). `--workers N`
//! overrides the operation's worker count. A third argument `unpinned` builds the runtime with `pin(false)`. With
//! `FOOTPRINT_PROBE_STATS` set in the environment it also prints what each worker did (runs,
//! parks, steals, sleeps) and each OS thread's CPU time per operation.
//! Prints the wall-clock time per operation and the process's CPU time per operation: the CPU
//! time does not grow when other processes take the CPU away, so it compares processes (and
//! commits) on a loaded machine.

use clap::{Parser, ValueEnum};
use footprint_workloads::micro::{self, process_cpu};

use footprint_workloads::{fib, skynet};

use std::hint::black_box;
use std::num::{NonZeroU64, NonZeroUsize};
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn mutex_loop(iters: u64) -> Duration {
    let m = footprint::sync::Mutex::new(0u64);
    let start = Instant::now();
    for _ in 0..iters {
        *black_box(&m).lock() += 1;
    }
    let d = start.elapsed();
    assert_eq!(*m.lock(), iters, "every increment counted");
    d
}

/// `iters` computations of `fib(30)` with a join at every level, each checked against an
/// iterative oracle.
fn fib_loop(iters: u64, run: impl Fn(u32) -> u64) -> Duration {
    // The oracle, iteratively (the recursive one would add its time to the CPU time measured).
    let want = (0..30).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0;
    let start = Instant::now();
    for _ in 0..iters {
        assert_eq!(run(black_box(30)), want, "fib(30)");
    }
    start.elapsed()
}

/// `iters` skynets of `leaves` leaves, each checked against the closed form.
fn skynet_loop(iters: u64, leaves: u64, rt: &footprint::Runtime) -> Duration {
    let want = skynet::expected(leaves);
    let start = Instant::now();
    for _ in 0..iters {
        assert_eq!(
            rt.block_on(|| skynet::footprint_spawn(0, black_box(leaves))),
            want,
            "skynet of {leaves} leaves"
        );
    }
    start.elapsed()
}

fn std_mutex_loop(iters: u64) -> Duration {
    let m = std::sync::Mutex::new(0u64);
    let start = Instant::now();
    for _ in 0..iters {
        *black_box(&m).lock().expect("never poisoned") += 1;
    }
    let d = start.elapsed();
    assert_eq!(
        *m.lock().expect("never poisoned"),
        iters,
        "every increment counted"
    );
    d
}

fn runtime(workers: usize, pin: bool) -> footprint::Runtime {
    footprint::Runtime::builder()
        .workers(workers)
        .pin(pin)
        .build()
        .expect("a runtime")
}

/// One runtime micro-operation in a loop, alone in its process: the wall-clock time and the
/// process's CPU time per operation (set FOOTPRINT_PROBE_STATS for what each worker and OS
/// thread did).
#[derive(Parser)]
#[command(name = "micro_probe")]
struct Args {
    /// The operation
    #[arg(value_enum, default_value_t = Op::Yield)]
    op: Op,
    /// Iterations (at least 1)
    #[arg(default_value = "10000000")]
    iters: NonZeroU64,
    /// Whether the runtime pins its workers to CPUs
    #[arg(value_enum, default_value_t = Pin::Pinned)]
    pin: Pin,
    /// Workers, instead of the operation's own count (1 or 2)
    #[arg(long)]
    workers: Option<NonZeroUsize>,
    /// Leaves of the skynet operation: a power of ten of at least 10
    #[arg(long, default_value_t = 10_000)]
    leaves: u64,
}

/// The operations (see the file's top comment).
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
enum Op {
    /// Two green threads ping-pong on 1 worker; one yield is one iteration.
    Yield,
    /// Spawn an empty green thread from a green thread and join it, 1 worker.
    SpawnJoin,
    /// The same on 2 workers.
    SpawnJoin2,
    /// One fib(30) with a join at every level, footprint on 2 workers.
    Fib,
    /// The same on a 2-thread rayon pool.
    FibRayon,
    /// One skynet (`--leaves`, default 10,000: 11,110 spawns + joins), 2 workers.
    Skynet,
    /// Lock + unlock of an uncontended `footprint::sync::Mutex` on the main OS thread.
    Mutex,
    /// The same with `std::sync::Mutex`.
    StdMutex,
}

/// Worker pinning.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Pin {
    /// `pin(true)`: each worker on its own CPU.
    Pinned,
    /// `pin(false)`.
    Unpinned,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let iters = args.iters.get();
    let pin = args.pin == Pin::Pinned;
    let op = args.op;
    let name = op
        .to_possible_value()
        .expect("every operation has a name")
        .get_name()
        .to_string();
    let workers = if matches!(op, Op::SpawnJoin2 | Op::Fib | Op::Skynet) {
        2
    } else {
        1
    };
    let workers = args.workers.map_or(workers, NonZeroUsize::get);
    if !skynet::is_power_of_ten(args.leaves) || args.leaves < 10 {
        eprintln!(
            "micro_probe: --leaves must be a power of ten of at least 10, not {}",
            args.leaves
        );
        return ExitCode::FAILURE;
    }
    let rt = runtime(workers, pin);
    let cpu_start = process_cpu();
    let d = match op {
        Op::Yield => micro::footprint_yield(&rt, iters),
        Op::SpawnJoin | Op::SpawnJoin2 => micro::footprint_spawn_join(&rt, iters),
        Op::Fib => fib_loop(iters, |n| rt.block_on(|| fib::fib_footprint(n))),
        Op::FibRayon => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .expect("a rayon pool");
            fib_loop(iters, |n| pool.install(|| fib::fib_rayon(n)))
        }
        Op::Skynet => skynet_loop(iters, args.leaves, &rt),
        Op::Mutex => mutex_loop(iters),
        Op::StdMutex => std_mutex_loop(iters),
    };
    let cpu = process_cpu() - cpu_start;
    let ns = d.as_secs_f64() * 1e9 / iters as f64;
    // Two green threads yield `iters` times each: 2 · iters yields used the CPU time.
    let ops = if op == Op::Yield { 2 * iters } else { iters };
    let cpu_ns = cpu.as_secs_f64() * 1e9 / ops as f64;
    println!(
        "{name}: {iters} iterations, {:.2} ns each (wall clock), {cpu_ns:.2} ns of process CPU time each",
        black_box(ns)
    );
    if std::env::var_os("FOOTPRINT_PROBE_STATS").is_some() {
        // What the workers did (runs, parks, steals, sleeps): the causes of a slow operation.
        let st = rt.stats();
        println!("spawned {}, stacks mapped {}", st.spawned, st.stacks_mapped);
        for (i, w) in st.workers.iter().enumerate() {
            println!(
                "worker {i}: runs {}, parks {}, steals {:?}, sleeps {}, idle {:?}",
                w.runs, w.parks, w.steals_by_tier, w.sleeps, w.idle_time
            );
        }
        // CPU time per OS thread (Linux: /proc/self/task/*/schedstat, first field in ns):
        // which thread's work the process CPU time above is.
        if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
            for t in tasks.flatten() {
                let read = |f: &str| std::fs::read_to_string(t.path().join(f)).unwrap_or_default();
                let on_cpu: f64 = read("schedstat")
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0.0);
                println!(
                    "thread {}: {:.2} ns of CPU time per operation",
                    read("comm").trim(),
                    on_cpu / ops as f64
                );
            }
        }
    }
    ExitCode::SUCCESS
}
