//! Ready threads ordered by an affinity policy (`ReadyOrder::Policy`, `ReadyOrder::Auto`).
//!
//! The order tests park green threads on one worker in a recorded order, wake them all from one
//! place in a chosen (different) order, and record the order they resume in. The expected order
//! is computed with the affinity crate's own `on_stop`/`key` on equivalent state (one
//! `WorkerAffinity`, one `ThreadAffinity` per thread, the same stops and enqueues in the same
//! order), then a stable sort by key (the ready heap is FIFO on ties).

mod common;
use common::with_watchdog;
use footprint_affinity::{
    AffinityPolicy, Ledger, Policy, PolicyKind, ThreadAffinity, Topology, WorkerAffinity,
};
use footprint_locks::{Placement, Unparker};
use footprint_runtime::park::{current_unparker, current_worker, park};
use footprint_runtime::{join, spawn, yield_now, ReadyOrder, Runtime};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

const THREADS: usize = 6;

/// The order the parked threads are woken in: neither the park order nor its reverse.
const WAKE_ORDER: [usize; THREADS] = [2, 0, 5, 3, 1, 4];

fn runtime(workers: usize, order: ReadyOrder) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .ready_order(order)
        .build()
        .expect("runtime")
}

fn policy(kind: PolicyKind) -> ReadyOrder {
    ReadyOrder::Policy(Policy::new(kind))
}

/// What the affinity crate prescribes: `parked` stop on one worker in this order, then are made
/// ready (`key`) in `woken` order; they resume in ascending key order, FIFO on ties.
fn expected_resume_order(kind: PolicyKind, parked: &[usize], woken: &[usize]) -> Vec<usize> {
    let ledger = Arc::new(Ledger::for_last_level(&Topology::detect()));
    let worker = WorkerAffinity::new(0, None, ledger);
    let p = Policy::new(kind);
    let mut threads = vec![ThreadAffinity::new(); parked.len()];
    for &id in parked {
        p.on_stop(&mut threads[id], None, &worker);
    }
    let mut keyed: Vec<(u64, usize)> = woken
        .iter()
        .map(|&id| (p.key(&threads[id], &worker), id))
        .collect();
    keyed.sort_by_key(|&(k, _)| k); // stable: FIFO among equal keys
    keyed.into_iter().map(|(_, id)| id).collect()
}

/// Shared state of one order experiment.
#[derive(Default)]
struct Stage {
    unparkers: Mutex<Vec<Option<Unparker>>>,
    park_order: Mutex<Vec<usize>>,
    resume_order: Mutex<Vec<usize>>,
    released: Vec<AtomicBool>,
    parked: AtomicUsize,
}

impl Stage {
    fn new() -> Arc<Stage> {
        Arc::new(Stage {
            unparkers: Mutex::new(vec![None; THREADS]),
            released: (0..THREADS).map(|_| AtomicBool::new(false)).collect(),
            ..Stage::default()
        })
    }

    /// Body of parked thread `id`: record, park until released, record the resumption.
    fn parked_thread(&self, id: usize) {
        self.unparkers.lock().unwrap()[id] = Some(current_unparker());
        self.park_order.lock().unwrap().push(id);
        self.parked.fetch_add(1, Ordering::Release);
        while !self.released[id].load(Ordering::Acquire) {
            park();
        }
        self.resume_order.lock().unwrap().push(id);
    }

    fn wake_all(&self, hint: Placement) {
        let unparkers = self.unparkers.lock().unwrap();
        for id in WAKE_ORDER {
            self.released[id].store(true, Ordering::Release);
            unparkers[id].as_ref().expect("registered").unpark(hint);
        }
    }

    fn check(&self, kind: PolicyKind, path: &str) {
        let parked = self.park_order.lock().unwrap().clone();
        let resumed = self.resume_order.lock().unwrap().clone();
        assert_eq!(parked.len(), THREADS);
        let expected = expected_resume_order(kind, &parked, &WAKE_ORDER);
        assert_eq!(
            resumed, expected,
            "{kind} ({path}): parked {parked:?}, woken {WAKE_ORDER:?}"
        );
    }
}

