//! Accounting at every switch (`Builder::counters`): per-thread and per-worker sums, miss counts
//! from a scripted counter source feeding the affinity policies, failing sources, and
//! `Counters::Hardware` on a machine without a PMU.
//!
//! The policy tests run one pinned worker. Every green thread that runs there pushes, just
//! before it stops, two readings onto the worker's scripted source: the reading its run ends
//! with (the running total plus the misses it wants counted) and the same value again for the
//! next run to begin with. The worker reads the source exactly twice per run (start, end), so
//! each run's delta is the misses its thread scripted (0 for a run that pushed nothing, with
//! `ScriptEnd::RepeatLast`). The expected resume order is computed with the affinity crate's own
//! `on_stop`/`key` on equivalent state (the same ledger kind, a worker on the same CPU, the same
//! stops with the same misses in the same order), then a stable sort by key.

mod common;
use common::with_watchdog;
use footprint_affinity::{
    AffinityPolicy, Ledger, Policy, PolicyKind, ThreadAffinity, Topology, WorkerAffinity,
};
use footprint_locks::{Placement, Unparker};
use footprint_pmu::{Capabilities, Event, PmuError, ScriptEnd, ScriptFeeder, ScriptedSource};
use footprint_runtime::park::{current_unparker, park};
use footprint_runtime::{
    current_stats, yield_now, Counters, Error, ReadyOrder, Runtime, ThreadStats,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

const THREADS: usize = 6;
/// Misses each thread scripts for its first run (ties on purpose: FIFO among equal keys).
const MISSES: [u64; THREADS] = [4_000, 100, 25_000, 100, 900, 60_000];
/// The order the parked threads are woken in: neither the park order nor its reverse.
const WAKE_ORDER: [usize; THREADS] = [2, 0, 5, 3, 1, 4];

/// A one-worker runtime whose worker reads a scripted source fed through the returned feeder.
fn scripted_runtime(kind: PolicyKind) -> (Runtime, ScriptFeeder) {
    let src = ScriptedSource::new(&[Event::LlcMisses], [[0u64]])
        .unwrap()
        .on_end(ScriptEnd::RepeatLast);
    let feeder = src.feeder();
    let slot = Mutex::new(Some(src));
    let rt = Runtime::builder()
        .workers(1)
        .ready_order(ReadyOrder::Policy(Policy::new(kind)))
        .counters(Counters::source(move |_| {
            let src =
                slot.lock().unwrap().take().ok_or_else(|| {
                    PmuError::InvalidConfig("one worker, one scripted source".into())
                })?;
            Ok(Box::new(src))
        }))
        .build()
        .expect("runtime");
    (rt, feeder)
}

/// The affinity crate's order: `parked` stop on the runtime's worker (same CPU, same ledger
/// kind) with their scripted misses, then are keyed in `woken` order; smallest key first, FIFO
/// on ties.
fn expected_order(kind: PolicyKind, cpu: Option<usize>, parked: &[usize]) -> Vec<usize> {
    let ledger = Arc::new(Ledger::for_last_level(&Topology::detect()));
    let worker = WorkerAffinity::new(0, cpu, ledger);
    let p = Policy::new(kind);
    let mut threads = [ThreadAffinity::new(); THREADS];
    for &id in parked {
        p.on_stop(&mut threads[id], Some(MISSES[id]), &worker);
    }
    let mut keyed: Vec<(u64, usize)> = WAKE_ORDER
        .iter()
        .map(|&id| (p.key(&threads[id], &worker), id))
        .collect();
    keyed.sort_by_key(|&(k, _)| k);
    keyed.into_iter().map(|(_, id)| id).collect()
}

struct Stage {
    feeder: ScriptFeeder,
    total: AtomicU64,
    unparkers: Mutex<Vec<Option<Unparker>>>,
    park_order: Mutex<Vec<usize>>,
    resume_order: Mutex<Vec<usize>>,
    released: Vec<AtomicBool>,
}

impl Stage {
    /// Scripts `misses` for the run of the calling thread that is about to stop.
    fn script_stop(&self, misses: u64) {
        let t = self.total.fetch_add(misses, Ordering::Relaxed) + misses;
        self.feeder.push(&[t]).unwrap(); // the end of this run
        self.feeder.push(&[t]).unwrap(); // the start of the next
    }

    fn parked_thread(&self, id: usize, registered: mpsc::Sender<()>) -> ThreadStats {
        self.unparkers.lock().unwrap()[id] = Some(current_unparker());
        self.park_order.lock().unwrap().push(id);
        registered.send(()).unwrap();
        self.script_stop(MISSES[id]);
        // One worker: nothing else runs until this thread has parked.
        while !self.released[id].load(Ordering::Acquire) {
            park();
        }
        self.resume_order.lock().unwrap().push(id);
        current_stats().expect("on a green thread")
    }
}

/// Parks the threads (each stop counted with its scripted misses), wakes them all from a green
/// thread on the same worker, and compares the resume order with the affinity crate's.
fn misses_order(kind: PolicyKind) {
    let (rt, feeder) = scripted_runtime(kind);
    let stage = Arc::new(Stage {
        feeder,
        total: AtomicU64::new(0),
        unparkers: Mutex::new(vec![None; THREADS]),
        park_order: Mutex::new(Vec::new()),
        resume_order: Mutex::new(Vec::new()),
        released: (0..THREADS).map(|_| AtomicBool::new(false)).collect(),
    });
    let (tx, rx) = mpsc::channel();
    let handles: Vec<_> = (0..THREADS)
        .map(|id| {
            let (s, tx) = (stage.clone(), tx.clone());
            rt.spawn(move || s.parked_thread(id, tx))
        })
        .collect();
    for _ in 0..THREADS {
        rx.recv().unwrap();
    }
    // The waker runs on the same worker: each woken thread is keyed there, and none runs
    // before the waker finishes.
    let s = stage.clone();
    rt.spawn(move || {
        let unparkers = s.unparkers.lock().unwrap();
        for id in WAKE_ORDER {
            s.released[id].store(true, Ordering::Release);
            unparkers[id]
                .as_ref()
                .expect("registered")
                .unpark(Placement::Anywhere);
        }
    })
    .join()
    .unwrap();
    let stats: Vec<ThreadStats> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let parked = stage.park_order.lock().unwrap().clone();
    let resumed = stage.resume_order.lock().unwrap().clone();
    let cpu = rt.worker_cpus()[0];
    let expected = expected_order(kind, cpu, &parked);
    assert_eq!(
        resumed, expected,
        "{kind}: parked {parked:?}, woken {WAKE_ORDER:?}"
    );
    // The counts decide the order: without them (VirtualTime, what these policies fall back
    // to: the most recently parked first) it would differ. ReloadTransient needs the worker's
    // cache domain for that.
    let ledger = Arc::new(Ledger::for_last_level(&Topology::detect()));
    if kind != PolicyKind::ReloadTransient || WorkerAffinity::new(0, cpu, ledger).domain().is_some()
    {
        let uncounted: Vec<usize> = parked.iter().rev().copied().collect();
        assert_ne!(resumed, uncounted, "{kind}: the order ignores the misses");
    }
    // The counts reached the threads' records too: the scripted misses of the first run,
    // read during the second (not yet counted) one.
    for (id, s) in stats.iter().enumerate() {
        assert_eq!(s.misses, Some(MISSES[id]), "thread {id}: {s}");
        assert_eq!((s.runs, s.counted_runs), (2, 1), "thread {id}: {s}");
    }
    let w = &rt.stats().workers[0];
    assert_eq!(w.counter_failures, 0);
    assert_eq!(w.misses, MISSES.iter().sum::<u64>());
}

#[test]
fn min_misses_resumes_the_fewest_misses_first() {
    with_watchdog(60, "min misses", || misses_order(PolicyKind::MinMisses));
    // Against the documented rule too: fewest misses first, FIFO (wake order) on ties.
    let mut by_rule = WAKE_ORDER.to_vec();
    by_rule.sort_by_key(|&id| MISSES[id]);
    assert_eq!(
        expected_order(PolicyKind::MinMisses, None, &[0, 1, 2, 3, 4, 5]),
        by_rule
    );
}

#[test]
fn miss_sum_orders_by_the_scripted_counts() {
    with_watchdog(60, "miss sum", || misses_order(PolicyKind::MissSum));
}

#[test]
fn reload_transient_orders_by_the_scripted_counts() {
    with_watchdog(60, "reload transient", || {
        misses_order(PolicyKind::ReloadTransient)
    });
}

/// Each green thread counts its own yields; its runs are one more (its first start), on
/// `workers` workers where threads migrate and are stolen. The per-worker runs add up to the
/// threads' runs exactly, and the run time of all threads fits in wall time × workers.
fn accounting_sums(workers: usize, n: u64) {
    let start = Instant::now();
    let rt = Runtime::builder()
        .workers(workers)
        .counters(Counters::Time)
        .build()
        .unwrap();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            rt.spawn(move || {
                let yields = 5 + i % 7;
                let mut counted = 0;
                for _ in 0..yields {
                    yield_now();
                    counted += 1;
                }
                (counted, current_stats().unwrap())
            })
        })
        .collect();
    let mut thread_runs = 0;
    let mut run_time = std::time::Duration::ZERO;
    for h in handles {
        while !h.is_finished() {
            std::thread::yield_now();
        }
        let after = h.stats();
        let (yields, inside) = h.join().unwrap();
        assert_eq!(inside.runs, yields + 1, "{inside}");
        assert_eq!(after.runs, yields + 1, "{after}");
        assert!(after.run_time >= inside.run_time);
        assert!(after.migrations < after.runs && after.steals <= after.runs);
        assert_eq!(after.misses, None, "time only counts no misses");
        thread_runs += after.runs;
        run_time += after.run_time;
    }
    let wall = start.elapsed();
    let stats = rt.stats();
    assert_eq!(stats.counters, "time only");
    let worker_runs: u64 = stats.workers.iter().map(|w| w.runs).sum();
    assert_eq!(worker_runs, thread_runs, "{stats}");
    assert!(
        run_time <= wall * workers as u32,
        "run {run_time:?} > wall {wall:?} x {workers}"
    );
    let busy: std::time::Duration = stats.workers.iter().map(|w| w.busy_time).sum();
    assert!(busy >= run_time, "{stats}");
}

