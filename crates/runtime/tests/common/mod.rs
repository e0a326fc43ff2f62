//! Helpers shared by the runtime's integration tests (each test file uses a subset).
#![allow(dead_code)]

use footprint_runtime::Runtime;

// One watchdog for the whole repository (crates/testkit).
#[allow(unused_imports)] // not every test file that includes this module uses it
pub use footprint_testkit::with_watchdog;

/// A runtime with `workers` workers and every other setting at its default.
pub fn rt(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .build()
        .expect("runtime")
}
