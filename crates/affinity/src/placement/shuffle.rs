//! Thread shuffling (003 ch. 4, Pusukuri): bring threads that contend for locks together.
//!
//! Periodically (003 uses 2 s of monitoring, sampled every 200 ms), if the threads spend more
//! than a threshold of their time in lock operations (003: 5 %), sort them by lock time, cut the
//! sorted list into one group per cache domain, and move threads so that each group shares one
//! domain: threads with similar lock times contend for the same lock, so its transfers stay
//! between neighbours. Moves are pairwise swaps between domains, so every domain keeps its thread
//! count (load balance is untouched); groups are sized to the domains' current counts, and
//! consecutive groups go to consecutive domains (neighbours in the topology order), except that
//! among domains of equal count the groups are assigned to move as few threads as possible.
//!
//! ```
//! use footprint_affinity::placement::shuffle::{plan_shuffle, ShuffleThread};
//! // Two domains; slow (high lock time) and fast threads start interleaved.
//! let threads: Vec<ShuffleThread> = (0..4)
//!     .map(|i| ShuffleThread { id: i, lock_time: if i % 2 == 0 { 0.4 } else { 0.1 }, domain: (i / 2) as usize })
//!     .collect();
//! let plan = plan_shuffle(&threads, 2, 0.05).expect("lock time above 5 %");
//! assert_eq!(plan.swaps.len(), 1);               // one pair swaps domains
//! ```

/// One thread's monitoring record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShuffleThread {
    /// The thread's id (unique).
    pub id: u64,
    /// Fraction of the interval it spent in lock operations, in `[0, 1]` (NaN reads as 0).
    pub lock_time: f64,
    /// The cache domain it runs in now (`0..domains`).
    pub domain: usize,
}

/// What [`plan_shuffle`] decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShufflePlan {
    /// `groups[d]`: the threads that should share domain `d`, in ascending lock time.
    pub groups: Vec<Vec<u64>>,
    /// Pairwise swaps `(a, b)`: exchange the domains of threads `a` and `b`, in this order.
    pub swaps: Vec<(u64, u64)>,
}

/// Default trigger: mean lock time above 5 % of the interval (003 §4.2).
pub const DEFAULT_LOCK_TIME_THRESHOLD: f64 = 0.05;

fn lock_time(t: &ShuffleThread) -> f64 {
    if t.lock_time.is_nan() {
        0.0
    } else {
        t.lock_time.clamp(0.0, 1.0)
    }
}

