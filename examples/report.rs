//! The footprint report, run from the repository root: `cargo run --release --example report --
//! [--quick | --full | --tiny] [--only NAME]... [--out DIR] [--workers N] [--update-readme]`.
//!
//! The report is its own crate (`tools/report`, `cargo run --release -p footprint-report --
//! ...` runs the same program); this example keeps the short command working.

fn main() -> std::process::ExitCode {
    footprint_report::app::main()
}
