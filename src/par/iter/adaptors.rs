//! Producers built from producers: `map`, `filter`, `enumerate`, `zip`.

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
