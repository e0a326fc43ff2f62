//! The workloads of the adaptive bench (`benches/adaptive.rs`): the same program on a runtime with
//! a fixed worker count and on an adaptive one (`Builder::adaptive_workers`). Each reports its
//! units of work with `footprint::progress`, as a program that offers it would.

pub use crate::work::work;

use footprint::sync::{Barrier, Mutex};
use footprint::Runtime;
use std::time::{Duration, Instant};

/// Green threads of the lock-bound and multiprogrammed programs.
pub const GREEN: usize = 8;
/// Words of shared data the lock-bound critical section updates (32 KiB: it moves between the
/// cores' private caches at every hand-off between workers, and stays put on one worker).
pub const SHARED_WORDS: usize = 4096;
/// Leaves of one fork-join round and the work units of each.
pub const LEAVES: usize = 64;
pub const LEAF_UNITS: u64 = 20_000;

/// The CPUs the process may use (at least 1).
pub fn cpus() -> usize {
    footprint::affinity::allowed_cpus().map_or(1, |c| c.len().max(1))
}

/// The configurations compared side by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Config {
    Fixed(usize),
    Adaptive(usize, usize),
}

impl Config {
    /// Fixed 1, half the CPUs and all of them (the duplicates dropped: 1 and 2 on a 2-CPU
    /// machine, 1, 8 and 16 on 16), then adaptive over all of them, `1..=cpus`, where `cpus`
    /// is the CPUs the process may use.
    pub fn all() -> Vec<Config> {
        let max = cpus();
        let mut fixed = vec![1, max / 2, max];
        fixed.retain(|&n| n >= 1);
        fixed.dedup();
        let mut v: Vec<Config> = fixed.into_iter().map(Config::Fixed).collect();
        v.push(Config::Adaptive(1, max));
        v
    }

    pub fn name(self) -> String {
        match self {
            Config::Fixed(n) => format!("fixed_{n}"),
            Config::Adaptive(a, b) => format!("adaptive_{a}-{b}"),
        }
    }

    pub fn build(self) -> Runtime {
        let b = Runtime::builder();
        match self {
            // an experiment's explicit count: more workers than CPUs is meant
            Config::Fixed(n) => b.workers(n).oversubscribe(true),
            Config::Adaptive(a, b2) => b.adaptive_workers(a..=b2),
        }
        .build()
        .expect("runtime")
    }
}

/// Lock-bound: `GREEN` threads each take one mutex `iters` times; inside, a pass over
/// `SHARED_WORDS` shared words; nothing outside.
pub fn lock_bound(rt: &Runtime, iters: u64) -> Duration {
    let data = Mutex::new(vec![0u64; SHARED_WORDS]);
    let start = Instant::now();
    rt.block_on(|| {
        footprint::scope(|s| {
            for t in 0..GREEN as u64 {
                let data = &data;
                s.spawn(move || {
                    for i in 0..iters {
                        let mut d = data.lock();
                        for (k, w) in d.iter_mut().enumerate() {
                            *w = w.wrapping_add(t ^ i ^ k as u64);
                        }
                        drop(d);
                        footprint::progress(1);
                    }
                });
            }
        })
    });
    start.elapsed()
}

/// Compute-bound fork-join: `iters` rounds of `LEAVES` leaves of `LEAF_UNITS` work, split with
/// `join`.
pub fn fork_join(rt: &Runtime, iters: u64) -> Duration {
    fn leaves(lo: usize, hi: usize, seed: u64) -> u64 {
        if hi - lo == 1 {
            let r = work(LEAF_UNITS, seed ^ lo as u64);
            footprint::progress(1);
            return r;
        }
        let mid = (lo + hi) / 2;
        let (a, b) = footprint::join(|| leaves(lo, mid, seed), || leaves(mid, hi, seed));
        a ^ b
    }
    let start = Instant::now();
    rt.block_on(|| {
        for i in 0..iters {
            std::hint::black_box(leaves(0, LEAVES, i));
        }
    });
    start.elapsed()
}

/// Phase-changing: a lock-bound phase of `lock_iters` iterations, then a compute phase of
/// `rounds` fork-join rounds, `iters` times.
pub fn phases(rt: &Runtime, iters: u64, lock_iters: u64, rounds: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        total += lock_bound(rt, lock_iters);
        total += fork_join(rt, rounds);
    }
    total
}

