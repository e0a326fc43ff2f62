//! The four many-core synchronisation workloads (`benches/many_core_sync.rs`): each as green
//! threads on a footprint runtime and as OS threads with the peer's primitives, sized by the
//! caller, checked after every run (a wrong result panics).
//!
//! - [`stencil_green`] / [`stencil_os`]: SPMD 2-D Jacobi, one band of rows per rank, a
//!   `Barrier` after each sweep (footprint's vs `std::sync::Barrier`).
//! - [`bump_green`] / [`bump_os`]: every thread takes a `Mutex<[u64; 8]>`, bumps all eight,
//!   and does 40 dependent LCG steps outside (footprint's `Mutex` vs std's / parking_lot's).
//! - [`tsp_green`] / [`tsp_rayon`]: branch and bound over a small travelling-salesman instance,
//!   the best tour length read at every node and offered at every leaf through a shared bound
//!   ([`Bound`]: a `Mutex`, an `RwLock`, or an atomic read with a locked offer), tasks spawned
//!   in a scope down to depth 4 (footprint `scope` vs rayon `scope`).
//! - [`pipeline_green`] / [`pipeline_crossbeam`]: producers → `bounded(64)` → squarers →
//!   `bounded(64)` → one summer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// SPMD stencil.

/// The shared grid of the stencil: two arrays of `side × side` points (read one, write the
/// other; they swap roles every sweep). Ranks write disjoint bands of rows between barriers.
struct Grid {
    bufs: [Vec<f64>; 2],
}

/// A pointer to the grid's arrays that the ranks share (each writes only its own rows of the
/// array written in a sweep, and reads the other; the barrier separates the sweeps).
#[derive(Clone, Copy)]
struct Shared(*mut f64, *mut f64);
// SAFETY: see `Shared`: disjoint writes, reads separated from writes by a barrier.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

fn grid(side: usize) -> Grid {
    let a: Vec<f64> = (0..side * side)
        .map(|i| ((i * 7919) % 1000) as f64 / 1000.0)
        .collect();
    Grid {
        bufs: [a.clone(), a],
    }
}

/// One sweep of the inner rows `rows` from `src` into `dst` (the border stays fixed).
///
/// # Safety
/// `src` and `dst` point to `side × side` values; no other thread writes `src` or the rows of
/// `dst` in `rows` meanwhile.
unsafe fn sweep_rows(side: usize, src: *const f64, dst: *mut f64, rows: std::ops::Range<usize>) {
    for r in rows {
        if r == 0 || r + 1 == side {
            continue;
        }
        for c in 1..side - 1 {
            let i = r * side + c;
            // SAFETY: in bounds (inner point); see the contract for the aliasing.
            unsafe {
                *dst.add(i) = 0.25
                    * (*src.add(i - 1) + *src.add(i + 1) + *src.add(i - side) + *src.add(i + side));
            }
        }
    }
}

/// The rows of rank `rank` of `ranks`.
fn band(side: usize, rank: usize, ranks: usize) -> std::ops::Range<usize> {
    let per = side.div_ceil(ranks);
    (rank * per).min(side)..((rank + 1) * per).min(side)
}

/// A checksum of the array that holds the result after `sweeps` sweeps.
fn checksum(g: &Grid, sweeps: usize) -> f64 {
    g.bufs[sweeps % 2]
        .iter()
        .enumerate()
        .map(|(i, x)| x * (1 + i % 13) as f64)
        .sum()
}

/// The checksum after `sweeps` sweeps of a `side²` grid, computed on one thread.
pub fn stencil_expected(side: usize, sweeps: usize) -> f64 {
    let mut g = grid(side);
    for s in 0..sweeps {
        let (a, b) = g.bufs.split_at_mut(1);
        let (src, dst) = if s % 2 == 0 {
            (&a[0], &mut b[0])
        } else {
            (&b[0], &mut a[0])
        };
        // SAFETY: one thread, two distinct arrays of side² values.
        unsafe { sweep_rows(side, src.as_ptr(), dst.as_mut_ptr(), 0..side) };
    }
    checksum(&g, sweeps)
}

