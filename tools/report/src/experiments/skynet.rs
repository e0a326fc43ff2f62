//! Runtime vs peers, many short-lived threads: skynet (the bench's tree of spawns), time and peak
//! memory, each implementation in a child process of its own so that the peak resident set size
//! belongs to it alone. Also the child side of every such measurement ([`child_main`]).

use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::child;
use crate::experiments::Ctx;
use crate::measure::median;
use crate::model::{format_ns, format_ratio, Axis, Plot, PlotKind, Section, Table, X};
use crate::workloads::{skynet, uts};

/// One worker per CPU of the allowed set (the default of `--workers`).
pub fn all_cpus() -> usize {
    footprint::affinity::allowed_cpus()
        .map(|c| c.len())
        .unwrap_or(1)
        .max(1)
}

/// One child measurement's outcome.
pub struct Measured {
    pub median_ns: f64,
    pub peak_rss_kib: f64,
    pub stats: String,
}

/// Runs `workload` (`skynet` or `uts`) with `implementation` at `size` in a child process,
/// `reps` timed runs after one warm-up.
pub fn measure_in_child(
    workload: &str,
    implementation: &str,
    size: u64,
    reps: usize,
    workers: usize,
    limit: Duration,
) -> Result<Measured, String> {
    let args: Vec<String> = [child::SUBCOMMAND, workload, implementation]
        .iter()
        .map(|s| s.to_string())
        .chain([size.to_string(), reps.to_string(), workers.to_string()])
        .collect();
    let out = child::run(&args, limit)?;
    let number = |key: &str| -> Result<f64, String> {
        out.get(key)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("the child printed no {key}"))
    };
    Ok(Measured {
        median_ns: number("median_ns")?,
        peak_rss_kib: number("peak_rss_kib")?,
        stats: out.get("stats").cloned().unwrap_or_default(),
    })
}

fn uts_tree(depth: u64) -> uts::Tree {
    uts::Tree {
        branching: 4,
        depth: depth as u32,
    }
}

/// The child side: `__measure <skynet|uts> <footprint|rayon|may> <size> <reps>`; prints
/// `median_ns`, `peak_rss_kib` and `stats` lines. Returns the exit code.
pub fn child_main(args: &[String]) -> i32 {
    let [workload, implementation, size, reps, workers] = args else {
        eprintln!(
            "usage: {} <skynet|uts> <footprint|rayon|may> <size> <reps> <workers>",
            child::SUBCOMMAND
        );
        return 2;
    };
    let (Ok(size), Ok(reps), Ok(workers)) = (
        size.parse::<u64>(),
        reps.parse::<usize>(),
        workers.parse::<usize>(),
    ) else {
        eprintln!("size, reps and workers must be integers");
        return 2;
    };
    let expected = match workload.as_str() {
        "skynet" => skynet::expected(size),
        "uts" => uts::sequential(uts_tree(size), uts::ROOT, 0),
        other => {
            eprintln!("unknown workload {other:?}");
            return 2;
        }
    };
    let run: Box<dyn Fn() -> u64> = match (workload.as_str(), implementation.as_str()) {
        (_, "footprint") => {
            let rt = match footprint::Runtime::builder().workers(workers).build() {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("a {workers}-worker runtime: {e}");
                    return 1;
                }
            };
            let is_skynet = workload == "skynet";
            let rt = std::sync::Arc::new(rt);
            let stats_rt = rt.clone();
            let f = Box::new(move || {
                if is_skynet {
                    rt.block_on(|| skynet::footprint_spawn(0, size))
                } else {
                    rt.block_on(|| uts::footprint(uts_tree(size), uts::ROOT, 0))
                }
            });
            let r = time_runs(&*f, expected, reps);
            let s = stats_rt.stats();
            println!(
                "stats spawned={} finished={} steals={} stacks_mapped={}",
                s.spawned, s.finished, s.steals, s.stacks_mapped
            );
            return r;
        }
        ("skynet", "rayon") => {
            let pool = rayon_pool(workers);
            Box::new(move || pool.install(|| skynet::rayon_scope(0, size)))
        }
        ("uts", "rayon") => {
            let pool = rayon_pool(workers);
            Box::new(move || pool.install(|| uts::rayon(uts_tree(size), uts::ROOT, 0)))
        }
        (w, "may") => {
            may::config().set_workers(workers);
            let is_skynet = w == "skynet";
            Box::new(move || {
                may::go!(move || if is_skynet {
                    skynet::may_spawn(0, size)
                } else {
                    uts::may(uts_tree(size), uts::ROOT, 0)
                })
                .join()
                .expect("the may root does not panic")
            })
        }
        (_, other) => {
            eprintln!("unknown implementation {other:?}");
            return 2;
        }
    };
    time_runs(&*run, expected, reps)
}

fn rayon_pool(workers: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .build()
        .expect("a rayon pool")
}

