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

use footprint_workloads::sleep;

use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str =
    "usage: sleep_lateness [--threads <n>] [--workers <n>] [--sleep-us <µs>] [--rounds <n>]";

struct Options {
    threads: usize,
    workers: usize,
    sleep: Duration,
    rounds: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        threads: sleep::THREADS,
        workers: sleep::WORKERS,
        sleep: sleep::SLEEP,
        rounds: 5,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n = value
            .replace('_', "")
            .parse::<usize>()
            .map_err(|_| format!("{flag} takes a number, got {value:?}"))?;
        match flag.as_str() {
            "--threads" if n > 0 => o.threads = n,
            "--workers" if n > 0 => o.workers = n,
            "--rounds" if n > 0 => o.rounds = n,
            "--sleep-us" => o.sleep = Duration::from_micros(n as u64),
            "--threads" | "--workers" | "--rounds" => return Err(format!("{flag} must be > 0")),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(o)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let rt = match sleep::runtime(o.workers) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot build the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "sleep_lateness: {} green threads x sleep({:?}) on {} workers, {} rounds",
        o.threads, o.sleep, o.workers, o.rounds
    );
    let mut late = Vec::with_capacity(o.threads * o.rounds);
    let mut walls = Vec::with_capacity(o.rounds);
    let cpu0 = footprint::runtime::process_cpu_time();
    for _ in 0..o.rounds {
        let t0 = Instant::now();
        late.extend(rt.block_on(|| sleep::sleep_round(o.threads, o.sleep)));
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
        o.sleep.as_secs_f64() * 1e3
    );
    println!(
        "cpu: {:.2} ms per round, {} per sleeping thread (spawn, sleep, wake, join)",
        cpu.as_secs_f64() * 1e3 / o.rounds as f64,
        us(cpu / (o.threads * o.rounds) as u32)
    );
    ExitCode::SUCCESS
}
