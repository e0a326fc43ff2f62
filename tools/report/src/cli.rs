//! The report's command line.

use std::path::PathBuf;

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
    /// Workers (and peer threads) of the experiments whose worker count is free (fork-join:
    /// fib, skynet, uts); `None`: one per CPU of the allowed set.
    pub workers: Option<usize>,
    /// Hidden: adds an experiment that panics and one that hangs (the smoke test's check that
    /// failures are reported).
    pub inject_failure: bool,
}

pub const USAGE: &str =
    "usage: cargo run --release -p footprint-report -- [--quick | --full | --tiny] \
[--only NAME]... [--out DIR] [--workers N] [--update-readme]

  (no mode flag)   every experiment, at most ~10 minutes on 2 cores
  --quick          a smoke run of about a minute (every section, plot and CSV still written)
  --full           criterion-grade: many more repetitions
  --tiny           seconds (what the smoke test runs)
  --only NAME      run only NAME (repeatable; the others are left out of the report)
  --workers N      workers of the fork-join experiments and their peers (default: one per
                   CPU of the allowed set; the papers' experiments keep their own counts)
  --out DIR        write the report to DIR (default: $CARGO_TARGET_DIR/footprint-report, else
                   target/footprint-report)
  --update-readme  rewrite the README tables between <!-- report:begin NAME --> and
                   <!-- report:end NAME --> markers from this run";

/// Why the command line was rejected: the message to print, and whether it was a request for help.
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub help: bool,
}

/// Parses `args` (without the program name). `valid_names` are the experiments `--only` accepts.
pub fn parse(
    args: impl IntoIterator<Item = String>,
    valid_names: &[&str],
) -> Result<Options, CliError> {
    let mut options = Options {
        mode: Mode::Default,
        only: Vec::new(),
        update_readme: false,
        out_dir: None,
        workers: None,
        inject_failure: false,
    };
    let error = |message: String| CliError {
        message: format!("{message}\n\n{USAGE}"),
        help: false,
    };
    let mut modes = 0;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tiny" | "--quick" | "--full" => {
                modes += 1;
                options.mode = match arg.as_str() {
                    "--tiny" => Mode::Tiny,
                    "--quick" => Mode::Quick,
                    _ => Mode::Full,
                };
            }
            "--only" => {
                let name = args
                    .next()
                    .ok_or_else(|| error("--only needs an experiment name".into()))?;
                if !valid_names.contains(&name.as_str()) {
                    return Err(error(format!(
                        "unknown experiment {name:?} for --only; valid names: {}",
                        valid_names.join(", ")
                    )));
                }
                options.only.push(name);
            }
            "--out" => {
                let dir = args
                    .next()
                    .ok_or_else(|| error("--out needs a directory".into()))?;
                options.out_dir = Some(PathBuf::from(dir));
            }
            "--workers" => {
                let n = args
                    .next()
                    .ok_or_else(|| error("--workers needs a count".into()))?;
                match n.parse::<usize>() {
                    Ok(w) if w > 0 => options.workers = Some(w),
                    _ => {
                        return Err(error(format!(
                            "--workers needs a positive integer, got {n:?}"
                        )))
                    }
                }
            }
            "--update-readme" => options.update_readme = true,
            "--inject-failure" => options.inject_failure = true,
            "-h" | "--help" => {
                return Err(CliError {
                    message: USAGE.into(),
                    help: true,
                })
            }
            other => return Err(error(format!("unknown argument {other:?}"))),
        }
    }
    if modes > 1 {
        return Err(error("give at most one of --tiny, --quick, --full".into()));
    }
    Ok(options)
}
