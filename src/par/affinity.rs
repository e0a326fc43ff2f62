//! TBB's `affinity_partitioner`: a handle that remembers which worker ran each chunk of a loop,
//! so that the next run of the same loop deals each chunk to that worker first.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// A memory of where a loop's chunks ran, for [`Schedule::Affinity`](super::Schedule).
///
/// Keep one handle per loop of an iterative solver and pass a clone of it on every sweep: the
/// first run deals the chunks in contiguous blocks (as `Static` does), later runs deal each chunk
/// to the worker that ran it last time, so its data is still in that worker's cache; a worker
/// that runs out of its own chunks takes chunks from the back of another's list (counted in
/// [`AffinityStats::stolen`]), and the memory follows the chunk.
///
/// The state lives on the handle (an `Arc` inside; clones share it), not in a global. A handle
/// used with a loop of another length, or on a runtime with another worker count, or on another
/// runtime altogether, forgets what it knew and starts again from contiguous blocks (counted in
/// [`AffinityStats::resets`]); it never routes by a stale memory. Two loops running at the same
/// time with one handle are both correct; the memory then holds whichever finished last.
///
/// ```
/// use footprint::par::{self, Affinity, Schedule};
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let mut grid = vec![1.0f64; 1 << 12];
/// let sweeps = Affinity::new();
/// for _ in 0..3 {
///     rt.block_on(|| {
///         par::for_each_chunk_mut(&mut grid, 256, Schedule::Affinity(sweeps.clone()), |_, c| {
///             c.iter_mut().for_each(|x| *x *= 0.5)
///         })
///     });
/// }
/// let s = sweeps.stats();
/// assert_eq!((s.runs, s.chunks_run), (3, 48));
/// // Runs 2 and 3: each chunk either ran where it ran before, or was stolen (and counted).
/// assert_eq!(s.replayed + (s.stolen - s.stolen_first_run), 32);
/// assert!(grid.iter().all(|&x| x == 0.125));
/// # Ok::<(), footprint::Error>(())
/// ```
#[derive(Default)]
pub struct Affinity {
    /// Allocated on first clone or first run, so that a handle nobody else holds (a default
    /// schedule's) costs no allocation.
    state: OnceLock<Arc<Mutex<State>>>,
}

impl Clone for Affinity {
    fn clone(&self) -> Affinity {
        Affinity {
            state: OnceLock::from(self.shared().clone()),
        }
    }
}

impl std::fmt::Debug for Affinity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Affinity")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// What an [`Affinity`] handle's loops did, summed over every run with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AffinityStats {
    /// Loops run with the handle.
    pub runs: u64,
    /// Chunks run, over all those loops.
    pub chunks_run: u64,
    /// Chunks run by another worker than the one whose list they were dealt to.
    pub stolen: u64,
    /// Of those, the ones stolen in a run without memory (a first run or right after a reset).
    pub stolen_first_run: u64,
    /// Chunks that ran on the worker that ran them the time before.
    pub replayed: u64,
    /// Times the memory was dropped because the loop's length, the worker count or the runtime
    /// changed.
    pub resets: u64,
}

#[derive(Default)]
struct State {
    memory: Option<Memory>,
    stats: AffinityStats,
}

/// Where each chunk of one loop shape ran last time.
struct Memory {
    key: LoopKey,
    /// The worker that ran each chunk.
    worker_of: Vec<u32>,
}

/// What must match for a memory to be replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LoopKey {
    pub(crate) runtime: u64,
    pub(crate) workers: usize,
    pub(crate) items: usize,
    pub(crate) chunks: usize,
}

/// What one run of a loop did, to be added to its handle.
pub(crate) struct RunRecord {
    pub(crate) worker_of: Vec<u32>,
    pub(crate) stolen: u64,
    pub(crate) replayed: bool,
}

impl Affinity {
    /// A handle with no memory yet.
    pub fn new() -> Affinity {
        Affinity::default()
    }

    /// What the loops run with this handle (and its clones) did so far.
    pub fn stats(&self) -> AffinityStats {
        self.lock().stats
    }

    /// The worker that ran each chunk in the last run, or `None` before the first run (and
    /// after a run that panicked with no earlier memory).
    pub fn remembered(&self) -> Option<Vec<usize>> {
        let s = self.lock();
        s.memory
            .as_ref()
            .map(|m| m.worker_of.iter().map(|&w| w as usize).collect())
    }

    fn shared(&self) -> &Arc<Mutex<State>> {
        self.state.get_or_init(Arc::default)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent after any panic (written whole under the lock).
        self.shared().lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The worker each chunk should go to first in a run of shape `key`: the remembered one,
    /// or `None` (deal contiguous blocks) when there is no memory for this shape. A memory of
    /// another shape is dropped here (a reset).
    pub(crate) fn plan(&self, key: LoopKey) -> Option<Vec<u32>> {
        let mut s = self.lock();
        match &s.memory {
            Some(m) if m.key == key => Some(m.worker_of.clone()),
            Some(_) => {
                s.memory = None;
                s.stats.resets += 1;
                let mut reset = footprint_runtime::LoopStats::default();
                reset.resets = 1;
                footprint_runtime::record_affinity_loop(reset);
                None
            }
            None => None,
        }
    }

    /// Adds a finished run of shape `key`.
    pub(crate) fn commit(&self, key: LoopKey, run: RunRecord) {
        let mut s = self.lock();
        let chunks = run.worker_of.len() as u64;
        // This run's figures, added to the handle's and to the runtime's (`Runtime::stats`).
        let mut add = footprint_runtime::LoopStats::default();
        add.affinity_runs = 1;
        add.chunks_run = chunks;
        add.stolen = run.stolen;
        if run.replayed {
            add.replayed = chunks - run.stolen;
        } else {
            add.stolen_first_run = run.stolen;
        }
        s.stats.runs += 1;
        s.stats.chunks_run += chunks;
        s.stats.stolen += run.stolen;
        s.stats.replayed += add.replayed;
        s.stats.stolen_first_run += add.stolen_first_run;
        footprint_runtime::record_affinity_loop(add);
        s.memory = Some(Memory {
            key,
            worker_of: run.worker_of,
        });
    }

    /// Whether nobody but the running loop can see this handle (a default schedule's fresh
    /// handle): its memory need not be written.
    pub(crate) fn is_private(&self) -> bool {
        self.state.get().is_none_or(|s| Arc::strong_count(s) == 1)
    }
}
