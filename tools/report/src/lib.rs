//! The footprint report: one command runs the papers' experiments and the peers, draws what
//! happened, and writes `target/footprint-report/` (or `$CARGO_TARGET_DIR/footprint-report/`):
//! `index.html`, `report.md`, one SVG plot and one CSV (the plot's columns) per plot.
//!
//! ```text
//! cargo run --release -p footprint-report                 # everything, ≤ 10 minutes on 2 cores
//! cargo run --release -p footprint-report -- --quick      # about a minute
//! cargo run --release -p footprint-report -- --full       # many more repetitions
//! cargo run --release -p footprint-report -- --only multiprog_002
//! cargo run --release -p footprint-report -- --update-readme   # also rewrite the README tables
//! cargo run --release -p footprint-report -- --workers 16 # the experiments on 16 workers
//! ```
//!
//! (`cargo run --release --example report -- ...` in the repository root runs the same program.)
//!
//! `--workers N` (default: one per CPU the process may use) sets the workers of every
//! experiment but 003's thread-count search (its own range), with as many peer threads (002's
//! multiprogrammed program runs N OS threads, and each background copy as many): rayon pools
//! of N threads, and N × 4 threads on both sides of 000's lock benchmarks (4 per processor,
//! 8 on 2 as in the paper's oversubscribed case). With fewer workers than CPUs the OS-thread and
//! rayon peers of the papers' experiments are restricted to the workers' CPUs. What a paper ties
//! to the processor count scales with N, and the section says so: 001's fragment counts (8, 8
//! and 2 per worker) and 004's streamers beside the stencil (one per other worker, at least
//! 3). The benches (`cargo bench`) keep 2 workers.
//!
//! Each section states the paper's claim, our figure and a one-line verdict. An experiment that
//! panics, fails or runs past its time limit is reported as failed and the others still run;
//! the exit status is then 3. Child processes (peak-memory runs, 002's background copies) die
//! with the report, also when it is interrupted.
//!
//! Layout (all under `tools/report/src/`): `cli.rs` (flags), `experiments/` (one module per
//! experiment, registered in `experiments/mod.rs`), `runner.rs` (time limits and failures),
//! `workloads/` (the benches' bodies from `crates/workloads` and the report's own workloads),
//! `plot.rs`, `csv.rs`, `html.rs`, `markdown.rs`, `readme.rs`, `output.rs`. The binary
//! (`src/main.rs`) calls [`app::main`]; the smoke test (`tests/smoke.rs`) runs the binary and
//! checks its output.

pub mod app;
mod child;
pub mod cli;
mod csv;
pub mod experiments;
mod header;
mod html;
mod interval;
mod markdown;
mod measure;
mod model;
mod output;
mod plot;
mod progress;
mod readme;
mod runner;
mod stats;
mod workloads;
