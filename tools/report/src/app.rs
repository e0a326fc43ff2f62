//! The report's `main`: parse the flags, run the chosen experiments, write the report, rewrite
//! the README blocks when asked. (In the library, so that `src/main.rs` and the repository's
//! `examples/report.rs` run exactly this.)

use std::process::ExitCode;

use crate::model::{Status, Table};
use crate::{child, cli, experiments, header, markdown, output, readme, runner, workloads};

/// Runs the report (or, when started as one, a child measurement or a background copy).
pub fn main() -> ExitCode {
    // A background copy of 002's program (started by Background::start) never returns from here.
    workloads::multiprog::run_background_if_requested();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(child::SUBCOMMAND) {
        std::process::exit(experiments::child_main(&args[1..]));
    }

    let all = experiments::all();
    let names: Vec<&str> = all.iter().map(|e| e.name).collect();
    let options = match cli::parse(args.clone(), &names) {
        Ok(o) => o,
        Err(e) if e.help => {
            println!("{}", e.message);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{}", e.message);
            return ExitCode::from(2);
        }
    };
    let mut chosen: Vec<experiments::Experiment> = all
        .into_iter()
        .filter(|e| options.only.is_empty() || options.only.iter().any(|n| n == e.name))
        .collect();
    if options.inject_failure {
        chosen.extend(experiments::injected());
    }

    let command = std::iter::once(invocation().to_string())
        .chain((!args.is_empty()).then(|| format!("-- {}", args.join(" "))))
        .collect::<Vec<_>>()
        .join(" ");
    let mut header = header::Header::start(command, options.mode);
    let dir = options.out_dir.clone().unwrap_or_else(output::default_dir);
    eprintln!(
        "report: {} experiment(s), mode {}, writing {}",
        chosen.len(),
        options.mode.name(),
        dir.display()
    );

    let workers = options.workers.unwrap_or_else(crate::experiments::all_cpus);
    let mut sections = runner::run_all(&chosen, options.mode, workers);
    header.load_after = experiments::load_average();
    header.handoff_after = experiments::cache_line_handoff();
    if let Err(e) = output::write(&dir, &header, &mut sections) {
        eprintln!("report: {e}");
        std::process::exit(1);
    }
    let summary = markdown::summary(&sections);
    if options.update_readme {
        let mut tables: Vec<&Table> = sections.iter().flat_map(|s| s.tables.iter()).collect();
        tables.push(&summary);
        let root = output::repository_root();
        for readme in ["README.md", "benches/README.md"] {
            match readme::update(&root.join(readme), &tables, &header) {
                Ok(filled) => eprintln!("report: {readme}: rewrote {}", filled.join(", ")),
                Err(e) => eprintln!("report: {readme} not updated: {e}"),
            }
        }
    }
    for s in &sections {
        println!("{:<16} {}", s.name, s.verdict);
    }
    println!("report written to {}", dir.join("index.html").display());
    let failed = sections
        .iter()
        .filter(|s| matches!(s.status, Status::Failed(_)))
        .count();
    // Exit without waiting for the threads of experiments that timed out.
    if failed > 0 {
        eprintln!("report: {failed} experiment(s) failed (marked in the report)");
        std::process::exit(3);
    }
    std::process::exit(0);
}

/// The cargo command that runs this program again: the report's own binary, or the repository's
/// `report` example (both run [`main`]).
fn invocation() -> &'static str {
    let exe = std::env::current_exe().ok();
    match exe
        .as_deref()
        .and_then(|p| p.file_stem())
        .and_then(|s| s.to_str())
    {
        Some("footprint-report") => "cargo run --release -p footprint-report",
        _ => "cargo run --release --example report",
    }
}
