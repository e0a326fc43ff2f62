//! Workloads as green-thread programs: each thread runs *segments* (a list of memory
//! references and some computation) and, at the end of each, synchronises: it blocks, keeps
//! running, yields or exits, and may wake others. The simulator calls [`Workload::start`] when a
//! segment begins and [`Workload::finish`] when it ends (in simulated time order), so the
//! synchronisation logic sees events in the order a real machine would.
//!
//! | name | program | after |
//! | --- | --- | --- |
//! | `regular` | 004 Fig. 3.11: 1024 threads sweep a 64 KiB working set, then meet their group at a barrier | [`regular::Regular`] |
//! | `smoother` | 004 Fig. 3.13: active-threads smoother, one thread per grid point, waking neighbours | [`smoother::Smoother`] |
//! | `fragments` | 001's data-fragment benchmark: threads work on one of a few shared fragments and yield | [`fragments::Fragments`] |
//! | `lock-counter`, `lock-multi` | 000's single-counter and multiple-counters-multiple-locks benchmarks | [`locks::Locks`] |
//!
//! ```
//! use footprint_sim::workload::{After, Segment, Workload, WorkloadSpec};
//!
//! let mut w = WorkloadSpec::parse("regular").unwrap().build(1);
//! assert_eq!(w.threads(), 1024);
//! let first = w.initial();
//! let mut seg = Segment::default();
//! w.start(first[0], &mut seg);
//! assert_eq!(seg.refs[0].bytes, 64 << 10);
//! let mut wake = Vec::new();
//! let (after, syncs) = w.finish(first[0], &mut wake);
//! assert_eq!((after, syncs), (After::Block, 1)); // waits for its group
//! ```

pub mod fragments;
pub mod locks;
pub mod regular;
pub mod smoother;

use crate::memory::Ref;
use std::fmt;

/// A green thread's index in its workload.
pub type ThreadId = u32;

/// What a segment references and computes.
#[derive(Clone, Debug, Default)]
pub struct Segment {
    /// Memory references, in order.
    pub refs: Vec<Ref>,
    /// Cycles of computation besides the references.
    pub compute_cycles: u64,
}

impl Segment {
    /// Empties it for the next segment.
    pub fn clear(&mut self) {
        self.refs.clear();
        self.compute_cycles = 0;
    }
}

/// What a thread does when its segment ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Suspends until another thread wakes it.
    Block,
    /// Keeps its CPU and starts its next segment (no context switch).
    Continue,
    /// Stays ready but gives the CPU to others (queued behind every ready thread).
    Yield,
    /// Terminates.
    Exit,
}

/// A workload: a set of green threads and their synchronisation.
pub trait Workload {
    /// Name for reports.
    fn name(&self) -> String;
    /// Number of threads.
    fn threads(&self) -> usize;
    /// The threads ready at the start.
    fn initial(&mut self) -> Vec<ThreadId>;
    /// Thread `t` begins a segment: fill `seg` (cleared by the caller).
    fn start(&mut self, t: ThreadId, seg: &mut Segment);
    /// Thread `t`'s segment ends: push the threads it wakes onto `wake` (only threads that are
    /// blocked) and say what `t` does next and how many synchronisations this was.
    fn finish(&mut self, t: ThreadId, wake: &mut Vec<ThreadId>) -> (After, u64);
    /// True when the workload has nothing left to do (no thread needs to run again); a
    /// simulation that runs out of ready threads before this is a deadlock.
    fn finished(&self) -> bool;
}

/// A workload by name with its size parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadSpec {
    /// See [`regular::Regular`].
    Regular(regular::RegularParams),
    /// See [`smoother::Smoother`].
    Smoother(smoother::SmootherParams),
    /// See [`fragments::Fragments`].
    Fragments(fragments::FragmentParams),
    /// See [`locks::Locks`].
    Locks(locks::LockParams),
}

/// A workload name the simulator does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownWorkload(pub String);

impl fmt::Display for UnknownWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown workload {:?}: use regular, smoother, fragments, lock-counter or lock-multi",
            self.0
        )
    }
}

impl std::error::Error for UnknownWorkload {}

impl WorkloadSpec {
    /// Every name [`WorkloadSpec::parse`] knows.
    pub const NAMES: [&'static str; 5] = [
        "regular",
        "smoother",
        "fragments",
        "lock-counter",
        "lock-multi",
    ];

    /// The default-sized workload of that name.
    pub fn parse(name: &str) -> Result<WorkloadSpec, UnknownWorkload> {
        Ok(match name {
            "regular" => WorkloadSpec::Regular(regular::RegularParams::default()),
            "smoother" => WorkloadSpec::Smoother(smoother::SmootherParams::default()),
            "fragments" => WorkloadSpec::Fragments(fragments::FragmentParams::default()),
            "lock-counter" => WorkloadSpec::Locks(locks::LockParams::default()),
            "lock-multi" => WorkloadSpec::Locks(locks::LockParams {
                locks: 16,
                ..locks::LockParams::default()
            }),
            _ => return Err(UnknownWorkload(name.to_string())),
        })
    }

    /// The workload, seeded.
    pub fn build(&self, seed: u64) -> Box<dyn Workload> {
        match self {
            WorkloadSpec::Regular(p) => Box::new(regular::Regular::new(p.clone(), seed)),
            WorkloadSpec::Smoother(p) => Box::new(smoother::Smoother::new(p.clone(), seed)),
            WorkloadSpec::Fragments(p) => Box::new(fragments::Fragments::new(p.clone(), seed)),
            WorkloadSpec::Locks(p) => Box::new(locks::Locks::new(p.clone(), seed)),
        }
    }
}

/// Base of the simulated address space of workload data (above the first 4 GiB).
pub(crate) const DATA_BASE: u64 = 1 << 32;

/// `nominal` cycles with ±`pct` % seeded jitter.
pub(crate) fn jitter(rng: &mut crate::rng::SplitMix64, nominal: u64, pct: u64) -> u64 {
    if nominal == 0 || pct == 0 {
        return nominal;
    }
    let span = nominal * pct / 100;
    nominal - span + rng.below(2 * span + 1)
}
