//! Smoke test of the report: runs the `footprint-report` binary in tiny mode with two injected
//! failures and checks that every experiment has its section, that every plot is a well-formed
//! SVG with its CSV (the plot's three columns), that the failures are reported (not hidden), and
//! that killing the report mid-run leaves none of 002's background copies behind.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use footprint_report::{cli, experiments};

/// One report run at a time: each times its experiments against their limits, and two at once
/// on a small machine would slow each other into those limits.
static ONE_REPORT_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs the report binary with `args`.
fn report_command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_footprint-report"));
    c.args(args);
    c
}
fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "footprint-report-smoke-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A minimal well-formedness check: one root `<svg>` element, every tag closed in order.
fn check_svg(text: &str) -> Result<(), String> {
    let body = text.trim_start();
    let body = match body.strip_prefix("<?xml") {
        Some(rest) => &rest[rest.find("?>").ok_or("unclosed XML declaration")? + 2..],
        None => body,
    };
    let mut stack: Vec<String> = Vec::new();
    let mut roots = 0;
    let mut rest = body;
    while let Some(open) = rest.find('<') {
        if !stack.is_empty() || rest[..open].trim().is_empty() {
        } else {
            return Err("text outside the root element".into());
        }
        let close = rest[open..].find('>').ok_or("unclosed tag")? + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            let top = stack
                .pop()
                .ok_or_else(|| format!("</{name}> without an open tag"))?;
            if top != name.trim() {
                return Err(format!("</{name}> closes <{top}>"));
            }
        } else if !tag.starts_with('!') && !tag.starts_with('?') {
            let name = tag
                .split_whitespace()
                .next()
                .unwrap_or("")
                .trim_end_matches('/')
                .to_string();
            if stack.is_empty() {
                roots += 1;
                if name != "svg" {
                    return Err(format!("root element <{name}>, expected <svg>"));
                }
            }
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
        rest = &rest[close + 1..];
    }
    if !stack.is_empty() {
        return Err(format!("unclosed elements {stack:?}"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(())
}

/// The cells of one CSV line (RFC 4180 quoting: `"a, b"` is one cell, `""` a quote inside one).
fn split_csv_line(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cells.last_mut().expect("never empty").push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(String::new()),
            (c, _) => cells.last_mut().expect("never empty").push(c),
        }
    }
    cells
}

/// The header has exactly the plot's three named columns; every row has three cells and a numeric
/// last one. Returns the row count.
fn check_csv(text: &str) -> Result<usize, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty CSV")?.split(',').collect();
    if header.len() != 3 || header.iter().any(|h| h.trim().is_empty()) {
        return Err(format!("header {header:?} is not three named columns"));
    }
    let mut rows = 0;
    for line in lines {
        let cells = split_csv_line(line);
        if cells.len() != 3 {
            return Err(format!("row {line:?} does not have 3 cells"));
        }
        cells[2]
            .parse::<f64>()
            .map_err(|_| format!("row {line:?}: {:?} is not a number", cells[2]))?;
        rows += 1;
    }
    Ok(rows)
}

/// The plot stems (`X` of `![..](X.svg)`) of each section of report.md, by section title.
fn plots_by_section(md: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in md.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            out.push((title.to_string(), Vec::new()));
        } else if let (Some(start), Some(last)) = (line.find("]("), out.last_mut()) {
            if line.starts_with("![") {
                let stem = line[start + 2..]
                    .trim_end_matches(')')
                    .trim_end_matches(".svg");
                last.1.push(stem.to_string());
            }
        }
    }
    out
}

