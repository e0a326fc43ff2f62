//! Draws a [`Plot`] as an SVG file with `plotters` (SVG backend only: text is written as SVG
//! `<text>` elements, so no font files or system packages are needed).

use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::{Plot, PlotKind, X};

const SIZE: (u32, u32) = (900, 480);
const PLACEHOLDER_SIZE: (u32, u32) = (900, 200);

/// A colour per series index, readable on white.
fn colour(i: usize) -> RGBColor {
    const COLOURS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    COLOURS[i % COLOURS.len()]
}

/// Writes `plot` to `path` as SVG.
pub fn draw(plot: &Plot, path: &Path) -> Result<(), String> {
    let size = match plot.kind {
        PlotKind::Placeholder(_) => PLACEHOLDER_SIZE,
        _ => SIZE,
    };
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let drawn = match &plot.kind {
        PlotKind::Placeholder(text) => placeholder(&root, &plot.title, text),
        _ if plot.points.is_empty() => placeholder(&root, &plot.title, "no data points"),
        PlotKind::Lines => lines(&root, plot),
        PlotKind::Bars => bars(&root, plot),
    };
    drawn?;
    root.present().map_err(|e| e.to_string())
}

fn placeholder(
    root: &DrawingArea<SVGBackend, Shift>,
    title: &str,
    text: &str,
) -> Result<(), String> {
    let (w, h) = root.dim_in_pixel();
    root.draw(&Text::new(
        title.to_string(),
        (20, 30),
        ("sans-serif", 20).into_font(),
    ))
    .map_err(|e| e.to_string())?;
    root.draw(&Rectangle::new(
        [(20, 60), (w as i32 - 20, h as i32 - 20)],
        ShapeStyle::from(&RGBColor(180, 180, 180)).stroke_width(2),
    ))
    .map_err(|e| e.to_string())?;
    // Long texts (errors) are wrapped at ~90 characters.
    for (i, line) in wrap(text, 90).iter().enumerate() {
        root.draw(&Text::new(
            line.clone(),
            (40, 100 + 24 * i as i32),
            ("sans-serif", 18)
                .into_font()
                .color(&RGBColor(120, 120, 120)),
        ))
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("never empty");
        if !last.is_empty() && last.chars().count() + word.chars().count() + 1 > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines.truncate(14);
    lines
}

/// `[lo, hi]` of `values`, padded; for a log axis both ends are positive.
fn range(values: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> (f64, f64) {
    let values: Vec<f64> = values
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        // From the decade below the smallest value, so that every bar and point has height.
        (10f64.powf((lo / 1.2).log10().floor()), hi * 1.5)
    } else {
        let lo = if from_zero { lo.min(0.0) } else { lo };
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05).max(1e-9);
        (
            if from_zero && lo >= 0.0 {
                0.0
            } else {
                lo - pad
            },
            hi + pad,
        )
    }
}

fn lines(root: &DrawingArea<SVGBackend, Shift>, plot: &Plot) -> Result<(), String> {
    let xs = || {
        plot.points.iter().filter_map(|p| match p.x {
            X::Num(v) => Some(v),
            X::Cat(_) => None,
        })
    };
    let (x0, x1) = range(xs(), plot.x.log, false);
    let (y0, y1) = range(plot.points.iter().map(|p| p.y), plot.y.log, true);
    match (plot.x.log, plot.y.log) {
        (false, false) => lines_in(root, plot, x0..x1, y0..y1),
        (false, true) => lines_in(root, plot, x0..x1, (y0..y1).log_scale()),
        (true, false) => lines_in(root, plot, (x0..x1).log_scale(), y0..y1),
        (true, true) => lines_in(root, plot, (x0..x1).log_scale(), (y0..y1).log_scale()),
    }
}