/// Plans a shuffle of `threads` over `domains` cache domains, or `None` when the mean lock time
/// does not exceed `threshold` (then nothing is worth moving), when there are fewer than two
/// domains, or when a thread names a domain out of range.
pub fn plan_shuffle(
    threads: &[ShuffleThread],
    domains: usize,
    threshold: f64,
) -> Option<ShufflePlan> {
    if domains < 2 || threads.is_empty() || threads.iter().any(|t| t.domain >= domains) {
        return None;
    }
    let mean = threads.iter().map(lock_time).sum::<f64>() / threads.len() as f64;
    if mean.is_nan() || mean <= threshold {
        return None;
    }
    let mut counts = vec![0usize; domains];
    for t in threads {
        counts[t.domain] += 1;
    }
    let mut sorted: Vec<&ShuffleThread> = threads.iter().collect();
    sorted.sort_by(|a, b| lock_time(a).total_cmp(&lock_time(b)).then(a.id.cmp(&b.id)));

    // Chunk c (the c-th lowest lock times) has size counts[c]; it goes to domain c unless a
    // domain of the same count overlaps it more (greedy, by descending overlap).
    let mut chunks: Vec<Vec<&ShuffleThread>> = Vec::with_capacity(domains);
    let mut rest = sorted.as_slice();
    for &c in &counts {
        let (chunk, tail) = rest.split_at(c);
        chunks.push(chunk.to_vec());
        rest = tail;
    }
    let mut assignment: Vec<Option<usize>> = vec![None; domains]; // chunk → domain
    let mut taken = vec![false; domains];
    let mut pairs: Vec<(usize, usize, usize)> = Vec::new(); // (overlap, chunk, domain)
    for (c, chunk) in chunks.iter().enumerate() {
        for d in 0..domains {
            if counts[d] == counts[c] {
                let overlap = chunk.iter().filter(|t| t.domain == d).count();
                pairs.push((overlap, c, d));
            }
        }
    }
    // Highest overlap first; ties: chunk c to domain c, then lowest indices.
    pairs.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then((a.1 != a.2).cmp(&(b.1 != b.2)))
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    for (_, c, d) in pairs {
        if assignment[c].is_none() && !taken[d] {
            assignment[c] = Some(d);
            taken[d] = true;
        }
    }
    let mut groups = vec![Vec::new(); domains];
    let mut target = std::collections::HashMap::new();
    for (c, chunk) in chunks.iter().enumerate() {
        let d = assignment[c].expect("every chunk has a domain of its size");
        for t in chunk {
            groups[d].push(t.id);
            target.insert(t.id, d);
        }
    }

    // Pairwise swaps. bucket[a][b]: threads in domain a that belong in b (a ≠ b), ascending id
    // (popped from the back, so reversed). First swap direct pairs (a→b with b→a: each swap
    // fixes two threads); what is left forms longer cycles: swap a→b's thread with any misplaced
    // thread of b, which fixes one and leaves the other in a, re-bucketed. O(n log n + D²·swaps).
    let mut bucket: Vec<Vec<Vec<u64>>> = vec![vec![Vec::new(); domains]; domains];
    let mut by_id: Vec<&ShuffleThread> = threads.iter().collect();
    by_id.sort_by_key(|t| std::cmp::Reverse(t.id));
    for t in by_id {
        let want = target[&t.id];
        if want != t.domain {
            bucket[t.domain][want].push(t.id);
        }
    }
    let mut swaps = Vec::new();
    let pairs = (0..domains).flat_map(|a| (a + 1..domains).map(move |b| (a, b)));
    for (a, b) in pairs {
        while !bucket[a][b].is_empty() && !bucket[b][a].is_empty() {
            let x = bucket[a][b].pop().expect("non-empty");
            let y = bucket[b][a].pop().expect("non-empty");
            swaps.push((x, y));
        }
    }
    while let Some((a, b)) = (0..domains)
        .flat_map(|a| (0..domains).map(move |b| (a, b)))
        .find(|&(a, b)| !bucket[a][b].is_empty())
    {
        let x = bucket[a][b].pop().expect("non-empty");
        // Domain b must lose as many threads as it gains, so it holds a misplaced one.
        let c = (0..domains)
            .find(|&c| !bucket[b][c].is_empty())
            .expect("a domain that gains a thread has one to give");
        let y = bucket[b][c].pop().expect("non-empty");
        swaps.push((x, y));
        // x is home; y now sits in a.
        if c != a {
            bucket[a][c].push(y);
        }
    }
    Some(ShufflePlan { groups, swaps })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn figure_4_4_groups_slow_and_fast_threads() {
        // 003 Fig. 4.4 in small: 16 threads, 4 domains, slow (S) and fast (F) threads start
        // spread evenly; after shuffling the S threads fill two domains and the F threads two.
        let threads: Vec<ShuffleThread> = (0..16)
            .map(|i| ShuffleThread {
                id: i,
                lock_time: if i % 2 == 0 {
                    0.30 + i as f64 * 1e-3
                } else {
                    0.05 + i as f64 * 1e-3
                },
                domain: (i % 4) as usize,
            })
            .collect();
        let plan = plan_shuffle(&threads, 4, DEFAULT_LOCK_TIME_THRESHOLD).unwrap();
        let slow = |id: u64| id.is_multiple_of(2);
        for g in &plan.groups {
            assert_eq!(g.len(), 4);
            assert!(
                g.iter().all(|&t| slow(t)) || g.iter().all(|&t| !slow(t)),
                "{g:?}"
            );
        }
        assert!(!plan.swaps.is_empty());
    }

    #[test]
    fn below_threshold_or_degenerate_does_nothing() {
        let t = |id, lock_time, domain| ShuffleThread {
            id,
            lock_time,
            domain,
        };
        assert_eq!(plan_shuffle(&[t(0, 0.01, 0), t(1, 0.02, 1)], 2, 0.05), None);
        assert_eq!(plan_shuffle(&[t(0, 0.5, 0), t(1, 0.5, 0)], 1, 0.05), None);
        assert_eq!(plan_shuffle(&[t(0, 0.5, 3)], 2, 0.05), None);
        assert_eq!(plan_shuffle(&[], 2, 0.05), None);
        // Already grouped: a plan with no swaps.
        let plan = plan_shuffle(&[t(0, 0.1, 0), t(1, 0.9, 1)], 2, 0.05).unwrap();
        assert!(plan.swaps.is_empty());
    }

    fn threads_strategy() -> impl Strategy<Value = (usize, Vec<ShuffleThread>)> {
        (2usize..6).prop_flat_map(|domains| {
            proptest::collection::vec((0.0f64..1.0, 0..domains), 1..48).prop_map(move |v| {
                let threads = v
                    .into_iter()
                    .enumerate()
                    .map(|(i, (lock_time, domain))| ShuffleThread {
                        id: i as u64 * 7 + 3,
                        lock_time,
                        domain,
                    })
                    .collect();
                (domains, threads)
            })
        })
    }

    proptest! {
        #[test]
        fn shuffle_invariants((domains, threads) in threads_strategy()) {
            let Some(plan) = plan_shuffle(&threads, domains, 0.0) else {
                // Only when every lock time is 0.
                prop_assert!(threads.iter().all(|t| t.lock_time == 0.0));
                return Ok(());
            };
            let mut counts = vec![0usize; domains];
            for t in &threads { counts[t.domain] += 1; }
            // Every thread in exactly one group; groups never exceed their domain's share (its
            // current thread count, which the swaps keep).
            let mut all: Vec<u64> = plan.groups.concat();
            all.sort_unstable();
            let mut ids: Vec<u64> = threads.iter().map(|t| t.id).collect();
            ids.sort_unstable();
            prop_assert_eq!(all, ids);
            for (group, count) in plan.groups.iter().zip(&counts) { prop_assert_eq!(group.len(), *count); }
            // Groups are contiguous in lock time.
            let lt: std::collections::HashMap<u64, f64> = threads.iter().map(|t| (t.id, t.lock_time)).collect();
            let mut ranges: Vec<(f64, f64)> = plan.groups.iter().filter(|g| !g.is_empty())
                .map(|g| (g.iter().map(|t| lt[t]).fold(f64::INFINITY, f64::min), g.iter().map(|t| lt[t]).fold(0.0, f64::max)))
                .collect();
            ranges.sort_by(|a, b| a.0.total_cmp(&b.0));
            for w in ranges.windows(2) { prop_assert!(w[0].1 <= w[1].0); }
            // Applying the swaps puts every thread in its group's domain, keeps counts, and
            // each swap crosses domains.
            let mut at: std::collections::HashMap<u64, usize> = threads.iter().map(|t| (t.id, t.domain)).collect();
            for &(a, b) in &plan.swaps {
                let (da, db) = (at[&a], at[&b]);
                prop_assert!(da != db);
                at.insert(a, db);
                at.insert(b, da);
            }
            for (d, g) in plan.groups.iter().enumerate() {
                for t in g { prop_assert_eq!(at[t], d); }
            }
            // No more swaps than misplaced threads.
            let misplaced = plan.groups.iter().enumerate()
                .map(|(d, g)| g.iter().filter(|t| threads.iter().find(|x| x.id == **t).unwrap().domain != d).count())
                .sum::<usize>();
            prop_assert!(plan.swaps.len() <= misplaced);
        }
    }
}
