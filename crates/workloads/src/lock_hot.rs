//! The bodies of 000's seven lock micro-benchmarks (see `benches/lock_hot.rs` for what each does
//! and how it maps to 000 §3.2.1), shared by that bench and by the report
//! (`tools/report`), so that both time exactly the same code. Each body returns the timed
//! part of one run (all threads lined up to all done) and panics if the result is wrong.
//!
//! A run's thread count comes from its [`Family`] ([`Family::threads`]): the bench keeps 000's
//! 4 threads per processor on 2 workers ([`THREADS`]); the report runs
//! [`THREADS_PER_WORKER`] per worker of whatever worker count it is given.
//!
//! ```
//! use footprint_workloads::lock_hot::{single_ctr, OsThreads, THREADS};
//! // One run of 000's single counter on 4 OS threads (the result is checked inside).
//! let t = single_ctr(&OsThreads { threads: 4 });
//! assert!(t > std::time::Duration::ZERO);
//! assert_eq!(OsThreads::default().threads, THREADS);
//! ```

pub use crate::work::work;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Threads per worker (green) or per processor (OS threads): 000's oversubscribed case, where
/// waiters park and wake-ups are placed.
pub const THREADS_PER_WORKER: usize = 4;
/// Workers of the footprint runtime in the bench (the 2-core development machine).
pub const WORKERS: usize = 2;
/// Threads per run (green or OS) in the bench: 4 per processor on 2 workers.
pub const THREADS: usize = THREADS_PER_WORKER * WORKERS;
/// Critical sections per thread in the counter and list benchmarks.
pub const OPS: usize = 2_000;
/// Items per producer in the FIFO benchmarks.
pub const ITEMS: usize = 1_000;
/// Slots of each bounded FIFO.
pub const FIFO_SLOTS: usize = 16;
/// Private work between two critical sections (work units, ≈1 ns each).
pub const OUTSIDE: u64 = 100;
/// Nodes in the doubly linked list at up to `THREADS` threads (8 per thread there); see
/// [`list_nodes`].
pub const LIST_NODES: usize = 64;
/// Phases of the affinity benchmark, and critical sections per thread and phase.
pub const PHASES: usize = 20;
pub const PER_PHASE: usize = OPS / PHASES;
/// Locks of `mlt_ctr_mlt_lock`.
pub const SEGMENT_LOCKS: usize = 4;

/// Nodes in the doubly linked list of a run with `threads` threads: [`LIST_NODES`], or 8 per
/// thread where that is more. A thread holds at most one node at a time, so the list never runs
/// empty while it has more nodes than threads.
///
/// ```
/// use footprint_workloads::lock_hot::{list_nodes, LIST_NODES, THREADS};
/// assert_eq!(list_nodes(THREADS), LIST_NODES);
/// assert_eq!(list_nodes(64), 512);
/// ```
pub fn list_nodes(threads: usize) -> usize {
    LIST_NODES.max(threads * (LIST_NODES / THREADS))
}

/// A value on its own cache lines (no false sharing between neighbours).
#[repr(align(128))]
#[derive(Default)]
pub struct Padded<T>(T);

// ---------------------------------------------------------------------------------------------
// The two implementations behind one interface.

/// A mutex as the benchmarks use it.
pub trait Lock<T>: Send + Sync {
    fn new(value: T) -> Self;
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
    fn into_inner(self) -> T;
}

/// A barrier; `wait` returns whether the caller is the leader.
pub trait PhaseBarrier: Send + Sync {
    fn new(n: usize) -> Self;
    fn wait(&self) -> bool;
}

/// A bounded FIFO of `u64`: `push` waits while full, `pop` while empty.
pub trait Fifo: Send + Sync {
    fn new(slots: usize) -> Self;
    fn push(&self, v: u64);
    fn pop(&self) -> u64;
}

