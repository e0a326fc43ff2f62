//! Sleep lateness: `N` green threads each `footprint::sleep(D)` once on a runtime of `W`
//! workers, for `R` rounds; prints how late they woke (p50, p99, max over all rounds), each
//! round's wall time, and the CPU time per sleep.
//!
//! ```text
//! cargo run --release --example sleep_lateness                 # 10,000 x 1 ms on 2 workers, 5 rounds
//! cargo run --release --example sleep_lateness -- --threads 1000 --sleep-us 200 --rounds 20
//! ```
//!
//! Options: `--threads <n>` (default 10,000), `--workers <n>` (default 2), `--sleep-us <µs>`
//! (default 1,000), `--rounds <n>` (default 5). Lateness is a thread's time asleep minus `D`
//! (`sleep` never returns early; the example fails if one does).

use clap::Parser;
use footprint_workloads::{cli, sleep};

use std::process::ExitCode;
use std::time::{Duration, Instant};

/// N green threads each `footprint::sleep` once on a W-worker runtime, for R rounds: how late
/// they woke (p50, p99, max), each round's wall time, and the CPU time per sleep.
#[derive(Parser)]
#[command(name = "sleep_lateness")]
struct Options {
    /// Green threads per round (`_` separators allowed)
    #[arg(long, default_value_t = sleep::THREADS, value_parser = cli::positive_count)]
    threads: usize,
    /// Workers of the runtime
    #[arg(long, default_value_t = sleep::WORKERS, value_parser = cli::positive_count)]
    workers: usize,
    /// What each thread sleeps, in µs
    #[arg(long = "sleep-us", default_value_t = sleep::SLEEP.as_micros() as usize, value_parser = cli::count)]
    sleep_us: usize,
    /// Rounds
    #[arg(long, default_value_t = 5, value_parser = cli::positive_count)]
    rounds: usize,
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() -> ExitCode {
    let o = Options::parse();
    let asleep = Duration::from_micros(o.sleep_us as u64);
    let rt = match sleep::runtime(o.workers) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot build the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "sleep_lateness: {} green threads x sleep({:?}) on {} workers, {} rounds",
        o.threads, asleep, o.workers, o.rounds
    );
    let mut late = Vec::with_capacity(o.threads * o.rounds);
    let mut walls = Vec::with_capacity(o.rounds);
    let cpu0 = footprint::runtime::process_cpu_time();
    for _ in 0..o.rounds {
        let t0 = Instant::now();
        late.extend(rt.block_on(|| sleep::sleep_round(o.threads, asleep)));
        walls.push(t0.elapsed());
    }
    let cpu = footprint::runtime::process_cpu_time().saturating_sub(cpu0);
    late.sort_unstable();
    walls.sort_unstable();
    println!(
        "lateness: p50 {}  p99 {}  max {}",
        us(sleep::percentile(&late, 50.0)),
        us(sleep::percentile(&late, 99.0)),
        us(*late.last().expect("samples"))
    );
    println!(
        "round wall time: median {:.2} ms (min {:.2}, max {:.2}; ideal {:.2} ms plus spawn and join)",
        walls[walls.len() / 2].as_secs_f64() * 1e3,
        walls[0].as_secs_f64() * 1e3,
        walls[walls.len() - 1].as_secs_f64() * 1e3,
        asleep.as_secs_f64() * 1e3
    );
    println!(
        "cpu: {:.2} ms per round, {} per sleeping thread (spawn, sleep, wake, join)",
        cpu.as_secs_f64() * 1e3 / o.rounds as f64,
        us(cpu / (o.threads * o.rounds) as u32)
    );
    ExitCode::SUCCESS
}