/// 002's lock-and-barrier loop on `GREEN` green threads: each iteration takes the lock, works
/// `INSIDE` units, releases it and works `OUTSIDE`; every `BARRIER_EVERY` iterations all meet.
pub fn lock_barrier(rt: &Runtime, iters: u64) -> Duration {
    const INSIDE: u64 = 40;
    const OUTSIDE: u64 = 400;
    const BARRIER_EVERY: u64 = 16;
    let lock = Mutex::new(0u64);
    let barrier = Barrier::new(GREEN);
    let start = Instant::now();
    rt.block_on(|| {
        footprint::scope(|s| {
            for t in 0..GREEN as u64 {
                let (lock, barrier) = (&lock, &barrier);
                s.spawn(move || {
                    for i in 0..iters {
                        {
                            let mut g = lock.lock();
                            work(INSIDE, *g);
                            *g += 1;
                        }
                        work(OUTSIDE, t + i);
                        footprint::progress(1);
                        if i % BARRIER_EVERY == BARRIER_EVERY - 1 {
                            barrier.wait();
                        }
                    }
                });
            }
        })
    });
    assert_eq!(*lock.lock(), GREEN as u64 * iters, "lost lock updates");
    start.elapsed()
}

/// Runs `f` in batches for at least `min` (so that a runtime that settled on another workload
/// notices the change) and then until the adaptive runtime's search has settled (at most
/// `limit` in all); a no-op for fixed runtimes. Returns whether it settled.
pub fn settle(rt: &Runtime, min: Duration, limit: Duration, mut f: impl FnMut(&Runtime)) -> bool {
    let Some(_) = rt.stats().adaptive else {
        return true;
    };
    let start = Instant::now();
    while start.elapsed() < limit {
        f(rt);
        if start.elapsed() >= min && rt.stats().adaptive.is_some_and(|a| a.settled) {
            return true;
        }
    }
    false
}

/// The adaptive runtime's state in one line (for the bench's log).
pub fn describe(rt: &Runtime) -> String {
    let Some(a) = rt.stats().adaptive else {
        return format!("{} workers", rt.workers());
    };
    let last = a
        .decisions
        .last()
        .map_or("-".to_string(), |d| d.reason.to_string());
    // How often each reason came up among the kept decisions.
    let mut reasons: Vec<(String, usize)> = Vec::new();
    for d in &a.decisions {
        let r = format!("{:?}", d.reason);
        match reasons.iter_mut().find(|(n, _)| *n == r) {
            Some((_, c)) => *c += 1,
            None => reasons.push((r, 1)),
        }
    }
    let reasons: Vec<String> = reasons.iter().map(|(r, c)| format!("{r} x{c}")).collect();
    format!(
        "adaptive: {} active (wants {}), {} decisions ({}), last: {last}; controller {:.3} % of a core",
        a.active,
        a.wanted,
        a.decisions_total,
        reasons.join(", "),
        100.0 * a.controller_share()
    )
}

/// Prints the adaptive runtime's stats (their `Display`: a summary, then the kept decisions one
/// a line with its time; for the bench's log), and before them, with
/// `FOOTPRINT_ADAPTIVE_SAMPLES=1` in the environment, every sampled interval it decided on.
/// Nothing for fixed runtimes.
pub fn log_decisions(rt: &Runtime) {
    let Some(a) = rt.stats().adaptive else {
        return;
    };
    if std::env::var_os("FOOTPRINT_ADAPTIVE_SAMPLES").is_some_and(|v| v == "1") {
        for s in rt.adaptive_samples() {
            eprintln!(
                "    {:7.2} s  active {}  cpu {:.2}  lock {:?}  throughput {:?}/s  others {:?}  involuntary {:.0}/s",
                s.at.as_secs_f64(),
                s.active,
                s.cpu,
                s.lock_time.map(|v| (v * 100.0).round() / 100.0),
                s.throughput.map(f64::round),
                s.others.map(|v| (v * 10.0).round() / 10.0),
                s.involuntary_per_s
            );
        }
    }
    eprint!("{a}"); // its summary, then each kept decision with its time
}
