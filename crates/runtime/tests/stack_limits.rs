//! Stack limits: sizes that cannot be mapped, the live-stack cap (`Builder::max_stacks`) at
//! spawn and at a thread's first run, and many blocked threads on unguarded slab stacks.

mod common;
use common::with_watchdog;
use footprint_locks::Barrier;
use footprint_runtime::{spawn, yield_now, Error, GreenBuilder, Runtime, MAX_STACK_SIZE};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn stack_size_that_cannot_be_mapped_is_an_error_naming_the_maximum() {
    let e = Runtime::builder()
        .stack_size(usize::MAX)
        .build()
        .unwrap_err();
    match &e {
        Error::StackTooLarge { requested, maximum } => {
            assert_eq!(*requested, usize::MAX);
            assert_eq!(*maximum, MAX_STACK_SIZE);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(e.to_string().contains(&MAX_STACK_SIZE.to_string()), "{e}");
    let e = GreenBuilder::new()
        .stack_size(MAX_STACK_SIZE + 1)
        .spawn(|| ())
        .unwrap_err();
    assert!(matches!(e, Error::StackTooLarge { .. }), "{e:?}");
}

#[test]
fn zero_stack_cap_is_an_error() {
    let e = Runtime::builder().max_stacks(0).build().unwrap_err();
    assert!(matches!(e, Error::StackLimit { limit: 0 }), "{e:?}");
}

/// One worker, a cap of 2 stacks: the `block_on` thread holds one, `blocked` takes the other.
/// `early` was spawned before the cap was reached and fails its join when it first runs; a spawn
/// at the cap is refused (typed from `GreenBuilder`, a panic in the caller from `spawn`); once
/// `blocked` finishes, spawning works again and the worker is alive.
#[test]
fn live_stack_cap_refuses_spawns_and_fails_first_runs() {
    with_watchdog(60, "live-stack cap", || {
        let rt = Runtime::builder()
            .workers(1)
            .pin(false)
            .max_stacks(2)
            .build()
            .unwrap();
        rt.block_on(|| {
            let gate = Arc::new(Barrier::new(2));
            let g = gate.clone();
            let early = spawn(|| 5);
            let blocked = spawn(move || {
                g.wait();
                6
            });
            // The start deque is LIFO: `blocked` runs first, takes the second stack and parks.
            yield_now();
            let refused = GreenBuilder::new().spawn(|| 0).unwrap_err();
            assert!(
                matches!(refused, Error::StackLimit { limit: 2 }),
                "{refused:?}"
            );
            let msg = std::panic::catch_unwind(|| spawn(|| 0))
                .map(drop)
                .unwrap_err();
            let msg = msg.downcast_ref::<String>().expect("a String panic");
            assert!(msg.contains("max_stacks(2)"), "{msg}");
            // Now `early` runs, finds no stack and fails.
            yield_now();
            gate.wait();
            let e = early.join().unwrap_err();
            let e = e.downcast::<Error>().expect("the typed error");
            assert!(matches!(*e, Error::StackLimit { limit: 2 }), "{e:?}");
            assert_eq!(blocked.join().unwrap(), 6);
            assert_eq!(spawn(|| 7).join().unwrap(), 7);
        });
    });
}

/// Many threads blocked at once on unguarded slab stacks, released, all joined: exact counts.
#[test]
fn many_blocked_threads_on_unguarded_stacks() {
    with_watchdog(120, "many blocked", || {
        let n = 5_000;
        let rt = Runtime::builder()
            .workers(2)
            .pin(false)
            .stack_size(64 << 10)
            .guard_pages(false)
            .build()
            .unwrap();
        let done = Arc::new(AtomicUsize::new(0));
        let d = done.clone();
        rt.block_on(move || {
            let barrier = Arc::new(Barrier::new(n + 1));
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let b = barrier.clone();
                    let d = d.clone();
                    spawn(move || {
                        b.wait();
                        d.fetch_add(1, Ordering::Relaxed);
                        i
                    })
                })
                .collect();
            barrier.wait();
            let sum: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(sum, n * (n - 1) / 2);
        });
        assert_eq!(done.load(Ordering::Relaxed), n);
        // Every blocked thread had a stack of its own; the slabs made them.
        assert!(rt.stats().stacks_mapped >= n as u64);
        // All came back to the pools; all but the workers' own 16 each sit in the shared pool.
        let mapped = rt.stats().stacks_mapped;
        let trimmed = rt.trim_stacks() as u64;
        assert!(
            trimmed <= mapped && trimmed + 2 * 16 >= mapped,
            "trimmed {trimmed} of {mapped}"
        );
        // Trimmed stacks are zeroed on next use and still work.
        let again = rt.block_on(|| {
            let hs: Vec<_> = (0..100).map(|i| spawn(move || i * 2)).collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
        });
        assert_eq!(again, 9_900);
    });
}
