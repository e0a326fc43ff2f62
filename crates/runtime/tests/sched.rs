//! Park/unpark with placement, the scheduler hook, idle CPU use, shutdown, overflow, wake-up
//! stress.

mod common;
use common::{rt, with_watchdog};
use footprint_locks::{current_hook, Placement, PriorityClass, Unparker};
use footprint_runtime::park::{current_unparker, current_worker, park};
use footprint_runtime::{scope, spawn, yield_now, GreenBuilder, Runtime};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn unpark_before_park_is_not_lost() {
    let rt = rt(1);
    rt.block_on(|| {
        let me = current_unparker();
        me.unpark(Placement::Anywhere);
        park(); // returns at once: the permit was there
                // The permit was consumed: a second park needs a new unpark, which a helper gives.
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let h = spawn(move || {
            d.store(true, Ordering::Release);
            me.unpark(Placement::Anywhere);
        });
        while !done.load(Ordering::Acquire) {
            park();
        }
        h.join().unwrap();
    });
}

#[test]
fn unpark_with_placement_resumes_on_the_named_worker() {
    let rt = rt(2);
    // The flag is set only once the thread is parked off every queue (both workers asleep).
    for target in [1usize, 0] {
        let parked = Arc::new(AtomicUsize::new(0));
        let go = Arc::new(AtomicBool::new(false));
        let (p, g) = (parked.clone(), go.clone());
        let (tx, rx) = mpsc::channel::<Unparker>();
        let h = rt.spawn(move || {
            tx.send(current_unparker()).unwrap();
            p.store(1, Ordering::Release);
            while !g.load(Ordering::Acquire) {
                park();
            }
            current_worker()
        });
        let u = rx.recv().unwrap();
        while parked.load(Ordering::Acquire) == 0 {
            std::thread::yield_now();
        }
        // Wait until it is really parked: both workers idle means it is off every queue.
        while rt.sleeping_workers() < 2 {
            std::thread::yield_now();
        }
        let before = rt.stats();
        go.store(true, Ordering::Release);
        u.unpark(Placement::Worker(target));
        let ran_on = h.join().unwrap();
        let after = rt.stats();
        // The hint routes the thread to the named worker's inbox, always.
        assert_eq!(
            after.workers[target].inbox_wakeups,
            before.workers[target].inbox_wakeups + 1,
            "the unpark did not go to worker {target}'s inbox"
        );
        // Placement yields to load balance: the other worker, in its last search before its
        // futex wait, may take the thread from that inbox; then that shows as its steal.
        if ran_on != Some(target) {
            let other = 1 - target;
            assert_eq!(ran_on, Some(other));
            assert!(
                after.workers[other].steals() > before.workers[other].steals(),
                "the thread ran on worker {other} without being stolen there"
            );
        }
    }
}

#[test]
fn hook_is_installed_and_class_cells_are_per_green_thread() {
    let rt = rt(1);
    rt.block_on(|| {
        let hook = current_hook();
        assert!(hook.is_green());
        assert_eq!(hook.worker_id(), Some(0));
        let mine = hook.class_cell() as *const _ as usize;
        assert_eq!(hook.class_cell().get(), PriorityClass::Running);
        hook.class_cell().set(PriorityClass::Holder);
        let other = spawn(|| {
            let h = current_hook();
            (h.class_cell() as *const _ as usize, h.class_cell().get())
        });
        // Let it start on its own stack before we join (a join before start runs it inline).
        yield_now();
        let (addr, class) = other.join().unwrap();
        assert_ne!(addr, mine);
        assert_eq!(class, PriorityClass::Running);
        assert_eq!(hook.class_cell().get(), PriorityClass::Holder);
        hook.class_cell().set(PriorityClass::Running);
    });
    // Outside the runtime the OS hook answers.
    assert!(!current_hook().is_green());
}

