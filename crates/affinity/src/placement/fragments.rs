//! Data-fragment batching (001: Pinter and Zalmanovici, data-sharing conscious scheduling).
//!
//! A thread may declare the data fragment (DF) it is about to work on. Threads on the same DF are
//! batched on one worker and run back to back, so the DF is read into that worker's cache once:
//! - a DF seen for the first time opens a batch on the least-loaded worker;
//! - a thread on a known DF joins that DF's batch (and moves to its worker);
//! - a thread that changes DF leaves its batch and is placed again;
//! - [`FragmentBatcher::rebalance`] moves whole batches from the busiest to the least-loaded
//!   worker while that reduces the imbalance, and splits a batch only when the imbalance has been
//!   sustained for `sustain` consecutive calls with no whole batch movable.
//!
//! The `order` of a [`FragmentPlacement`] is a key for the worker's ready structure (smaller
//! first, FIFO among equals): every thread of a batch gets the batch's key, so a batch runs back
//! to back. 001's cost model, to evaluate schedules, is
//! [`research::penalty`](crate::research::penalty) (no runtime path uses it).
//!
//! ```
//! use footprint_affinity::placement::fragments::FragmentBatcher;
//! let mut b = FragmentBatcher::new(2);
//! let p0 = b.place(0, 7);          // thread 0 on DF 7: a new batch on worker 0
//! let p1 = b.place(1, 9);          // DF 9: new, least-loaded worker 1
//! let p2 = b.place(2, 7);          // DF 7 known: joins thread 0's batch
//! assert_eq!((p0.worker, p1.worker, p2.worker), (0, 1, 0));
//! assert_eq!(p0.order, p2.order);
//! ```

use std::collections::HashMap;

/// Identifies a green thread (the runtime's id).
pub type ThreadId = u64;
/// Identifies a data fragment (user-chosen: an address, an index).
pub type FragmentId = u64;

/// Where a thread goes and its ordering key there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FragmentPlacement {
    /// The worker.
    pub worker: usize,
    /// Ready-structure key: equal for the threads of one batch, increasing with batch age.
    pub order: u64,
    /// True when this DF had no batch yet (first sight).
    pub new_fragment: bool,
}

/// A batch moved or split by [`FragmentBatcher::rebalance`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchMove {
    /// The fragment.
    pub fragment: FragmentId,
    /// From this worker.
    pub from: usize,
    /// To this worker.
    pub to: usize,
    /// The threads that move (the whole batch unless `split`).
    pub threads: Vec<ThreadId>,
    /// True when only part of a batch moved.
    pub split: bool,
}

#[derive(Clone, Debug)]
struct Batch {
    fragment: FragmentId,
    worker: usize,
    order: u64,
    members: Vec<ThreadId>,
}

/// The data-fragment batching advisor. Deterministic: equal inputs give equal decisions.
#[derive(Clone, Debug)]
pub struct FragmentBatcher {
    loads: Vec<usize>,
    batches: Vec<Option<Batch>>,
    free_slots: Vec<usize>,
    /// DF → its home batch (new arrivals join it).
    home: HashMap<FragmentId, usize>,
    /// Thread → (batch slot, position in the batch's members): O(1) removal.
    thread_batch: HashMap<ThreadId, (usize, usize)>,
    next_order: u64,
    imbalance_threshold: usize,
    sustain: u32,
    imbalance_streak: u32,
}

impl FragmentBatcher {
    /// For `workers` workers, tolerating a load spread of 1 and splitting after 3 sustained
    /// imbalanced rebalance calls.
    ///
    /// # Panics
    /// If `workers` is 0.
    pub fn new(workers: usize) -> FragmentBatcher {
        FragmentBatcher::with_limits(workers, 1, 3)
    }

    /// With the tolerated spread `max − min` of thread counts (at least 1) and the number of
    /// consecutive imbalanced calls after which a batch may be split (at least 1).
    ///
    /// # Panics
    /// If `workers` is 0.
    pub fn with_limits(
        workers: usize,
        imbalance_threshold: usize,
        sustain: u32,
    ) -> FragmentBatcher {
        assert!(workers > 0, "the batcher needs at least one worker");
        FragmentBatcher {
            loads: vec![0; workers],
            batches: Vec::new(),
            free_slots: Vec::new(),
            home: HashMap::new(),
            thread_batch: HashMap::new(),
            next_order: 0,
            imbalance_threshold: imbalance_threshold.max(1),
            sustain: sustain.max(1),
            imbalance_streak: 0,
        }
    }

    /// Threads placed per worker.
    pub fn loads(&self) -> &[usize] {
        &self.loads
    }

    /// Number of threads placed.
    pub fn len(&self) -> usize {
        self.thread_batch.len()
    }

