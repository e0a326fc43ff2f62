//! 004's regular workload (Fig. 3.11/3.12): `threads` threads, each sweeping its own working
//! set of `working_set` bytes between synchronisations, as the blocks of an iterative solver on a
//! block-structured grid. The threads sit on a ring (a seeded permutation); after every sweep a
//! thread meets its group of `group` ring neighbours at a barrier, and the groups of odd
//! iterations are shifted by half a group, so that every block is coupled to both sides (a halo
//! exchange). The coupling bounds how far any thread can run ahead of another: a scheduler that
//! favours a few groups cannot make progress with them alone, so synchronisations per second
//! measure the throughput of the whole grid. The last thread of a group to arrive wakes the
//! others and goes on.
//!
//! ```
//! use footprint_sim::workload::regular::{Regular, RegularParams};
//! use footprint_sim::workload::{After, Workload};
//!
//! let mut w = Regular::new(RegularParams { threads: 4, group: 2, ..RegularParams::default() }, 0);
//! let mut wake = Vec::new();
//! let mate = (1..4).find(|&t| w.group_of(t) == w.group_of(0)).unwrap();
//! assert_eq!(w.finish(0, &mut wake).0, After::Block);
//! assert_eq!(w.finish(mate, &mut wake).0, After::Continue);
//! assert_eq!(wake, vec![0]);
//! ```

use super::{jitter, After, Segment, ThreadId, Workload, DATA_BASE};
use crate::memory::Ref;
use crate::rng::SplitMix64;

/// Size of [`Regular`].
#[derive(Clone, Debug, PartialEq)]
pub struct RegularParams {
    /// Threads (004: 1024).
    pub threads: usize,
    /// Working-set bytes per thread (004: 64 KiB).
    pub working_set: u64,
    /// Threads per barrier group.
    pub group: usize,
    /// Computation cycles per cache line of a sweep (±10 % seeded jitter per run).
    pub cycles_per_line: u64,
}

impl Default for RegularParams {
    fn default() -> Self {
        RegularParams {
            threads: 1024,
            working_set: 64 << 10,
            group: 8,
            cycles_per_line: 8,
        }
    }
}

/// The regular workload.
#[derive(Clone, Debug)]
pub struct Regular {
    p: RegularParams,
    /// Ring position of each thread (a seeded permutation).
    pos: Vec<u32>,
    /// Iterations each thread has finished.
    iteration: Vec<u64>,
    /// Threads waiting at each (parity, group) barrier.
    arrived: [Vec<Vec<ThreadId>>; 2],
    /// Members of each (parity, group).
    size: [Vec<usize>; 2],
    rng: SplitMix64,
}

impl Regular {
    /// The workload; `seed` picks the ring order and the run-length jitter.
    pub fn new(p: RegularParams, seed: u64) -> Regular {
        let mut rng = SplitMix64::new(seed);
        let t = p.threads.max(1);
        let mut pos: Vec<u32> = (0..t as u32).collect();
        for i in (1..pos.len()).rev() {
            pos.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let group = p.group.clamp(1, t);
        let groups = t.div_ceil(group);
        let mut size = [vec![0; groups], vec![0; groups]];
        for parity in 0..2 {
            for &q in &pos {
                size[parity][Self::group_at(q as usize, parity, group, t)] += 1;
            }
        }
        Regular {
            p: RegularParams {
                threads: t,
                group,
                ..p
            },
            pos,
            iteration: vec![0; t],
            arrived: [vec![Vec::new(); groups], vec![Vec::new(); groups]],
            size,
            rng,
        }
    }

    fn group_at(pos: usize, parity: usize, group: usize, threads: usize) -> usize {
        ((pos + parity * (group / 2)) % threads) / group
    }

    /// The barrier group of thread `t` in its current iteration.
    pub fn group_of(&self, t: ThreadId) -> (usize, usize) {
        let parity = (self.iteration[t as usize] % 2) as usize;
        let g = Self::group_at(
            self.pos[t as usize] as usize,
            parity,
            self.p.group,
            self.p.threads,
        );
        (parity, g)
    }
}

impl Workload for Regular {
    fn name(&self) -> String {
        format!(
            "regular ({} threads x {} KiB, groups of {})",
            self.p.threads,
            self.p.working_set >> 10,
            self.p.group
        )
    }

    fn threads(&self) -> usize {
        self.p.threads
    }

    fn initial(&mut self) -> Vec<ThreadId> {
        (0..self.p.threads as u32).collect()
    }

    fn start(&mut self, t: ThreadId, seg: &mut Segment) {
        seg.refs.push(Ref {
            start: DATA_BASE + u64::from(t) * self.p.working_set,
            bytes: self.p.working_set,
            write: false,
            shared: false,
            home: None,
        });
        let lines = self.p.working_set / 64;
        seg.compute_cycles = jitter(&mut self.rng, lines * self.p.cycles_per_line, 10);
    }

    fn finish(&mut self, t: ThreadId, wake: &mut Vec<ThreadId>) -> (After, u64) {
        let (parity, g) = self.group_of(t);
        self.iteration[t as usize] += 1;
        let waiting = &mut self.arrived[parity][g];
        if waiting.len() + 1 == self.size[parity][g] {
            wake.append(waiting);
            (After::Continue, 1)
        } else {
            waiting.push(t);
            (After::Block, 1)
        }
    }

    fn finished(&self) -> bool {
        false
    }
}
