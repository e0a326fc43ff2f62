//! Fork-join with `join` at every level: `fib(n)` on a footprint runtime, checked against an
//! iterative computation.
//!
//! ```text
//! cargo run --release --example fib -- 32 2      # fib(32) on 2 workers (defaults: 30, all cores)
//! ```

use std::process::ExitCode;
use std::time::Instant;

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

fn arg<T: std::str::FromStr>(index: usize, name: &str) -> Result<Option<T>, String> {
    match std::env::args().nth(index) {
        None => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| format!("{name} must be a non-negative integer, got {v:?}")),
    }
}

fn main() -> ExitCode {
    let parsed = arg::<u64>(1, "n").and_then(|n| Ok((n, arg::<usize>(2, "workers")?)));
    let (n, workers) = match parsed {
        Ok((n, w)) => (n.unwrap_or(30), w),
        Err(e) => {
            eprintln!("{e}\nusage: fib [n ≤ 93] [workers]");
            return ExitCode::from(2);
        }
    };
    if n > 93 {
        eprintln!("fib({n}) does not fit in u64: use n ≤ 93 (and n ≤ 40 unless you are patient)");
        return ExitCode::from(2);
    }
    let rt = match cli::build_runtime(workers) {
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
