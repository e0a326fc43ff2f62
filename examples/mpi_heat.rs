//! A 2-D heat (Jacobi) stencil across MPI ranks, with footprint green threads inside each rank
//! (feature `mpi`). The grid's rows are split evenly over the ranks; each rank cuts its block into
//! tiles of rows, computed by green threads (one `scope` per sweep); halo rows go to the
//! neighbouring ranks by MPI every sweep, and the global residual comes from an `all_reduce`.
//!
//! ```text
//! cargo build --release --features mpi --example mpi_heat
//! target/release/examples/mpi_heat                         # one process, no mpirun needed
//! mpirun -n 2 target/release/examples/mpi_heat              # (+ --oversubscribe --allow-run-as-root)
//! mpirun -n 2 target/release/examples/mpi_heat --overlap    # interior tiles while halos fly
//! mpirun -n 2 target/release/examples/mpi_heat --compare    # both, with the overlap's gain
//! ```
//!
//! Options: `--rows N --cols N` (grid, default 1024 x 1024), `--sweeps N` (200), `--tile-rows N`
//! (16), `--workers N` (default: one per CPU the rank is bound to), `--repeat N` (runs per mode,
//! alternating the order under `--compare`; the median time per sweep is reported).
//!
//! Every cell is computed by the same arithmetic whatever the decomposition, and the checksum
//! sums the row sums in row order on rank 0, so the `checksum:` line is bit-identical for any
//! rank count (CI compares 1 and 2 ranks).

use std::num::NonZeroUsize;
use std::ops::Range;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use footprint::mpi::rsmpi::collective::SystemOperation;
use footprint::mpi::rsmpi::request::{self, Request, Scope};
use footprint::mpi::rsmpi::topology::SimpleCommunicator;
use footprint::mpi::rsmpi::traits::*;
use footprint::mpi::{self as fmpi};
use footprint::Runtime;

/// Temperature of the fixed top boundary (the other boundaries are 0).
const HOT: f64 = 1.0;
/// Tag of a halo row travelling to the next rank (down), and to the previous rank (up).
const TAG_DOWN: i32 = 1;
const TAG_UP: i32 = 2;

/// How a sweep orders communication and computation.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Exchange the halos, then compute every tile.
    Plain,
    /// Compute the interior tiles while the halos are in flight, then the two edge rows.
    Overlap,
}

#[derive(Clone, Debug)]
struct Config {
    rows: usize,
    cols: usize,
    sweeps: usize,
    tile_rows: usize,
    workers: Option<usize>,
    modes: Vec<Mode>,
    repeat: usize,
}

/// A 2-D heat stencil split in bands of rows over the MPI ranks, each rank's band swept by green
/// threads in tiles, with the halo rows exchanged through footprint's MPI layer.
#[derive(Parser)]
#[command(name = "mpi_heat")]
struct Cli {
    /// Rows of the grid (a multiple of the rank count)
    #[arg(long, default_value = "1024")]
    rows: NonZeroUsize,
    /// Columns of the grid
    #[arg(long, default_value = "1024")]
    cols: NonZeroUsize,
    /// Sweeps
    #[arg(long, default_value = "200")]
    sweeps: NonZeroUsize,
    /// Rows per tile (one green thread's work in a sweep)
    #[arg(long = "tile-rows", default_value = "16")]
    tile_rows: NonZeroUsize,
    /// Workers per rank [default: the runtime's]
    #[arg(long)]
    workers: Option<NonZeroUsize>,
    /// Runs of each mode
    #[arg(long, default_value = "1")]
    repeat: NonZeroUsize,
    /// Compute the interior tiles while the halos are in flight
    #[arg(long, conflicts_with = "compare")]
    overlap: bool,
    /// Run both modes (plain and overlap) and compare them
    #[arg(long)]
    compare: bool,
}

