//! Command-line helpers of the examples and tools (their flags are parsed by `clap`): counts
//! written with `_` separators, and the runtime of an optional worker count.

use std::process::ExitCode;

use footprint::Runtime;

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

/// A count as the examples take it: digits with optional `_` separators (`1_000_000`). For
/// `clap`'s `value_parser`.
///
/// ```
/// use footprint_workloads::cli::count;
/// assert_eq!(count("1_000_000"), Ok(1_000_000));
/// assert!(count("ten").is_err());
/// ```
pub fn count(v: &str) -> Result<usize, String> {
    v.replace('_', "")
        .parse::<usize>()
        .map_err(|_| format!("a count is needed (digits, `_` allowed), got {v:?}"))
}

/// A count of at least 1 (see [`count`]).
///
/// ```
/// use footprint_workloads::cli::positive_count;
/// assert_eq!(positive_count("10_000"), Ok(10_000));
/// assert!(positive_count("0").is_err());
/// ```
pub fn positive_count(v: &str) -> Result<usize, String> {
    match count(v)? {
        0 => Err("must be at least 1".to_string()),
        n => Ok(n),
    }
}
