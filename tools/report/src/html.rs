//! `index.html`: the report as one page, plots linked as `<img>` (the SVGs beside it).

use std::fmt::Write as _;

use crate::header::Header;
use crate::markdown::summary;
use crate::model::{Section, Status, Table};

/// Escapes text for HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Escapes and renders the two inline Markdown marks the tables use: `**bold**` and `` `code` ``.
fn inline(text: &str) -> String {
    let mut out = String::new();
    let (mut bold, mut code) = (false, false);
    let escaped = escape(text);
    let mut rest = escaped.as_str();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("**") {
            out.push_str(if bold { "</b>" } else { "<b>" });
            bold = !bold;
            rest = r;
        } else if let Some(r) = rest.strip_prefix('`') {
            out.push_str(if code { "</code>" } else { "<code>" });
            code = !code;
            rest = r;
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if code {
        out.push_str("</code>");
    }
    if bold {
        out.push_str("</b>");
    }
    out
}

fn table(out: &mut String, t: &Table) {
    if !t.title.is_empty() {
        let _ = writeln!(out, "<h4>{}</h4>", inline(&t.title));
    }
    let _ = writeln!(out, "<table>\n<tr>");
    for h in &t.header {
        let _ = write!(out, "<th>{}</th>", inline(h));
    }
    let _ = writeln!(out, "</tr>");
    for row in &t.rows {
        let _ = write!(out, "<tr>");
        for c in row {
            let _ = write!(out, "<td>{}</td>", inline(c));
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</table>");
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;\
color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;\
padding:3px 8px;font-size:13px;text-align:left}th{background:#f3f3f3}img{max-width:100%;\
border:1px solid #eee}.status{display:inline-block;padding:1px 8px;border-radius:3px;\
font-size:13px}.measured{background:#dff0d8}.pending{background:#fcf8e3}.failed{background:#f2dede}\
dt{font-weight:bold;margin-top:.3em}section{border-top:2px solid #ddd;margin-top:2em}";

/// The whole page.
pub fn render(header: &Header, sections: &[Section]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>footprint report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>footprint report</h1>\n<ul>"
    );
    for line in header.lines() {
        let _ = writeln!(out, "<li>{}</li>", inline(&line));
    }
    let _ = writeln!(out, "</ul>\n<h2>Summary</h2>");
    // The heading above names it already.
    let mut overview = summary(sections);
    overview.title.clear();
    table(&mut out, &overview);
    for s in sections {
        let class = match s.status {
            Status::Measured => "measured",
            Status::Failed(_) => "failed",
        };
        let _ = writeln!(
            out,
            "<section id=\"{}\">\n<h2>{}</h2>\n<span class=\"status {class}\">{}</span>\n<dl>",
            escape(&s.name),
            escape(&s.title),
            escape(&s.status.label())
        );
        for (term, text) in [
            ("Source", &s.source),
            ("Claim", &s.claim),
            ("Measured", &s.measured),
            ("Verdict", &s.verdict),
        ] {
            let _ = writeln!(out, "<dt>{term}</dt><dd>{}</dd>", inline(text));
        }
        let _ = writeln!(out, "<dt>Time taken</dt><dd>{:.1?}</dd>\n</dl>", s.elapsed);
        for p in &s.plots {
            let _ = writeln!(
                out,
                "<figure><img src=\"{id}.svg\" alt=\"{t}\"><figcaption>{t} \
                 (<a href=\"{id}.csv\">data</a>)</figcaption></figure>",
                id = escape(&p.id),
                t = escape(&p.title)
            );
        }
        for t in &s.tables {
            table(&mut out, t);
        }
        for n in &s.notes {
            let _ = writeln!(out, "<p><i>{}</i></p>", inline(n));
        }
        let _ = writeln!(out, "</section>");
    }
    let _ = writeln!(out, "</body>\n</html>");
    out
}
