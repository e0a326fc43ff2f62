//! Helpers shared by the root integration tests (`forkjoin.rs`, `spmd.rs`, `par_*.rs`).
#![allow(dead_code)]

use footprint::Runtime;

/// The worker counts every program runs on: one, this machine's two cores, and more than the cores.
pub const WORKER_COUNTS: [usize; 3] = [1, 2, 5];

/// A runtime with exactly `workers` workers.
pub fn runtime(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .build()
        .unwrap_or_else(|e| panic!("building a runtime with {workers} workers failed: {e}"))
}

// One watchdog for the whole repository (crates/testkit).
#[allow(unused_imports)] // not every test file that includes this module uses it
pub use footprint_testkit::with_watchdog;
