//! Cost of the scheduler's hot-path decisions: policy keys, stop bookkeeping, the reload-transient
//! table against the exact formula, and the placement advisors.
//!
//! `cargo bench -p footprint-hpc-affinity --bench affinity -- --warm-up-time 1 --measurement-time 3`

use criterion::{criterion_group, criterion_main, Criterion};
use footprint_affinity::ledger::Ledger;
use footprint_affinity::placement::fragments::FragmentBatcher;
use footprint_affinity::placement::lock_hot::LockHotPlacement;
use footprint_affinity::placement::shuffle::{plan_shuffle, ShuffleThread};
use footprint_affinity::policy::{
    AffinityPolicy, Policy, PolicyKind, ThreadAffinity, WorkerAffinity,
};
use footprint_affinity::ready::ReadyHeap;
use footprint_affinity::reload::{expected_remaining, reload_transient, CacheModel, ReloadTable};
use footprint_affinity::{CacheDomain, Topology};
use std::hint::black_box;
use std::sync::Arc;

const THREADS: usize = 1024;

/// This machine's shape: two CPUs with private 1 MiB L2s (16384 lines).
fn world() -> (Arc<Ledger>, WorkerAffinity, WorkerAffinity) {
    let l2 = |cpu| CacheDomain {
        level: 2,
        size_bytes: 1 << 20,
        line_size: 64,
        cpus: vec![cpu],
    };
    let topo = Topology::from_parts(vec![0, 1], vec![l2(0), l2(1)], vec![]);
    let ledger = Arc::new(Ledger::new(&topo, 2));
    let w0 = WorkerAffinity::new(0, Some(0), ledger.clone());
    let w1 = WorkerAffinity::new(1, Some(1), ledger.clone());
    (ledger, w0, w1)
}

/// 1024 threads with histories: counted misses of varied size, on either worker.
fn threads(w0: &WorkerAffinity, w1: &WorkerAffinity, counted: bool) -> Vec<ThreadAffinity> {
    let policy = Policy::new(PolicyKind::ReloadTransient);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..THREADS)
        .map(|i| {
            let mut t = ThreadAffinity::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let misses = counted.then_some(x % 4000);
            policy.on_stop(&mut t, misses, if i % 2 == 0 { w0 } else { w1 });
            t
        })
        .collect()
}

