//! Rewrites the README blocks between `<!-- report:begin NAME -->` and `<!-- report:end NAME -->`
//! with the tables of this run that carry that name, so that the READMEs' figures are the
//! report's, stated with the command and the commit.

use std::path::Path;

use crate::header::Header;
use crate::markdown;
use crate::model::Table;

const BEGIN: &str = "<!-- report:begin ";
const END: &str = "<!-- report:end ";

/// The block body for `name`: the generated-by line and every table named `name`; `None` when
/// this run produced no such table (the block is then left as it is).
fn block(name: &str, tables: &[&Table], header: &Header) -> Option<String> {
    let mine: Vec<&&Table> = tables.iter().filter(|t| t.readme == Some(name)).collect();
    if mine.is_empty() {
        return None;
    }
    let mut body = format!("\n{}\n\n", header.readme_line());
    for t in mine {
        body.push_str(&format!("{}:\n\n{}\n", t.title, markdown::table(t)));
    }
    Some(body)
}

/// Replaces the marked blocks of `text`; returns the new text and the names it filled.
pub fn rewrite(
    text: &str,
    tables: &[&Table],
    header: &Header,
) -> Result<(String, Vec<String>), String> {
    let mut out = String::new();
    let mut filled = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let after_begin = &rest[start + BEGIN.len()..];
        let close = after_begin
            .find("-->")
            .ok_or("a report:begin marker without its closing -->")?;
        let name = after_begin[..close].trim().to_string();
        let body_start = start + BEGIN.len() + close + 3;
        let end_marker = format!("{END}{name} -->");
        let end = rest[body_start..]
            .find(&end_marker)
            .map(|e| body_start + e)
            .ok_or_else(|| format!("no `{end_marker}` after the begin marker of {name:?}"))?;
        out.push_str(&rest[..body_start]);
        match block(&name, tables, header) {
            Some(body) => {
                out.push_str(&body);
                filled.push(name);
            }
            None => out.push_str(&rest[body_start..end]),
        }
        out.push_str(&end_marker);
        rest = &rest[end + end_marker.len()..];
    }
    out.push_str(rest);
    Ok((out, filled))
}

/// Rewrites the blocks of the file at `path` in place; returns the names filled.
pub fn update(path: &Path, tables: &[&Table], header: &Header) -> Result<Vec<String>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let (new, filled) = rewrite(&text, tables, header)?;
    if new != text {
        std::fs::write(path, new).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(filled)
}