/// One implementation: its primitives, how many threads a run has, and how it runs them.
pub trait Family {
    type Lock<T: Send>: Lock<T>;
    type Barrier: PhaseBarrier;
    type Fifo: Fifo;
    /// Threads of one run (even: the FIFO and affinity benchmarks pair them up).
    fn threads(&self) -> usize;
    /// Runs `body(i)` on `n` threads; returns the time from all lined up to all done.
    fn run(&self, n: usize, body: &(dyn Fn(usize) + Sync)) -> Duration;
}

/// footprint: green threads on a runtime, `footprint::sync` primitives.
pub struct Green {
    /// The runtime the green threads run on.
    pub rt: footprint::Runtime,
    /// Green threads per run (the bench: [`THREADS`]).
    pub threads: usize,
}

/// The peer: OS threads, `std::sync` primitives.
pub struct OsThreads {
    /// OS threads per run (the bench: [`THREADS`]).
    pub threads: usize,
}

impl Default for OsThreads {
    /// The bench's peer: [`THREADS`] OS threads.
    fn default() -> OsThreads {
        OsThreads { threads: THREADS }
    }
}

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

pub struct GreenFifo {
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

pub struct StdFifo {
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

impl Family for Green {
    type Lock<T: Send> = footprint::sync::Mutex<T>;
    type Barrier = footprint::sync::Barrier;
    type Fifo = GreenFifo;

    fn threads(&self) -> usize {
        self.threads
    }

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

