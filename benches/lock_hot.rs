//! 000's (FAST, futex-aware scheduling) seven lock micro-benchmarks, at sizes that fit 2 cores:
//! green threads on a 2-worker footprint runtime with lock-hot placement on vs off, and std
//! threads with `std::sync::Mutex` / `Condvar` / `Barrier` as the peer.
//!
//! Lock-hot placement (000; DESIGN.md "Placement advice"): when a release wakes a parked waiter,
//! the locks pass `Placement::Worker(releaser's worker)` so that the waiter resumes where the
//! critical section's data is cached. `off` sets `footprint::locks::placement::set_lock_hot(false)`
//! for the whole run: every wake-up then passes `Placement::Anywhere`.
//!
//! Every benchmark runs `THREADS` (8) threads (on 2 workers or 2 CPUs: 4 per processor, the
//! oversubscribed case where waiters park and wake-ups are placed); each does a fixed number of
//! operations with ≈100 ns of private work (a dependent multiply-add chain) between two
//! critical sections, as 000's threads "perform some work in between successive locking
//! operations". One criterion iteration is one whole run of all threads, timed from the first
//! thread's start (each reads the clock itself after a start barrier) to the last thread's end
//! (`iter_custom`: building the data, spawning and joining are not timed). After each run the
//! result is checked, so a wrong run fails loudly.
//!
//! The seven, each mapped to 000 §3.2.1:
//! - `single_ctr`: one counter (its own cache line) behind one lock; every thread increments it
//!   `OPS` times. Check: the exact total.
//! - `multiple_ctr`: an array of per-thread counters (one cache line each) behind one lock; each
//!   thread increments its own. Check: every counter is exactly `OPS`.
//! - `doubly_list`: a doubly linked list (index links in an arena, 64 nodes of 64 bytes) behind one
//!   lock; each operation dequeues the head under the lock (and updates the node), works, and
//!   enqueues it at the tail under a second acquisition. Check: the list walks forward and
//!   backward with consistent links, holds every node once, and the node visit counts sum to
//!   `THREADS × OPS`.
//! - `prod_cons`: one bounded FIFO (16 slots) behind one lock with two condition variables; half
//!   the threads produce `ITEMS` items each, the other half consume as many. Check: every item
//!   consumed once (count and sum), and each consumer saw each producer's items in order.
//! - `affinity`: two locks, two 128-byte counter blocks; in even phases lock 0 guards block 0 and
//!   lock 1 block 1, in odd phases the other way round (the blocks swap between the locks at a
//!   barrier, which the phases need anyway); even threads use lock 0, odd ones lock 1. Check: each
//!   block's exact count, and which block each lock holds at the end.
//! - `mlt_ctr_mlt_lock`: per-thread counters split into 4 segments, one lock each; thread `i`
//!   takes lock `i % 4` and increments its counter. Check: every counter is exactly `OPS`.
//! - `multiple_fifo`: one bounded FIFO per producer/consumer pair (4 FIFOs, 4 locks); each pair
//!   uses only its own. Check: each consumer received `0..ITEMS` exactly in order.
//!
//! Variants: `footprint/lockhot_on`, `footprint/lockhot_off` (`footprint::sync::Mutex`, `Condvar`,
//! `Barrier`, green threads on a 2-worker runtime built once), `footprint/adaptive` (lock-hot on,
//! a runtime built once with `adaptive_workers(1..=2)`: the controller picks 1 or 2 active
//! workers from the profile, 003), `footprint/poll` (lock-hot on, contended green threads under
//! `GreenLockWait::Poll`, the rule compared on many cores: `footprint::locks::green_wait`) and
//! `std` (8 OS threads, `std::sync` primitives).
//!
//! Run: `cargo bench --bench lock_hot -- --warm-up-time 1 --measurement-time 3`. Criterion times
//! one variant after another for seconds each; for ratios that the machine cannot shift between
//! them, `cargo run --release --example lock_hot_probe -- all 200 alternating` (benches/README.md).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use footprint::locks::green_wait::{self, GreenLockWait};
use footprint::locks::placement;

use footprint_workloads::lock_hot as bodies;

use bodies::{Green, LockBench, OsThreads, ALL, THREADS, WORKERS};

/// One benchmark, five variants side by side.
fn compare(c: &mut Criterion, green: &Green, adaptive: &Green, bench: &LockBench) {
    let mut g = c.benchmark_group(bench.name);
    // One iteration is a whole run (milliseconds): few samples are enough.
    g.sample_size(10);
    for (id, lock_hot) in [
        ("footprint/lockhot_on", true),
        ("footprint/lockhot_off", false),
    ] {
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                placement::set_lock_hot(lock_hot);
                let t: Duration = (0..iters).map(|_| (bench.green)(green)).sum();
                placement::set_lock_hot(true);
                t
            })
        });
    }
    // The rule for contended green threads under comparison on many cores (lock-hot on).
    g.bench_function("footprint/poll", |b| {
        b.iter_custom(|iters| {
            green_wait::with_green_lock_wait(GreenLockWait::Poll, || {
                (0..iters).map(|_| (bench.green)(green)).sum::<Duration>()
            })
        })
    });
    g.bench_function("footprint/adaptive", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| (bench.green)(adaptive)).sum())
    });
    g.bench_function("std", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| (bench.os)(&OsThreads::default())).sum())
    });
    g.finish();
}

fn lock_hot(c: &mut Criterion) {
    let rt = footprint::Runtime::builder()
        .workers(WORKERS)
        .build()
        .unwrap_or_else(|e| panic!("a {WORKERS}-worker runtime: {e}"));
    let green = Green {
        rt,
        threads: THREADS,
    };
    let adaptive = footprint::Runtime::builder()
        .adaptive_workers(1..=WORKERS)
        .build()
        .unwrap_or_else(|e| panic!("an adaptive 1..={WORKERS}-worker runtime: {e}"));
    let adaptive = Green {
        rt: adaptive,
        threads: THREADS,
    };
    for bench in &ALL {
        compare(c, &green, &adaptive, bench);
    }
}

use footprint_workloads::short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = lock_hot
}
criterion_main!(benches);
