//! 000's (FAST, futex-aware scheduling) seven lock micro-benchmarks, at sizes that fit 2 cores:
//! green threads on a 2-worker footprint runtime with lock-hot placement on vs off, and std
//! threads with `std::sync::Mutex` / `Condvar` / `Barrier` as the peer.
//!
//! Lock-hot placement (000; DESIGN.md "Placement advice"): when a release wakes a parked waiter,
//! the locks pass `Placement::Worker(releaser's worker)` so that the waiter resumes where the
//! critical section's data is cached. `off` sets `footprint::locks::placement::set_lock_hot(false)`
//! for the whole run: every wake-up then passes `Placement::Anywhere`.
//!
//! Every benchmark runs `THREADS` (8) threads (on 2 workers or 2 CPUs: 4 per processor, the
//! oversubscribed case where waiters park and wake-ups are placed); each does a fixed number of
//! operations with ≈100 ns of private work (a dependent multiply-add chain) between two
//! critical sections, as 000's threads "perform some work in between successive locking
//! operations". One criterion iteration is one whole run of all threads, timed from the first
//! thread's start (each reads the clock itself after a start barrier) to the last thread's end
//! (`iter_custom`: building the data, spawning and joining are not timed). After each run the
//! result is checked, so a wrong run fails loudly.
//!
//! The seven, each mapped to 000 §3.2.1:
//! - `single_ctr`: one counter (its own cache line) behind one lock; every thread increments it
//!   `OPS` times. Check: the exact total.
//! - `multiple_ctr`: an array of per-thread counters (one cache line each) behind one lock; each
//!   thread increments its own. Check: every counter is exactly `OPS`.
//! - `doubly_list`: a doubly linked list (index links in an arena, 64 nodes of 64 bytes) behind one
//!   lock; each operation dequeues the head under the lock (and updates the node), works, and
//!   enqueues it at the tail under a second acquisition. Check: the list walks forward and
//!   backward with consistent links, holds every node once, and the node visit counts sum to
//!   `THREADS × OPS`.
//! - `prod_cons`: one bounded FIFO (16 slots) behind one lock with two condition variables; half
//!   the threads produce `ITEMS` items each, the other half consume as many. Check: every item
//!   consumed once (count and sum), and each consumer saw each producer's items in order.
//! - `affinity`: two locks, two 128-byte counter blocks; in even phases lock 0 guards block 0 and
//!   lock 1 block 1, in odd phases the other way round (the blocks swap between the locks at a
//!   barrier, which the phases need anyway); even threads use lock 0, odd ones lock 1. Check: each
//!   block's exact count, and which block each lock holds at the end.
//! - `mlt_ctr_mlt_lock`: per-thread counters split into 4 segments, one lock each; thread `i`
//!   takes lock `i % 4` and increments its counter. Check: every counter is exactly `OPS`.
//! - `multiple_fifo`: one bounded FIFO per producer/consumer pair (4 FIFOs, 4 locks); each pair
//!   uses only its own. Check: each consumer received `0..ITEMS` exactly in order.
//!
//! Variants: `footprint/lockhot_on`, `footprint/lockhot_off` (`footprint::sync::Mutex`, `Condvar`,
//! `Barrier`, green threads on a 2-worker runtime built once) and `std` (8 OS threads,
//! `std::sync` primitives).
//!
//! Run: `cargo bench --bench lock_hot -- --warm-up-time 1 --measurement-time 3`

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use footprint::locks::placement;

/// Threads per run (green or OS), 4 per processor on this 2-core machine.
const THREADS: usize = 8;
/// Critical sections per thread in the counter and list benchmarks.
const OPS: usize = 2_000;
/// Items per producer in the FIFO benchmarks.
const ITEMS: usize = 1_000;
/// Slots of each bounded FIFO.
const FIFO_SLOTS: usize = 16;
/// Private work between two critical sections (work units, ≈1 ns each).
const OUTSIDE: u64 = 100;
/// Nodes in the doubly linked list (more than `THREADS`, so it never runs empty).
const LIST_NODES: usize = 64;
/// Phases of the affinity benchmark, and critical sections per thread and phase.
const PHASES: usize = 20;
const PER_PHASE: usize = OPS / PHASES;
/// Locks of `mlt_ctr_mlt_lock`.
const SEGMENT_LOCKS: usize = 4;
/// Workers of the footprint runtime.
const WORKERS: usize = 2;