#[test]
fn higher_class_ready_and_yield_to_higher() {
    let rt = rt(1);
    rt.block_on(|| {
        let hook = current_hook();
        assert!(!hook.higher_class_ready(PriorityClass::Running));
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        // A thread that publishes Holder and then yields back to us.
        let h = spawn(move || {
            current_hook().class_cell().set(PriorityClass::Holder);
            yield_now();
            r.store(true, Ordering::Release);
            current_hook().class_cell().set(PriorityClass::Running);
        });
        yield_now(); // it starts, publishes Holder, yields: it is now ready with class Holder
        assert!(hook.higher_class_ready(PriorityClass::Running));
        assert!(!hook.higher_class_ready(PriorityClass::Holder));
        assert!(hook.yield_to_higher(PriorityClass::Running));
        assert!(ran.load(Ordering::Acquire));
        h.join().unwrap();
        assert!(!hook.yield_to_higher(PriorityClass::Running));
    });
}

#[test]
fn park_timeout_returns_false_on_timeout() {
    let rt = rt(1);
    rt.block_on(|| {
        let t0 = Instant::now();
        let mut woke = true;
        // Spurious wake-ups are allowed; a timeout must come eventually.
        for _ in 0..10 {
            woke = current_hook().park_timeout(Duration::from_millis(20));
            if !woke {
                break;
            }
        }
        assert!(!woke);
        assert!(t0.elapsed() >= Duration::from_millis(20));
    });
}

#[test]
fn idle_runtime_uses_no_cpu() {
    let rt = rt(2);
    rt.block_on(|| assert_eq!(footprint_runtime::join(|| 1, || 2), (1, 2)));
    while rt.sleeping_workers() < rt.workers() {
        std::thread::yield_now();
    }
    let before = rt.workers_cpu_time();
    let wall = Instant::now();
    // A measuring window, not synchronisation: the workers are already asleep.
    std::thread::sleep(Duration::from_millis(300));
    let used = rt.workers_cpu_time() - before;
    assert_eq!(rt.sleeping_workers(), rt.workers());
    assert!(
        used < Duration::from_millis(5),
        "idle runtime used {used:?} CPU in {:?}",
        wall.elapsed()
    );
}

#[test]
fn dropping_the_runtime_finishes_detached_work() {
    let count = Arc::new(AtomicUsize::new(0));
    let n: usize = 2_000;
    {
        let rt = rt(2);
        let c = count.clone();
        rt.block_on(move || {
            for i in 0..n {
                let c = c.clone();
                drop(spawn(move || {
                    if i.is_multiple_of(3) {
                        yield_now();
                    }
                    c.fetch_add(1, Ordering::Relaxed);
                }));
            }
        });
        let c = count.clone();
        drop(rt.spawn(move || {
            // A detached thread that parks and is woken by another detached thread.
            let u = current_unparker();
            let go = Arc::new(AtomicBool::new(false));
            let g = go.clone();
            drop(spawn(move || {
                g.store(true, Ordering::Release);
                u.unpark(Placement::Anywhere);
            }));
            while !go.load(Ordering::Acquire) {
                park();
            }
            c.fetch_add(1, Ordering::Relaxed);
        }));
    }
    assert_eq!(count.load(Ordering::Relaxed), n + 1);
}

#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(n: u64, sink: &mut [u8; 1024]) -> u64 {
    let mut buf = [0u8; 1024];
    buf[(n % 1024) as usize] = n as u8;
    sink[0] = sink[0].wrapping_add(buf[0]);
    let r = recurse(std::hint::black_box(n + 1), &mut buf);
    r + buf[(n % 7) as usize] as u64
}