    /// True when no thread is placed.
    pub fn is_empty(&self) -> bool {
        self.thread_batch.is_empty()
    }

    fn least_loaded(&self) -> usize {
        (0..self.loads.len())
            .min_by_key(|&w| (self.loads[w], w))
            .expect("at least one worker")
    }

    fn new_batch(&mut self, fragment: FragmentId, worker: usize) -> usize {
        let batch = Batch {
            fragment,
            worker,
            order: self.next_order,
            members: Vec::new(),
        };
        self.next_order += 1;
        match self.free_slots.pop() {
            Some(slot) => {
                self.batches[slot] = Some(batch);
                slot
            }
            None => {
                self.batches.push(Some(batch));
                self.batches.len() - 1
            }
        }
    }

    fn batch(&self, slot: usize) -> &Batch {
        self.batches[slot].as_ref().expect("live batch")
    }

    fn batch_mut(&mut self, slot: usize) -> &mut Batch {
        self.batches[slot].as_mut().expect("live batch")
    }

    /// Places `thread`, which is about to work on `fragment` (first sight, a known DF, or a DF
    /// change: see the module documentation). Placing a thread again on the same DF returns its
    /// current placement. O(1) expected, plus O(workers) for a new DF.
    pub fn place(&mut self, thread: ThreadId, fragment: FragmentId) -> FragmentPlacement {
        if let Some(&(slot, _)) = self.thread_batch.get(&thread) {
            let b = self.batch(slot);
            if b.fragment == fragment {
                return FragmentPlacement {
                    worker: b.worker,
                    order: b.order,
                    new_fragment: false,
                };
            }
            self.remove(thread);
        }
        let (slot, new_fragment) = match self.home.get(&fragment) {
            Some(&slot) => (slot, false),
            None => {
                let worker = self.least_loaded();
                let slot = self.new_batch(fragment, worker);
                self.home.insert(fragment, slot);
                (slot, true)
            }
        };
        let b = self.batch_mut(slot);
        b.members.push(thread);
        let (worker, order, pos) = (b.worker, b.order, b.members.len() - 1);
        self.loads[worker] += 1;
        self.thread_batch.insert(thread, (slot, pos));
        FragmentPlacement {
            worker,
            order,
            new_fragment,
        }
    }

    /// The current placement of `thread`, if placed.
    pub fn placement_of(&self, thread: ThreadId) -> Option<FragmentPlacement> {
        let b = self.batch(self.thread_batch.get(&thread)?.0);
        Some(FragmentPlacement {
            worker: b.worker,
            order: b.order,
            new_fragment: false,
        })
    }

    /// Forgets `thread` (it finished, or no longer declares a DF). An emptied batch stays the
    /// DF's home (its data is still cached there) until the next [`FragmentBatcher::rebalance`].
    /// Returns false if it was not placed.
    pub fn remove(&mut self, thread: ThreadId) -> bool {
        let Some((slot, pos)) = self.thread_batch.remove(&thread) else {
            return false;
        };
        let b = self.batch_mut(slot);
        b.members.swap_remove(pos);
        let moved = b.members.get(pos).copied();
        let worker = b.worker;
        if let Some(moved) = moved {
            self.thread_batch.insert(moved, (slot, pos));
        }
        self.loads[worker] -= 1;
        true
    }

    /// The batches on `worker` in run order: `(fragment, threads)`, oldest batch first. Inside a
    /// batch, threads are listed in arrival order until one leaves (removal swaps the last member
    /// into the gap: O(1)); the runtime runs a batch's threads in its own FIFO order anyway.
    pub fn run_order(&self, worker: usize) -> Vec<(FragmentId, Vec<ThreadId>)> {
        let mut batches: Vec<&Batch> = self
            .batches
            .iter()
            .flatten()
            .filter(|b| b.worker == worker && !b.members.is_empty())
            .collect();
        batches.sort_by_key(|b| b.order);
        batches
            .into_iter()
            .map(|b| (b.fragment, b.members.clone()))
            .collect()
    }

    fn spread(&self) -> (usize, usize, usize) {
        let busiest = (0..self.loads.len())
            .max_by_key(|&w| (self.loads[w], std::cmp::Reverse(w)))
            .expect("at least one worker");
        let least = self.least_loaded();
        (busiest, least, self.loads[busiest] - self.loads[least])
    }

    fn drop_empty_batches(&mut self) {
        for slot in 0..self.batches.len() {
            if let Some(b) = &self.batches[slot] {
                if b.members.is_empty() {
                    if self.home.get(&b.fragment) == Some(&slot) {
                        self.home.remove(&b.fragment);
                    }
                    self.batches[slot] = None;
                    self.free_slots.push(slot);
                }
            }
        }
    }

