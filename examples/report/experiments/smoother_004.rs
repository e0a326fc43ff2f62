//! 004's irregular case: the active-threads smoother (workloads/smoother.rs), one green thread
//! per point of an unstructured grid, per ready order.

use crate::experiments::orders::{cache_note, Comparison};
use crate::experiments::{runtime, Ctx};
use crate::measure::median;
use crate::model::{
    format_ns, format_number, format_ratio, Axis, Plot, PlotKind, Section, Table, X,
};
use crate::stats::StatsTable;
use crate::workloads::smoother::{run_footprint, Grid, Params};
use crate::workloads::working_set::{ready_orders, WORKERS};

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
    let params = Params {
        working_set: 16 << 10,
        eps: 1e-4,
        max_updates: ctx.mode.pick(8, 30, 40, 40),
    };
    let reps = ctx.mode.pick(1, 3, 7, 21);
    let grid = Grid::new(side);
    let points = grid.points();
    let mut stats = StatsTable::new();
    let mut plot = Plot::new(
        "smoother_004",
        &format!(
            "004 irregular smoother: time per smoothing step ({points} green threads × 16 KiB)"
        ),
        PlotKind::Bars,
        "ready_order",
        Axis::linear("workload", "workload"),
        Axis::linear("us_per_step", "µs per smoothing step (median run ÷ steps)"),
    );
    let mut table = Table::new(
        &format!(
            "Median run of the smoother ({points} points, {} KiB each, 2 workers)",
            params.working_set >> 10
        ),
        &[
            "ready order",
            "per run",
            "smoothing steps",
            "per step",
            "÷ oldest-first (FIFO)",
            "final residual",
        ],
    )
    .for_readme("smoother_004");
    let mut results = Vec::new();
    for (name, order) in ready_orders() {
        ctx.step(name);
        let rt = runtime(WORKERS, order)?;
        let runs = stats.record(name, &rt, || {
            (0..=reps)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let outcome = run_footprint(&rt, &grid, params);
                    (t.elapsed().as_nanos() as f64, outcome)
                })
                .skip(1) // warm-up
                .collect::<Vec<_>>()
        });
        if let Some((_, o)) = runs.iter().find(|(_, o)| o.updates == 0) {
            return Err(format!("{name}: a run did no smoothing step ({o:?})"));
        }
        let time = median(&runs.iter().map(|r| r.0).collect::<Vec<_>>());
        let per_update = median(
            &runs
                .iter()
                .map(|r| r.0 / r.1.updates as f64)
                .collect::<Vec<_>>(),
        );
        let updates = median(&runs.iter().map(|r| r.1.updates as f64).collect::<Vec<_>>());
        let residual = runs.iter().map(|r| r.1.residual).fold(0.0, f64::max);
        results.push((name, time, per_update, updates, residual));
    }
    let fifo = results
        .iter()
        .find(|r| r.0 == "footprint_fifo")
        .map_or(f64::NAN, |r| r.2);
    for (name, time, per_update, updates, residual) in &results {
        plot.push(name, X::Cat(format!("{points} points")), per_update / 1e3);
        table.row(vec![
            format!("`{name}`"),
            format_ns(*time),
            format_number(*updates),
            format_ns(*per_update),
            format_ratio(per_update / fifo),
            format!("{residual:.1e}"),
        ]);
    }
    s.plots.push(plot);
    s.tables.push(table);
    s.tables.push(stats.into_table());
    let c = Comparison::of(results.iter().map(|r| (r.0, r.2))).ok_or("no ready order ran")?;
    s.measured = format!(
        "best ready order {} at {} per smoothing step ({} of FIFO's)",
        c.best,
        format_ns(c.best_value),
        format_ratio(c.ratio())
    );
    s.verdict = c.verdict();
    s.notes.push(cache_note(points * params.working_set));
    s.notes.push(format!(
        "Every order does a different number of smoothing steps (the wake-ups decide), so the \
         figure compared is time per step; each point stops after {} steps at most.",
        params.max_updates
    ));
    Ok(s)
}
