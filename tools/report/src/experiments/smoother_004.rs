//! 004's irregular case: the active-threads smoother (`crates/workloads/src/smoother.rs`, the code
//! `cargo bench --bench smoother` times), one green thread per point of an unstructured grid,
//! per ready order on a `--workers` runtime, beside rayon's bulk-synchronous sweeps (as many
//! threads, on the same CPUs) and the sequential loop.

use std::time::Instant;

use footprint::sync::Barrier;

use crate::experiments::cpus::{peer_cpus, peer_note, rayon_pool};
use crate::experiments::orders::{cache_note, Comparison};
use crate::experiments::{runtime, Ctx};
use crate::measure::median;
use crate::model::{format_ns, format_ratio, plural, Axis, Plot, PlotKind, Section, Table, X};
use crate::stats::StatsTable;
use crate::workloads::orders::ready_orders;
use crate::workloads::smoother::{Grid, WIDTH};

/// Median of `reps` timed runs after one warm-up; every run's result must equal `expected`.
fn timed_runs(
    grid: &mut Grid,
    reps: usize,
    expected: &[[f64; WIDTH]],
    name: &str,
    mut run: impl FnMut(&Grid),
) -> Result<f64, String> {
    let mut times = Vec::with_capacity(reps);
    for rep in 0..=reps {
        grid.reset();
        let t = Instant::now();
        run(grid);
        let ns = t.elapsed().as_nanos() as f64;
        if grid.result() != expected {
            return Err(format!(
                "{name}: the smoothed values differ from the sequential sweep"
            ));
        }
        if rep > 0 {
            times.push(ns);
        }
    }
    Ok(median(&times))
}

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "smoother_004",
        "004: irregular active-threads smoother on an unstructured grid, per ready order",
        "004 (Bellosa), §3.3.2: adaptive solvers on irregular grids",
        "With an irregular execution order (threads woken by their neighbours), an affinity \
         strategy still pays: resuming the threads whose data is still cached first costs fewer \
         misses than an order without affinity.",
    );
    let side = ctx.mode.pick(16, 48, 64, 64);
    let iters = ctx.mode.pick(3, 10, 10, 10);
    let reps = ctx.mode.pick(1, 3, 7, 21);
    let workers = ctx.workers;
    let mut grid = Grid::new(side, iters);
    let points = grid.points();
    grid.run_sequential();
    let expected = grid.result();
    let start = Barrier::new(points);
    let mut stats = StatsTable::new();
    let mut plot = Plot::new(
        "smoother_004",
        &format!("004 irregular smoother: time per run ({points} green threads × {iters} sweeps)"),
        PlotKind::Bars,
        "variant",
        Axis::linear("workload", "workload"),
        Axis::linear("ms_per_run", "ms per run (median)"),
    );
    let mut table = Table::new(
        &format!(
            "Median run of the smoother ({points} points, {} B per point and buffer, {iters} \
             sweeps, {workers} worker{}; `cargo bench --bench smoother` times the same code \
             on 2)",
            WIDTH * 8,
            plural(workers)
        ),
        &["variant", "per run", "÷ oldest-first (FIFO)"],
    )
    .for_readme("smoother_004");
    let mut results: Vec<(&str, f64)> = Vec::new();
    let mut cpus = Vec::new();
    for (name, order) in ready_orders() {
        ctx.step(name);
        let rt = runtime(workers, order)?;
        cpus = peer_cpus(&rt);
        let time = stats.record(name, &rt, || {
            timed_runs(&mut grid, reps, &expected, name, |g| {
                g.run_footprint(&rt, &start)
            })
        })?;
        results.push((name, time));
    }
    let orders = Comparison::of(results.iter().copied()).ok_or("no ready order ran")?;
    ctx.step("rayon_bulk_sync");
    let pool = rayon_pool(workers, &cpus)?;
    let rayon_time = timed_runs(&mut grid, reps, &expected, "rayon", |g| g.run_rayon(&pool))?;
    results.push(("rayon_bulk_sync", rayon_time));
    ctx.step("sequential");
    let seq_time = timed_runs(&mut grid, reps, &expected, "sequential", |g| {
        g.run_sequential()
    })?;
    results.push(("sequential", seq_time));
    for (name, time) in &results {
        plot.push(name, X::Cat(format!("{points} points")), time / 1e6);
        table.row(vec![
            format!("`{name}`"),
            format_ns(*time),
            format_ratio(time / orders.fifo),
        ]);
    }
    s.plots.push(plot);
    s.tables.push(table);
    s.tables.push(stats.into_table());
    s.measured = format!(
        "best ready order {} at {} per run ({} of FIFO's); rayon's bulk-synchronous sweeps {}",
        orders.best,
        format_ns(orders.best_value),
        format_ratio(orders.ratio()),
        format_ns(rayon_time)
    );
    s.verdict = orders.verdict();
    s.notes.push(cache_note(points * WIDTH * 8 * 2));
    s.notes.push(peer_note(&cpus));
    s.notes.push(
        "Every run is checked bit-exact against the sequential sweep (same operations in the \
         same order)."
            .into(),
    );
    Ok(s)
}
