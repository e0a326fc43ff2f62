//! 004's reload-transient model (§3.3.1), drawn as the thesis draws it for a 64-line cache:
//! footprint growth (Fig. 3.7), displacement (Fig. 3.9) and the reload transient (Fig. 3.10),
//! computed by `footprint::affinity::reload`, and checked against the explicit Markov chain.

use footprint::affinity::reload::{self, markov};

use crate::experiments::Ctx;
use crate::model::{Axis, Plot, PlotKind, Section, Table, X};

/// The thesis's cache size for these figures.
const LINES: u64 = 64;

pub fn run(_: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "reload_004",
        "004: reload-transient model curves (Fig. 3.7, 3.9, 3.10)",
        "004 (Bellosa), §3.3.1, eq. 3.2/3.3",
        "The expected footprint grows towards the cache size with every miss (slowly when many \
         lines are already valid), a stopped thread's footprint decays with the others' misses, \
         and the reload transient favours small footprints after long waits and large ones \
         after short waits.",
    );
    let misses: Vec<u64> = (0..=64).map(|i| i * 4).collect();
    let mut growth = Plot::new(
        "reload_004-growth",
        "Fig. 3.7: footprint growth, 64-line cache",
        PlotKind::Lines,
        "valid_lines_at_start",
        Axis::linear("misses", "cache misses while running"),
        Axis::linear("expected_footprint", "expected footprint, lines"),
    );
    let mut displacement = Plot::new(
        "reload_004-displacement",
        "Fig. 3.9: displacement of a stopped thread's footprint, 64-line cache",
        PlotKind::Lines,
        "footprint_at_stop",
        Axis::linear("misses", "cache misses of other threads"),
        Axis::linear("expected_remaining", "expected remaining lines"),
    );
    let mut transient = Plot::new(
        "reload_004-transient",
        "Fig. 3.10: reload transient after waiting, 64-line cache",
        PlotKind::Lines,
        "footprint_at_stop",
        Axis::linear("misses", "cache misses of other threads while it waited"),
        Axis::linear(
            "reload_transient",
            "expected misses to rebuild the footprint",
        ),
    );
    let mut worst = 0.0f64;
    for v in [0u64, 8, 16, 32, 48] {
        for &n in &misses {
            let f = reload::expected_footprint(LINES, v as f64, n as f64);
            growth.push(&format!("v = {v}"), X::Num(n as f64), f);
            let oracle = markov::expected_footprint(LINES as usize, v as usize, n);
            worst = worst.max((f - oracle).abs());
        }
    }
    for f in [8u64, 16, 32, 48, 64] {
        for &n in &misses {
            let left = reload::expected_remaining(LINES, f as f64, n as f64);
            displacement.push(&format!("f = {f}"), X::Num(n as f64), left);
            let oracle = markov::expected_remaining(LINES as usize, f as usize, n);
            worst = worst.max((left - oracle).abs());
            if f < LINES {
                let rt = reload::reload_transient(LINES, f as f64, left);
                transient.push(&format!("f = {f}"), X::Num(n as f64), rt);
            }
        }
    }
    s.plots.extend([growth, displacement, transient]);
    let mut table = Table::new(
        "Reload transient (misses) after others' misses, 64-line cache",
        &["footprint", "after 16 misses", "after 64", "after 256"],
    );
    for f in [8u64, 16, 32, 48] {
        let mut row = vec![format!("{f} lines")];
        for n in [16.0, 64.0, 256.0] {
            let left = reload::expected_remaining(LINES, f as f64, n);
            row.push(format!(
                "{:.1}",
                reload::reload_transient(LINES, f as f64, left)
            ));
        }
        table.row(row);
    }
    s.tables.push(table);
    s.measured = format!(
        "closed forms vs the explicit Markov chain (eq. 3.2/3.3) over these curves: largest \
         difference {worst:.1e} lines"
    );
    s.verdict = if worst < 1e-6 {
        "the curves have the thesis's shapes and the closed forms match the Markov chain: met"
            .into()
    } else {
        format!("closed forms differ from the Markov chain by up to {worst:.1e} lines: check")
    };
    Ok(s)
}
