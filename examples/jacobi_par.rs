//! The same Jacobi solver on rayon and on footprint with each schedule: time per sweep, and a
//! checksum that must match across all of them (every point is computed from the same inputs
//! by the same formula, whatever worker runs it, so the results are bit-identical).
//!
//! ```text
//! cargo run --release --example jacobi_par                      # 1-D, 1.5 MiB, 200 sweeps, 2 workers
//! cargo run --release --example jacobi_par -- --dim 2 --kib 8192 --sweeps 50 --workers 2
//! ```
//!
//! Exit code 1 if a checksum differs, 2 on a bad argument.

use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::time::Instant;

use footprint::par::{Affinity, Schedule};

use clap::Parser;
use footprint_workloads::jacobi;

/// Jacobi sweeps over two workers: footprint's loops with each schedule, rayon's
/// `par_chunks_mut`, and fixed OS threads meeting at a barrier after each sweep.
#[derive(Parser)]
#[command(name = "jacobi_par")]
struct Args {
    /// The grid's dimensions: 1 (a line of points) or 2 (rows)
    #[arg(long = "dim", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    dim: u8,
    /// KiB of the grid's two arrays together
    #[arg(long, default_value = "1536")]
    kib: NonZeroUsize,
    /// Sweeps per run
    #[arg(long, default_value = "200")]
    sweeps: NonZeroUsize,
    /// Workers (and rayon threads, and OS threads)
    #[arg(long, default_value = "2")]
    workers: NonZeroUsize,
    /// Chunks the grid is cut into
    #[arg(long, default_value = "32")]
    chunks: NonZeroUsize,
}

/// The run's settings, as numbers.
struct Settings {
    two_d: bool,
    bytes: usize,
    sweeps: usize,
    workers: usize,
    chunks: usize,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let args = Settings {
        two_d: a.dim == 2,
        bytes: a.kib.get() << 10,
        sweeps: a.sweeps.get(),
        workers: a.workers.get(),
        chunks: a.chunks.get(),
    };
    // an experiment's explicit count: more workers than CPUs is meant
    let rt = match footprint::Runtime::builder()
        .workers(args.workers)
        .oversubscribe(true)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot build the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let pool = match rayon::ThreadPoolBuilder::new()
        .num_threads(args.workers)
        .build()
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cannot build the rayon pool: {e}");
            return ExitCode::FAILURE;
        }
    };
    let fresh = || jacobi::Grid::new(args.two_d, args.bytes, args.chunks);
    let shape = fresh();
    println!(
        "{}-D Jacobi, {} points ({} KiB in two arrays), {} chunks, {} sweeps, {} workers",
        if args.two_d { 2 } else { 1 },
        shape.src.len(),
        (shape.src.len() * 16) >> 10,
        shape.chunks(),
        args.sweeps,
        args.workers
    );
    let memory = Affinity::new();
    let footprint_rows: [(&str, &(dyn Fn() -> Schedule + Sync)); 5] = [
        ("footprint Static", &|| Schedule::Static),
        ("footprint Dynamic(1)", &|| Schedule::Dynamic(1)),
        ("footprint Guided(1)", &|| Schedule::Guided(1)),
        ("footprint Affinity", &|| Schedule::Affinity(memory.clone())),
        ("footprint default", &Schedule::default),
    ];
    let mut sums = Vec::new();
    let mut report = |name: &str, secs: f64, grid: &jacobi::Grid| {
        let sum = grid.checksum();
        println!(
            "{name:<22} {:>10.1} µs/sweep   checksum {sum:.12e}",
            secs * 1e6 / args.sweeps as f64
        );
        sums.push(sum);
    };

    let mut grid = fresh();
    let t = pool.install(|| {
        let t = Instant::now();
        (0..args.sweeps).for_each(|_| grid.sweep_rayon());
        t.elapsed()
    });
    report("rayon par_chunks_mut", t.as_secs_f64(), &grid);

    for (name, schedule) in footprint_rows {
        let mut grid = fresh();
        let t = rt.block_on(|| {
            let t = Instant::now();
            (0..args.sweeps).for_each(|_| grid.sweep_footprint(schedule()));
            t.elapsed()
        });
        report(name, t.as_secs_f64(), &grid);
    }

    let mut grid = fresh();
    let t = Instant::now();
    grid.sweeps_fixed_threads(args.workers, args.sweeps);
    report("fixed threads+barrier", t.elapsed().as_secs_f64(), &grid);

    let s = memory.stats();
    println!(
        "Affinity: {} chunks run, {} replayed on their worker, {} stolen, {} resets",
        s.chunks_run, s.replayed, s.stolen, s.resets
    );
    if sums.iter().all(|&x| x.to_bits() == sums[0].to_bits()) {
        println!("checksums match");
        ExitCode::SUCCESS
    } else {
        eprintln!("checksums differ: {sums:?}");
        ExitCode::FAILURE
    }
}
