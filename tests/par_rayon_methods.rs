//! Rayon's parallel-iterator methods against the sequential iterator: same items, same order
//! where rayon keeps order, early stops where rayon stops early, panics re-raised; on 1, 2 and 5
//! workers and every schedule.

mod common;

use common::{runtime, with_watchdog, WORKER_COUNTS};
use footprint::par::{prelude::*, Affinity, Schedule};
use footprint::Runtime;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::num::Wrapping;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

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

fn values() -> impl Strategy<Value = Vec<u32>> {
    proptest::collection::vec(0u32..50, 0..1500)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn counting_searching_and_extremes_match_the_sequential_iterator(
        rt_i in 0..WORKER_COUNTS.len(), v in values(), s in schedule(), t in 0u32..55,
    ) {
        rt(rt_i).block_on(|| {
            let it = || v.par_iter().with_schedule(s.clone());
            assert_eq!(it().filter(|&&x| x < t).count(), v.iter().filter(|&&x| x < t).count());
            assert_eq!(it().any(|&x| x == t), v.contains(&t));
            assert_eq!(it().all(|&x| x != t), v.iter().all(|&x| x != t));
            // find_first and position_first: the first by position, as the sequential find.
            let first = v.iter().enumerate().find(|(_, &x)| x == t);
            assert_eq!(it().enumerate().find_first(|(_, &x)| x == t), first);
            assert_eq!(it().position_first(|&x| x == t), first.map(|(i, _)| i));
            assert_eq!(
                it().find_map_first(|&x| (x > t).then_some(x * 2)),
                v.iter().find_map(|&x| (x > t).then_some(x * 2))
            );
            // find_any and position_any: some hit, a hit exactly when there is one.
            match it().enumerate().find_any(|(_, &x)| x == t) {
                Some((i, &x)) => assert!(x == t && v[i] == t),
                None => assert!(first.is_none()),
            }
            match it().position_any(|&x| x == t) {
                Some(i) => assert_eq!(v[i], t),
                None => assert!(first.is_none()),
            }
            // min keeps the first of equals, max the last (as std); check by position.
            let by_value = |a: &(usize, &u32), b: &(usize, &u32)| a.1.cmp(b.1);
            assert_eq!(it().enumerate().min_by(by_value), v.iter().enumerate().min_by(by_value));
            assert_eq!(it().enumerate().max_by(by_value), v.iter().enumerate().max_by(by_value));
            assert_eq!(it().min(), v.iter().min());
            assert_eq!(it().max(), v.iter().max());
            assert_eq!(it().cloned().min(), v.iter().cloned().min());
            assert_eq!(it().map(|&x| u64::from(x)).sum::<u64>(), v.iter().map(|&x| u64::from(x)).sum::<u64>());
            assert_eq!(
                it().map(|&x| Wrapping(u64::from(x) + 1)).product::<Wrapping<u64>>(),
                v.iter().map(|&x| Wrapping(u64::from(x) + 1)).product::<Wrapping<u64>>()
            );
            assert_eq!(
                it().map(|&x| f64::from(x)).sum::<f64>() as u64,
                v.iter().map(|&x| u64::from(x)).sum::<u64>()
            );
            assert_eq!(it().copied().reduce_with(|a, b| a.max(b)), v.iter().copied().max());
        });
    }

    #[test]
    fn folding_flattening_and_splitting_keep_order(
        rt_i in 0..WORKER_COUNTS.len(), v in values(), s in schedule(), n in 1usize..40,
    ) {
        rt(rt_i).block_on(|| {
            let it = || v.par_iter().with_schedule(s.clone());
            // fold: per-split accumulators, in order; flattening them gives the items back.
            let accs: Vec<Vec<u32>> = it().fold(Vec::new, |mut a, &x| { a.push(x); a }).collect();
            assert_eq!(!accs.is_empty(), !v.is_empty());
            assert_eq!(accs.concat(), v);
            assert_eq!(
                it().fold(|| 0u64, |a, &x| a + u64::from(x)).sum::<u64>(),
                v.iter().map(|&x| u64::from(x)).sum::<u64>()
            );
            assert_eq!(
                it().fold_with(String::new(), |mut a, &x| { a.push_str(&x.to_string()); a })
                    .collect::<String>(),
                v.iter().map(|x| x.to_string()).collect::<String>()
            );
            // flat_map over inner parallel iterators, flat_map_iter over sequential ones.
            let seq: Vec<u32> = v.iter().flat_map(|&x| 0..x % 4).collect();
            assert_eq!(it().flat_map(|&x| (0..x % 4).into_par_iter()).collect::<Vec<_>>(), seq);
            assert_eq!(it().flat_map(|&x| (0..x % 4).collect::<Vec<_>>()).collect::<Vec<_>>(), seq);
            assert_eq!(it().flat_map_iter(|&x| 0..x % 4).collect::<Vec<_>>(), seq);
            assert_eq!(
                it().filter_map(|&x| (x % 3 == 0).then_some(x / 3)).collect::<Vec<_>>(),
                v.iter().filter_map(|&x| (x % 3 == 0).then_some(x / 3)).collect::<Vec<_>>()
            );
            assert_eq!(
                it().copied().chunks(n).collect::<Vec<_>>(),
                v.chunks(n).map(<[u32]>::to_vec).collect::<Vec<_>>()
            );
            let (evens, odds): (Vec<u32>, Vec<u32>) = it().partition(|&&x| x % 2 == 0);
            let (se, so): (Vec<u32>, Vec<u32>) = v.iter().partition(|&&x| x % 2 == 0);
            assert_eq!((evens, odds), (se, so));
            let (a, b): (Vec<u32>, Vec<usize>) = it().enumerate().map(|(i, &x)| (x, i)).unzip();
            assert_eq!(a, v);
            assert_eq!(b, (0..v.len()).collect::<Vec<_>>());
            // map_init and map_with: a state per stretch, items in order.
            let inits = AtomicUsize::new(0);
            assert_eq!(
                it().map_init(|| { inits.fetch_add(1, Ordering::Relaxed); 0u32 }, |seen, &x| {
                    *seen += 1;
                    x + 1
                })
                .collect::<Vec<_>>(),
                v.iter().map(|x| x + 1).collect::<Vec<_>>()
            );
            assert!(inits.load(Ordering::Relaxed) <= v.len());
            assert_eq!(
                it().map_with(String::from("x"), |s, &x| { s.push('y'); x }).enumerate()
                    .map(|(i, x)| i as u32 + x).collect::<Vec<_>>(),
                v.iter().enumerate().map(|(i, &x)| i as u32 + x).collect::<Vec<_>>()
            );
            // for_each_with and for_each_init: every item once, each participant its own state.
            let total = AtomicUsize::new(0);
            it().for_each_with(Vec::<u32>::new(), |seen, &x| {
                seen.push(x);
                total.fetch_add(x as usize + 1, Ordering::Relaxed);
            });
            let inits = AtomicUsize::new(0);
            it().for_each_init(
                || inits.fetch_add(1, Ordering::Relaxed),
                |_, &x| { total.fetch_add(x as usize + 1, Ordering::Relaxed); },
            );
            let expect: usize = v.iter().map(|&x| x as usize + 1).sum();
            assert_eq!(total.load(Ordering::Relaxed), 2 * expect);
            assert!(inits.load(Ordering::Relaxed) <= footprint::current_num_threads().max(1) * 64);
        });
    }

    #[test]
    fn indexed_adaptors_match_the_sequential_iterator(
        rt_i in 0..WORKER_COUNTS.len(), v in values(), s in schedule(),
        step in 1usize..9, skip in 0usize..1600, take in 0usize..1600,
    ) {
        rt(rt_i).block_on(|| {
            let it = || v.par_iter().with_schedule(s.clone()).copied();
            assert_eq!(it().rev().collect::<Vec<_>>(), v.iter().rev().copied().collect::<Vec<_>>());
            assert_eq!(
                it().step_by(step).collect::<Vec<_>>(),
                v.iter().step_by(step).copied().collect::<Vec<_>>()
            );
            assert_eq!(it().skip(skip).collect::<Vec<_>>(), v.iter().skip(skip).copied().collect::<Vec<_>>());
            assert_eq!(it().take(take).collect::<Vec<_>>(), v.iter().take(take).copied().collect::<Vec<_>>());
            assert_eq!(
                it().skip(skip / 4).step_by(step).rev().enumerate().take(take).collect::<Vec<_>>(),
                v.iter().skip(skip / 4).step_by(step).rev().copied().enumerate().take(take)
                    .collect::<Vec<_>>()
            );
            assert_eq!(
                it().rev().zip(v.par_iter().skip(1)).map(|(a, &b)| a * 100 + b).collect::<Vec<_>>(),
                v.iter().rev().zip(v.iter().skip(1)).map(|(a, b)| a * 100 + b).collect::<Vec<_>>()
            );
            assert_eq!(
                it().rev().position_first(|x| x == 7),
                v.iter().rev().position(|&x| x == 7)
            );
            assert_eq!(it().step_by(step).len(), v.iter().step_by(step).len());
        });
    }

    #[test]
    fn slices_vecs_and_collections_match_the_sequential_iterator(
        rt_i in 0..WORKER_COUNTS.len(), v in values(), s in schedule(), n in 1usize..40,
    ) {
        rt(rt_i).block_on(|| {
            assert_eq!(
                v.par_chunks(n).with_schedule(s.clone()).map(|c| c.to_vec()).collect::<Vec<_>>(),
                v.chunks(n).map(<[u32]>::to_vec).collect::<Vec<_>>()
            );
            assert_eq!(
                v.par_chunks_exact(n).map(|c| c.len()).collect::<Vec<_>>(),
                v.chunks_exact(n).map(|c| c.len()).collect::<Vec<_>>()
            );
            assert_eq!(
                v.par_windows(n).with_schedule(s.clone()).map(|w| w.iter().sum::<u32>()).collect::<Vec<_>>(),
                v.windows(n).map(|w| w.iter().sum::<u32>()).collect::<Vec<_>>()
            );
            let mut w = v.clone();
            w.par_chunks_exact_mut(n).with_schedule(s.clone()).for_each(|c| c.reverse());
            let mut seq = v.clone();
            seq.chunks_exact_mut(n).for_each(|c| c.reverse());
            assert_eq!(w, seq);
            // Vec by value, collections with repeated keys (the last value wins, as in std).
            let owned: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            assert_eq!(
                owned.clone().into_par_iter().with_schedule(s.clone()).map(|s| s.len()).sum::<usize>(),
                owned.iter().map(|s| s.len()).sum::<usize>()
            );
            let pairs = || v.iter().enumerate().map(|(i, &x)| (x, i));
            let ppairs = || v.par_iter().with_schedule(s.clone()).enumerate().map(|(i, &x)| (x, i));
            assert_eq!(ppairs().collect::<HashMap<_, _>>(), pairs().collect::<HashMap<_, _>>());
            assert_eq!(ppairs().collect::<BTreeMap<_, _>>(), pairs().collect::<BTreeMap<_, _>>());
            assert_eq!(
                v.par_iter().copied().collect::<HashSet<_>>(),
                v.iter().copied().collect::<HashSet<_>>()
            );
            assert_eq!(
                v.par_iter().copied().collect::<BTreeSet<_>>(),
                v.iter().copied().collect::<BTreeSet<_>>()
            );
            assert_eq!(
                v.par_iter().map(|&x| char::from(b'a' + (x % 26) as u8)).collect::<String>(),
                v.iter().map(|&x| char::from(b'a' + (x % 26) as u8)).collect::<String>()
            );
            assert_eq!(owned.par_iter().map(String::as_str).collect::<String>(), owned.concat());
            let mut ext = vec![1u32, 2];
            ext.par_extend(v.par_iter().copied().with_schedule(s.clone()));
            assert_eq!(ext[2..], v[..]);
            let mut m: HashMap<u32, usize> = HashMap::from([(1000, 0)]);
            m.par_extend(ppairs());
            let mut sm: HashMap<u32, usize> = HashMap::from([(1000, 0)]);
            sm.extend(pairs());
            assert_eq!(m, sm);
        });
    }

    #[test]
    fn integer_ranges_of_every_type_match_the_sequential_ranges(
        rt_i in 0..WORKER_COUNTS.len(), a in -300i64..300, len in 0i64..600, s in schedule(),
    ) {
        let b = a + len;
        rt(rt_i).block_on(|| {
            assert_eq!(
                (a..b).into_par_iter().with_schedule(s.clone()).collect::<Vec<i64>>(),
                (a..b).collect::<Vec<_>>()
            );
            assert_eq!(
                (a..=b).into_par_iter().with_schedule(s.clone()).collect::<Vec<i64>>(),
                (a..=b).collect::<Vec<_>>()
            );
            let (a32, b32) = (a as i32, b as i32);
            assert_eq!((a32..b32).into_par_iter().map(i64::from).sum::<i64>(), (a32..b32).map(i64::from).sum::<i64>());
            let (a16, b16) = (a as i16, b as i16);
            assert_eq!((a16..=b16).into_par_iter().count(), (a16..=b16).count());
            let (ua, ub) = (a.unsigned_abs(), a.unsigned_abs() + len as u64);
            assert_eq!((ua..ub).into_par_iter().rev().collect::<Vec<u64>>(), (ua..ub).rev().collect::<Vec<_>>());
            assert_eq!((ua as u128..=ub as u128).into_par_iter().max(), (ua as u128..=ub as u128).max());
            assert_eq!((ua as usize..ub as usize).into_par_iter().min(), (ua as usize..ub as usize).min());
            assert_eq!((a as isize..b as isize).into_par_iter().step_by(3).collect::<Vec<_>>(),
                (a as isize..b as isize).step_by(3).collect::<Vec<_>>());
        });
    }
}

