//! The adaptive bench's lock-bound workload (8 green threads on one `Mutex`, 32 KiB touched per
//! critical section; `crates/workloads/src/adaptive.rs`) on an N-worker runtime whose active-worker
//! limit is lowered after the first round: compare its time per operation with a
//! 1-worker runtime's. Each round spawns new threads, so the rounds after the first show whether
//! workers above the limit still take work.
//!
//! `cargo run --release --example rest_probe -- WORKERS ACTIVE ITERS FIRST_ACTIVE`, e.g.
//! `-- 8 1 5000 8` against `-- 1 1 5000 1`; prints ns per operation per round and the stats.

use clap::Parser;
use footprint_workloads::adaptive;

use std::process::ExitCode;

/// The adaptive bench's lock-bound workload on a WORKERS-worker runtime whose active-worker
/// limit is FIRST_ACTIVE in the first round and ACTIVE after it: ns per operation per round, then
/// the runtime's stats.
#[derive(Parser)]
#[command(name = "rest_probe")]
struct Args {
    /// Workers of the runtime
    #[arg(default_value_t = 1)]
    workers: usize,
    /// Active workers from the second round on (between 1 and WORKERS)
    #[arg(default_value_t = 1)]
    active: usize,
    /// Critical sections per green thread and round
    #[arg(default_value_t = 20_000)]
    iters: u64,
    /// Active workers in the first round (between 1 and WORKERS) [default: ACTIVE]
    first_active: Option<usize>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rest_probe: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<(), String> {
    let Args {
        workers,
        active,
        iters,
        first_active,
    } = args;
    let first = first_active.unwrap_or(active);
    let rt = footprint::Runtime::builder()
        .workers(workers)
        .pin(workers <= 2)
        .build()
        .map_err(|e| e.to_string())?;
    rt.set_active_workers(first).map_err(|e| e.to_string())?;
    for round in 0..4 {
        if round == 1 {
            rt.set_active_workers(active).map_err(|e| e.to_string())?;
        }
        let t = adaptive::lock_bound(&rt, iters);
        let ops = (adaptive::GREEN as u64 * iters) as f64;
        println!(
            "workers={workers} active={} round={round} per_op={:.1} ns",
            if round == 0 { first } else { active },
            t.as_nanos() as f64 / ops
        );
    }
    println!("{}", rt.stats());
    Ok(())
}
