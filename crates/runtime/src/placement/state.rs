//! The runtime-wide placement state: the data-fragment batcher (001) and the
//! counters behind [`PlacementStats`]. Plain data; the decisions that use it live in
//! `placement/mod.rs`.

use super::shuffle::ShuffleState;
use footprint_affinity::placement::fragments::FragmentBatcher;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// One runtime's placement state (in its `Shared`).
pub(crate) struct PlacementState {
    /// 001's batcher: which worker each fragment's batch lives on, and the batch's ready key.
    /// Locked only for threads that carry a fragment hint (spawn, wake-up, change, finish).
    pub(crate) batcher: Mutex<FragmentBatcher>,
    pub(crate) counters: PlacementCounters,
    /// Present when the runtime shuffles threads (003).
    pub(crate) shuffle: Option<ShuffleState>,
}

impl PlacementState {
    pub(crate) fn new(workers: usize, shuffle: Option<ShuffleState>) -> PlacementState {
        PlacementState {
            batcher: Mutex::new(FragmentBatcher::new(workers.max(1))),
            counters: PlacementCounters::default(),
            shuffle,
        }
    }

    pub(crate) fn stats(&self) -> PlacementStats {
        let mut s = self.counters.snapshot();
        if let Some(sh) = &self.shuffle {
            s.last_shuffle = sh.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        }
        s
    }

    pub(crate) fn batcher(&self) -> std::sync::MutexGuard<'_, FragmentBatcher> {
        self.batcher.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Counters of placement decisions (relaxed; touched only on hinted paths and by shuffling).
#[derive(Default)]
pub(crate) struct PlacementCounters {
    pub(crate) fragment_placements: AtomicU64,
    pub(crate) fragment_batches: AtomicU64,
    pub(crate) fragment_moves: AtomicU64,
    pub(crate) partner_placements: AtomicU64,
    pub(crate) rival_placements: AtomicU64,
    pub(crate) finished_hint_ignored: AtomicU64,
    pub(crate) migrations: AtomicU64,
    pub(crate) shuffle_rounds: AtomicU64,
    pub(crate) shuffle_decisions: AtomicU64,
    pub(crate) shuffle_swaps: AtomicU64,
}

impl PlacementCounters {
    pub(crate) fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> PlacementStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        PlacementStats {
            fragment_placements: r(&self.fragment_placements),
            fragment_batches: r(&self.fragment_batches),
            fragment_moves: r(&self.fragment_moves),
            partner_placements: r(&self.partner_placements),
            rival_placements: r(&self.rival_placements),
            finished_hint_ignored: r(&self.finished_hint_ignored),
            migrations: r(&self.migrations),
            shuffle_rounds: r(&self.shuffle_rounds),
            shuffle_decisions: r(&self.shuffle_decisions),
            shuffle_swaps: r(&self.shuffle_swaps),
            last_shuffle: None,
        }
    }
}

/// What the placement rules did so far (see [`Runtime::placement_stats`](crate::Runtime::placement_stats)).
///
/// ```
/// let rt = footprint::Runtime::builder().workers(2).build().unwrap();
/// let h = rt.block_on(|| {
///     footprint::GreenBuilder::new().fragment(7, 64 << 10).spawn(|| 1).unwrap()
/// });
/// assert_eq!(h.join().unwrap(), 1);
/// let s = rt.placement_stats();
/// assert_eq!(s.fragment_placements, 1);
/// println!("{s}"); // a readable table
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlacementStats {
    /// Threads placed by a fragment hint (at spawn or by `set_fragment`).
    pub fragment_placements: u64,
    /// Fragments seen for the first time (a new batch was opened on the least-loaded worker).
    pub fragment_batches: u64,
    /// `set_fragment` calls that moved the calling thread to its new fragment's worker.
    pub fragment_moves: u64,
    /// Placements on a partner's worker.
    pub partner_placements: u64,
    /// Placements away from a rival's worker.
    pub rival_placements: u64,
    /// Partner or rival hints ignored because that thread had finished (documented: the hint
    /// is dropped, the thread is placed by the plain rules).
    pub finished_hint_ignored: u64,
    /// Moves of a running thread to another worker (`migrate_to`, `set_fragment`, shuffling).
    pub migrations: u64,
    /// Shuffling periods evaluated (003: one per monitoring interval).
    pub shuffle_rounds: u64,
    /// Periods whose mean lock time exceeded the threshold and that regrouped threads.
    pub shuffle_decisions: u64,
    /// Pairwise swaps ordered by those decisions.
    pub shuffle_swaps: u64,
    /// The last shuffling decision, if any: `groups[d]` lists the green threads (their ids,
    /// from [`current_thread_id`](crate::current_thread_id)) grouped on cache domain `d`.
    pub last_shuffle: Option<Vec<Vec<u64>>>,
}

impl fmt::Display for PlacementStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows: [(&str, u64); 10] = [
            ("fragment placements", self.fragment_placements),
            ("fragment batches opened", self.fragment_batches),
            ("fragment moves", self.fragment_moves),
            ("partner placements", self.partner_placements),
            ("rival placements", self.rival_placements),
            ("finished partner/rival ignored", self.finished_hint_ignored),
            ("migrations", self.migrations),
            ("shuffle rounds", self.shuffle_rounds),
            ("shuffle decisions", self.shuffle_decisions),
            ("shuffle swaps", self.shuffle_swaps),
        ];
        writeln!(f, "{:<32} {:>12}", "placement", "count")?;
        for (name, v) in rows {
            writeln!(f, "{name:<32} {v:>12}")?;
        }
        if let Some(g) = &self.last_shuffle {
            writeln!(f, "last shuffle groups (per cache domain): {g:?}")?;
        }
        Ok(())
    }
}