/// The parsed command line: `Ok(None)` when it asked for help (printed by rank 0).
fn parse_args(rank: i32) -> Result<Option<Config>, String> {
    let c = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            if rank == 0 {
                let _ = e.print();
            }
            return Ok(None);
        }
        Err(e) => return Err(e.render().to_string()),
    };
    let modes = if c.compare {
        vec![Mode::Plain, Mode::Overlap]
    } else if c.overlap {
        vec![Mode::Overlap]
    } else {
        vec![Mode::Plain]
    };
    Ok(Some(Config {
        rows: c.rows.get(),
        cols: c.cols.get(),
        sweeps: c.sweeps.get(),
        tile_rows: c.tile_rows.get(),
        workers: c.workers.map(NonZeroUsize::get),
        modes,
        repeat: c.repeat.get(),
    }))
}

/// Rows per rank, or why the grid cannot be split over `ranks`.
fn rows_per_rank(rows: usize, ranks: usize) -> Result<usize, String> {
    if !rows.is_multiple_of(ranks) {
        let fits: Vec<usize> = (1..=rows.min(64))
            .filter(|&n| rows.is_multiple_of(n))
            .collect();
        return Err(format!(
            "the grid's {rows} rows do not split evenly over {ranks} ranks: run with a rank \
             count that divides {rows} (e.g. {fits:?}) or pass --rows a multiple of {ranks}"
        ));
    }
    let local = rows / ranks;
    if local < 2 {
        return Err(format!(
            "{ranks} ranks leave {local} row per rank; each rank needs at least 2: use at most \
             {} ranks or more --rows",
            rows / 2
        ));
    }
    Ok(local)
}

/// One new row from its neighbours: writes `out[1..=cols]` and returns the sum of squared
/// changes. The arithmetic of a cell depends only on its neighbours' values.
fn stencil_row(up: &[f64], mid: &[f64], down: &[f64], out: &mut [f64]) -> f64 {
    let mut change = 0.0;
    for j in 1..out.len() - 1 {
        let v = 0.25 * ((up[j] + down[j]) + (mid[j - 1] + mid[j + 1]));
        let d = v - mid[j];
        change += d * d;
        out[j] = v;
    }
    change
}

/// Computes the rows of `out` (each `w` cells) from `src`, where `out`'s first row sits at
/// row `first` of `src` (so `src` holds rows `first - 1 ..= first + out rows`). Each row's
/// change goes to `change`.
fn stencil_rows(src: &[f64], w: usize, first: usize, out: &mut [f64], change: &mut [f64]) {
    for (k, (row, c)) in out.chunks_exact_mut(w).zip(change).enumerate() {
        let r = first + k;
        *c = stencil_row(
            &src[(r - 1) * w..r * w],
            &src[r * w..(r + 1) * w],
            &src[(r + 1) * w..(r + 2) * w],
            row,
        );
    }
}

/// A rank's rows with one halo row above and below: `cur` is read, `next` written, then swapped.
struct Block {
    local: usize,
    w: usize,
    cur: Vec<f64>,
    next: Vec<f64>,
    /// Each own row's sum of squared changes in the last sweep.
    change: Vec<f64>,
}

impl Block {
    fn new(local: usize, cols: usize, is_top: bool) -> Block {
        let w = cols + 2;
        let mut cur = vec![0.0; (local + 2) * w];
        if is_top {
            cur[1..=cols].fill(HOT);
        }
        let next = cur.clone();
        Block {
            local,
            w,
            cur,
            next,
            change: vec![0.0; local],
        }
    }
}

/// The neighbouring ranks (none at the grid's top and bottom).
#[derive(Clone, Copy)]
struct Neighbours {
    up: Option<i32>,
    down: Option<i32>,
}

/// Posts the halo exchange: own edge rows to the neighbours, their edge rows into the halos.
fn post_halos<'a, S: Scope<'a> + Copy>(
    world: &SimpleCommunicator,
    scope: S,
    n: Neighbours,
    (top, own, bottom): (&'a mut [f64], &'a [f64], &'a mut [f64]),
) -> Vec<Request<'a, [f64], S>> {
    let w = top.len();
    let mut reqs = Vec::with_capacity(4);
    if let Some(up) = n.up {
        let p = world.process_at_rank(up);
        reqs.push(p.immediate_send_with_tag(scope, &own[..w], TAG_UP));
        reqs.push(p.immediate_receive_into_with_tag(scope, top, TAG_DOWN));
    }
    if let Some(down) = n.down {
        let p = world.process_at_rank(down);
        reqs.push(p.immediate_send_with_tag(scope, &own[own.len() - w..], TAG_DOWN));
        reqs.push(p.immediate_receive_into_with_tag(scope, bottom, TAG_UP));
    }
    reqs
}

