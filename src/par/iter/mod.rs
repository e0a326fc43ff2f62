//! Rayon's iterator shapes on footprint's loops: `par_iter`, `par_iter_mut`, `par_chunks_mut`,
//! `into_par_iter`, and the common adaptors and consumers.
//!
//! A [`ParIter`] is an indexed producer (a length, and the items of any stretch of positions)
//! and a [`Schedule`]; a consumer deals the positions to the workers by the schedule and runs
//! each stretch sequentially. Consumers that build a value (`sum`, `reduce`, `collect`,
//! `min_by_key`, `max_by_key`) combine the stretches' results in position order.

mod adaptors;
mod producer;
mod sources;

pub use adaptors::{Enumerate, Filter, Map, Zip};
pub use producer::{
    ChunksMutProducer, IndexedProducer, Producer, RangeProducer, SliceMutProducer, SliceProducer,
};
pub use sources::{
    FromParallelIterator, IntoParallelIterator, IntoParallelRefIterator,
    IntoParallelRefMutIterator, ParallelSliceMut,
};

use super::engine::{drive, Sink};
use super::fold::fold_in_order;
use super::schedule::Schedule;
use std::ops::Range;

/// A parallel iterator: a producer of items and the [`Schedule`] that deals them to workers.
///
/// ```
/// use footprint::par::prelude::*;
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let v: Vec<u64> = (0..1000).collect();
/// let (sum, evens) = rt.block_on(|| {
///     let sum: u64 = v.par_iter().map(|x| x * x).sum();
///     let evens: Vec<u64> = v.par_iter().filter(|x| **x % 2 == 0).copied().collect();
///     (sum, evens)
/// });
/// assert_eq!(sum, (0..1000u64).map(|x| x * x).sum());
/// assert_eq!(evens, (0..1000).step_by(2).collect::<Vec<u64>>());
/// # Ok::<(), footprint::Error>(())
/// ```
#[must_use = "a parallel iterator does nothing until consumed"]
pub struct ParIter<P> {
    producer: P,
    schedule: Schedule,
}

/// Runs a stretch of positions through the consumer's closure.
struct ForEach<'a, P, F> {
    producer: &'a P,
    f: &'a F,
}

impl<P: Producer, F: Fn(P::Item)> Sink for ForEach<'_, P, F> {
    fn consume(&mut self, items: Range<usize>) {
        // SAFETY: the engine hands every position of 0..len to exactly one consume, once.
        unsafe { self.producer.stretch(items) }.for_each(self.f)
    }
}

impl<P: Producer> ParIter<P> {
    pub(crate) fn new(producer: P) -> ParIter<P> {
        ParIter {
            producer,
            schedule: Schedule::default(),
        }
    }

    /// Deals the items by `schedule` (default: [`Schedule::default`]).
    pub fn with_schedule(mut self, schedule: Schedule) -> ParIter<P> {
        self.schedule = schedule;
        self
    }

    /// Number of positions (before any `filter`).
    pub fn len(&self) -> usize {
        self.producer.len()
    }

    /// Whether there are no positions.
    pub fn is_empty(&self) -> bool {
        self.producer.is_empty()
    }

    /// Each item through `f`.
    pub fn map<F, R>(self, f: F) -> ParIter<Map<P, F>>
    where
        F: Fn(P::Item) -> R + Sync + Send,
    {
        ParIter {
            producer: Map {
                base: self.producer,
                f,
            },
            schedule: self.schedule,
        }
    }

    /// The items for which `pred` holds (no longer indexed: no `enumerate` or `zip` after it).
    pub fn filter<F>(self, pred: F) -> ParIter<Filter<P, F>>
    where
        F: Fn(&P::Item) -> bool + Sync + Send,
    {
        ParIter {
            producer: Filter {
                base: self.producer,
                pred,
            },
            schedule: self.schedule,
        }
    }