fn full_tiny_run() -> Result<(), String> {
    let dir = out_dir("tiny");
    let out = report_command(&[
        "--tiny",
        "--inject-failure",
        "--out",
        dir.to_str().expect("utf-8 path"),
    ])
    .stdin(Stdio::null())
    .output()
    .map_err(|e| format!("running the report: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(3) {
        return Err(format!(
            "expected exit status 3 (failures reported), got {:?}\n{stderr}",
            out.status
        ));
    }
    let html =
        std::fs::read_to_string(dir.join("index.html")).map_err(|e| format!("index.html: {e}"))?;
    let md =
        std::fs::read_to_string(dir.join("report.md")).map_err(|e| format!("report.md: {e}"))?;
    let mut expected: Vec<experiments::Experiment> = experiments::all();
    expected.extend(experiments::injected());
    let sections = plots_by_section(&md);
    for exp in &expected {
        if !html.contains(&format!("<section id=\"{}\">", exp.name)) {
            return Err(format!("index.html has no section for {}", exp.name));
        }
        let Some((_, plots)) = sections.iter().find(|(t, _)| t == exp.title) else {
            return Err(format!("report.md has no section titled {:?}", exp.title));
        };
        if exp.name != "machine" && plots.is_empty() {
            return Err(format!("section {} has no plot", exp.name));
        }
        for stem in plots {
            let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg")))
                .map_err(|e| format!("{stem}.svg: {e}"))?;
            check_svg(&svg).map_err(|e| format!("{stem}.svg is not well-formed: {e}"))?;
            if !html.contains(&format!("src=\"{stem}.svg\"")) {
                return Err(format!("index.html does not show {stem}.svg"));
            }
            let csv = std::fs::read_to_string(dir.join(format!("{stem}.csv")))
                .map_err(|e| format!("{stem}.csv: {e}"))?;
            let rows = check_csv(&csv).map_err(|e| format!("{stem}.csv: {e}"))?;
            let measured_plot = !stem.ends_with("-failed");
            if measured_plot && rows == 0 {
                return Err(format!("{stem}.csv has no data rows"));
            }
        }
    }
    for (name, needle) in [
        (
            "injected_panic",
            "injected failure: this experiment panics on purpose",
        ),
        ("injected_hang", "timed out after"),
    ] {
        let section = &html[html
            .find(&format!("<section id=\"{name}\">"))
            .expect("checked above")..];
        let section = &section[..section.find("</section>").unwrap_or(section.len())];
        if !section.contains("FAILED") || !section.contains(needle) {
            return Err(format!("{name} is not reported as failed with {needle:?}"));
        }
    }
    // 003's thread-count experiment is measured: its verdict line is there.
    if !md.contains("adaptive within 5 % of the best fixed count on") {
        return Err("threads_003 has no verdict on the adaptive worker count".into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn unknown_only_name_lists_the_valid_names() -> Result<(), String> {
    let out = report_command(&["--tiny", "--only", "no_such_experiment"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running the report: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(2) {
        return Err(format!("expected exit status 2, got {:?}", out.status));
    }
    for exp in experiments::all() {
        if !stderr.contains(exp.name) {
            return Err(format!("the error does not list {:?}: {stderr}", exp.name));
        }
    }
    Ok(())
}

/// `--workers N` sets the worker count of the experiments; 0 or a non-number is rejected
/// with what to pass.
fn workers_option_is_parsed_and_checked() -> Result<(), String> {
    let names: Vec<&str> = experiments::all().iter().map(|e| e.name).collect();
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let options = cli::parse(args(&["--tiny", "--workers", "3"]), &names)
        .map_err(|e| format!("--workers 3 rejected: {}", e.message))?;
    if options.workers != Some(3) {
        return Err(format!("--workers 3 parsed as {:?}", options.workers));
    }
    if cli::parse(args(&["--tiny"]), &names)
        .map_err(|e| e.message)?
        .workers
        .is_some()
    {
        return Err("without --workers the count must be left to the machine".into());
    }
    for bad in ["0", "two"] {
        match cli::parse(args(&["--workers", bad]), &names) {
            Err(e) if e.message.contains("--workers needs a positive integer") => {}
            Err(e) => return Err(format!("--workers {bad}: unexpected message {}", e.message)),
            Ok(_) => return Err(format!("--workers {bad} was accepted")),
        }
    }
    Ok(())
}

/// The papers' experiments run at `--workers N` and say so: 000 with 4 threads per worker, the
/// others with N workers in their titles; one worker (no CPU to spare for a bandwidth
/// reservation, no second worker to place a wake-up on) and more workers than this machine may
/// have CPUs both run without failing.
fn papers_experiments_follow_workers() -> Result<(), String> {
    for workers in [1usize, 3] {
        let dir = out_dir(&format!("workers-{workers}"));
        let w = workers.to_string();
        let mut args = vec!["--tiny", "--workers", &w];
        for name in [
            "locks_000",
            "fragments_001",
            "working_set_004",
            "smoother_004",
            "cruise_004",
        ] {
            args.extend(["--only", name]);
        }
        args.extend(["--out", dir.to_str().expect("utf-8 path")]);
        let out = report_command(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running the report: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "--workers {workers}: exit status {:?}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let md = std::fs::read_to_string(dir.join("report.md"))
            .map_err(|e| format!("report.md: {e}"))?;
        let s = if workers == 1 { "" } else { "s" };
        let mut expected = vec![
            format!("{} threads on {workers} processor{s}", 4 * workers),
            format!("one pass each, {workers} worker{s})"),
            format!("8192 sweeps, {workers} worker{s})"),
            format!("sweeps, {workers} worker{s}; `cargo bench"),
            format!("streaming green threads, {workers} worker{s}"),
        ];
        if workers == 1 {
            expected.push("not judged with one worker".into());
        }
        for needle in &expected {
            if !md.contains(needle.as_str()) {
                return Err(format!("--workers {workers}: report.md lacks {needle:?}"));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

/// Process ids whose parent is `parent` (from /proc).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // Fields after the ")" that ends the command name: state, ppid, ...
                let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
                after.split_whitespace().nth(1) == Some(&parent.to_string())
            })
        })
        .collect()
}

/// Alive and not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
        !matches!(after.split_whitespace().next(), Some("Z" | "X"))
    })
}

fn killed_run_leaves_no_background_copies() -> Result<(), String> {
    let dir = out_dir("killed");
    let mut child = report_command(&[
        "--quick",
        "--only",
        "multiprog_002",
        "--out",
        dir.to_str().expect("utf-8 path"),
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .map_err(|e| format!("starting the report: {e}"))?;
    let pid = child.id();
    // Watchdog: degree 2 starts the first background copy within seconds.
    let deadline = Instant::now() + Duration::from_secs(120);
    let copies = loop {
        let c = children_of(pid);
        if !c.is_empty() {
            break c;
        }
        if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            return Err("no background copy appeared".into());
        }
        std::thread::yield_now();
    };
    child
        .kill()
        .map_err(|e| format!("killing the report: {e}"))?;
    child
        .wait()
        .map_err(|e| format!("reaping the report: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while copies.iter().any(|&p| alive(p)) {
        if Instant::now() > deadline {
            return Err(format!(
                "background copies {copies:?} outlived the killed report"
            ));
        }
        std::thread::yield_now();
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Runs one check of this file (a report run holds the lock), failing the test with its message.
fn check(test: fn() -> Result<(), String>) {
    let _one = ONE_REPORT_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Err(e) = test() {
        panic!("{e}");
    }
}

#[test]
fn workers_is_parsed_and_checked() {
    check(workers_option_is_parsed_and_checked);
}

#[test]
fn papers_experiments_run_at_the_given_worker_count() {
    check(papers_experiments_follow_workers);
}

#[test]
fn unknown_only_name_is_rejected_with_the_valid_names() {
    check(unknown_only_name_lists_the_valid_names);
}

#[test]
fn tiny_run_has_every_section_plot_and_csv_and_reports_failures() {
    check(full_tiny_run);
}

#[test]
fn killed_report_leaves_no_background_copies() {
    check(killed_run_leaves_no_background_copies);
}
