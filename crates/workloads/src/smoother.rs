//! 004's irregular workload, the active-threads smoother: one green thread per point of an
//! unstructured grid; in each sweep a point waits until all its neighbours have finished the
//! previous sweep, averages its values with theirs (Jacobi smoothing), publishes the result,
//! wakes the neighbours it made runnable and parks. There is no global barrier: which thread
//! can run next depends on the grid, so the order in which woken threads resume decides how often
//! a point's and its neighbours' data are still in the cache.
//!
//! Grid: a `side × side` lattice with jittered extra diagonals (degree 4 to 8, symmetric), point
//! ids shuffled so that spawn order is not spatial order; `WIDTH` values (512 bytes) per point
//! and buffer. The result is bit-exact against the sequential sweep (same operations, same order).
//! Used by `benches/smoother.rs` and the report (`tools/report`), so both time this code.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use footprint::locks::{Placement, Unparker};
use footprint::sync::Barrier;
use rayon::prelude::*;

/// Values per point (512 bytes per buffer).
pub const WIDTH: usize = 64;

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

pub struct Grid {
    points: Vec<Point>,
    /// Sweeps per run.
    iters: u32,
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

impl Grid {
    /// A `side × side` lattice grid run for `iters` sweeps.
    pub fn new(side: usize, iters: u32) -> Grid {
        assert!(
            side >= 2 && iters >= 1,
            "a smoother grid needs side >= 2 and iters >= 1"
        );
        let points = side * side;
        let mut rng = 0x5DEE_CE66_D1CE_4E5Bu64;
        // Shuffled ids: lattice position p has id perm[p].
        let mut perm: Vec<usize> = (0..points).collect();
        for i in (1..points).rev() {
            perm.swap(i, (xorshift(&mut rng) % (i as u64 + 1)) as usize);
        }
        let mut adj: Vec<Vec<usize>> = vec![Vec::new(); points];
        let link = |a: usize, b: usize, adj: &mut Vec<Vec<usize>>| {
            if !adj[a].contains(&b) {
                adj[a].push(b);
                adj[b].push(a);
            }
        };
        for y in 0..side {
            for x in 0..side {
                let p = perm[y * side + x];
                if x + 1 < side {
                    link(p, perm[y * side + x + 1], &mut adj);
                }
                if y + 1 < side {
                    link(p, perm[(y + 1) * side + x], &mut adj);
                }
                // Jitter: about half the cells get one diagonal, either way.
                if x + 1 < side && y + 1 < side && xorshift(&mut rng).is_multiple_of(2) {
                    let (a, b) = if xorshift(&mut rng).is_multiple_of(2) {
                        (p, perm[(y + 1) * side + x + 1])
                    } else {
                        (perm[y * side + x + 1], perm[(y + 1) * side + x])
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
        Grid { points, iters }
    }

    /// Points (green threads) of the grid.
    pub fn points(&self) -> usize {
        self.points.len()
    }

    /// Sweeps per run.
    pub fn iters(&self) -> u32 {
        self.iters
    }

    /// Resets for a new run: initial values in buffer 0, no sweep done, no unparkers.
    pub fn reset(&mut self) {
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
        for k in 1..=self.iters {
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
                if runnable && waits_for < self.iters {
                    if let Some(u) = q.unparker.get() {
                        u.unpark(Placement::Anywhere);
                    }
                }
            }
        }
    }

    /// One run on `rt`: a green thread per point (`start` is a barrier of `points()` parties).
    pub fn run_footprint(&self, rt: &footprint::Runtime, start: &Barrier) {
        rt.block_on(|| {
            footprint::scope(|s| {
                for i in 0..self.points.len() {
                    s.spawn(move || self.run_point(i, start));
                }
            })
        })
    }

    /// The peer: each sweep a rayon `par_iter` over all points (bulk synchronous).
    pub fn run_rayon(&self, pool: &rayon::ThreadPool) {
        pool.install(|| {
            for k in 1..=self.iters {
                // SAFETY: bulk synchronous: every point's sweep k − 1 finished before this
                // par_iter starts, and sweep k writes only the points' own buffer k % 2.
                (0..self.points.len())
                    .into_par_iter()
                    .for_each(|i| unsafe { self.sweep(i, k) });
            }
        })
    }

    /// The oracle: every sweep in order on the calling thread.
    pub fn run_sequential(&self) {
        for k in 1..=self.iters {
            for i in 0..self.points.len() {
                // SAFETY: one thread, sweeps in order.
                unsafe { self.sweep(i, k) };
            }
        }
    }

    /// Every point's values after the last sweep (compare with the sequential run's).
    pub fn result(&mut self) -> Vec<[f64; WIDTH]> {
        let iters = self.iters;
        self.points
            .iter_mut()
            .map(|p| *p.vals[iters as usize % 2].get_mut())
            .collect()
    }
}
