//! Two-thread contention probe: the default `Mutex` against `std::sync::Mutex` and
//! `parking_lot::Mutex`, interleaved in one process so that a shared machine's load drifts over
//! all three alike.
//!
//! `cargo run --release -p footprint-hpc-locks --example contend_probe -- [empty|bound|oversub8] [ROUNDS] [ITERS]`
//!
//! Each round runs every lock once on the chosen loop (`ITERS` acquisitions in all) and prints the
//! nanoseconds per acquisition; the last line gives the medians and the default `Mutex`'s
//! ratios to each peer (median of the per-round ratios):
//! - `empty`: 2 threads, empty critical section, nothing outside (criterion's `contended2/empty`);
//! - `bound`: 2 threads, a read under the lock and ≈20 ns of work outside (`bound_read`);
//! - `oversub8`: 8 threads, ≈100 ns inside and ≈1 µs outside (`oversub8`).
#![cfg(not(loom))]

use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use footprint_workloads::calibrated::{units_per_us, work};

/// Anything lockable: runs `f` under the lock.
trait Lockable: Send + Sync + 'static {
    fn with(&self, f: impl FnOnce(&mut u64));
}

impl Lockable for std::sync::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock().expect("never poisoned"))
    }
}

impl Lockable for parking_lot::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock())
    }
}

impl Lockable for footprint_locks::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock())
    }
}

/// The loop's shape: threads, work inside and outside the critical section (units).
#[derive(Clone, Copy)]
struct Shape {
    threads: usize,
    inside: u64,
    outside: u64,
}

/// Runs `shape.threads` threads taking `lock` `iters` times in all; returns ns per acquisition
/// and checks that every increment was counted.
fn run<L: Lockable>(lock: Arc<L>, shape: Shape, iters: u64) -> f64 {
    let per = iters / shape.threads as u64;
    let line = Arc::new(Barrier::new(shape.threads));
    let hs: Vec<_> = (0..shape.threads)
        .map(|_| {
            let (l, line) = (lock.clone(), line.clone());
            std::thread::spawn(move || {
                line.wait();
                let s = Instant::now();
                for _ in 0..per {
                    l.with(|v| {
                        *v += 1;
                        if shape.inside > 0 {
                            work(shape.inside);
                        }
                    });
                    if shape.outside > 0 {
                        work(shape.outside);
                    }
                }
                (s, Instant::now())
            })
        })
        .collect();
    let spans: Vec<(Instant, Instant)> = hs
        .into_iter()
        .map(|h| h.join().expect("probe thread panicked"))
        .collect();
    let first = spans.iter().map(|s| s.0).min().expect("threads ran");
    let last = spans.iter().map(|s| s.1).max().expect("threads ran");
    let mut total = 0;
    lock.with(|v| total = *v);
    assert_eq!(total, per * shape.threads as u64, "every increment counted");
    let d: Duration = last - first;
    d.as_nanos() as f64 / (per * shape.threads as u64) as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Two-thread contention probe: the default `Mutex` against `std::sync::Mutex` and
/// `parking_lot::Mutex`, interleaved in one process; ns per acquisition per round, then the
/// medians and the default `Mutex`'s ratios to each peer.
#[derive(Parser)]
#[command(name = "contend_probe")]
struct Args {
    /// The loop
    #[arg(value_enum, default_value_t = Loop::Empty)]
    which: Loop,
    /// Rounds (each runs every lock once)
    #[arg(default_value = "9")]
    rounds: NonZeroUsize,
    /// Acquisitions per lock and round [default: 4,000,000 for empty, 2,000,000 for bound,
    /// 200,000 for oversub8]
    iters: Option<u64>,
}

/// The loop the threads run (see the file's top comment).
#[derive(Clone, Copy, ValueEnum)]
enum Loop {
    /// 2 threads, empty critical section, nothing outside.
    Empty,
    /// 2 threads, a read under the lock and ≈20 ns of work outside.
    Bound,
    /// 8 threads, ≈100 ns inside and ≈1 µs outside.
    Oversub8,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let which = args
        .which
        .to_possible_value()
        .expect("every loop has a name")
        .get_name()
        .to_string();
    let rounds = args.rounds.get();
    let us = units_per_us();
    let (shape, default_iters) = match args.which {
        Loop::Empty => (
            Shape {
                threads: 2,
                inside: 0,
                outside: 0,
            },
            4_000_000,
        ),
        Loop::Bound => (
            Shape {
                threads: 2,
                inside: 0,
                outside: (us / 50).max(1),
            },
            2_000_000,
        ),
        Loop::Oversub8 => (
            Shape {
                threads: 8,
                inside: us / 10,
                outside: us,
            },
            200_000,
        ),
    };
    let iters: u64 = args.iters.unwrap_or(default_iters);
    let (mut d, mut s, mut p, mut to_std, mut to_pl) = (vec![], vec![], vec![], vec![], vec![]);
    for r in 0..rounds {
        // Rotate the order so that none of the three always runs first.
        let mut t = [0.0; 3];
        for k in 0..3 {
            match (k + r) % 3 {
                0 => t[0] = run(Arc::new(footprint_locks::Mutex::new(0u64)), shape, iters),
                1 => t[1] = run(Arc::new(std::sync::Mutex::new(0u64)), shape, iters),
                _ => t[2] = run(Arc::new(parking_lot::Mutex::new(0u64)), shape, iters),
            }
        }
        println!(
            "round {r}: default {:.1} ns, std {:.1} ns, parking_lot {:.1} ns",
            t[0], t[1], t[2]
        );
        d.push(t[0]);
        s.push(t[1]);
        p.push(t[2]);
        to_std.push(t[0] / t[1]);
        to_pl.push(t[0] / t[2]);
    }
    println!(
        "{which}: medians default {:.1} ns, std {:.1} ns, parking_lot {:.1} ns; default/std {:.2}, default/parking_lot {:.2}",
        median(&mut d),
        median(&mut s),
        median(&mut p),
        median(&mut to_std),
        median(&mut to_pl)
    );
    ExitCode::SUCCESS
}
