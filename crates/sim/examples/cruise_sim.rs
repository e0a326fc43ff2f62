//! 004 §4.2 on the simulated memory bus: Table 4.2 (copy rate per CPU with 1..4 CPUs
//! streaming) and Process Cruise Control (a reserved thread beside 1..3 streamers, throttling
//! off and on). Prints two tables and writes `target/simulate/cruise.csv`.
//!
//! ```text
//! cargo run --release -p footprint-sim --example cruise_sim [-- --sim-ms 200 --seed 1]
//! ```

use footprint_sim::membus::{calibrate, cruise_control, BusModel, CruiseParams};
use std::fmt::Write as _;

fn main() {
    let mut p = CruiseParams::default();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().and_then(|v| v.parse::<f64>().ok());
        match (flag.as_str(), value) {
            ("--sim-ms", Some(v)) if v > 0.0 => p.sim_ms = v,
            ("--seed", Some(v)) if v >= 0.0 => p.seed = v as u64,
            _ => {
                eprintln!("usage: cruise_sim [--sim-ms MS (positive)] [--seed N]");
                std::process::exit(2);
            }
        }
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
