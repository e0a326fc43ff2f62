//! Placement: lock-hot on/off really decides where a woken thread resumes, data
//! fragment batching and partner/rival rules hold on 2 and 5 workers, bad hints are typed
//! errors or documented no-ops, and exact-count stress with watchdogs.

mod common;

use common::{rt, with_watchdog};
use footprint_locks::{placement as lock_placement, Condvar, Mutex};
use footprint_runtime::park::current_worker;
use footprint_runtime::{migrate_to, set_fragment, yield_now, Error, GreenBuilder};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The lock-hot switch is process-wide: tests that depend on it take this lock.
static LOCK_HOT_SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

const ROUNDS: usize = 400;

#[derive(Default)]
struct Handshake {
    waiting: bool,
    go: bool,
}

/// `ROUNDS` wake-ups of a green thread parked (in `Condvar::wait`) on worker 1 by a green thread
/// running on worker 0; returns how many resumed on worker 1 (where the waiter parked) and on
/// worker 0 (the releaser's). A third thread keeps worker 1 awake (it yields in a loop), so the
/// plain rule's sleeping-worker exception never applies.
fn cross_worker_wakeups(lock_hot: bool) -> (usize, usize) {
    let _switch = LOCK_HOT_SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    let was = lock_placement::set_lock_hot(lock_hot);
    let rt = rt(2);
    let state = Arc::new((Mutex::new(Handshake::default()), Condvar::new()));
    let done = Arc::new(AtomicBool::new(false));
    let waiter_done = Arc::new(AtomicBool::new(false));
    let (on_parker, on_releaser) = rt.block_on(|| {
        let d = done.clone();
        let spinner = footprint_runtime::spawn(move || {
            migrate_to(1).unwrap();
            while !d.load(Ordering::Acquire) {
                yield_now();
            }
        });
        let s = state.clone();
        let wd = waiter_done.clone();
        let waiter = footprint_runtime::spawn(move || {
            let (m, cv) = &*s;
            let (mut parker, mut releaser) = (0, 0);
            for _ in 0..ROUNDS {
                // Taking the mutex may park and (lock-hot on) move us: wait from worker 1.
                let mut g = loop {
                    migrate_to(1).unwrap();
                    let g = m.lock();
                    if current_worker() == Some(1) {
                        break g;
                    }
                };
                g.waiting = true;
                while !g.go {
                    cv.wait(&mut g);
                }
                g.go = false;
                g.waiting = false;
                match current_worker() {
                    Some(1) => parker += 1,
                    Some(0) => releaser += 1,
                    other => panic!("resumed on {other:?}"),
                }
            }
            wd.store(true, Ordering::Release);
            (parker, releaser)
        });
        let s = state.clone();
        let wd = waiter_done.clone();
        let releaser = footprint_runtime::spawn(move || {
            let (m, cv) = &*s;
            for _ in 0..ROUNDS {
                loop {
                    // Release from worker 0 (taking the mutex may have moved us).
                    migrate_to(0).unwrap();
                    let mut g = m.lock();
                    if g.waiting && !g.go && current_worker() == Some(0) {
                        g.go = true;
                        cv.notify_one();
                        break;
                    }
                    drop(g);
                    yield_now();
                }
            }
            // Stay busy until the waiter is done: an idle worker 0 could steal the last
            // wake-up from worker 1's inbox.
            while !wd.load(Ordering::Acquire) {
                yield_now();
            }
        });
        let r = waiter.join().unwrap();
        releaser.join().unwrap();
        done.store(true, Ordering::Release);
        spinner.join().unwrap();
        r
    });
    lock_placement::set_lock_hot(was);
    (on_parker, on_releaser)
}

#[test]
fn lock_hot_off_resumes_woken_threads_where_they_parked() {
    with_watchdog(120, "lock-hot off", || {
        let (parker, releaser) = cross_worker_wakeups(false);
        assert_eq!(
            (parker, releaser),
            (ROUNDS, 0),
            "with lock-hot placement off every wake-up resumes on the waiter's worker"
        );
    });
}

