//! Where parallel iterators come from: `into_par_iter` on slices, `Vec`s (by reference and by
//! value) and parallel iterators (integer ranges are in `range.rs`); `par_iter` and
//! `par_iter_mut` on anything whose reference is one of those.

use super::producer::{Producer, RawSliceMut, SliceMutProducer, SliceProducer};
use super::vec::VecProducer;
use super::ParIter;

/// Turns a value into a parallel iterator (`(0..n).into_par_iter()`, `vec.into_par_iter()`).
///
/// ```
/// use footprint::par::prelude::*;
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let names = vec![String::from("a"), String::from("bc")];
/// let (lens, wide) = rt.block_on(|| {
///     let lens: Vec<usize> = names.into_par_iter().map(|s| s.len()).collect();
///     let wide: i64 = (-5i64..=5).into_par_iter().map(|x| x * x).sum();
///     (lens, wide)
/// });
/// assert_eq!((lens, wide), (vec![1, 2], 110));
/// # Ok::<(), footprint::Error>(())
/// ```
pub trait IntoParallelIterator {
    /// What the iterator yields.
    type Item;
    /// The producer of the iterator.
    type Producer: Producer<Item = Self::Item>;
    /// The parallel iterator.
    fn into_par_iter(self) -> ParIter<Self::Producer>;
}

impl<P: Producer> IntoParallelIterator for ParIter<P> {
    type Item = P::Item;
    type Producer = P;
    fn into_par_iter(self) -> ParIter<P> {
        self
    }
}

impl<'data, T: Sync> IntoParallelIterator for &'data [T] {
    type Item = &'data T;
    type Producer = SliceProducer<'data, T>;
    fn into_par_iter(self) -> ParIter<Self::Producer> {
        ParIter::new(SliceProducer { slice: self })
    }
}

impl<'data, T: Sync> IntoParallelIterator for &'data Vec<T> {
    type Item = &'data T;
    type Producer = SliceProducer<'data, T>;
    fn into_par_iter(self) -> ParIter<Self::Producer> {
        self.as_slice().into_par_iter()
    }
}

impl<'data, T: Sync, const N: usize> IntoParallelIterator for &'data [T; N] {
    type Item = &'data T;
    type Producer = SliceProducer<'data, T>;
    fn into_par_iter(self) -> ParIter<Self::Producer> {
        self.as_slice().into_par_iter()
    }
}

impl<'data, T: Send> IntoParallelIterator for &'data mut [T] {
    type Item = &'data mut T;
    type Producer = SliceMutProducer<'data, T>;
    fn into_par_iter(self) -> ParIter<Self::Producer> {
        ParIter::new(SliceMutProducer {
            raw: RawSliceMut::new(self),
        })
    }
}

impl<'data, T: Send> IntoParallelIterator for &'data mut Vec<T> {
    type Item = &'data mut T;
    type Producer = SliceMutProducer<'data, T>;
    fn into_par_iter(self) -> ParIter<Self::Producer> {
        self.as_mut_slice().into_par_iter()
    }
}

impl<'data, T: Send, const N: usize> IntoParallelIterator for &'data mut [T; N] {
    type Item = &'data mut T;
    type Producer = SliceMutProducer<'data, T>;
    fn into_par_iter(self) -> ParIter<Self::Producer> {
        self.as_mut_slice().into_par_iter()
    }
}

impl<T: Send> IntoParallelIterator for Vec<T> {
    type Item = T;
    type Producer = VecProducer<T>;
    fn into_par_iter(self) -> ParIter<VecProducer<T>> {
        ParIter::new(VecProducer::new(self))
    }
}

/// `par_iter()`: a parallel iterator over shared references (slices, `Vec`s, arrays, ranges).
pub trait IntoParallelRefIterator<'data> {
    /// What the iterator yields.
    type Item;
    /// The producer of the iterator.
    type Producer: Producer<Item = Self::Item>;
    /// A parallel iterator over `&self`'s items.
    fn par_iter(&'data self) -> ParIter<Self::Producer>;
}

impl<'data, C: ?Sized + 'data> IntoParallelRefIterator<'data> for C
where
    &'data C: IntoParallelIterator,
{
    type Item = <&'data C as IntoParallelIterator>::Item;
    type Producer = <&'data C as IntoParallelIterator>::Producer;
    fn par_iter(&'data self) -> ParIter<Self::Producer> {
        self.into_par_iter()
    }
}

/// `par_iter_mut()`: a parallel iterator over mutable references (slices, `Vec`s, arrays).
pub trait IntoParallelRefMutIterator<'data> {
    /// What the iterator yields.
    type Item;
    /// The producer of the iterator.
    type Producer: Producer<Item = Self::Item>;
    /// A parallel iterator over `&mut self`'s items.
    fn par_iter_mut(&'data mut self) -> ParIter<Self::Producer>;
}

impl<'data, C: ?Sized + 'data> IntoParallelRefMutIterator<'data> for C
where
    &'data mut C: IntoParallelIterator,
{
    type Item = <&'data mut C as IntoParallelIterator>::Item;
    type Producer = <&'data mut C as IntoParallelIterator>::Producer;
    fn par_iter_mut(&'data mut self) -> ParIter<Self::Producer> {
        self.into_par_iter()
    }
}
