//! Parallel loops for HPC codes: OpenMP's schedules, TBB's affinity replay, rayon's iterator
//! shapes, all on footprint's green threads.
//!
//! - [`for_each`], [`for_each_chunk_mut`] and [`map_reduce`] take a [`Schedule`]:
//!   `Static`, `Dynamic(c)`, `Guided(c)` (as OpenMP defines them) or `Affinity(handle)`, which
//!   remembers which worker ran each chunk and sends it there first next time (TBB's
//!   `affinity_partitioner`), so an iterative solver's sweeps find their data in cache.
//! - [`prelude`] gives rayon's parallel iterators ([`ParallelIterator`](iter::ParallelIterator),
//!   [`IndexedParallelIterator`](iter::IndexedParallelIterator), `par_iter()`, `par_iter_mut()`,
//!   `into_par_iter()` on slices, `Vec`s and integer ranges, `par_chunks*`, `par_windows`,
//!   `par_sort*`, `collect` into `Vec`/`String`/maps/sets, `par_extend`), each consumer dealing
//!   its items by the iterator's schedule (`.with_schedule(s)`).
//!
//! A loop runs on the current runtime's workers (the global runtime's outside any): the caller
//! takes part, and one participant per further worker is offered to idle workers through
//! `join` (one that nobody took runs inline at the end and finds nothing left). Participants run
//! on green threads, so a loop nests inside green threads, `scope`s and other loops, and its body
//! may block on footprint's locks (parking the green thread, never the worker). A panic in the
//! body stops the loop and reaches the caller once every participant has stopped.
//!
//! ```
//! use footprint::par::{self, prelude::*, Affinity, Schedule};
//! let rt = footprint::Runtime::builder().workers(2).build()?;
//! let mut u = vec![0.0f64; 1 << 14];
//! let mut next = u.clone();
//! u[0] = 1.0;
//! let sweeps = Affinity::new();
//! rt.block_on(|| {
//!     for _ in 0..10 {
//!         // One 1-D Jacobi sweep, each chunk of 1024 points on the worker that had it before.
//!         let src = &u;
//!         par::for_each_chunk_mut(&mut next, 1024, Schedule::Affinity(sweeps.clone()), |c, out| {
//!             for (k, x) in out.iter_mut().enumerate() {
//!                 let i = c * 1024 + k;
//!                 let left = if i == 0 { 1.0 } else { src[i - 1] };
//!                 let right = src.get(i + 1).copied().unwrap_or(0.0);
//!                 *x = 0.5 * (left + right);
//!             }
//!         });
//!         std::mem::swap(&mut u, &mut next);
//!     }
//!     let total: f64 = u.par_iter().sum();
//!     assert!(total > 0.0);
//! });
//! assert_eq!(sweeps.stats().runs, 10);
//! # Ok::<(), footprint::Error>(())
//! ```

mod affinity;
mod deal;
mod ends;
mod engine;
mod fold;
mod for_each;
pub mod iter;
mod map_reduce;
mod schedule;
mod sort;

pub use affinity::{Affinity, AffinityStats};
pub use for_each::{for_each, for_each_chunk_mut};
pub use map_reduce::map_reduce;
pub use schedule::Schedule;

/// `use footprint::par::prelude::*;`: what `use rayon::prelude::*;` gives (the parallel
/// iterator traits, `par_iter`/`par_iter_mut`/`into_par_iter`, the slice extensions with
/// `par_chunks*`, `par_windows` and `par_sort*`, `collect` and `par_extend`), plus [`ParIter`](iter::ParIter),
/// [`Schedule`] and [`Affinity`].
pub mod prelude {
    pub use super::iter::{
        FromParallelIterator, IndexedParallelIterator, IndexedProducer, IntoParallelIterator,
        IntoParallelRefIterator, IntoParallelRefMutIterator, ParIter, ParallelExtend,
        ParallelIterator, ParallelSlice, ParallelSliceMut, Producer,
    };
    pub use super::{Affinity, Schedule};
}
