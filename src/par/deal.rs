//! Dealing a loop's items to participants: per-worker lists of chunks (`Static`, `Affinity`), a
//! shared counter (`Dynamic`) and a shrinking take (`Guided`).

use super::affinity::{Affinity, LoopKey, RunRecord};
use super::ends::Ends;
use super::schedule::Schedule;
use crossbeam_utils::CachePadded;
use footprint_runtime::park::current_worker;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Chunks per worker under `Affinity`: enough to balance by stealing whole chunks, few enough
/// that each is a long contiguous run.
pub(crate) const AFFINITY_CHUNKS_PER_WORKER: usize = 16;

/// One take of a participant: items `items`.
pub(crate) struct Claim {
    pub(crate) items: Range<usize>,
}

/// The dealing state of one loop run.
// One per running loop, on the caller's stack: the inline list ends save an allocation per loop.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Deal {
    Lists(Lists),
    Dynamic {
        next: CachePadded<AtomicUsize>,
        items: usize,
        take: usize,
    },
    Guided {
        next: CachePadded<AtomicUsize>,
        items: usize,
        min_take: usize,
        workers: usize,
    },
}

/// Per-worker lists of chunks. Chunk `c` covers items `c * items / chunks ..
/// (c + 1) * items / chunks`. The lists are consecutive stretches of `order`; each has a packed
/// (front, back) cursor: its worker takes from the front, thieves from the back, so every chunk
/// is taken exactly once (one compare-and-swap decides each take).
pub(crate) struct Lists {
    items: usize,
    chunks: usize,
    /// The chunks in list order; `None` when that is chunk order (contiguous blocks).
    order: Option<Box<[u32]>>,
    ends: ListEnds,
    /// The worker that took each chunk (written by its taker, read after the run); empty when
    /// nobody will read it.
    ran_on: Box<[AtomicU32]>,
    stolen: AtomicU64,
    /// `Some` under `Affinity`: the handle, the run's shape, whether it replays a memory.
    affinity: Option<(Affinity, LoopKey, bool)>,
}

/// Lists per runtime worker count up to which their ends live inline (no allocation per loop).
const INLINE_LISTS: usize = 4;

/// The ends of every list, each on its own cache line.
#[allow(clippy::large_enum_variant)] // inline is the point (see Deal)
enum ListEnds {
    Inline([CachePadded<Ends>; INLINE_LISTS], usize),
    Boxed(Box<[CachePadded<Ends>]>),
}

impl ListEnds {
    fn new(lists: usize, ends: impl Fn(usize) -> Ends) -> ListEnds {
        if lists <= INLINE_LISTS {
            let all = std::array::from_fn(|l| {
                CachePadded::new(if l < lists { ends(l) } else { Ends::new(0, 0) })
            });
            ListEnds::Inline(all, lists)
        } else {
            ListEnds::Boxed((0..lists).map(|l| CachePadded::new(ends(l))).collect())
        }
    }
}

impl std::ops::Deref for ListEnds {
    type Target = [CachePadded<Ends>];
    fn deref(&self) -> &[CachePadded<Ends>] {
        match self {
            ListEnds::Inline(all, lists) => &all[..*lists],
            ListEnds::Boxed(all) => all,
        }
    }
}

impl Deal {
    /// The deal of `items` items to the `workers` workers of the current runtime by `schedule`
    /// (already checked). `items` > 0.
    pub(crate) fn new(items: usize, schedule: &Schedule, workers: usize) -> Deal {
        let workers = workers.max(1);
        match schedule {
            Schedule::Static => {
                Deal::Lists(Lists::new(items, items.min(workers), workers, None, false))
            }
            Schedule::Dynamic(take) => Deal::Dynamic {
                next: CachePadded::new(AtomicUsize::new(0)),
                items,
                take: *take,
            },
            Schedule::Guided(min_take) => Deal::Guided {
                next: CachePadded::new(AtomicUsize::new(0)),
                items,
                min_take: *min_take,
                workers,
            },
            Schedule::Affinity(handle) => {
                let chunks = items.min(workers.saturating_mul(AFFINITY_CHUNKS_PER_WORKER));
                if handle.is_private() {
                    // Nobody else holds the handle (a default schedule): nothing to replay and
                    // nobody to tell, so deal contiguous blocks without recording.
                    return Deal::Lists(Lists::new(items, chunks, workers, None, false));
                }
                let key = LoopKey {
                    runtime: footprint_runtime::current_runtime_id(),
                    workers,
                    items,
                    chunks,
                };
                let plan = handle.plan(key);
                let mut lists = Lists::new(items, chunks, workers, plan.as_deref(), true);
                lists.affinity = Some((handle.clone(), key, plan.is_some()));
                Deal::Lists(lists)
            }
        }
    }

    /// How many participants can have work at once.
    pub(crate) fn participants(&self, workers: usize) -> usize {
        let most = match self {
            Deal::Lists(l) => l.chunks,
            Deal::Dynamic { items, take, .. } => items.div_ceil(*take),
            Deal::Guided {
                items, min_take, ..
            } => items.div_ceil(*min_take),
        };
        most.min(workers).max(1)
    }

