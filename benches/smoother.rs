//! 004's irregular workload: the active-threads smoother. One green thread per point of an
//! unstructured grid (4096 points, each with 512 bytes of values per buffer: 4 MiB in all with
//! the two Jacobi buffers); in each of `ITERS` sweeps a point waits until all its neighbours have
//! finished the previous sweep, averages its values with theirs (Jacobi smoothing), publishes
//! the result, wakes the neighbours it made runnable and parks. There is no global barrier:
//! which thread can run next depends on the grid, so the order in which woken threads resume decides how often a
//! point's and its neighbours' data are still in the cache. Compare with `working_set.rs` (004's
//! regular workload, 1024 × 64 KiB behind group barriers).
//!
//! Grid: a 64 × 64 lattice with jittered extra diagonals (degree 4 to 8, symmetric), point ids
//! shuffled so that spawn order is not spatial order. The result is checked against a sequential
//! Jacobi sweep (bit-exact: same operations in the same order).
//!
//! Rows: `footprint_lifo`, `footprint_fifo`, `footprint_virtual_time` (the ready orders, 2
//! workers), `rayon_bulk_sync` (peer: each sweep a `par_iter` over all points, a global barrier
//! between sweeps), `sequential` (the oracle's loop).
//!
//! Run: `cargo bench --bench smoother -- --warm-up-time 1 --measurement-time 2`

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use criterion::{criterion_group, criterion_main, Criterion};
use footprint::locks::{Placement, Unparker};
use footprint::sync::Barrier;
use rayon::prelude::*;

const SIDE: usize = 64;
const POINTS: usize = SIDE * SIDE;
/// Values per point (512 bytes per buffer).
const WIDTH: usize = 64;
const ITERS: u32 = 10;
const WORKERS: usize = 2;

/// One grid point: its neighbours, how many sweeps it has finished, and its two buffers.
struct Point {
    neighbours: Vec<usize>,
    done: AtomicU32,
    vals: [UnsafeCell<[f64; WIDTH]>; 2],
    unparker: OnceLock<Unparker>,
}

// SAFETY: a point's buffer `b` is written only by its own thread during a sweep `k` with
// `k % 2 == b`, after every neighbour finished sweep `k - 1` (so none still reads the buffer's
// previous content, sweep `k - 2`), and read by neighbours only after `done` says sweep `k`
// finished (Release/Acquire on `done`).
unsafe impl Sync for Point {}

struct Grid {
    points: Vec<Point>,
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

impl Grid {
    fn new() -> Grid {
        let mut rng = 0x5DEE_CE66_D1CE_4E5Bu64;
        // Shuffled ids: lattice position p has id perm[p].
        let mut perm: Vec<usize> = (0..POINTS).collect();
        for i in (1..POINTS).rev() {
            perm.swap(i, (xorshift(&mut rng) % (i as u64 + 1)) as usize);
        }
        let mut adj: Vec<Vec<usize>> = vec![Vec::new(); POINTS];
        let link = |a: usize, b: usize, adj: &mut Vec<Vec<usize>>| {
            if !adj[a].contains(&b) {
                adj[a].push(b);
                adj[b].push(a);
            }
        };
        for y in 0..SIDE {
            for x in 0..SIDE {
                let p = perm[y * SIDE + x];
                if x + 1 < SIDE {
                    link(p, perm[y * SIDE + x + 1], &mut adj);
                }
                if y + 1 < SIDE {
                    link(p, perm[(y + 1) * SIDE + x], &mut adj);
                }
                // Jitter: about half the cells get one diagonal, either way.
                if x + 1 < SIDE && y + 1 < SIDE && xorshift(&mut rng).is_multiple_of(2) {
                    let (a, b) = if xorshift(&mut rng).is_multiple_of(2) {
                        (p, perm[(y + 1) * SIDE + x + 1])
                    } else {
                        (perm[y * SIDE + x + 1], perm[(y + 1) * SIDE + x])
                    };
                    link(a, b, &mut adj);
                }
            }
        }
        let points = adj
            .into_iter()
            .enumerate()
            .map(|(i, neighbours)| Point {
                neighbours,
                done: AtomicU32::new(0),
                vals: [
                    UnsafeCell::new(std::array::from_fn(|k| (i * WIDTH + k) as f64)),
                    UnsafeCell::new([0.0; WIDTH]),
                ],
                unparker: OnceLock::new(),
            })
            .collect();
        Grid { points }
    }

    /// Resets for a new run: initial values in buffer 0, no sweep done, no unparkers.
    fn reset(&mut self) {
        for (i, p) in self.points.iter_mut().enumerate() {
            *p.vals[0].get_mut() = std::array::from_fn(|k| (i * WIDTH + k) as f64);
            *p.done.get_mut() = 0;
            p.unparker = OnceLock::new();
        }
    }

