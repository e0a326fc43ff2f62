//! The report's command line.

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{ArgGroup, CommandFactory, FromArgMatches, Parser};

/// How long and how thoroughly to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Seconds: for the smoke test (every section, plot and CSV still written).
    Tiny,
    /// About a minute.
    Quick,
    /// At most ~10 minutes on 2 cores.
    Default,
    /// Criterion-grade: many more repetitions.
    Full,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Tiny => "tiny",
            Mode::Quick => "quick",
            Mode::Default => "default",
            Mode::Full => "full",
        }
    }

    /// One of four values by mode.
    pub fn pick<T>(self, tiny: T, quick: T, default: T, full: T) -> T {
        match self {
            Mode::Tiny => tiny,
            Mode::Quick => quick,
            Mode::Default => default,
            Mode::Full => full,
        }
    }
}

/// Parsed options.
#[derive(Clone, Debug)]
pub struct Options {
    pub mode: Mode,
    pub only: Vec<String>,
    pub update_readme: bool,
    pub out_dir: Option<PathBuf>,
    /// Workers (and peer threads) of every experiment but 002's and 003's, which define their
    /// own counts; `None`: one per CPU of the allowed set.
    pub workers: Option<usize>,
    /// Hidden: adds an experiment that panics and one that hangs (the smoke test's check that
    /// failures are reported).
    pub inject_failure: bool,
}

/// The report's flags (what `--help` prints).
#[derive(Parser, Debug)]
#[command(
    name = "footprint-report",
    about = "Runs the papers' experiments and the peers, draws what happened, and writes \
             index.html, report.md, and one SVG plot and one CSV per plot"
)]
#[command(group(ArgGroup::new("mode").args(["quick", "full", "tiny"]).multiple(false)))]
struct Cli {
    /// A smoke run of about a minute (every section, plot and CSV still written) [default mode:
    /// every experiment, at most ~10 minutes on 2 cores]
    #[arg(long)]
    quick: bool,
    /// Criterion-grade: many more repetitions
    #[arg(long)]
    full: bool,
    /// Seconds (what the smoke test runs)
    #[arg(long)]
    tiny: bool,
    /// Run only NAME (repeatable; the others are left out of the report)
    #[arg(long, value_name = "NAME")]
    only: Vec<String>,
    /// Write the report to DIR [default: $CARGO_TARGET_DIR/footprint-report, else
    /// target/footprint-report]
    #[arg(long = "out", value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Workers of the experiments, with as many peer threads (000's lock benchmarks: 4 threads
    /// per worker on both sides; 002: N threads per program copy) [default: one per CPU of the
    /// allowed set; 003 keeps its own range]
    #[arg(long, value_name = "N", value_parser = positive_workers)]
    workers: Option<usize>,
    /// Rewrite the README tables between <!-- report:begin NAME --> and <!-- report:end NAME -->
    /// markers from this run
    #[arg(long = "update-readme")]
    update_readme: bool,
    /// Adds an experiment that panics and one that hangs (the smoke test's check that failures
    /// are reported)
    #[arg(long = "inject-failure", hide = true)]
    inject_failure: bool,
}

/// `--workers`: a positive count.
fn positive_workers(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(w) if w > 0 => Ok(w),
        _ => Err(format!("--workers needs a positive integer, got {v:?}")),
    }
}

/// Why the command line was rejected: the message to print, and whether it was a request for help.
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub help: bool,
}

/// Parses `args` (without the program name). `valid_names` are the experiments `--only` accepts.
pub fn parse(
    args: impl IntoIterator<Item = String>,
    valid_names: &[&'static str],
) -> Result<Options, CliError> {
    let command = Cli::command().mut_arg("only", |a| {
        a.value_parser(PossibleValuesParser::new(valid_names.iter().copied()))
    });
    let cli = command
        .try_get_matches_from(std::iter::once("footprint-report".to_string()).chain(args))
        .and_then(|m| Cli::from_arg_matches(&m))
        .map_err(|e| CliError {
            message: e.render().to_string(),
            help: !e.use_stderr(),
        })?;
    let mode = if cli.tiny {
        Mode::Tiny
    } else if cli.quick {
        Mode::Quick
    } else if cli.full {
        Mode::Full
    } else {
        Mode::Default
    };
    Ok(Options {
        mode,
        only: cli.only,
        update_readme: cli.update_readme,
        out_dir: cli.out_dir,
        workers: cli.workers,
        inject_failure: cli.inject_failure,
    })
}