    fn threads(&self) -> usize {
        self.threads
    }

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

pub fn single_ctr<F: Family>(f: &F) -> Duration {
    let threads = f.threads();
    let counter = F::Lock::<Padded<u64>>::new(Padded(0));
    let t = f.run(threads, &|i| {
        for k in 0..OPS {
            counter.with(|c| c.0 += 1);
            work(OUTSIDE, (i * OPS + k) as u64);
        }
    });
    let total = counter.into_inner().0;
    assert_eq!(
        total,
        (threads * OPS) as u64,
        "single_ctr: lost or extra updates"
    );
    t
}

pub fn multiple_ctr<F: Family>(f: &F) -> Duration {
    let threads = f.threads();
    let counters = F::Lock::<Vec<Padded<u64>>>::new((0..threads).map(|_| Padded(0)).collect());
    let t = f.run(threads, &|i| {
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
pub const NIL: u32 = u32::MAX;

/// One node of the list: links, a visit count and payload (64 bytes in all).
#[derive(Clone, Copy)]
pub struct ListNode {
    prev: u32,
    next: u32,
    visits: u64,
    payload: [u64; 6],
}

/// A doubly linked list whose nodes live in one arena and link by index.
pub struct List {
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

pub fn doubly_list<F: Family>(f: &F) -> Duration {
    let threads = f.threads();
    let list = F::Lock::<List>::new(List::new(list_nodes(threads)));
    let t = f.run(threads, &|i| {
        for k in 0..OPS {
            let id = list
                .with(List::pop_front)
                .expect("more nodes than threads: never empty");
            work(OUTSIDE, (i * OPS + k) as u64);
            list.with(|l| l.push_back(id));
        }
    });
    let visits = list.into_inner().check(list_nodes(threads));
    assert_eq!(visits, (threads * OPS) as u64, "doubly_list: visits");
    t
}

/// The thread count of a benchmark that pairs threads up (producers with consumers, even with
/// odd); panics with the reason when it is odd or zero.
fn paired_threads<F: Family>(f: &F, bench: &str) -> usize {
    let threads = f.threads();
    assert!(
        threads >= 2 && threads.is_multiple_of(2),
        "{bench}: needs an even thread count of at least 2, got {threads}"
    );
    threads
}

/// What the consumers of a FIFO benchmark saw, summed over them.
#[derive(Default)]
pub struct Consumed {
    count: AtomicU64,
    sum: AtomicU64,
    out_of_order: AtomicU64,
}

pub fn prod_cons<F: Family>(f: &F) -> Duration {
    let threads = paired_threads(f, "prod_cons");
    let producers = threads / 2;
    let fifo = F::Fifo::new(FIFO_SLOTS);
    let consumed = Consumed::default();
    let t = f.run(threads, &|i| {
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
pub struct Block {
    id: u64,
    count: u64,
    data: [u64; 14],
}

pub fn affinity<F: Family>(f: &F) -> Duration {
    let threads = paired_threads(f, "affinity");
    let locks = [0u64, 1].map(|id| {
        F::Lock::<Box<Block>>::new(Box::new(Block {
            id,
            count: 0,
            data: [0; 14],
        }))
    });
    let barrier = F::Barrier::new(threads);
    let t = f.run(threads, &|i| {
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
    let per_block = (PHASES * (threads / 2) * PER_PHASE) as u64;
    assert_eq!(l0.count, per_block, "affinity: block {} count", l0.id);
    assert_eq!(l1.count, per_block, "affinity: block {} count", l1.id);
    // One swap per phase: after an even number of phases each lock holds its own block again.
    assert_eq!(l0.id, (PHASES % 2) as u64, "affinity: block under lock 0");
    t
}

pub fn mlt_ctr_mlt_lock<F: Family>(f: &F) -> Duration {
    let threads = f.threads();
    let per_segment = threads.div_ceil(SEGMENT_LOCKS);
    let segments: Vec<F::Lock<Vec<Padded<u64>>>> = (0..SEGMENT_LOCKS)
        .map(|_| F::Lock::new((0..per_segment).map(|_| Padded(0)).collect()))
        .collect();
    let t = f.run(threads, &|i| {
        let (segment, slot) = (&segments[i % SEGMENT_LOCKS], i / SEGMENT_LOCKS);
        for k in 0..OPS {
            segment.with(|c| c[slot].0 += 1);
            work(OUTSIDE, (i * OPS + k) as u64);
        }
    });
    for (s, seg) in segments.into_iter().enumerate() {
        for (slot, c) in seg.into_inner().iter().enumerate() {
            let thread = slot * SEGMENT_LOCKS + s;
            let expected = if thread < threads { OPS as u64 } else { 0 };
            assert_eq!(
                c.0, expected,
                "mlt_ctr_mlt_lock: counter of thread {thread}"
            );
        }
    }
    t
}

pub fn multiple_fifo<F: Family>(f: &F) -> Duration {
    let threads = paired_threads(f, "multiple_fifo");
    let fifos: Vec<F::Fifo> = (0..threads / 2).map(|_| F::Fifo::new(FIFO_SLOTS)).collect();
    let wrong = AtomicU64::new(0);
    let t = f.run(threads, &|i| {
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

/// One of the seven, with its body instantiated for both families.
pub struct LockBench {
    /// 000's name for it.
    pub name: &'static str,
    /// One run on green threads (the runtime in `Green`).
    pub green: fn(&Green) -> Duration,
    /// One run on OS threads with `std::sync`.
    pub os: fn(&OsThreads) -> Duration,
}

/// The seven benchmarks in 000's order.
pub const ALL: [LockBench; 7] = [
    LockBench {
        name: "single_ctr",
        green: single_ctr,
        os: single_ctr,
    },
    LockBench {
        name: "multiple_ctr",
        green: multiple_ctr,
        os: multiple_ctr,
    },
    LockBench {
        name: "doubly_list",
        green: doubly_list,
        os: doubly_list,
    },
    LockBench {
        name: "prod_cons",
        green: prod_cons,
        os: prod_cons,
    },
    LockBench {
        name: "affinity",
        green: affinity,
        os: affinity,
    },
    LockBench {
        name: "mlt_ctr_mlt_lock",
        green: mlt_ctr_mlt_lock,
        os: mlt_ctr_mlt_lock,
    },
    LockBench {
        name: "multiple_fifo",
        green: multiple_fifo,
        os: multiple_fifo,
    },
];
