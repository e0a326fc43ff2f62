//! A worker's ready structure ordered by a policy's key: smallest key first, first in first out
//! among equal keys. A binary heap; push and pop are `O(log n)`. Single-owner (`&mut self`): the
//! runtime keeps one per worker behind whatever synchronisation it already uses.
//!
//! ```
//! use footprint_affinity::ready::ReadyHeap;
//! let mut q = ReadyHeap::new();
//! q.push(7, "b");
//! q.push(3, "a");
//! q.push(7, "c");
//! assert_eq!(q.pop(), Some((3, "a")));
//! assert_eq!(q.pop(), Some((7, "b")));   // equal keys: first in, first out
//! assert_eq!(q.pop(), Some((7, "c")));
//! assert_eq!(q.pop(), None);
//! ```

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// `rank = key << 64 | seq`: one comparison orders by key, then by arrival.
struct Entry<T> {
    rank: u128,
    item: T,
}

impl<T> Entry<T> {
    #[inline]
    fn key(&self) -> u64 {
        (self.rank >> 64) as u64
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.rank == other.rank
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    /// Reversed: `BinaryHeap` is a max-heap and we pop the smallest rank.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.rank.cmp(&self.rank)
    }
}

/// Ready threads ordered by key (smaller first), FIFO among equal keys.
pub struct ReadyHeap<T> {
    heap: BinaryHeap<Entry<T>>,
    next_seq: u64,
}

impl<T> Default for ReadyHeap<T> {
    fn default() -> Self {
        ReadyHeap::new()
    }
}

impl<T> std::fmt::Debug for ReadyHeap<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadyHeap")
            .field("len", &self.heap.len())
            .field("min_key", &self.peek_key())
            .finish()
    }
}

impl<T> ReadyHeap<T> {
    /// An empty structure.
    pub fn new() -> ReadyHeap<T> {
        ReadyHeap {
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }

    /// With room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> ReadyHeap<T> {
        ReadyHeap {
            heap: BinaryHeap::with_capacity(capacity),
            next_seq: 0,
        }
    }

    /// Adds `item` with `key`.
    #[inline]
    pub fn push(&mut self, key: u64, item: T) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            rank: (u128::from(key) << 64) | u128::from(seq),
            item,
        });
    }

    /// Removes the entry with the smallest key (the oldest among equals).
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, T)> {
        self.heap.pop().map(|e| (e.key(), e.item))
    }

    /// The smallest key, if any.
    pub fn peek_key(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.key())
    }

    /// The entry that [`ReadyHeap::pop`] would return.
    pub fn peek(&self) -> Option<(u64, &T)> {
        self.heap.peek().map(|e| (e.key(), &e.item))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Removes and returns the first entry in pop order that satisfies `pred` (e.g. a thread of a
    /// higher priority class that must run now). `O(n log n)`.
    pub fn take_first(&mut self, mut pred: impl FnMut(&T) -> bool) -> Option<(u64, T)> {
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        let found = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| pred(&e.item))
            .min_by_key(|(_, e)| e.rank)
            .map(|(i, _)| i);
        let taken = found.map(|i| entries.swap_remove(i));
        self.heap = BinaryHeap::from(entries);
        taken.map(|e| (e.key(), e.item))
    }

    /// The entries in no particular order (for inspection, e.g. thieves choosing a victim).
    pub fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        self.heap.iter().map(|e| (e.key(), &e.item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn take_first_and_peek() {
        let mut q = ReadyHeap::with_capacity(4);
        for (k, v) in [(5u64, 'a'), (1, 'b'), (5, 'c'), (9, 'd')] {
            q.push(k, v);
        }
        assert_eq!(q.peek(), Some((1, &'b')));
        assert_eq!(q.take_first(|&c| c == 'c' || c == 'd'), Some((5, 'c')));
        assert_eq!(q.take_first(|&c| c == 'z'), None);
        assert_eq!(q.len(), 3);
        let mut rest = Vec::new();
        while let Some(e) = q.pop() {
            rest.push(e);
        }
        assert_eq!(rest, vec![(1, 'b'), (5, 'a'), (9, 'd')]);
        assert!(q.is_empty());
        assert_eq!(q.peek_key(), None);
    }

    proptest! {
        /// Pops come out sorted by key, FIFO among equal keys: the order of a stable sort.
        #[test]
        fn pops_in_stable_key_order(ops in proptest::collection::vec(proptest::option::of(0u64..8), 0..200)) {
            let mut q = ReadyHeap::new();
            let mut model: Vec<(u64, usize)> = Vec::new();
            let mut popped = Vec::new();
            let mut expected = Vec::new();
            for (i, op) in ops.into_iter().enumerate() {
                match op {
                    Some(key) => { q.push(key, i); model.push((key, i)); }
                    None => {
                        popped.push(q.pop());
                        // The model: the first of the minimal keys in insertion order.
                        let best = model.iter().enumerate().min_by_key(|(_, (k, _))| *k).map(|(j, _)| j);
                        expected.push(best.map(|j| model.remove(j)));
                    }
                }
                prop_assert_eq!(q.len(), model.len());
            }
            prop_assert_eq!(popped, expected);
        }
    }
}
