//! 004's regular-execution-order workload at this machine's size: 1024 green threads, each owning
//! a 64 KiB working set (64 MiB in all: twice the 32 MiB L3, 64 times the 1 MiB L2). A thread
//! first waits until all 1024 exist (a start barrier, so that every thread is alive in the ready
//! structures from then on, as in a long-running solver), then sweeps its working set (one read-modify-write per 64-byte line, in a
//! fixed pseudo-random line order), then synchronizes with the
//! other 3 threads of its group at a barrier, 8 rounds in all. What it shows: how much the order in
//! which woken threads resume matters when working sets do not all fit in the cache.
//!
//! - `footprint_lifo`: ready structure most-recently-woken first (the runtime's default, a
//!   VirtualTime-like order): a group that was just released runs again while its 256 KiB are
//!   still in L2;
//! - `footprint_fifo`: oldest woken first (round-robin over all groups: every resume reloads);
//! - `footprint_virtual_time`: the affinity crate's VirtualTime policy ordering each worker's ready
//!   heap (004 Table 3.3: the thread this worker ran most recently first, by a per-worker stamp);
//! - `footprint_virtual_time_counters_time`: the same with `Counters::Time` (run time, runs,
//!   migrations, steals and parked time accounted at every switch): what accounting costs here;
//! - `std_threads` (peer): the same program on 1024 OS threads with `std::sync::Barrier`, scheduled
//!   by the kernel (thread creation included: it is part of using OS threads for this).
//!
//! One criterion iteration is one whole run (1024 threads × 8 rounds = 8192 sweeps and barrier
//! arrivals); divide by 8192 for the time per synchronization. Runtimes and the 64 MiB of data
//! are set up once, outside the timed loop.
//!
//! Run: `cargo bench --bench working_set -- --warm-up-time 1 --measurement-time 3`

use footprint_workloads::working_set as workload;

use criterion::{criterion_group, criterion_main, Criterion};
use footprint::sync::Barrier;
use footprint::Counters;
use workload::{check, run_footprint, run_std_threads, GROUP, THREADS, WORDS, WORKERS};

fn working_set(c: &mut Criterion) {
    let mut group = c.benchmark_group("working_set_1024x64KiB");
    group.sample_size(10);

    let start = Barrier::new(THREADS);
    let barriers: Vec<Barrier> = (0..THREADS / GROUP).map(|_| Barrier::new(GROUP)).collect();
    // Every ready order without accounting, then VirtualTime with time accounting at every
    // switch: its cost at the scale of a workload.
    let [.., (_, vt)] = orders::ready_orders();
    let rows = orders::ready_orders()
        .into_iter()
        .map(|(name, order)| (name, order, Counters::Off))
        .chain([("footprint_virtual_time_counters_time", vt, Counters::Time)]);
    for (name, order, counters) in rows {
        let rt = orders::runtime(WORKERS, order, counters);
        let mut data = vec![0u64; THREADS * WORDS];
        run_footprint(&rt, &mut data, &start, &barriers);
        check(&data, 1);
        group.bench_function(name, |b| {
            b.iter(|| run_footprint(&rt, &mut data, &start, &barriers))
        });
    }

    let std_start = std::sync::Barrier::new(THREADS);
    let std_barriers: Vec<std::sync::Barrier> = (0..THREADS / GROUP)
        .map(|_| std::sync::Barrier::new(GROUP))
        .collect();
    let mut data = vec![0u64; THREADS * WORDS];
    run_std_threads(&mut data, &std_start, &std_barriers);
    check(&data, 1);
    group.bench_function("std_threads", |b| {
        b.iter(|| run_std_threads(&mut data, &std_start, &std_barriers))
    });
    group.finish();
}

use footprint_workloads::short;

use footprint_workloads::orders;

criterion_group! {
    name = benches;
    config = short::config();
    targets = working_set
}
criterion_main!(benches);
