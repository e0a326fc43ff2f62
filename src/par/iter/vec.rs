//! `Vec<T>` by value as a producer: each element moved out exactly once, and the ones no stretch
//! asked for (a loop stopped by a panic, a search that found its item) dropped with the producer.

use super::producer::{IndexedProducer, Producer};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// `vec.into_par_iter()`: position `i` moves out element `i`.
pub struct VecProducer<T> {
    ptr: *mut T,
    len: usize,
    cap: usize,
    /// One bit per position, set once its stretch has been handed out: what `Drop` must not
    /// drop again.
    taken: Box<[AtomicU64]>,
    _owns: PhantomData<T>,
}

// SAFETY: each element is moved out to exactly one participant (Producer::stretch's contract,
// and the `taken` bits), so sharing the producer is sending `T`s to other threads.
unsafe impl<T: Send> Sync for VecProducer<T> {}
// SAFETY: the producer owns its elements like a `Vec<T>`.
unsafe impl<T: Send> Send for VecProducer<T> {}

impl<T> VecProducer<T> {
    pub(crate) fn new(v: Vec<T>) -> VecProducer<T> {
        let mut v = ManuallyDrop::new(v);
        let len = v.len();
        VecProducer {
            ptr: v.as_mut_ptr(),
            len,
            cap: v.capacity(),
            taken: (0..len.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            _owns: PhantomData,
        }
    }

    /// Marks positions `r` as handed out.
    fn mark(&self, r: Range<usize>) {
        let mut i = r.start;
        while i < r.end {
            let word = i / 64;
            let upto = r.end.min((word + 1) * 64);
            let bits = upto - i;
            let mask = if bits == 64 {
                u64::MAX
            } else {
                ((1u64 << bits) - 1) << (i % 64)
            };
            self.taken[word].fetch_or(mask, Ordering::Relaxed);
            i = upto;
        }
    }
}

impl<T> Drop for VecProducer<T> {
    fn drop(&mut self) {
        for i in 0..self.len {
            if *self.taken[i / 64].get_mut() & (1 << (i % 64)) == 0 {
                // SAFETY: position i was never handed out, so element i is still ours, once.
                unsafe { std::ptr::drop_in_place(self.ptr.add(i)) };
            }
        }
        // SAFETY: the allocation of the Vec we took apart; every element is gone (length 0).
        drop(unsafe { Vec::from_raw_parts(self.ptr, 0, self.cap) });
    }
}

/// The elements of one stretch, moved out as they are yielded; the rest dropped with it.
pub struct VecStretch<'p, T> {
    base: *mut T,
    next: usize,
    end: usize,
    _from: PhantomData<&'p VecProducer<T>>,
}

impl<T> Iterator for VecStretch<'_, T> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.next == self.end {
            return None;
        }
        let at = self.next;
        self.next += 1;
        // SAFETY: positions next..end of this stretch are not yet moved out and owned by it.
        Some(unsafe { self.base.add(at).read() })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}

impl<T> Drop for VecStretch<'_, T> {
    fn drop(&mut self) {
        while self.next != self.end {
            let at = self.next;
            // Advanced first, so a panicking drop does not drop it twice.
            self.next += 1;
            // SAFETY: as in `next`.
            unsafe { std::ptr::drop_in_place(self.base.add(at)) };
        }
    }
}

impl<T: Send> Producer for VecProducer<T> {
    type Item = T;
    type Iter<'p>
        = VecStretch<'p, T>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.len
    }
    unsafe fn stretch(&self, r: Range<usize>) -> VecStretch<'_, T> {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "stretch out of range"
        );
        self.mark(r.clone());
        // The caller asks for each position once, and r lies within the elements (checked).
        VecStretch {
            base: self.ptr,
            next: r.start,
            end: r.end,
            _from: PhantomData,
        }
    }
}
impl<T: Send> IndexedProducer for VecProducer<T> {}