#[test]
fn lock_hot_on_moves_woken_threads_to_the_releaser() {
    with_watchdog(120, "lock-hot on", || {
        let (parker, releaser) = cross_worker_wakeups(true);
        assert_eq!(parker + releaser, ROUNDS);
        // A notify that lands before the waiter's park completes leaves a permit and the waiter
        // continues where it is; every wake-up of a parked waiter moves it.
        assert!(
            releaser > 0,
            "lock-hot on: no wake-up moved to the releaser ({parker} stayed)"
        );
        eprintln!("lock-hot on: {releaser} of {ROUNDS} moved to the releaser's worker");
    });
}

/// A thread woken onto its waker's worker (lock-hot placement) while another worker idles does
/// not wait for the waker to give its worker up: the waker below neither parks nor yields until
/// the woken thread has run, so only the idle worker can run it (without that, both wait
/// forever and the watchdog fails the test). Rounds with the waiter parked on either worker.
#[test]
fn thread_woken_onto_a_busy_worker_runs_on_an_idle_one() {
    with_watchdog(60, "woken onto a busy worker", || {
        let _switch = LOCK_HOT_SWITCH.lock().unwrap_or_else(|e| e.into_inner());
        let was = lock_placement::set_lock_hot(true);
        let rt = rt(2);
        for round in 0..40 {
            let state = Arc::new((Mutex::new(Handshake::default()), Condvar::new()));
            let ran = Arc::new(AtomicBool::new(false));
            let (woken_on, waker_on) = rt.block_on(|| {
                let (s, r) = (state.clone(), ran.clone());
                let waiter = footprint_runtime::spawn(move || {
                    migrate_to(round % 2).unwrap();
                    let (m, cv) = &*s;
                    let mut g = m.lock();
                    g.waiting = true;
                    while !g.go {
                        cv.wait(&mut g);
                    }
                    drop(g);
                    r.store(true, Ordering::Release);
                    current_worker()
                });
                let (s, r) = (state.clone(), ran.clone());
                let waker = footprint_runtime::spawn(move || {
                    let (m, cv) = &*s;
                    loop {
                        let mut g = m.lock();
                        if g.waiting {
                            g.go = true;
                            cv.notify_one();
                            break;
                        }
                        drop(g);
                        yield_now();
                    }
                    // Keep this worker: no park, no yield, until the woken thread has run.
                    while !r.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    current_worker()
                });
                (waiter.join().unwrap(), waker.join().unwrap())
            });
            assert_ne!(
                woken_on, waker_on,
                "the woken thread ran beside its spinning waker"
            );
        }
        lock_placement::set_lock_hot(was);
    });
}

/// Spawns `per` threads on each of `fragments` fragments (interleaved: 0, 1, 2, .., 0, 1, ..)
/// while every other worker is held busy by a spinning thread, then lets them run; each
/// appends its fragment to the log of the worker it ran on. Returns the per-worker logs.
fn fragment_run(workers: usize, fragments: u64, per: usize) -> Vec<Vec<u64>> {
    let rt = rt(workers);
    let log = Arc::new(std::sync::Mutex::new(vec![Vec::new(); workers]));
    let gate = Arc::new(AtomicBool::new(false));
    rt.block_on(|| {
        let me = current_worker().unwrap();
        let held = Arc::new(AtomicUsize::new(0));
        let mut blockers = Vec::new();
        for w in (0..workers).filter(|&w| w != me) {
            let (gate, held) = (gate.clone(), held.clone());
            blockers.push(footprint_runtime::spawn(move || {
                migrate_to(w).unwrap();
                held.fetch_add(1, Ordering::AcqRel);
                // Spin without yielding: this worker runs nothing else until the gate opens.
                while !gate.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
            }));
        }
        while held.load(Ordering::Acquire) < workers - 1 {
            yield_now();
        }
        let mut hs = Vec::new();
        for _ in 0..per {
            for f in 0..fragments {
                let log = log.clone();
                let h = GreenBuilder::new()
                    .fragment(f, 256 << 10)
                    .spawn(move || {
                        let w = current_worker().unwrap();
                        log.lock().unwrap()[w].push(f);
                    })
                    .unwrap();
                hs.push(h);
            }
        }
        gate.store(true, Ordering::Release);
        for h in hs {
            h.join().unwrap();
        }
        for b in blockers {
            b.join().unwrap();
        }
    });
    let stats = rt.placement_stats();
    assert_eq!(stats.fragment_placements, fragments * per as u64);
    assert_eq!(stats.fragment_batches, fragments);
    let logs = log.lock().unwrap().clone();
    logs
}

