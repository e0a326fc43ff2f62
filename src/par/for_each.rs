//! `par::for_each` over a range and `par::for_each_chunk_mut` over a slice's chunks.

use super::iter::{
    IndexedParallelIterator, IntoParallelIterator, ParallelIterator, ParallelSliceMut,
};
use super::schedule::Schedule;
use std::ops::Range;

/// Calls `f(i)` for every `i` in `range`, in parallel on the current runtime's workers (the
/// global runtime's outside any), iterations dealt by `schedule`.
///
/// Returns when every iteration has run. `f` may block (a
/// [`footprint::sync::Mutex`](crate::sync::Mutex) parks the green thread, not the worker) and may itself run parallel
/// loops, `join`s and `scope`s. A panic in `f` stops the loop (no new takes start) and is
/// re-raised here once every participant has stopped.
///
/// ```
/// use footprint::par::{self, Schedule};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let sum = AtomicU64::new(0);
/// rt.block_on(|| par::for_each(0..100, Schedule::Dynamic(10), |i| {
///     sum.fetch_add(i as u64, Ordering::Relaxed);
/// }));
/// assert_eq!(sum.into_inner(), 4950);
/// # Ok::<(), footprint::Error>(())
/// ```
///
/// # Panics
/// With `Schedule::Dynamic(0)` or `Schedule::Guided(0)` (at the call, before any iteration).
#[track_caller]
pub fn for_each<F>(range: Range<usize>, schedule: Schedule, f: F)
where
    F: Fn(usize) + Sync + Send,
{
    range.into_par_iter().with_schedule(schedule).for_each(f)
}

/// Calls `f(index, chunk)` for every chunk of `chunk_len` elements of `data` (the last one may
/// be shorter), in parallel; the schedule deals chunks (`Dynamic(2)` hands out two chunks at a
/// time; `Affinity` remembers each chunk's worker).
///
/// Otherwise as [`for_each`].
///
/// ```
/// use footprint::par::{self, Schedule};
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let mut v = vec![0u32; 10];
/// rt.block_on(|| par::for_each_chunk_mut(&mut v, 4, Schedule::Static, |i, c| c.fill(i as u32)));
/// assert_eq!(v, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]);
/// # Ok::<(), footprint::Error>(())
/// ```
///
/// # Panics
/// With `chunk_len == 0`, `Schedule::Dynamic(0)` or `Schedule::Guided(0)` (at the call).
#[track_caller]
pub fn for_each_chunk_mut<T, F>(data: &mut [T], chunk_len: usize, schedule: Schedule, f: F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync + Send,
{
    data.par_chunks_mut(chunk_len)
        .enumerate()
        .with_schedule(schedule)
        .for_each(|(i, c)| {
            // The loop knows what each chunk touches: its slice (for bandwidth control where
            // no counter measures traffic).
            footprint_runtime::bandwidth::record_traffic(std::mem::size_of_val(c) as u64);
            f(i, c)
        })
}
