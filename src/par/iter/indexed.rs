//! [`IndexedParallelIterator`]: what rayon offers when every position is exactly one item.

use super::adaptors::{Chunks, Enumerate, Rev, Skip, StepBy, Take, Zip};
use super::parallel::ParallelIterator;
use super::producer::{IndexedProducer, Producer};
use super::search::Want;
use super::sources::IntoParallelIterator;
use super::ParIter;

/// Rayon's `IndexedParallelIterator`: a parallel iterator whose position `i` is its `i`-th
/// item (none filtered out), so items can be numbered, paired, reversed, stepped over, skipped,
/// taken and grouped.
///
/// ```
/// use footprint::par::prelude::*;
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let v: Vec<u32> = (0..10).collect();
/// let (odd_rev, pos, pairs) = rt.block_on(|| {
///     let odd_rev: Vec<u32> = v.par_iter().copied().skip(1).step_by(2).rev().collect();
///     let pos = v.par_iter().position_first(|&x| x > 6);
///     let pairs: Vec<Vec<u32>> = v.par_iter().copied().take(5).chunks(2).collect();
///     (odd_rev, pos, pairs)
/// });
/// assert_eq!(odd_rev, [9, 7, 5, 3, 1]);
/// assert_eq!(pos, Some(7));
/// assert_eq!(pairs, [vec![0, 1], vec![2, 3], vec![4]]);
/// # Ok::<(), footprint::Error>(())
/// ```
pub trait IndexedParallelIterator: ParallelIterator {
    /// The producer behind the iterator, indexed.
    type Positions: IndexedProducer<Item = Self::Item>;

    /// The iterator as a [`ParIter`] over an indexed producer.
    fn into_indexed_parts(self) -> ParIter<Self::Positions>;

    /// The number of items.
    fn len(&self) -> usize;

    /// Whether there are no items.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each item with its position.
    fn enumerate(self) -> ParIter<Enumerate<Self::Positions>> {
        self.into_indexed_parts()
            .with_producer(|base| Enumerate { base })
    }

    /// Pairs of this iterator's and `other`'s items by position, as many as the shorter has.
    /// The schedule is this iterator's.
    fn zip<Z>(self, other: Z) -> ParIter<Zip<Self::Positions, Z::Producer>>
    where
        Z: IntoParallelIterator,
        Z::Producer: IndexedProducer,
    {
        let b = other.into_par_iter().producer();
        self.into_indexed_parts().with_producer(|a| Zip { a, b })
    }

    /// The items in reverse order.
    fn rev(self) -> ParIter<Rev<Self::Positions>> {
        self.into_indexed_parts().with_producer(|base| Rev { base })
    }

    /// Every `step`-th item, starting with the first.
    ///
    /// # Panics
    /// If `step` is 0 (as `Iterator::step_by`).
    #[track_caller]
    fn step_by(self, step: usize) -> ParIter<StepBy<Self::Positions>> {
        assert!(
            step != 0,
            "footprint::par: step_by(0) would repeat the first item forever; pass a step of at \
             least 1"
        );
        self.into_indexed_parts()
            .with_producer(|base| StepBy { base, step })
    }

    /// All but the first `n` items (none when there are fewer).
    fn skip(self, n: usize) -> ParIter<Skip<Self::Positions>> {
        self.into_indexed_parts().with_producer(|base| {
            let n = n.min(base.len());
            Skip { base, n }
        })
    }

    /// The first `n` items (all when there are fewer).
    fn take(self, n: usize) -> ParIter<Take<Self::Positions>> {
        self.into_indexed_parts().with_producer(|base| {
            let n = n.min(base.len());
            Take { base, n }
        })
    }

    /// The items in `Vec`s of `n` (the last one shorter).
    ///
    /// # Panics
    /// If `n` is 0.
    #[track_caller]
    fn chunks(self, n: usize) -> ParIter<Chunks<Self::Positions>> {
        assert!(
            n != 0,
            "footprint::par: chunks(0) makes no chunks; pass a chunk length of at least 1"
        );
        self.into_indexed_parts()
            .with_producer(|base| Chunks { base, n })
    }

    /// The position of some item for which `pred` holds, whichever is found first in time.
    #[track_caller]
    fn position_any<F>(self, pred: F) -> Option<usize>
    where
        F: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.enumerate()
            .into_par_iter_parts()
            .search(Want::Any, |(i, x)| pred(x).then_some(i))
    }

    /// The position of the first item for which `pred` holds.
    #[track_caller]
    fn position_first<F>(self, pred: F) -> Option<usize>
    where
        F: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.enumerate()
            .into_par_iter_parts()
            .search(Want::First, |(i, x)| pred(x).then_some(i))
    }
}

impl<P: IndexedProducer> IndexedParallelIterator for ParIter<P> {
    type Positions = P;
    fn into_indexed_parts(self) -> ParIter<P> {
        self
    }
    fn len(&self) -> usize {
        self.producer.len()
    }
}
