//! Output: the per-policy table, CSV, and an SVG plot of synchronisations per simulated second
//! and misses per synchronisation against CPU count (hand-written SVG: no fonts, no system
//! packages).
//!
//! ```
//! use footprint_sim::report::{csv, svg_plot, table, CSV_HEADER};
//! let rows = Vec::new();
//! assert!(table(&rows).contains("policy"));
//! assert_eq!(csv(&rows).lines().next(), Some(CSV_HEADER));
//! assert!(svg_plot("empty", &rows).starts_with("<svg"));
//! ```

use crate::sched::{PolicyChoice, SimReport};
use std::fmt::Write;

/// The CSV header line.
pub const CSV_HEADER: &str = "workload,cpus,nodes,policy,resolved,syncs,sim_seconds,\
syncs_per_sim_second,misses_per_sync,llc_misses_per_sync,steals,stops,refs,simulated_refs,wall_seconds";

/// One row per report: policy, resolved policy, misses per synchronisation, simulated time,
/// synchronisations per simulated second, and the gain over NoAffinity at the same CPU count.
pub fn table(rows: &[SimReport]) -> String {
    let mut s = format!(
        "{:<16} {:>5} {:>16} {:>12} {:>12} {:>12} {:>16} {:>9} {:>9}\n",
        "policy",
        "cpus",
        "resolved",
        "misses/sync",
        "LLC/sync",
        "sim time s",
        "syncs/sim s",
        "vs NoAff",
        "wall s"
    );
    for r in rows {
        let base = rows
            .iter()
            .find(|b| b.cpus == r.cpus && b.policy == PolicyChoice::ALL[0].name())
            .map(|b| b.syncs_per_sim_second());
        let gain = base.map_or(String::from("-"), |b| {
            format!("{:.3}", r.syncs_per_sim_second() / b)
        });
        let _ = writeln!(
            s,
            "{:<16} {:>5} {:>16} {:>12.1} {:>12.1} {:>12.6} {:>16.0} {:>9} {:>9.2}",
            r.policy,
            r.cpus,
            r.resolved.name(),
            r.misses_per_sync(),
            r.llc_misses_per_sync(),
            r.sim_seconds(),
            r.syncs_per_sim_second(),
            gain,
            r.wall_secs
        );
    }
    s
}

/// Every report as a CSV line under [`CSV_HEADER`].
pub fn csv(rows: &[SimReport]) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in rows {
        let _ = writeln!(
            s,
            "\"{}\",{},{},{},{},{},{:.9},{:.1},{:.3},{:.3},{},{},{},{},{:.3}",
            r.workload.replace('"', "'"),
            r.cpus,
            r.nodes,
            r.policy,
            r.resolved.name(),
            r.syncs,
            r.sim_seconds(),
            r.syncs_per_sim_second(),
            r.misses_per_sync(),
            r.llc_misses_per_sync(),
            r.steals,
            r.stops,
            r.refs,
            r.simulated_refs,
            r.wall_secs
        );
    }
    s
}

const COLORS: [&str; 6] = [
    "#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
];

/// Three panels side by side against CPU count (log scale), one line per policy:
/// synchronisations per simulated second, the same relative to NoAffinity at that CPU count
/// (004 Fig. 3.14's view), and counted-level misses per synchronisation.
pub fn svg_plot(title: &str, rows: &[SimReport]) -> String {
    let (w, h) = (1420.0, 440.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        w / 2.0,
        escape(title)
    );
    let relative = |r: &SimReport| -> f64 {
        rows.iter()
            .find(|b| b.cpus == r.cpus && b.policy == PolicyChoice::ALL[0].name())
            .map_or(1.0, |b| {
                r.syncs_per_sim_second() / b.syncs_per_sim_second().max(1e-12)
            })
    };
    // (label, value per row, whether the axis starts at 0)
    let panels: [(&str, Vec<f64>, bool); 3] = [
        (
            "synchronisations per simulated second",
            rows.iter().map(SimReport::syncs_per_sim_second).collect(),
            true,
        ),
        (
            "relative to NoAffinity",
            rows.iter().map(relative).collect(),
            false,
        ),
        (
            "misses per synchronisation (counted level)",
            rows.iter().map(SimReport::misses_per_sync).collect(),
            true,
        ),
    ];
    let mut cpus: Vec<usize> = rows.iter().map(|r| r.cpus).collect();
    cpus.sort_unstable();
    cpus.dedup();
    for (p, (label, values, from_zero)) in panels.iter().enumerate() {
        let (x0, y0, pw, ph) = (70.0 + p as f64 * 460.0, 50.0, 380.0, 330.0);
        let top = values.iter().copied().fold(f64::MIN, f64::max);
        let bottom = values.iter().copied().fold(f64::MAX, f64::min);
        let (ymin, ymax) = if *from_zero || values.is_empty() {
            (0.0, top.max(1e-9) * 1.08)
        } else {
            let pad = ((top - bottom) * 0.08).max(0.01);
            (bottom - pad, top + pad)
        };
        let lx = |c: usize| -> f64 {
            let (lo, hi) = (
                (*cpus.first().unwrap_or(&1) as f64).log2(),
                (*cpus.last().unwrap_or(&2) as f64).log2(),
            );
            let span = (hi - lo).max(1e-9);
            x0 + ((c as f64).log2() - lo) / span * pw
        };
        let ly = |v: f64| y0 + ph - (v - ymin) / (ymax - ymin).max(1e-12) * ph;
        let _ = writeln!(
            s,
            "<rect x=\"{x0}\" y=\"{y0}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"black\"/>\n\
             <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{label}</text>\n\
             <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">CPUs</text>",
            x0 + pw / 2.0,
            y0 - 8.0,
            x0 + pw / 2.0,
            y0 + ph + 34.0
        );
        for &c in &cpus {
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{c}</text>",
                lx(c),
                y0 + ph + 16.0
            );
        }
        for i in 0..=4 {
            let v = ymin + (ymax - ymin) * i as f64 / 4.0;
            let _ = writeln!(
                s,
                "<line x1=\"{x0}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
                 <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                x0 + pw,
                x0 - 4.0,
                ly(v) + 4.0,
                short(v),
                y = ly(v)
            );
        }
        for (k, choice) in PolicyChoice::ALL.iter().enumerate() {
            let mut pts: Vec<(usize, f64)> = rows
                .iter()
                .zip(values)
                .filter(|(r, _)| r.policy == choice.name())
                .map(|(r, &v)| (r.cpus, v))
                .collect();
            pts.sort_by_key(|&(c, _)| c);
            if pts.is_empty() {
                continue;
            }
            let path: Vec<String> = pts
                .iter()
                .map(|&(c, v)| format!("{:.1},{:.1}", lx(c), ly(v)))
                .collect();
            let dash = if *choice == PolicyChoice::Auto {
                " stroke-dasharray=\"6,4\""
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{dash}/>",
                path.join(" "),
                COLORS[k]
            );
            for &(c, v) in &pts {
                let _ = writeln!(
                    s,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"/>",
                    lx(c),
                    ly(v),
                    COLORS[k]
                );
            }
        }
    }
    for (k, choice) in PolicyChoice::ALL.iter().enumerate() {
        let x = 70.0 + k as f64 * 200.0;
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"{}\" width=\"14\" height=\"4\" fill=\"{}\"/>\
             <text x=\"{}\" y=\"{}\">{}</text>",
            h - 22.0,
            COLORS[k],
            x + 18.0,
            h - 16.0,
            choice.name()
        );
    }
    s.push_str("</svg>\n");
    s
}

fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
