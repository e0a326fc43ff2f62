//! The raw data of a plot as CSV: exactly the columns the plot used (series, x, y).

use std::fmt::Write as _;

use crate::model::{format_number, Plot};

/// Quotes a cell when it holds a comma, a quote or a line break (RFC 4180).
fn cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The CSV text of `plot`: a header row, then one row per point.
pub fn render(plot: &Plot) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{},{},{}",
        cell(&plot.series),
        cell(&plot.x.column),
        cell(&plot.y.column)
    );
    for p in &plot.points {
        let _ = writeln!(
            out,
            "{},{},{}",
            cell(&p.series),
            cell(&p.x.cell()),
            format_number(p.y)
        );
    }
    out
}