fn lines_in<XR, YR>(
    root: &DrawingArea<SVGBackend, Shift>,
    plot: &Plot,
    x_range: XR,
    y_range: YR,
) -> Result<(), String>
where
    XR: AsRangedCoord<Value = f64>,
    YR: AsRangedCoord<Value = f64>,
    XR::CoordDescType: ValueFormatter<f64>,
    YR::CoordDescType: ValueFormatter<f64>,
{
    // Few integer x values (degrees, n): one label per value, none between.
    let mut xs: Vec<f64> = plot
        .points
        .iter()
        .filter_map(|p| match p.x {
            X::Num(v) => Some(v),
            X::Cat(_) => None,
        })
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let integer_x = !plot.x.log && xs.len() <= 12 && xs.iter().all(|v| v.fract() == 0.0);
    let x_format = |v: &f64| {
        if integer_x && v.fract() != 0.0 {
            String::new()
        } else {
            short_number(*v)
        }
    };
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range, y_range)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(plot.x.label.as_str())
        .y_desc(plot.y.label.as_str())
        .y_label_formatter(&|v| short_number(*v))
        .x_label_formatter(&x_format)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, name) in plot.series_names().iter().enumerate() {
        let c = colour(i);
        let mut pts: Vec<(f64, f64)> = plot
            .points
            .iter()
            .filter(|p| &p.series == name)
            .filter_map(|p| match p.x {
                X::Num(x) => Some((x, p.y)),
                X::Cat(_) => None,
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        if pts.len() <= 40 {
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(|e| e.to_string())?;
        }
    }
    legend(&mut chart)
}

fn legend<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())
}

fn bars(root: &DrawingArea<SVGBackend, Shift>, plot: &Plot) -> Result<(), String> {
    let (y0, y1) = range(plot.points.iter().map(|p| p.y), plot.y.log, true);
    let (y0, y1) = if plot.y.log {
        (y0, y1 * 3.0)
    } else {
        (y0, y1 * 1.25)
    };
    if plot.y.log {
        bars_in(root, plot, (y0..y1).log_scale(), y0)
    } else {
        bars_in(root, plot, y0..y1, y0)
    }
}

/// Categories sit at x = 0, 1, 2, ... (so that the mesh's integer key points name them); the bars
/// of one category share [i − 0.4, i + 0.4].
fn bars_in<YR>(
    root: &DrawingArea<SVGBackend, Shift>,
    plot: &Plot,
    y_range: YR,
    base: f64,
) -> Result<(), String>
where
    YR: AsRangedCoord<Value = f64>,
    YR::CoordDescType: ValueFormatter<f64>,
{
    let cats = plot.categories();
    let series = plot.series_names();
    let n = cats.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y_range)
        .map_err(|e| e.to_string())?;
    let label = |x: &f64| -> String {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        cats.get(i as usize).cloned().unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n + 1)
        .x_label_formatter(&label)
        .x_desc(plot.x.label.as_str())
        .y_desc(plot.y.label.as_str())
        .y_label_formatter(&|v| short_number(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|e| e.to_string())?;
    let width = 0.8 / series.len().max(1) as f64;
    for (j, name) in series.iter().enumerate() {
        let c = colour(j);
        let rects: Vec<Rectangle<(f64, f64)>> = plot
            .points
            .iter()
            .filter(|p| &p.series == name)
            .filter_map(|p| {
                let X::Cat(cat) = &p.x else { return None };
                let i = cats.iter().position(|c| c == cat)? as f64;
                let left = i - 0.4 + j as f64 * width;
                Some(Rectangle::new(
                    [(left + width * 0.05, base), (left + width * 0.95, p.y)],
                    c.filled(),
                ))
            })
            .collect();
        chart
            .draw_series(rects)
            .map_err(|e| e.to_string())?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    legend(&mut chart)
}

/// Axis tick text: few digits, SI-style suffixes for large values.
fn short_number(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e9 {
        trim(format!("{:.2}", v / 1e9)) + "G"
    } else if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.2}", v / 1e3)) + "k"
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.4}"))
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
