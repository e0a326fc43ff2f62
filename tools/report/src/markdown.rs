//! `report.md`: the report as Markdown (tables, plots linked as images, CSVs linked), and the
//! Markdown table text the README blocks reuse.

use std::fmt::Write as _;

use crate::header::Header;
use crate::model::{Section, Table};

/// A table cell: pipes escaped, line breaks flattened.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A Markdown table.
pub fn table(t: &Table) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| {} |",
        t.header
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(out, "|{}", " --- |".repeat(t.header.len()));
    for row in &t.rows {
        let mut cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        cells.resize(t.header.len(), String::new());
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// The summary table: one row per section.
pub fn summary(sections: &[Section]) -> Table {
    let mut t = Table::new("Summary", &["experiment", "measured", "verdict"]).for_readme("summary");
    for s in sections {
        t.row(vec![s.title.clone(), s.measured.clone(), s.verdict.clone()]);
    }
    t
}

/// The report's head: title, run header and summary table.
pub fn head(header: &Header, sections: &[Section]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# footprint report\n");
    for line in header.lines() {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(out, "\n## Summary\n\n{}", table(&summary(sections)));
    out
}

/// One experiment's section: its title, status, claim and verdict, plots, tables and notes.
pub fn section(s: &Section) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## {}\n", s.title);
    let _ = writeln!(out, "- **Status:** {}", s.status.label());
    let _ = writeln!(out, "- **Source:** {}", s.source);
    let _ = writeln!(out, "- **Claim:** {}", s.claim);
    let _ = writeln!(out, "- **Measured:** {}", s.measured);
    let _ = writeln!(out, "- **Verdict:** {}", s.verdict);
    let _ = writeln!(out, "- **Time taken:** {:.1?}\n", s.elapsed);
    for p in &s.plots {
        let _ = writeln!(
            out,
            "![{}]({}.svg)\n\n[data: {}.csv]({}.csv)\n",
            p.title, p.id, p.id, p.id
        );
    }
    for t in &s.tables {
        let _ = writeln!(out, "**{}**\n\n{}", t.title, table(t));
    }
    for n in &s.notes {
        let _ = writeln!(out, "> {n}\n");
    }
    out
}

/// The whole report (`report.md`; `index.html` is the same Markdown rendered).
pub fn render(header: &Header, sections: &[Section]) -> String {
    let mut out = head(header, sections);
    for s in sections {
        out.push_str(&section(s));
    }
    out
}
