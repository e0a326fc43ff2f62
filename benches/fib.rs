//! Fork-join overhead: `fib(n)` with a `join` at every level of the recursion (no sequential
//! cut-off, so the time is almost all scheduling), on 2 workers.
//!
//! footprint: `footprint::join` inside `Runtime::block_on` on a 2-worker runtime.
//! rayon (peer): `rayon::join` inside `ThreadPool::install` on a 2-thread pool.
//! Target: footprint's `fib(30)` ≤ 1.2 × rayon's. Smaller `n` shows the fixed cost of entering
//! the pool against the per-join cost.
//!
//! Both pools are built once, outside the timed loop.
//!
//! Run: `cargo bench --bench fib -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

use footprint_workloads::fib;

use fib::{fib_footprint, fib_rayon, fib_sequential};

const WORKERS: usize = 2;

fn fib_benches(c: &mut Criterion) {
    let (rt, pool) = peers::runtime_and_rayon(WORKERS);

    // Both must agree with the oracle before anything is timed.
    let check = fib_sequential(20);
    assert_eq!(rt.block_on(|| fib_footprint(20)), check);
    assert_eq!(pool.install(|| fib_rayon(20)), check);

    let mut group = c.benchmark_group("fib");
    for n in [20u32, 25, 30] {
        if n >= 30 {
            group.sample_size(10);
        } else {
            group.sample_size(30);
        }
        group.bench_with_input(BenchmarkId::new("footprint_2w", n), &n, |b, &n| {
            b.iter(|| rt.block_on(|| fib_footprint(black_box(n))))
        });
        group.bench_with_input(BenchmarkId::new("rayon_2t", n), &n, |b, &n| {
            b.iter(|| pool.install(|| fib_rayon(black_box(n))))
        });
        group.bench_with_input(BenchmarkId::new("sequential", n), &n, |b, &n| {
            b.iter(|| fib_sequential(black_box(n)))
        });
    }
    group.finish();
}

use footprint_workloads::peers;
use footprint_workloads::short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = fib_benches
}
criterion_main!(benches);
