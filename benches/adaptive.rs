//! The adaptive worker count against fixed counts, side by side in one run.
//!
//! Workloads (`crates/workloads/src/adaptive.rs`), each on fixed 1, fixed `cpus / 2` and fixed `cpus`
//! workers and on adaptive `1..=cpus` (`cpus`: the CPUs the process may use; on a 2-CPU machine
//! fixed 1, fixed 2 and adaptive 1..=2, the whole choice being 1 or 2; run it under
//! `taskset -c 0-3` for a 4-CPU view of a bigger machine):
//! - `lock_bound`: 8 green threads on one mutex whose critical section walks 32 KiB of shared
//!   data (fewer workers should win: the data stays in one core's cache);
//! - `fork_join`: 64 leaves of ≈20 µs per round, split with `join` (all workers should win);
//! - `phases`: a lock-bound phase then a fork-join phase, ≈0.3 s each, repeated (the
//!   controller must notice each change and search again);
//! - `multiprog/<degree>`: 002's lock-and-barrier loop on 8 green threads with `degree - 1`
//!   programs' worth of background copies of 002's program (informed waiting) on the same CPUs:
//!   each degree adds `cpus` busy OS threads (`cpus / 2` copies of 2 threads, at least 1 copy).
//!
//! The adaptive runtime is built once per benchmark and run until its search has settled
//! before criterion's warm-up (so its figure is "after its search"; for `phases`, the searches
//! that later phase changes start are measured); its state is printed to
//! stderr before and after each measurement (the decision log: active count, decisions by
//! reason, the last one, the controller's CPU share).
//!
//! Run: `cargo bench --bench adaptive -- --warm-up-time 1 --measurement-time 2`

use footprint_workloads::adaptive;
use footprint_workloads::multiprog as program;

use adaptive::Config;
use criterion::{criterion_group, BenchmarkId, Criterion};
use std::time::Duration;

/// The longest warm-up before measuring (it ends as soon as the search has settled: well under
/// a second on 2 CPUs). A search on `1..=16` with a peak between its tries takes up to 5.5 s on
/// the model (`crates/runtime/src/adaptive/controller/search_model_tests.rs`).
const SETTLE: Duration = Duration::from_secs(8);

/// One workload on every configuration: each runtime warmed with `warm` until settled, then
/// timed with `run`.
fn side_by_side(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    warm: impl Fn(&footprint::Runtime),
    run: impl Fn(&footprint::Runtime, u64) -> Duration,
) {
    for config in Config::all() {
        let rt = config.build();
        adaptive::settle(&rt, Duration::ZERO, SETTLE, &warm);
        eprintln!("{name} {}: {}", config.name(), adaptive::describe(&rt));
        g.bench_function(BenchmarkId::new(name, config.name()), |b| {
            b.iter_custom(|iters| run(&rt, iters))
        });
        eprintln!("  after: {}", adaptive::describe(&rt));
        adaptive::log_decisions(&rt);
    }
}

fn workloads(c: &mut Criterion) {
    let mut g = c.benchmark_group("adaptive");
    side_by_side(
        &mut g,
        "lock_bound",
        |rt| {
            adaptive::lock_bound(rt, 50);
        },
        adaptive::lock_bound,
    );
    side_by_side(
        &mut g,
        "fork_join",
        |rt| {
            adaptive::fork_join(rt, 4);
        },
        adaptive::fork_join,
    );
    g.sample_size(10);
    for config in Config::all() {
        let rt = config.build();
        // The first search settles before criterion's warm-up, as for the other workloads; the
        // searches that the phase changes start during the measurement are measured.
        adaptive::settle(&rt, Duration::ZERO, SETTLE, |rt| {
            adaptive::phases(rt, 1, 3000, 120);
        });
        eprintln!("phases {}: {}", config.name(), adaptive::describe(&rt));
        g.bench_function(BenchmarkId::new("phases", config.name()), |b| {
            b.iter_custom(|iters| adaptive::phases(&rt, iters, 3000, 120))
        });
        eprintln!("  after: {}", adaptive::describe(&rt));
        adaptive::log_decisions(&rt);
    }
    g.finish();
}

fn multiprogramming(c: &mut Criterion) {
    let mut g = c.benchmark_group("adaptive_multiprog");
    for degree in 1..=4usize {
        let copies = (degree - 1) * (adaptive::cpus() / program::THREADS).max(1);
        let _background = program::Background::start(program::Variant::Informed, copies);
        for config in Config::all() {
            let rt = config.build();
            adaptive::settle(&rt, Duration::ZERO, SETTLE, |rt| {
                adaptive::lock_barrier(rt, 2000);
            });
            g.bench_function(BenchmarkId::new(config.name(), degree), |b| {
                b.iter_custom(|iters| adaptive::lock_barrier(&rt, iters))
            });
            eprintln!(
                "multiprog {degree} {}: {}",
                config.name(),
                adaptive::describe(&rt)
            );
            adaptive::log_decisions(&rt);
        }
    }
    g.finish();
}

use footprint_workloads::short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = workloads, multiprogramming
}

fn main() {
    program::run_background_if_requested();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
