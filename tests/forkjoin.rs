//! Fork-join programs with known answers, run on 1, 2 and 5 workers (more workers than this
//! machine's 2 cores): fib through `join`, n-queens counts, an irregular UTS-like tree search,
//! deep chains of nested `join`s, `scope` borrowing local data, and many `'static` spawns.
//!
//! Every parallel result is compared with a sequential oracle (and, where one exists, with the
//! published answer). Sizes are scaled down in debug builds so that each test takes seconds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

mod common;
use common::{runtime, WORKER_COUNTS};
use footprint::Runtime;

// ---------------------------------------------------------------------------------------------
// fib

fn fib_join(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = footprint::join(|| fib_join(n - 1), || fib_join(n - 2));
    a + b
}

fn fib_iterative(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

#[test]
fn fib_iterative_oracle_matches_known_values() {
    let known = [0u64, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55];
    for (n, &f) in known.iter().enumerate() {
        assert_eq!(fib_iterative(n as u64), f);
    }
    assert_eq!(fib_iterative(30), 832_040);
}

#[test]
fn fib_with_join_at_every_level_matches_the_iterative_oracle() {
    let n = if cfg!(debug_assertions) { 20 } else { 27 };
    for workers in WORKER_COUNTS {
        let rt = runtime(workers);
        for k in [0, 1, 2, 10, n] {
            let got = rt.block_on(|| fib_join(k));
            assert_eq!(got, fib_iterative(k), "fib({k}) on {workers} workers");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// n-queens

/// Sequential oracle: classic bitmask backtracking.
fn queens_sequential(n: u32, cols: u32, diag_left: u32, diag_right: u32) -> u64 {
    let full = (1u32 << n) - 1;
    if cols == full {
        return 1;
    }
    let mut free = full & !(cols | diag_left | diag_right);
    let mut count = 0;
    while free != 0 {
        let bit = free & free.wrapping_neg();
        free &= free - 1;
        count += queens_sequential(
            n,
            cols | bit,
            ((diag_left | bit) << 1) & full,
            (diag_right | bit) >> 1,
        );
    }
    count
}

/// Parallel: the free squares of a row are split in halves with `join` until one is left, which
/// places a queen and recurses into the next row.
fn queens_join(n: u32, cols: u32, diag_left: u32, diag_right: u32, candidates: u32) -> u64 {
    let full = (1u32 << n) - 1;
    match candidates.count_ones() {
        0 => 0,
        1 => {
            let bit = candidates;
            let (cols, dl, dr) = (
                cols | bit,
                ((diag_left | bit) << 1) & full,
                (diag_right | bit) >> 1,
            );
            if cols == full {
                return 1;
            }
            queens_join(n, cols, dl, dr, full & !(cols | dl | dr))
        }
        ones => {
            // Keep the lowest `ones / 2` candidate bits on the left.
            let mut left = 0u32;
            let mut rest = candidates;
            for _ in 0..ones / 2 {
                let bit = rest & rest.wrapping_neg();
                left |= bit;
                rest &= rest - 1;
            }
            let (a, b) = footprint::join(
                || queens_join(n, cols, diag_left, diag_right, left),
                || queens_join(n, cols, diag_left, diag_right, rest),
            );
            a + b
        }
    }
}

fn queens_parallel(n: u32) -> u64 {
    queens_join(n, 0, 0, 0, (1u32 << n) - 1)
}

#[test]
fn queens_oracle_matches_published_counts() {
    let published = [
        (1, 1),
        (4, 2),
        (6, 4),
        (7, 40),
        (8, 92),
        (9, 352),
        (10, 724),
    ];
    for (n, count) in published {
        assert_eq!(queens_sequential(n, 0, 0, 0), count, "N = {n}");
    }
}

#[test]
fn queens_with_join_matches_oracle_and_published_counts() {
    let published = [(6u32, 4u64), (7, 40), (8, 92), (9, 352), (10, 724)];
    for workers in WORKER_COUNTS {
        let rt = runtime(workers);
        for (n, count) in published {
            let got = rt.block_on(|| queens_parallel(n));
            assert_eq!(got, count, "N = {n} on {workers} workers");
            assert_eq!(got, queens_sequential(n, 0, 0, 0));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Irregular tree search (UTS-like binomial tree)

/// splitmix64: a deterministic hash of a node's id.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A binomial tree in the manner of UTS: the root has `ROOT_CHILDREN` children; every other node
/// has `M` children with probability `Q` (decided by the hash of its id) and none otherwise.
/// `M · Q` just below 1 gives a tree whose size and depth vary wildly between subtrees.
struct Uts {
    root_children: u64,
    m: u64,
    /// Probability `Q` in 1/1000.
    q_per_mille: u64,
}

const UTS: Uts = Uts {
    root_children: 64,
    m: 4,
    q_per_mille: 240,
};

impl Uts {
    fn children(&self, id: u64, depth: u32) -> u64 {
        if depth == 0 {
            self.root_children
        } else if mix(id) % 1000 < self.q_per_mille {
            self.m
        } else {
            0
        }
    }

    fn child_id(id: u64, index: u64) -> u64 {
        mix(id ^ mix(index.wrapping_add(0x5151)))
    }

    /// (nodes, maximum depth) of the subtree at `id`, sequentially.
    fn count_sequential(&self, id: u64, depth: u32) -> (u64, u32) {
        let mut nodes = 1;
        let mut max_depth = depth;
        for i in 0..self.children(id, depth) {
            let (n, d) = self.count_sequential(Self::child_id(id, i), depth + 1);
            nodes += n;
            max_depth = max_depth.max(d);
        }
        (nodes, max_depth)
    }

    /// Children `lo..hi` of `id`, split in halves with `join`.
    fn count_join_range(&self, id: u64, depth: u32, lo: u64, hi: u64) -> (u64, u32) {
        match hi - lo {
            0 => (0, depth),
            1 => self.count_join(Self::child_id(id, lo), depth + 1),
            len => {
                let mid = lo + len / 2;
                let ((n1, d1), (n2, d2)) = footprint::join(
                    || self.count_join_range(id, depth, lo, mid),
                    || self.count_join_range(id, depth, mid, hi),
                );
                (n1 + n2, d1.max(d2))
            }
        }
    }

    fn count_join(&self, id: u64, depth: u32) -> (u64, u32) {
        let (n, d) = self.count_join_range(id, depth, 0, self.children(id, depth));
        (n + 1, d.max(depth))
    }

    /// One scoped green thread per child; the counts go into a shared atomic.
    fn count_scope(&self, id: u64, depth: u32, nodes: &AtomicU64) {
        nodes.fetch_add(1, Ordering::Relaxed);
        let children = self.children(id, depth);
        if children == 0 {
            return;
        }
        footprint::scope(|s| {
            for i in 0..children {
                s.spawn(move || self.count_scope(Self::child_id(id, i), depth + 1, nodes));
            }
        });
    }
}

#[test]
fn irregular_tree_counts_match_the_sequential_count() {
    let root = 1;
    let (nodes, depth) = UTS.count_sequential(root, 0);
    // The tree is fixed by the hash: make sure it is big and irregular enough to be a test.
    assert!(
        nodes > 5_000,
        "tree too small to test anything: {nodes} nodes"
    );
    assert!(
        depth > 100,
        "tree too shallow to test anything: depth {depth}"
    );
    for workers in WORKER_COUNTS {
        let rt = runtime(workers);
        let by_join = rt.block_on(|| UTS.count_join(root, 0));
        assert_eq!(by_join, (nodes, depth), "join count on {workers} workers");
        let counter = AtomicU64::new(0);
        rt.block_on(|| UTS.count_scope(root, 0, &counter));
        assert_eq!(
            counter.load(Ordering::Relaxed),
            nodes,
            "scope count on {workers} workers"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Depth

/// A chain of `depth` nested `join`s; the recursion runs in the left (inline) half.
fn join_chain_left(depth: u32) -> u32 {
    if depth == 0 {
        return 0;
    }
    let (a, b) = footprint::join(|| join_chain_left(depth - 1), || 1);
    a + b
}

/// A chain of `depth` nested `join`s; the recursion runs in the right half, which thieves may take.
fn join_chain_right(depth: u32) -> u32 {
    if depth == 0 {
        return 0;
    }
    let (a, b) = footprint::join(|| 1, || join_chain_right(depth - 1));
    a + b
}

#[test]
fn join_chain_of_depth_1500_fits_the_default_stack() {
    for workers in WORKER_COUNTS {
        let rt = runtime(workers);
        assert_eq!(rt.block_on(|| join_chain_left(1_500)), 1_500);
        assert_eq!(rt.block_on(|| join_chain_right(1_500)), 1_500);
    }
}

#[test]
fn join_chain_of_depth_18000_fits_a_configured_stack() {
    // Debug-build frames of a nested join are a few KiB; 256 MiB of address space is touched
    // only as deep as the chain goes.
    for workers in [1, 2] {
        let rt = Runtime::builder()
            .workers(workers)
            .stack_size(256 << 20)
            .build()
            .expect("a 256 MiB stack is a valid configuration");
        assert_eq!(rt.block_on(|| join_chain_left(18_000)), 18_000);
        assert_eq!(rt.block_on(|| join_chain_right(18_000)), 18_000);
    }
}

// ---------------------------------------------------------------------------------------------
// scope with borrowed data

#[test]
fn scope_borrows_local_data_and_writes_through_mutable_borrows() {
    let data: Vec<u64> = (1..=10_000).collect();
    let expected: u64 = data.iter().sum();
    for workers in WORKER_COUNTS {
        let rt = runtime(workers);
        let mut partial = [0u64; 16];
        let chunk = data.len().div_ceil(partial.len());
        let total = rt.block_on(|| {
            footprint::scope(|s| {
                for (slot, part) in partial.iter_mut().zip(data.chunks(chunk)) {
                    s.spawn(move || *slot = part.iter().sum());
                }
            });
            // The scope has ended: every slot is written.
            partial.iter().sum::<u64>()
        });
        assert_eq!(total, expected, "on {workers} workers");
        assert_eq!(partial.iter().sum::<u64>(), expected);

        // Values come back through the scoped handles too.
        let doubled: u64 = rt.block_on(|| {
            footprint::scope(|s| {
                let handles: Vec<_> = data
                    .chunks(chunk)
                    .map(|part| s.spawn(move || part.iter().map(|x| 2 * x).sum::<u64>()))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("no scoped thread panics"))
                    .sum()
            })
        });
        assert_eq!(doubled, 2 * expected, "on {workers} workers");
    }
}

// ---------------------------------------------------------------------------------------------
// 'static spawns

#[test]
fn many_static_spawns_return_exact_sums() {
    let threads: u64 = if cfg!(debug_assertions) {
        5_000
    } else {
        50_000
    };
    for workers in WORKER_COUNTS {
        let rt = runtime(workers);
        let counter = Arc::new(AtomicU64::new(0));
        let sum = rt.block_on(|| {
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    let counter = Arc::clone(&counter);
                    footprint::spawn(move || {
                        counter.fetch_add(1, Ordering::Relaxed);
                        i
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no spawned thread panics"))
                .sum::<u64>()
        });
        assert_eq!(sum, threads * (threads - 1) / 2, "on {workers} workers");
        assert_eq!(counter.load(Ordering::Relaxed), threads);
    }
}

#[test]
fn spawned_threads_spawn_and_join_their_own_children() {
    // A 3-level, 10-ary tree of spawns (skynet at 1,000 leaves): the leaves return their numbers.
    fn skynet(num: u64, size: u64) -> u64 {
        if size == 1 {
            return num;
        }
        let step = size / 10;
        let handles: Vec<_> = (0..10)
            .map(|i| footprint::spawn(move || skynet(num + i * step, step)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no spawned thread panics"))
            .sum()
    }
    for workers in WORKER_COUNTS {
        let rt = runtime(workers);
        assert_eq!(rt.block_on(|| skynet(0, 1_000)), 999 * 1_000 / 2);
    }
}

#[test]
fn spawn_join_and_scope_work_without_an_explicit_runtime() {
    // Outside any runtime the global runtime is built lazily.
    let h = footprint::spawn(|| fib_iterative(40));
    assert_eq!(h.join().expect("no panic"), 102_334_155);
    assert_eq!(fib_join(15), 610);
    let local = [1u64, 2, 3];
    let r = footprint::scope(|s| s.spawn(|| local.iter().sum::<u64>()).join().unwrap());
    assert_eq!(r, 6);
}

#[test]
fn yield_now_interleaves_green_threads_on_one_worker() {
    // Two green threads on one worker bump a shared counter and yield; each sees the other's
    // progress, which is possible only if yield_now hands the worker over.
    let rt = runtime(1);
    let rounds = 100u64;
    let counter = Arc::new(AtomicU64::new(0));
    let saw_other = rt.block_on(|| {
        let c = Arc::clone(&counter);
        let other = footprint::spawn(move || {
            for _ in 0..rounds {
                c.fetch_add(1, Ordering::SeqCst);
                footprint::yield_now();
            }
        });
        let mut interleaved = 0u64;
        for _ in 0..rounds {
            let before = counter.fetch_add(1, Ordering::SeqCst);
            footprint::yield_now();
            let after = counter.load(Ordering::SeqCst);
            if after > before + 1 {
                interleaved += 1;
            }
        }
        other.join().expect("no panic");
        interleaved
    });
    assert_eq!(counter.load(Ordering::SeqCst), 2 * rounds);
    assert!(
        saw_other > rounds / 2,
        "yield_now rarely let the other green thread run: {saw_other} of {rounds}"
    );
}
