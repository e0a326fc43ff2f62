//! The adaptive bench's lock-bound workload (8 green threads on one `Mutex`, 32 KiB touched per
//! critical section; `crates/workloads/src/adaptive.rs`) on an N-worker runtime whose active-worker
//! limit is lowered after the first round: compare its time per operation with a
//! 1-worker runtime's. Each round spawns new threads, so the rounds after the first show whether
//! workers above the limit still take work.
//!
//! `cargo run --release --example rest_probe -- WORKERS ACTIVE ITERS FIRST_ACTIVE`, e.g.
//! `-- 8 1 5000 8` against `-- 1 1 5000 1`; prints ns per operation per round and the stats.

use footprint_workloads::adaptive;

use std::process::ExitCode;

const USAGE: &str = "usage: rest_probe [WORKERS] [ACTIVE] [ITERS] [FIRST_ACTIVE] (numbers; ACTIVE and FIRST_ACTIVE between 1 and WORKERS)";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rest_probe: {e}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut arg = |default: u64| match args.next() {
        None => Ok(default),
        Some(a) => a
            .parse::<u64>()
            .map_err(|_| format!("{a:?} is not a number")),
    };
    let workers = arg(1)? as usize;
    let active = arg(1)? as usize;
    let iters = arg(20_000)?;
    let first = arg(active as u64)? as usize;
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
