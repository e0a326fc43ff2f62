//! The scaling suite: fork-join, loops and synchronisation workloads on footprint beside their
//! peers (rayon, std threads with std and parking_lot locks and std's Barrier, crossbeam-channel),
//! for each worker count W, both sides on the same W CPUs (the OS-thread peers restricted to them
//! with `sched_setaffinity`, rayon's threads pinned to them as footprint's workers are). Prints
//! one table of ratios (footprint's time ÷ the peer's, median of the runs, below 1 is footprint
//! ahead) and writes `scaling.csv`, `scaling.svg` (ratio against workers) and `scaling.md` to
//! `--out`.
//!
//! ```text
//! cargo run --release --example scaling                         # W = 1, 2, 4, ... all CPUs
//! cargo run --release --example scaling -- --workers 1,2,4,8,16 --quick
//! cargo run --release --example scaling -- --tiny               # seconds: correctness only (CI)
//! ```
//!
//! Every row checks that both sides computed the same answer, and every runtime that no idle
//! sleep ran out and then found work (a lost wake-up the safety net covered): exit code 1 if
//! either fails, 2 on a bad argument. More workers than CPUs run oversubscribed: such ratios
//! show the shape, not figures to quote.

mod output;

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use footprint::par::Affinity;
use footprint_workloads::scaling::{self as workloads, cpus, Env, Sizes};

/// The scaling suite: fork-join, loops and synchronisation workloads on footprint beside their
/// peers, for each worker count W, both sides on the same W CPUs; a table of ratios (footprint's
/// time ÷ the peer's, median of the runs) and scaling.csv, scaling.svg and scaling.md in --out.
#[derive(Parser)]
#[command(name = "scaling")]
struct Cli {
    /// Worker counts, comma-separated, or `all` (1, 2, 4, ... and the CPU count) [default: all;
    /// with --tiny 1,3]
    #[arg(long, value_parser = worker_counts)]
    workers: Option<WorkerCounts>,
    /// Smaller sizes: minutes
    #[arg(long, conflicts_with = "tiny")]
    quick: bool,
    /// Tiny sizes, one run: seconds, correctness only (CI)
    #[arg(long)]
    tiny: bool,
    /// Runs per cell (the median is reported) [default: 3; with --tiny 1]
    #[arg(long)]
    runs: Option<NonZeroUsize>,
    /// Only the rows whose name contains this
    #[arg(long)]
    only: Option<String>,
    /// Where the CSV, the plot and the table go
    #[arg(long, default_value = "target/scaling")]
    out: PathBuf,
}

/// `--workers`: `all` or positive counts.
#[derive(Clone)]
enum WorkerCounts {
    All,
    List(Vec<usize>),
}

fn worker_counts(v: &str) -> Result<WorkerCounts, String> {
    if v == "all" {
        return Ok(WorkerCounts::All);
    }
    v.split(',')
        .map(|x| match x.trim().parse::<usize>() {
            Ok(w) if w > 0 => Ok(w),
            _ => Err(format!(
                "positive counts separated by commas, or `all`, are needed; got {x:?}"
            )),
        })
        .collect::<Result<_, _>>()
        .map(WorkerCounts::List)
}

/// The run's settings: the command line with its defaults resolved.
struct Args {
    workers: Vec<usize>,
    sizes: Sizes,
    mode: &'static str,
    runs: usize,
    only: Option<String>,
    out: PathBuf,
}

/// W = 1, 2, 4, ... up to the CPU count, and the CPU count itself.
fn all_counts(cpus: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |w| Some(w * 2))
        .take_while(|&w| w < cpus)
        .collect();
    v.push(cpus.max(1));
    v
}

fn parse(cpus: usize) -> Args {
    let c = Cli::parse();
    let (sizes, mode) = if c.tiny {
        (workloads::TINY, "tiny")
    } else if c.quick {
        (workloads::QUICK, "quick")
    } else {
        (workloads::FULL, "full")
    };
    let workers = match c.workers {
        Some(WorkerCounts::List(w)) => w,
        Some(WorkerCounts::All) => all_counts(cpus),
        // CI: two counts are enough to exercise every path; one of them above the CPUs when
        // the machine has few.
        None if c.tiny => vec![1, 3],
        None => all_counts(cpus),
    };
    Args {
        workers,
        sizes,
        mode,
        runs: c.runs.map_or(if c.tiny { 1 } else { 3 }, NonZeroUsize::get),
        only: c.only,
        out: c.out,
    }
}

/// One row's result at one worker count.
pub struct Cell {
    pub workers: usize,
    pub footprint: f64,
    pub peer: f64,
}

impl Cell {
    pub fn ratio(&self) -> f64 {
        self.footprint / self.peer
    }
}