    /// Copies of referenced items (`.map(|x| *x)`).
    #[allow(clippy::type_complexity)]
    pub fn copied<'a, T>(self) -> ParIter<Map<P, fn(&'a T) -> T>>
    where
        P: Producer<Item = &'a T>,
        T: Copy + 'a,
    {
        self.map(|x: &'a T| *x)
    }

    /// Calls `f` on every item, in parallel. Returns once every item is done; a panic in `f`
    /// stops the loop and is re-raised here after every participant has stopped.
    #[track_caller]
    pub fn for_each<F>(self, f: F)
    where
        F: Fn(P::Item) + Sync + Send,
    {
        let producer = &self.producer;
        drive(
            producer.len(),
            &self.schedule,
            || ForEach { producer, f: &f },
            |_| {},
        );
    }

    /// Folds every stretch with `fold` and combines neighbouring results with `combine`, in
    /// position order. `None` when there are no positions.
    #[track_caller]
    fn fold_stretches<A, F, C>(self, fold: F, combine: C) -> Option<A>
    where
        A: Send,
        F: Fn(P::Iter<'_>) -> A + Sync,
        C: Fn(A, A) -> A + Sync,
    {
        let producer = &self.producer;
        fold_in_order(
            producer.len(),
            &self.schedule,
            // SAFETY: fold_in_order passes every position of 0..len to `fold` exactly once.
            |r| fold(unsafe { producer.stretch(r) }),
            combine,
        )
    }

    /// The sum of the items.
    #[track_caller]
    pub fn sum<S>(self) -> S
    where
        S: std::iter::Sum<P::Item> + std::iter::Sum<S> + Send,
    {
        self.fold_stretches(|it| it.sum::<S>(), |a, b| [a, b].into_iter().sum())
            .unwrap_or_else(|| std::iter::empty::<S>().sum())
    }

    /// The items reduced with `op` (associative), starting each stretch from `identity()`;
    /// `identity()` when there are none.
    #[track_caller]
    pub fn reduce<I, O>(self, identity: I, op: O) -> P::Item
    where
        P::Item: Send,
        I: Fn() -> P::Item + Sync + Send,
        O: Fn(P::Item, P::Item) -> P::Item + Sync + Send,
    {
        self.fold_stretches(|it| it.fold(identity(), &op), &op)
            .unwrap_or_else(identity)
    }

    /// The item with the least key (the first of equal ones), `None` when there are none.
    #[track_caller]
    pub fn min_by_key<K, F>(self, key: F) -> Option<P::Item>
    where
        P::Item: Send,
        K: Ord,
        F: Fn(&P::Item) -> K + Sync + Send,
    {
        // A later item wins only with a smaller key.
        self.best_by_key(key, |later, earlier| later < earlier)
    }

    /// The item with the greatest key (the last of equal ones), `None` when there are none.
    #[track_caller]
    pub fn max_by_key<K, F>(self, key: F) -> Option<P::Item>
    where
        P::Item: Send,
        K: Ord,
        F: Fn(&P::Item) -> K + Sync + Send,
    {
        // A later item wins with an equal or greater key.
        self.best_by_key(key, |later, earlier| later >= earlier)
    }

    /// The item kept by scanning in order and replacing the kept one whenever
    /// `later_wins(key(item), key(kept))`.
    #[track_caller]
    fn best_by_key<K, F>(self, key: F, later_wins: fn(&K, &K) -> bool) -> Option<P::Item>
    where
        P::Item: Send,
        F: Fn(&P::Item) -> K + Sync + Send,
    {
        let pick = |a: Option<P::Item>, b: Option<P::Item>| match (a, b) {
            (Some(a), Some(b)) => Some(if later_wins(&key(&b), &key(&a)) { b } else { a }),
            (a, b) => a.or(b),
        };
        self.fold_stretches(|it| it.map(Some).fold(None, &pick), pick)
            .flatten()
    }

    /// The items gathered into a collection, in order (`Vec<_>`).
    #[track_caller]
    pub fn collect<C>(self) -> C
    where
        C: FromParallelIterator<P::Item>,
    {
        C::from_par_iter(self)
    }

    /// The items in order, in a `Vec`.
    #[track_caller]
    pub(crate) fn collect_vec(self) -> Vec<P::Item>
    where
        P::Item: Send,
    {
        self.fold_stretches(
            |it| it.collect::<Vec<_>>(),
            |mut a, mut b| {
                a.append(&mut b);
                a
            },
        )
        .unwrap_or_default()
    }
}

impl<P: IndexedProducer> ParIter<P> {
    /// Each item with its position.
    pub fn enumerate(self) -> ParIter<Enumerate<P>> {
        ParIter {
            producer: Enumerate {
                base: self.producer,
            },
            schedule: self.schedule,
        }
    }

    /// Pairs of this iterator's and `other`'s items by position, as many as the shorter has.
    /// The schedule is this iterator's.
    pub fn zip<Z>(self, other: Z) -> ParIter<Zip<P, Z::Producer>>
    where
        Z: IntoParallelIterator,
        Z::Producer: IndexedProducer,
    {
        ParIter {
            producer: Zip {
                a: self.producer,
                b: other.into_par_iter().producer,
            },
            schedule: self.schedule,
        }
    }
}
