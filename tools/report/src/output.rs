//! Writes the report directory: `index.html`, `report.md`, and one SVG and one CSV per plot.

use std::path::{Path, PathBuf};

use crate::header::Header;
use crate::model::Section;
use crate::{csv, html, markdown, plot};

/// The repository's root (this crate is `tools/report` in it): where the workspace's `target/`
/// and the READMEs that `--update-readme` rewrites are.
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// Where the report goes: `--out`, else `$CARGO_TARGET_DIR/footprint-report`, else the
/// workspace's `target/footprint-report`.
pub fn default_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("footprint-report"),
        _ => repository_root().join("target").join("footprint-report"),
    }
}

/// Removes what an earlier run wrote (only the report's own file types), so that no stale plot
/// survives a run with fewer sections.
fn clear(dir: &Path) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("svg" | "csv" | "html" | "md")
        );
        if ours && path.is_file() {
            std::fs::remove_file(&path).map_err(|e| format!("removing {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Writes everything; a plot that cannot be drawn becomes a note in its section (and its CSV is
/// still written).
pub fn write(dir: &Path, header: &Header, sections: &mut [Section]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    clear(dir)?;
    for s in sections.iter_mut() {
        let mut problems = Vec::new();
        for p in &s.plots {
            let csv_path = dir.join(format!("{}.csv", p.id));
            std::fs::write(&csv_path, csv::render(p))
                .map_err(|e| format!("writing {}: {e}", csv_path.display()))?;
            if let Err(e) = plot::draw(p, &dir.join(format!("{}.svg", p.id))) {
                problems.push(format!("plot {} could not be drawn: {e}", p.id));
            }
        }
        s.notes.extend(problems);
    }
    let md = markdown::render(header, sections);
    std::fs::write(dir.join("report.md"), md).map_err(|e| format!("writing report.md: {e}"))?;
    let page = html::render(header, sections);
    std::fs::write(dir.join("index.html"), page).map_err(|e| format!("writing index.html: {e}"))?;
    Ok(())
}