#[test]
fn stack_overflow_is_reported_to_the_joiner_and_runtime_survives() {
    let rt = Runtime::builder()
        .workers(1)
        .stack_size(256 << 10)
        .build()
        .unwrap();
    for _ in 0..3 {
        let r = rt.block_on(|| {
            let h = GreenBuilder::new()
                .name("deep")
                .spawn(|| recurse(0, &mut [0; 1024]))
                .unwrap();
            yield_now(); // let it start on its own stack (a join before that would run it inline)
            h.join()
        });
        let msg = r.unwrap_err().downcast::<String>().unwrap();
        assert!(msg.contains("'deep'"), "{msg}");
        assert!(msg.contains(&(256usize << 10).to_string()), "{msg}");
        assert!(msg.contains("overflowed"), "{msg}");
    }
    assert_eq!(rt.stats().overflows, 3);
    assert_eq!(rt.block_on(|| footprint_runtime::join(|| 1, || 2)), (1, 2));
}

/// A thread in the middle of a slab (its neighbours' stacks are live just below and above it)
/// overflows: its guard page catches it, the joiner gets the report, and the neighbours' stacks
/// are intact (their canaries read back). With lightweight guard regions the guard is a marker
/// inside the slab's single mapping, so this checks that such a marker traps like `mprotect`.
#[test]
fn stack_overflow_in_a_middle_slot_spares_its_neighbours() {
    const STACK: usize = 64 << 10;
    let rt = Runtime::builder()
        .workers(1)
        .stack_size(STACK)
        .build()
        .unwrap();
    let stage = Arc::new(AtomicUsize::new(0));
    let r = rt.block_on(|| {
        // A neighbour: records where its stack is, fills a canary, waits, checks the canary.
        let neighbour = |name: &str| {
            let stage = stage.clone();
            let h = GreenBuilder::new()
                .name(name)
                .spawn(move || {
                    let canary = [0xA5u8; 4096];
                    let at = std::hint::black_box(&canary) as *const _ as usize;
                    stage.fetch_add(1, Ordering::SeqCst);
                    while stage.load(Ordering::SeqCst) < 10 {
                        yield_now();
                    }
                    (at, std::hint::black_box(&canary).iter().all(|&b| b == 0xA5))
                })
                .unwrap();
            yield_now(); // it starts now, so its stack is carved now (slots go in address order)
            h
        };
        let below = neighbour("below");
        let deep_stage = stage.clone();
        let deep = GreenBuilder::new()
            .name("middle")
            .spawn(move || {
                deep_stage.fetch_add(1, Ordering::SeqCst);
                while deep_stage.load(Ordering::SeqCst) < 3 {
                    yield_now();
                }
                recurse(0, &mut [0; 1024])
            })
            .unwrap();
        yield_now();
        let above = neighbour("above");
        assert_eq!(stage.load(Ordering::SeqCst), 3, "all three started");
        let deep_result = deep.join();
        stage.store(10, Ordering::SeqCst);
        let (lo, lo_ok) = below.join().unwrap();
        let (hi, hi_ok) = above.join().unwrap();
        (deep_result, lo, lo_ok, hi, hi_ok)
    });
    let (deep_result, lo, lo_ok, hi, hi_ok) = r;
    let msg = deep_result.unwrap_err().downcast::<String>().unwrap();
    assert!(
        msg.contains("'middle'") && msg.contains("overflowed"),
        "{msg}"
    );
    // The two neighbours' stacks are two slots apart (the middle one between them).
    assert!(
        hi > lo && hi - lo < 3 * (STACK + 4096),
        "slots {lo:#x} and {hi:#x}"
    );
    assert!(lo_ok && hi_ok, "a neighbour's canary was overwritten");
    assert_eq!(rt.stats().overflows, 1);
}

fn join_depth(n: u64) -> u64 {
    if n == 0 {
        return recurse(0, &mut [0; 1024]);
    }
    let (a, _) = footprint_runtime::join(|| join_depth(n - 1), || 0);
    a
}

