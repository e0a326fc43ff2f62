//! An irregular, active-threads smoother after 004's adaptive solvers on irregular grids: one
//! green thread per point of an unstructured grid. A thread parks until a neighbour wakes it,
//! then smooths its point (it sweeps its own working set, standing for the point's cell data,
//! and replaces its value by the mean of its neighbours'), and wakes its neighbours when its
//! value moved by more than `eps`. The run ends when no point is active. The execution order is
//! whatever the wake-ups make it: irregular, unlike the regular workload's barrier groups.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use footprint::sync::{Condvar, Mutex};

/// The run's parameters (the grid is a [`Grid`]).
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Bytes of each point's working set.
    pub working_set: usize,
    /// Change below which a point does not wake its neighbours.
    pub eps: f64,
    /// Updates per point at most (bounds the run whatever the order).
    pub max_updates: u32,
}

/// An unstructured grid of `side²` points (one green thread each): a lattice whose points are numbered in a scrambled order, with the four
/// lattice neighbours plus one hashed diagonal per point (links are symmetric). Border points
/// are fixed (value 1 on the left edge, 0 elsewhere) and never change.
pub struct Grid {
    pub neighbours: Vec<Vec<u32>>,
    pub fixed: Vec<bool>,
    pub initial: Vec<f64>,
}

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Grid {
    pub fn new(side: usize) -> Grid {
        let n = side * side;
        // A scrambled numbering: point ids say nothing about lattice positions.
        let mut id: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            id.swap(i, (mix(i as u64) % (i as u64 + 1)) as usize);
        }
        let at = |r: usize, c: usize| id[r * side + c] as usize;
        let mut neighbours = vec![Vec::new(); n];
        let mut fixed = vec![false; n];
        let mut initial = vec![0.0; n];
        let link = |a: usize, b: usize, nb: &mut Vec<Vec<u32>>| {
            if a != b && !nb[a].contains(&(b as u32)) {
                nb[a].push(b as u32);
                nb[b].push(a as u32);
            }
        };
        for r in 0..side {
            for c in 0..side {
                let p = at(r, c);
                fixed[p] = r == 0 || c == 0 || r + 1 == side || c + 1 == side;
                initial[p] = if c == 0 { 1.0 } else { 0.0 };
                if c + 1 < side {
                    link(p, at(r, c + 1), &mut neighbours);
                }
                if r + 1 < side {
                    link(p, at(r + 1, c), &mut neighbours);
                }
                if r + 1 < side && c + 1 < side {
                    let diagonal = if mix((r * side + c) as u64).is_multiple_of(2) {
                        at(r + 1, c + 1)
                    } else {
                        at(r + 1, c.saturating_sub(1))
                    };
                    link(p, diagonal, &mut neighbours);
                }
            }
        }
        Grid {
            neighbours,
            fixed,
            initial,
        }
    }

    pub fn points(&self) -> usize {
        self.neighbours.len()
    }
}

/// One point's wake-up slot.
struct Slot {
    pending: Mutex<bool>,
    wake: Condvar,
}

/// What one run did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    /// Smoothing steps done (all points).
    pub updates: u64,
    /// The largest |value − mean of neighbours| over free points at the end.
    pub residual: f64,
}

/// The state of one run.
pub struct Smoother<'g> {
    grid: &'g Grid,
    params: Params,
    values: Vec<AtomicU64>,
    slots: Vec<Slot>,
    working_sets: Vec<Mutex<Vec<u64>>>,
    /// Activations not yet consumed; 0 means done.
    active: AtomicU64,
    stop: AtomicBool,
    updates: AtomicU64,
}