fn keys(c: &mut Criterion) {
    let (_, w0, w1) = world();
    let counted = threads(&w0, &w1, true);
    let uncounted = threads(&w0, &w1, false);
    let mut group = c.benchmark_group("key");
    for kind in PolicyKind::ALL {
        let policy = Policy::new(kind);
        let mut i = 0;
        group.bench_function(format!("{kind}/counted"), |b| {
            b.iter(|| {
                i = (i + 1) & (THREADS - 1);
                policy.key(black_box(&counted[i]), &w0)
            })
        });
        if kind.needs_miss_counts() {
            let mut i = 0;
            group.bench_function(format!("{kind}/no-counts"), |b| {
                b.iter(|| {
                    i = (i + 1) & (THREADS - 1);
                    policy.key(black_box(&uncounted[i]), &w0)
                })
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("on_stop");
    let policy = Policy::new(PolicyKind::ReloadTransient);
    let mut ts = counted.clone();
    let mut i = 0;
    group.bench_function("counted", |b| {
        b.iter(|| {
            i = (i + 1) & (THREADS - 1);
            policy.on_stop(&mut ts[i], Some(black_box(i as u64)), &w0)
        })
    });
    group.bench_function("no-counts", |b| {
        b.iter(|| {
            i = (i + 1) & (THREADS - 1);
            policy.on_stop(&mut ts[i], black_box(None), &w0)
        })
    });
    group.finish();
}

fn reload_table_vs_exact(c: &mut Criterion) {
    let table = ReloadTable::new();
    let n = 16384u64;
    let inputs: Vec<(f64, f64)> = (0..THREADS)
        .map(|i| {
            let f = (i * 13 % 1000) as f64 / 1000.0 * n as f64;
            (f, expected_remaining(n, f, (i * 7919 % 50_000) as f64))
        })
        .collect();
    let mut group = c.benchmark_group("reload_transient");
    let mut i = 0;
    group.bench_function("exact (ln_1p)", |b| {
        b.iter(|| {
            i = (i + 1) & (THREADS - 1);
            let (f, v) = black_box(inputs[i]);
            reload_transient(n, f, v)
        })
    });
    group.bench_function("table", |b| {
        b.iter(|| {
            i = (i + 1) & (THREADS - 1);
            let (f, v) = black_box(inputs[i]);
            table.reload_transient(n, f, v)
        })
    });
    let model = CacheModel::new(n);
    group.bench_function("table, per-cache constant precomputed", |b| {
        b.iter(|| {
            i = (i + 1) & (THREADS - 1);
            let (f, v) = black_box(inputs[i]);
            table.reload_transient_in(&model, f, v)
        })
    });
    group.finish();
}

fn advisors(c: &mut Criterion) {
    let mut group = c.benchmark_group("advisor");
    let lock_hot = LockHotPlacement::default();
    let loads = [5usize, 3, 4, 6, 2, 5, 4, 3];
    let mut i = 0usize;
    group.bench_function("lock_hot/place_waiter (8 workers)", |b| {
        b.iter(|| {
            i = (i + 1) & 7;
            lock_hot.place_waiter(black_box(i), Some(3), black_box(&loads))
        })
    });

    let mut batcher = FragmentBatcher::new(8);
    for t in 0..THREADS as u64 {
        batcher.place(t, t % 64);
    }
    let mut step = 0u64;
    group.bench_function("fragments/place, DF change (1024 threads, 64 DFs)", |b| {
        b.iter(|| {
            step += 1;
            let t = step & (THREADS as u64 - 1);
            // Each pass over the threads moves every thread to the other of its two DFs, so
            // every call is a re-placement (leave one batch, join another).
            let pass = step >> 10;
            let df = t % 64 + 64 * (pass & 1);
            batcher.place(black_box(t), df)
        })
    });
    group.bench_function("fragments/rebalance (balanced, 8 workers)", |b| {
        b.iter(|| black_box(&mut batcher).rebalance())
    });

    let shuffle_threads: Vec<ShuffleThread> = (0..64)
        .map(|i| ShuffleThread {
            id: i,
            lock_time: ((i * 37) % 64) as f64 / 100.0,
            domain: (i % 4) as usize,
        })
        .collect();
    group.bench_function("shuffle/plan (64 threads, 4 domains)", |b| {
        b.iter(|| plan_shuffle(black_box(&shuffle_threads), 4, 0.05))
    });
    group.finish();
}

/// The keyed ready structure against the runtime's plain deque, 64 ready threads in steady
/// state: one push and one pop per iteration.
fn ready_structure(c: &mut Criterion) {
    let mut group = c.benchmark_group("ready (64 queued, push + pop)");
    let mut heap = ReadyHeap::with_capacity(128);
    let mut deque = std::collections::VecDeque::with_capacity(128);
    for i in 0..64u64 {
        heap.push(i.wrapping_mul(0x9E37_79B9) % 1000, i);
        deque.push_back(i);
    }
    let mut x = 1u64;
    group.bench_function("ReadyHeap (key order)", |b| {
        b.iter(|| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            heap.push(black_box(x >> 54), x);
            heap.pop()
        })
    });
    group.bench_function("VecDeque (FIFO, peer)", |b| {
        b.iter(|| {
            x = x.wrapping_add(1);
            deque.push_back(black_box(x));
            deque.pop_front()
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    keys,
    reload_table_vs_exact,
    advisors,
    ready_structure
);
criterion_main!(benches);
