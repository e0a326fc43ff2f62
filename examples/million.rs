//! A million blocked green threads: `N` green threads wait on one `Barrier::new(N + 1)` (or on a
//! `Mutex` the spawner holds), are released, and are all joined. Prints the time of each part and
//! the peak resident set size per blocked thread.
//!
//! ```text
//! cargo run --release --example million                       # 1,000,000 on a Barrier
//! cargo run --release --example million -- --threads 10000 --wait mutex
//! ```
//!
//! Options: `--threads <n>` (default 1,000,000), `--wait barrier|mutex` (default barrier),
//! `--workers <n>` (default 2), `--stack-size <bytes>` (default 65536), `--guard-pages on|off`
//! (default on, as the runtime's: where the kernel has lightweight guard regions, Linux 6.13+, a
//! million guarded stacks fit; on older kernels guarded stacks cost two memory mappings each and
//! stop near 30,000, which the runtime says at once; see `crates/runtime/README.md`, "Limits").

use clap::{Parser, ValueEnum};
use footprint::sync::{Barrier, Mutex};
use footprint::{GreenBuilder, Runtime};
use footprint_workloads::cli;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// N green threads wait on one barrier (or on a mutex the spawner holds), are released, and are
/// all joined: the time of each part and the peak resident set size per blocked thread.
#[derive(Parser)]
#[command(name = "million")]
struct Options {
    /// Green threads (`_` separators allowed: 1_000_000)
    #[arg(long, default_value = "1_000_000", value_parser = cli::count)]
    threads: usize,
    /// What they block on
    #[arg(long, value_enum, default_value_t = Wait::Barrier)]
    wait: Wait,
    /// Workers of the runtime
    #[arg(long, default_value = "2", value_parser = cli::count)]
    workers: usize,
    /// Usable stack bytes per green thread
    #[arg(long, default_value = "65536", value_parser = cli::count)]
    stack_size: usize,
    /// Guard pages below the stacks (as the runtime's default)
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    guard_pages: OnOff,
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum Wait {
    /// One `Barrier` for all the threads.
    Barrier,
    /// A `Mutex` the spawner holds until all are blocked.
    Mutex,
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum OnOff {
    On,
    Off,
}

/// A `VmXXX:` line of `/proc/self/status` in KiB (Linux; 0 elsewhere).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Spawns `n` green threads that block, releases them, joins them; returns
/// (spawned and blocked, released and joined) in seconds.
fn run(o: &Options) -> Result<(f64, f64), footprint::Error> {
    let n = o.threads;
    let spawn_one = |f: Box<dyn FnOnce() + Send>| GreenBuilder::new().spawn(f);
    let t0 = Instant::now();
    let (blocked, joined) = match o.wait {
        Wait::Barrier => {
            let barrier = Arc::new(Barrier::new(n + 1));
            let mut handles = Vec::with_capacity(n);
            for _ in 0..n {
                let b = barrier.clone();
                handles.push(spawn_one(Box::new(move || {
                    b.wait();
                }))?);
            }
            let blocked = t0.elapsed().as_secs_f64();
            barrier.wait(); // every thread has arrived: all n are blocked here at once
            for h in handles {
                h.join().expect("a green thread panicked");
            }
            (blocked, t0.elapsed().as_secs_f64() - blocked)
        }
        Wait::Mutex => {
            let lock = Arc::new(Mutex::new(0usize));
            let guard = lock.lock();
            let started = Arc::new(AtomicUsize::new(0));
            let mut handles = Vec::with_capacity(n);
            for _ in 0..n {
                let l = lock.clone();
                let st = started.clone();
                handles.push(spawn_one(Box::new(move || {
                    st.fetch_add(1, Ordering::Relaxed);
                    *l.lock() += 1;
                }))?);
            }
            // Let every thread start and block on the lock before releasing it.
            while started.load(Ordering::Relaxed) < n {
                footprint::yield_now();
            }
            let blocked = t0.elapsed().as_secs_f64();
            drop(guard);
            for h in handles {
                h.join().expect("a green thread panicked");
            }
            assert_eq!(*lock.lock(), n, "every green thread took the lock once");
            (blocked, t0.elapsed().as_secs_f64() - blocked)
        }
    };
    Ok((blocked, joined))
}

fn main() -> ExitCode {
    let o = Options::parse();
    let rt = match Runtime::builder()
        .workers(o.workers)
        .oversubscribe(true) // an experiment's explicit count: more workers than CPUs is meant
        .stack_size(o.stack_size)
        .guard_pages(o.guard_pages == OnOff::On)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot build the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let base_kib = status_kib("VmRSS:");
    let result = rt.block_on(|| run(&o));
    let (blocked, joined) = match result {
        Ok(t) => t,
        Err(e) => {
            eprintln!("spawning failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let peak_kib = status_kib("VmHWM:");
    let per_thread = (peak_kib.saturating_sub(base_kib)) as f64 * 1024.0 / o.threads.max(1) as f64;
    println!(
        "threads={} wait={:?} workers={} stack_size={} guard_pages={} spawn_and_block_ms={:.1} \
         release_and_join_ms={:.1} total_ms={:.1} peak_rss_mib={:.1} peak_rss_per_thread_bytes={:.0} \
         stacks_mapped={}",
        o.threads,
        o.wait,
        o.workers,
        o.stack_size,
        o.guard_pages == OnOff::On,
        blocked * 1e3,
        joined * 1e3,
        (blocked + joined) * 1e3,
        peak_kib as f64 / 1024.0,
        per_thread,
        rt.stats().stacks_mapped,
    );
    ExitCode::SUCCESS
}