/// Splits `rows` (of `w` cells) into the top halo, the own rows, and the bottom halo.
fn split_halos(rows: &mut [f64], w: usize) -> (&mut [f64], &mut [f64], &mut [f64]) {
    let (top, rest) = rows.split_at_mut(w);
    let (own, bottom) = rest.split_at_mut(rest.len() - w);
    (top, own, bottom)
}

/// One sweep: halos, every row of `b.next`, and the global sum of squared changes.
fn sweep(b: &mut Block, n: Neighbours, tile_rows: usize, mode: Mode) -> f64 {
    let (w, local) = (b.w, b.local);
    let world = SimpleCommunicator::world();
    let (top, own, bottom) = split_halos(&mut b.cur, w);
    let own: &[f64] = own;
    let (_, next_own, _) = split_halos(&mut b.next, w);
    match mode {
        Mode::Plain => {
            request::scope(|scope| {
                fmpi::wait_all(post_halos(&world, scope, n, (top, own, bottom)));
            });
            let cur: &[f64] = &b.cur;
            footprint::scope(|s| {
                let tiles = next_own.chunks_mut(tile_rows * w);
                for (t, (out, change)) in tiles.zip(b.change.chunks_mut(tile_rows)).enumerate() {
                    s.spawn(move || stencil_rows(cur, w, 1 + t * tile_rows, out, change));
                }
            });
        }
        Mode::Overlap => {
            let (first_out, rest) = next_own.split_at_mut(w);
            let (mid_out, last_out) = rest.split_at_mut(rest.len() - w);
            let (first_change, rest) = b.change.split_at_mut(1);
            let (mid_change, last_change) = rest.split_at_mut(local - 2);
            footprint::scope(|s| {
                request::scope(|scope| {
                    let mut halos = post_halos(&world, scope, n, (&mut *top, own, &mut *bottom));
                    // Interior rows 1..local-1 of `own` need no halo. Spawning a tile and
                    // yielding lets it run (a yielder waits behind the ready threads); the
                    // halos get an MPI progress poll between tiles.
                    let tiles = mid_out.chunks_mut(tile_rows * w);
                    for (t, (out, change)) in
                        tiles.zip(mid_change.chunks_mut(tile_rows)).enumerate()
                    {
                        s.spawn(move || stencil_rows(own, w, 1 + t * tile_rows, out, change));
                        footprint::yield_now();
                        fmpi::progress(&mut halos);
                    }
                    fmpi::wait_all(halos);
                });
                let last = (local - 1) * w;
                first_change[0] = stencil_row(top, &own[..w], &own[w..2 * w], first_out);
                last_change[0] = stencil_row(&own[last - w..last], &own[last..], bottom, last_out);
            });
        }
    }
    std::mem::swap(&mut b.cur, &mut b.next);
    let local_change: f64 = b.change.iter().sum();
    let mut global = 0.0;
    request::scope(|scope| {
        fmpi::wait(world.immediate_all_reduce_into(
            scope,
            &local_change,
            &mut global,
            SystemOperation::sum(),
        ));
    });
    global
}

/// What a run of all sweeps produced on this rank.
struct Run {
    residual: f64,
    seconds_per_sweep: f64,
    /// Sum of each own row, in row order.
    row_sums: Vec<f64>,
}

fn run(rt: &Runtime, c: &Config, local: usize, mode: Mode, rank: i32, size: i32) -> Run {
    let n = Neighbours {
        up: (rank > 0).then_some(rank - 1),
        down: (rank + 1 < size).then_some(rank + 1),
    };
    let mut b = Block::new(local, c.cols, rank == 0);
    rt.block_on(|| {
        SimpleCommunicator::world().barrier();
        let start = Instant::now();
        let mut residual = 0.0;
        for _ in 0..c.sweeps {
            residual = sweep(&mut b, n, c.tile_rows, mode).sqrt();
        }
        let elapsed = start.elapsed().as_secs_f64();
        let w = b.w;
        let own: Range<usize> = w..(local + 1) * w;
        let row_sums = b.cur[own]
            .chunks_exact(w)
            .map(|row| row[1..w - 1].iter().sum())
            .collect();
        Run {
            residual,
            seconds_per_sweep: elapsed / c.sweeps as f64,
            row_sums,
        }
    })
}

