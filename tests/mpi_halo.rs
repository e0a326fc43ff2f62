//! 4 ranks × 64 green threads exchange halos through a split communicator (feature `mpi`):
//! a 1-D ring of 64 segments per rank, each segment a green thread that sends its edge values
//! to its neighbours' owners and receives theirs (immediate operations waited for with
//! `footprint::mpi::wait_all` on a `Vec` of requests in even segments, `wait_any` then
//! `wait_all` on an rsmpi request collection in odd ones, so a waiting green thread never holds
//! its worker), then sweeps. The communicator is split from world with the ranks reversed and
//! shared by the 64 green threads of a rank through `footprint::mpi::SharedComm`.
//! The per-segment checksums, gathered in segment order, must equal bit for bit those of the
//! same sweeps run sequentially in one process.
//!
//! Run: `mpirun -n 4 <test binary>` (CI), or as one process. A plain test binary
//! (`harness = false`: MPI is initialised once per process); a watchdog aborts a hung rank.

use std::process::ExitCode;
use std::time::Duration;

use footprint::mpi::rsmpi::request;
use footprint::mpi::rsmpi::topology::Color;
use footprint::mpi::rsmpi::traits::*;
use footprint::mpi::{self as fmpi, SharedComm};
use footprint::Runtime;

/// Green threads (segments) per rank.
const THREADS: usize = 64;
/// Cells per segment.
const LEN: usize = 16;
/// Sweeps.
const STEPS: usize = 10;
/// Seconds before the watchdog aborts this rank (and with it the job).
const WATCHDOG_SECS: u64 = 120;

fn initial(cell: usize) -> f64 {
    (cell % 97) as f64
}

/// One sweep of a segment: each cell becomes the mean of itself and its neighbours.
fn sweep(x: &mut [f64], left: f64, right: f64) {
    let old = x.to_vec();
    for i in 0..x.len() {
        let l = if i == 0 { left } else { old[i - 1] };
        let r = if i + 1 == x.len() { right } else { old[i + 1] };
        x[i] = (l + old[i] + r) / 3.0;
    }
}

fn checksum(segment: usize, x: &[f64]) -> f64 {
    x.iter()
        .enumerate()
        .map(|(i, v)| (segment * LEN + i + 1) as f64 * v)
        .sum()
}

/// The same sweeps over `segments` segments in one process: per-segment checksums.
fn reference(segments: usize) -> Vec<f64> {
    let mut segs: Vec<Vec<f64>> = (0..segments)
        .map(|g| (0..LEN).map(|i| initial(g * LEN + i)).collect())
        .collect();
    for _ in 0..STEPS {
        let edges: Vec<(f64, f64)> = segs.iter().map(|s| (s[0], s[LEN - 1])).collect();
        for (g, s) in segs.iter_mut().enumerate() {
            let left = edges[(g + segments - 1) % segments].1;
            let right = edges[(g + 1) % segments].0;
            sweep(s, left, right);
        }
    }
    segs.iter()
        .enumerate()
        .map(|(g, s)| checksum(g, s))
        .collect()
}

fn main() -> ExitCode {
    let universe = match fmpi::initialize() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("mpi_halo: {e}");
            return ExitCode::FAILURE;
        }
    };
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(WATCHDOG_SECS));
        eprintln!("mpi_halo: no result after {WATCHDOG_SECS} s (a lost message?); aborting");
        std::process::abort();
    });
    let world = universe.world();
    // Reversed ranks: the split communicator numbers the processes differently from world.
    let key = world.size() - 1 - world.rank();
    let comm = world
        .split_by_color_with_key(Color::with_value(0), key)
        .expect("every rank has the color");
    let comm = fmpi::abort_on_error(&world, SharedComm::new(comm));
    let (me, ranks) = (comm.rank() as usize, comm.size() as usize);
    let segments = ranks * THREADS;
    let rt = fmpi::abort_on_error(&world, Runtime::builder().workers(2).build());
    let mine: Vec<f64> = rt.block_on(|| {
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let comm = comm.clone();
                footprint::spawn(move || {
                    let g = me * THREADS + t;
                    let (left_g, right_g) = ((g + segments - 1) % segments, (g + 1) % segments);
                    let owner = |s: usize| comm.process_at_rank((s / THREADS) as i32);
                    let mut x: Vec<f64> = (0..LEN).map(|i| initial(g * LEN + i)).collect();
                    for _ in 0..STEPS {
                        let (mut from_left, mut from_right) = (0.0f64, 0.0f64);
                        let (first, last) = (x[0], x[LEN - 1]);
                        // Tag 2h: a value for segment h from its left; 2h + 1: from its right.
                        let tags = (
                            (2 * g) as i32,
                            (2 * g + 1) as i32,
                            (2 * left_g + 1) as i32,
                            (2 * right_g) as i32,
                        );
                        if g.is_multiple_of(2) {
                            // Even segments: a Vec of requests and `wait_all`.
                            request::scope(|scope| {
                                let reqs = vec![
                                    owner(left_g).immediate_receive_into_with_tag(
                                        scope,
                                        &mut from_left,
                                        tags.0,
                                    ),
                                    owner(right_g).immediate_receive_into_with_tag(
                                        scope,
                                        &mut from_right,
                                        tags.1,
                                    ),
                                    owner(left_g).immediate_send_with_tag(scope, &first, tags.2),
                                    owner(right_g).immediate_send_with_tag(scope, &last, tags.3),
                                ];
                                assert_eq!(fmpi::wait_all(reqs).len(), 4);
                            });
                        } else {
                            // Odd segments: an rsmpi request collection, `wait_any` for one
                            // request, then `wait_all` for the rest.
                            request::multiple_scope(4, |scope, coll| {
                                coll.add(owner(left_g).immediate_receive_into_with_tag(
                                    scope,
                                    &mut from_left,
                                    tags.0,
                                ));
                                coll.add(owner(right_g).immediate_receive_into_with_tag(
                                    scope,
                                    &mut from_right,
                                    tags.1,
                                ));
                                coll.add(
                                    owner(left_g).immediate_send_with_tag(scope, &first, tags.2),
                                );
                                coll.add(
                                    owner(right_g).immediate_send_with_tag(scope, &last, tags.3),
                                );
                                let (one, _, _) = fmpi::wait_any(coll).expect("4 pending");
                                let rest = fmpi::wait_all(&mut *coll);
                                let mut done: Vec<usize> = rest.iter().map(|r| r.0).collect();
                                done.push(one);
                                done.sort_unstable();
                                assert_eq!(done, [0, 1, 2, 3], "each request completes once");
                                assert!(fmpi::wait_any(coll).is_none());
                            });
                        }
                        sweep(&mut x, from_left, from_right);
                    }
                    checksum(g, &x)
                })
            })
            .collect();
        threads.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = vec![0.0f64; segments];
    comm.all_gather_into(&mine[..], &mut all[..]);
    let expect = reference(segments);
    if all != expect {
        let bad = all.iter().zip(&expect).position(|(a, b)| a != b);
        eprintln!("mpi_halo rank {me}/{ranks}: checksums differ from one process's, first at segment {bad:?}");
        return ExitCode::FAILURE;
    }
    println!(
        "mpi_halo rank {me}/{ranks} (world rank {}): {segments} segments, checksums equal to one \
         process's (total {})",
        world.rank(),
        all.iter().sum::<f64>()
    );
    ExitCode::SUCCESS
}
