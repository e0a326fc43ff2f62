//! 001's data-fragment (DF) benchmark: `threads` threads, `fragments` data fragments of
//! `fragment_bytes` each; thread `t` works on fragment `t mod fragments` (reads every line
//! once) and yields; threads never sleep. Threads of one fragment that run back to
//! back on one CPU find it in cache.
//!
//! ```
//! use footprint_sim::workload::fragments::{Fragments, FragmentParams};
//! use footprint_sim::workload::{After, Segment, Workload};
//!
//! let mut w = Fragments::new(FragmentParams::default(), 0);
//! let mut seg = Segment::default();
//! w.start(5, &mut seg);
//! assert_eq!(seg.refs.len(), 1);
//! assert_eq!(w.finish(5, &mut Vec::new()), (After::Yield, 1));
//! ```

use super::{jitter, After, Segment, ThreadId, Workload, DATA_BASE};
use crate::memory::Ref;
use crate::rng::SplitMix64;

/// Size of [`Fragments`].
#[derive(Clone, Debug, PartialEq)]
pub struct FragmentParams {
    /// Threads.
    pub threads: usize,
    /// Data fragments.
    pub fragments: usize,
    /// Bytes per fragment.
    pub fragment_bytes: u64,
    /// Computation cycles per line touched.
    pub cycles_per_line: u64,
}

impl Default for FragmentParams {
    fn default() -> Self {
        FragmentParams {
            threads: 512,
            fragments: 32,
            fragment_bytes: 128 << 10,
            cycles_per_line: 8,
        }
    }
}

/// The data-fragment benchmark.
#[derive(Clone, Debug)]
pub struct Fragments {
    p: FragmentParams,
    rng: SplitMix64,
}

impl Fragments {
    /// The benchmark; `seed` sets the run-length jitter.
    pub fn new(p: FragmentParams, seed: u64) -> Fragments {
        Fragments {
            p,
            rng: SplitMix64::new(seed),
        }
    }
}

impl Workload for Fragments {
    fn name(&self) -> String {
        format!(
            "fragments ({} threads, {} DFs x {} KiB)",
            self.p.threads,
            self.p.fragments,
            self.p.fragment_bytes >> 10
        )
    }

    fn threads(&self) -> usize {
        self.p.threads
    }

    fn initial(&mut self) -> Vec<ThreadId> {
        (0..self.p.threads as u32).collect()
    }

    fn start(&mut self, t: ThreadId, seg: &mut Segment) {
        let df = u64::from(t) % self.p.fragments.max(1) as u64;
        // Fragment data is written by its threads on several CPUs; the coherence model would
        // make every line shared. 001 measures capacity misses, so the fragment is read-only
        // here (see the crate README).
        seg.refs.push(Ref {
            start: DATA_BASE + df * self.p.fragment_bytes,
            bytes: self.p.fragment_bytes,
            write: false,
            shared: false,
            home: Some(0),
        });
        let lines = self.p.fragment_bytes / 64;
        seg.compute_cycles = jitter(&mut self.rng, lines * self.p.cycles_per_line, 10);
    }

    fn finish(&mut self, _t: ThreadId, _wake: &mut Vec<ThreadId>) -> (After, u64) {
        (After::Yield, 1)
    }

    fn finished(&self) -> bool {
        false
    }
}
