//! Runtime micro-benchmarks, footprint side by side with its peers in one run.
//!
//! - `yield/*`: one iteration is one `yield_now` that hands a single worker from one green thread
//!   to another (two green threads ping-pong on one worker; each yields `iters` times and the
//!   total time is divided by two). Target: footprint ≤ 15 ns. Peers: `may` (coroutine yield on a
//!   one-worker `may` scheduler) and raw `corosensei` (one resume + one suspend: the two stack
//!   switches that any yield through a scheduler needs, i.e. the floor).
//! - `spawn_join/*`: one iteration spawns an empty green thread from a green thread and joins it.
//!   Target: footprint ≤ 60 ns. Peers: `may` (spawn + join from a coroutine) and `std::thread`
//!   (spawn + join of an OS thread).
//!
//! - `*_counters_time`: the same with `Counters::Time` (run time, runs, migrations, steals and
//!   parked time accounted at every switch); the rows without the suffix use the default
//!   counters (`Counters::Off`). Target: time-only accounting ≤ +5 ns per switch.
//!
//! Runtimes are built once per benchmark, outside the timed loop; `iter_custom` times the loop
//! inside the green thread so that `block_on`'s own start-up is not measured.
//!
//! Run: `cargo bench --bench runtime_micro -- --warm-up-time 1 --measurement-time 3`

use footprint_workloads::micro;

use criterion::{criterion_group, criterion_main, Criterion};

fn yield_benches(c: &mut Criterion) {
    micro::configure_may();
    let mut group = c.benchmark_group("yield");

    // The default counters, then time-only accounting at every switch.
    for (name, counters) in [
        ("footprint", footprint::Counters::default()),
        ("footprint_counters_time", footprint::Counters::Time),
    ] {
        let rt = footprint::Runtime::builder()
            .workers(1)
            .counters(counters)
            .build()
            .expect("a one-worker runtime");
        group.bench_function(name, |b| {
            b.iter_custom(|iters| micro::footprint_yield(&rt, iters))
        });
    }
    group.bench_function("may", |b| b.iter_custom(micro::may_yield));
    group.bench_function("corosensei_resume_suspend", |b| {
        b.iter_custom(micro::corosensei_resume_suspend)
    });
    group.finish();
}

fn spawn_join_benches(c: &mut Criterion) {
    micro::configure_may();
    let mut group = c.benchmark_group("spawn_join");

    for (workers, suffix, counters) in [
        (1, "", footprint::Counters::default()),
        (2, "", footprint::Counters::default()),
        (1, "_counters_time", footprint::Counters::Time),
    ] {
        let rt = footprint::Runtime::builder()
            .workers(workers)
            .counters(counters)
            .build()
            .expect("a runtime");
        group.bench_function(format!("footprint_{workers}w{suffix}"), |b| {
            b.iter_custom(|iters| micro::footprint_spawn_join(&rt, iters))
        });
    }
    group.bench_function("may_1w", |b| b.iter_custom(micro::may_spawn_join));
    group.bench_function("std_thread", |b| b.iter_custom(micro::std_spawn_join));
    group.finish();
}

use footprint_workloads::short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = yield_benches, spawn_join_benches
}
criterion_main!(benches);
