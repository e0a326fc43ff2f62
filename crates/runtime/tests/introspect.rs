//! Runtime introspection: `current_num_threads`, `current_thread_index`,
//! `Runtime::broadcast`, and `join` running its second half when the first panics.

mod common;

use common::{rt, with_watchdog};
use footprint_runtime::{current_num_threads, current_thread_index, join, BroadcastContext};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn num_threads_and_index_inside_and_outside() {
    with_watchdog(60, "introspection", || {
        for workers in [1, 2, 5] {
            let r = rt(workers);
            let (n, i) = r.block_on(|| (current_num_threads(), current_thread_index()));
            assert_eq!(n, workers);
            assert!(i.expect("a green thread runs on a worker") < workers);
        }
        assert_eq!(
            current_thread_index(),
            None,
            "a plain OS thread is on no worker"
        );
        assert_eq!(current_num_threads(), footprint_runtime::global().workers());
        let blocking = rt(2).block_on(|| {
            footprint_runtime::spawn_blocking(current_thread_index)
                .join()
                .unwrap()
        });
        assert_eq!(blocking, None, "a spawn_blocking thread is on no worker");
    });
}

#[test]
fn broadcast_runs_once_on_every_worker_in_order() {
    with_watchdog(120, "broadcast", || {
        for workers in [1, 2, 5] {
            let r = rt(workers);
            for round in 0..200 {
                let calls = AtomicUsize::new(0);
                let seen = r.broadcast(|ctx: BroadcastContext| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    (ctx.index(), ctx.num_threads(), current_thread_index())
                });
                assert_eq!(calls.load(Ordering::Relaxed), workers, "round {round}");
                let want: Vec<_> = (0..workers).map(|w| (w, workers, Some(w))).collect();
                assert_eq!(seen, want, "{workers} workers, round {round}");
            }
        }
    });
}

#[test]
fn broadcast_from_a_green_thread_while_workers_are_busy() {
    with_watchdog(120, "broadcast under load", || {
        let r = Arc::new(rt(2));
        let r2 = Arc::clone(&r);
        let seen = r.block_on(move || {
            // Busy green threads that keep both workers' queues non-empty.
            let busy: Vec<_> = (0..8)
                .map(|_| {
                    footprint_runtime::spawn(|| {
                        for _ in 0..2_000 {
                            footprint_runtime::yield_now();
                        }
                    })
                })
                .collect();
            let seen = r2.broadcast(|ctx| ctx.index() == current_thread_index().unwrap());
            for h in busy {
                h.join().unwrap();
            }
            seen
        });
        assert_eq!(seen, vec![true, true]);
    });
}

#[test]
fn broadcast_reraises_a_panic_after_every_call_finished() {
    with_watchdog(60, "broadcast panic", || {
        let r = rt(2);
        let finished = AtomicUsize::new(0);
        let res = catch_unwind(AssertUnwindSafe(|| {
            r.broadcast(|ctx| {
                if ctx.index() == 0 {
                    panic!("worker zero fails");
                }
                finished.fetch_add(1, Ordering::SeqCst);
            })
        }));
        let msg = *res.unwrap_err().downcast::<&str>().unwrap();
        assert_eq!(msg, "worker zero fails");
        assert_eq!(finished.load(Ordering::SeqCst), 1);
        // The runtime still works.
        assert_eq!(r.broadcast(|c| c.index()), vec![0, 1]);
    });
}

/// A regression case: on one worker `b` is never stolen; it must still run when `a` panics.
#[test]
fn join_runs_b_when_a_panics() {
    with_watchdog(60, "join panic", || {
        let r = rt(1);
        for _ in 0..100 {
            let ran_b = AtomicUsize::new(0);
            let res = catch_unwind(AssertUnwindSafe(|| {
                r.block_on(|| {
                    join(
                        || panic!("a fails"),
                        || {
                            ran_b.fetch_add(1, Ordering::SeqCst);
                        },
                    )
                })
            }));
            assert_eq!(*res.unwrap_err().downcast::<&str>().unwrap(), "a fails");
            assert_eq!(ran_b.load(Ordering::SeqCst), 1, "b must run exactly once");
        }
    });
}

/// CPUs in the calling thread's affinity mask (`tid` 0) or in another thread's.
fn cpus_of(tid: libc::pid_t) -> usize {
    // SAFETY: cpu_set_t is plain data; pointer and size describe `set`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        libc::CPU_COUNT(&set) as usize
    }
}

/// A `spawn_blocking` thread started from a worker pinned to one CPU gets the process's CPU set
/// back (MPI found it sharing the worker's core).
#[test]
fn blocking_pool_threads_are_not_pinned_to_a_worker() {
    with_watchdog(60, "blocking affinity", || {
        // SAFETY: getpid has no preconditions.
        let process = cpus_of(unsafe { libc::getpid() });
        if process < 2 {
            eprintln!("skipped: the process may run on one CPU only, nothing to unpin");
            return;
        }
        let r = footprint_runtime::Runtime::builder()
            .cpus(&[0])
            .build()
            .expect("runtime on CPU 0");
        let (worker, blocking) = r.block_on(|| {
            let worker = cpus_of(0);
            let blocking = footprint_runtime::spawn_blocking(|| cpus_of(0))
                .join()
                .unwrap();
            (worker, blocking)
        });
        assert_eq!(worker, 1, "the worker is pinned to CPU 0");
        assert_eq!(
            blocking, process,
            "the blocking thread runs on the process's set"
        );
    });
}
