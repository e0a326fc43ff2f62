//! `footprint::sleep` at scale: one iteration is one round of 10,000 green threads
//! each sleeping 1 ms once on two workers, spawned and joined from a green thread. The ideal is
//! 1 ms plus the spawns and joins; the lateness distribution (p50/p99/max) is printed by
//! `cargo run --release --example sleep_lateness`.
//!
//! Run: `cargo bench --bench sleep -- --warm-up-time 1 --measurement-time 2`

use footprint_workloads::sleep;

use criterion::{criterion_group, criterion_main, Criterion};

fn bench(c: &mut Criterion) {
    let rt = sleep::runtime(sleep::WORKERS).expect("a two-worker runtime");
    let mut group = c.benchmark_group("sleep");
    group.sample_size(10);
    group.bench_function(format!("{}x1ms_{}w", sleep::THREADS, sleep::WORKERS), |b| {
        b.iter(|| rt.block_on(|| sleep::sleep_round(sleep::THREADS, sleep::SLEEP)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