/// The CPU model, from `/proc/cpuinfo` where there is one.
fn machine() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "an unnamed CPU".into())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let allowed = footprint::affinity::allowed_cpus().unwrap_or_default();
    let cpus = allowed.len().max(1);
    let args = parse(cpus);
    let rows: Vec<_> = workloads::rows()
        .into_iter()
        .filter(|r| {
            args.only
                .as_ref()
                .is_none_or(|o| r.name.contains(o.as_str()))
        })
        .collect();
    let mut cells: Vec<Vec<Cell>> = rows.iter().map(|_| Vec::new()).collect();
    let mut failures = Vec::new();
    let mut lost_wakeups = Vec::new();
    println!(
        "scaling ({} mode, median of {} runs): {} CPUs allowed; W = {:?}",
        args.mode, args.runs, cpus, args.workers
    );
    println!("{}", handoffs(&allowed));
    for &w in &args.workers {
        let on = cpus::first(&allowed, w);
        let rt = match footprint::Runtime::builder()
            .workers(w)
            // W is asked for explicitly: more workers than CPUs is the point of some rows.
            .oversubscribe(true)
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("cannot build a runtime with {w} workers: {e}");
                return ExitCode::FAILURE;
            }
        };
        let pin = on.clone();
        let pool = match rayon::ThreadPoolBuilder::new()
            .num_threads(w)
            .start_handler(move |i| cpus::restrict_current(&pin[i % pin.len().max(1)..][..1]))
            .build()
        {
            Ok(p) => p,
            Err(e) => {
                eprintln!("cannot build a rayon pool with {w} threads: {e}");
                return ExitCode::FAILURE;
            }
        };
        let affinity = Affinity::new();
        let env = Env {
            rt: &rt,
            pool: &pool,
            w,
            cpus: &on,
            sizes: args.sizes,
            affinity: &affinity,
        };
        for (r, row) in rows.iter().enumerate() {
            let (mut fp, mut peer) = (Vec::new(), Vec::new());
            for _ in 0..args.runs {
                // Alternating, so that drift on a shared machine hits both sides alike.
                let a = (row.footprint)(&env);
                let b = (row.other)(&env);
                if a.check != b.check {
                    failures.push(format!(
                        "{} (vs {}), {w} workers: footprint's answer {:#x} differs from the peer's {:#x}",
                        row.name, row.peer, a.check, b.check
                    ));
                }
                fp.push(a.secs);
                peer.push(b.secs);
            }
            let cell = Cell {
                workers: w,
                footprint: median(fp),
                peer: median(peer),
            };
            eprintln!(
                "  W={w:<3} {:<34} vs {:<11} {:>8.2} ms / {:>8.2} ms = {:.2}",
                row.name,
                row.peer,
                cell.footprint * 1e3,
                cell.peer * 1e3,
                cell.ratio()
            );
            cells[r].push(cell);
        }
        let stats = rt.stats();
        let lost = stats.expired_sleeps_with_work();
        let expired: u64 = stats.workers.iter().map(|w| w.expired_sleeps).sum();
        let sleeps: u64 = stats.workers.iter().map(|w| w.sleeps).sum();
        eprintln!(
            "  W={w}: footprint workers slept {sleeps} times, {expired} sleeps ran out, {lost} of \
             them then found work"
        );
        lost_wakeups.push((w, sleeps, expired, lost));
    }
    let table = output::Table {
        command: std::iter::once("cargo run --release --example scaling --".to_string())
            .chain(std::env::args().skip(1))
            .collect::<Vec<_>>()
            .join(" "),
        machine: machine(),
        mode: args.mode,
        runs: args.runs,
        cpus,
        rows: rows
            .iter()
            .zip(cells)
            .map(|(r, c)| (format!("{} ÷ {}", r.name, r.peer), c))
            .collect(),
        sleeps: lost_wakeups.clone(),
    };
    println!("{}", table.text());
    if let Err(e) = table.write(&args.out) {
        eprintln!("cannot write the results to {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    println!(
        "wrote {0}/scaling.csv, {0}/scaling.svg, {0}/scaling.md",
        args.out.display()
    );
    for f in &failures {
        eprintln!("FAILED: {f}");
    }
    let lost: u64 = lost_wakeups.iter().map(|l| l.3).sum();
    if lost > 0 {
        eprintln!("FAILED: {lost} idle sleeps ran out and then found work (lost wake-ups)");
    }
    if failures.is_empty() && lost == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The cache-line hand-off from the first allowed CPU to the second, the middle and the last
/// one: what every synchronisation row pays per hand-over, and on a VM a figure that can change
/// for seconds at a time (`footprint_workloads::handoff`).
fn handoffs(allowed: &[usize]) -> String {
    if allowed.len() < 2 {
        return "cache-line hand-off: not measured (one CPU)".into();
    }
    let n = allowed.len();
    let mut to = vec![allowed[1], allowed[n / 2], allowed[n - 1]];
    to.dedup();
    let parts: Vec<String> = to
        .iter()
        .map(|&b| {
            let ns = footprint_workloads::handoff::cache_line_handoff_ns(allowed[0], b);
            format!("CPU {} <-> {b}: {ns:.0} ns", allowed[0])
        })
        .collect();
    format!("cache-line hand-off: {}", parts.join(", "))
}
