//! Fork-join with `join` at every level: `fib(n)` on a footprint runtime, checked against an
//! iterative computation.
//!
//! ```text
//! cargo run --release --example fib -- 32 2      # fib(32) on 2 workers (defaults: 30, all cores)
//! ```

use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use footprint_workloads::cli;

/// `fib(n)` with a `join` at every level: each call offers its second half to idle workers.
fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = footprint::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn fib_iterative(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

/// fib(n) with a `join` at every level on a footprint runtime, checked against an iterative
/// computation.
#[derive(Parser)]
#[command(name = "fib")]
struct Args {
    /// n of fib(n): at most 93 (fib(94) does not fit in u64), and 40 unless you are patient
    #[arg(default_value_t = 30, value_parser = clap::value_parser!(u64).range(..=93))]
    n: u64,
    /// Workers of the runtime [default: one per core]
    workers: Option<NonZeroUsize>,
}

fn main() -> ExitCode {
    let Args { n, workers } = Args::parse();
    let rt = match cli::build_runtime(workers.map(NonZeroUsize::get)) {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let start = Instant::now();
    let value = rt.block_on(|| fib(n));
    let elapsed = start.elapsed();
    let expected = fib_iterative(n);
    println!(
        "fib({n}) = {value} in {:.1} ms with a join at every level ({} joins) on {} workers",
        elapsed.as_secs_f64() * 1e3,
        // fib(n) recursion has fib(n + 1) - 1 inner calls, each one join.
        fib_iterative(n + 1).saturating_sub(1),
        rt.workers()
    );
    if value != expected {
        eprintln!("WRONG: expected {expected}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
