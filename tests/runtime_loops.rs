//! Parallel loops run on the runtime they are called from and show up in its
//! `Runtime::stats()`: the `Affinity` loop totals, the runtime's worker count, its id.

use footprint::par::{self, prelude::*, Affinity, Schedule};
use footprint::runtime::current_runtime_id;
use footprint::Runtime;
use std::sync::atomic::{AtomicU64, Ordering};

#[test]
fn affinity_loops_are_counted_in_the_runtime_stats() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let other = Runtime::builder().workers(1).build().unwrap();
    let sweeps = Affinity::new();
    let mut data = vec![0u64; 64 * 32];
    for _ in 0..3 {
        rt.block_on(|| {
            par::for_each_chunk_mut(&mut data, 64, Schedule::Affinity(sweeps.clone()), |c, p| {
                p.iter_mut().for_each(|x| *x += c as u64)
            })
        });
    }
    let loops = rt.stats().loops;
    let handle = sweeps.stats();
    assert_eq!(loops.affinity_runs, 3);
    assert_eq!(
        (loops.chunks_run, loops.stolen, loops.replayed, loops.resets),
        (
            handle.chunks_run,
            handle.stolen,
            handle.replayed,
            handle.resets
        )
    );
    assert_eq!(loops.stolen_first_run, handle.stolen_first_run);
    assert!(loops.chunks_run >= 3);
    // The same handle on another runtime: a reset, counted there, and the run too.
    other.block_on(|| {
        par::for_each_chunk_mut(&mut data, 64, Schedule::Affinity(sweeps.clone()), |_, _| ())
    });
    let there = other.stats().loops;
    assert_eq!((there.affinity_runs, there.resets), (1, 1));
    assert_eq!(
        rt.stats().loops.affinity_runs,
        3,
        "nothing added to the first runtime"
    );
    // A delta sees only what happened in between.
    let before = rt.stats();
    rt.block_on(|| {
        par::for_each_chunk_mut(&mut data, 64, Schedule::Affinity(sweeps.clone()), |_, _| ())
    });
    let d = rt.stats().since(&before).loops;
    assert_eq!(d.affinity_runs, 1);
    assert_eq!(
        d.resets, 1,
        "back from the other runtime: the memory is dropped once"
    );
    // Loops with a default schedule keep no memory and are not counted.
    rt.block_on(|| par::for_each(0..1000, Schedule::Dynamic(8), |_| ()));
    assert_eq!(rt.stats().loops.affinity_runs, 4);
}

#[test]
fn loops_called_inside_a_runtime_run_on_its_workers_only() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let id = rt.block_on(current_runtime_id);
    let wrong = AtomicU64::new(0);
    let before = rt.stats();
    let (sum, threads) = rt.block_on(|| {
        par::for_each(0..10_000, Schedule::Dynamic(16), |_| {
            if current_runtime_id() != id {
                wrong.fetch_add(1, Ordering::Relaxed);
            }
        });
        let v: Vec<u64> = (0..10_000).collect();
        let sum: u64 = v
            .par_iter()
            .map(|x| {
                if current_runtime_id() != id {
                    wrong.fetch_add(1, Ordering::Relaxed);
                }
                *x
            })
            .sum();
        (sum, footprint::current_num_threads())
    });
    assert_eq!(sum, 10_000 * 9_999 / 2);
    assert_eq!(threads, 2);
    assert_eq!(wrong.into_inner(), 0, "an iteration ran on another runtime");
    let d = rt.stats().since(&before);
    assert!(d.spawned >= 1 && d.finished == d.spawned, "{d}");
}
