//! What an experiment hands back: a section of the report (the paper's claim, our figure, a
//! verdict, plots, tables), independent of how it is written out (html.rs, markdown.rs, csv.rs).

use std::time::Duration;

/// How a section came out.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Measured here, now.
    Measured,
    /// The experiment panicked, returned an error or ran past its time limit.
    Failed(String),
}

impl Status {
    /// A short label for tables.
    pub fn label(&self) -> String {
        match self {
            Status::Measured => "measured".into(),
            Status::Failed(error) => format!("FAILED: {error}"),
        }
    }
}

/// An x value: a number (line plots) or a category (bar plots).
#[derive(Clone, Debug, PartialEq)]
pub enum X {
    Num(f64),
    Cat(String),
}

impl X {
    /// The CSV cell.
    pub fn cell(&self) -> String {
        match self {
            X::Num(v) => format_number(*v),
            X::Cat(c) => c.clone(),
        }
    }
}

/// One point of one series.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub series: String,
    pub x: X,
    pub y: f64,
}

/// One axis: the CSV column it comes from, the label drawn, and whether it is logarithmic.
#[derive(Clone, Debug)]
pub struct Axis {
    pub column: String,
    pub label: String,
    pub log: bool,
}

impl Axis {
    pub fn linear(column: &str, label: &str) -> Axis {
        Axis {
            column: column.into(),
            label: label.into(),
            log: false,
        }
    }

    pub fn log(column: &str, label: &str) -> Axis {
        Axis {
            log: true,
            ..Axis::linear(column, label)
        }
    }
}

/// How a plot is drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum PlotKind {
    /// One line with markers per series over numeric x.
    Lines,
    /// Grouped bars: one group per category of x, one bar per series.
    Bars,
    /// No data yet (pending or failed): the text is drawn instead.
    Placeholder(String),
}

/// One plot; its CSV has exactly the columns `series.column`, `x.column`, `y.column`.
#[derive(Clone, Debug)]
pub struct Plot {
    /// File stem of the SVG and the CSV (`<id>.svg`, `<id>.csv`).
    pub id: String,
    pub title: String,
    pub kind: PlotKind,
    /// The series column (legend).
    pub series: String,
    pub x: Axis,
    pub y: Axis,
    pub points: Vec<Point>,
}

impl Plot {
    /// An empty plot of `kind`.
    pub fn new(id: &str, title: &str, kind: PlotKind, series: &str, x: Axis, y: Axis) -> Plot {
        Plot {
            id: id.into(),
            title: title.into(),
            kind,
            series: series.into(),
            x,
            y,
            points: Vec::new(),
        }
    }

    /// Adds a point; non-finite values are dropped (a failed cell leaves a gap, never a NaN in
    /// the CSV).
    pub fn push(&mut self, series: &str, x: X, y: f64) {
        if y.is_finite() {
            self.points.push(Point {
                series: series.into(),
                x,
                y,
            });
        }
    }

    /// A placeholder with the planned columns and no rows, drawn as `text`.
    pub fn placeholder(&self, text: &str) -> Plot {
        Plot {
            kind: PlotKind::Placeholder(text.into()),
            points: Vec::new(),
            ..self.clone()
        }
    }

    /// The series names in first-seen order.
    pub fn series_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for p in &self.points {
            if !names.contains(&p.series) {
                names.push(p.series.clone());
            }
        }
        names
    }

    /// The categories of x in first-seen order (bar plots).
    pub fn categories(&self) -> Vec<String> {
        let mut cats: Vec<String> = Vec::new();
        for p in &self.points {
            if let X::Cat(c) = &p.x {
                if !cats.contains(c) {
                    cats.push(c.clone());
                }
            }
        }
        cats
    }
}

/// A table in the report; `readme` names the README marker it also fills.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub readme: Option<&'static str>,
}

impl Table {
    pub fn new(title: &str, header: &[&str]) -> Table {
        Table {
            title: title.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            ..Table::default()
        }
    }

    /// Also written into README blocks marked `name`.
    pub fn for_readme(mut self, name: &'static str) -> Table {
        self.readme = Some(name);
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

/// One section of the report.
#[derive(Clone, Debug)]
pub struct Section {
    /// The experiment's name (`--only NAME`).
    pub name: String,
    pub title: String,
    /// The paper or issue it comes from.
    pub source: String,
    /// What the paper (or the target) claims.
    pub claim: String,
    /// Our figure, one or two sentences.
    pub measured: String,
    /// One line: met / missed / pending / failed and why.
    pub verdict: String,
    pub status: Status,
    pub plots: Vec<Plot>,
    pub tables: Vec<Table>,
    pub notes: Vec<String>,
    /// Wall time the experiment took.
    pub elapsed: Duration,
}

impl Section {
    pub fn new(name: &str, title: &str, source: &str, claim: &str) -> Section {
        Section {
            name: name.into(),
            title: title.into(),
            source: source.into(),
            claim: claim.into(),
            measured: String::new(),
            verdict: String::new(),
            status: Status::Measured,
            plots: Vec::new(),
            tables: Vec::new(),
            notes: Vec::new(),
            elapsed: Duration::ZERO,
        }
    }
}

/// A number for a CSV cell or a table: integers as integers, others with 4 significant digits.
pub fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        format!("{v:.4e}")
    } else {
        let digits = (4 - v.abs().log10().floor() as i32 - 1).clamp(0, 8) as usize;
        format!("{v:.digits$}")
    }
}

/// A duration in ns as text with a unit (`15.1 ns`, `1.09 µs`, `24.1 ms`, `1.20 s`).
pub fn format_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "—".into();
    }
    let (v, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// A ratio as text (`1.23×`).
pub fn format_ratio(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.2}×")
    } else {
        "—".into()
    }
}

/// An interval of ratios, "0.95–1.40×".
pub fn format_interval(lo: f64, hi: f64) -> String {
    format!("{lo:.2}–{hi:.2}×")
}

/// "s" after a count other than one ("1 worker", "2 workers").
pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
