//! Locks and barriers against `std::sync::Mutex`, `parking_lot::Mutex` and `std::sync::Barrier`,
//! side by side in one run.
//!
//! `cargo bench -p footprint-hpc-locks --bench locks -- --warm-up-time 1 --measurement-time 3`
//!
//! Groups (all times are per lock acquisition or per barrier episode):
//! - `uncontended`: one thread, acquire + release;
//! - `contended2/{empty,1us}`: 2 threads, critical section empty or ≈1 µs, nothing outside;
//!   `contended2_pinned/…`: the same with the kernel's oversubscription signal pinned to "no"
//!   (a dedicated 2-core machine; this one is shared with other builds);
//! - `oversub{4,8}`: 4 or 8 OS threads (more than the CPUs here), ≈100 ns inside and ≈1 µs of
//!   work outside the critical section (002's lock loop under multiprogramming);
//! - `bound_read`: a branch-and-bound search's bound — 2 OS threads (what a 2-thread rayon pool runs
//!   on) each read a shared bound under the lock at every node, with ≈20 ns of node work
//!   between two reads; time per read;
//! - `barrier2`: episode latency with 2 threads; `barrier_oversub{4,8}`: episodes with 4 or 8
//!   threads and ≈1 µs of work per phase.
//!
//! Multi-threaded benches use `iter_custom`: threads are started and lined up before the clock
//! starts; the time is from the first thread's start to the last thread's end.
#![cfg(not(loom))]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use footprint_locks::*;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use footprint_workloads::calibrated::{units_per_us, work};

/// Anything lockable: runs `f` under the lock.
trait Lockable: Send + Sync + 'static {
    fn new_lock() -> Self;
    fn with(&self, f: impl FnOnce(&mut u64));
}

impl<R: lock_api::RawMutex + Send + Sync + 'static> Lockable for lock_api::Mutex<R, u64> {
    fn new_lock() -> Self {
        lock_api::Mutex::new(0)
    }
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock())
    }
}

struct StdMutex(std::sync::Mutex<u64>);
impl Lockable for StdMutex {
    fn new_lock() -> Self {
        StdMutex(std::sync::Mutex::new(0))
    }
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.0.lock().unwrap())
    }
}

/// Runs `threads` threads doing `iters` acquisitions in total; returns the elapsed time from the
/// first start to the last end.
fn run_threads(threads: usize, iters: u64, body: Arc<dyn Fn(u64) + Send + Sync>) -> Duration {
    let start_line = Arc::new(std::sync::Barrier::new(threads));
    let per = iters.div_ceil(threads as u64);
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let (b, body) = (start_line.clone(), body.clone());
            std::thread::spawn(move || {
                b.wait();
                let s = Instant::now();
                body(per);
                (s, Instant::now())
            })
        })
        .collect();
    let spans: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    let first = spans.iter().map(|s| s.0).min().unwrap();
    let last = spans.iter().map(|s| s.1).max().unwrap();
    (last - first).mul_f64(iters as f64 / (per * threads as u64) as f64)
}

fn lock_loop<L: Lockable>(threads: usize, inside: u64, outside: u64) -> impl Fn(u64) -> Duration {
    move |iters| {
        let lock = Arc::new(L::new_lock());
        let l = lock.clone();
        run_threads(
            threads,
            iters,
            Arc::new(move |n| {
                for _ in 0..n {
                    l.with(|v| {
                        *v += 1;
                        if inside > 0 {
                            work(inside);
                        }
                    });
                    if outside > 0 {
                        work(outside);
                    }
                }
            }),
        )
    }
}

macro_rules! for_locks {
    ($m:ident, $($args:tt)*) => {
        $m!(std_mutex, StdMutex, $($args)*);
        $m!(parking_lot, parking_lot::Mutex<u64>, $($args)*);
        $m!(default_mutex, Mutex<u64>, $($args)*);
        $m!(ttas, TtasMutex<u64>, $($args)*);
        $m!(ticket, TicketMutex<u64>, $($args)*);
        $m!(mcs, McsMutex<u64>, $($args)*);
        $m!(array, ArrayMutex<u64>, $($args)*);
    };
}

macro_rules! for_spin_locks {
    ($m:ident, $($args:tt)*) => {
        $m!(spin_ttas, SpinTtasMutex<u64>, $($args)*);
        $m!(spin_ticket, SpinTicketMutex<u64>, $($args)*);
        $m!(spin_mcs, SpinMcsMutex<u64>, $($args)*);
        $m!(spin_array, SpinArrayMutex<u64>, $($args)*);
    };
}

fn uncontended(c: &mut Criterion) {
    let mut g = c.benchmark_group("uncontended");
    macro_rules! one {
        ($name:ident, $ty:ty, $g:ident) => {{
            let l = <$ty as Lockable>::new_lock();
            $g.bench_function(stringify!($name), |b| b.iter(|| l.with(|v| *v += 1)));
        }};
    }
    for_locks!(one, g);
    for_spin_locks!(one, g);
    g.finish();
}

fn contended2(c: &mut Criterion) {
    contended2_groups(c, "contended2");
}

/// `contended2` again with the kernel's oversubscription signal pinned to "no": what the informing
/// locks do on a dedicated 2-core machine, measured on this shared one (where other builds make
/// `/proc/loadavg` report more runnable threads than CPUs).
fn contended2_pinned(c: &mut Criterion) {
    os::force_oversubscribed(Some(false));
    contended2_groups(c, "contended2_pinned");
    os::force_oversubscribed(None);
}

