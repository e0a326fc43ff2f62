//! [`ParallelIterator`]: rayon's adaptors and consumers for every parallel iterator.

use super::adaptors::{CloneOf, Filter, FilterMap, FlatMap, InitWith, Map, MapInit};
use super::collect::FromParallelIterator;
use super::producer::Producer;
use super::search::Want;
use super::sources::IntoParallelIterator;
use super::vec::VecProducer;
use super::ParIter;
use crate::par::schedule::Schedule;
use std::cmp::Ordering;
use std::iter::{Product, Sum};
use std::sync::Mutex;

/// Rayon's `ParallelIterator` on footprint's loops: every consumer deals the items to the
/// current runtime's workers by the iterator's [`Schedule`] (set with
/// [`with_schedule`](ParallelIterator::with_schedule)), runs on green threads, and may block
/// on footprint's locks (parking the green thread, never the worker). A panic in a closure stops
/// the loop and is re-raised by the consumer once every participant has stopped.
///
/// Results follow the sequential iterator: `collect`, `fold`, `find_first`, `min`/`max` and
/// friends keep item order (`reduce` and `sum` need only associativity); `find_any` and `any`
/// stop at whichever hit comes first in time.
///
/// ```
/// use footprint::par::prelude::*;
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let words = ["alpha", "beta", "gamma", "delta"];
/// let (n, first_long, total) = rt.block_on(|| {
///     let n = words.par_iter().filter(|w| w.contains('l')).count();
///     let first_long = words.par_iter().find_first(|w| w.len() > 4).copied();
///     let total: usize = words.par_iter().map(|w| w.len()).sum();
///     (n, first_long, total)
/// });
/// assert_eq!((n, first_long, total), (2, Some("alpha"), 19));
/// # Ok::<(), footprint::Error>(())
/// ```
pub trait ParallelIterator: Sized {
    /// What the iterator yields.
    type Item;
    /// The producer behind the iterator.
    type Producer: Producer<Item = Self::Item>;

    /// The iterator as a [`ParIter`] (the one implementation; the adaptors are written on it).
    fn into_par_iter_parts(self) -> ParIter<Self::Producer>;

    /// Deals the items by `schedule` (default: [`Schedule::default`]).
    fn with_schedule(self, schedule: Schedule) -> ParIter<Self::Producer> {
        let mut it = self.into_par_iter_parts();
        it.schedule = schedule;
        it
    }

    /// Each item through `f`.
    fn map<F, R>(self, f: F) -> ParIter<Map<Self::Producer, F>>
    where
        F: Fn(Self::Item) -> R + Sync + Send,
    {
        self.into_par_iter_parts()
            .with_producer(|base| Map { base, f })
    }

    /// Each item through `f(&mut state, item)`, with a state made by `init()` for each stretch
    /// of items (rayon: for each split), e.g. a random number generator or a scratch buffer.
    ///
    /// ```
    /// use footprint::par::prelude::*;
    /// let rt = footprint::Runtime::builder().workers(2).build()?;
    /// let squares: Vec<u64> = rt.block_on(|| {
    ///     (0..1000u64)
    ///         .into_par_iter()
    ///         .map_init(Vec::new, |scratch: &mut Vec<u64>, x| {
    ///             scratch.clear();
    ///             scratch.push(x * x);
    ///             scratch[0]
    ///         })
    ///         .collect()
    /// });
    /// assert_eq!(squares[999], 998_001);
    /// # Ok::<(), footprint::Error>(())
    /// ```
    fn map_init<I, T, F, R>(self, init: I, f: F) -> ParIter<MapInit<Self::Producer, InitWith<I>, F>>
    where
        I: Fn() -> T + Sync + Send,
        F: Fn(&mut T, Self::Item) -> R + Sync + Send,
    {
        self.into_par_iter_parts().with_producer(|base| MapInit {
            base,
            make: InitWith(init),
            f,
        })
    }

