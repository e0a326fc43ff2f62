//! Where parallel iterators come from: ranges, slices and `Vec`s; and where they go (`collect`).

use super::producer::{
    ChunksMutProducer, Producer, RangeProducer, RawSliceMut, SliceMutProducer, SliceProducer,
};
use super::ParIter;
use std::ops::Range;

/// Turns a value into a parallel iterator (`(0..n).into_par_iter()`).
pub trait IntoParallelIterator {
    /// The producer of the iterator.
    type Producer: Producer;
    /// The parallel iterator.
    fn into_par_iter(self) -> ParIter<Self::Producer>;
}

impl<P: Producer> IntoParallelIterator for ParIter<P> {
    type Producer = P;
    fn into_par_iter(self) -> ParIter<P> {
        self
    }
}

impl IntoParallelIterator for Range<usize> {
    type Producer = RangeProducer;
    fn into_par_iter(self) -> ParIter<RangeProducer> {
        ParIter::new(RangeProducer { range: self })
    }
}

impl<'data, T: Sync> IntoParallelIterator for &'data [T] {
    type Producer = SliceProducer<'data, T>;
    fn into_par_iter(self) -> ParIter<Self::Producer> {
        ParIter::new(SliceProducer { slice: self })
    }
}

impl<'data, T: Sync> IntoParallelIterator for &'data Vec<T> {
    type Producer = SliceProducer<'data, T>;
    fn into_par_iter(self) -> ParIter<Self::Producer> {
        self.as_slice().into_par_iter()
    }
}

impl<'data, T: Send> IntoParallelIterator for &'data mut [T] {
    type Producer = SliceMutProducer<'data, T>;
    fn into_par_iter(self) -> ParIter<Self::Producer> {
        ParIter::new(SliceMutProducer {
            raw: RawSliceMut::new(self),
        })
    }
}

impl<'data, T: Send> IntoParallelIterator for &'data mut Vec<T> {
    type Producer = SliceMutProducer<'data, T>;
    fn into_par_iter(self) -> ParIter<Self::Producer> {
        self.as_mut_slice().into_par_iter()
    }
}

/// `par_iter()` on slices and `Vec`s: shared references to the elements.
pub trait IntoParallelRefIterator<'data> {
    /// The producer of the iterator.
    type Producer: Producer;
    /// A parallel iterator over `&T`.
    fn par_iter(&'data self) -> ParIter<Self::Producer>;
}

impl<'data, T: Sync + 'data> IntoParallelRefIterator<'data> for [T] {
    type Producer = SliceProducer<'data, T>;
    fn par_iter(&'data self) -> ParIter<Self::Producer> {
        self.into_par_iter()
    }
}

/// `par_iter_mut()` on slices and `Vec`s: mutable references to the elements.
pub trait IntoParallelRefMutIterator<'data> {
    /// The producer of the iterator.
    type Producer: Producer;
    /// A parallel iterator over `&mut T`.
    fn par_iter_mut(&'data mut self) -> ParIter<Self::Producer>;
}

impl<'data, T: Send + 'data> IntoParallelRefMutIterator<'data> for [T] {
    type Producer = SliceMutProducer<'data, T>;
    fn par_iter_mut(&'data mut self) -> ParIter<Self::Producer> {
        self.into_par_iter()
    }
}

/// `par_chunks_mut(n)` on slices and `Vec`s.
pub trait ParallelSliceMut<T: Send> {
    /// A parallel iterator over chunks of `chunk_len` elements (the last one shorter).
    ///
    /// # Panics
    /// If `chunk_len` is 0 (at the call, as `chunks_mut(0)` does).
    fn par_chunks_mut(&mut self, chunk_len: usize) -> ParIter<ChunksMutProducer<'_, T>>;
}

impl<T: Send> ParallelSliceMut<T> for [T] {
    #[track_caller]
    fn par_chunks_mut(&mut self, chunk_len: usize) -> ParIter<ChunksMutProducer<'_, T>> {
        assert!(
            chunk_len != 0,
            "footprint::par: a chunk length of 0 makes no chunks; pass a chunk length of at least 1"
        );
        ParIter::new(ChunksMutProducer {
            raw: RawSliceMut::new(self),
            chunk_len,
        })
    }
}

/// Collections a parallel iterator can be gathered into, in order (`collect`).
pub trait FromParallelIterator<T> {
    /// Gathers the items of `iter`.
    fn from_par_iter<P: Producer<Item = T>>(iter: ParIter<P>) -> Self;
}

impl<T: Send> FromParallelIterator<T> for Vec<T> {
    #[track_caller]
    fn from_par_iter<P: Producer<Item = T>>(iter: ParIter<P>) -> Vec<T> {
        iter.collect_vec()
    }
}
