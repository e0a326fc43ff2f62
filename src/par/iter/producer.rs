//! The indexed producer model behind the prelude: a length, and the items of any stretch of
//! positions, handed out by the loop engine in disjoint stretches.

use std::marker::PhantomData;
use std::ops::Range;

/// A source of items at positions `0..len()`, any stretch of which can be produced on its own.
///
/// Implemented by the prelude's sources (slices, mutable slices, chunks, windows, ranges,
/// `Vec`s by value) and adaptors; user code names it only in bounds.
pub trait Producer: Sync {
    /// What the producer yields.
    type Item;
    /// The sequential iterator over one stretch.
    type Iter<'p>: Iterator<Item = Self::Item>
    where
        Self: 'p;
    /// Number of positions.
    fn len(&self) -> usize;
    /// Whether there are no positions.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The items at positions `r`.
    ///
    /// # Safety
    /// `r` lies within `0..len()`, and over the producer's life no position is asked for twice
    /// (a mutable or owning source hands out each element once).
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_>;

    /// All items, in order, as one sequential iterator (a parallel iterator nested in
    /// `flat_map` runs this way, inside its outer stretch).
    fn into_seq(self) -> std::vec::IntoIter<Self::Item>
    where
        Self: Sized,
    {
        // SAFETY: the whole range, once: `self` is consumed here.
        let items: Vec<Self::Item> = unsafe { self.stretch(0..self.len()) }.collect();
        items.into_iter()
    }
}

/// A producer whose position `i` yields exactly the `i`-th item (no filtering), so positions
/// can be numbered (`enumerate`), paired (`zip`), reversed, skipped and stepped over.
pub trait IndexedProducer: Producer {}

/// `slice.par_iter()`.
pub struct SliceProducer<'data, T> {
    pub(crate) slice: &'data [T],
}

impl<'data, T: Sync> Producer for SliceProducer<'data, T> {
    type Item = &'data T;
    type Iter<'p>
        = std::slice::Iter<'data, T>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.slice.len()
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        self.slice[r].iter()
    }
}
impl<T: Sync> IndexedProducer for SliceProducer<'_, T> {}

/// A mutable slice shared by the participants, each taking disjoint stretches.
pub(crate) struct RawSliceMut<'data, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'data mut [T]>,
}

// SAFETY: the participants touch disjoint elements (Producer::stretch's contract), so sharing
// the pointer is sending `&mut T`s to other threads: sound when T is Send.
unsafe impl<T: Send> Sync for RawSliceMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for RawSliceMut<'_, T> {}

impl<'data, T> RawSliceMut<'data, T> {
    pub(crate) fn new(slice: &'data mut [T]) -> Self {
        RawSliceMut {
            ptr: slice.as_mut_ptr(),
            len: slice.len(),
            _borrow: PhantomData,
        }
    }

    /// Elements `r` (clamped to the end).
    ///
    /// # Safety
    /// No element of `r` is handed out twice while `'data` lasts.
    unsafe fn elements(&self, r: Range<usize>) -> &'data mut [T] {
        let end = r.end.min(self.len);
        let start = r.start.min(end);
        // SAFETY: start..end lies within the slice we borrowed mutably for 'data, and the caller
        // promises no other reference to these elements exists.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), end - start) }
    }
}

/// `slice.par_iter_mut()`.
pub struct SliceMutProducer<'data, T> {
    pub(crate) raw: RawSliceMut<'data, T>,
}

impl<'data, T: Send> Producer for SliceMutProducer<'data, T> {
    type Item = &'data mut T;
    type Iter<'p>
        = std::slice::IterMut<'data, T>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.raw.len
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        // SAFETY: forwarded contract: each position once.
        unsafe { self.raw.elements(r) }.iter_mut()
    }
}
impl<T: Send> IndexedProducer for SliceMutProducer<'_, T> {}

/// `slice.par_chunks_mut(n)` (and `par_chunks_exact_mut(n)` over the whole chunks): position `i`
/// is the chunk `i * n .. (i + 1) * n` (the last one shorter).
pub struct ChunksMutProducer<'data, T> {
    pub(crate) raw: RawSliceMut<'data, T>,
    pub(crate) chunk_len: usize,
}

impl<'data, T: Send> Producer for ChunksMutProducer<'data, T> {
    type Item = &'data mut [T];
    type Iter<'p>
        = std::slice::ChunksMut<'data, T>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.raw.len.div_ceil(self.chunk_len)
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        let n = self.chunk_len;
        // SAFETY: distinct chunk positions cover distinct elements; forwarded contract.
        let elements = unsafe {
            self.raw
                .elements(r.start.saturating_mul(n)..r.end.saturating_mul(n))
        };
        elements.chunks_mut(n)
    }
}
impl<T: Send> IndexedProducer for ChunksMutProducer<'_, T> {}

/// `slice.par_chunks(n)` (and `par_chunks_exact(n)` over the whole chunks): position `i` is
/// `&slice[i * n .. (i + 1) * n]` (the last one shorter).
pub struct ChunksProducer<'data, T> {
    pub(crate) slice: &'data [T],
    pub(crate) chunk_len: usize,
}

impl<'data, T: Sync> Producer for ChunksProducer<'data, T> {
    type Item = &'data [T];
    type Iter<'p>
        = std::slice::Chunks<'data, T>
    where
        Self: 'p;
    fn len(&self) -> usize {
        self.slice.len().div_ceil(self.chunk_len)
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        let n = self.chunk_len;
        let end = r.end.saturating_mul(n).min(self.slice.len());
        self.slice[r.start.saturating_mul(n).min(end)..end].chunks(n)
    }
}
impl<T: Sync> IndexedProducer for ChunksProducer<'_, T> {}

/// `slice.par_windows(n)`: position `i` is `&slice[i .. i + n]`.
pub struct WindowsProducer<'data, T> {
    pub(crate) slice: &'data [T],
    pub(crate) window: usize,
}

impl<'data, T: Sync> Producer for WindowsProducer<'data, T> {
    type Item = &'data [T];
    type Iter<'p>
        = std::slice::Windows<'data, T>
    where
        Self: 'p;
    fn len(&self) -> usize {
        (self.slice.len() + 1).saturating_sub(self.window)
    }
    unsafe fn stretch(&self, r: Range<usize>) -> Self::Iter<'_> {
        if r.is_empty() {
            return self.slice[..0].windows(self.window);
        }
        self.slice[r.start..r.end + self.window - 1].windows(self.window)
    }
}
impl<T: Sync> IndexedProducer for WindowsProducer<'_, T> {}
