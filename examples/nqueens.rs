//! Counting the solutions of the N-queens problem with fork-join: the free squares of each row are
//! split in halves with `footprint::join` until one is left, which takes the square and recurses.
//!
//! ```text
//! cargo run --release --example nqueens -- 12 2     # N = 12 on 2 workers (defaults: 11, all cores)
//! ```

use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use footprint_workloads::cli;

/// Solutions with queens already on `cols` and attacking the diagonals `left`/`right`, placing the
/// next queen on one of the squares in `candidates`.
fn count(n: u32, cols: u32, left: u32, right: u32, candidates: u32) -> u64 {
    let full = (1u32 << n) - 1;
    match candidates.count_ones() {
        0 => 0,
        1 => {
            let (cols, left, right) = (
                cols | candidates,
                ((left | candidates) << 1) & full,
                (right | candidates) >> 1,
            );
            if cols == full {
                1
            } else {
                count(n, cols, left, right, full & !(cols | left | right))
            }
        }
        ones => {
            // The lowest ones/2 candidates go left, the rest right.
            let mut lower = 0;
            let mut rest = candidates;
            for _ in 0..ones / 2 {
                lower |= rest & rest.wrapping_neg();
                rest &= rest - 1;
            }
            let (a, b) = footprint::join(
                || count(n, cols, left, right, lower),
                || count(n, cols, left, right, rest),
            );
            a + b
        }
    }
}

/// Published solution counts for N = 1..=16 (OEIS A000170).
const KNOWN: [u64; 16] = [
    1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512,
];

/// Counts the solutions of the N-queens problem with a green thread per branch, checked
/// against the published counts.
#[derive(Parser)]
#[command(name = "nqueens")]
struct Args {
    /// N: the board's side and the number of queens (1 to 16)
    #[arg(default_value_t = 11, value_parser = clap::value_parser!(u32).range(1..=16))]
    n: u32,
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
    let solutions = rt.block_on(|| count(n, 0, 0, 0, (1u32 << n) - 1));
    println!(
        "{n}-queens: {solutions} solutions in {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let known = KNOWN[n as usize - 1];
    if solutions != known {
        eprintln!("WRONG: the published count is {known}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
