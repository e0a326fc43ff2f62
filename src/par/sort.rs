//! Parallel sorts: the slice cut in a few pieces per worker, each sorted by the standard
//! library's sort, then merged level by level, each merge itself split in parallel.
//!
//! Elements move between the slice and a buffer as bitwise copies, and the slice always holds
//! every element exactly once whenever a comparison can panic: merges into the buffer only
//! read the slice, and a merge into the slice that is cut short by a panic first copies the
//! rest of its two runs in (`MergeHole`).

use footprint_runtime::{current_num_threads, join};
use std::cmp::Ordering;
use std::mem::size_of;
use std::ptr;

/// Below this many elements a slice is sorted sequentially.
const SEQUENTIAL: usize = 1 << 13;

/// Pieces per worker sorted on their own before merging (a few, so that a worker that finishes
/// early can take another).
const PIECES_PER_WORKER: usize = 4;

/// A merge of fewer elements than this runs sequentially.
const MERGE_SEQUENTIAL: usize = 1 << 13;

/// A pointer handed across `join`.
struct Ptr<T>(*mut T);

impl<T> Clone for Ptr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Ptr<T> {}

// SAFETY: the pointers address disjoint parts of one slice and its buffer; each part is used
// by one participant at a time (the recursions below split them), which moves `T`s between
// threads: sound when `T: Send`.
unsafe impl<T: Send> Send for Ptr<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Ptr<T> {}

impl<T> Ptr<T> {
    /// The pointer `n` elements further.
    ///
    /// # Safety
    /// As `pointer::add`.
    unsafe fn add(self, n: usize) -> Ptr<T> {
        // SAFETY: forwarded.
        Ptr(unsafe { self.0.add(n) })
    }
}

/// Sorts `v` by `cmp` on the current runtime's workers; stable (`std`'s `sort_by` for the
/// pieces) or not (`sort_unstable_by`); the merges are stable either way.
pub(crate) fn par_merge_sort<T, F>(v: &mut [T], cmp: &F, stable: bool)
where
    T: Send,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    let n = v.len();
    let workers = current_num_threads();
    if size_of::<T>() == 0 || n <= SEQUENTIAL || workers <= 1 {
        sort_piece(v, cmp, stable);
        return;
    }
    let plan = Plan {
        piece: n.div_ceil(workers * PIECES_PER_WORKER).max(SEQUENTIAL / 2),
        merge_piece: n.div_ceil(workers * 8).max(MERGE_SEQUENTIAL),
        stable,
    };
    let mut buf: Vec<T> = Vec::with_capacity(n);
    // SAFETY: `v` and `buf` each hold `n` elements' room and do not overlap; `sort_into` leaves
    // the sorted elements in `v` (the buffer holds stale copies only, never dropped: its length
    // stays 0).
    unsafe {
        plan.sort_into(Ptr(v.as_mut_ptr()), Ptr(buf.as_mut_ptr()), n, false, cmp);
    }
}

fn sort_piece<T, F: Fn(&T, &T) -> Ordering>(v: &mut [T], cmp: &F, stable: bool) {
    if stable {
        v.sort_by(cmp);
    } else {
        v.sort_unstable_by(cmp);
    }
}

/// How one sort cuts its slice.
struct Plan {
    /// Largest piece sorted on its own.
    piece: usize,
    /// Largest merge run without splitting it further.
    merge_piece: usize,
    stable: bool,
}

