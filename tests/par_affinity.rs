//! `Schedule::Affinity` replays: on the next run each chunk runs on the worker that ran it
//! before unless it was stolen (and every steal is counted); a handle resets itself when the
//! loop's length, the worker count or the runtime changes.

mod common;

use common::{runtime, with_watchdog, WORKER_COUNTS};
use footprint::par::{self, Affinity, Schedule};
use footprint::runtime::park::current_worker;
use footprint::Runtime;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One sweep of `chunks` chunks with `handle`; returns the worker each chunk ran on. With at
/// most 16 chunks per worker, the handle's chunks are the loop's own.
fn sweep(rt: &Runtime, chunks: usize, handle: &Affinity) -> Vec<usize> {
    let ran_on: Vec<AtomicUsize> = (0..chunks).map(|_| AtomicUsize::new(usize::MAX)).collect();
    let mut data = vec![0u64; chunks * 64];
    rt.block_on(|| {
        par::for_each_chunk_mut(
            &mut data,
            64,
            Schedule::Affinity(handle.clone()),
            |c, part| {
                ran_on[c].store(
                    current_worker().expect("runs on a worker"),
                    Ordering::Relaxed,
                );
                // Some work, so that both workers get chunks.
                for (k, x) in part.iter_mut().enumerate() {
                    *x = (0..200u64).fold(k as u64, |a, b| a.wrapping_mul(31).wrapping_add(b));
                }
            },
        )
    });
    ran_on.into_iter().map(|w| w.into_inner()).collect()
}

#[test]
fn second_run_replays_each_chunk_on_its_first_worker_unless_stolen() {
    for workers in WORKER_COUNTS {
        with_watchdog(60, "affinity replay", move || {
            let rt = runtime(workers);
            let handle = Affinity::new();
            let first = sweep(&rt, 16, &handle);
            assert_eq!(handle.remembered().as_deref(), Some(&first[..]));
            let before = handle.stats();
            assert_eq!(
                (before.runs, before.chunks_run, before.replayed),
                (1, 16, 0)
            );
            for run in 2..6u64 {
                let remembered = handle.remembered().expect("a memory");
                let before = handle.stats();
                let now = sweep(&rt, 16, &handle);
                let after = handle.stats();
                let moved = now.iter().zip(&remembered).filter(|(a, b)| a != b).count() as u64;
                assert_eq!(
                    after.stolen - before.stolen,
                    moved,
                    "run {run}: every move is a steal"
                );
                assert_eq!(
                    after.replayed - before.replayed,
                    16 - moved,
                    "run {run}: the rest replay"
                );
                assert_eq!(after.runs, run);
                assert_eq!(after.resets, 0);
                assert_eq!(
                    handle.remembered().as_deref(),
                    Some(&now[..]),
                    "memory follows"
                );
                if workers == 1 {
                    assert_eq!(moved, 0, "one worker: nothing to steal");
                }
            }
        });
    }
}

#[test]
fn a_handle_resets_on_another_length_worker_count_or_runtime() {
    with_watchdog(60, "affinity resets", || {
        let a = runtime(2);
        let handle = Affinity::new();
        sweep(&a, 32, &handle);
        sweep(&a, 32, &handle);
        assert_eq!(handle.stats().resets, 0);
        // Another chunk count.
        let got = sweep(&a, 20, &handle);
        assert_eq!(handle.stats().resets, 1);
        assert_eq!(
            handle.stats().replayed + handle.stats().stolen - handle.stats().stolen_first_run,
            32,
            "only the second 32-chunk run replayed"
        );
        assert_eq!(handle.remembered().as_deref(), Some(&got[..]));
        // Another runtime with the same worker count: reset, never routed by the old memory.
        let b = runtime(2);
        let replayed = handle.stats().replayed;
        sweep(&b, 20, &handle);
        assert_eq!(handle.stats().resets, 2);
        assert_eq!(
            handle.stats().replayed,
            replayed,
            "nothing replayed on the new runtime"
        );
        // Another worker count.
        let c = runtime(5);
        let got = sweep(&c, 20, &handle);
        assert_eq!(handle.stats().resets, 3);
        assert!(got.iter().all(|&w| w < 5));
        // Back to `c` with the same shape: replays again.
        sweep(&c, 20, &handle);
        assert_eq!(handle.stats().resets, 3);
        assert_eq!(handle.stats().runs, 6);
    });
}

#[test]
fn the_first_run_deals_contiguous_blocks_and_a_range_loop_uses_16_chunks_per_worker() {
    with_watchdog(60, "affinity chunking", || {
        let rt = runtime(2);
        let handle = Affinity::new();
        let seen = AtomicUsize::new(0);
        rt.block_on(|| {
            par::for_each(0..10_000, Schedule::Affinity(handle.clone()), |_| {
                seen.fetch_add(1, Ordering::Relaxed);
            })
        });
        assert_eq!(seen.into_inner(), 10_000);
        assert_eq!(handle.stats().chunks_run, 32);
        assert_eq!(handle.remembered().map(|m| m.len()), Some(32));
        // Fewer items than chunks per worker: one chunk per item.
        let small = Affinity::new();
        rt.block_on(|| par::for_each(0..5, Schedule::Affinity(small.clone()), |_| {}));
        assert_eq!(small.stats().chunks_run, 5);
    });
}

#[test]
fn clones_share_one_memory_and_a_panicking_run_leaves_it_alone() {
    with_watchdog(60, "affinity clones", || {
        let rt = runtime(2);
        let handle = Affinity::new();
        let clone = handle.clone();
        sweep(&rt, 8, &clone);
        assert_eq!(handle.stats().runs, 1);
        let remembered = handle.remembered();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(|| {
                par::for_each(0..8, Schedule::Affinity(handle.clone()), |i| {
                    if i == 3 {
                        panic!("chunk 3 fails")
                    }
                })
            })
        }));
        assert!(r.is_err());
        assert_eq!(handle.stats().runs, 1, "a run that panicked is not counted");
        assert_eq!(handle.remembered(), remembered);
    });
}
