//! Every schedule and every prelude adaptor against the sequential loop: each index exactly
//! once, sums exact, order kept by `collect`, on 1, 2 and 5 workers.

mod common;

use common::{runtime, WORKER_COUNTS};
use footprint::par::{self, prelude::*, Affinity, Schedule};
use footprint::Runtime;
use proptest::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// One runtime per worker count, shared by all cases (building one per case would dominate).
fn rt(i: usize) -> &'static Runtime {
    static RTS: OnceLock<Vec<Runtime>> = OnceLock::new();
    &RTS.get_or_init(|| WORKER_COUNTS.iter().map(|&w| runtime(w)).collect())[i]
}

fn schedule() -> impl Strategy<Value = Schedule> {
    prop_oneof![
        Just(Schedule::Static),
        (1usize..40).prop_map(Schedule::Dynamic),
        (1usize..40).prop_map(Schedule::Guided),
        Just(Schedule::default()),
        Just(Schedule::Affinity(Affinity::new())),
    ]
}

/// Counts how often each index of `start..start + len` ran.
fn hits(len: usize) -> Vec<AtomicU32> {
    (0..len).map(|_| AtomicU32::new(0)).collect()
}

fn assert_once(h: &[AtomicU32]) {
    for (i, c) in h.iter().enumerate() {
        assert_eq!(
            c.load(Ordering::Relaxed),
            1,
            "index {i} ran a wrong number of times"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn for_each_runs_each_index_once(
        rt_i in 0..WORKER_COUNTS.len(), start in 0usize..1000, len in 0usize..3000,
        s in schedule(), reuse in 1usize..3,
    ) {
        let h = hits(len);
        rt(rt_i).block_on(|| {
            for _ in 0..reuse {
                par::for_each(start..start + len, s.clone(), |i| {
                    h[i - start].fetch_add(1, Ordering::Relaxed);
                });
                assert_once(&h);
                h.iter().for_each(|c| c.store(0, Ordering::Relaxed));
            }
        });
    }

    #[test]
    fn for_each_chunk_mut_covers_each_element_once(
        rt_i in 0..WORKER_COUNTS.len(), len in 0usize..3000, chunk in 1usize..300, s in schedule(),
    ) {
        let mut v = vec![0u32; len];
        let mut seen_chunks = vec![0u32; len.div_ceil(chunk)];
        let raw_seen: Vec<AtomicU32> = seen_chunks.iter().map(|_| AtomicU32::new(0)).collect();
        rt(rt_i).block_on(|| {
            par::for_each_chunk_mut(&mut v, chunk, s, |c, part| {
                raw_seen[c].fetch_add(1, Ordering::Relaxed);
                assert_eq!(part.len(), chunk.min(len - c * chunk), "chunk {c} has a wrong length");
                for (k, x) in part.iter_mut().enumerate() {
                    *x += (c * chunk + k) as u32 + 1;
                }
            })
        });
        for (a, b) in seen_chunks.iter_mut().zip(&raw_seen) {
            *a = b.load(Ordering::Relaxed);
        }
        prop_assert!(seen_chunks.iter().all(|&n| n == 1), "chunk counts {:?}", seen_chunks);
        prop_assert_eq!(v, (1..=len as u32).collect::<Vec<_>>());
    }

    #[test]
    fn map_reduce_matches_the_sequential_fold(
        rt_i in 0..WORKER_COUNTS.len(), start in 0usize..100, len in 0usize..3000,
        s in schedule(),
    ) {
        let r = start..start + len;
        let sum = rt(rt_i).block_on(|| {
            par::map_reduce(r.clone(), s.clone(), |i| (i as u64) * 3 + 1, || 0u64, |a, b| a + b)
        });
        prop_assert_eq!(sum, r.clone().map(|i| (i as u64) * 3 + 1).sum::<u64>());
        // Not commutative: concatenation keeps index order only if reduced in order.
        let cat = rt(rt_i).block_on(|| {
            par::map_reduce(r.clone(), s, |i| vec![i], Vec::new, |mut a, mut b| {
                a.append(&mut b);
                a
            })
        });
        prop_assert_eq!(cat, r.collect::<Vec<_>>());
    }

    #[test]
    fn adaptors_match_the_sequential_iterators(
        rt_i in 0..WORKER_COUNTS.len(), v in proptest::collection::vec(0u32..50, 0..2000),
        s in schedule(),
    ) {
        let seq_map: Vec<u64> = v.iter().map(|&x| u64::from(x) * 7).collect();
        let seq_filter: Vec<u32> = v.iter().copied().filter(|x| x % 3 == 0).collect();
        let seq_enum: Vec<(usize, u32)> = v.iter().copied().enumerate().collect();
        let w: Vec<u32> = v.iter().rev().copied().collect();
        let seq_zip: Vec<u32> = v.iter().zip(&w).map(|(a, b)| a * 100 + b).collect();
        // std: min_by_key keeps the first of equal keys, max_by_key the last.
        let seq_min = v.iter().enumerate().min_by_key(|(_, x)| **x);
        let seq_max = v.iter().enumerate().max_by_key(|(_, x)| **x);
        let rt = rt(rt_i);
        let mut v2 = v.clone();
        rt.block_on(|| {
            let sc = || s.clone();
            assert_eq!(
                v.par_iter().with_schedule(sc()).map(|&x| u64::from(x) * 7).collect::<Vec<_>>(),
                seq_map
            );
            assert_eq!(v.par_iter().with_schedule(sc()).map(|&x| u64::from(x)).sum::<u64>(),
                v.iter().map(|&x| u64::from(x)).sum::<u64>());
            assert_eq!(
                v.par_iter().with_schedule(sc()).copied().filter(|x| x % 3 == 0)
                    .collect::<Vec<_>>(),
                seq_filter
            );
            assert_eq!(
                v.par_iter().with_schedule(sc()).copied().enumerate().collect::<Vec<_>>(),
                seq_enum
            );
            assert_eq!(
                v.par_iter().with_schedule(sc()).zip(&w).map(|(a, b)| a * 100 + b)
                    .collect::<Vec<_>>(),
                seq_zip
            );
            assert_eq!(
                v.par_iter().with_schedule(sc()).enumerate().min_by_key(|(_, x)| **x),
                seq_min
            );
            assert_eq!(
                v.par_iter().with_schedule(sc()).enumerate().max_by_key(|(_, x)| **x),
                seq_max
            );
            assert_eq!(
                v.par_iter().with_schedule(sc()).map(|&x| vec![x])
                    .reduce(Vec::new, |mut a, mut b| { a.append(&mut b); a }),
                v
            );
            v2.par_iter_mut().with_schedule(sc()).enumerate().for_each(|(i, x)| *x += i as u32);
            let n = v.len();
            assert_eq!(
                (0..n).into_par_iter().with_schedule(sc()).map(|i| i * i).sum::<usize>(),
                (0..n).map(|i| i * i).sum::<usize>()
            );
        });
        prop_assert_eq!(v2, v.iter().enumerate().map(|(i, x)| x + i as u32).collect::<Vec<_>>());
    }

    #[test]
    fn par_chunks_mut_zip_and_vec_sources(
        rt_i in 0..WORKER_COUNTS.len(), len in 0usize..2000, chunk in 1usize..100,
        s in schedule(),
    ) {
        let mut a = vec![0usize; len];
        let b: Vec<usize> = (0..len.div_ceil(chunk)).collect();
        rt(rt_i).block_on(|| {
            a.par_chunks_mut(chunk).with_schedule(s).zip(&b).for_each(|(c, &k)| c.fill(k));
        });
        prop_assert_eq!(a, (0..len).map(|i| i / chunk).collect::<Vec<_>>());
    }
}

#[test]
fn loops_outside_a_runtime_run_on_the_global_runtime_workers() {
    let on_worker = AtomicU32::new(0);
    par::for_each(0..64, Schedule::Static, |_| {
        if footprint::runtime::park::current_worker().is_some() {
            on_worker.fetch_add(1, Ordering::Relaxed);
        }
    });
    assert_eq!(
        on_worker.into_inner(),
        64,
        "every iteration runs on a worker"
    );
    let total: usize = (0..100usize).into_par_iter().sum();
    assert_eq!(total, 4950);
}

#[test]
#[should_panic(expected = "pass a chunk size of at least 1")]
fn dynamic_zero_panics_at_the_call_with_what_to_pass() {
    rt(1).block_on(|| par::for_each(0..10, Schedule::Dynamic(0), |_| {}));
}

#[test]
#[should_panic(expected = "pass a minimum chunk size of at least 1")]
fn guided_zero_panics_at_the_call_with_what_to_pass() {
    par::map_reduce(0..0, Schedule::Guided(0), |i| i, || 0, |a, b| a + b);
}

#[test]
#[should_panic(expected = "pass a chunk length of at least 1")]
fn chunk_len_zero_panics_at_the_call_with_what_to_pass() {
    let mut v = vec![1u8; 4];
    par::for_each_chunk_mut(&mut v, 0, Schedule::Static, |_, _| {});
}