/// One warm-up and `reps` timed runs of `f`, each checked; prints the median and the peak RSS.
fn time_runs(f: &dyn Fn() -> u64, expected: u64, reps: usize) -> i32 {
    let mut times = Vec::new();
    for i in 0..=reps.max(1) {
        let t = Instant::now();
        let got = black_box(f());
        let elapsed = t.elapsed();
        if got != expected {
            eprintln!("wrong answer: {got}, expected {expected}");
            return 1;
        }
        if i > 0 {
            times.push(elapsed.as_nanos() as f64);
        }
    }
    println!("median_ns {}", median(&times));
    println!("peak_rss_kib {}", child::peak_rss_kib());
    0
}

/// `(implementation, size)` cells of the skynet / uts comparison, with `may` only at sizes it
/// survives (it gives every live coroutine an mmap'd stack and a guard page, and exceeds
/// `vm.max_map_count` beyond ~30,000 live coroutines).
pub struct Grid {
    pub workload: &'static str,
    pub sizes: Vec<(u64, String)>,
    pub may_max: u64,
}

/// Measures every cell of `grid` and fills a time plot, a memory plot and a table.
pub fn run_grid(ctx: &Ctx, grid: &Grid, s: &mut Section) {
    let reps = ctx.mode.pick(1, 3, 5, 15);
    let limit = Duration::from_secs(ctx.mode.pick(30, 120, 180, 600));
    let w = grid.workload;
    let mut time = Plot::new(
        &format!("{w}-time"),
        &format!("{w}: time per run, {} workers (log scale)", ctx.workers),
        PlotKind::Bars,
        "implementation",
        Axis::linear("size", "size"),
        Axis::log("time_ms", "time per run, ms (median)"),
    );
    let mut memory = Plot::new(
        &format!("{w}-memory"),
        &format!("{w}: peak resident set of the whole process (log scale)"),
        PlotKind::Bars,
        "implementation",
        Axis::linear("size", "size"),
        Axis::log("peak_rss_mib", "peak RSS, MiB (VmHWM)"),
    );
    let mut table = Table::new(
        &format!("{w}: median time per run and peak RSS, one process per implementation"),
        &[
            "size",
            "footprint",
            "rayon",
            "may",
            "footprint ÷ rayon (time)",
        ],
    )
    .for_readme(grid.workload);
    let mut stats = Table::new(
        "Scheduler stats per run (Runtime::stats() in the child, over all its runs)",
        &["run", "counters"],
    );
    for (size, label) in &grid.sizes {
        let mut row = vec![label.clone()];
        let mut times = Vec::new();
        for imp in ["footprint", "rayon", "may"] {
            if imp == "may" && *size > grid.may_max {
                row.push(format!(
                    "not run (> {} for may: vm.max_map_count)",
                    grid.may_max
                ));
                continue;
            }
            ctx.step(&format!("{label}: {imp}"));
            match measure_in_child(w, imp, *size, reps, ctx.workers, limit) {
                Ok(m) => {
                    time.push(imp, X::Cat(label.clone()), m.median_ns / 1e6);
                    memory.push(imp, X::Cat(label.clone()), m.peak_rss_kib / 1024.0);
                    row.push(format!(
                        "{}, {:.1} MiB",
                        format_ns(m.median_ns),
                        m.peak_rss_kib / 1024.0
                    ));
                    times.push(m.median_ns);
                    if !m.stats.is_empty() {
                        stats.row(vec![format!("{w} {label}"), m.stats]);
                    }
                }
                Err(e) => {
                    row.push(format!("failed: {e}"));
                    times.push(f64::NAN);
                    s.notes.push(format!("{w} {label} {imp} failed: {e}"));
                }
            }
        }
        row.push(match times.as_slice() {
            [f, r, ..] => format_ratio(f / r),
            _ => "—".into(),
        });
        table.row(row);
    }
    s.plots.push(time);
    s.plots.push(memory);
    s.tables.push(table);
    s.tables.push(stats);
}

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "skynet",
        "Runtime vs peers: skynet, time and peak memory",
        "issue target: report time and peak RSS next to rayon and may",
        "Spawning a 10-ary tree of 1,111,110 green threads (10⁶ leaves) is practical: time and \
         memory within a small factor of rayon's heap jobs, where may cannot run it.",
    );
    let sizes = match ctx.mode.pick(0, 1, 1, 1) {
        0 => vec![(1_000, "10³ leaves".to_string())],
        _ => vec![
            (10_000, "10⁴ leaves".to_string()),
            (1_000_000, "10⁶ leaves".to_string()),
        ],
    };
    let grid = Grid {
        workload: "skynet",
        sizes,
        may_max: 10_000,
    };
    run_grid(ctx, &grid, &mut s);
    let t = &s.tables[0];
    let last = t.rows.last().cloned().unwrap_or_default();
    s.measured = format!(
        "{}: footprint {}, rayon {}, footprint ÷ rayon {}",
        last.first().cloned().unwrap_or_default(),
        last.get(1).cloned().unwrap_or_default(),
        last.get(2).cloned().unwrap_or_default(),
        last.get(4).cloned().unwrap_or_default()
    );
    s.verdict = if s.notes.iter().any(|n| n.contains("footprint failed")) {
        "footprint failed to run it (see the notes)".into()
    } else {
        "reported (no numeric target); compare the ratio to rayon and the memory".into()
    };
    Ok(s)
}