/// Inside a `join` the overflowed stack is still referenced, so the process reports the thread
/// and its stack size and aborts. Checked in a child process.
#[test]
fn stack_overflow_inside_join_aborts_with_a_report() {
    if std::env::var_os("FOOTPRINT_OVERFLOW_CHILD").is_some() {
        let rt = Runtime::builder()
            .workers(1)
            .stack_size(128 << 10)
            .build()
            .unwrap();
        let h = rt.block_on(|| {
            GreenBuilder::new()
                .name("forker")
                .spawn(|| join_depth(3))
                .unwrap()
        });
        let _ = h.join();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "stack_overflow_inside_join_aborts_with_a_report",
            "--nocapture",
        ])
        .env("FOOTPRINT_OVERFLOW_CHILD", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("green thread 'forker' overflowed its stack of 131072 bytes inside a join"),
        "{err}"
    );
}

#[test]
fn wakeups_from_outside_are_never_lost() {
    with_watchdog(60, "spawn into a sleeping runtime", || {
        let rt = rt(2);
        let rounds: usize = if cfg!(debug_assertions) { 300 } else { 3000 };
        let count = Arc::new(AtomicUsize::new(0));
        for i in 0..rounds {
            if i.is_multiple_of(2) {
                // Sleeping workers: the spawn must wake one.
                while rt.sleeping_workers() < rt.workers() {
                    std::thread::yield_now();
                }
            }
            let c = count.clone();
            rt.spawn(move || c.fetch_add(1, Ordering::Relaxed))
                .join()
                .unwrap();
        }
        assert_eq!(count.load(Ordering::Relaxed), rounds);
        assert_eq!(rt.stats().expired_sleeps_with_work(), 0);
    });
}

#[test]
fn ping_pong_park_unpark_exact_counts() {
    with_watchdog(60, "ping-pong", || {
        let rt = rt(2);
        let rounds = if cfg!(debug_assertions) {
            2_000
        } else {
            20_000
        };
        let total = rt.block_on(move || {
            let turn = Arc::new(AtomicUsize::new(0));
            let slots: Arc<Mutex<[Option<Unparker>; 2]>> = Arc::new(Mutex::new([None, None]));
            scope(|s| {
                let hs: Vec<_> = (0..2)
                    .map(|me| {
                        let turn = turn.clone();
                        let slots = slots.clone();
                        s.spawn(move || {
                            slots.lock().unwrap()[me] = Some(current_unparker());
                            let mut mine = 0;
                            loop {
                                let t = turn.load(Ordering::Acquire);
                                if t >= 2 * rounds {
                                    break;
                                }
                                if t % 2 == me {
                                    mine += 1;
                                    turn.store(t + 1, Ordering::Release);
                                    if let Some(u) = &slots.lock().unwrap()[1 - me] {
                                        u.unpark(Placement::Anywhere);
                                    }
                                } else {
                                    park();
                                }
                            }
                            if let Some(u) = &slots.lock().unwrap()[1 - me] {
                                u.unpark(Placement::Anywhere);
                            }
                            mine
                        })
                    })
                    .collect();
                hs.into_iter()
                    .map(|h| h.join().unwrap())
                    .collect::<Vec<_>>()
            })
        });
        assert_eq!(total, vec![rounds, rounds]);
    });
}

#[test]
fn spawn_storm_across_workers_exact_count() {
    with_watchdog(60, "spawn storm", || {
        let rt = rt(3);
        let n: usize = if cfg!(debug_assertions) {
            20_000
        } else {
            200_000
        };
        fn tree(lo: usize, hi: usize) -> usize {
            if hi - lo <= 8 {
                return (lo..hi).sum();
            }
            let mid = (lo + hi) / 2;
            let h = spawn(move || tree(lo, mid));
            let r = tree(mid, hi);
            if mid.is_multiple_of(3) {
                yield_now();
            }
            h.join().unwrap() + r
        }
        assert_eq!(rt.block_on(move || tree(0, n)), n * (n - 1) / 2);
        assert_eq!(rt.stats().expired_sleeps_with_work(), 0);
    });
}