#[test]
fn accounting_sums_match_switches() {
    with_watchdog(60, "accounting sums, 2 workers", || accounting_sums(2, 40));
}

#[test]
fn accounting_sums_stress_five_workers() {
    with_watchdog(120, "accounting sums, 5 workers", || {
        accounting_sums(5, 2_000)
    });
}

/// With counters off nothing per thread is measured, but the per-worker runs and parks are.
#[test]
fn counters_off_keeps_worker_totals() {
    with_watchdog(60, "counters off", || {
        let rt = Runtime::builder().workers(2).build().unwrap();
        let h = rt.spawn(|| {
            yield_now();
            current_stats().unwrap()
        });
        let s = h.join().unwrap();
        assert_eq!(s, ThreadStats::default());
        let stats = rt.stats();
        assert_eq!(stats.counters, "off");
        assert_eq!(stats.workers.iter().map(|w| w.runs).sum::<u64>(), 2);
    });
}

/// A thread that parks until a green thread on the same (only) worker wakes it: two runs, one
/// park, time parked counted.
#[test]
fn parked_time_is_counted() {
    with_watchdog(60, "parked time", || {
        let rt = Runtime::builder()
            .workers(1)
            .counters(Counters::Time)
            .build()
            .unwrap();
        let (tx, rx) = mpsc::channel::<Unparker>();
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let h = rt.spawn(move || {
            tx.send(current_unparker()).unwrap();
            while !d.load(Ordering::Acquire) {
                park();
            }
        });
        let u = rx.recv().unwrap();
        // One worker: the waker runs only once the parker has parked.
        rt.spawn(move || {
            done.store(true, Ordering::Release);
            u.unpark(Placement::Anywhere);
        })
        .join()
        .unwrap();
        while !h.is_finished() {
            std::thread::yield_now();
        }
        let s = h.stats();
        assert_eq!(s.runs, 2, "{s}");
        assert!(s.parked_time > std::time::Duration::ZERO, "{s}");
        assert_eq!(rt.stats().workers[0].parks, 1);
        h.join().unwrap();
    });
}

