//! Rayon's iterator shapes on footprint's loops: [`ParallelIterator`],
//! [`IndexedParallelIterator`], their sources (`par_iter`, `par_iter_mut`, `into_par_iter` on
//! slices, `Vec`s and integer ranges, [`ParallelSlice`], [`ParallelSliceMut`]) and sinks
//! ([`FromParallelIterator`], [`ParallelExtend`]).
//!
//! A [`ParIter`] is a producer (a length, and the items of any stretch of positions) and a
//! [`Schedule`]; a consumer deals the positions to the workers by the schedule and runs each
//! stretch sequentially. Consumers that build a value (`sum`, `reduce`, `collect`, `min`, ...)
//! combine the stretches' results in position order, so they give what the sequential iterator
//! gives whenever the combining operation is associative.

mod adaptors;
mod collect;
mod indexed;
mod parallel;
mod producer;
mod range;
mod search;
mod slice;
mod sources;
mod vec;

pub use adaptors::{
    Chunks, ChunksStretch, CloneOf, Enumerate, Filter, FilterMap, FlatMap, FlatMapStretch,
    InitWith, MakeState, Map, MapInit, MapInitStretch, Rev, RevStretch, Skip, StepBy, Take, Zip,
};
pub use collect::{FromParallelIterator, ParallelExtend};
pub use indexed::IndexedParallelIterator;
pub use parallel::ParallelIterator;
pub use producer::{
    ChunksMutProducer, ChunksProducer, IndexedProducer, Producer, SliceMutProducer, SliceProducer,
    WindowsProducer,
};
pub use range::{RangeInclusiveProducer, RangeProducer};
pub use slice::{ParallelSlice, ParallelSliceMut};
pub use sources::{IntoParallelIterator, IntoParallelRefIterator, IntoParallelRefMutIterator};
pub use vec::{VecProducer, VecStretch};

use super::engine::{drive, Sink};
use super::fold::fold_in_order;
use super::schedule::Schedule;
use std::ops::Range;

/// A parallel iterator: a producer of items and the [`Schedule`] that deals them to workers.
/// Its methods are those of [`ParallelIterator`] and, when every position is one item,
/// [`IndexedParallelIterator`].
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

/// Runs a stretch of positions through the consumer's closure with the participant's state.
struct ForEachWith<'a, P, T, F> {
    producer: &'a P,
    state: T,
    f: &'a F,
}

impl<P: Producer, T, F: Fn(&mut T, P::Item)> Sink for ForEachWith<'_, P, T, F> {
    fn consume(&mut self, items: Range<usize>) {
        // SAFETY: the engine hands every position of 0..len to exactly one consume, once.
        for x in unsafe { self.producer.stretch(items) } {
            (self.f)(&mut self.state, x)
        }
    }
}

impl<P: Producer> ParIter<P> {
    pub(crate) fn new(producer: P) -> ParIter<P> {
        ParIter {
            producer,
            schedule: Schedule::default(),
        }
    }

    /// The same schedule over another producer (for adaptors).
    pub(crate) fn with_producer<Q: Producer>(self, f: impl FnOnce(P) -> Q) -> ParIter<Q> {
        ParIter {
            producer: f(self.producer),
            schedule: self.schedule,
        }
    }

    pub(crate) fn producer(self) -> P {
        self.producer
    }

    /// Runs `f` on every item.
    #[track_caller]
    pub(crate) fn run_for_each<F>(self, f: F)
    where
        F: Fn(P::Item) + Sync,
    {
        let producer = &self.producer;
        drive(
            producer.len(),
            &self.schedule,
            || ForEach { producer, f: &f },
            |_| {},
        );
    }

    /// Runs `f` on every item with a state per participant, made by `init`.
    #[track_caller]
    pub(crate) fn run_for_each_with<T, I, F>(self, init: I, f: F)
    where
        I: Fn() -> T + Sync,
        F: Fn(&mut T, P::Item) + Sync,
    {
        let producer = &self.producer;
        drive(
            producer.len(),
            &self.schedule,
            || ForEachWith {
                producer,
                state: init(),
                f: &f,
            },
            |_| {},
        );
    }

    /// Folds every stretch with `fold` and combines neighbouring results with `combine`, in
    /// position order. `None` when there are no positions.
    #[track_caller]
    pub(crate) fn fold_stretches<A, F, C>(self, fold: F, combine: C) -> Option<A>
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

    /// One accumulator per run of consecutive stretches a participant took, in order.
    #[track_caller]
    pub(crate) fn fold_runs<A, S, F>(self, start: S, feed: F) -> Vec<A>
    where
        A: Send,
        S: Fn() -> A + Sync,
        F: Fn(A, P::Iter<'_>) -> A + Sync,
    {
        let producer = &self.producer;
        super::fold::fold_runs(
            producer.len(),
            &self.schedule,
            start,
            // SAFETY: fold_runs passes every position of 0..len to `feed` exactly once.
            |acc, r| feed(acc, unsafe { producer.stretch(r) }),
        )
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