/// Every fragment ran on one worker, its threads back to back there, and the fragments spread
/// over the workers.
fn check_batching(workers: usize, fragments: u64, per: usize) {
    let logs = fragment_run(workers, fragments, per);
    let mut home: HashMap<u64, usize> = HashMap::new();
    for (w, log) in logs.iter().enumerate() {
        assert_eq!(
            log.chunk_by(|a, b| a == b).count(),
            log.iter().collect::<std::collections::HashSet<_>>().len(),
            "worker {w} interleaved fragments: {log:?}"
        );
        for &f in log {
            assert_eq!(
                *home.entry(f).or_insert(w),
                w,
                "fragment {f} on two workers: {logs:?}"
            );
        }
    }
    assert_eq!(
        logs.iter().map(Vec::len).sum::<usize>(),
        fragments as usize * per
    );
    let used = logs.iter().filter(|l| !l.is_empty()).count();
    assert_eq!(used, workers.min(fragments as usize), "{logs:?}");
}

#[test]
fn fragment_batches_run_back_to_back_on_2_and_5_workers() {
    with_watchdog(120, "fragments", || {
        check_batching(1, 3, 10);
        check_batching(2, 4, 8);
        check_batching(5, 7, 6);
        check_batching(5, 3, 10);
    });
}

#[test]
fn set_fragment_moves_the_thread_to_its_batch() {
    with_watchdog(60, "set_fragment", || {
        let rt = rt(2);
        rt.block_on(|| {
            // Thread a holds fragment 5's batch open (it waits on `gate`); b changes to
            // fragment 5 while running and must end up on a's worker.
            let gate = Arc::new(AtomicBool::new(false));
            let at = Arc::new(AtomicUsize::new(usize::MAX));
            let (g, at2) = (gate.clone(), at.clone());
            let a = GreenBuilder::new()
                .fragment(5, 1 << 20)
                .spawn(move || {
                    at2.store(current_worker().unwrap(), Ordering::Release);
                    while !g.load(Ordering::Acquire) {
                        yield_now();
                    }
                })
                .unwrap();
            while at.load(Ordering::Acquire) == usize::MAX {
                yield_now();
            }
            let b = footprint_runtime::spawn(move || {
                set_fragment(5, 1 << 20).unwrap();
                current_worker().unwrap()
            });
            assert_eq!(b.join().unwrap(), at.load(Ordering::Acquire));
            gate.store(true, Ordering::Release);
            a.join().unwrap();
        });
    });
}

/// A fake sysfs tree with two CPUs, each with its own L2 and L3: two cache domains.
struct FakeSysfs(std::path::PathBuf);

