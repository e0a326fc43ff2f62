//! Thread Tranquilizer's point in 003 ch. 3 is less run-to-run variation: this runs one fixed
//! workload (lock-bound green threads on all workers) `runs` times with the tranquilizer off
//! and `runs` times on, alternating, each run on a fresh runtime, and prints the mean, the
//! standard deviation and the coefficient of variation of the run times, and the decisions the
//! tranquilizer made in its last run.
//!
//! ```text
//! cargo run --release --example tranquilizer_cov -- [runs (default 10)] [work per run (default 200)]
//! ```
//!
//! The passes are shortened (20 ms samples, 5 per profile, a pass every 0.25 s) so that short
//! runs see several; the paper's are 10 × 100 ms every 5 s. Timings on a shared machine are
//! indicative only.

use clap::Parser;
use footprint::tranquilizer::{Spread, TranquilizerConfig};
use footprint::Runtime;
use std::time::{Duration, Instant};

/// About `n` ns of work the compiler cannot fold.
fn spin(mut x: u64, n: u64) -> u64 {
    for i in 0..n {
        x = std::hint::black_box(x.wrapping_add(i));
    }
    x
}

fn workload(rt: &Runtime, rounds: u64) {
    let m = footprint::sync::Mutex::new(0u64);
    let workers = rt.workers();
    rt.block_on(|| {
        footprint::scope(|s| {
            for _ in 0..workers * 4 {
                s.spawn(|| {
                    for _ in 0..rounds {
                        {
                            let mut g = m.lock();
                            *g = spin(*g, 20_000);
                        }
                        std::hint::black_box(spin(0, 200_000));
                        footprint::yield_now();
                    }
                });
            }
        })
    });
}

/// One lock-bound workload run RUNS times with Thread Tranquilizer off and RUNS times on,
/// alternating: the mean, standard deviation and coefficient of variation of the run times, and
/// the tranquilizer's decisions in its last run.
#[derive(Parser)]
#[command(name = "tranquilizer_cov")]
struct Args {
    /// Runs with the tranquilizer off and as many on
    #[arg(default_value_t = 10)]
    runs: usize,
    /// Work per run (rounds of the lock-bound loop)
    #[arg(default_value_t = 200)]
    rounds: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { runs, rounds } = Args::parse();
    let config = TranquilizerConfig::new()
        .sampling(Duration::from_millis(20), 5)
        .pass(Duration::from_millis(250));
    let mut off = Vec::new();
    let mut on = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        for tranquil in [false, true] {
            let mut b = Runtime::builder();
            if tranquil {
                b = b.tranquilizer(config.clone());
            }
            let rt = b.build()?;
            let t = Instant::now();
            workload(&rt, rounds);
            let secs = t.elapsed().as_secs_f64();
            if tranquil {
                on.push(secs);
                last = rt.stats().tranquilizer;
            } else {
                off.push(secs);
            }
        }
    }
    for (name, v) in [("off", &off), ("on", &on)] {
        let s = Spread::of(v.iter().copied()).ok_or("no runs")?;
        let mut sorted = v.clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "tranquilizer {name:>3}: {} runs, median {:.3} s, mean {:.3} s, sd {:.4} s, CoV {:.2} %",
            v.len(),
            sorted[sorted.len() / 2],
            s.mean,
            s.std_dev,
            s.std_dev / s.mean * 100.0
        );
    }
    if let Some(t) = last {
        print!("last run's decisions: {t}");
    }
    Ok(())
}
