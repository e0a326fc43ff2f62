//! Builder errors, spawn/join/scope/yield, panics, depth.

mod common;
use common::rt;
use footprint_runtime::{
    join, scope, spawn, yield_now, Error, GreenBuilder, Runtime, MIN_STACK_SIZE,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn zero_workers_is_an_error() {
    let e = Runtime::builder().workers(0).build().unwrap_err();
    assert!(matches!(e, Error::ZeroWorkers));
    assert!(e.to_string().contains("at least one worker"));
}

#[test]
fn small_stack_is_an_error() {
    let e = Runtime::builder().stack_size(1024).build().unwrap_err();
    match e {
        Error::StackTooSmall { requested, minimum } => {
            assert_eq!(requested, 1024);
            assert_eq!(minimum, MIN_STACK_SIZE);
        }
        other => panic!("unexpected {other:?}"),
    }
    let e = GreenBuilder::new().stack_size(10).spawn(|| ()).unwrap_err();
    assert!(matches!(e, Error::StackTooSmall { .. }));
}

#[test]
fn cpu_outside_mask_is_an_error() {
    let allowed = footprint_affinity::allowed_cpus().unwrap();
    let bad = allowed.iter().max().unwrap() + 1;
    let e = Runtime::builder().cpus(&[bad]).build().unwrap_err();
    match &e {
        Error::CpuNotAllowed { cpu, allowed: a } => {
            assert_eq!(*cpu, bad);
            assert_eq!(a, &allowed);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(e.to_string().contains("allowed CPU set"));
    let e = Runtime::builder().cpus(&[]).build().unwrap_err();
    assert!(matches!(e, Error::NoCpus));
}

#[test]
fn default_runtime_has_one_worker_per_allowed_cpu() {
    let allowed = footprint_affinity::allowed_cpus().unwrap();
    let rt = Runtime::builder().build().unwrap();
    assert_eq!(rt.workers(), allowed.len());
    let cpus: Vec<Option<usize>> = allowed.iter().map(|&c| Some(c)).collect();
    assert_eq!(rt.worker_cpus(), cpus);
}

#[test]
fn api_contract() {
    let rt = Runtime::builder()
        .workers(4)
        .stack_size(8 << 20)
        .build()
        .unwrap();
    let local = [10, 20];
    let v = rt.block_on(|| {
        let h = spawn(|| 1 + 1);
        let (a, b) = join(|| 2 + local[0], || 3 + local[1]);
        let r = scope(|s| s.spawn(|| a + b).join().unwrap());
        yield_now();
        h.join().unwrap() + r
    });
    assert_eq!(v, 2 + 12 + 23);
}

#[test]
fn many_spawns_exact_count() {
    for workers in [1, 2, 5] {
        let rt = rt(workers);
        let n = if cfg!(debug_assertions) {
            5_000
        } else {
            50_000
        };
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let sum: usize = rt.block_on(move || {
            let hs: Vec<_> = (0..n)
                .map(|i| {
                    let c = c.clone();
                    spawn(move || {
                        c.fetch_add(1, Ordering::Relaxed);
                        i
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(sum, n * (n - 1) / 2);
        assert_eq!(count.load(Ordering::Relaxed), n);
    }
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

#[test]
fn fib_on_1_2_5_workers() {
    for workers in [1, 2, 5] {
        let rt = rt(workers);
        assert_eq!(rt.block_on(|| fib(20)), 6765, "workers = {workers}");
    }
}

#[test]
fn join_and_scope_outside_a_runtime_use_the_global_one() {
    assert_eq!(fib(15), 610);
    let data = [1u64, 2, 3, 4];
    let total = scope(|s| {
        let hs: Vec<_> = data
            .chunks(2)
            .map(|c| s.spawn(move || c.iter().sum::<u64>()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    assert_eq!(total, 10);
    assert_eq!(spawn(|| 5).join().unwrap(), 5);
}

#[test]
fn scope_waits_for_unjoined_threads() {
    let rt = rt(2);
    let count = AtomicUsize::new(0);
    rt.block_on(|| {
        scope(|s| {
            for _ in 0..100 {
                s.spawn(|| {
                    yield_now();
                    count.fetch_add(1, Ordering::Relaxed);
                });
            }
        })
    });
    assert_eq!(count.load(Ordering::Relaxed), 100);
}

#[test]
fn yield_interleaves_two_threads_on_one_worker() {
    let rt = rt(1);
    let log = std::sync::Mutex::new(Vec::new());
    rt.block_on(|| {
        scope(|s| {
            for id in 0..2 {
                let log = &log;
                s.spawn(move || {
                    for step in 0..3 {
                        log.lock().unwrap().push((id, step));
                        yield_now();
                    }
                });
            }
        })
    });
    let log = log.into_inner().unwrap();
    assert_eq!(log.len(), 6);
    // Each yield hands the worker to the other thread: the ids alternate.
    for w in log.windows(2) {
        assert_ne!(w[0].0, w[1].0, "{log:?}");
    }
}

/// A yield lets work queued since (a thread spawned by the yielder) start before the threads
/// already ready: the two-thread hand-off of a yield keeps that order.
#[test]
fn a_yield_starts_new_work_before_the_ready_threads() {
    let rt = rt(1);
    let log = std::sync::Mutex::new(Vec::new());
    rt.block_on(|| {
        scope(|s| {
            let log = &log;
            s.spawn(move || {
                log.lock().unwrap().push("a0");
                yield_now();
                log.lock().unwrap().push("a1");
                s.spawn(move || log.lock().unwrap().push("c"));
                yield_now();
                log.lock().unwrap().push("a2");
            });
            s.spawn(move || {
                for step in ["b0", "b1", "b2"] {
                    log.lock().unwrap().push(step);
                    yield_now();
                }
            });
        })
    });
    let log = log.into_inner().unwrap();
    assert_eq!(log.len(), 7, "{log:?}");
    let at = |e| log.iter().position(|x| *x == e).unwrap();
    assert_eq!(at("c"), at("a1") + 1, "{log:?}");
    // Before the spawn the two threads took turns (the hand-off).
    assert_eq!(at("a1").abs_diff(at("b1")), 1, "{log:?}");
}

#[test]
fn panic_reaches_joiner_and_worker_survives() {
    let rt = rt(1);
    for i in 0..50 {
        let r = rt.block_on(|| spawn(move || -> u32 { panic!("boom {i}") }).join());
        let p = r.unwrap_err();
        assert_eq!(p.downcast_ref::<String>().unwrap(), &format!("boom {i}"));
    }
    // Still works, and panics in detached threads do not hurt.
    rt.block_on(|| drop(spawn(|| panic!("detached"))));
    assert_eq!(rt.block_on(|| fib(10)), 55);
}

#[test]
fn join_reraises_panics() {
    let rt = rt(2);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(|| join(|| 1, || -> i32 { panic!("right side") }))
    }));
    assert_eq!(
        *r.unwrap_err().downcast_ref::<&str>().unwrap(),
        "right side"
    );
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(|| join(|| -> i32 { panic!("left side") }, || 2))
    }));
    assert_eq!(*r.unwrap_err().downcast_ref::<&str>().unwrap(), "left side");
    assert_eq!(rt.block_on(|| fib(12)), 144);
}

#[test]
fn scope_reraises_unjoined_panic() {
    let rt = rt(2);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(|| {
            scope(|s| {
                s.spawn(|| panic!("scoped"));
                s.spawn(|| 1);
            })
        })
    }));
    assert_eq!(*r.unwrap_err().downcast_ref::<&str>().unwrap(), "scoped");
    // A joined panic is the joiner's business, not the scope's.
    let v = rt.block_on(|| scope(|s| s.spawn(|| -> u8 { panic!("x") }).join().is_err()));
    assert!(v);
}

#[test]
fn block_on_from_many_os_threads() {
    let rt = rt(2);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let rt = &rt;
            s.spawn(move || {
                for i in 0..50u64 {
                    assert_eq!(rt.block_on(|| fib(8) + t * i), 21 + t * i);
                }
            });
        }
    });
}

fn depth(n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    let (a, _) = join(|| depth(n - 1), || 0u32);
    a + 1
}

#[test]
fn fork_join_depth_1500_with_default_stack() {
    let rt = rt(2);
    assert_eq!(rt.block_on(|| depth(1_500)), 1_500);
}

#[test]
fn fork_join_depth_18000_with_large_stack() {
    let rt = Runtime::builder()
        .workers(2)
        .stack_size(256 << 20)
        .build()
        .unwrap();
    assert_eq!(rt.block_on(|| depth(18_000)), 18_000);
}

#[test]
fn named_threads() {
    let rt = rt(1);
    let h = rt.block_on(|| GreenBuilder::new().name("worker-a").spawn(|| 3).unwrap());
    assert_eq!(h.name().as_deref(), Some("worker-a"));
    assert_eq!(h.join().unwrap(), 3);
}

#[test]
fn spawn_blocking_and_block_in_place_keep_the_worker_free() {
    let rt = rt(1);
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let v = rt.block_on(|| {
        let f = flag.clone();
        // This green thread sets the flag; it can only run if the single worker is not blocked
        // by the blocking call below, which waits for the flag on an OS thread.
        let setter = spawn(move || f.store(true, Ordering::Release));
        let f = flag.clone();
        let got = footprint_runtime::block_in_place(move || {
            while !f.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            7
        });
        setter.join().unwrap();
        let h = footprint_runtime::spawn_blocking(|| 35);
        got + h.join().unwrap()
    });
    assert_eq!(v, 42);
}

/// A worker count far above the CPUs is a typed error at once (it used to start OS threads one
/// by one for minutes), naming what to pass; opting in builds it.
#[test]
fn far_too_many_workers_is_an_error_unless_opted_in() {
    let start = std::time::Instant::now();
    let e = footprint_runtime::Runtime::builder()
        .workers(1_000_000)
        .build()
        .unwrap_err();
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    match &e {
        footprint_runtime::Error::TooManyWorkers {
            requested,
            cpus,
            max,
        } => {
            assert_eq!(*requested, 1_000_000);
            assert_eq!(*max, cpus * footprint_runtime::MAX_WORKERS_PER_CPU);
        }
        other => panic!("unexpected {other:?}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains("oversubscribe(true)") && msg.contains("workers(n) with n <="),
        "{msg}"
    );
    let cpus = match e {
        footprint_runtime::Error::TooManyWorkers { cpus, .. } => cpus,
        _ => unreachable!(),
    };
    let n = cpus * footprint_runtime::MAX_WORKERS_PER_CPU + 1;
    assert!(footprint_runtime::Runtime::builder()
        .workers(n)
        .pin(false)
        .build()
        .is_err());
    let rt = footprint_runtime::Runtime::builder()
        .workers(n)
        .pin(false)
        .oversubscribe(true)
        .build()
        .unwrap();
    assert_eq!(rt.block_on(footprint_runtime::current_num_threads), n);
}