#[test]
fn ranges_reach_the_ends_of_their_types_without_overflow() {
    let rt = rt(1);
    rt.block_on(|| {
        assert_eq!((0u8..=u8::MAX).into_par_iter().count(), 256);
        assert_eq!(
            (i8::MIN..=i8::MAX)
                .into_par_iter()
                .map(i32::from)
                .sum::<i32>(),
            -128
        );
        assert_eq!(
            (i8::MIN..i8::MAX).into_par_iter().collect::<Vec<_>>(),
            (i8::MIN..i8::MAX).collect::<Vec<_>>()
        );
        assert_eq!(
            (u64::MAX - 9..=u64::MAX)
                .into_par_iter()
                .collect::<Vec<_>>(),
            (u64::MAX - 9..=u64::MAX).collect::<Vec<_>>()
        );
        assert_eq!((i64::MIN..i64::MIN + 5).into_par_iter().count(), 5);
        #[allow(clippy::reversed_empty_ranges)]
        let (empty, empty_inclusive) = (5u32..3, 5i16..=3);
        assert_eq!(empty.into_par_iter().count(), 0);
        let empty = empty_inclusive;
        assert_eq!(empty.into_par_iter().count(), 0);
    });
}

#[test]
#[should_panic(expected = "split it into ranges")]
fn a_range_longer_than_usize_positions_says_how_to_split_it() {
    let _ = (0u128..=u128::from(u64::MAX) + 1).into_par_iter();
}