/// The body of one rank: `sweeps` sweeps of its band, `wait()` after each.
fn rank_body(p: Shared, side: usize, sweeps: usize, rank: usize, ranks: usize, wait: &dyn Fn()) {
    let rows = band(side, rank, ranks);
    for s in 0..sweeps {
        let (src, dst) = if s % 2 == 0 { (p.0, p.1) } else { (p.1, p.0) };
        // SAFETY: this rank writes only its rows of `dst`; everyone reads `src`, which nobody
        // writes in this sweep; the barrier after each sweep orders the sweeps.
        unsafe { sweep_rows(side, src, dst, rows.clone()) };
        wait();
    }
}

/// Runs the stencil as `ranks` green threads on `rt` with `footprint::sync::Barrier`; returns
/// the time of the sweeps and checks the result against `expected`.
pub fn stencil_green(
    rt: &footprint::Runtime,
    side: usize,
    sweeps: usize,
    ranks: usize,
    expected: f64,
) -> Duration {
    let mut g = grid(side);
    let p = Shared(g.bufs[0].as_mut_ptr(), g.bufs[1].as_mut_ptr());
    let t = rt.block_on(|| {
        let barrier = footprint::sync::Barrier::new(ranks);
        let start = Instant::now();
        footprint::scope(|s| {
            for rank in 0..ranks {
                let b = &barrier;
                s.spawn(move || {
                    rank_body(p, side, sweeps, rank, ranks, &|| {
                        b.wait();
                    })
                });
            }
        });
        start.elapsed()
    });
    assert_eq!(checksum(&g, sweeps), expected, "stencil result");
    t
}

/// The peer: `ranks` OS threads with `std::sync::Barrier`.
pub fn stencil_os(side: usize, sweeps: usize, ranks: usize, expected: f64) -> Duration {
    let mut g = grid(side);
    let p = Shared(g.bufs[0].as_mut_ptr(), g.bufs[1].as_mut_ptr());
    let barrier = std::sync::Barrier::new(ranks);
    let start = Instant::now();
    std::thread::scope(|s| {
        for rank in 0..ranks {
            let b = &barrier;
            s.spawn(move || {
                rank_body(p, side, sweeps, rank, ranks, &|| {
                    b.wait();
                })
            });
        }
    });
    let t = start.elapsed();
    assert_eq!(checksum(&g, sweeps), expected, "stencil result");
    t
}

// ---------------------------------------------------------------------------------------------
// Mutex<[u64; 8]>: bump, then 40 LCG steps outside.

/// 40 dependent LCG steps from `x` (the work outside the lock). Each step also folds in the
/// state's high bits, so that the compiler cannot compose the 40 affine steps into one.
#[inline]
pub fn lcg40(mut x: u64) -> u64 {
    for _ in 0..40 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            ^ (x >> 29);
    }
    std::hint::black_box(x)
}

/// A lock around `[u64; 8]` that the bump loop can use.
pub trait BumpLock: Send + Sync {
    fn new() -> Self;
    fn bump(&self);
    fn get(&self) -> [u64; 8];
}

/// `BumpLock` for footprint's mutexes (the default and its waiting-policy baselines).
macro_rules! footprint_bump_lock {
    ($($m:ty),*) => {$(
        impl BumpLock for $m {
            fn new() -> Self {
                <$m>::new([0; 8])
            }
            fn bump(&self) {
                let mut g = self.lock();
                for v in g.iter_mut() {
                    *v += 1;
                }
            }
            fn get(&self) -> [u64; 8] {
                *self.lock()
            }
        }
    )*};
}

footprint_bump_lock!(
    footprint::sync::Mutex<[u64; 8]>,
    footprint::sync::baseline::BlockTtasMutex<[u64; 8]>,
    footprint::sync::baseline::SpinTtasMutex<[u64; 8]>
);

