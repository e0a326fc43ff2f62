//! What the fork-join and SPMD examples (`examples/fib.rs`, `nqueens.rs`, `spmd.rs`) do with
//! their optional worker-count argument: build the runtime with it.

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
