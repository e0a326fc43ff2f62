//! Many blocked green threads: one iteration spawns `N` = 10,000 green threads on two workers,
//! blocks them all on one primitive, releases them and joins them all (targets:
//! ≤ 20 ms each).
//!
//! - `many_blocked/barrier/10000`: every thread waits on one `Barrier::new(N + 1)`; the
//!   spawner's own `wait` is the release.
//! - `many_blocked/mutex/10000`: the spawner holds a `Mutex`, yields until every thread has
//!   started (and so blocked on the lock), then unlocks; each thread takes the lock once.
//!
//! Both run on one runtime built outside the timed loop (64 KiB stacks, `guard_pages(false)`;
//! a second group, `guarded`, repeats the barrier with guard pages on). The stacks are pooled
//! after the first iteration, as in any long-running program.
//!
//! Run: `cargo bench --bench many_blocked -- --warm-up-time 1 --measurement-time 2`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use footprint::sync::{Barrier, Mutex};

const N: usize = 10_000;

fn runtime(guard_pages: bool) -> footprint::Runtime {
    footprint::Runtime::builder()
        .workers(2)
        .stack_size(64 << 10)
        .guard_pages(guard_pages)
        .build()
        .expect("a two-worker runtime")
}

fn through_barrier(n: usize) {
    let barrier = Arc::new(Barrier::new(n + 1));
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let b = barrier.clone();
            footprint::spawn(move || {
                b.wait();
            })
        })
        .collect();
    barrier.wait();
    for h in handles {
        h.join().expect("no panic");
    }
}

fn through_mutex(n: usize) {
    let lock = Arc::new(Mutex::new(0usize));
    let started = Arc::new(AtomicUsize::new(0));
    let guard = lock.lock();
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let l = lock.clone();
            let s = started.clone();
            footprint::spawn(move || {
                s.fetch_add(1, Ordering::Relaxed);
                *l.lock() += 1;
            })
        })
        .collect();
    while started.load(Ordering::Relaxed) < n {
        footprint::yield_now();
    }
    drop(guard);
    for h in handles {
        h.join().expect("no panic");
    }
    assert_eq!(*lock.lock(), n);
}

fn many_blocked(c: &mut Criterion) {
    let mut group = c.benchmark_group("many_blocked");
    group.sample_size(10);
    let rt = runtime(false);
    group.bench_with_input(BenchmarkId::new("barrier", N), &N, |b, &n| {
        b.iter(|| rt.block_on(|| through_barrier(n)))
    });
    group.bench_with_input(BenchmarkId::new("mutex", N), &N, |b, &n| {
        b.iter(|| rt.block_on(|| through_mutex(n)))
    });
    drop(rt);
    let rt = runtime(true);
    group.bench_with_input(BenchmarkId::new("barrier_guarded", N), &N, |b, &n| {
        b.iter(|| rt.block_on(|| through_barrier(n)))
    });
    group.finish();
}

use footprint_workloads::short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = many_blocked
}
criterion_main!(benches);