impl<'g> Smoother<'g> {
    pub fn new(grid: &'g Grid, params: Params) -> Smoother<'g> {
        let words = (params.working_set / 8).max(8);
        let free = grid.fixed.iter().filter(|f| !**f).count() as u64;
        Smoother {
            grid,
            params,
            values: grid
                .initial
                .iter()
                .map(|v| AtomicU64::new(v.to_bits()))
                .collect(),
            slots: grid
                .fixed
                .iter()
                .map(|f| Slot {
                    pending: Mutex::new(!f),
                    wake: Condvar::new(),
                })
                .collect(),
            working_sets: (0..grid.points())
                .map(|_| Mutex::new(vec![0u64; words]))
                .collect(),
            active: AtomicU64::new(free),
            // No free point: nothing will ever run, so the run is over before it starts.
            stop: AtomicBool::new(free == 0),
            updates: AtomicU64::new(0),
        }
    }

    fn value(&self, p: usize) -> f64 {
        f64::from_bits(self.values[p].load(Ordering::Relaxed))
    }

    fn mean_of_neighbours(&self, p: usize) -> f64 {
        let nb = &self.grid.neighbours[p];
        nb.iter().map(|&q| self.value(q as usize)).sum::<f64>() / nb.len().max(1) as f64
    }

    /// Marks `p` pending and wakes it (counted before the caller's own activation ends).
    fn activate(&self, p: usize) {
        let mut pending = self.slots[p].pending.lock();
        if !*pending {
            *pending = true;
            self.active.fetch_add(1, Ordering::AcqRel);
            drop(pending);
            self.slots[p].wake.notify_one();
        }
    }

    /// Ends the run: every thread sees `stop` under its slot's lock.
    fn finish(&self) {
        self.stop.store(true, Ordering::Release);
        for slot in &self.slots {
            drop(slot.pending.lock());
            slot.wake.notify_all();
        }
    }

    /// Sweeps a working set (one read-modify-write per 64-byte line, stride 9 lines so that
    /// prefetchers see no unit stride).
    fn sweep(&self, p: usize) {
        let mut ws = self.working_sets[p].lock();
        let lines = ws.len() / 8;
        let mut line = 0;
        for _ in 0..lines {
            ws[line * 8] = ws[line * 8].wrapping_add(1);
            line = (line + 9) % lines;
        }
        black_box(&mut *ws);
    }

    /// The body of point `p`'s green thread.
    pub fn point(&self, p: usize) {
        let mut updates = 0u32;
        loop {
            {
                let slot = &self.slots[p];
                let mut pending = slot.pending.lock();
                slot.wake.wait_while(&mut pending, |pending| {
                    !*pending && !self.stop.load(Ordering::Acquire)
                });
                if !*pending {
                    return; // stopped
                }
                *pending = false;
            }
            if !self.grid.fixed[p] && updates < self.params.max_updates {
                self.sweep(p);
                let old = self.value(p);
                let new = self.mean_of_neighbours(p);
                self.values[p].store(new.to_bits(), Ordering::Relaxed);
                updates += 1;
                self.updates.fetch_add(1, Ordering::Relaxed);
                if (new - old).abs() > self.params.eps {
                    for &q in &self.grid.neighbours[p] {
                        if !self.grid.fixed[q as usize] {
                            self.activate(q as usize);
                        }
                    }
                }
            }
            if self.active.fetch_sub(1, Ordering::AcqRel) == 1 {
                self.finish();
            }
        }
    }

    /// What the run did (after every thread returned).
    pub fn outcome(&self) -> Outcome {
        let residual = (0..self.grid.points())
            .filter(|&p| !self.grid.fixed[p])
            .map(|p| (self.value(p) - self.mean_of_neighbours(p)).abs())
            .fold(0.0, f64::max);
        Outcome {
            updates: self.updates.load(Ordering::Relaxed),
            residual,
        }
    }
}

/// One run on `rt`: one green thread per point.
pub fn run_footprint(rt: &footprint::Runtime, grid: &Grid, params: Params) -> Outcome {
    let smoother = Smoother::new(grid, params);
    rt.block_on(|| {
        footprint::scope(|s| {
            for p in 0..grid.points() {
                let smoother = &smoother;
                s.spawn(move || smoother.point(p));
            }
        })
    });
    smoother.outcome()
}
