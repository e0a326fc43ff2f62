//! How a loop's iterations are dealt to the workers: OpenMP's `static`, `dynamic` and `guided`,
//! and TBB's affinity replay.

use super::affinity::Affinity;

/// How a parallel loop deals its iterations (or, for chunked loops, its chunks) to the workers.
///
/// - `Static`: contiguous blocks, one per worker, block `w` to worker `w` every time (OpenMP's
///   `schedule(static)`). A block whose worker is busy elsewhere is taken whole by another worker
///   once that one has finished its own, so the loop never waits on a missing worker.
/// - `Dynamic(c)`: idle workers take the next `c` iterations in turn (OpenMP's
///   `schedule(dynamic, c)`). Balances uneven iterations; the mapping changes every run.
/// - `Guided(c)`: like `Dynamic`, but each take is the remaining iterations divided by the number
///   of workers, never less than `c` (OpenMP's `schedule(guided, c)`).
/// - `Affinity(handle)`: the range is cut into a fixed number of chunks (up to 16 per worker, or
///   the loop's own chunks when there are fewer), first dealt out in contiguous blocks as
///   `Static` does; the handle remembers which worker ran each chunk and, the next time the same
///   loop runs with it, deals each chunk to that worker first. A worker that runs out takes
///   chunks from the back of another's list (TBB's `affinity_partitioner`).
///
/// `Dynamic(0)` and `Guided(0)` panic at the call with a message saying what to pass.
///
/// The default is `Affinity` with a fresh handle: `Static`'s contiguous blocks, with chunks
/// stolen only to balance (the benches in the README chose it).
///
/// ```
/// use footprint::par::{self, Affinity, Schedule};
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let hits = AtomicUsize::new(0);
/// let memory = Affinity::new();
/// for schedule in [
///     Schedule::Static,
///     Schedule::Dynamic(8),
///     Schedule::Guided(4),
///     Schedule::Affinity(memory.clone()),
///     Schedule::default(),
/// ] {
///     rt.block_on(|| par::for_each(0..100, schedule, |_| {
///         hits.fetch_add(1, Ordering::Relaxed);
///     }));
/// }
/// assert_eq!(hits.load(Ordering::Relaxed), 500);
/// assert_eq!(memory.stats().chunks_run, 32); // 100 iterations in 16 chunks per worker
/// # Ok::<(), footprint::Error>(())
/// ```
#[derive(Clone, Debug)]
pub enum Schedule {
    /// One contiguous block per worker, the same worker every time.
    Static,
    /// Takes of this many iterations, in turn, by idle workers (at least 1).
    Dynamic(usize),
    /// Takes of the remaining iterations over the worker count, at least this many (at least 1).
    Guided(usize),
    /// Chunks replayed on the worker that ran them last time (see [`Affinity`]).
    Affinity(Affinity),
}

impl Default for Schedule {
    fn default() -> Schedule {
        Schedule::Affinity(Affinity::new())
    }
}

impl Schedule {
    /// Panics, at the caller, on a schedule that cannot deal anything.
    #[track_caller]
    pub(crate) fn check(&self) {
        match self {
            Schedule::Dynamic(0) => panic!(
                "footprint::par: Schedule::Dynamic(0) takes no iterations; pass a chunk size of at \
                 least 1 (Dynamic(1) deals iterations one at a time)"
            ),
            Schedule::Guided(0) => panic!(
                "footprint::par: Schedule::Guided(0) has no minimum take; pass a minimum chunk \
                 size of at least 1 (Guided(1) is OpenMP's default)"
            ),
            _ => {}
        }
    }
}