/// The checksum on rank 0 (row sums gathered and added in global row order); `None` elsewhere.
fn checksum(world: &SimpleCommunicator, row_sums: &[f64]) -> Option<f64> {
    let root = world.process_at_rank(0);
    if world.rank() == 0 {
        let mut all = vec![0.0; row_sums.len() * world.size() as usize];
        root.gather_into_root(row_sums, &mut all[..]);
        Some(all.iter().sum())
    } else {
        root.gather_into(row_sums);
        None
    }
}

/// The median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The slowest rank's time per sweep.
fn slowest(world: &SimpleCommunicator, seconds: f64) -> f64 {
    let mut max = 0.0;
    world.all_reduce_into(&seconds, &mut max, SystemOperation::max());
    max
}

fn main() -> ExitCode {
    let universe = match fmpi::initialize() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("mpi_heat: {e}");
            return ExitCode::FAILURE;
        }
    };
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    // Configuration errors are the same on every rank: rank 0 reports, all exit cleanly.
    let setup = parse_args(rank).and_then(|c| match c {
        Some(c) => Ok(Some((rows_per_rank(c.rows, size as usize)?, c))),
        None => Ok(None),
    });
    let (local, c) = match setup {
        Ok(Some(v)) => v,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            if rank == 0 {
                eprintln!("mpi_heat: {e}");
            }
            return ExitCode::from(2);
        }
    };
    let here = fmpi::abort_on_error(&world, fmpi::placement(&world));
    let mut builder = Runtime::builder();
    if let Some(workers) = c.workers {
        // an experiment's explicit count: more workers than CPUs is meant
        builder = builder.workers(workers).oversubscribe(true);
    }
    let rt = fmpi::abort_on_error(&world, builder.build());
    println!("{here}, {} workers", rt.workers());
    if rank == 0 {
        println!(
            "mpi_heat: {}x{} grid, {size} ranks x {local} rows, tiles of {} rows, {} sweeps",
            c.rows, c.cols, c.tile_rows, c.sweeps
        );
    }
    // Each repeat runs the modes, in reverse order every other time (so neither mode always
    // runs on the memory the other just warmed); each mode reports its median.
    let mut per_mode: Vec<Vec<f64>> = vec![Vec::new(); c.modes.len()];
    let mut sums = Vec::new();
    let mut residual = 0.0;
    for rep in 0..c.repeat {
        let mut order: Vec<usize> = (0..c.modes.len()).collect();
        if rep % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let r = run(&rt, &c, local, c.modes[i], rank, size);
            per_mode[i].push(slowest(&world, r.seconds_per_sweep));
            sums.push(checksum(&world, &r.row_sums));
            residual = r.residual;
        }
    }
    if rank != 0 {
        return ExitCode::SUCCESS;
    }
    let medians: Vec<f64> = per_mode.iter_mut().map(|t| median(t)).collect();
    for (mode, t) in c.modes.iter().zip(&medians) {
        println!(
            "{mode:?}: residual {residual:.6e} after {} sweeps, time per sweep {:.3} ms \
             (median of {})",
            c.sweeps,
            t * 1e3,
            c.repeat
        );
    }
    if let [plain, overlap] = medians[..] {
        println!(
            "overlap gain: {:+.1}% time per sweep ({:.3} ms -> {:.3} ms)",
            (plain - overlap) / plain * 100.0,
            plain * 1e3,
            overlap * 1e3
        );
    }
    let first = sums[0].unwrap_or(f64::NAN);
    if sums
        .iter()
        .any(|s| s.map(f64::to_bits) != Some(first.to_bits()))
    {
        eprintln!("mpi_heat: the runs' checksums differ: {sums:?}");
        return ExitCode::FAILURE;
    }
    println!("checksum: {first:e}");
    ExitCode::SUCCESS
}
