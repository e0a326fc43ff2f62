//! SPMD programs on green threads: one green thread per rank, more ranks than workers, with the
//! locks crate's `Mutex` and `Barrier` (as `footprint::sync`) between phases. On one worker a
//! rank that waits must give the worker away, or these tests hang.

use std::sync::atomic::{AtomicU64, Ordering};

use footprint::sync::{Barrier, Mutex};
mod common;
use common::{runtime, WORKER_COUNTS};

/// One explicit diffusion step of `cells` with ghost values `left`/`right`.
fn step(cells: &[f64], left: f64, right: f64, out: &mut [f64]) {
    let n = cells.len();
    for i in 0..n {
        let l = if i == 0 { left } else { cells[i - 1] };
        let r = if i + 1 == n { right } else { cells[i + 1] };
        out[i] = cells[i] + 0.25 * (l - 2.0 * cells[i] + r);
    }
}

fn initial(i: usize) -> f64 {
    // Deterministic, irregular start values.
    ((i * 7919) % 101) as f64
}

fn stencil_sequential(cells: usize, steps: usize) -> Vec<f64> {
    let mut cur: Vec<f64> = (0..cells).map(initial).collect();
    let mut next = vec![0.0; cells];
    for _ in 0..steps {
        step(&cur, 0.0, 0.0, &mut next);
        std::mem::swap(&mut cur, &mut next);
    }
    cur
}

/// The stencil split over `ranks` green threads exchanging halo cells through mutexes, with a
/// barrier after publishing and one after reading.
fn stencil_spmd(ranks: usize, per_rank: usize, steps: usize) -> Vec<f64> {
    let edges: Vec<Mutex<[f64; 2]>> = (0..ranks).map(|_| Mutex::new([0.0; 2])).collect();
    let barrier = Barrier::new(ranks);
    footprint::scope(|s| {
        let handles: Vec<_> = (0..ranks)
            .map(|rank| {
                let (edges, barrier) = (&edges, &barrier);
                s.spawn(move || {
                    let mut cur: Vec<f64> = (0..per_rank)
                        .map(|i| initial(rank * per_rank + i))
                        .collect();
                    let mut next = vec![0.0; per_rank];
                    for _ in 0..steps {
                        *edges[rank].lock() = [cur[0], cur[per_rank - 1]];
                        barrier.wait();
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
                        barrier.wait();
                    }
                    cur
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a rank panicked"))
            .collect()
    })
}

#[test]
fn spmd_stencil_with_barriers_matches_the_sequential_result_bit_for_bit() {
    let (ranks, per_rank, steps) = (8, 64, 50);
    let expected = stencil_sequential(ranks * per_rank, steps);
    for workers in WORKER_COUNTS {
        let rt = runtime(workers);
        let got = rt.block_on(|| stencil_spmd(ranks, per_rank, steps));
        assert_eq!(got, expected, "{ranks} ranks on {workers} workers");
    }
}

#[test]
fn barrier_phases_never_overlap() {
    // Every rank adds to the phase counter, waits, and checks that all ranks arrived; then waits
    // again before the next phase. A rank running ahead into the next phase would break the count.
    let (ranks, phases) = (12u64, 40u64);
    for workers in WORKER_COUNTS {
        let rt = runtime(workers);
        let arrived = AtomicU64::new(0);
        let barrier = Barrier::new(ranks as usize);
        let leaders = AtomicU64::new(0);
        rt.block_on(|| {
            footprint::scope(|s| {
                for _ in 0..ranks {
                    s.spawn(|| {
                        for phase in 1..=phases {
                            arrived.fetch_add(1, Ordering::SeqCst);
                            if barrier.wait().is_leader() {
                                leaders.fetch_add(1, Ordering::SeqCst);
                            }
                            assert_eq!(arrived.load(Ordering::SeqCst), phase * ranks);
                            barrier.wait();
                        }
                    });
                }
            })
        });
        assert_eq!(arrived.load(Ordering::SeqCst), ranks * phases);
        assert_eq!(
            leaders.load(Ordering::SeqCst),
            phases,
            "one leader per phase on {workers} workers"
        );
    }
}

#[test]
fn a_barrier_release_wakes_only_the_phase_it_ends() {
    // Many ranks per worker and almost no work per phase: ranks released from one phase park
    // for the next while the release is still waking. Each rank that is not its phase's last
    // arrival parks at most once per phase, so the runtime counts at most (ranks - 1) parks a
    // phase, besides the scope's own waits. A release that also woke the next phase's waiters
    // (which then parked again) counted hundreds more.
    let phases = 200u64;
    for workers in [2, 5, 8] {
        let ranks = 8 * workers as u64;
        let rt = runtime(workers);
        let barrier = Barrier::new(ranks as usize);
        let before: u64 = rt.stats().workers.iter().map(|w| w.parks).sum();
        rt.block_on(|| {
            footprint::scope(|s| {
                for _ in 0..ranks {
                    s.spawn(|| {
                        for _ in 0..phases {
                            barrier.wait();
                        }
                    });
                }
            })
        });
        let parks = rt.stats().workers.iter().map(|w| w.parks).sum::<u64>() - before;
        let bound = (ranks - 1) * phases + ranks;
        assert!(
            parks <= bound,
            "{parks} parks for {ranks} ranks x {phases} phases on {workers} workers (at most {bound})"
        );
    }
}

#[test]
fn mutex_counter_is_exact_when_holders_yield_inside_the_critical_section() {
    // Holders yield while holding the lock, so waiters on the same worker find it taken and must
    // not spin the worker away from the holder.
    let (threads, rounds) = (16u64, if cfg!(debug_assertions) { 200 } else { 2_000 });
    for workers in WORKER_COUNTS {
        let rt = runtime(workers);
        let counter = Mutex::new(0u64);
        rt.block_on(|| {
            footprint::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        for _ in 0..rounds {
                            let mut guard = counter.lock();
                            let seen = *guard;
                            footprint::yield_now();
                            *guard = seen + 1;
                        }
                    });
                }
            })
        });
        assert_eq!(
            *counter.lock(),
            threads * rounds,
            "lost updates on {workers} workers"
        );
    }
}