/// Counts the drops of its values.
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_vec_by_value_drops_every_element_exactly_once_however_it_is_consumed() {
    for rt_i in 0..WORKER_COUNTS.len() {
        rt(rt_i).block_on(|| {
            let drops = AtomicUsize::new(0);
            let make = || (0..5000).map(|_| Counted(&drops)).collect::<Vec<_>>();
            // Fully consumed, searched (most never handed out), reversed and searched, and
            // stopped by a panic.
            make().into_par_iter().for_each(drop);
            let hit = make()
                .into_par_iter()
                .enumerate()
                .find_first(|(i, _)| *i == 10);
            assert_eq!(hit.map(|(i, _)| i), Some(10));
            let hit = make()
                .into_par_iter()
                .rev()
                .enumerate()
                .find_any(|(i, _)| *i == 3);
            assert!(hit.is_some());
            drop(hit);
            let r = catch_unwind(AssertUnwindSafe(|| {
                make().into_par_iter().enumerate().for_each(|(i, c)| {
                    if i == 2500 {
                        panic!("stop at {i}");
                    }
                    drop(c);
                })
            }));
            assert!(r.is_err());
            assert_eq!(drops.load(Ordering::Relaxed), 4 * 5000);
        });
    }
}

#[test]
fn searches_stop_early_on_ranges_too_long_to_finish() {
    with_watchdog(120, "searches over 2^50 items", || {
        let rt = rt(1);
        rt.block_on(|| {
            let huge = || (0..1usize << 50).into_par_iter();
            assert_eq!(huge().find_first(|&x| x % 1000 == 999), Some(999));
            assert!(huge()
                .find_any(|&x| x % 1000 == 999)
                .is_some_and(|x| x % 1000 == 999));
            assert!(huge().any(|x| x == 123_456));
            assert!(!huge().all(|x| x < 10));
            assert_eq!(huge().position_first(|x| x == 77), Some(77));
            assert_eq!(
                huge()
                    .with_schedule(Schedule::Dynamic(1000))
                    .find_first(|&x| x > 5000),
                Some(5001)
            );
        });
    });
}