    /// Sweep `k` (numbered from 1) of point `i`: reads buffer `(k + 1) % 2` of it and its
    /// neighbours (sweep 1 reads the initial values in buffer 0) and writes its buffer `k % 2`.
    ///
    /// # Safety
    /// The protocol of `Point`'s `Sync` impl holds (sweep `k − 1` of every neighbour is done,
    /// and no neighbour is past sweep `k`).
    unsafe fn sweep(&self, i: usize, k: u32) {
        let src = (k as usize + 1) % 2;
        let p = &self.points[i];
        // SAFETY: per the contract, buffer `src` of every point read here is not being written.
        let mut acc: [f64; WIDTH] = unsafe { *p.vals[src].get() };
        for &n in &p.neighbours {
            // SAFETY: as above.
            let v = unsafe { &*self.points[n].vals[src].get() };
            for (a, b) in acc.iter_mut().zip(v) {
                *a += b;
            }
        }
        let d = (p.neighbours.len() + 1) as f64;
        // SAFETY: only this point's thread writes its buffer `k % 2`, and no neighbour reads it
        // during sweep `k` (they read buffer `src`).
        let out = unsafe { &mut *p.vals[k as usize % 2].get() };
        for (o, a) in out.iter_mut().zip(acc) {
            *o = a / d;
        }
    }

    /// The green thread of point `i`.
    fn run_point(&self, i: usize, start: &Barrier) {
        let p = &self.points[i];
        let _ = p.unparker.set(footprint::runtime::park::current_unparker());
        start.wait();
        for k in 1..=ITERS {
            while p
                .neighbours
                .iter()
                .any(|&n| self.points[n].done.load(Ordering::SeqCst) < k - 1)
            {
                footprint::runtime::park::park();
            }
            // SAFETY: every neighbour finished sweep k − 1 and none can pass sweep k before we
            // publish ours (they wait for us).
            unsafe { self.sweep(i, k) };
            // Wake the neighbours this sweep made runnable: those whose neighbours have all
            // finished the sweep they wait for. SeqCst on `done` (store here, loads there): of
            // two neighbours of one point finishing at once, at least one sees the other's
            // store and wakes it (no lost wake-up); a wake-up that comes early only costs a
            // re-check.
            p.done.store(k, Ordering::SeqCst);
            for &n in &p.neighbours {
                let q = &self.points[n];
                let waits_for = q.done.load(Ordering::SeqCst);
                let runnable = q
                    .neighbours
                    .iter()
                    .all(|&m| self.points[m].done.load(Ordering::SeqCst) >= waits_for);
                if runnable && waits_for < ITERS {
                    if let Some(u) = q.unparker.get() {
                        u.unpark(Placement::Anywhere);
                    }
                }
            }
        }
    }

    fn run_footprint(&self, rt: &footprint::Runtime, start: &Barrier) {
        rt.block_on(|| {
            footprint::scope(|s| {
                for i in 0..POINTS {
                    s.spawn(move || self.run_point(i, start));
                }
            })
        })
    }

    fn run_rayon(&self, pool: &rayon::ThreadPool) {
        pool.install(|| {
            for k in 1..=ITERS {
                // SAFETY: bulk synchronous: every point's sweep k − 1 finished before this
                // par_iter starts, and sweep k writes only the points' own buffer k % 2.
                (0..POINTS)
                    .into_par_iter()
                    .for_each(|i| unsafe { self.sweep(i, k) });
            }
        })
    }

    fn run_sequential(&self) {
        for k in 1..=ITERS {
            for i in 0..POINTS {
                // SAFETY: one thread, sweeps in order.
                unsafe { self.sweep(i, k) };
            }
        }
    }

    fn result(&mut self) -> Vec<[f64; WIDTH]> {
        self.points
            .iter_mut()
            .map(|p| *p.vals[ITERS as usize % 2].get_mut())
            .collect()
    }
}

fn smoother(c: &mut Criterion) {
    let mut grid = Grid::new();
    grid.run_sequential();
    let expected = grid.result();
    let mut group = c.benchmark_group(format!("smoother_{POINTS}pts_x{ITERS}"));
    group.sample_size(10);
    let start = Barrier::new(POINTS);
    for (name, rt) in orders::ready_order_runtimes(WORKERS) {
        grid.reset();
        grid.run_footprint(&rt, &start);
        assert!(grid.result() == expected, "{name}: wrong result");
        group.bench_function(name, |b| {
            b.iter(|| {
                grid.reset();
                grid.run_footprint(&rt, &start)
            })
        });
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(WORKERS)
        .build()
        .expect("a rayon pool");
    grid.reset();
    grid.run_rayon(&pool);
    assert!(grid.result() == expected, "rayon: wrong result");
    group.bench_function("rayon_bulk_sync", |b| {
        b.iter(|| {
            grid.reset();
            grid.run_rayon(&pool)
        })
    });
    group.bench_function("sequential", |b| {
        b.iter(|| {
            grid.reset();
            grid.run_sequential()
        })
    });
    group.finish();
}

#[path = "common/orders.rs"]
mod orders;

criterion_group!(benches, smoother);
criterion_main!(benches);
