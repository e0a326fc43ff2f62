//! Integer ranges as producers: `(a..b).into_par_iter()` and `(a..=b).into_par_iter()` for every
//! primitive integer type.

use super::producer::{IndexedProducer, Producer};
use super::sources::IntoParallelIterator;
use super::ParIter;
use std::ops::{Range, RangeInclusive};

/// `(a..b).into_par_iter()`: position `i` is `a + i`.
pub struct RangeProducer<T = usize> {
    start: T,
    len: usize,
}

/// `(a..=b).into_par_iter()`: position `i` is `a + i`, the last one `b` (a stretch is an
/// inclusive range, so `0..=u8::MAX` never computes `u8::MAX + 1`).
pub struct RangeInclusiveProducer<T> {
    start: T,
    len: usize,
}

/// The number of values in `start..end`, or a message saying what to do when it does not fit a
/// `usize` (positions are `usize`).
#[track_caller]
fn fit(len: u128, what: &dyn std::fmt::Debug) -> usize {
    usize::try_from(len).unwrap_or_else(|_| {
        panic!(
            "footprint::par: the range {what:?} has {len} values, more than a loop's usize \
             positions can number; split it into ranges of at most usize::MAX values"
        )
    })
}

macro_rules! integer_ranges {
    ($($t:ty => $u:ty),* $(,)?) => {$(
        impl Producer for RangeProducer<$t> {
            type Item = $t;
            type Iter<'p> = Range<$t>;
            fn len(&self) -> usize {
                self.len
            }
            unsafe fn stretch(&self, r: Range<usize>) -> Range<$t> {
                // Wrapping: a signed range's offsets may exceed the type's positive half, yet
                // `start + offset` lands inside the range.
                self.start.wrapping_add(r.start as $t)..self.start.wrapping_add(r.end as $t)
            }
        }
        impl IndexedProducer for RangeProducer<$t> {}

        impl IntoParallelIterator for Range<$t> {
            type Item = $t;
            type Producer = RangeProducer<$t>;
            #[track_caller]
            fn into_par_iter(self) -> ParIter<RangeProducer<$t>> {
                let len = if self.start < self.end {
                    fit((self.end as $u).wrapping_sub(self.start as $u) as u128, &self)
                } else {
                    0
                };
                ParIter::new(RangeProducer { start: self.start, len })
            }
        }

        impl Producer for RangeInclusiveProducer<$t> {
            type Item = $t;
            type Iter<'p> = RangeInclusive<$t>;
            fn len(&self) -> usize {
                self.len
            }
            unsafe fn stretch(&self, r: Range<usize>) -> RangeInclusive<$t> {
                if r.is_empty() {
                    let mut none = self.start..=self.start;
                    none.next();
                    return none;
                }
                self.start.wrapping_add(r.start as $t)..=self.start.wrapping_add((r.end - 1) as $t)
            }
        }
        impl IndexedProducer for RangeInclusiveProducer<$t> {}

        impl IntoParallelIterator for RangeInclusive<$t> {
            type Item = $t;
            type Producer = RangeInclusiveProducer<$t>;
            #[track_caller]
            fn into_par_iter(self) -> ParIter<RangeInclusiveProducer<$t>> {
                let (start, end) = (*self.start(), *self.end());
                let len = if self.is_empty() {
                    0
                } else {
                    fit(
                        ((end as $u).wrapping_sub(start as $u) as u128).saturating_add(1),
                        &self,
                    )
                };
                ParIter::new(RangeInclusiveProducer { start, len })
            }
        }
    )*};
}

integer_ranges! {
    u8 => u8, u16 => u16, u32 => u32, u64 => u64, u128 => u128, usize => usize,
    i8 => u8, i16 => u16, i32 => u32, i64 => u64, i128 => u128, isize => usize,
}