/// Private work outside the critical section: a dependent chain the compiler cannot fold.
#[inline(never)]
fn work(units: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..units {
        x = black_box(x)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    black_box(x)
}

/// A value on its own cache lines (no false sharing between neighbours).
#[repr(align(128))]
#[derive(Default)]
struct Padded<T>(T);

// ---------------------------------------------------------------------------------------------
// The two implementations behind one interface.

/// A mutex as the benchmarks use it.
trait Lock<T>: Send + Sync {
    fn new(value: T) -> Self;
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
    fn into_inner(self) -> T;
}

/// A barrier; `wait` returns whether the caller is the leader.
trait PhaseBarrier: Send + Sync {
    fn new(n: usize) -> Self;
    fn wait(&self) -> bool;
}

/// A bounded FIFO of `u64`: `push` waits while full, `pop` while empty.
trait Fifo: Send + Sync {
    fn new(slots: usize) -> Self;
    fn push(&self, v: u64);
    fn pop(&self) -> u64;
}

/// One implementation: its primitives, and how it runs `n` threads.
trait Family {
    type Lock<T: Send>: Lock<T>;
    type Barrier: PhaseBarrier;
    type Fifo: Fifo;
    /// Runs `body(i)` on `n` threads; returns the time from all lined up to all done.
    fn run(&self, n: usize, body: &(dyn Fn(usize) + Sync)) -> Duration;
}

/// footprint: green threads on a runtime, `footprint::sync` primitives.
struct Green<'a> {
    rt: &'a footprint::Runtime,
}

/// The peer: OS threads, `std::sync` primitives.
struct OsThreads;

impl<T: Send> Lock<T> for footprint::sync::Mutex<T> {
    fn new(value: T) -> Self {
        footprint::sync::Mutex::new(value)
    }
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.lock())
    }
    fn into_inner(self) -> T {
        footprint::sync::Mutex::into_inner(self)
    }
}

impl<T: Send> Lock<T> for std::sync::Mutex<T> {
    fn new(value: T) -> Self {
        std::sync::Mutex::new(value)
    }
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self
            .lock()
            .expect("no thread panicked while holding the lock"))
    }
    fn into_inner(self) -> T {
        std::sync::Mutex::into_inner(self).expect("no thread panicked while holding the lock")
    }
}

impl PhaseBarrier for footprint::sync::Barrier {
    fn new(n: usize) -> Self {
        footprint::sync::Barrier::new(n)
    }
    fn wait(&self) -> bool {
        footprint::sync::Barrier::wait(self).is_leader()
    }
}

impl PhaseBarrier for std::sync::Barrier {
    fn new(n: usize) -> Self {
        std::sync::Barrier::new(n)
    }
    fn wait(&self) -> bool {
        std::sync::Barrier::wait(self).is_leader()
    }
}

struct GreenFifo {
    queue: footprint::sync::Mutex<VecDeque<u64>>,
    not_empty: footprint::sync::Condvar,
    not_full: footprint::sync::Condvar,
    slots: usize,
}

impl Fifo for GreenFifo {
    fn new(slots: usize) -> Self {
        GreenFifo {
            queue: footprint::sync::Mutex::new(VecDeque::with_capacity(slots)),
            not_empty: footprint::sync::Condvar::new(),
            not_full: footprint::sync::Condvar::new(),
            slots,
        }
    }
    fn push(&self, v: u64) {
        let mut q = self.queue.lock();
        self.not_full.wait_while(&mut q, |q| q.len() >= self.slots);
        q.push_back(v);
        drop(q);
        self.not_empty.notify_one();
    }
    fn pop(&self) -> u64 {
        let mut q = self.queue.lock();
        self.not_empty.wait_while(&mut q, |q| q.is_empty());
        let v = q.pop_front().expect("not empty after wait_while");
        drop(q);
        self.not_full.notify_one();
        v
    }
}