    /// One balancing pass (call it periodically, e.g. when a worker goes idle). Drops empty
    /// batches, then moves whole batches from the busiest to the least-loaded worker while some
    /// batch is smaller than the gap (each such move strictly reduces `Σ load²`). If the spread
    /// still exceeds the threshold, the imbalance counts as sustained; after `sustain`
    /// consecutive such calls the largest batch of the busiest worker is split, half the gap
    /// moving. A batch moves at most once per call. Returns what moved.
    pub fn rebalance(&mut self) -> Vec<BatchMove> {
        self.drop_empty_batches();
        let mut moves = Vec::new();
        // A batch moves at most once per pass (no ping-pong of one batch's data).
        let mut moved = vec![false; self.batches.len()];
        loop {
            let (busiest, least, gap) = self.spread();
            if gap <= self.imbalance_threshold {
                self.imbalance_streak = 0;
                return moves;
            }
            // The whole batch on `busiest` whose size is closest to gap/2 among those < gap.
            let candidate = self
                .batches
                .iter()
                .enumerate()
                .filter_map(|(slot, b)| b.as_ref().map(|b| (slot, b)))
                .filter(|(slot, b)| {
                    !moved[*slot]
                        && b.worker == busiest
                        && !b.members.is_empty()
                        && b.members.len() < gap
                })
                .min_by_key(|(slot, b)| ((2 * b.members.len()).abs_diff(gap), *slot))
                .map(|(slot, _)| slot);
            match candidate {
                Some(slot) => {
                    moved[slot] = true;
                    let b = self.batch_mut(slot);
                    b.worker = least;
                    let threads = b.members.clone();
                    let fragment = b.fragment;
                    self.loads[busiest] -= threads.len();
                    self.loads[least] += threads.len();
                    moves.push(BatchMove {
                        fragment,
                        from: busiest,
                        to: least,
                        threads,
                        split: false,
                    });
                }
                None => break,
            }
        }
        self.imbalance_streak += 1;
        if self.imbalance_streak < self.sustain {
            return moves;
        }
        self.imbalance_streak = 0;
        let (busiest, least, gap) = self.spread();
        let Some(slot) = self
            .batches
            .iter()
            .enumerate()
            .filter_map(|(slot, b)| b.as_ref().map(|b| (slot, b)))
            .filter(|(slot, b)| b.worker == busiest && !moved.get(*slot).copied().unwrap_or(false))
            .max_by_key(|(slot, b)| (b.members.len(), std::cmp::Reverse(*slot)))
            .map(|(slot, _)| slot)
        else {
            return moves;
        };
        let take = (gap / 2).min(self.batch(slot).members.len());
        if take == 0 {
            return moves;
        }
        let b = self.batch_mut(slot);
        let split_off: Vec<ThreadId> = b.members.split_off(b.members.len() - take);
        let fragment = b.fragment;
        let new_slot = self.new_batch(fragment, least);
        // The part that moves is a batch of its own; the DF's home stays where it was.
        self.batch_mut(new_slot).members = split_off.clone();
        for (pos, &t) in split_off.iter().enumerate() {
            self.thread_batch.insert(t, (new_slot, pos));
        }
        self.loads[busiest] -= take;
        self.loads[least] += take;
        moves.push(BatchMove {
            fragment,
            from: busiest,
            to: least,
            threads: split_off,
            split: true,
        });
        moves
    }