/// Parks `THREADS` green threads on a one-worker runtime, then a green thread on the same worker
/// wakes them all (each is pushed on the ready heap with its key by the waker's worker).
fn woken_locally(kind: PolicyKind) {
    let rt = runtime(1, policy(kind));
    let stage = Stage::new();
    let st = stage.clone();
    rt.block_on(move || {
        let handles: Vec<_> = (0..THREADS)
            .map(|id| {
                let s = st.clone();
                spawn(move || s.parked_thread(id))
            })
            .collect();
        // One worker: the spawned threads run while we yield, and each parks before the next
        // runs (recording and parking do not switch).
        while st.parked.load(Ordering::Acquire) < THREADS {
            yield_now();
        }
        st.wake_all(Placement::Anywhere);
        for h in handles {
            h.join().unwrap();
        }
    });
    stage.check(kind, "woken on the same worker");
}

/// Parks `THREADS` green threads on one worker ("home") of a two-worker runtime, then a green
/// thread on the other worker wakes them all into home's inbox (`Placement::Worker(home)`) while
/// home is busy; home takes them into its heap, keyed for itself, before it runs any of them.
fn woken_into_inbox(kind: PolicyKind) {
    let rt = runtime(2, policy(kind));
    let stage = Stage::new();
    let st = stage.clone();
    let gate_running = Arc::new(AtomicBool::new(false));
    let gate_release = Arc::new(AtomicBool::new(false));
    rt.block_on(move || {
        // This green thread blocks its worker in `recv` below, so the other worker steals
        // `on_w0` and it and its children run there ("home"); nothing can be stolen back.
        let (tx, rx) = mpsc::channel();
        let (gr, gl) = (gate_running.clone(), gate_release.clone());
        let st0 = st.clone();
        let on_w0 = spawn(move || {
            let home = current_worker().expect("green");
            let handles: Vec<_> = (0..THREADS)
                .map(|id| {
                    let s = st0.clone();
                    spawn(move || s.parked_thread(id))
                })
                .collect();
            while st0.parked.load(Ordering::Acquire) < THREADS {
                yield_now();
            }
            tx.send(home).unwrap();
            // Keep `home` busy (no switch) until the waker has filled its inbox.
            gr.store(true, Ordering::Release);
            while !gl.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            handles
        });
        let home = rx.recv().unwrap();
        while !gate_running.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
        st.wake_all(Placement::Worker(home));
        gate_release.store(true, Ordering::Release);
        // Stay busy (no park, no steal) until they all ran: an idle worker here could take a
        // woken thread from `home`'s inbox, or be offered a spill, and run it out of order.
        while st.resume_order.lock().unwrap().len() < THREADS {
            std::hint::spin_loop();
        }
        for h in on_w0.join().unwrap() {
            h.join().unwrap();
        }
    });
    stage.check(kind, "woken into the inbox");
}

#[test]
fn virtual_time_resumes_the_most_recently_parked_first() {
    with_watchdog(30, "virtual time, local", || {
        woken_locally(PolicyKind::VirtualTime)
    });
    // The oracle against the documented rule: most recently parked first.
    let parked = [3, 1, 4, 0, 5, 2];
    let mut reversed = parked;
    reversed.reverse();
    assert_eq!(
        expected_resume_order(PolicyKind::VirtualTime, &parked, &WAKE_ORDER),
        reversed
    );
}

#[test]
fn no_affinity_resumes_the_last_woken_first() {
    with_watchdog(30, "no affinity, local", || {
        woken_locally(PolicyKind::NoAffinity)
    });
    let mut reversed = WAKE_ORDER;
    reversed.reverse();
    assert_eq!(
        expected_resume_order(PolicyKind::NoAffinity, &[0, 1, 2, 3, 4, 5], &WAKE_ORDER),
        reversed
    );
}

#[test]
fn miss_policies_without_counts_order_like_virtual_time() {
    for kind in [
        PolicyKind::MinMisses,
        PolicyKind::MissSum,
        PolicyKind::ReloadTransient,
    ] {
        with_watchdog(30, kind.name(), move || woken_locally(kind));
    }
}

#[test]
fn inbox_wakeups_are_keyed_by_the_target_worker() {
    for kind in [PolicyKind::VirtualTime, PolicyKind::NoAffinity] {
        with_watchdog(30, kind.name(), move || woken_into_inbox(kind));
    }
}

