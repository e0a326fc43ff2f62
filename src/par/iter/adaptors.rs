//! Producers built from producers: `map`, `filter`, `filter_map`, `flat_map`, `enumerate`,
//! `zip`, `rev`, `step_by`, `skip`, `take`, `chunks`.

use super::producer::{IndexedProducer, Producer};
use std::ops::Range;

/// `.map(f)`.
pub struct Map<P, F> {
    pub(crate) base: P,
    pub(crate) f: F,
}

impl<P, F, R> Producer for Map<P, F>
where
    P: Producer,
    F: Fn(P::Item) -> R + Sync,
{
    type Item = R;
    type Iter<'p>
        = std::iter::Map<P::Iter<'p>, &'p F>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.base.len()
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        // SAFETY: forwarded contract.
        unsafe { self.base.stretch(r) }.map(&self.f)
    }
}
impl<P: IndexedProducer, F, R> IndexedProducer for Map<P, F> where F: Fn(P::Item) -> R + Sync {}

/// `.filter(pred)`: not indexed (positions no longer match items).
pub struct Filter<P, F> {
    pub(crate) base: P,
    pub(crate) pred: F,
}

impl<P, F> Producer for Filter<P, F>
where
    P: Producer,
    F: Fn(&P::Item) -> bool + Sync,
{
    type Item = P::Item;
    type Iter<'p>
        = std::iter::Filter<P::Iter<'p>, &'p F>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.base.len()
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        // SAFETY: forwarded contract.
        unsafe { self.base.stretch(r) }.filter(&self.pred)
    }
}

/// `.enumerate()`: each item with its position.
pub struct Enumerate<P> {
    pub(crate) base: P,
}

impl<P: IndexedProducer> Producer for Enumerate<P> {
    type Item = (usize, P::Item);
    type Iter<'p>
        = std::iter::Zip<Range<usize>, P::Iter<'p>>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.base.len()
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        // SAFETY: forwarded contract.
        r.clone().zip(unsafe { self.base.stretch(r) })
    }
}
impl<P: IndexedProducer> IndexedProducer for Enumerate<P> {}

/// `.zip(other)`: pairs by position, as long as the shorter.
pub struct Zip<A, B> {
    pub(crate) a: A,
    pub(crate) b: B,
}

impl<A: IndexedProducer, B: IndexedProducer> Producer for Zip<A, B> {
    type Item = (A::Item, B::Item);
    type Iter<'p>
        = std::iter::Zip<A::Iter<'p>, B::Iter<'p>>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.a.len().min(self.b.len())
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        // SAFETY: r lies within both (len is the shorter); forwarded contract.
        unsafe { self.a.stretch(r.clone()).zip(self.b.stretch(r)) }
    }
}
impl<A: IndexedProducer, B: IndexedProducer> IndexedProducer for Zip<A, B> {}

/// `.filter_map(f)`: the `Some` results of `f` (not indexed).
pub struct FilterMap<P, F> {
    pub(crate) base: P,
    pub(crate) f: F,
}

impl<P, F, R> Producer for FilterMap<P, F>
where
    P: Producer,
    F: Fn(P::Item) -> Option<R> + Sync,
{
    type Item = R;
    type Iter<'p>
        = std::iter::FilterMap<P::Iter<'p>, &'p F>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.base.len()
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        // SAFETY: forwarded contract.
        unsafe { self.base.stretch(r) }.filter_map(&self.f)
    }
}

/// `.flat_map(f)` and `.flat_map_iter(f)`: the items of `f`'s result for each item, in order
/// (not indexed). `expand` turns one result into a sequential iterator.
pub struct FlatMap<P: Producer, F, J> {
    pub(crate) base: P,
    pub(crate) f: F,
    pub(crate) expand: fn(&F, <P as Producer>::Item) -> J,
}

