//! `par_sort*` against the standard library's sorts: random, sorted, reversed and
//! many-duplicates inputs, stability, panicking comparisons; on 1, 2 and 5 workers.

mod common;

use common::{runtime, WORKER_COUNTS};
use footprint::par::prelude::*;
use footprint::Runtime;
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

fn rt(i: usize) -> &'static Runtime {
    static RTS: OnceLock<Vec<Runtime>> = OnceLock::new();
    &RTS.get_or_init(|| WORKER_COUNTS.iter().map(|&w| runtime(w)).collect())[i]
}

/// An input of `len` values shaped as `shape` says: 0 random, 1 sorted, 2 reversed, 3 many
/// duplicates, 4 sorted with a few swaps.
fn input(shape: u8, len: usize, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut v: Vec<u64> = (0..len as u64).collect();
    match shape {
        0 => v.iter_mut().for_each(|e| *e = next()),
        1 => {}
        2 => v.reverse(),
        3 => v.iter_mut().for_each(|e| *e = next() % 4),
        _ => {
            for _ in 0..len / 100 + 1 {
                if len > 1 {
                    let (a, b) = (next() as usize % len, next() as usize % len);
                    v.swap(a, b);
                }
            }
        }
    }
    v
}

fn check_all_sorts(v: &[u64]) {
    let mut expect = v.to_vec();
    expect.sort();
    let mut a = v.to_vec();
    a.par_sort();
    assert_eq!(a, expect, "par_sort");
    let mut a = v.to_vec();
    a.par_sort_unstable();
    assert_eq!(a, expect, "par_sort_unstable");
    let mut a = v.to_vec();
    a.par_sort_by(|x, y| y.cmp(x));
    assert_eq!(
        a,
        expect.iter().rev().copied().collect::<Vec<_>>(),
        "par_sort_by"
    );
    let mut a = v.to_vec();
    a.par_sort_unstable_by(|x, y| y.cmp(x));
    assert_eq!(
        a,
        expect.iter().rev().copied().collect::<Vec<_>>(),
        "par_sort_unstable_by"
    );
    let mut a = v.to_vec();
    a.par_sort_unstable_by_key(|x| u64::MAX - x);
    assert_eq!(
        a,
        expect.iter().rev().copied().collect::<Vec<_>>(),
        "par_sort_unstable_by_key"
    );
    // Stability: sort (key, position) pairs by key only; equal keys keep their positions' order.
    let mut pairs: Vec<(u64, usize)> = v.iter().map(|x| x % 16).zip(0..).collect();
    let mut seq = pairs.clone();
    seq.sort_by_key(|p| p.0);
    pairs.par_sort_by_key(|p| p.0);
    assert_eq!(pairs, seq, "par_sort_by_key is stable");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn par_sorts_match_std_sorts(
        rt_i in 0..WORKER_COUNTS.len(), shape in 0u8..5, len in 0usize..40_000, seed: u64,
    ) {
        let v = input(shape, len, seed);
        rt(rt_i).block_on(|| check_all_sorts(&v));
    }
}

#[test]
fn par_sorts_match_std_sorts_at_the_parallel_threshold_and_outside_a_runtime() {
    for len in [0, 1, 2, 8191, 8192, 8193, 16_385, 100_001] {
        for shape in 0..5 {
            let v = input(shape, len, 0x9e37_79b9 + len as u64);
            rt(2).block_on(|| check_all_sorts(&v));
            check_all_sorts(&v);
        }
    }
}

/// 10^7 elements of every shape (release builds: `cargo test --release --test par_sort --
/// --ignored`).
#[test]
#[ignore = "large: run with --release -- --ignored"]
fn par_sorts_match_std_sorts_on_ten_million_elements() {
    for shape in 0..5 {
        let v = input(shape, 10_000_000, 42 + u64::from(shape));
        rt(1).block_on(|| check_all_sorts(&v));
    }
}

/// Counts the drops of its values.
struct Counted<'a>(u64, &'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_panicking_comparison_leaves_every_element_exactly_once_and_reaches_the_caller() {
    for (rt_i, stable) in [(0, true), (1, true), (2, false), (1, false)] {
        let drops = AtomicUsize::new(0);
        let n = 50_000;
        let mut v: Vec<Counted> = input(0, n, 7)
            .into_iter()
            .map(|x| Counted(x, &drops))
            .collect();
        let mut before: Vec<u64> = v.iter().map(|c| c.0).collect();
        let calls = AtomicUsize::new(0);
        let r = rt(rt_i).block_on(|| {
            catch_unwind(AssertUnwindSafe(|| {
                let cmp = |a: &Counted, b: &Counted| {
                    if calls.fetch_add(1, Ordering::Relaxed) == 300_000 {
                        panic!("comparison failed");
                    }
                    a.0.cmp(&b.0)
                };
                if stable {
                    v.par_sort_by(cmp)
                } else {
                    v.par_sort_unstable_by(cmp)
                }
            }))
        });
        let msg = r.expect_err("the panic reaches the caller");
        assert_eq!(msg.downcast_ref::<&str>(), Some(&"comparison failed"));
        let mut after: Vec<u64> = v.iter().map(|c| c.0).collect();
        before.sort();
        after.sort();
        assert_eq!(after, before, "still a permutation of the input");
        assert_eq!(drops.load(Ordering::Relaxed), 0, "nothing dropped yet");
        drop(v);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            n,
            "each element dropped once"
        );
    }
}
