//! 004 §4.2 on the simulated memory bus: Table 4.2 (copy rate per CPU with 1..4 CPUs
//! streaming) and Process Cruise Control (a reserved thread beside 1..3 streamers, throttling
//! off and on). Prints two tables and writes `target/simulate/cruise.csv`.
//!
//! ```text
//! cargo run --release -p footprint-sim --example cruise_sim [-- --sim-ms 200 --seed 1]
//! ```

use clap::Parser;
use footprint_sim::membus::{calibrate, cruise_control, BusModel, CruiseParams};
use std::fmt::Write as _;

/// 004 §4.2 on the simulated memory bus: Table 4.2 and Process Cruise Control, two tables and
/// target/simulate/cruise.csv.
#[derive(Parser)]
#[command(name = "cruise_sim")]
struct Args {
    /// Simulated milliseconds per run (positive) [default: the simulator's]
    #[arg(long = "sim-ms", value_parser = positive_ms, allow_negative_numbers = true)]
    sim_ms: Option<f64>,
    /// The simulation's seed [default: the simulator's]
    #[arg(long)]
    seed: Option<u64>,
}

/// `--sim-ms`: a positive number.
fn positive_ms(v: &str) -> Result<f64, String> {
    v.parse::<f64>()
        .ok()
        .filter(|ms| *ms > 0.0 && ms.is_finite())
        .ok_or_else(|| format!("a positive number of milliseconds is needed, got {v:?}"))
}

fn main() {
    let args = Args::parse();
    let mut p = CruiseParams::default();
    if let Some(ms) = args.sim_ms {
        p.sim_ms = ms;
    }
    if let Some(seed) = args.seed {
        p.seed = seed;
    }
    let bus = BusModel::e3000_two_banks();
    println!(
        "memory bus: {:.0} MB/s served first come first served, {:.0} ns latency (fitted to 004 Table 4.2, two banks)\n",
        bus.capacity / 1e6,
        bus.latency_ns
    );
    println!("Table 4.2 on the simulated bus (paper: 197, 166, 127, 101 MB/s per CPU)");
    println!(
        "  {:>4} {:>12} {:>12}",
        "cpus", "total MB/s", "per CPU MB/s"
    );
    for (i, r) in calibrate(&bus, 4, p.sim_ms, p.seed).iter().enumerate() {
        println!(
            "  {:>4} {:>12.1} {:>12.1}",
            i + 1,
            r / 1e6,
            r / 1e6 / (i + 1) as f64
        );
    }
    println!(
        "\nA thread that reserved {:.0} % of its rate alone, beside streamers on the other CPUs",
        p.reserve_share * 100.0
    );
    let mut csv = String::from("streamers,throttle,alone_mb_s,beside_mb_s,kept,reserved_mb_s,streamers_mb_s,capacity_mb_s,intervals,behind\n");
    for streamers in 1..=3 {
        for throttle in [false, true] {
            let r = cruise_control(
                &bus,
                &CruiseParams {
                    streamers,
                    throttle,
                    ..p.clone()
                },
            );
            println!("  {streamers} streamer(s): {r}");
            let _ = writeln!(
                csv,
                "{streamers},{throttle},{:.2},{:.2},{:.4},{:.2},{:.2},{:.2},{},{}",
                r.alone / 1e6,
                r.beside / 1e6,
                r.fraction_kept(),
                r.reserved / 1e6,
                r.streamer_rates.iter().sum::<f64>() / 1e6,
                r.capacity / 1e6,
                r.run.intervals.0,
                r.run.intervals.1
            );
        }
    }
    let dir = std::path::Path::new("target/simulate");
    match std::fs::create_dir_all(dir).and_then(|()| std::fs::write(dir.join("cruise.csv"), csv)) {
        Ok(()) => println!("\nwrote {}", dir.join("cruise.csv").display()),
        Err(e) => eprintln!("could not write {}: {e}", dir.join("cruise.csv").display()),
    }
}
