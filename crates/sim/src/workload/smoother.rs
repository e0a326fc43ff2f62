//! 004's active-threads smoother (Fig. 3.13–3.15): one thread per point of an irregular grid.
//! A point's thread smooths its point (reads its neighbours' values, writes its own), hands a
//! share of its residual to its neighbours, wakes those whose residual passes the threshold, and
//! suspends. A relaxed region has no runnable thread. New disturbances arrive at random points
//! whenever fewer than `min_active` points are active, so the run has a steady supply of about 5 %
//! active points, as in 004's example.
//!
//! The grid is a `side × side` torus whose points also have `extra_links` seeded long-range
//! neighbours (irregular, pointer-linked data). A point's data is `point_bytes`; its first line
//! (the value its neighbours read) is shared and written.
//!
//! ```
//! use footprint_sim::workload::smoother::{Smoother, SmootherParams};
//! use footprint_sim::workload::Workload;
//!
//! let mut w = Smoother::new(SmootherParams { side: 8, min_active: 2, ..SmootherParams::default() }, 3);
//! let start = w.initial();
//! assert!(!start.is_empty());
//! let mut wake = Vec::new();
//! let (_, syncs) = w.finish(start[0], &mut wake);
//! assert_eq!(syncs, 1);
//! ```

use super::{jitter, After, Segment, ThreadId, Workload, DATA_BASE};
use crate::memory::Ref;
use crate::rng::SplitMix64;

/// Size of [`Smoother`].
#[derive(Clone, Debug, PartialEq)]
pub struct SmootherParams {
    /// Grid side (points = side², 004: about 5000).
    pub side: usize,
    /// Bytes of data per point.
    pub point_bytes: u64,
    /// Extra seeded long-range neighbours per point.
    pub extra_links: usize,
    /// A new disturbance arrives whenever fewer points than this are active.
    pub min_active: usize,
    /// Computation cycles per smoothing.
    pub compute_cycles: u64,
}

impl Default for SmootherParams {
    fn default() -> Self {
        SmootherParams {
            side: 72,
            point_bytes: 4096,
            extra_links: 2,
            min_active: 260,
            compute_cycles: 2000,
        }
    }
}

const DISTURBANCE: u64 = 1 << 20;
const THRESHOLD: u64 = 1 << 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PointState {
    Idle,
    Active,
    /// Running, and woken again meanwhile.
    Again,
}

/// The active-threads smoother.
#[derive(Clone, Debug)]
pub struct Smoother {
    p: SmootherParams,
    neighbours: Vec<Vec<u32>>,
    residual: Vec<u64>,
    state: Vec<PointState>,
    active: usize,
    rng: SplitMix64,
}

impl Smoother {
    /// The grid; `seed` picks the long-range links and the disturbances.
    pub fn new(p: SmootherParams, seed: u64) -> Smoother {
        let mut rng = SplitMix64::new(seed);
        let side = p.side.max(2);
        let n = side * side;
        let neighbours = (0..n)
            .map(|i| {
                let (x, y) = (i % side, i / side);
                let mut v = vec![
                    (y * side + (x + 1) % side) as u32,
                    (y * side + (x + side - 1) % side) as u32,
                    (((y + 1) % side) * side + x) as u32,
                    (((y + side - 1) % side) * side + x) as u32,
                ];
                for _ in 0..p.extra_links {
                    v.push(rng.below(n as u64) as u32);
                }
                v.retain(|&j| j as usize != i);
                v
            })
            .collect();
        Smoother {
            p: SmootherParams { side, ..p },
            neighbours,
            residual: vec![0; n],
            state: vec![PointState::Idle; n],
            active: 0,
            rng,
        }
    }

    fn points(&self) -> usize {
        self.p.side * self.p.side
    }

    fn addr(&self, point: u32) -> u64 {
        DATA_BASE + u64::from(point) * self.p.point_bytes
    }

    /// Adds a disturbance at a random point; returns it if it became active.
    fn disturb(&mut self) -> Option<ThreadId> {
        let p = self.rng.below(self.points() as u64) as usize;
        self.residual[p] += DISTURBANCE;
        (self.state[p] == PointState::Idle).then(|| {
            self.state[p] = PointState::Active;
            self.active += 1;
            p as ThreadId
        })
    }

    /// Points active now.
    pub fn active(&self) -> usize {
        self.active
    }
}

impl Workload for Smoother {
    fn name(&self) -> String {
        format!(
            "smoother ({} points, {} B each)",
            self.points(),
            self.p.point_bytes
        )
    }

    fn threads(&self) -> usize {
        self.points()
    }

    fn initial(&mut self) -> Vec<ThreadId> {
        let mut start = Vec::new();
        while self.active < self.p.min_active.min(self.points()) {
            start.extend(self.disturb());
        }
        start
    }

    fn start(&mut self, t: ThreadId, seg: &mut Segment) {
        let base = self.addr(t);
        seg.refs.push(Ref {
            start: base,
            bytes: 64,
            write: true,
            shared: true,
            home: None,
        });
        seg.refs.push(Ref {
            start: base + 64,
            bytes: self.p.point_bytes.saturating_sub(64),
            write: false,
            shared: false,
            home: None,
        });
        for &j in &self.neighbours[t as usize] {
            seg.refs.push(Ref {
                start: self.addr(j),
                bytes: 64,
                write: false,
                shared: true,
                home: None,
            });
        }
        seg.compute_cycles = jitter(&mut self.rng, self.p.compute_cycles, 20);
    }

    fn finish(&mut self, t: ThreadId, wake: &mut Vec<ThreadId>) -> (After, u64) {
        let i = t as usize;
        let r = std::mem::take(&mut self.residual[i]);
        let deg = self.neighbours[i].len() as u64;
        // 70 % of the residual spreads to the neighbours; 30 % is smoothed away.
        let share = r * 7 / 10 / deg.max(1);
        for k in 0..self.neighbours[i].len() {
            let j = self.neighbours[i][k] as usize;
            self.residual[j] += share;
            if self.residual[j] >= THRESHOLD {
                match self.state[j] {
                    PointState::Idle => {
                        self.state[j] = PointState::Active;
                        self.active += 1;
                        wake.push(j as ThreadId);
                    }
                    PointState::Active if j == i => {}
                    PointState::Active | PointState::Again => {}
                }
            }
        }
        let again = self.residual[i] >= THRESHOLD || self.state[i] == PointState::Again;
        let after = if again {
            self.state[i] = PointState::Active;
            After::Continue
        } else {
            self.state[i] = PointState::Idle;
            self.active -= 1;
            After::Block
        };
        while self.active < self.p.min_active.min(self.points()) {
            wake.extend(self.disturb());
        }
        (after, 1)
    }

    fn finished(&self) -> bool {
        self.active == 0
    }
}
