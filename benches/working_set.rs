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
//! - `std_threads` (peer): the same program on 1024 OS threads with `std::sync::Barrier`, scheduled
//!   by the kernel (thread creation included: it is part of using OS threads for this).
//!
//! One criterion iteration is one whole run (1024 threads × 8 rounds = 8192 sweeps and barrier
//! arrivals); divide by 8192 for the time per synchronization. Runtimes and the 64 MiB of data
//! are set up once, outside the timed loop.
//!
//! Run: `cargo bench --bench working_set -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::OnceLock;

use criterion::{criterion_group, criterion_main, Criterion};
use footprint::sync::Barrier;

const THREADS: usize = 1024;
const WORKING_SET_BYTES: usize = 64 << 10;
const WORDS: usize = WORKING_SET_BYTES / 8;
const GROUP: usize = 4;
const ROUNDS: usize = 8;
const WORKERS: usize = 2;

/// The order in which a sweep visits the 1024 lines of a working set: a fixed pseudo-random
/// permutation, so that hardware prefetchers cannot hide the misses (as with 004's "snooping").
fn line_order() -> &'static [u16] {
    static ORDER: OnceLock<Vec<u16>> = OnceLock::new();
    ORDER.get_or_init(|| {
        let lines = WORDS / 8;
        let mut order: Vec<u16> = (0..lines as u16).collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in (1..lines).rev() {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(i, (x >> 33) as usize % (i + 1));
        }
        order
    })
}

/// One pass over a working set: a read-modify-write of the first word of every 64-byte line,
/// lines in `line_order()`.
fn sweep(working_set: &mut [u64]) {
    for &line in line_order() {
        let word = &mut working_set[line as usize * 8];
        *word = word.wrapping_add(1);
    }
    black_box(working_set);
}

fn run_footprint(rt: &footprint::Runtime, data: &mut [u64], start: &Barrier, barriers: &[Barrier]) {
    rt.block_on(|| {
        footprint::scope(|s| {
            for (i, working_set) in data.chunks_exact_mut(WORDS).enumerate() {
                let barrier = &barriers[i / GROUP];
                s.spawn(move || {
                    start.wait();
                    for _ in 0..ROUNDS {
                        sweep(working_set);
                        barrier.wait();
                    }
                });
            }
        })
    })
}

fn run_std_threads(data: &mut [u64], start: &std::sync::Barrier, barriers: &[std::sync::Barrier]) {
    std::thread::scope(|s| {
        for (i, working_set) in data.chunks_exact_mut(WORDS).enumerate() {
            let barrier = &barriers[i / GROUP];
            std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn_scoped(s, move || {
                    start.wait();
                    for _ in 0..ROUNDS {
                        sweep(working_set);
                        barrier.wait();
                    }
                })
                .expect("starting an OS thread");
        }
    })
}

/// Every word's line was touched once per round by its owner, and nothing else touched it.
fn check(data: &[u64], runs: u64) {
    for (i, line) in data.chunks_exact(8).enumerate() {
        assert_eq!(line[0], runs * ROUNDS as u64, "line {i}");
    }
}

fn working_set(c: &mut Criterion) {
    let mut group = c.benchmark_group("working_set_1024x64KiB");
    group.sample_size(10);

    let start = Barrier::new(THREADS);
    let barriers: Vec<Barrier> = (0..THREADS / GROUP).map(|_| Barrier::new(GROUP)).collect();
    for (name, rt) in orders::ready_order_runtimes(WORKERS) {
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

#[path = "common/short.rs"]
mod short;

#[path = "common/orders.rs"]
mod orders;

criterion_group! {
    name = benches;
    config = short::config();
    targets = working_set
}
criterion_main!(benches);