impl BumpLock for std::sync::Mutex<[u64; 8]> {
    fn new() -> Self {
        std::sync::Mutex::new([0; 8])
    }
    fn bump(&self) {
        let mut g = self.lock().expect("no panic under the lock");
        for v in g.iter_mut() {
            *v += 1;
        }
    }
    fn get(&self) -> [u64; 8] {
        *self.lock().expect("no panic under the lock")
    }
}

impl BumpLock for parking_lot::Mutex<[u64; 8]> {
    fn new() -> Self {
        parking_lot::Mutex::new([0; 8])
    }
    fn bump(&self) {
        let mut g = self.lock();
        for v in g.iter_mut() {
            *v += 1;
        }
    }
    fn get(&self) -> [u64; 8] {
        *self.lock()
    }
}

fn bump_body<L: BumpLock>(m: &L, ops: usize, seed: u64) {
    let mut x = seed;
    for _ in 0..ops {
        m.bump();
        x = lcg40(x);
    }
}

/// `threads` green threads on `rt`, each `ops` bumps of an `L` (a footprint `Mutex<[u64; 8]>`
/// or one of its waiting-policy baselines).
pub fn bump_green<L: BumpLock>(rt: &footprint::Runtime, threads: usize, ops: usize) -> Duration {
    let m = L::new();
    let t = rt.block_on(|| {
        let start = Instant::now();
        footprint::scope(|s| {
            for i in 0..threads {
                let m = &m;
                s.spawn(move || bump_body(m, ops, i as u64));
            }
        });
        start.elapsed()
    });
    assert_eq!(m.get(), [(threads * ops) as u64; 8], "bump counts");
    t
}

/// `threads` OS threads, each `ops` bumps of an `L`.
pub fn bump_os<L: BumpLock>(threads: usize, ops: usize) -> Duration {
    let m = L::new();
    let start = Instant::now();
    std::thread::scope(|s| {
        for i in 0..threads {
            let m = &m;
            s.spawn(move || bump_body(m, ops, i as u64));
        }
    });
    let t = start.elapsed();
    assert_eq!(m.get(), [(threads * ops) as u64; 8], "bump counts");
    t
}

// ---------------------------------------------------------------------------------------------
// TSP-shaped branch and bound.

/// A deterministic symmetric instance of `n` cities (integer distances 1..=100).
pub fn tsp_instance(n: usize) -> Vec<Vec<u64>> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut d = vec![vec![0u64; n]; n];
    let pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .collect();
    for (i, j) in pairs {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = 1 + x % 100;
        d[i][j] = v;
        d[j][i] = v;
    }
    d
}

/// The shared bound of the search: read at every node, offered at every complete tour.
pub trait Bound: Send + Sync {
    fn new(v: u64) -> Self;
    fn read(&self) -> u64;
    fn offer(&self, v: u64);
}

impl Bound for footprint::sync::Mutex<u64> {
    fn new(v: u64) -> Self {
        footprint::sync::Mutex::new(v)
    }
    fn read(&self) -> u64 {
        *self.lock()
    }
    fn offer(&self, v: u64) {
        let mut g = self.lock();
        if v < *g {
            *g = v;
        }
    }
}

impl Bound for footprint::sync::RwLock<u64> {
    fn new(v: u64) -> Self {
        footprint::sync::RwLock::new(v)
    }
    fn read(&self) -> u64 {
        *self.read()
    }
    fn offer(&self, v: u64) {
        if v < *self.read() {
            let mut g = self.write();
            if v < *g {
                *g = v;
            }
        }
    }
}

impl Bound for std::sync::Mutex<u64> {
    fn new(v: u64) -> Self {
        std::sync::Mutex::new(v)
    }
    fn read(&self) -> u64 {
        *self.lock().expect("no panic under the lock")
    }
    fn offer(&self, v: u64) {
        let mut g = self.lock().expect("no panic under the lock");
        if v < *g {
            *g = v;
        }
    }
}