    /// Each item through `f(&mut state, item)`, with a clone of `value` as the state of each
    /// stretch of items.
    fn map_with<T, F, R>(self, value: T, f: F) -> ParIter<MapInit<Self::Producer, CloneOf<T>, F>>
    where
        T: Clone + Send,
        F: Fn(&mut T, Self::Item) -> R + Sync + Send,
    {
        self.into_par_iter_parts().with_producer(|base| MapInit {
            base,
            make: CloneOf(Mutex::new(value)),
            f,
        })
    }

    /// The items for which `pred` holds (no longer indexed).
    fn filter<F>(self, pred: F) -> ParIter<Filter<Self::Producer, F>>
    where
        F: Fn(&Self::Item) -> bool + Sync + Send,
    {
        self.into_par_iter_parts()
            .with_producer(|base| Filter { base, pred })
    }

    /// The `Some` results of `f` (no longer indexed).
    fn filter_map<F, R>(self, f: F) -> ParIter<FilterMap<Self::Producer, F>>
    where
        F: Fn(Self::Item) -> Option<R> + Sync + Send,
    {
        self.into_par_iter_parts()
            .with_producer(|base| FilterMap { base, f })
    }

    /// The items of the parallel iterators `f` makes of each item, in order (the inner
    /// iterator runs inside the stretch of its outer item; no longer indexed).
    #[allow(clippy::type_complexity)]
    fn flat_map<F, PI>(
        self,
        f: F,
    ) -> ParIter<FlatMap<Self::Producer, F, std::vec::IntoIter<PI::Item>>>
    where
        F: Fn(Self::Item) -> PI + Sync + Send,
        PI: IntoParallelIterator,
    {
        fn expand<T, F: Fn(T) -> PI, PI: IntoParallelIterator>(
            f: &F,
            x: T,
        ) -> std::vec::IntoIter<PI::Item> {
            f(x).into_par_iter().producer().into_seq()
        }
        self.into_par_iter_parts().with_producer(|base| FlatMap {
            base,
            f,
            expand: expand::<Self::Item, F, PI>,
        })
    }

    /// The items of the sequential iterators `f` makes of each item, in order (no longer
    /// indexed).
    fn flat_map_iter<F, U>(self, f: F) -> ParIter<FlatMap<Self::Producer, F, U::IntoIter>>
    where
        F: Fn(Self::Item) -> U + Sync + Send,
        U: IntoIterator,
    {
        fn expand<T, F: Fn(T) -> U, U: IntoIterator>(f: &F, x: T) -> U::IntoIter {
            f(x).into_iter()
        }
        self.into_par_iter_parts().with_producer(|base| FlatMap {
            base,
            f,
            expand: expand::<Self::Item, F, U>,
        })
    }