/// One stretch of a [`FlatMap`].
pub struct FlatMapStretch<'p, I: Iterator, F, J> {
    base: I,
    f: &'p F,
    expand: fn(&F, I::Item) -> J,
    front: Option<J>,
}

impl<I: Iterator, F, J: Iterator> Iterator for FlatMapStretch<'_, I, F, J> {
    type Item = J::Item;
    #[inline]
    fn next(&mut self) -> Option<J::Item> {
        loop {
            if let Some(inner) = &mut self.front {
                if let Some(x) = inner.next() {
                    return Some(x);
                }
            }
            let outer = self.base.next()?;
            self.front = Some((self.expand)(self.f, outer));
        }
    }
}

impl<P, F, J> Producer for FlatMap<P, F, J>
where
    P: Producer,
    F: Sync,
    J: Iterator,
{
    type Item = J::Item;
    type Iter<'p>
        = FlatMapStretch<'p, P::Iter<'p>, F, J>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.base.len()
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        FlatMapStretch {
            // SAFETY: forwarded contract.
            base: unsafe { self.base.stretch(r) },
            f: &self.f,
            expand: self.expand,
            front: None,
        }
    }
}

/// `.rev()`: position `i` is the base's position `len - 1 - i`.
pub struct Rev<P> {
    pub(crate) base: P,
}

/// One stretch of a [`Rev`]: the base's positions from the back, one at a time.
pub struct RevStretch<'p, P> {
    base: &'p P,
    positions: std::iter::Rev<Range<usize>>,
}

impl<P: Producer> Iterator for RevStretch<'_, P> {
    type Item = P::Item;
    #[inline]
    fn next(&mut self) -> Option<P::Item> {
        let i = self.positions.next()?;
        // SAFETY: the stretch's positions were handed to this iterator once, each taken once
        // here; an indexed producer yields exactly one item per position.
        unsafe { self.base.stretch(i..i + 1) }.next()
    }
}

impl<P: IndexedProducer> Producer for Rev<P> {
    type Item = P::Item;
    type Iter<'p>
        = RevStretch<'p, P>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.base.len()
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        let n = self.base.len();
        RevStretch {
            base: &self.base,
            positions: (n - r.end..n - r.start).rev(),
        }
    }
}
impl<P: IndexedProducer> IndexedProducer for Rev<P> {}

/// `.step_by(step)`: position `i` is the base's position `i * step`.
pub struct StepBy<P> {
    pub(crate) base: P,
    pub(crate) step: usize,
}

impl<P: IndexedProducer> Producer for StepBy<P> {
    type Item = P::Item;
    type Iter<'p>
        = std::iter::StepBy<P::Iter<'p>>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.base.len().div_ceil(self.step)
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        let base = if r.is_empty() {
            0..0
        } else {
            r.start * self.step..(r.end - 1) * self.step + 1
        };
        // SAFETY: disjoint stretches map to disjoint base stretches; forwarded contract.
        unsafe { self.base.stretch(base) }.step_by(self.step)
    }
}
impl<P: IndexedProducer> IndexedProducer for StepBy<P> {}

/// `.skip(n)`: position `i` is the base's position `n + i`.
pub struct Skip<P> {
    pub(crate) base: P,
    pub(crate) n: usize,
}

impl<P: IndexedProducer> Producer for Skip<P> {
    type Item = P::Item;
    type Iter<'p>
        = P::Iter<'p>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.base.len() - self.n
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        // SAFETY: shifted, still disjoint and in range; forwarded contract.
        unsafe { self.base.stretch(r.start + self.n..r.end + self.n) }
    }
}
impl<P: IndexedProducer> IndexedProducer for Skip<P> {}

/// `.take(n)`: the base's first `n` positions.
pub struct Take<P> {
    pub(crate) base: P,
    pub(crate) n: usize,
}

