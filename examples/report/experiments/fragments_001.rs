//! 001's data-fragment benchmark, hints on / off: **pending** until the scheduler issue (#10)
//! gives green threads data-fragment hints.
//!
//! To fill it in once hints land: measure 001's DF micro-benchmark (threads × fragment count ×
//! fragment size × iterations, sizes around the L2) with hints on, off and rayon, push one point
//! per (variant, fragment size) into `planned_plot()`, set `s.status = Status::Measured`, and
//! write `measured` and `verdict` from the figures (target: ≥ 10 % less time with hints where
//! fragments fit the L2 one at a time but not all together).

use crate::experiments::Ctx;
use crate::model::{Axis, Plot, PlotKind, Section, Status, Table};

pub const PENDING: &str = "issue 10 (data-fragment hints, 001)";

/// The plot the experiment will draw, with the columns its CSV will have.
fn planned_plot() -> Plot {
    Plot::new(
        "fragments_001",
        "001: DF micro-benchmark, time per run vs fragment size",
        PlotKind::Lines,
        "variant",
        Axis::log("fragment_kib", "fragment size, KiB"),
        Axis::log("time_ms", "time per run, ms (median)"),
    )
}

pub fn run(_: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "fragments_001",
        "001: data-fragment hints on / off",
        "001 (Pinter, Zalmanovici: data sharing conscious scheduling), §3–5",
        "Batching the threads that work on one data fragment on one processor, back to back, \
         cuts the misses of reloading the fragment: less time where fragments fit the cache one \
         at a time but not all together.",
    );
    s.status = Status::Pending(PENDING.into());
    s.measured = "not measured yet: green threads cannot name a data fragment".into();
    s.verdict = format!("pending: {PENDING}");
    let plot = planned_plot();
    s.plots
        .push(plot.placeholder(&format!("pending: {PENDING}")));
    s.tables.push(
        Table::new(
            "Planned: median time per run, hints on / off / rayon",
            &[
                "fragment size",
                "hints on",
                "hints off",
                "rayon",
                "on ÷ off",
            ],
        )
        .for_readme("fragments_001"),
    );
    Ok(s)
}
