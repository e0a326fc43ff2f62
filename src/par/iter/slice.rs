//! Rayon's slice extensions: [`ParallelSlice`] (`par_chunks`, `par_chunks_exact`,
//! `par_windows`) and [`ParallelSliceMut`] (`par_chunks_mut`, `par_chunks_exact_mut`, the
//! `par_sort*` family).

use super::producer::{ChunksMutProducer, ChunksProducer, RawSliceMut, WindowsProducer};
use super::ParIter;
use crate::par::sort;
use std::cmp::Ordering;

#[track_caller]
fn check_chunk_len(chunk_len: usize) {
    assert!(
        chunk_len != 0,
        "footprint::par: a chunk length of 0 makes no chunks; pass a chunk length of at least 1"
    );
}

/// Parallel iterators over parts of a shared slice.
///
/// ```
/// use footprint::par::prelude::*;
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let v: Vec<u32> = (1..=7).collect();
/// let (sums, rising) = rt.block_on(|| {
///     let sums: Vec<u32> = v.par_chunks(3).map(|c| c.iter().sum()).collect();
///     let rising = v.par_windows(2).all(|w| w[0] < w[1]);
///     (sums, rising)
/// });
/// assert_eq!(sums, [6, 15, 7]);
/// assert!(rising);
/// # Ok::<(), footprint::Error>(())
/// ```
pub trait ParallelSlice<T: Sync> {
    /// The slice itself.
    fn as_parallel_slice(&self) -> &[T];

    /// Chunks of `chunk_len` elements (the last one shorter).
    ///
    /// # Panics
    /// If `chunk_len` is 0 (at the call, as `chunks(0)` does).
    #[track_caller]
    fn par_chunks(&self, chunk_len: usize) -> ParIter<ChunksProducer<'_, T>> {
        check_chunk_len(chunk_len);
        ParIter::new(ChunksProducer {
            slice: self.as_parallel_slice(),
            chunk_len,
        })
    }

    /// Chunks of exactly `chunk_len` elements (a shorter rest is left out).
    ///
    /// # Panics
    /// If `chunk_len` is 0.
    #[track_caller]
    fn par_chunks_exact(&self, chunk_len: usize) -> ParIter<ChunksProducer<'_, T>> {
        check_chunk_len(chunk_len);
        let s = self.as_parallel_slice();
        ParIter::new(ChunksProducer {
            slice: &s[..s.len() - s.len() % chunk_len],
            chunk_len,
        })
    }

    /// Every window of `window` consecutive elements.
    ///
    /// # Panics
    /// If `window` is 0 (as `windows(0)` does).
    #[track_caller]
    fn par_windows(&self, window: usize) -> ParIter<WindowsProducer<'_, T>> {
        assert!(
            window != 0,
            "footprint::par: a window of 0 elements is empty; pass a window of at least 1"
        );
        ParIter::new(WindowsProducer {
            slice: self.as_parallel_slice(),
            window,
        })
    }
}

impl<T: Sync> ParallelSlice<T> for [T] {
    fn as_parallel_slice(&self) -> &[T] {
        self
    }
}

/// Parallel iterators over parts of a mutable slice, and parallel sorts.
///
/// The sorts split the slice across the current runtime's workers with `join` (on green
/// threads: a comparison may block on footprint's locks), sort the parts with the standard
/// library's sorts and merge them in parallel. All of them use a buffer as large as the slice.
/// `par_sort*` are stable; `par_sort_unstable*` may reorder equal elements. A panicking
/// comparison leaves the slice a permutation of its elements and is re-raised.
///
/// ```
/// use footprint::par::prelude::*;
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let mut v: Vec<u64> = (0..10_000).map(|i| (i * 7919) % 10_007).collect();
/// let mut by_last_digit = v.clone();
/// rt.block_on(|| {
///     v.par_sort();
///     by_last_digit.par_sort_by_key(|x| x % 10);
///     v.par_chunks_mut(100).for_each(|c| c.reverse());
/// });
/// assert_eq!(v[0], 99);
/// assert!(by_last_digit.windows(2).all(|w| w[0] % 10 <= w[1] % 10));
/// # Ok::<(), footprint::Error>(())
/// ```
pub trait ParallelSliceMut<T: Send> {
    /// The slice itself.
    fn as_parallel_slice_mut(&mut self) -> &mut [T];

    /// Chunks of `chunk_len` elements (the last one shorter).
    ///
    /// # Panics
    /// If `chunk_len` is 0 (at the call, as `chunks_mut(0)` does).
    #[track_caller]
    fn par_chunks_mut(&mut self, chunk_len: usize) -> ParIter<ChunksMutProducer<'_, T>> {
        check_chunk_len(chunk_len);
        ParIter::new(ChunksMutProducer {
            raw: RawSliceMut::new(self.as_parallel_slice_mut()),
            chunk_len,
        })
    }

    /// Chunks of exactly `chunk_len` elements (a shorter rest is left out).
    ///
    /// # Panics
    /// If `chunk_len` is 0.
    #[track_caller]
    fn par_chunks_exact_mut(&mut self, chunk_len: usize) -> ParIter<ChunksMutProducer<'_, T>> {
        check_chunk_len(chunk_len);
        let s = self.as_parallel_slice_mut();
        let whole = s.len() - s.len() % chunk_len;
        ParIter::new(ChunksMutProducer {
            raw: RawSliceMut::new(&mut s[..whole]),
            chunk_len,
        })
    }

    /// Sorts the slice, stably.
    #[track_caller]
    fn par_sort(&mut self)
    where
        T: Ord,
    {
        sort::par_merge_sort(self.as_parallel_slice_mut(), &T::cmp, true);
    }

    /// Sorts the slice by `compare`, stably.
    #[track_caller]
    fn par_sort_by<F>(&mut self, compare: F)
    where
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        sort::par_merge_sort(self.as_parallel_slice_mut(), &compare, true);
    }

    /// Sorts the slice by the key `f` gives, stably.
    #[track_caller]
    fn par_sort_by_key<K, F>(&mut self, f: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        sort::par_merge_sort(
            self.as_parallel_slice_mut(),
            &|a: &T, b: &T| f(a).cmp(&f(b)),
            true,
        );
    }

    /// Sorts the slice (equal elements in any order).
    #[track_caller]
    fn par_sort_unstable(&mut self)
    where
        T: Ord,
    {
        sort::par_merge_sort(self.as_parallel_slice_mut(), &T::cmp, false);
    }

    /// Sorts the slice by `compare` (equal elements in any order).
    #[track_caller]
    fn par_sort_unstable_by<F>(&mut self, compare: F)
    where
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        sort::par_merge_sort(self.as_parallel_slice_mut(), &compare, false);
    }

    /// Sorts the slice by the key `f` gives (equal keys in any order).
    #[track_caller]
    fn par_sort_unstable_by_key<K, F>(&mut self, f: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        sort::par_merge_sort(
            self.as_parallel_slice_mut(),
            &|a: &T, b: &T| f(a).cmp(&f(b)),
            false,
        );
    }
}

impl<T: Send> ParallelSliceMut<T> for [T] {
    fn as_parallel_slice_mut(&mut self) -> &mut [T] {
        self
    }
}