impl<P: IndexedProducer> Producer for Take<P> {
    type Item = P::Item;
    type Iter<'p>
        = P::Iter<'p>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.n
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        // SAFETY: forwarded contract (len is at most the base's).
        unsafe { self.base.stretch(r) }
    }
}
impl<P: IndexedProducer> IndexedProducer for Take<P> {}

/// `.chunks(n)`: position `i` is a `Vec` of the base's items `i * n .. (i + 1) * n` (the last
/// one shorter).
pub struct Chunks<P> {
    pub(crate) base: P,
    pub(crate) n: usize,
}

/// One stretch of a [`Chunks`]: the base's items gathered `n` at a time.
pub struct ChunksStretch<I> {
    base: I,
    n: usize,
}

impl<I: Iterator> Iterator for ChunksStretch<I> {
    type Item = Vec<I::Item>;
    fn next(&mut self) -> Option<Vec<I::Item>> {
        let chunk: Vec<I::Item> = self.base.by_ref().take(self.n).collect();
        (!chunk.is_empty()).then_some(chunk)
    }
}

impl<P: IndexedProducer> Producer for Chunks<P> {
    type Item = Vec<P::Item>;
    type Iter<'p>
        = ChunksStretch<P::Iter<'p>>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.base.len().div_ceil(self.n)
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        let end = r.end.saturating_mul(self.n).min(self.base.len());
        let start = r.start.saturating_mul(self.n).min(end);
        ChunksStretch {
            // SAFETY: distinct chunk positions cover distinct base positions; forwarded.
            base: unsafe { self.base.stretch(start..end) },
            n: self.n,
        }
    }
}
impl<P: IndexedProducer> IndexedProducer for Chunks<P> {}

/// `.map_init(init, f)` and `.map_with(value, f)`: each item through `f(&mut state, item)`,
/// with a state made for each stretch by `make` (rayon makes one per split likewise).
pub struct MapInit<P, M, F> {
    pub(crate) base: P,
    pub(crate) make: M,
    pub(crate) f: F,
}

/// Makes the state of one stretch of a [`MapInit`].
pub trait MakeState: Sync {
    /// The state.
    type State;
    /// A fresh state.
    fn make(&self) -> Self::State;
}

/// A state made by calling a closure (`map_init`).
pub struct InitWith<I>(pub(crate) I);

impl<I: Fn() -> T + Sync, T> MakeState for InitWith<I> {
    type State = T;
    fn make(&self) -> T {
        (self.0)()
    }
}

/// A state cloned from a value (`map_with`), behind a lock so that `T` need not be `Sync`.
pub struct CloneOf<T>(pub(crate) std::sync::Mutex<T>);

impl<T: Clone + Send> MakeState for CloneOf<T> {
    type State = T;
    fn make(&self) -> T {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// One stretch of a [`MapInit`].
pub struct MapInitStretch<'p, I, S, F> {
    base: I,
    state: S,
    f: &'p F,
}

impl<I: Iterator, S, F: Fn(&mut S, I::Item) -> R, R> Iterator for MapInitStretch<'_, I, S, F> {
    type Item = R;
    #[inline]
    fn next(&mut self) -> Option<R> {
        let x = self.base.next()?;
        Some((self.f)(&mut self.state, x))
    }
}

impl<P, M, F, R> Producer for MapInit<P, M, F>
where
    P: Producer,
    M: MakeState,
    F: Fn(&mut M::State, P::Item) -> R + Sync,
{
    type Item = R;
    type Iter<'p>
        = MapInitStretch<'p, P::Iter<'p>, M::State, F>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.base.len()
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        MapInitStretch {
            // SAFETY: forwarded contract.
            base: unsafe { self.base.stretch(r) },
            state: self.make.make(),
            f: &self.f,
        }
    }
}
impl<P, M, F, R> IndexedProducer for MapInit<P, M, F>
where
    P: IndexedProducer,
    M: MakeState,
    F: Fn(&mut M::State, P::Item) -> R + Sync,
{
}