struct StdFifo {
    queue: std::sync::Mutex<VecDeque<u64>>,
    not_empty: std::sync::Condvar,
    not_full: std::sync::Condvar,
    slots: usize,
}

impl Fifo for StdFifo {
    fn new(slots: usize) -> Self {
        StdFifo {
            queue: std::sync::Mutex::new(VecDeque::with_capacity(slots)),
            not_empty: std::sync::Condvar::new(),
            not_full: std::sync::Condvar::new(),
            slots,
        }
    }
    fn push(&self, v: u64) {
        let q = self.queue.lock().expect("not poisoned");
        let mut q = self
            .not_full
            .wait_while(q, |q| q.len() >= self.slots)
            .expect("not poisoned");
        q.push_back(v);
        drop(q);
        self.not_empty.notify_one();
    }
    fn pop(&self) -> u64 {
        let q = self.queue.lock().expect("not poisoned");
        let mut q = self
            .not_empty
            .wait_while(q, |q| q.is_empty())
            .expect("not poisoned");
        let v = q.pop_front().expect("not empty after wait_while");
        drop(q);
        self.not_full.notify_one();
        v
    }
}

/// From the first thread's start to the last thread's end. Each thread reads the clock itself
/// right after the start barrier and before the end barrier: the thread that only coordinates
/// may be descheduled between the start barrier and its own clock read (on a loaded machine,
/// or with 8 OS threads on 2 CPUs), which would leave out the start of the run.
fn span(spans: impl Iterator<Item = (Instant, Instant)>) -> Duration {
    let (first, last) = spans.fold((None::<Instant>, None::<Instant>), |(a, b), (t0, t1)| {
        (
            Some(a.map_or(t0, |a| a.min(t0))),
            Some(b.map_or(t1, |b| b.max(t1))),
        )
    });
    match (first, last) {
        (Some(a), Some(b)) => b.saturating_duration_since(a),
        _ => Duration::ZERO,
    }
}

/// One thread's part of a run: lined up at `start`, runs `body(i)` between two clock reads,
/// reaches `end`; returns the two readings (see [`span`]).
fn timed_part<B: PhaseBarrier>(
    start: &B,
    end: &B,
    body: &(dyn Fn(usize) + Sync),
    i: usize,
) -> (Instant, Instant) {
    start.wait();
    let t0 = Instant::now();
    body(i);
    let t1 = Instant::now();
    end.wait();
    (t0, t1)
}

impl Family for Green<'_> {
    type Lock<T: Send> = footprint::sync::Mutex<T>;
    type Barrier = footprint::sync::Barrier;
    type Fifo = GreenFifo;

    fn run(&self, n: usize, body: &(dyn Fn(usize) + Sync)) -> Duration {
        self.rt.block_on(|| {
            let (start, end) = (
                footprint::sync::Barrier::new(n + 1),
                footprint::sync::Barrier::new(n + 1),
            );
            footprint::scope(|s| {
                let spans: Vec<_> = (0..n)
                    .map(|i| {
                        let (start, end) = (&start, &end);
                        s.spawn(move || timed_part(start, end, body, i))
                    })
                    .collect();
                start.wait();
                end.wait();
                span(
                    spans
                        .into_iter()
                        .map(|h| h.join().expect("no bench thread panics")),
                )
            })
        })
    }
}

impl Family for OsThreads {
    type Lock<T: Send> = std::sync::Mutex<T>;
    type Barrier = std::sync::Barrier;
    type Fifo = StdFifo;