/// The optimistic read: the bound is one word, so a reader needs no lock at all (an atomic
/// load); an offer lowers it with `fetch_min`.
impl Bound for AtomicU64 {
    fn new(v: u64) -> Self {
        AtomicU64::new(v)
    }
    fn read(&self) -> u64 {
        self.load(Ordering::Relaxed)
    }
    fn offer(&self, v: u64) {
        self.fetch_min(v, Ordering::Relaxed);
    }
}

/// Depth (cities on the partial tour) down to which the search spawns a task per child.
const SPAWN_DEPTH: usize = 4;

/// A partial tour: the cities visited (bitmask), the last city, the length so far, the depth.
#[derive(Clone, Copy)]
struct Node {
    visited: u32,
    last: usize,
    len: u64,
    depth: usize,
}

/// Expands `node` sequentially (below the spawn depth).
fn search_seq<B: Bound>(d: &[Vec<u64>], bound: &B, node: Node) {
    let n = d.len();
    if node.len >= bound.read() {
        return;
    }
    if node.depth == n {
        bound.offer(node.len + d[node.last][0]);
        return;
    }
    for c in 1..n {
        if node.visited & (1 << c) == 0 {
            search_seq(
                d,
                bound,
                Node {
                    visited: node.visited | 1 << c,
                    last: c,
                    len: node.len + d[node.last][c],
                    depth: node.depth + 1,
                },
            );
        }
    }
}

fn children(d: &[Vec<u64>], node: Node) -> impl Iterator<Item = Node> + '_ {
    (1..d.len())
        .filter(move |c| node.visited & (1 << c) == 0)
        .map(move |c| Node {
            visited: node.visited | 1 << c,
            last: c,
            len: node.len + d[node.last][c],
            depth: node.depth + 1,
        })
}

const ROOT: Node = Node {
    visited: 1,
    last: 0,
    len: 0,
    depth: 1,
};

/// The optimal tour length, found on one thread (the check).
pub fn tsp_expected(d: &[Vec<u64>]) -> u64 {
    let b = AtomicU64::new(u64::MAX);
    search_seq(d, &b, ROOT);
    b.into_inner()
}

fn search_footprint<'scope, 'env, B: Bound>(
    s: &'scope footprint::Scope<'scope, 'env>,
    d: &'env [Vec<u64>],
    bound: &'env B,
    node: Node,
) {
    if node.depth >= SPAWN_DEPTH {
        return search_seq(d, bound, node);
    }
    if node.len >= bound.read() {
        return;
    }
    for child in children(d, node) {
        s.spawn(move || search_footprint(s, d, bound, child));
    }
}

fn search_rayon<'s, B: Bound>(s: &rayon::Scope<'s>, d: &'s [Vec<u64>], bound: &'s B, node: Node) {
    if node.depth >= SPAWN_DEPTH {
        return search_seq(d, bound, node);
    }
    if node.len >= bound.read() {
        return;
    }
    for child in children(d, node) {
        s.spawn(move |s| search_rayon(s, d, bound, child));
    }
}

/// The search on `rt` with footprint `scope`s and bound `B`; checks the answer.
pub fn tsp_green<B: Bound>(rt: &footprint::Runtime, d: &[Vec<u64>], expected: u64) -> Duration {
    let bound = B::new(u64::MAX);
    let t = rt.block_on(|| {
        let start = Instant::now();
        footprint::scope(|s| search_footprint(s, d, &bound, ROOT));
        start.elapsed()
    });
    assert_eq!(bound.read(), expected, "optimal tour");
    t
}

/// The search on a rayon pool with `rayon::scope` and bound `B`; checks the answer.
pub fn tsp_rayon<B: Bound>(pool: &rayon::ThreadPool, d: &[Vec<u64>], expected: u64) -> Duration {
    let bound = B::new(u64::MAX);
    let t = pool.install(|| {
        let start = Instant::now();
        rayon::scope(|s| search_rayon(s, d, &bound, ROOT));
        start.elapsed()
    });
    assert_eq!(bound.read(), expected, "optimal tour");
    t
}

