//! 000's lock benchmarks as reference streams: `threads` threads loop over a non-critical
//! section (private data) and a critical section under one of `locks` blocking locks (the lock
//! word, a counter and `cs_bytes` of protected data, all shared and written). `locks = 1` is the
//! *single counter* benchmark; more is *multiple counters, multiple locks* (each iteration picks a
//! lock at random). A released lock passes to its oldest waiter, which is woken. One
//! synchronisation per lock acquisition.
//!
//! ```
//! use footprint_sim::workload::locks::{Locks, LockParams};
//! use footprint_sim::workload::{After, Workload};
//!
//! let mut w = Locks::new(LockParams { threads: 2, ..LockParams::default() }, 0);
//! let mut wake = Vec::new();
//! assert_eq!(w.finish(0, &mut wake), (After::Continue, 0)); // got the lock
//! assert_eq!(w.finish(1, &mut wake), (After::Block, 0));    // waits
//! assert_eq!(w.finish(0, &mut wake), (After::Continue, 1)); // releases: hands over
//! assert_eq!(wake, vec![1]);
//! ```

use super::{jitter, After, Segment, ThreadId, Workload, DATA_BASE};
use crate::memory::Ref;
use crate::rng::SplitMix64;
use std::collections::VecDeque;

/// Size of [`Locks`].
#[derive(Clone, Debug, PartialEq)]
pub struct LockParams {
    /// Threads.
    pub threads: usize,
    /// Locks (1: single counter).
    pub locks: usize,
    /// Protected bytes per lock, touched in each critical section.
    pub cs_bytes: u64,
    /// Private bytes per thread, touched in each non-critical section.
    pub private_bytes: u64,
    /// Computation cycles of a non-critical section.
    pub work_cycles: u64,
}

impl Default for LockParams {
    fn default() -> Self {
        LockParams {
            threads: 256,
            locks: 1,
            cs_bytes: 256,
            private_bytes: 16 << 10,
            work_cycles: 4000,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Next segment: non-critical work, then try a lock.
    Work,
    /// Next segment: the critical section of `lock`.
    Critical,
}

/// The lock benchmarks.
#[derive(Clone, Debug)]
pub struct Locks {
    p: LockParams,
    phase: Vec<Phase>,
    /// The lock each thread wants or holds.
    want: Vec<u32>,
    holder: Vec<Option<ThreadId>>,
    waiters: Vec<VecDeque<ThreadId>>,
    rng: SplitMix64,
}

impl Locks {
    /// The benchmark; `seed` picks locks and jitter.
    pub fn new(p: LockParams, seed: u64) -> Locks {
        let locks = p.locks.max(1);
        Locks {
            phase: vec![Phase::Work; p.threads],
            want: vec![0; p.threads],
            holder: vec![None; locks],
            waiters: vec![VecDeque::new(); locks],
            rng: SplitMix64::new(seed),
            p: LockParams { locks, ..p },
        }
    }

    fn lock_base(&self, lock: u32) -> u64 {
        DATA_BASE + u64::from(lock) * (self.p.cs_bytes + 128).next_multiple_of(4096)
    }

    fn private_base(&self, t: ThreadId) -> u64 {
        DATA_BASE + (1 << 30) + u64::from(t) * self.p.private_bytes.next_multiple_of(4096)
    }
}

impl Workload for Locks {
    fn name(&self) -> String {
        if self.p.locks == 1 {
            format!("lock-counter ({} threads)", self.p.threads)
        } else {
            format!(
                "lock-multi ({} threads, {} locks)",
                self.p.threads, self.p.locks
            )
        }
    }

    fn threads(&self) -> usize {
        self.p.threads
    }

    fn initial(&mut self) -> Vec<ThreadId> {
        (0..self.p.threads as u32).collect()
    }

    fn start(&mut self, t: ThreadId, seg: &mut Segment) {
        match self.phase[t as usize] {
            Phase::Work => {
                seg.refs.push(Ref {
                    start: self.private_base(t),
                    bytes: self.p.private_bytes,
                    write: true,
                    shared: false,
                    home: None,
                });
                seg.compute_cycles = jitter(&mut self.rng, self.p.work_cycles, 20);
            }
            Phase::Critical => {
                let base = self.lock_base(self.want[t as usize]);
                // Lock word and counter, then the protected data.
                seg.refs.push(Ref {
                    start: base,
                    bytes: 128 + self.p.cs_bytes,
                    write: true,
                    shared: true,
                    home: Some(0),
                });
                seg.compute_cycles = 100;
            }
        }
    }

    fn finish(&mut self, t: ThreadId, wake: &mut Vec<ThreadId>) -> (After, u64) {
        let i = t as usize;
        match self.phase[i] {
            Phase::Work => {
                let lock = self.rng.below(self.p.locks as u64) as u32;
                self.want[i] = lock;
                self.phase[i] = Phase::Critical;
                let l = lock as usize;
                if self.holder[l].is_none() {
                    self.holder[l] = Some(t);
                    (After::Continue, 0)
                } else {
                    self.waiters[l].push_back(t);
                    (After::Block, 0)
                }
            }
            Phase::Critical => {
                let l = self.want[i] as usize;
                self.holder[l] = self.waiters[l].pop_front();
                wake.extend(self.holder[l]);
                self.phase[i] = Phase::Work;
                (After::Continue, 1)
            }
        }
    }

    fn finished(&self) -> bool {
        false
    }
}
