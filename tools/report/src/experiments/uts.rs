//! Runtime vs peers, irregular parallelism: a UTS-like unbalanced tree (workloads/uts.rs), one
//! thread or job per node, time and peak memory per implementation in a child process each.

use crate::experiments::skynet::{run_grid, Grid};
use crate::experiments::Ctx;
use crate::model::Section;

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "uts",
        "Runtime vs peers: UTS-like unbalanced tree",
        "issue (runtime vs peers); UTS geometric trees",
        "An unbalanced tree whose shape is only known while it is walked is balanced by work \
         stealing as well as by rayon, with one green thread per node.",
    );
    // Depth 6: ~7,400 nodes; 8: ~118,000; 9: ~471,000 (mean 4 children per node).
    let (depth, label) = ctx.mode.pick(
        (5, "depth 5"),
        (8, "depth 8"),
        (9, "depth 9"),
        (10, "depth 10"),
    );
    let grid = Grid {
        workload: "uts",
        sizes: if depth > 6 {
            vec![(6, "depth 6".to_string()), (depth, label.to_string())]
        } else {
            vec![(depth, label.to_string())]
        },
        may_max: 6,
    };
    run_grid(ctx, &grid, &mut s);
    let last = s.tables[0].rows.last().cloned().unwrap_or_default();
    s.measured = format!(
        "{} (mean 4 children per node): footprint {}, rayon {}, footprint ÷ rayon {}",
        last.first().cloned().unwrap_or_default(),
        last.get(1).cloned().unwrap_or_default(),
        last.get(2).cloned().unwrap_or_default(),
        last.get(4).cloned().unwrap_or_default()
    );
    s.verdict = "reported (no numeric target); compare the ratio to rayon".into();
    s.notes.push(
        "std threads are not run: one OS thread per node of a 10⁵-node tree is not a practical \
         program."
            .into(),
    );
    Ok(s)
}