// ---------------------------------------------------------------------------------------------
// Channel pipeline.

/// Capacity of both channels.
pub const PIPE_CAP: usize = 64;

/// The sum the summer must see for `messages` messages `0..messages`.
pub fn pipeline_expected(messages: u64) -> u64 {
    (0..messages)
        .map(|v| v.wrapping_mul(v))
        .fold(0, u64::wrapping_add)
}

/// Work each stage of the pipeline does per message besides passing it on, in [`lcg40`] calls
/// (0.05 µs each on this project's machines): none in the many-core rows, where the channels
/// alone set the pace. With the summer's the largest, the summer is the bottleneck and every
/// other stage waits on a full channel (the shape where a wake-up per message lands on the
/// thread that sets the pace).
#[derive(Clone, Copy, Debug, Default)]
pub struct StageWork {
    pub producer: u32,
    pub squarer: u32,
    pub summer: u32,
}

impl StageWork {
    /// The bottleneck shape of `examples/pipeline_probe`: 1, 2 and 10 calls.
    pub const SUMMER_BOUND: StageWork = StageWork {
        producer: 1,
        squarer: 2,
        summer: 10,
    };
}

/// `units` calls of [`lcg40`] from `v`, kept from the optimiser.
#[inline]
fn stage_work(units: u32, v: u64) {
    let mut x = v;
    for _ in 0..units {
        x = lcg40(x);
    }
    std::hint::black_box(x);
}

/// `producers` → `bounded(64)` → `squarers` → `bounded(64)` → 1 summer, on green threads of `rt`
/// with `footprint::channel`; `messages` messages in all.
pub fn pipeline_green(
    rt: &footprint::Runtime,
    producers: usize,
    squarers: usize,
    messages: u64,
) -> Duration {
    pipeline_green_with(rt, producers, squarers, messages, StageWork::default())
}

/// [`pipeline_green`] with `work` per message at each stage.
pub fn pipeline_green_with(
    rt: &footprint::Runtime,
    producers: usize,
    squarers: usize,
    messages: u64,
    work: StageWork,
) -> Duration {
    rt.block_on(|| {
        let (tx1, rx1) = footprint::channel::bounded::<u64>(PIPE_CAP);
        let (tx2, rx2) = footprint::channel::bounded::<u64>(PIPE_CAP);
        let start = Instant::now();
        let sum = footprint::scope(|s| {
            for p in 0..producers as u64 {
                let tx = tx1.clone();
                s.spawn(move || {
                    let mut v = p;
                    while v < messages {
                        stage_work(work.producer, v);
                        tx.send(v).expect("the squarers receive");
                        v += producers as u64;
                    }
                });
            }
            drop(tx1);
            for _ in 0..squarers {
                let (rx, tx) = (rx1.clone(), tx2.clone());
                s.spawn(move || {
                    for v in rx.iter() {
                        stage_work(work.squarer, v);
                        tx.send(v.wrapping_mul(v)).expect("the summer receives");
                    }
                });
            }
            drop((rx1, tx2));
            rx2.iter().fold(0u64, |sum, v| {
                stage_work(work.summer, v);
                sum.wrapping_add(v)
            })
        });
        let t = start.elapsed();
        assert_eq!(sum, pipeline_expected(messages), "pipeline sum");
        t
    })
}

/// The peer: the same pipeline on OS threads with crossbeam-channel.
pub fn pipeline_crossbeam(producers: usize, squarers: usize, messages: u64) -> Duration {
    pipeline_crossbeam_with(producers, squarers, messages, StageWork::default())
}