    /// Checks the internal invariants (every thread in exactly one batch, loads equal member
    /// counts); for tests.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut counts = vec![0usize; self.loads.len()];
        let mut seen = std::collections::HashSet::new();
        for (slot, b) in self.batches.iter().enumerate() {
            let Some(b) = b else { continue };
            counts[b.worker] += b.members.len();
            for (pos, &t) in b.members.iter().enumerate() {
                if !seen.insert(t) {
                    return Err(format!("thread {t} in two batches"));
                }
                if self.thread_batch.get(&t) != Some(&(slot, pos)) {
                    return Err(format!("thread {t} index points elsewhere"));
                }
            }
        }
        if seen.len() != self.thread_batch.len() {
            return Err("index lists threads that are in no batch".into());
        }
        if counts != self.loads {
            return Err(format!("loads {:?} but members {:?}", self.loads, counts));
        }
        for (&df, &slot) in &self.home {
            match &self.batches[slot] {
                Some(b) if b.fragment == df => {}
                _ => return Err(format!("home of DF {df} is not its batch")),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_fragment_joins_its_batch_and_change_replaces() {
        let mut b = FragmentBatcher::new(2);
        assert!(b.place(1, 100).new_fragment);
        assert!(b.place(2, 200).new_fragment);
        let p = b.place(3, 100);
        assert!(!p.new_fragment);
        assert_eq!(p.worker, 0);
        assert_eq!(b.run_order(0), vec![(100, vec![1, 3])]);
        // Same DF again: no change.
        assert_eq!(b.place(3, 100), b.placement_of(3).unwrap());
        // Thread 3 changes to DF 200: re-placed on worker 1.
        assert_eq!(b.place(3, 200).worker, 1);
        assert_eq!(b.loads(), &[1, 2]);
        assert!(b.remove(1));
        assert!(!b.remove(1));
        // DF 100's empty batch stays home until a rebalance.
        assert_eq!(b.place(4, 100).worker, 0);
        b.check_invariants().unwrap();
    }

    #[test]
    fn rebalance_moves_whole_batches_then_splits_when_sustained() {
        let mut b = FragmentBatcher::with_limits(2, 1, 2);
        // DF 1 with 6 threads on worker 0; DFs 2 and 3 with one thread each on worker 1.
        for t in 0..6 {
            b.place(t, 1);
        }
        b.place(10, 2);
        b.place(11, 3); // new DF → worker 1 (load 1 < 6)
        assert_eq!(b.loads(), &[6, 2]);
        // No whole batch of worker 0 is smaller than the gap 4: first call only counts.
        assert!(b.rebalance().is_empty());
        let moves = b.rebalance();
        assert_eq!(moves.len(), 1);
        assert!(moves[0].split);
        assert_eq!(moves[0].threads.len(), 2);
        assert_eq!(b.loads(), &[4, 4]);
        b.check_invariants().unwrap();
        // A new arrival on DF 1 goes to its home batch, not the split part.
        assert_eq!(b.place(20, 1).worker, 0);
        // Whole-batch move: worker 1 holds DF 2 (1 thread), DF 3 (1) and DF 4 (3); gap 2.
        let mut b = FragmentBatcher::new(2);
        for t in 0..3 {
            b.place(t, 1);
        }
        b.place(3, 2);
        b.place(4, 3);
        b.place(5, 4);
        b.place(6, 4);
        b.place(7, 4);
        assert_eq!(b.loads(), &[3, 5]);
        let moves = b.rebalance();
        assert_eq!(moves.len(), 1);
        assert!(!moves[0].split);
        assert_eq!(moves[0].threads.len(), 1);
        assert_eq!(b.loads(), &[4, 4]);
        b.check_invariants().unwrap();
    }

    #[derive(Clone, Debug)]
    enum Op {
        Place(u64, u64),
        Remove(u64),
        Rebalance,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..40, 0u64..8).prop_map(|(t, d)| Op::Place(t, d)),
            1 => (0u64..40).prop_map(Op::Remove),
            1 => Just(Op::Rebalance),
        ]
    }

    proptest! {
        /// Every thread is placed exactly once and loads match the batches, whatever happens.
        #[test]
        fn every_thread_placed_exactly_once(workers in 1usize..5, ops in proptest::collection::vec(op(), 1..200)) {
            let mut b = FragmentBatcher::new(workers);
            let mut live = std::collections::HashMap::new();
            for op in ops {
                match op {
                    Op::Place(t, d) => {
                        let p = b.place(t, d);
                        prop_assert!(p.worker < workers);
                        live.insert(t, d);
                    }
                    Op::Remove(t) => {
                        prop_assert_eq!(b.remove(t), live.remove(&t).is_some());
                    }
                    Op::Rebalance => { b.rebalance(); }
                }
                b.check_invariants().map_err(TestCaseError::fail)?;
                prop_assert_eq!(b.len(), live.len());
                // A thread sits in a batch of its current DF.
                for (&t, &d) in &live {
                    let w = b.placement_of(t).unwrap().worker;
                    prop_assert!(b.run_order(w).iter().any(|(df, ts)| *df == d && ts.contains(&t)));
                }
            }
        }

        /// Repeated balancing ends balanced, and whole-batch moves never split a batch.
        #[test]
        fn balancing_converges(workers in 2usize..5, threads in proptest::collection::vec(0u64..6, 1..60), sustain in 1u32..4) {
            let mut b = FragmentBatcher::with_limits(workers, 1, sustain);
            // Put everything on worker 0 first: DFs placed while others are loaded elsewhere.
            for (i, &d) in threads.iter().enumerate() {
                b.place(i as u64, d);
            }
            for _ in 0..(threads.len() as u32 + 2) * sustain * 2 {
                for m in b.rebalance() {
                    if !m.split {
                        prop_assert!(m.threads.iter().all(|&t| b.placement_of(t).unwrap().worker == m.to));
                    }
                }
                b.check_invariants().map_err(TestCaseError::fail)?;
            }
            let (min, max) = (b.loads().iter().min().unwrap(), b.loads().iter().max().unwrap());
            prop_assert!(max - min <= 1, "loads {:?}", b.loads());
        }
    }
}
