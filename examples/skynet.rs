//! Skynet in one process, for time and peak memory: a 10-ary tree of spawns down to `--leaves`
//! leaves (default 1,000,000), summed. Run each implementation in its own process so that the
//! peak resident set size belongs to it alone:
//!
//! ```text
//! cargo run --release --example skynet -- --impl footprint
//! cargo run --release --example skynet -- --impl rayon
//! cargo run --release --example skynet -- --impl may
//! ```
//!
//! Options: `--impl footprint|rayon|may`, `--leaves <power of ten>`, `--workers <n>` (default 2),
//! `--runs <n>` (default 3; the best run is reported as `best`, every run as `runs`).

use clap::{Parser, ValueEnum};
use footprint_workloads::{cli, skynet};

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Skynet: a 10-ary tree of spawns whose leaves return their own number, summed; one
/// implementation per process (so that each one's peak memory is its own).
#[derive(Parser)]
#[command(name = "skynet")]
struct Options {
    /// The implementation
    #[arg(long = "impl", value_enum, default_value_t = Impl::Footprint)]
    implementation: Impl,
    /// Leaves: a power of ten of at least 10
    #[arg(long, default_value_t = 1_000_000, value_parser = power_of_ten)]
    leaves: u64,
    /// Workers (threads of the peers)
    #[arg(long, default_value = "2", value_parser = cli::positive_count)]
    workers: usize,
    /// Runs
    #[arg(long, default_value = "3", value_parser = cli::positive_count)]
    runs: usize,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Impl {
    /// `footprint::spawn` + join.
    Footprint,
    /// `rayon::scope`.
    Rayon,
    /// `may::go!` + join.
    May,
}

/// `--leaves`: a power of ten of at least 10.
fn power_of_ten(v: &str) -> Result<u64, String> {
    v.parse()
        .ok()
        .filter(|&n| skynet::is_power_of_ten(n) && n >= 10)
        .ok_or_else(|| format!("a power of ten of at least 10 is needed, got {v:?}"))
}

/// Peak resident set size of this process in KiB: `getrusage(RUSAGE_SELF).ru_maxrss`.
fn peak_rss_kib() -> Option<u64> {
    // SAFETY: rusage is plain data, for which all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF is a valid `who`, and the pointer refers to a live, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    // On Linux ru_maxrss is in KiB.
    (rc == 0).then(|| u64::try_from(usage.ru_maxrss).unwrap_or(0))
}

fn run(options: &Options) -> Result<Vec<Duration>, String> {
    let leaves = options.leaves;
    let expected = skynet::expected(leaves);
    let mut times = Vec::with_capacity(options.runs);
    let mut check = |sum: u64, start: Instant| {
        let elapsed = start.elapsed();
        if sum != expected {
            return Err(format!("wrong sum {sum}, expected {expected}"));
        }
        times.push(elapsed);
        Ok(())
    };
    match options.implementation {
        Impl::Footprint => {
            let rt = footprint::Runtime::builder()
                .workers(options.workers)
                .oversubscribe(true) // an experiment's explicit count: more workers than CPUs is meant
                .build()
                .map_err(|e| format!("building the footprint runtime failed: {e}"))?;
            for _ in 0..options.runs {
                let start = Instant::now();
                check(rt.block_on(|| skynet::footprint_spawn(0, leaves)), start)?;
            }
        }
        Impl::Rayon => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(options.workers)
                .build()
                .map_err(|e| format!("building the rayon pool failed: {e}"))?;
            for _ in 0..options.runs {
                let start = Instant::now();
                check(pool.install(|| skynet::rayon_scope(0, leaves)), start)?;
            }
        }
        Impl::May => {
            may::config().set_workers(options.workers);
            for _ in 0..options.runs {
                let start = Instant::now();
                let sum = may::go!(move || skynet::may_spawn(0, leaves))
                    .join()
                    .map_err(|_| {
                        "a may coroutine panicked (beyond ~30,000 live coroutines may runs out \
                         of memory maps: see vm.max_map_count)"
                            .to_string()
                    })?;
                check(sum, start)?;
            }
        }
    }
    Ok(times)
}

fn main() -> ExitCode {
    let options = Options::parse();
    // A failing run (may out of memory maps) panics in every coroutine: print the first only.
    let default_hook = std::panic::take_hook();
    let reported = AtomicBool::new(false);
    std::panic::set_hook(Box::new(move |info| {
        if !reported.swap(true, Ordering::Relaxed) {
            default_hook(info);
        }
    }));
    match run(&options) {
        Ok(times) => {
            let best = times.iter().min().copied().unwrap_or_default();
            let runs: Vec<String> = times
                .iter()
                .map(|t| format!("{:.1}", t.as_secs_f64() * 1e3))
                .collect();
            let rss = peak_rss_kib().map_or_else(
                || "unknown".to_string(),
                |kib| format!("{:.1}", kib as f64 / 1024.0),
            );
            println!(
                "impl={:?} leaves={} workers={} sum={} best_ms={:.1} runs_ms=[{}] peak_rss_mib={}",
                options.implementation,
                options.leaves,
                options.workers,
                skynet::expected(options.leaves),
                best.as_secs_f64() * 1e3,
                runs.join(", "),
                rss
            );
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("skynet failed: {message}");
            ExitCode::FAILURE
        }
    }
}