    /// Copies of referenced items.
    #[allow(clippy::type_complexity)]
    fn copied<'a, T>(self) -> ParIter<Map<Self::Producer, fn(&'a T) -> T>>
    where
        Self: ParallelIterator<Item = &'a T>,
        T: Copy + 'a,
    {
        self.map(|x: &'a T| *x)
    }

    /// Clones of referenced items.
    #[allow(clippy::type_complexity)]
    fn cloned<'a, T>(self) -> ParIter<Map<Self::Producer, fn(&'a T) -> T>>
    where
        Self: ParallelIterator<Item = &'a T>,
        T: Clone + 'a,
    {
        self.map(|x: &'a T| x.clone())
    }

    /// Calls `f` on every item, in parallel. Returns once every item is done.
    #[track_caller]
    fn for_each<F>(self, f: F)
    where
        F: Fn(Self::Item) + Sync + Send,
    {
        self.into_par_iter_parts().run_for_each(f)
    }

    /// Calls `op(&mut state, item)` on every item, each participant with its own clone of
    /// `init`.
    #[track_caller]
    fn for_each_with<T, F>(self, init: T, op: F)
    where
        T: Send + Clone,
        F: Fn(&mut T, Self::Item) + Sync + Send,
    {
        // Behind a lock so participants may clone it without `T: Sync`.
        let init = Mutex::new(init);
        self.into_par_iter_parts().run_for_each_with(
            || init.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            op,
        )
    }

    /// Calls `op(&mut state, item)` on every item, each participant with a state made by
    /// `init()`.
    #[track_caller]
    fn for_each_init<T, I, F>(self, init: I, op: F)
    where
        I: Fn() -> T + Sync + Send,
        F: Fn(&mut T, Self::Item) + Sync + Send,
    {
        self.into_par_iter_parts().run_for_each_with(init, op)
    }

    /// The number of items.
    #[track_caller]
    fn count(self) -> usize {
        self.into_par_iter_parts()
            .fold_stretches(|it| it.count(), |a, b| a + b)
            .unwrap_or(0)
    }

    /// The sum of the items (any [`Sum`]).
    #[track_caller]
    fn sum<S>(self) -> S
    where
        S: Sum<Self::Item> + Sum<S> + Send,
    {
        self.into_par_iter_parts()
            .fold_stretches(|it| it.sum::<S>(), |a, b| [a, b].into_iter().sum())
            .unwrap_or_else(|| std::iter::empty::<S>().sum())
    }

    /// The product of the items (any [`Product`]).
    #[track_caller]
    fn product<S>(self) -> S
    where
        S: Product<Self::Item> + Product<S> + Send,
    {
        self.into_par_iter_parts()
            .fold_stretches(|it| it.product::<S>(), |a, b| [a, b].into_iter().product())
            .unwrap_or_else(|| std::iter::empty::<S>().product())
    }

    /// The items reduced with `op` (associative), each stretch starting from `identity()`;
    /// `identity()` when there are none.
    #[track_caller]
    fn reduce<I, O>(self, identity: I, op: O) -> Self::Item
    where
        Self::Item: Send,
        I: Fn() -> Self::Item + Sync + Send,
        O: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
    {
        self.into_par_iter_parts()
            .fold_stretches(|it| it.fold(identity(), &op), &op)
            .unwrap_or_else(identity)
    }

    /// The items reduced with `op` (associative); `None` when there are none.
    #[track_caller]
    fn reduce_with<O>(self, op: O) -> Option<Self::Item>
    where
        Self::Item: Send,
        O: Fn(Self::Item, Self::Item) -> Self::Item + Sync + Send,
    {
        let pick = |a: Option<Self::Item>, b: Option<Self::Item>| match (a, b) {
            (Some(a), Some(b)) => Some(op(a, b)),
            (a, b) => a.or(b),
        };
        self.into_par_iter_parts()
            .fold_stretches(|it| it.reduce(&op), pick)
            .flatten()
    }

    /// Rayon's `fold`: the items folded into accumulators, each started from `identity()`, one
    /// per run of consecutive items a participant took, and those accumulators, in item order,
    /// as a new parallel iterator (typically reduced next). The fold runs by this iterator's
    /// schedule when called; the accumulators are dealt by `Schedule::Dynamic(1)`.
    ///
    /// ```
    /// use footprint::par::prelude::*;
    /// let rt = footprint::Runtime::builder().workers(2).build()?;
    /// let words: Vec<String> = (0..100).map(|i| format!("w{}", i % 7)).collect();
    /// let counts = rt.block_on(|| {
    ///     words
    ///         .par_iter()
    ///         .fold(std::collections::HashMap::new, |mut m, w| {
    ///             *m.entry(w.as_str()).or_insert(0) += 1;
    ///             m
    ///         })
    ///         .reduce(std::collections::HashMap::new, |mut a, b| {
    ///             for (k, v) in b {
    ///                 *a.entry(k).or_insert(0) += v;
    ///             }
    ///             a
    ///         })
    /// });
    /// assert_eq!(counts["w0"], 15);
    /// # Ok::<(), footprint::Error>(())
    /// ```
    #[track_caller]
    fn fold<T, ID, F>(self, identity: ID, fold_op: F) -> ParIter<VecProducer<T>>
    where
        T: Send,
        ID: Fn() -> T + Sync + Send,
        F: Fn(T, Self::Item) -> T + Sync + Send,
    {
        let accs = self
            .into_par_iter_parts()
            .fold_runs(identity, |acc, it| it.fold(acc, &fold_op));
        ParIter::new(VecProducer::new(accs)).with_schedule(Schedule::Dynamic(1))
    }

    /// [`fold`](ParallelIterator::fold) with accumulators starting as clones of `init`.
    #[track_caller]
    fn fold_with<T, F>(self, init: T, fold_op: F) -> ParIter<VecProducer<T>>
    where
        T: Send + Clone,
        F: Fn(T, Self::Item) -> T + Sync + Send,
    {
        let init = Mutex::new(init);
        self.fold(
            || init.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            fold_op,
        )
    }

    /// The least item (the first of equal ones, as `Iterator::min`); `None` when empty.
    #[track_caller]
    fn min(self) -> Option<Self::Item>
    where
        Self::Item: Ord + Send,
    {
        self.into_par_iter_parts()
            .best(|later, earlier| later < earlier)
    }

    /// The greatest item (the last of equal ones, as `Iterator::max`); `None` when empty.
    #[track_caller]
    fn max(self) -> Option<Self::Item>
    where
        Self::Item: Ord + Send,
    {
        self.into_par_iter_parts()
            .best(|later, earlier| later >= earlier)
    }

    /// The least item by `cmp` (the first of equal ones); `None` when empty.
    #[track_caller]
    fn min_by<F>(self, cmp: F) -> Option<Self::Item>
    where
        Self::Item: Send,
        F: Fn(&Self::Item, &Self::Item) -> Ordering + Sync + Send,
    {
        self.into_par_iter_parts()
            .best(|later, earlier| cmp(later, earlier) == Ordering::Less)
    }

    /// The greatest item by `cmp` (the last of equal ones); `None` when empty.
    #[track_caller]
    fn max_by<F>(self, cmp: F) -> Option<Self::Item>
    where
        Self::Item: Send,
        F: Fn(&Self::Item, &Self::Item) -> Ordering + Sync + Send,
    {
        self.into_par_iter_parts()
            .best(|later, earlier| cmp(later, earlier) != Ordering::Less)
    }

    /// The item with the least key (the first of equal ones); `None` when empty.
    #[track_caller]
    fn min_by_key<K, F>(self, key: F) -> Option<Self::Item>
    where
        Self::Item: Send,
        K: Ord,
        F: Fn(&Self::Item) -> K + Sync + Send,
    {
        self.into_par_iter_parts()
            .best(|later, earlier| key(later) < key(earlier))
    }

    /// The item with the greatest key (the last of equal ones); `None` when empty.
    #[track_caller]
    fn max_by_key<K, F>(self, key: F) -> Option<Self::Item>
    where
        Self::Item: Send,
        K: Ord,
        F: Fn(&Self::Item) -> K + Sync + Send,
    {
        self.into_par_iter_parts()
            .best(|later, earlier| key(later) >= key(earlier))
    }

    /// Whether `pred` holds for some item (stops at the first hit found).
    #[track_caller]
    fn any<F>(self, pred: F) -> bool
    where
        F: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.into_par_iter_parts()
            .search(Want::Any, |x| pred(x).then_some(()))
            .is_some()
    }

    /// Whether `pred` holds for every item (stops at the first miss found).
    #[track_caller]
    fn all<F>(self, pred: F) -> bool
    where
        F: Fn(Self::Item) -> bool + Sync + Send,
    {
        self.into_par_iter_parts()
            .search(Want::Any, |x| (!pred(x)).then_some(()))
            .is_none()
    }

    /// Some item for which `pred` holds, whichever is found first in time.
    #[track_caller]
    fn find_any<F>(self, pred: F) -> Option<Self::Item>
    where
        Self::Item: Send,
        F: Fn(&Self::Item) -> bool + Sync + Send,
    {
        self.into_par_iter_parts()
            .search(Want::Any, |x| pred(&x).then_some(x))
    }

    /// The first item (by position) for which `pred` holds; stretches after a hit are skipped.
    #[track_caller]
    fn find_first<F>(self, pred: F) -> Option<Self::Item>
    where
        Self::Item: Send,
        F: Fn(&Self::Item) -> bool + Sync + Send,
    {
        self.into_par_iter_parts()
            .search(Want::First, |x| pred(&x).then_some(x))
    }

    /// Some `Some` result of `f`, whichever is found first in time.
    #[track_caller]
    fn find_map_any<F, R>(self, f: F) -> Option<R>
    where
        R: Send,
        F: Fn(Self::Item) -> Option<R> + Sync + Send,
    {
        self.into_par_iter_parts().search(Want::Any, f)
    }

    /// The `Some` result of `f` for the first item (by position) where it is `Some`.
    #[track_caller]
    fn find_map_first<F, R>(self, f: F) -> Option<R>
    where
        R: Send,
        F: Fn(Self::Item) -> Option<R> + Sync + Send,
    {
        self.into_par_iter_parts().search(Want::First, f)
    }

    /// The items gathered into a collection, in order (`Vec`, `String`, `HashMap`, ...).
    #[track_caller]
    fn collect<C>(self) -> C
    where
        C: FromParallelIterator<Self::Item>,
    {
        C::from_par_iter(self.into_par_iter_parts())
    }

    /// The pairs' first and second halves in two collections, each in order.
    #[track_caller]
    fn unzip<A, B, FromA, FromB>(self) -> (FromA, FromB)
    where
        Self: ParallelIterator<Item = (A, B)>,
        A: Send,
        B: Send,
        FromA: Default + Extend<A>,
        FromB: Default + Extend<B>,
    {
        let (a, b) = self
            .into_par_iter_parts()
            .fold_stretches(|it| it.unzip::<A, B, Vec<A>, Vec<B>>(), append_pair)
            .unwrap_or_default();
        let (mut into_a, mut into_b) = (FromA::default(), FromB::default());
        into_a.extend(a);
        into_b.extend(b);
        (into_a, into_b)
    }

    /// The items for which `pred` holds and the others, in two collections, each in order.
    #[track_caller]
    fn partition<A, B, F>(self, pred: F) -> (A, B)
    where
        Self::Item: Send,
        A: Default + Extend<Self::Item>,
        B: Default + Extend<Self::Item>,
        F: Fn(&Self::Item) -> bool + Sync + Send,
    {
        let (yes, no) = self
            .into_par_iter_parts()
            .fold_stretches(|it| it.partition::<Vec<_>, _>(|x| pred(x)), append_pair)
            .unwrap_or_default();
        let (mut into_yes, mut into_no) = (A::default(), B::default());
        into_yes.extend(yes);
        into_no.extend(no);
        (into_yes, into_no)
    }
}

/// Two stretches' pairs of `Vec`s joined, the earlier first.
fn append_pair<A, B>(
    (mut a, mut b): (Vec<A>, Vec<B>),
    (mut a2, mut b2): (Vec<A>, Vec<B>),
) -> (Vec<A>, Vec<B>) {
    a.append(&mut a2);
    b.append(&mut b2);
    (a, b)
}

impl<P: Producer> ParallelIterator for ParIter<P> {
    type Item = P::Item;
    type Producer = P;
    fn into_par_iter_parts(self) -> ParIter<P> {
        self
    }
}

impl<P: Producer> ParIter<P> {
    /// The item kept by scanning in order and replacing the kept one by a later item whenever
    /// `later_wins(later, kept)`.
    #[track_caller]
    fn best<W>(self, later_wins: W) -> Option<P::Item>
    where
        P::Item: Send,
        W: Fn(&P::Item, &P::Item) -> bool + Sync,
    {
        let pick = |a: Option<P::Item>, b: Option<P::Item>| match (a, b) {
            (Some(a), Some(b)) => Some(if later_wins(&b, &a) { b } else { a }),
            (a, b) => a.or(b),
        };
        self.fold_stretches(|it| it.map(Some).fold(None, &pick), pick)
            .flatten()
    }
}