/// Two threads on every lock, with an empty and a 1 µs critical section: the groups
/// `{prefix}/empty` and `{prefix}/1us`.
fn contended2_groups(c: &mut Criterion, prefix: &str) {
    let us = units_per_us();
    for (label, inside) in [("empty", 0u64), ("1us", us)] {
        let mut g = c.benchmark_group(format!("{prefix}/{label}"));
        macro_rules! one {
            ($name:ident, $ty:ty, $g:ident) => {{
                let f = lock_loop::<$ty>(2, inside, 0);
                $g.bench_function(stringify!($name), |b| b.iter_custom(|n| f(n)));
            }};
        }
        for_locks!(one, g);
        for_spin_locks!(one, g);
        g.finish();
    }
}

fn oversubscribed(c: &mut Criterion) {
    let us = units_per_us();
    for threads in [4usize, 8] {
        let mut g = c.benchmark_group(format!("oversub{threads}"));
        macro_rules! one {
            ($name:ident, $ty:ty, $g:ident) => {{
                let f = lock_loop::<$ty>(threads, us / 10, us);
                $g.bench_function(stringify!($name), |b| b.iter_custom(|n| f(n)));
            }};
        }
        for_locks!(one, g);
        one!(block_mcs, BlockMcsMutex<u64>, g);
        one!(spin_ttas, SpinTtasMutex<u64>, g);
        g.finish();
    }
}

/// A branch-and-bound search reads the best bound found so far under a mutex at every node: a
/// read of a few nanoseconds, taken tens of millions of times by each thread of the pool, with a
/// little work per node in between (here ≈20 ns), and a rare update.
fn bound_loop<L: Lockable>() -> impl Fn(u64) -> Duration {
    let node_work = (units_per_us() / 50).max(1);
    move |iters| {
        let lock = Arc::new(L::new_lock());
        let l = lock.clone();
        run_threads(
            2,
            iters,
            Arc::new(move |n| {
                let mut seen = 0u64;
                for i in 0..n {
                    l.with(|bound| {
                        seen = seen.wrapping_add(*bound);
                        // One node in 4096 improves the bound.
                        if i % 4096 == 0 {
                            *bound += 1;
                        }
                    });
                    work(node_work);
                }
                black_box(seen);
            }),
        )
    }
}

fn bound_read(c: &mut Criterion) {
    let mut g = c.benchmark_group("bound_read");
    macro_rules! one {
        ($name:ident, $ty:ty, $g:ident) => {{
            let f = bound_loop::<$ty>();
            $g.bench_function(stringify!($name), |b| b.iter_custom(|n| f(n)));
        }};
    }
    one!(std_mutex, StdMutex, g);
    one!(parking_lot, parking_lot::Mutex<u64>, g);
    one!(default_mutex, Mutex<u64>, g);
    g.finish();
}

/// Anything that is a barrier.
trait Waitable: Send + Sync + 'static {
    fn with_n(n: usize) -> Self;
    fn wait_leader(&self) -> bool;
}
impl Waitable for std::sync::Barrier {
    fn with_n(n: usize) -> Self {
        std::sync::Barrier::new(n)
    }
    fn wait_leader(&self) -> bool {
        self.wait().is_leader()
    }
}
macro_rules! waitable {
    ($($ty:ident),*) => {$(
        impl<W: WaitPolicy> Waitable for $ty<W> {
            fn with_n(n: usize) -> Self {
                $ty::new(n)
            }
            fn wait_leader(&self) -> bool {
                self.wait().is_leader()
            }
        }
    )*};
}
waitable!(CentralBarrier, TreeBarrier, DisseminationBarrier);

fn barrier_loop<B: Waitable>(threads: usize, outside: u64) -> impl Fn(u64) -> Duration {
    move |iters| {
        let b = Arc::new(B::with_n(threads));
        let leaders = Arc::new(AtomicU64::new(0));
        let (b2, l2) = (b.clone(), leaders.clone());
        // Every thread does all `iters` episodes: run_threads splits by thread, so scale up.
        let d = run_threads(
            threads,
            iters * threads as u64,
            Arc::new(move |n| {
                for _ in 0..n {
                    if outside > 0 {
                        work(outside);
                    }
                    if b2.wait_leader() {
                        l2.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }),
        );
        assert_eq!(leaders.load(Ordering::Relaxed), iters);
        d.mul_f64(1.0 / threads as f64)
    }
}

fn barriers(c: &mut Criterion) {
    let us = units_per_us();
    for (threads, outside, label) in [
        (2usize, 0u64, "barrier2"),
        (4, us, "barrier_oversub4"),
        (8, us, "barrier_oversub8"),
    ] {
        let mut g = c.benchmark_group(label);
        macro_rules! one {
            ($name:ident, $ty:ty) => {{
                let f = barrier_loop::<$ty>(threads, outside);
                g.bench_function(stringify!($name), |b| b.iter_custom(|n| f(n)));
            }};
        }
        one!(std_barrier, std::sync::Barrier);
        one!(central, CentralBarrier<Informed>);
        one!(tree, TreeBarrier<Informed>);
        one!(dissemination, DisseminationBarrier<Informed>);
        one!(block_central, CentralBarrier<ImmediateBlock>);
        if threads <= 2 {
            one!(spin_central, CentralBarrier<AlwaysSpin>);
            one!(spin_tree, TreeBarrier<AlwaysSpin>);
            one!(spin_dissemination, DisseminationBarrier<AlwaysSpin>);
        }
        g.finish();
    }
    let _ = BenchmarkId::new("unused", 0);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = uncontended, contended2, contended2_pinned, oversubscribed, bound_read, barriers
}
criterion_main!(benches);