#[test]
fn a_panic_in_any_consumer_reaches_the_caller() {
    let rt = rt(1);
    let v: Vec<u32> = (0..10_000).collect();
    let boom = |x: u32| {
        if x == 7777 {
            panic!("boom at {x}");
        }
        x
    };
    type Case<'a> = Box<dyn Fn() + Sync + 'a>;
    let cases: Vec<(&str, Case)> = vec![
        (
            "count",
            Box::new(|| {
                std::hint::black_box(v.par_iter().map(|&x| boom(x)).count());
            }),
        ),
        (
            "find_first",
            Box::new(|| {
                std::hint::black_box(v.par_iter().find_first(|&&x| boom(x) == u32::MAX));
            }),
        ),
        (
            "any",
            Box::new(|| {
                std::hint::black_box(v.par_iter().any(|&x| boom(x) == u32::MAX));
            }),
        ),
        (
            "fold",
            Box::new(|| {
                std::hint::black_box(v.par_iter().fold(|| 0, |a, &x| a + boom(x)).count());
            }),
        ),
        (
            "min_by",
            Box::new(|| {
                std::hint::black_box(v.par_iter().map(|&x| boom(x)).min());
            }),
        ),
        (
            "collect",
            Box::new(|| {
                std::hint::black_box(v.par_iter().map(|&x| boom(x)).collect::<HashSet<_>>());
            }),
        ),
        (
            "flat_map",
            Box::new(|| {
                std::hint::black_box(v.par_iter().flat_map(|&x| vec![boom(x)]).count());
            }),
        ),
        (
            "for_each_with",
            Box::new(|| {
                v.par_iter().for_each_with(0, |_, &x| {
                    boom(x);
                })
            }),
        ),
    ];
    for (name, case) in cases {
        let r = rt.block_on(|| catch_unwind(AssertUnwindSafe(&case)));
        let msg = r
            .expect_err(name)
            .downcast::<String>()
            .map(|s| *s)
            .unwrap_or_default();
        assert_eq!(msg, "boom at 7777", "{name}");
    }
}