impl Plan {
    /// Sorts the `len` elements at `v`, leaving them sorted at `v` (`into_buf == false`) or at
    /// `buf` (the elements at `v` are then stale copies).
    ///
    /// # Safety
    /// `v` and `buf` address `len` elements each, disjoint, used by nobody else meanwhile; `v`
    /// holds each of its elements once.
    unsafe fn sort_into<T, F>(&self, v: Ptr<T>, buf: Ptr<T>, len: usize, into_buf: bool, cmp: &F)
    where
        T: Send,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        if len <= self.piece {
            // SAFETY: the caller's `v` has `len` elements, ours alone.
            sort_piece(
                unsafe { std::slice::from_raw_parts_mut(v.0, len) },
                cmp,
                self.stable,
            );
            if into_buf {
                // SAFETY: disjoint regions of `len` elements each.
                unsafe { ptr::copy_nonoverlapping(v.0, buf.0, len) };
            }
            return;
        }
        let mid = len / 2;
        // SAFETY: the halves split both regions at `mid`; the children leave their results in
        // the region this level merges from.
        unsafe {
            let (v2, buf2) = (v.add(mid), buf.add(mid));
            join(
                move || self.sort_into(v, buf, mid, !into_buf, cmp),
                move || self.sort_into(v2, buf2, len - mid, !into_buf, cmp),
            );
            let (from, to) = if into_buf { (v, buf) } else { (buf, v) };
            self.merge(from, mid, from.add(mid), len - mid, to, cmp);
        }
    }

    /// Merges the sorted runs `a` (`alen`) and `b` (`blen`) into `dst`, stably (on equal
    /// elements `a`'s first), splitting the merge across workers while it is long.
    ///
    /// # Safety
    /// `a` and `b` hold sorted runs; `dst` has room for `alen + blen` elements, disjoint from
    /// both; nobody else uses them meanwhile.
    unsafe fn merge<T, F>(
        &self,
        a: Ptr<T>,
        alen: usize,
        b: Ptr<T>,
        blen: usize,
        dst: Ptr<T>,
        cmp: &F,
    ) where
        T: Send,
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        if alen + blen <= self.merge_piece || alen == 0 || blen == 0 {
            // SAFETY: forwarded.
            unsafe { merge_sequential(a.0, alen, b.0, blen, dst.0, cmp) };
            return;
        }
        // SAFETY: the runs are `alen` and `blen` initialised elements.
        let (ra, rb) = unsafe {
            (
                std::slice::from_raw_parts(a.0, alen),
                std::slice::from_raw_parts(b.0, blen),
            )
        };
        // Split at the middle of the longer run; the shorter one where that element would go
        // (b's elements equal to a's pivot after it, a's equal to b's pivot before it).
        let (i, j) = if alen >= blen {
            let i = alen / 2;
            (i, rb.partition_point(|x| cmp(x, &ra[i]) == Ordering::Less))
        } else {
            let j = blen / 2;
            (
                ra.partition_point(|x| cmp(x, &rb[j]) != Ordering::Greater),
                j,
            )
        };
        // SAFETY: the two halves merge disjoint parts of the runs into disjoint parts of `dst`.
        unsafe {
            let (a2, b2, dst2) = (a.add(i), b.add(j), dst.add(i + j));
            join(
                move || self.merge(a, i, b, j, dst, cmp),
                move || self.merge(a2, alen - i, b2, blen - j, dst2, cmp),
            );
        }
    }
}

/// The unmerged rest of a sequential merge: copied to `dst` when the merge ends, normally or by
/// a panicking comparison, so `dst` always ends up holding every element of both runs.
struct MergeHole<T> {
    a: *const T,
    a_end: *const T,
    b: *const T,
    b_end: *const T,
    dst: *mut T,
}

impl<T> Drop for MergeHole<T> {
    fn drop(&mut self) {
        // SAFETY: the rests of both runs and the rest of `dst` (exactly their sizes together).
        unsafe {
            let na = self.a_end.offset_from(self.a) as usize;
            ptr::copy_nonoverlapping(self.a, self.dst, na);
            let nb = self.b_end.offset_from(self.b) as usize;
            ptr::copy_nonoverlapping(self.b, self.dst.add(na), nb);
        }
    }
}

/// Merges runs `a` and `b` into `dst`, stably.
///
/// # Safety
/// As [`Plan::merge`]; `T` is not zero-sized.
unsafe fn merge_sequential<T, F>(
    a: *const T,
    alen: usize,
    b: *const T,
    blen: usize,
    dst: *mut T,
    cmp: &F,
) where
    F: Fn(&T, &T) -> Ordering,
{
    // SAFETY: the ends of the runs the caller gave.
    let mut hole = unsafe {
        MergeHole {
            a,
            a_end: a.add(alen),
            b,
            b_end: b.add(blen),
            dst,
        }
    };
    while hole.a < hole.a_end && hole.b < hole.b_end {
        // SAFETY: both cursors point at unmerged elements; `dst` has room for one more (it has
        // room for everything not yet merged); the hole's fields move past what was copied.
        unsafe {
            let take_b = cmp(&*hole.b, &*hole.a) == Ordering::Less;
            let src = if take_b { hole.b } else { hole.a };
            ptr::copy_nonoverlapping(src, hole.dst, 1);
            hole.dst = hole.dst.add(1);
            if take_b {
                hole.b = hole.b.add(1);
            } else {
                hole.a = hole.a.add(1);
            }
        }
    }
    // The hole's drop copies what is left of the longer run.
}