    fn run(&self, n: usize, body: &(dyn Fn(usize) + Sync)) -> Duration {
        let (start, end) = (
            std::sync::Barrier::new(n + 1),
            std::sync::Barrier::new(n + 1),
        );
        std::thread::scope(|s| {
            let spans: Vec<_> = (0..n)
                .map(|i| {
                    let (start, end) = (&start, &end);
                    s.spawn(move || timed_part(start, end, body, i))
                })
                .collect();
            start.wait();
            end.wait();
            span(
                spans
                    .into_iter()
                    .map(|h| h.join().expect("no bench thread panics")),
            )
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The seven benchmarks. Each returns the timed part of one run and panics if the result is wrong.

fn single_ctr<F: Family>(f: &F) -> Duration {
    let counter = F::Lock::<Padded<u64>>::new(Padded(0));
    let t = f.run(THREADS, &|i| {
        for k in 0..OPS {
            counter.with(|c| c.0 += 1);
            work(OUTSIDE, (i * OPS + k) as u64);
        }
    });
    let total = counter.into_inner().0;
    assert_eq!(
        total,
        (THREADS * OPS) as u64,
        "single_ctr: lost or extra updates"
    );
    t
}

fn multiple_ctr<F: Family>(f: &F) -> Duration {
    let counters = F::Lock::<Vec<Padded<u64>>>::new((0..THREADS).map(|_| Padded(0)).collect());
    let t = f.run(THREADS, &|i| {
        for k in 0..OPS {
            counters.with(|c| c[i].0 += 1);
            work(OUTSIDE, (i * OPS + k) as u64);
        }
    });
    for (i, c) in counters.into_inner().iter().enumerate() {
        assert_eq!(c.0, OPS as u64, "multiple_ctr: counter {i}");
    }
    t
}

/// "No node" in the list's links.
const NIL: u32 = u32::MAX;

/// One node of the list: links, a visit count and payload (64 bytes in all).
#[derive(Clone, Copy)]
struct ListNode {
    prev: u32,
    next: u32,
    visits: u64,
    payload: [u64; 6],
}

/// A doubly linked list whose nodes live in one arena and link by index.
struct List {
    nodes: Vec<ListNode>,
    head: u32,
    tail: u32,
    len: usize,
}

impl List {
    fn new(n: usize) -> List {
        let nodes = (0..n)
            .map(|i| ListNode {
                prev: if i == 0 { NIL } else { i as u32 - 1 },
                next: if i + 1 == n { NIL } else { i as u32 + 1 },
                visits: 0,
                payload: [i as u64; 6],
            })
            .collect();
        List {
            nodes,
            head: 0,
            tail: n as u32 - 1,
            len: n,
        }
    }

    /// Unlinks the head, counts a visit and updates its payload; `None` when empty.
    fn pop_front(&mut self) -> Option<u32> {
        let id = self.head;
        if id == NIL {
            return None;
        }
        let node = &mut self.nodes[id as usize];
        self.head = node.next;
        node.next = NIL;
        node.visits += 1;
        for (j, w) in node.payload.iter_mut().enumerate() {
            *w = w.wrapping_add(j as u64 + 1);
        }
        if self.head == NIL {
            self.tail = NIL;
        } else {
            self.nodes[self.head as usize].prev = NIL;
        }
        self.len -= 1;
        Some(id)
    }

    fn push_back(&mut self, id: u32) {
        self.nodes[id as usize].prev = self.tail;
        self.nodes[id as usize].next = NIL;
        if self.tail == NIL {
            self.head = id;
        } else {
            self.nodes[self.tail as usize].next = id;
        }
        self.tail = id;
        self.len += 1;
    }

    /// Walks the list both ways, checking every link; returns the sum of the visit counts.
    fn check(&self, expected_len: usize) -> u64 {
        assert_eq!(self.len, expected_len, "doubly_list: length");
        let mut seen = vec![false; self.nodes.len()];
        let (mut cur, mut prev, mut count) = (self.head, NIL, 0);
        while cur != NIL {
            let node = &self.nodes[cur as usize];
            assert!(!seen[cur as usize], "doubly_list: node {cur} linked twice");
            seen[cur as usize] = true;
            assert_eq!(node.prev, prev, "doubly_list: back link of node {cur}");
            prev = cur;
            cur = node.next;
            count += 1;
        }
        assert_eq!(prev, self.tail, "doubly_list: tail");
        assert_eq!(
            count, expected_len,
            "doubly_list: nodes reachable from the head"
        );
        self.nodes.iter().map(|n| n.visits).sum()
    }
}

fn doubly_list<F: Family>(f: &F) -> Duration {
    let list = F::Lock::<List>::new(List::new(LIST_NODES));
    let t = f.run(THREADS, &|i| {
        for k in 0..OPS {
            let id = list
                .with(List::pop_front)
                .expect("more nodes than threads: never empty");
            work(OUTSIDE, (i * OPS + k) as u64);
            list.with(|l| l.push_back(id));
        }
    });
    let visits = list.into_inner().check(LIST_NODES);
    assert_eq!(visits, (THREADS * OPS) as u64, "doubly_list: visits");
    t
}

/// What the consumers of a FIFO benchmark saw, summed over them.
#[derive(Default)]
struct Consumed {
    count: AtomicU64,
    sum: AtomicU64,
    out_of_order: AtomicU64,
}

fn prod_cons<F: Family>(f: &F) -> Duration {
    let producers = THREADS / 2;
    let fifo = F::Fifo::new(FIFO_SLOTS);
    let consumed = Consumed::default();
    let t = f.run(THREADS, &|i| {
        if i < producers {
            for k in 0..ITEMS {
                fifo.push((i * ITEMS + k) as u64);
                work(OUTSIDE, k as u64);
            }
        } else {
            // Items are i*ITEMS + k: the producer is v / ITEMS, its sequence number v % ITEMS.
            let mut last = vec![None::<u64>; producers];
            let (mut sum, mut out_of_order) = (0u64, 0u64);
            for k in 0..ITEMS {
                let v = fifo.pop();
                let p = v as usize / ITEMS;
                if last[p].is_some_and(|l| l >= v) {
                    out_of_order += 1;
                }
                last[p] = Some(v);
                sum += v;
                work(OUTSIDE, k as u64);
            }
            consumed.count.fetch_add(ITEMS as u64, Ordering::Relaxed);
            consumed.sum.fetch_add(sum, Ordering::Relaxed);
            consumed
                .out_of_order
                .fetch_add(out_of_order, Ordering::Relaxed);
        }
    });
    let n = (producers * ITEMS) as u64;
    assert_eq!(consumed.count.into_inner(), n, "prod_cons: items consumed");
    assert_eq!(
        consumed.sum.into_inner(),
        n * (n - 1) / 2,
        "prod_cons: item sum"
    );
    assert_eq!(
        consumed.out_of_order.into_inner(),
        0,
        "prod_cons: FIFO order"
    );
    t
}

/// A counter block of `affinity` (128 bytes).
struct Block {
    id: u64,
    count: u64,
    data: [u64; 14],
}

fn affinity<F: Family>(f: &F) -> Duration {
    let locks = [0u64, 1].map(|id| {
        F::Lock::<Box<Block>>::new(Box::new(Block {
            id,
            count: 0,
            data: [0; 14],
        }))
    });
    let barrier = F::Barrier::new(THREADS);
    let t = f.run(THREADS, &|i| {
        let lock = &locks[i % 2];
        for phase in 0..PHASES {
            for k in 0..PER_PHASE {
                lock.with(|b| {
                    b.count += 1;
                    for w in b.data.iter_mut() {
                        *w = w.wrapping_add(k as u64);
                    }
                });
                work(OUTSIDE, (phase * PER_PHASE + k) as u64);
            }
            // Between phases the blocks change locks; nobody holds either lock now.
            if barrier.wait() {
                locks[0].with(|a| locks[1].with(|b| std::mem::swap(a, b)));
            }
            barrier.wait();
        }
    });
    let [l0, l1] = locks.map(|l| l.into_inner());
    let per_block = (PHASES * (THREADS / 2) * PER_PHASE) as u64;
    assert_eq!(l0.count, per_block, "affinity: block {} count", l0.id);
    assert_eq!(l1.count, per_block, "affinity: block {} count", l1.id);
    // One swap per phase: after an even number of phases each lock holds its own block again.
    assert_eq!(l0.id, (PHASES % 2) as u64, "affinity: block under lock 0");
    t
}

fn mlt_ctr_mlt_lock<F: Family>(f: &F) -> Duration {
    let per_segment = THREADS.div_ceil(SEGMENT_LOCKS);
    let segments: Vec<F::Lock<Vec<Padded<u64>>>> = (0..SEGMENT_LOCKS)
        .map(|_| F::Lock::new((0..per_segment).map(|_| Padded(0)).collect()))
        .collect();
    let t = f.run(THREADS, &|i| {
        let (segment, slot) = (&segments[i % SEGMENT_LOCKS], i / SEGMENT_LOCKS);
        for k in 0..OPS {
            segment.with(|c| c[slot].0 += 1);
            work(OUTSIDE, (i * OPS + k) as u64);
        }
    });
    for (s, seg) in segments.into_iter().enumerate() {
        for (slot, c) in seg.into_inner().iter().enumerate() {
            let thread = slot * SEGMENT_LOCKS + s;
            let expected = if thread < THREADS { OPS as u64 } else { 0 };
            assert_eq!(
                c.0, expected,
                "mlt_ctr_mlt_lock: counter of thread {thread}"
            );
        }
    }
    t
}

fn multiple_fifo<F: Family>(f: &F) -> Duration {
    let fifos: Vec<F::Fifo> = (0..THREADS / 2).map(|_| F::Fifo::new(FIFO_SLOTS)).collect();
    let wrong = AtomicU64::new(0);
    let t = f.run(THREADS, &|i| {
        let fifo = &fifos[i / 2];
        if i % 2 == 0 {
            for k in 0..ITEMS {
                fifo.push(k as u64);
                work(OUTSIDE, k as u64);
            }
        } else {
            let mut wrong_here = 0;
            for k in 0..ITEMS {
                if fifo.pop() != k as u64 {
                    wrong_here += 1;
                }
                work(OUTSIDE, k as u64);
            }
            wrong.fetch_add(wrong_here, Ordering::Relaxed);
        }
    });
    assert_eq!(
        wrong.into_inner(),
        0,
        "multiple_fifo: items lost, duplicated or out of order"
    );
    t
}

// ---------------------------------------------------------------------------------------------

type Bench<F> = fn(&F) -> Duration;

/// One benchmark, three variants side by side.
fn compare<'rt>(
    c: &mut Criterion,
    green: &Green<'rt>,
    name: &str,
    on_green: Bench<Green<'rt>>,
    on_os: Bench<OsThreads>,
) {
    let mut g = c.benchmark_group(name);
    // One iteration is a whole run (milliseconds): few samples are enough.
    g.sample_size(10);
    for (id, lock_hot) in [
        ("footprint/lockhot_on", true),
        ("footprint/lockhot_off", false),
    ] {
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                placement::set_lock_hot(lock_hot);
                let t = (0..iters).map(|_| on_green(green)).sum();
                placement::set_lock_hot(true);
                t
            })
        });
    }
    g.bench_function("std", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| on_os(&OsThreads)).sum())
    });
    g.finish();
}

fn lock_hot(c: &mut Criterion) {
    let rt = footprint::Runtime::builder()
        .workers(WORKERS)
        .build()
        .unwrap_or_else(|e| panic!("a {WORKERS}-worker runtime: {e}"));
    let green = Green { rt: &rt };
    compare(c, &green, "single_ctr", single_ctr, single_ctr);
    compare(c, &green, "multiple_ctr", multiple_ctr, multiple_ctr);
    compare(c, &green, "doubly_list", doubly_list, doubly_list);
    compare(c, &green, "prod_cons", prod_cons, prod_cons);
    compare(c, &green, "affinity", affinity, affinity);
    compare(
        c,
        &green,
        "mlt_ctr_mlt_lock",
        mlt_ctr_mlt_lock,
        mlt_ctr_mlt_lock,
    );
    compare(c, &green, "multiple_fifo", multiple_fifo, multiple_fifo);
}

#[path = "common/short.rs"]
mod short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = lock_hot
}
criterion_main!(benches);
