//! SPMD with green threads: a 1-D heat-diffusion stencil (explicit Jacobi steps) split over
//! `ranks` green threads, one per rank, that exchange halo cells through mutex-protected slots and
//! meet at barriers between phases. Ranks may outnumber workers: a rank that waits at a barrier
//! gives its worker to the others.
//!
//! ```text
//! cargo run --release --example spmd -- 16 2     # 16 ranks on 2 workers (defaults: 8, all cores)
//! ```
//!
//! The result is checked bit for bit against the same arithmetic done sequentially.

use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::time::Instant;

use footprint::sync::{Barrier, Mutex};

use clap::Parser;
use footprint_workloads::cli;

/// Cells per rank.
const CELLS: usize = 4_096;
/// Time steps.
const STEPS: usize = 400;
/// Diffusion number (stable for ≤ 0.5).
const ALPHA: f64 = 0.25;

/// The initial temperature of global cell `i` of `n`: eight hot cells in the middle.
fn initial(i: usize, n: usize) -> f64 {
    if (n / 2 - 4..n / 2 + 4).contains(&i) {
        1000.0
    } else {
        0.0
    }
}

/// One explicit step of `cells` given the ghost cells left and right (0 at the domain's ends).
fn step(cells: &[f64], left: f64, right: f64, out: &mut [f64]) {
    let n = cells.len();
    for i in 0..n {
        let l = if i == 0 { left } else { cells[i - 1] };
        let r = if i + 1 == n { right } else { cells[i + 1] };
        out[i] = cells[i] + ALPHA * (l - 2.0 * cells[i] + r);
    }
}

fn sequential(ranks: usize) -> Vec<f64> {
    let n = ranks * CELLS;
    let mut cur: Vec<f64> = (0..n).map(|i| initial(i, n)).collect();
    let mut next = vec![0.0; n];
    for _ in 0..STEPS {
        step(&cur, 0.0, 0.0, &mut next);
        std::mem::swap(&mut cur, &mut next);
    }
    cur
}

/// What one rank reports: its final cells and the workers it ran on.
struct RankResult {
    cells: Vec<f64>,
    workers_seen: Vec<usize>,
}

fn rank_main(
    rank: usize,
    ranks: usize,
    edges: &[Mutex<[f64; 2]>],
    barrier: &Barrier,
    peak_log: &Mutex<Vec<f64>>,
) -> RankResult {
    let n = ranks * CELLS;
    let mut cur: Vec<f64> = (0..CELLS).map(|i| initial(rank * CELLS + i, n)).collect();
    let mut next = vec![0.0; CELLS];
    let mut workers_seen = Vec::new();
    let note_worker = |seen: &mut Vec<usize>| {
        if let Some(w) = footprint::runtime::park::current_worker() {
            if !seen.contains(&w) {
                seen.push(w);
            }
        }
    };
    for t in 0..STEPS {
        // Phase 1: publish my edge cells.
        *edges[rank].lock() = [cur[0], cur[CELLS - 1]];
        barrier.wait();
        // Phase 2: read the neighbours' edges, compute, then wait until everyone has read before
        // the edges are overwritten in the next step.
        let left = if rank == 0 {
            0.0
        } else {
            edges[rank - 1].lock()[1]
        };
        let right = if rank + 1 == ranks {
            0.0
        } else {
            edges[rank + 1].lock()[0]
        };
        step(&cur, left, right, &mut next);
        std::mem::swap(&mut cur, &mut next);
        if t % 100 == 99 {
            let mine = cur.iter().copied().fold(0.0, f64::max);
            let mut log = peak_log.lock();
            let slot = t / 100;
            if log.len() <= slot {
                log.resize(slot + 1, 0.0);
            }
            log[slot] = log[slot].max(mine);
        }
        note_worker(&mut workers_seen);
        barrier.wait();
    }
    RankResult {
        cells: cur,
        workers_seen,
    }
}

/// SPMD with green threads: a 1-D heat-diffusion stencil split over RANKS green threads that
/// exchange halo cells through mutexes and meet at barriers, checked bit for bit against the
/// same arithmetic done sequentially.
#[derive(Parser)]
#[command(name = "spmd")]
struct Args {
    /// Ranks (green threads), at least 1
    #[arg(default_value = "8")]
    ranks: NonZeroUsize,
    /// Workers of the runtime [default: one per core]
    workers: Option<NonZeroUsize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let ranks = args.ranks.get();
    let rt = match cli::build_runtime(args.workers.map(NonZeroUsize::get)) {
        Ok(rt) => rt,
        Err(code) => return code,
    };

    let edges: Vec<Mutex<[f64; 2]>> = (0..ranks).map(|_| Mutex::new([0.0; 2])).collect();
    let barrier = Barrier::new(ranks);
    let peak_log = Mutex::new(Vec::new());
    let start = Instant::now();
    let results: Vec<RankResult> = rt.block_on(|| {
        footprint::scope(|s| {
            let handles: Vec<_> = (0..ranks)
                .map(|rank| {
                    let (edges, barrier, peak_log) = (&edges, &barrier, &peak_log);
                    s.spawn(move || rank_main(rank, ranks, edges, barrier, peak_log))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a rank panicked"))
                .collect()
        })
    });
    let elapsed = start.elapsed();

    println!(
        "{ranks} ranks x {CELLS} cells, {STEPS} steps, 2 barriers per step, on {} workers: {:.1} ms",
        rt.workers(),
        elapsed.as_secs_f64() * 1e3
    );
    for (i, peak) in peak_log.lock().iter().enumerate() {
        println!("  peak temperature after step {}: {peak:.3}", (i + 1) * 100);
    }
    let migrated = results.iter().filter(|r| r.workers_seen.len() > 1).count();
    println!("  ranks that ran on more than one worker: {migrated} of {ranks}");

    let parallel: Vec<f64> = results.into_iter().flat_map(|r| r.cells).collect();
    if parallel != sequential(ranks) {
        eprintln!("WRONG: the SPMD result differs from the sequential computation");
        return ExitCode::FAILURE;
    }
    println!("  result identical to the sequential computation");
    ExitCode::SUCCESS
}