    /// The next take of the calling participant, or `None` when every item is taken. `worker`
    /// caches the participant's worker: read on its first take, and on every take when the
    /// run is recorded (a body that blocked may have resumed on another worker).
    pub(crate) fn next(&self, worker: &mut Option<usize>) -> Option<Claim> {
        match self {
            Deal::Lists(l) => {
                let w = match *worker {
                    Some(w) if l.ran_on.is_empty() => w,
                    _ => *worker.insert(current_worker().unwrap_or(0)),
                };
                l.next(w)
            }
            Deal::Dynamic { next, items, take } => {
                // Stop counting once past the end, so the counter cannot wrap.
                if next.load(Ordering::Relaxed) >= *items {
                    return None;
                }
                let start = next.fetch_add(*take, Ordering::Relaxed);
                (start < *items).then(|| Claim {
                    items: start..(*items).min(start.saturating_add(*take)),
                })
            }
            Deal::Guided {
                next,
                items,
                min_take,
                workers,
            } => {
                let mut start = next.load(Ordering::Relaxed);
                loop {
                    if start >= *items {
                        return None;
                    }
                    let left = items - start;
                    let take = left.div_ceil(*workers).max(*min_take).min(left);
                    match next.compare_exchange_weak(
                        start,
                        start + take,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => {
                            return Some(Claim {
                                items: start..start + take,
                            })
                        }
                        Err(now) => start = now,
                    }
                }
            }
        }
    }

    /// After a run that finished without a panic: the `Affinity` handle learns where each chunk
    /// ran.
    pub(crate) fn finish(self) {
        if let Deal::Lists(l) = self {
            l.finish()
        }
    }
}

impl Lists {
    /// `chunks` chunks on the lists of `workers` workers: chunk `c` on list `plan[c]`, or in
    /// contiguous blocks without a plan (list `w` holds chunks from `ceil(w * chunks /
    /// workers)` on, chunk `c` is on list `c * workers / chunks`). `record`: keep the worker
    /// that took each chunk.
    fn new(
        items: usize,
        chunks: usize,
        workers: usize,
        plan: Option<&[u32]>,
        record: bool,
    ) -> Lists {
        let (order, ends) = match plan {
            None => {
                let first = |w: usize| (w * chunks).div_ceil(workers) as u32;
                let ends = ListEnds::new(workers, |w| Ends::new(first(w), first(w + 1)));
                (None, ends)
            }
            Some(plan) => {
                let mut count = vec![0u32; workers];
                for &w in plan {
                    count[w as usize] += 1;
                }
                let mut fill = Vec::with_capacity(workers);
                let mut at = 0u32;
                for &n in &count {
                    fill.push(at);
                    at += n;
                }
                let ends = ListEnds::new(workers, |w| Ends::new(fill[w], fill[w] + count[w]));
                let mut order = vec![0u32; chunks].into_boxed_slice();
                for (c, &w) in plan.iter().enumerate() {
                    order[fill[w as usize] as usize] = c as u32;
                    fill[w as usize] += 1;
                }
                (Some(order), ends)
            }
        };
        Lists {
            items,
            chunks,
            order,
            ends,
            ran_on: if record {
                (0..chunks).map(|_| AtomicU32::new(0)).collect()
            } else {
                Box::new([])
            },
            stolen: AtomicU64::new(0),
            affinity: None,
        }
    }

    /// The chunk at place `at` of the lists.
    fn chunk_at(&self, at: u32) -> usize {
        match &self.order {
            Some(order) => order[at as usize] as usize,
            None => at as usize,
        }
    }

    fn chunk_items(&self, c: usize) -> Range<usize> {
        let at = |c: usize| (c as u128 * self.items as u128 / self.chunks as u128) as usize;
        at(c)..at(c + 1)
    }

    fn next(&self, worker: usize) -> Option<Claim> {
        let own = worker % self.ends.len();
        let c = self.take_front(own).or_else(|| {
            let c = self.steal()?;
            self.stolen.fetch_add(1, Ordering::Relaxed);
            Some(c)
        })?;
        if let Some(slot) = self.ran_on.get(c) {
            slot.store(own as u32, Ordering::Relaxed);
        }
        Some(Claim {
            items: self.chunk_items(c),
        })
    }

    fn take_front(&self, list: usize) -> Option<usize> {
        self.ends[list].take_front().map(|at| self.chunk_at(at))
    }

    /// Takes the last chunk of the longest list, or `None` when all are empty.
    fn steal(&self) -> Option<usize> {
        loop {
            let (list, seen) = self
                .ends
                .iter()
                .map(|e| e.seen())
                .enumerate()
                .filter(|(_, seen)| seen.left() > 0)
                .max_by_key(|(l, seen)| (seen.left(), std::cmp::Reverse(*l)))?;
            if let Some(at) = self.ends[list].take_back(seen) {
                return Some(self.chunk_at(at));
            }
        }
    }

    fn finish(self) {
        let Some((handle, key, replayed)) = self.affinity else {
            return;
        };
        let worker_of = self
            .ran_on
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect();
        handle.commit(
            key,
            RunRecord {
                worker_of,
                stolen: self.stolen.load(Ordering::Relaxed),
                replayed,
            },
        );
    }
}