/// A lock wait counts for the green thread that waited, not for the holder: on one worker the
/// holder yields while holding, so the thread it spawned finds the lock taken.
#[test]
fn lock_wait_is_attributed_to_the_waiter() {
    with_watchdog(60, "lock wait", || {
        let rt = Runtime::builder().workers(1).build().unwrap();
        let (holder, waiter) = rt.block_on(|| {
            let m = Arc::new(footprint_locks::Mutex::new(0u64));
            let g = m.lock();
            let m2 = m.clone();
            let waiter = footprint_runtime::spawn(move || {
                *m2.lock() += 1;
                current_stats().unwrap()
            });
            yield_now(); // the waiter runs and finds the lock held
            drop(g);
            let waiter = waiter.join().unwrap();
            (current_stats().unwrap(), waiter)
        });
        assert!(waiter.lock_wait > std::time::Duration::ZERO, "{waiter}");
        assert_eq!(holder.lock_wait, std::time::Duration::ZERO, "{holder}");
    });
}

/// A source that runs out mid-run (its second read fails) and a source that cannot be made:
/// the failures are counted and reported, accounting goes on with time only, no thread is lost.
#[test]
fn failing_sources_fall_back_to_time() {
    with_watchdog(60, "failing sources", || {
        let rt = Runtime::builder()
            .workers(2)
            .counters(Counters::source(|worker| {
                if worker == 1 {
                    return Err(PmuError::InvalidConfig("no source for worker 1".into()));
                }
                Ok(Box::new(ScriptedSource::new(
                    &[Event::LlcMisses],
                    [[0u64]],
                )?))
            }))
            .build()
            .unwrap();
        const N: u64 = 200;
        let handles: Vec<_> = (0..N)
            .map(|_| {
                rt.spawn(|| {
                    yield_now();
                    current_stats().unwrap().runs
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 2);
        }
        let stats = rt.stats();
        let failures: Vec<u64> = stats.workers.iter().map(|w| w.counter_failures).collect();
        assert_eq!(failures[1], 1, "{stats}");
        // Worker 0's script held one reading: its first run's end read failed, if it ran any.
        assert!(failures[0] <= 1, "{stats}");
        assert!(stats.counter_error.is_some(), "{stats}");
        assert!(stats.to_string().contains("counter source failed"));
    });
}

/// `Counters::Hardware` is a typed error here when the probe finds no counter (the positive
/// case needs a PMU, which this machine may not have: then it is skipped, and says so).
#[test]
fn hardware_counters_error_says_why() {
    let caps = Capabilities::get();
    let r = Runtime::builder()
        .workers(1)
        .counters(Counters::Hardware)
        .build();
    match r {
        Err(Error::NoHardwareCounters { reason }) => {
            assert!(caps.hardware_group.reason().is_some() || !caps.cache_misses_available());
            assert!(!reason.is_empty());
            let msg = Error::NoHardwareCounters { reason }.to_string();
            assert!(msg.contains("Counters::Auto"), "{msg}");
            eprintln!(
                "no PMU here ({}): positive Hardware case skipped",
                caps.summary()
            );
            let auto = Runtime::builder()
                .workers(1)
                .counters(Counters::Auto)
                .build()
                .unwrap();
            assert!(auto.stats().counters.starts_with("time only"));
        }
        Ok(rt) => {
            assert!(rt.stats().counters.contains("hardware"));
            let h = rt.spawn(|| ());
            while !h.is_finished() {
                std::thread::yield_now();
            }
            assert_eq!(h.stats().counted_runs, 1);
        }
        Err(e) => panic!("unexpected error: {e}"),
    }
}
