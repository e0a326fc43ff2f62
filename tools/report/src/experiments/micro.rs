//! Runtime vs peers, micro: one `yield_now` between two green threads on one worker, and spawn +
//! join of an empty green thread, against `may`, raw `corosensei` (the switch floor) and std
//! threads. The bodies are the bench's (`crates/workloads/src/micro.rs`).

use std::time::Duration;

use footprint::runtime::ReadyOrder;

use crate::experiments::{runtime, Ctx};
use crate::measure::{per_iteration, Sample};
use crate::model::{format_ns, format_ratio, Axis, Plot, PlotKind, Section, Table, X};
use crate::stats::StatsTable;
use crate::workloads::micro;

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "micro",
        "Runtime vs peers: yield and spawn + join",
        "issue targets (DESIGN.md); peers may, corosensei, std::thread",
        "A yield between two green threads costs ≤ 15 ns and spawn + join of an empty green \
         thread ≤ 60 ns (one worker).",
    );
    let budget = Duration::from_secs_f64(ctx.mode.pick(0.02, 0.3, 2.0, 5.0));
    let reps = ctx.reps();
    micro::configure_may();
    let rt1 = runtime(1, ReadyOrder::default())?;
    let rt2 = runtime(2, ReadyOrder::default())?;
    let mut stats = StatsTable::new();

    // (benchmark, implementation, sample)
    let mut cells: Vec<(&str, &str, Sample)> = Vec::new();
    ctx.step("yield: footprint");
    let y = stats.record("yield, 1 worker", &rt1, || {
        per_iteration(budget, reps, |i| micro::footprint_yield(&rt1, i))
    });
    cells.push(("yield", "footprint", y));
    ctx.step("yield: may");
    cells.push((
        "yield",
        "may",
        per_iteration(budget, reps, micro::may_yield),
    ));
    ctx.step("yield: corosensei");
    cells.push((
        "yield",
        "corosensei (floor)",
        per_iteration(budget, reps, micro::corosensei_resume_suspend),
    ));
    for (bench, rt, label) in [
        ("spawn+join (1 worker)", &rt1, "spawn + join, 1 worker"),
        ("spawn+join (2 workers)", &rt2, "spawn + join, 2 workers"),
    ] {
        ctx.step(&format!("{bench}: footprint"));
        let sample = stats.record(label, rt, || {
            per_iteration(budget, reps, |i| micro::footprint_spawn_join(rt, i))
        });
        cells.push((bench, "footprint", sample));
    }
    ctx.step("spawn+join: may");
    cells.push((
        "spawn+join (1 worker)",
        "may",
        per_iteration(budget, reps, micro::may_spawn_join),
    ));
    ctx.step("spawn+join: std::thread");
    cells.push((
        "spawn+join (1 worker)",
        "std::thread",
        per_iteration(budget, reps, micro::std_spawn_join),
    ));

    let mut plot = Plot::new(
        "micro",
        "yield and spawn + join: time per operation (log scale)",
        PlotKind::Bars,
        "implementation",
        Axis::linear("benchmark", "benchmark"),
        Axis::log("ns_per_op", "ns per operation (median)"),
    );
    for (bench, imp, sample) in &cells {
        plot.push(imp, X::Cat(bench.to_string()), sample.median());
    }
    s.plots.push(plot);

    let get = |bench: &str, imp: &str| {
        cells
            .iter()
            .find(|(b, i, _)| *b == bench && *i == imp)
            .map_or(f64::NAN, |(_, _, s)| s.median())
    };
    let fy = get("yield", "footprint");
    let fs = get("spawn+join (1 worker)", "footprint");
    let mut table = Table::new(
        "Median time per operation (ratio: footprint ÷ peer)",
        &[
            "benchmark",
            "footprint",
            "may",
            "corosensei (floor)",
            "std::thread",
            "target",
        ],
    )
    .for_readme("micro");
    let with_ratio = |v: f64, f: f64| {
        if v.is_finite() {
            format!("{} ({})", format_ns(v), format_ratio(f / v))
        } else {
            "—".into()
        }
    };
    table.row(vec![
        "yield between two green threads, 1 worker".into(),
        format!("**{}**", format_ns(fy)),
        with_ratio(get("yield", "may"), fy),
        with_ratio(get("yield", "corosensei (floor)"), fy),
        "—".into(),
        verdict_cell(fy, 15.0),
    ]);
    table.row(vec![
        "spawn + join of an empty green thread, 1 worker".into(),
        format!("**{}**", format_ns(fs)),
        with_ratio(get("spawn+join (1 worker)", "may"), fs),
        "—".into(),
        with_ratio(get("spawn+join (1 worker)", "std::thread"), fs),
        verdict_cell(fs, 60.0),
    ]);
    table.row(vec![
        "same, 2 workers (the child may be stolen)".into(),
        format_ns(get("spawn+join (2 workers)", "footprint")),
        "—".into(),
        "—".into(),
        "—".into(),
        "—".into(),
    ]);
    s.tables.push(table);
    s.tables.push(stats.into_table());
    s.measured = format!(
        "yield {} (may {}, corosensei floor {}); spawn + join {} (may {}, std::thread {})",
        format_ns(fy),
        format_ns(get("yield", "may")),
        format_ns(get("yield", "corosensei (floor)")),
        format_ns(fs),
        format_ns(get("spawn+join (1 worker)", "may")),
        format_ns(get("spawn+join (1 worker)", "std::thread")),
    );
    s.verdict = format!(
        "yield {}; spawn + join {}",
        verdict_cell(fy, 15.0),
        verdict_cell(fs, 60.0)
    );
    Ok(s)
}

/// `≤ target ns: met` or `missed (ratio)`.
fn verdict_cell(ns: f64, target: f64) -> String {
    if !ns.is_finite() {
        "not measured".into()
    } else if ns <= target {
        format!("≤ {target} ns: met")
    } else {
        format!("≤ {target} ns: missed ({})", format_ratio(ns / target))
    }
}
