//! Private tuning benches for the runtime's hot paths (the project's comparison benches live in
//! the root `benches/`). Run: `cargo bench -p footprint-hpc-runtime --bench quick -- --warm-up-time 1
//! --measurement-time 3`.

use criterion::{criterion_group, criterion_main, Criterion};
use footprint_affinity::{Policy, PolicyKind};
use footprint_runtime::{join, spawn, yield_now, ReadyOrder, Runtime};
use std::time::{Duration, Instant};

/// Two green threads on one worker yielding to each other; the time per yield.
fn yield_pair_on(rt: &Runtime, iters: u64) -> Duration {
    rt.block_on(|| {
        let half = iters / 2 + 1;
        let partner = spawn(move || {
            for _ in 0..half {
                yield_now();
            }
        });
        yield_now(); // start the partner
        let t0 = Instant::now();
        for _ in 0..half {
            yield_now();
        }
        let el = t0.elapsed();
        partner.join().unwrap();
        el
    })
}

fn yield_pair(c: &mut Criterion) {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let vt = Runtime::builder()
        .workers(1)
        .ready_order(ReadyOrder::Policy(Policy::new(PolicyKind::VirtualTime)))
        .build()
        .unwrap();
    let mut g = c.benchmark_group("yield");
    g.bench_function("footprint_two_green_threads_one_worker", |b| {
        b.iter_custom(|iters| yield_pair_on(&rt, iters))
    });
    // The same with the opt-in affinity order (on_stop and a heap push per yield).
    g.bench_function("footprint_two_green_threads_one_worker_virtual_time", |b| {
        b.iter_custom(|iters| yield_pair_on(&vt, iters))
    });
    g.bench_function("corosensei_raw_switch_pair", |b| {
        b.iter_custom(|iters| {
            let mut co = corosensei::Coroutine::new(|y: &corosensei::Yielder<(), ()>, ()| loop {
                y.suspend(());
            });
            let t0 = Instant::now();
            for _ in 0..iters {
                co.resume(());
            }
            t0.elapsed()
        })
    });
    g.finish();
}

fn spawn_join(c: &mut Criterion) {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let mut g = c.benchmark_group("spawn_join");
    g.bench_function("footprint_empty_from_green_thread", |b| {
        b.iter_custom(|iters| {
            rt.block_on(|| {
                let t0 = Instant::now();
                for _ in 0..iters {
                    spawn(|| ()).join().unwrap();
                }
                t0.elapsed()
            })
        })
    });
    g.bench_function("footprint_empty_started_before_join", |b| {
        b.iter_custom(|iters| {
            rt.block_on(|| {
                let t0 = Instant::now();
                for _ in 0..iters {
                    let h = spawn(|| ());
                    yield_now();
                    h.join().unwrap();
                }
                t0.elapsed()
            })
        })
    });
    g.finish();
}

fn fib_fp(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib_fp(n - 1), || fib_fp(n - 2));
    a + b
}

fn fib_rayon(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1), || fib_rayon(n - 2));
    a + b
}

fn fib(c: &mut Criterion) {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut g = c.benchmark_group("fib30_2_workers");
    g.sample_size(10);
    g.bench_function("footprint", |b| b.iter(|| rt.block_on(|| fib_fp(30))));
    g.bench_function("rayon", |b| b.iter(|| pool.install(|| fib_rayon(30))));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = yield_pair, spawn_join, fib
}
criterion_main!(benches);