/// [`pipeline_crossbeam`] with `work` per message at each stage.
pub fn pipeline_crossbeam_with(
    producers: usize,
    squarers: usize,
    messages: u64,
    work: StageWork,
) -> Duration {
    let (tx1, rx1) = crossbeam_channel::bounded::<u64>(PIPE_CAP);
    let (tx2, rx2) = crossbeam_channel::bounded::<u64>(PIPE_CAP);
    let start = Instant::now();
    let sum = std::thread::scope(|s| {
        for p in 0..producers as u64 {
            let tx = tx1.clone();
            s.spawn(move || {
                let mut v = p;
                while v < messages {
                    stage_work(work.producer, v);
                    tx.send(v).expect("the squarers receive");
                    v += producers as u64;
                }
            });
        }
        drop(tx1);
        for _ in 0..squarers {
            let (rx, tx) = (rx1.clone(), tx2.clone());
            s.spawn(move || {
                for v in rx.iter() {
                    stage_work(work.squarer, v);
                    tx.send(v.wrapping_mul(v)).expect("the summer receives");
                }
            });
        }
        drop((rx1, tx2));
        rx2.iter().fold(0u64, |sum, v| {
            stage_work(work.summer, v);
            sum.wrapping_add(v)
        })
    });
    let t = start.elapsed();
    assert_eq!(sum, pipeline_expected(messages), "pipeline sum");
    t
}

// ---------------------------------------------------------------------------------------------
// What the runtime did meanwhile.

/// Sums of a runtime's per-worker counters, plus the process's contended lock acquisitions and
/// blocking barrier waits: what one run cost besides its time (for `pipeline_probe` and the
/// bench's probe mode).
#[derive(Clone, Copy, Default, Debug)]
pub struct RuntimeCounts {
    pub runs: u64,
    pub parks: u64,
    pub steals: u64,
    pub sleeps: u64,
    pub expired_sleeps: u64,
    pub inbox_wakeups: u64,
    /// Lock acquisitions that had to wait, in the whole process.
    pub contended: u64,
    /// Barrier waits that spun or blocked, in the whole process.
    pub barrier_waits: u64,
}

impl RuntimeCounts {
    /// The counts now.
    pub fn of(rt: &footprint::Runtime) -> RuntimeCounts {
        let st = rt.stats();
        let locks = footprint::sync::stats::process_totals();
        let mut c = RuntimeCounts {
            contended: locks.contended,
            barrier_waits: locks.barrier_waits,
            ..RuntimeCounts::default()
        };
        for w in &st.workers {
            c.runs += w.runs;
            c.parks += w.parks;
            c.steals += w.steals_by_tier.iter().sum::<u64>();
            c.sleeps += w.sleeps;
            c.inbox_wakeups += w.inbox_wakeups;
            c.expired_sleeps += w.expired_sleeps;
        }
        c
    }

    /// What happened between `before` and `self`.
    pub fn since(&self, before: &RuntimeCounts) -> RuntimeCounts {
        RuntimeCounts {
            runs: self.runs - before.runs,
            parks: self.parks - before.parks,
            steals: self.steals - before.steals,
            sleeps: self.sleeps - before.sleeps,
            expired_sleeps: self.expired_sleeps - before.expired_sleeps,
            inbox_wakeups: self.inbox_wakeups - before.inbox_wakeups,
            contended: self.contended - before.contended,
            barrier_waits: self.barrier_waits - before.barrier_waits,
        }
    }

    /// The counts summed with `other`'s.
    pub fn plus(&self, other: &RuntimeCounts) -> RuntimeCounts {
        RuntimeCounts {
            runs: self.runs + other.runs,
            parks: self.parks + other.parks,
            steals: self.steals + other.steals,
            sleeps: self.sleeps + other.sleeps,
            expired_sleeps: self.expired_sleeps + other.expired_sleeps,
            inbox_wakeups: self.inbox_wakeups + other.inbox_wakeups,
            contended: self.contended + other.contended,
            barrier_waits: self.barrier_waits + other.barrier_waits,
        }
    }
}
