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
//! Runtimes are built once per benchmark, outside the timed loop; `iter_custom` times the loop
//! inside the green thread so that `block_on`'s own start-up is not measured.
//!
//! Run: `cargo bench --bench runtime_micro -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::time::Instant;

use corosensei::{Coroutine, CoroutineResult};
use criterion::{criterion_group, criterion_main, Criterion};

/// `may` is configured once per process, before its scheduler starts: one worker, so that its
/// yield is measured like ours (two coroutines sharing one worker).
fn configure_may() {
    may::config().set_workers(1).set_stack_size(0x1000);
}

fn yield_benches(c: &mut Criterion) {
    configure_may();
    let mut group = c.benchmark_group("yield");

    let rt = green::runtime(1);
    group.bench_function("footprint", |b| {
        b.iter_custom(|iters| rt.block_on(|| green::yield_pair(iters)))
    });

    group.bench_function("may", |b| {
        b.iter_custom(|iters| {
            let timer = may::go!(move || {
                // may runs a new coroutine only when its worker's local queue is empty, and a
                // yielding coroutine never leaves it empty: block on a channel until the partner
                // runs, so that both are in the local queue and alternate.
                let (started_tx, started_rx) = may::sync::mpsc::channel();
                let partner = may::go!(move || {
                    started_tx.send(()).expect("the timer waits for this");
                    for _ in 0..iters {
                        may::coroutine::yield_now();
                    }
                });
                started_rx.recv().expect("the partner starts");
                let start = Instant::now();
                for _ in 0..iters {
                    may::coroutine::yield_now();
                }
                partner.join().expect("the partner does not panic");
                start.elapsed() / 2
            });
            timer.join().expect("the timing coroutine does not panic")
        })
    });

    group.bench_function("corosensei_resume_suspend", |b| {
        let mut co: Coroutine<(), (), ()> = Coroutine::new(|yielder, ()| loop {
            yielder.suspend(());
        });
        b.iter(|| match co.resume(()) {
            CoroutineResult::Yield(()) => {}
            CoroutineResult::Return(()) => unreachable!("the coroutine loops forever"),
        });
        // The coroutine is dropped suspended: corosensei unwinds its stack.
    });
    group.finish();
}

fn spawn_join_benches(c: &mut Criterion) {
    configure_may();
    let mut group = c.benchmark_group("spawn_join");

    for workers in [1, 2] {
        let rt = footprint::Runtime::builder()
            .workers(workers)
            .build()
            .expect("a runtime");
        group.bench_function(format!("footprint_{workers}w"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(|| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let h = footprint::spawn(|| black_box(0u64));
                        black_box(h.join().expect("an empty thread does not panic"));
                    }
                    start.elapsed()
                })
            })
        });
    }

    group.bench_function("may_1w", |b| {
        b.iter_custom(|iters| {
            may::go!(move || {
                let start = Instant::now();
                for _ in 0..iters {
                    let h = may::go!(|| black_box(0u64));
                    black_box(h.join().expect("an empty coroutine does not panic"));
                }
                start.elapsed()
            })
            .join()
            .expect("the timing coroutine does not panic")
        })
    });

    group.bench_function("std_thread", |b| {
        b.iter(|| {
            let h = std::thread::spawn(|| black_box(0u64));
            black_box(h.join().expect("an empty thread does not panic"))
        })
    });
    group.finish();
}

#[path = "common/green.rs"]
mod green;
#[path = "common/short.rs"]
mod short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = yield_benches, spawn_join_benches
}
criterion_main!(benches);