#[test]
fn ready_order_reports_the_policy_in_force() {
    let rt = runtime(1, ReadyOrder::default());
    assert_eq!(rt.ready_order(), ReadyOrder::Lifo);
    assert_eq!(rt.ready_order().policy().map(|p| p.kind()), None);
    drop(rt);

    let rt = runtime(1, ReadyOrder::Auto);
    // The default counters count no misses, so Auto decides as for a machine without them.
    let picked = Policy::auto_for(rt.topology(), false);
    assert_eq!(rt.ready_order(), ReadyOrder::Policy(picked));
    let shown = rt.ready_order().to_string();
    assert!(shown.contains("auto:"), "{shown}");
    assert!(shown.contains(picked.kind().name()), "{shown}");
    drop(rt);

    let rt = runtime(1, policy(PolicyKind::MissSum));
    assert_eq!(
        rt.ready_order().policy().map(|p| p.kind()),
        Some(PolicyKind::MissSum)
    );
    assert_ne!(rt.ready_order(), policy(PolicyKind::MinMisses));
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

/// Skynet-style: a tree of spawned green threads, each leaf parking on and being woken by a
/// partner leaf (possibly on the other worker) and yielding, summing its leaf numbers.
fn skynet(base: u64, size: u64, fanout: u64) -> u64 {
    if size == 1 {
        // Ping-pong with a helper on any worker: a park, a cross-worker or local wake, a yield.
        let me = current_unparker();
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let h = spawn(move || {
            yield_now();
            d.store(true, Ordering::Release);
            me.unpark(Placement::Anywhere);
        });
        while !done.load(Ordering::Acquire) {
            park();
        }
        h.join().unwrap();
        yield_now();
        return base;
    }
    let step = size / fanout;
    let handles: Vec<_> = (0..fanout)
        .map(|i| spawn(move || skynet(base + i * step, step, fanout)))
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

#[test]
fn fib_and_skynet_are_correct_under_every_order() {
    let (fib_n, fib_expected) = if cfg!(debug_assertions) {
        (18, 2584)
    } else {
        (24, 46368)
    };
    let leaves: u64 = if cfg!(debug_assertions) { 1000 } else { 10_000 };
    let mut orders = vec![ReadyOrder::Lifo, ReadyOrder::Fifo, ReadyOrder::Auto];
    orders.extend(PolicyKind::ALL.map(policy));
    for order in orders {
        with_watchdog(60, &order.to_string(), move || {
            let rt = runtime(2, order);
            let (f, s) = rt.block_on(move || (fib(fib_n), skynet(0, leaves, 10)));
            assert_eq!(f, fib_expected, "{order}");
            assert_eq!(s, leaves * (leaves - 1) / 2, "{order}");
        });
    }
}

/// Every policy ranks the thread that just stopped first; a yield must still let the other ready
/// threads run (it queues behind them), or a thread that wakes a partner on its own worker and
/// then yield-spins for its answer would run forever instead of the partner.
#[test]
fn yield_lets_the_other_ready_threads_run_under_every_policy() {
    for kind in PolicyKind::ALL {
        with_watchdog(30, kind.name(), move || {
            let rt = runtime(1, policy(kind));
            rt.block_on(|| {
                let partner_waiting = Arc::new(Mutex::new(None::<Unparker>));
                let released = Arc::new(AtomicBool::new(false));
                let answered = Arc::new(AtomicBool::new(false));
                let (w, r, a) = (partner_waiting.clone(), released.clone(), answered.clone());
                let partner = spawn(move || {
                    *w.lock().unwrap() = Some(current_unparker());
                    while !r.load(Ordering::Acquire) {
                        park();
                    }
                    a.store(true, Ordering::Release);
                });
                // The partner (new, on the start deque) runs at our first yield and parks.
                let unparker = loop {
                    if let Some(u) = partner_waiting.lock().unwrap().take() {
                        break u;
                    }
                    yield_now();
                };
                // Wake it: it is pushed on this worker's ready heap with its key. Then wait for
                // its answer by yielding: each yield stops us more recently than its park.
                released.store(true, Ordering::Release);
                unparker.unpark(Placement::Anywhere);
                let mut yields = 0u64;
                while !answered.load(Ordering::Acquire) {
                    yield_now();
                    yields += 1;
                }
                assert!(yields > 0, "{kind}: the answer came without a yield");
                partner.join().unwrap();
            });
        });
    }
}