impl FakeSysfs {
    fn two_domains(cpus: [usize; 2]) -> FakeSysfs {
        let root =
            std::env::temp_dir().join(format!("footprint-runtime-sysfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let list = format!("{},{}\n", cpus[0], cpus[1]);
        write("devices/system/cpu/online", &list);
        write("devices/system/node/node0/cpulist", &list);
        for cpu in cpus {
            for (index, level, size) in [(0, 1, "48K"), (2, 2, "2048K"), (3, 3, "32M")] {
                let base = format!("devices/system/cpu/cpu{cpu}/cache/index{index}");
                write(&format!("{base}/level"), &format!("{level}\n"));
                write(
                    &format!("{base}/type"),
                    if level == 1 { "Data\n" } else { "Unified\n" },
                );
                write(&format!("{base}/size"), &format!("{size}\n"));
                write(&format!("{base}/coherency_line_size"), "64\n");
                write(&format!("{base}/shared_cpu_list"), &format!("{cpu}\n"));
            }
        }
        FakeSysfs(root)
    }
}

impl Drop for FakeSysfs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn shuffling_groups_lock_contending_threads_on_one_domain() {
    let allowed = footprint_affinity::allowed_cpus().unwrap();
    if allowed.len() < 2 {
        eprintln!("skipped: two cache domains need two allowed CPUs, have {allowed:?}");
        return;
    }
    with_watchdog(60, "shuffling", move || {
        let cpus = [allowed[0], allowed[1]];
        let fs = FakeSysfs::two_domains(cpus);
        let topology = footprint_affinity::Topology::from_sysfs(&fs.0);
        // Scripted lock times: threads 0 and 1 wait 40 % of the time, 2 and 3 1 %.
        let table: Arc<std::sync::Mutex<HashMap<u64, f64>>> = Arc::default();
        let t2 = table.clone();
        let source: footprint_runtime::LockTimeSource =
            Arc::new(move |id| t2.lock().unwrap().get(&id).copied());
        let rt = footprint_runtime::Runtime::builder()
            .workers(2)
            .cpus(&cpus)
            .topology(topology)
            .shuffling(
                footprint_runtime::ShuffleConfig::new()
                    .periods(std::time::Duration::from_millis(1), 2)
                    .lock_times(source),
            )
            .build()
            .unwrap();
        let go = Arc::new(AtomicBool::new(false));
        let ready = Arc::new(AtomicUsize::new(0));
        let unparkers = Arc::new(std::sync::Mutex::new(Vec::new()));
        let hs: Vec<_> = (0..4usize)
            .map(|i| {
                let (table, go, ready, unparkers) =
                    (table.clone(), go.clone(), ready.clone(), unparkers.clone());
                rt.spawn(move || {
                    migrate_to(i % 2).unwrap();
                    let id = footprint_runtime::current_thread_id().unwrap();
                    table
                        .lock()
                        .unwrap()
                        .insert(id, if i < 2 { 0.4 } else { 0.01 });
                    // Registers this thread for monitoring (as a lock wait would).
                    footprint_runtime::park::record_lock_wait(0);
                    unparkers
                        .lock()
                        .unwrap()
                        .push(footprint_runtime::park::current_unparker());
                    ready.fetch_add(1, Ordering::AcqRel);
                    while !go.load(Ordering::Acquire) {
                        footprint_runtime::park::park();
                    }
                    (id, current_worker().unwrap())
                })
            })
            .collect();
        while ready.load(Ordering::Acquire) < 4 {
            std::thread::yield_now();
        }
        // Wait for a decision that saw all four threads, and keep it: the monitor decides
        // every 2 ms, so a later one (after some threads ended) may leave threads out.
        let ids: Vec<u64> = table.lock().unwrap().keys().copied().collect();
        let groups = loop {
            let stats = rt.placement_stats();
            if let Some(g) = stats
                .last_shuffle
                .filter(|g| ids.iter().all(|id| g.concat().contains(id)))
            {
                break g;
            }
            std::thread::yield_now();
        };
        go.store(true, Ordering::Release);
        for u in unparkers.lock().unwrap().iter() {
            u.unpark(footprint_locks::Placement::Anywhere);
        }
        let r: Vec<(u64, usize)> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let ids: Vec<u64> = r.iter().map(|x| x.0).collect();
        let after: Vec<usize> = r.iter().map(|x| x.1).collect();
        let stats = rt.placement_stats();
        let group_of = |id: u64| groups.iter().position(|g| g.contains(&id)).unwrap();
        assert_eq!(group_of(ids[0]), group_of(ids[1]), "{groups:?} {stats}");
        assert_eq!(group_of(ids[2]), group_of(ids[3]), "{groups:?} {stats}");
        assert_ne!(group_of(ids[0]), group_of(ids[2]), "{groups:?} {stats}");
        assert!(
            stats.shuffle_decisions >= 1 && stats.shuffle_swaps >= 1,
            "{stats}"
        );
        // Applied at the wake-up: each group on its own domain (here, its own worker).
        assert_eq!(after[0], after[1], "{after:?}");
        assert_eq!(after[2], after[3], "{after:?}");
        assert_ne!(after[0], after[2], "{after:?}");
    });
}

#[test]
fn bad_hints_are_typed_errors_or_documented_no_ops() {
    let rt = rt(2);
    let e = rt
        .block_on(|| GreenBuilder::new().fragment(3, 0).spawn(|| ()))
        .unwrap_err();
    assert!(matches!(e, Error::EmptyFragment { fragment: 3 }), "{e}");
    assert!(e.to_string().contains("0 bytes"));
    let e = rt.block_on(|| set_fragment(3, 0)).unwrap_err();
    assert!(matches!(e, Error::EmptyFragment { fragment: 3 }));
    assert!(matches!(set_fragment(3, 10), Err(Error::NotGreen { .. })));
    assert!(matches!(migrate_to(0), Err(Error::NotGreen { .. })));
    let e = rt.block_on(|| migrate_to(2)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NoSuchWorker {
                worker: 2,
                workers: 2
            }
        ),
        "{e}"
    );
    // A finished partner / rival: ignored (counted), the thread still runs.
    rt.block_on(|| {
        let done = footprint_runtime::spawn(|| 1);
        while !done.is_finished() {
            yield_now();
        }
        let p = GreenBuilder::new().partner(&done).spawn(|| 2).unwrap();
        let r = GreenBuilder::new().rival(&done).spawn(|| 3).unwrap();
        assert_eq!(p.join().unwrap() + r.join().unwrap(), 5);
        assert_eq!(done.join().unwrap(), 1);
    });
    assert_eq!(rt.placement_stats().finished_hint_ignored, 2);
}

/// A partner starts on its partner's worker, a rival away from it.
fn check_partners(workers: usize) {
    let rt = rt(workers);
    rt.block_on(|| {
        for target in 0..workers {
            let stop = Arc::new(AtomicBool::new(false));
            let arrived = Arc::new(AtomicBool::new(false));
            let (s, a) = (stop.clone(), arrived.clone());
            let anchor = footprint_runtime::spawn(move || {
                migrate_to(target).unwrap();
                a.store(true, Ordering::Release);
                while !s.load(Ordering::Acquire) {
                    yield_now();
                }
            });
            while !arrived.load(Ordering::Acquire) {
                yield_now();
            }
            for _ in 0..20 {
                let p = GreenBuilder::new()
                    .partner(&anchor)
                    .spawn(current_worker)
                    .unwrap();
                let r = GreenBuilder::new()
                    .rival(&anchor)
                    .spawn(current_worker)
                    .unwrap();
                assert_eq!(
                    p.join().unwrap(),
                    Some(target),
                    "the partner runs on its partner's worker"
                );
                assert_ne!(r.join().unwrap(), Some(target), "the rival runs elsewhere");
            }
            stop.store(true, Ordering::Release);
            anchor.join().unwrap();
        }
    });
    let st = rt.placement_stats();
    assert_eq!(st.partner_placements, 20 * workers as u64);
    assert_eq!(st.rival_placements, 20 * workers as u64);
    assert_eq!(st.finished_hint_ignored, 0);
}

#[test]
fn partners_share_and_rivals_avoid_a_worker_on_2_and_5_workers() {
    with_watchdog(120, "partners", || {
        check_partners(2);
        check_partners(5);
    });
}

/// Exact-count stress: thousands of hinted threads on 5 workers contend for one lock, change
/// fragment, migrate and yield while a fast shuffling monitor regroups them; every increment
/// and every thread is accounted for.
#[test]
fn hinted_threads_stress_exact_counts() {
    with_watchdog(300, "placement stress", || {
        const THREADS: usize = 2_000;
        const ROUNDS: usize = 10;
        const FRAGMENTS: u64 = 13;
        let rt = footprint_runtime::Runtime::builder()
            .workers(5)
            .shuffling(
                footprint_runtime::ShuffleConfig::new()
                    .periods(std::time::Duration::from_millis(1), 3)
                    .threshold(0.0),
            )
            .build()
            .unwrap();
        let counter = Arc::new(Mutex::new(0u64));
        let done = rt.block_on(|| {
            let hs: Vec<_> = (0..THREADS)
                .map(|i| {
                    let counter = counter.clone();
                    let b = GreenBuilder::new().fragment(i as u64 % FRAGMENTS, 64 << 10);
                    b.spawn(move || {
                        for r in 0..ROUNDS {
                            *counter.lock() += 1;
                            match r % 3 {
                                0 => set_fragment((i + r) as u64 % FRAGMENTS, 64 << 10).unwrap(),
                                1 => migrate_to((i + r) % 5).unwrap(),
                                _ => yield_now(),
                            }
                        }
                        1u64
                    })
                    .unwrap()
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        });
        assert_eq!(done, THREADS as u64);
        assert_eq!(*counter.lock(), (THREADS * ROUNDS) as u64);
        let s = rt.placement_stats();
        assert_eq!(
            s.fragment_placements,
            (THREADS * (1 + ROUNDS.div_ceil(3))) as u64,
            "{s}"
        );
    });
}

/// Threads woken on a worker whose running thread keeps it (it neither parks nor yields) while
/// another worker sleeps are taken by that worker: all but the first go where it can steal them
/// (a barrier's last arrival woke 8 threads onto its worker and ran on for hundreds of
/// microseconds while the other worker slept). Without that, the waker below would spin for ever
/// (the watchdog fails the test).
#[test]
fn threads_woken_behind_a_busy_waker_run_on_an_idle_worker() {
    const WOKEN: usize = 6;
    with_watchdog(60, "woken threads behind a busy waker", || {
        let rt = rt(2);
        for _round in 0..10 {
            let started = Arc::new(AtomicUsize::new(0));
            let parked = Arc::new(AtomicUsize::new(0));
            let release = Arc::new(AtomicBool::new(false));
            let unparkers = Arc::new(std::sync::Mutex::new(Vec::new()));
            rt.block_on(|| {
                migrate_to(0).unwrap();
                let handles: Vec<_> = (0..WOKEN)
                    .map(|_| {
                        let (s, p, r, u) = (
                            started.clone(),
                            parked.clone(),
                            release.clone(),
                            unparkers.clone(),
                        );
                        footprint_runtime::spawn(move || {
                            migrate_to(0).unwrap();
                            let me = footprint_runtime::park::current_unparker();
                            u.lock().unwrap().push(me);
                            p.fetch_add(1, Ordering::AcqRel);
                            while !r.load(Ordering::Acquire) {
                                footprint_runtime::park::park();
                            }
                            s.fetch_add(1, Ordering::AcqRel);
                        })
                    })
                    .collect();
                // Everyone has parked on worker 0 (this thread yields there meanwhile).
                while parked.load(Ordering::Acquire) < WOKEN {
                    yield_now();
                }
                release.store(true, Ordering::Release);
                let unparkers = unparkers.lock().unwrap();
                // The first stays on worker 0 (behind this thread, which keeps the worker).
                unparkers[0].unpark(footprint_locks::Placement::Anywhere);
                for (k, u) in unparkers.iter().enumerate().skip(1) {
                    // Worker 1 is asleep (it has nothing to do) before each wake-up.
                    while rt.sleeping_workers() == 0 {
                        std::hint::spin_loop();
                    }
                    u.unpark(footprint_locks::Placement::Anywhere);
                    while started.load(Ordering::Acquire) < k {
                        std::hint::spin_loop();
                    }
                }
                drop(unparkers);
                for h in handles {
                    h.join().unwrap();
                }
            });
            assert_eq!(started.load(Ordering::Acquire), WOKEN);
        }
    });
}

/// A barrier's release sends each parked rank back to its own worker even where that worker went
/// to sleep meanwhile (`Placement::LastWorker`): the last arrival goes on running, and a rank
/// queued behind it on its worker would run after it instead of beside it, for every phase
/// after (two ranks on two workers ran one after the other that way).
#[test]
fn barrier_release_wakes_a_sleeping_worker_for_its_rank() {
    with_watchdog(30, "barrier release to a sleeping worker", || {
        let rt = rt(2);
        let resumed_on = rt.block_on(|| {
            migrate_to(0).unwrap();
            let barrier = Arc::new(footprint_locks::CentralBarrier::<
                footprint_locks::ImmediateBlock,
            >::new(2));
            let arrived = Arc::new(AtomicBool::new(false));
            let sleeps_before = rt.stats().workers[1].sleeps;
            let (b, a) = (barrier.clone(), arrived.clone());
            let resumed = Arc::new(AtomicUsize::new(usize::MAX));
            let r = resumed.clone();
            let rank = footprint_runtime::spawn(move || {
                migrate_to(1).unwrap();
                a.store(true, Ordering::Release);
                b.wait();
                r.store(current_worker().unwrap(), Ordering::Release);
            });
            // Wait, without yielding (a yield could wake worker 1), until the rank has arrived
            // and worker 1, with nothing left to run, has gone to sleep.
            while !arrived.load(Ordering::Acquire) || rt.stats().workers[1].sleeps == sleeps_before
            {
                std::hint::spin_loop();
            }
            barrier.wait();
            // The last arrival goes on running (as a rank's next sweep would): worker 0 stays
            // busy, so only worker 1 can run the rank.
            while resumed.load(Ordering::Acquire) == usize::MAX {
                std::hint::spin_loop();
            }
            rank.join().unwrap();
            resumed.load(Ordering::Acquire)
        });
        assert_eq!(
            resumed_on, 1,
            "the rank resumed on the releaser's worker instead of its own"
        );
    });
}
