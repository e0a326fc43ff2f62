//! The suite's outputs: the ratio table (text and Markdown), the CSV of every time, and an SVG
//! plot of ratio against workers (one line per row).

use crate::Cell;
use std::fmt::Write as _;
use std::path::Path;

/// Everything one run measured.
pub struct Table {
    pub mode: &'static str,
    pub runs: usize,
    pub cpus: usize,
    /// Each row's label and its cells, one per worker count in run order.
    pub rows: Vec<(String, Vec<Cell>)>,
    /// Per worker count: footprint's sleeps, expired sleeps, expired sleeps that found work.
    pub sleeps: Vec<(usize, u64, u64, u64)>,
}

impl Table {
    fn counts(&self) -> Vec<usize> {
        self.sleeps.iter().map(|s| s.0).collect()
    }

    fn label_width(&self) -> usize {
        self.rows
            .iter()
            .map(|r| r.0.chars().count())
            .max()
            .unwrap_or(8)
    }

    /// The ratio table as plain text.
    pub fn text(&self) -> String {
        let wid = self.label_width();
        let mut s = format!("{:<wid$}", "footprint time ÷ peer's (W workers)");
        for w in self.counts() {
            let _ = write!(s, " {:>7}", format!("W={w}"));
        }
        s.push('\n');
        for (label, cells) in &self.rows {
            let _ = write!(s, "{label:<wid$}");
            for c in cells {
                let _ = write!(s, " {:>7.2}", c.ratio());
            }
            s.push('\n');
        }
        s
    }

    /// The ratio table as Markdown, with what was measured and how.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Footprint's time ÷ the peer's (below 1: footprint ahead), median of {} runs, \
             `{}` mode, {} CPUs allowed; both sides on the same W CPUs.\n",
            self.runs, self.mode, self.cpus
        );
        s.push_str("| workload ÷ peer |");
        for w in self.counts() {
            let over = if w > self.cpus { "*" } else { "" };
            let _ = write!(s, " W={w}{over} |");
        }
        s.push_str("\n|---|");
        for _ in self.counts() {
            s.push_str("---|");
        }
        s.push('\n');
        for (label, cells) in &self.rows {
            let _ = write!(s, "| {label} |");
            for c in cells {
                let _ = write!(s, " {:.2} |", c.ratio());
            }
            s.push('\n');
        }
        if self.counts().iter().any(|&w| w > self.cpus) {
            let _ = writeln!(
                s,
                "\n\\* more workers than CPUs (oversubscribed): the shape of the protocol at \
                 that worker count, not a figure to quote."
            );
        }
        s.push_str("\n| W | footprint idle sleeps | ran out (safety net) | ran out, then found work |\n|---|---|---|---|\n");
        for (w, sleeps, expired, lost) in &self.sleeps {
            let _ = writeln!(s, "| {w} | {sleeps} | {expired} | {lost} |");
        }
        s
    }

    /// Every time, one line per row and worker count.
    pub fn csv(&self) -> String {
        let mut s = String::from("workload,workers,footprint_s,peer_s,ratio\n");
        for (label, cells) in &self.rows {
            for c in cells {
                let _ = writeln!(
                    s,
                    "\"{}\",{},{:.6},{:.6},{:.4}",
                    label.replace('"', "'"),
                    c.workers,
                    c.footprint,
                    c.peer,
                    c.ratio()
                );
            }
        }
        s
    }

    /// Ratio against workers (log scale for W), one polyline per row, a line at 1.
    pub fn svg(&self) -> String {
        let (w_px, h_px, left, right, top, bottom) = (900.0, 520.0, 60.0, 330.0, 20.0, 50.0);
        let counts = self.counts();
        let max_ratio = self
            .rows
            .iter()
            .flat_map(|r| r.1.iter().map(Cell::ratio))
            .filter(|r| r.is_finite())
            .fold(1.5f64, f64::max)
            .min(6.0);
        let lw = (counts.iter().copied().max().unwrap_or(1).max(2) as f64).log2();
        let x = |w: usize| left + (w_px - left - right) * (w as f64).log2() / lw;
        let y = |r: f64| top + (h_px - top - bottom) * (1.0 - r.min(max_ratio) / max_ratio);
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w_px}\" height=\"{h_px}\" \
             font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        );
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"black\" stroke-dasharray=\"4\"/>",
            y(1.0),
            w_px - right
        );
        for &w in &counts {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{w}</text>",
                x(w),
                h_px - bottom + 15.0
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">workers (W)</text>",
            (w_px - right + left) / 2.0,
            h_px - 10.0
        );
        for k in 0..=4 {
            let r = max_ratio * f64::from(k) / 4.0;
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{r:.2}</text>",
                left - 5.0,
                y(r) + 4.0
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {0})\" text-anchor=\"middle\">footprint ÷ peer</text>",
            (h_px - bottom + top) / 2.0
        );
        for (i, (label, cells)) in self.rows.iter().enumerate() {
            let hue = (i * 360 / self.rows.len().max(1)) as u32;
            let points: Vec<String> = cells
                .iter()
                .map(|c| format!("{:.1},{:.1}", x(c.workers), y(c.ratio())))
                .collect();
            let _ = writeln!(
                s,
                "<polyline fill=\"none\" stroke=\"hsl({hue},70%,40%)\" stroke-width=\"1.5\" points=\"{}\"/>",
                points.join(" ")
            );
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" fill=\"hsl({hue},70%,40%)\">{}</text>",
                w_px - right + 10.0,
                top + 12.0 + 14.0 * i as f64,
                label.replace('&', "&amp;").replace('<', "&lt;")
            );
        }
        s.push_str("</svg>\n");
        s
    }

    /// Writes `scaling.csv`, `scaling.svg` and `scaling.md` into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("scaling.csv"), self.csv())?;
        std::fs::write(dir.join("scaling.svg"), self.svg())?;
        std::fs::write(dir.join("scaling.md"), self.markdown())
    }
}