#[test]
fn repeated_fork_join_from_outside_never_hangs() {
    let rt = Arc::new(rt(2));
    let r2 = rt.clone();
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        fn fib(n: u64) -> u64 {
            if n < 2 {
                return n;
            }
            let (a, b) = footprint_runtime::join(|| fib(n - 1), || fib(n - 2));
            a + b
        }
        let rounds = if cfg!(debug_assertions) { 200 } else { 2000 };
        for _ in 0..rounds {
            assert_eq!(r2.block_on(|| fib(16)), 987);
        }
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => h.join().unwrap(),
        Err(_) => panic!("repeated fib hangs: {}", rt.debug_state()),
    }
}

/// Once a green waiter has made a mutex informing, every green holder publishes `Holder` for
/// the hold and gets its own class back at the release, including an acquisition that found the
/// lock free (its bookkeeping runs before the compare-and-swap), and a holder that
/// yields keeps `Holder` while it is ready. A waiter makes it informing once the lock's holds
/// read long: here the holder's holds span yields (a waiter that parks behind one sees it
/// released on its own worker) and the waiter's (timed: they began with a wait) take a 2 µs
/// spin, and the rounds go on until enough of either were seen.
#[test]
fn green_holders_of_an_informing_mutex_publish_holder() {
    with_watchdog(60, "informing mutex classes", || {
        let rt = rt(1);
        rt.block_on(|| {
            let lock = Arc::new(footprint_locks::Mutex::new(0u64));
            // Before any waiter: nothing published.
            {
                let _g = lock.lock();
                assert_eq!(current_hook().class_cell().get(), PriorityClass::Running);
            }
            let mut rounds = 0u64;
            loop {
                rounds += 1;
                assert!(
                    rounds <= 20_000,
                    "no waiter saw `Holder` after {rounds} rounds of holds that span yields"
                );
                // A holder that yields while holding, and a waiter behind it on the one worker:
                // the waiter cannot spin the lock free, so it waits informed (and marks the
                // lock once its holds are known to be long).
                let (l1, l2) = (lock.clone(), lock.clone());
                let trying = Arc::new(AtomicBool::new(false));
                let (t1, t2) = (trying.clone(), trying.clone());
                let holder = spawn(move || {
                    let mut g = l1.lock();
                    *g += 1;
                    // Until the waiter has tried, and once more so that it waits.
                    while !t1.load(Ordering::Acquire) {
                        yield_now();
                    }
                    yield_now();
                    *g += 1;
                });
                yield_now(); // the holder takes the lock and yields back
                let waiter = spawn(move || {
                    t2.store(true, Ordering::Release);
                    let mut g = l2.lock();
                    // However it waited (yields, or a park), it published `Holder` for this
                    // hold once the lock is informing.
                    let class = current_hook().class_cell().get();
                    // A long hold however fast the switches are: more than the microsecond
                    // below which no timed hold counts as long (one in 256 of the waited holds
                    // is timed).
                    let until = Instant::now() + Duration::from_micros(2);
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    *g += 1;
                    class
                });
                holder.join().unwrap();
                let waiter_class = waiter.join().unwrap();
                // Informing: a holder that found the lock free publishes `Holder` too.
                let g = lock.lock();
                if current_hook().class_cell().get() == PriorityClass::Holder {
                    assert_eq!(waiter_class, PriorityClass::Holder);
                    drop(g);
                    break;
                }
            }
            // Free and informing now: this acquisition publishes `Holder` as well.
            for _ in 0..3 {
                let g = lock.lock();
                assert_eq!(*g, 3 * rounds);
                assert_eq!(current_hook().class_cell().get(), PriorityClass::Holder);
                drop(g);
                assert_eq!(current_hook().class_cell().get(), PriorityClass::Running);
            }
            assert!(lock
                .try_lock()
                .is_some_and(|_g| { current_hook().class_cell().get() == PriorityClass::Holder }));
            assert_eq!(current_hook().class_cell().get(), PriorityClass::Running);
        });
    });
}
