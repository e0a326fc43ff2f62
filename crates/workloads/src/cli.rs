//! The command-line tail shared by the fork-join and SPMD examples (`examples/fib.rs`,
//! `nqueens.rs`, `spmd.rs`): an optional worker count, and building the runtime with it.

use std::process::ExitCode;

use footprint::Runtime;

/// Parses the optional worker-count argument. A value that is not a number is reported with
/// the `usage` line and exit code 2.
pub fn workers_arg(arg: Option<String>, usage: &str) -> Result<Option<usize>, ExitCode> {
    match arg.map(|v| v.parse::<usize>()) {
        None => Ok(None),
        Some(Ok(w)) => Ok(Some(w)),
        Some(Err(_)) => {
            eprintln!("workers must be a positive integer\n{usage}");
            Err(ExitCode::from(2))
        }
    }
}

/// Builds a runtime with `workers` workers (all cores when `None`); when that fails, says why
/// and hands back the failure exit code.
pub fn build_runtime(workers: Option<usize>) -> Result<Runtime, ExitCode> {
    let mut builder = Runtime::builder();
    if let Some(w) = workers {
        // an experiment's explicit count: more workers than CPUs is meant
        builder = builder.workers(w).oversubscribe(true);
    }
    builder.build().map_err(|e| {
        eprintln!("cannot build the runtime: {e}");
        ExitCode::FAILURE
    })
}
