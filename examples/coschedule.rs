//! ADAPT (003 ch. 6) on this machine: `N` copies of a workload mix (lock-bound and busy
//! programs alternately) run first side by side with the OS's all-cores default, then again
//! co-scheduled through one node table (`Builder::co_schedule`). Prints what the allocator
//! decided and the throughput (work units per second, summed over the copies) of both.
//!
//! ```text
//! cargo run --release --example coschedule -- [copies (default 2)] [seconds per run (default 8)] [mix (default lock,busy)]
//! ```
//!
//! The mix is a comma-separated list of `lock` (a contended mutex) and `busy` (computation),
//! given to the copies in turn.
//!
//! Each copy is this program re-run as a child process (`coschedule child <work> <secs>
//! <table or ->`). Timings on a shared machine are indicative only.

use clap::{Parser, ValueEnum};
use footprint::node::NodeConfig;
use footprint::Runtime;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// About `n` ns of work the compiler cannot fold.
fn spin(mut x: u64, n: u64) -> u64 {
    for i in 0..n {
        x = std::hint::black_box(x.wrapping_add(i));
    }
    x
}

/// One unit: a short critical section (lock-bound) or a short computation (busy).
fn work(rt: &Runtime, lock_bound: bool, secs: u64) -> u64 {
    let m = footprint::sync::Mutex::new(0u64);
    let units = std::sync::atomic::AtomicU64::new(0);
    let until = Instant::now() + Duration::from_secs(secs);
    let workers = rt.workers();
    while Instant::now() < until {
        rt.block_on(|| {
            footprint::scope(|s| {
                for w in 0..workers {
                    let (m, units) = (&m, &units);
                    s.spawn(move || {
                        // One thread per worker: a yield would otherwise hand the worker to
                        // the next thread of the scope, which then finds the lock free.
                        let _ = footprint::migrate_to(w);
                        for _ in 0..100 {
                            if lock_bound {
                                let mut g = m.lock();
                                *g = spin(*g, 20_000);
                            } else {
                                std::hint::black_box(spin(0, 20_000));
                            }
                            units.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            footprint::yield_now();
                        }
                    });
                }
            })
        });
    }
    units.into_inner()
}

fn child(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let lock_bound = args[0] == "lock";
    let secs: u64 = args[1].parse()?;
    let mut b = Runtime::builder().pin(false);
    if args[2] != "-" {
        b = b.co_schedule(
            NodeConfig::new("coschedule")
                .path(&args[2])
                .interval(Duration::from_millis(500)),
        );
    }
    let rt = b.build()?;
    let started = Instant::now();
    let units = work(&rt, lock_bound, secs);
    let rate = units as f64 / started.elapsed().as_secs_f64();
    println!("units_per_s {rate:.1}");
    if let Some(n) = rt.stats().node {
        print!("{n}");
    }
    Ok(())
}

/// Runs `copies` children at once; returns their summed throughput and their output.
fn run(
    copies: usize,
    secs: u64,
    mix: &[String],
    table: Option<&str>,
) -> Result<(f64, String), Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let kids: Vec<_> = (0..copies)
        .map(|i| {
            let work = &mix[i % mix.len()];
            Command::new(&exe)
                .args(["child", work, &secs.to_string(), table.unwrap_or("-")])
                .stdout(Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut total = 0.0;
    let mut text = String::new();
    for (i, k) in kids.into_iter().enumerate() {
        let out = k.wait_with_output()?;
        let s = String::from_utf8_lossy(&out.stdout).to_string();
        for line in s.lines() {
            if let Some(v) = line.strip_prefix("units_per_s ") {
                total += v.parse::<f64>()?;
            }
        }
        text.push_str(&format!("-- copy {i} ({}):\n{s}", mix[i % mix.len()]));
    }
    Ok((total, text))
}

/// ADAPT on this machine: COPIES copies of a workload mix run side by side with the OS's
/// all-cores default, then co-scheduled through one node table; prints the allocator's
/// decisions and the summed throughput of both.
#[derive(Parser)]
#[command(name = "coschedule")]
struct Args {
    /// Copies (programs) run at once
    #[arg(default_value_t = 2)]
    copies: usize,
    /// Seconds per run
    #[arg(default_value_t = 8)]
    secs: u64,
    /// The workloads, given to the copies in turn: `lock` (a contended mutex) and `busy`
    /// (computation), comma-separated
    #[arg(default_value = "lock,busy", value_delimiter = ',')]
    mix: Vec<Work>,
}

/// What one copy runs.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Work {
    /// A short critical section on a contended mutex per unit.
    Lock,
    /// A short computation per unit.
    Busy,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A copy started by `run` (this program's own protocol, not a user command line).
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.first().map(String::as_str) == Some("child") {
        return child(&raw[1..]);
    }
    let Args { copies, secs, mix } = Args::parse();
    let mix: Vec<String> = mix
        .iter()
        .map(|w| match w {
            Work::Lock => "lock".to_string(),
            Work::Busy => "busy".to_string(),
        })
        .collect();
    println!(
        "{copies} copies, {secs} s each, on {} CPUs",
        footprint::affinity::allowed_cpus()?.len()
    );

    let (default_rate, _) = run(copies, secs, &mix, None)?;
    println!("all-cores default: {default_rate:.0} units/s (summed)");

    let table = std::env::temp_dir().join(format!("footprint-coschedule-{}", std::process::id()));
    let _ = std::fs::remove_file(&table);
    let (adapt_rate, text) = run(copies, secs, &mix, table.to_str())?;
    let _ = std::fs::remove_file(&table);
    println!(
        "co-scheduled (ADAPT): {adapt_rate:.0} units/s (summed), {:+.1} % vs default",
        (adapt_rate / default_rate - 1.0) * 100.0
    );
    println!("what each copy was given (the allocator's decisions are printed by the copy that made them):");
    print!("{text}");
    Ok(())
}
