//! What accounting at every switch costs, in CPU time: the worker thread's CPU
//! nanoseconds per `yield_now` (two green threads ping-pong on one worker) and per spawn + join
//! from a green thread, with `Counters::Off` (the default) and `Counters::Time`.
//!
//! CPU time of the worker thread (`CLOCK_THREAD_CPUTIME_ID`), not wall time, so that the figure
//! holds on a loaded shared machine, where criterion's wall-clock rows in
//! `benches/runtime_micro.rs` move by tens of percent between runs. Each figure is the median of
//! 9 runs of 1,000,000 iterations.
//!
//! Run: `cargo run --release -p footprint-hpc-runtime --example switch_cost`

use footprint_runtime::{spawn, yield_now, Counters, Runtime};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const ITERS: u64 = 1_000_000;
const REPS: usize = 9;

/// CPU nanoseconds the calling OS thread (the worker, inside a green thread) has used.
fn thread_cpu_ns() -> u64 {
    // SAFETY: timespec is plain data; clock_gettime fills it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU ns per yield.
fn yields(rt: &Runtime) -> f64 {
    rt.block_on(|| {
        let started = Arc::new(AtomicBool::new(false));
        let s = started.clone();
        let partner = spawn(move || {
            s.store(true, Ordering::Release);
            for _ in 0..ITERS {
                yield_now();
            }
        });
        while !started.load(Ordering::Acquire) {
            yield_now();
        }
        let t0 = thread_cpu_ns();
        for _ in 0..ITERS {
            yield_now();
        }
        let t = thread_cpu_ns() - t0;
        partner.join().expect("the partner does not panic");
        t as f64 / ITERS as f64 / 2.0
    })
}

/// CPU ns per spawn + join of an empty green thread.
fn spawn_joins(rt: &Runtime) -> f64 {
    rt.block_on(|| {
        let t0 = thread_cpu_ns();
        for _ in 0..ITERS {
            let h = spawn(|| std::hint::black_box(0u64));
            std::hint::black_box(h.join().expect("an empty thread does not panic"));
        }
        (thread_cpu_ns() - t0) as f64 / ITERS as f64
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    println!("counters  yield (CPU ns)  spawn+join 1w (CPU ns)   [median of {REPS} x {ITERS}]");
    for (name, counters) in [("off", Counters::Off), ("time", Counters::Time)] {
        let rt = Runtime::builder()
            .workers(1)
            .counters(counters)
            .build()
            .expect("a one-worker runtime");
        yields(&rt); // warm-up
        let y = median((0..REPS).map(|_| yields(&rt)).collect());
        let s = median((0..REPS).map(|_| spawn_joins(&rt)).collect());
        println!("{name:<8}  {y:>14.2}  {s:>22.2}");
    }
}
