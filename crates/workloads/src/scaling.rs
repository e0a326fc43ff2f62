//! The scaling suite's workloads (`examples/scaling`), each as a footprint side and a peer side
//! that compute the same answer (the suite checks that the two agree) on the same CPUs.

pub mod cpus;
mod many_core_rows;

use cpus::os_threads;
use footprint::par::{self, Affinity, Schedule};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Problem sizes of one mode (`--tiny`, `--quick`, or the full run).
#[derive(Clone, Copy)]
pub struct Sizes {
    pub fib: u32,
    pub tree_root: u64,
    pub spawns: usize,
    pub sum_words: usize,
    pub jacobi_points: usize,
    pub sweeps: usize,
    pub lock_ops: usize,
    pub stencil_points: usize,
    pub stencil_sweeps: usize,
    pub messages: usize,
    /// Cities of the branch-and-bound tour ([`crate::many_core::tsp_instance`]).
    pub tsp_cities: usize,
}

pub const TINY: Sizes = Sizes {
    fib: 16,
    tree_root: 20,
    spawns: 2_000,
    sum_words: 1 << 14,
    jacobi_points: 1 << 12,
    sweeps: 3,
    lock_ops: 2_000,
    stencil_points: 1 << 10,
    stencil_sweeps: 5,
    messages: 2_000,
    tsp_cities: 8,
};

pub const QUICK: Sizes = Sizes {
    fib: 30,
    tree_root: 3_000,
    spawns: 200_000,
    sum_words: 8 << 20,
    jacobi_points: 256 << 10,
    sweeps: 100,
    lock_ops: 200_000,
    stencil_points: 256 << 10,
    stencil_sweeps: 100,
    messages: 200_000,
    tsp_cities: 13,
};

pub const FULL: Sizes = Sizes {
    fib: 33,
    tree_root: 20_000,
    spawns: 1_000_000,
    sum_words: 64 << 20,
    jacobi_points: 1536 << 10,
    sweeps: 100,
    lock_ops: 1_000_000,
    stencil_points: 1 << 20,
    stencil_sweeps: 200,
    messages: 1_000_000,
    tsp_cities: 13,
};

/// What one side of a row did: its time and a value both sides must agree on.
pub struct Run {
    pub secs: f64,
    pub check: u64,
}

fn timed(f: impl FnOnce() -> u64) -> Run {
    let t = Instant::now();
    let check = f();
    Run {
        secs: t.elapsed().as_secs_f64(),
        check,
    }
}

/// What both sides of a row run on: the footprint runtime and the rayon pool with `w` workers,
/// the CPUs the OS-thread peers are restricted to, the sizes.
pub struct Env<'a> {
    pub rt: &'a footprint::Runtime,
    pub pool: &'a rayon::ThreadPool,
    pub w: usize,
    pub cpus: &'a [usize],
    pub sizes: Sizes,
    pub affinity: &'a Affinity,
}

/// One row of the table: a workload and its peer.
pub struct Row {
    pub name: String,
    pub peer: &'static str,
    pub footprint: Box<dyn Fn(&Env) -> Run>,
    pub other: Box<dyn Fn(&Env) -> Run>,
}

fn row(
    name: impl Into<String>,
    peer: &'static str,
    footprint: impl Fn(&Env) -> Run + 'static,
    other: impl Fn(&Env) -> Run + 'static,
) -> Row {
    Row {
        name: name.into(),
        peer,
        footprint: Box::new(footprint),
        other: Box::new(other),
    }
}

/// Every row, in table order.
pub fn rows() -> Vec<Row> {
    let mut rows = vec![
        row(
            "fib (join)",
            "rayon",
            |e| e.rt.block_on(|| timed(|| fib_fp(e.sizes.fib))),
            |e| e.pool.install(|| timed(|| fib_rayon(e.sizes.fib))),
        ),
        row(
            "unbalanced tree (join)",
            "rayon",
            |e| e.rt.block_on(|| timed(|| tree_fp(e.sizes.tree_root))),
            |e| e.pool.install(|| timed(|| tree_rayon(e.sizes.tree_root))),
        ),
        row(
            "spawn storm",
            "rayon",
            |e| e.rt.block_on(|| timed(|| storm_fp(e.sizes.spawns))),
            |e| e.pool.install(|| timed(|| storm_rayon(e.sizes.spawns))),
        ),
        row(
            "sum (memory-bound)",
            "rayon",
            |e| {
                let v = words(e.sizes.sum_words);
                e.rt.block_on(|| timed(|| sum_fp(&v)))
            },
            |e| {
                let v = words(e.sizes.sum_words);
                e.pool.install(|| timed(|| sum_rayon(&v)))
            },
        ),
    ];
    for (per, label) in [(2, "2 chunks/worker"), (16, "16 chunks/worker")] {
        for sched in ["default", "Static", "Dynamic", "Guided", "Affinity"] {
            rows.push(row(
                format!("jacobi {label}, {sched}"),
                "rayon",
                move |e| {
                    let mut g = Jacobi::new(e.sizes.jacobi_points, per * e.w);
                    e.rt.block_on(|| {
                        timed(|| {
                            for _ in 0..e.sizes.sweeps {
                                g.sweep_fp(schedule(sched, e.affinity));
                            }
                            g.checksum()
                        })
                    })
                },
                move |e| {
                    let mut g = Jacobi::new(e.sizes.jacobi_points, per * e.w);
                    e.pool.install(|| {
                        timed(|| {
                            for _ in 0..e.sizes.sweeps {
                                g.sweep_rayon();
                            }
                            g.checksum()
                        })
                    })
                },
            ));
        }
    }
    rows.push(row(
        "mutex, 4 threads/worker",
        "std Mutex",
        mutex_fp,
        mutex_std,
    ));
    rows.push(row(
        "mutex, 4 threads/worker",
        "parking_lot",
        mutex_fp,
        mutex_parking_lot,
    ));
    for ranks in [1, 4] {
        rows.push(row(
            format!("SPMD stencil, {ranks} rank/worker"),
            "std Barrier",
            move |e| stencil_fp(e, ranks * e.w),
            move |e| stencil_os(e, ranks * e.w),
        ));
    }
    rows.push(row(
        "channel pipeline",
        "crossbeam",
        pipeline_fp,
        pipeline_crossbeam,
    ));
    rows.extend(many_core_rows::rows());
    rows
}

fn schedule(name: &str, affinity: &Affinity) -> Schedule {
    match name {
        "Static" => Schedule::Static,
        "Dynamic" => Schedule::Dynamic(1),
        "Guided" => Schedule::Guided(1),
        "Affinity" => Schedule::Affinity(affinity.clone()),
        _ => Schedule::default(),
    }
}

// ---- fork-join ----

fn fib_fp(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = footprint::join(|| fib_fp(n - 1), || fib_fp(n - 2));
    a + b
}

fn fib_rayon(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1), || fib_rayon(n - 2));
    a + b
}

/// A node's hash (splitmix64): the tree is the same on every run and both sides.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Children of a node below the root: 8 with probability 0.124 (a binomial tree as in UTS's
/// T3 family: expected 0.992 children, so subtrees range from one node to many thousands).
fn children(id: u64) -> u64 {
    if mix(id) % 1000 < 124 {
        8
    } else {
        0
    }
}

fn child_id(id: u64, i: u64) -> u64 {
    mix(id ^ (i.wrapping_mul(0x2545_F491_4F6C_DD1D)))
}

fn subtree_fp(id: u64, lo: u64, hi: u64) -> u64 {
    // Children lo..hi of node `id`, split in halves.
    if hi - lo == 1 {
        let c = child_id(id, lo);
        return 1 + kids_fp(c);
    }
    if hi == lo {
        return 0;
    }
    let mid = lo + (hi - lo) / 2;
    let (a, b) = footprint::join(|| subtree_fp(id, lo, mid), || subtree_fp(id, mid, hi));
    a + b
}

fn kids_fp(id: u64) -> u64 {
    let k = children(id);
    if k == 0 {
        0
    } else {
        subtree_fp(id, 0, k)
    }
}

fn tree_fp(root: u64) -> u64 {
    1 + subtree_fp(0, 0, root)
}

fn subtree_rayon(id: u64, lo: u64, hi: u64) -> u64 {
    if hi - lo == 1 {
        let c = child_id(id, lo);
        return 1 + kids_rayon(c);
    }
    if hi == lo {
        return 0;
    }
    let mid = lo + (hi - lo) / 2;
    let (a, b) = rayon::join(|| subtree_rayon(id, lo, mid), || subtree_rayon(id, mid, hi));
    a + b
}

fn kids_rayon(id: u64) -> u64 {
    let k = children(id);
    if k == 0 {
        0
    } else {
        subtree_rayon(id, 0, k)
    }
}

fn tree_rayon(root: u64) -> u64 {
    1 + subtree_rayon(0, 0, root)
}

/// A spawned task's work: a few hundred nanoseconds.
fn small_work(i: usize) -> u64 {
    (0..64u64).fold(i as u64, |a, k| mix(a ^ k))
}

fn storm_fp(n: usize) -> u64 {
    let total = AtomicU64::new(0);
    footprint::scope(|s| {
        for i in 0..n {
            let total = &total;
            s.spawn(move || {
                total.fetch_add(small_work(i) & 0xFF, Ordering::Relaxed);
            });
        }
    });
    total.into_inner()
}

fn storm_rayon(n: usize) -> u64 {
    let total = AtomicU64::new(0);
    rayon::scope(|s| {
        for i in 0..n {
            let total = &total;
            s.spawn(move |_| {
                total.fetch_add(small_work(i) & 0xFF, Ordering::Relaxed);
            });
        }
    });
    total.into_inner()
}

// ---- loops ----

fn words(n: usize) -> Vec<u64> {
    (0..n as u64).map(|i| i.wrapping_mul(0x9E37_79B9)).collect()
}

const SUM_CHUNK: usize = 1 << 14;

fn sum_fp(v: &[u64]) -> u64 {
    let chunks = v.len().div_ceil(SUM_CHUNK);
    par::map_reduce(
        0..chunks,
        Schedule::default(),
        |c| {
            v[c * SUM_CHUNK..((c + 1) * SUM_CHUNK).min(v.len())]
                .iter()
                .fold(0u64, |a, &x| a.wrapping_add(x))
        },
        || 0u64,
        u64::wrapping_add,
    )
}

fn sum_rayon(v: &[u64]) -> u64 {
    v.par_chunks(SUM_CHUNK)
        .map(|c| c.iter().fold(0u64, |a, &x| a.wrapping_add(x)))
        .reduce(|| 0, u64::wrapping_add)
}

/// A 1-D Jacobi grid split into `chunks` chunks.
struct Jacobi {
    src: Vec<f64>,
    dst: Vec<f64>,
    chunk: usize,
}

fn relax(src: &[f64], start: usize, out: &mut [f64]) {
    let n = src.len();
    for (k, o) in out.iter_mut().enumerate() {
        let i = start + k;
        let l = if i == 0 { src[0] } else { src[i - 1] };
        let r = if i + 1 == n { src[n - 1] } else { src[i + 1] };
        *o = (l + src[i] + r) * (1.0 / 3.0);
    }
}

impl Jacobi {
    fn new(points: usize, chunks: usize) -> Jacobi {
        let chunk = points.div_ceil(chunks.max(1)).max(1);
        let src: Vec<f64> = (0..points).map(|i| (i % 97) as f64).collect();
        Jacobi {
            dst: vec![0.0; points],
            src,
            chunk,
        }
    }

    fn sweep_fp(&mut self, schedule: Schedule) {
        let (src, len) = (&self.src, self.chunk);
        par::for_each_chunk_mut(&mut self.dst, len, schedule, |c, out| {
            relax(src, c * len, out)
        });
        std::mem::swap(&mut self.src, &mut self.dst);
    }

    fn sweep_rayon(&mut self) {
        let (src, len) = (&self.src, self.chunk);
        self.dst
            .par_chunks_mut(len)
            .enumerate()
            .for_each(|(c, out)| relax(src, c * len, out));
        std::mem::swap(&mut self.src, &mut self.dst);
    }

    fn checksum(&self) -> u64 {
        self.src
            .iter()
            .fold(0u64, |a, x| a.wrapping_add(x.to_bits()))
    }
}

// ---- synchronisation ----

/// Work inside and outside the critical section (a few dozen nanoseconds each).
fn critical(x: &mut u64, i: usize) {
    *x = x.wrapping_add(mix(i as u64) & 0xF);
}

fn mutex_threads(e: &Env) -> (usize, usize) {
    let threads = 4 * e.w;
    (threads, e.sizes.lock_ops / threads)
}

fn mutex_fp(e: &Env) -> Run {
    let (threads, per) = mutex_threads(e);
    let m = footprint::sync::Mutex::new(0u64);
    e.rt.block_on(|| {
        timed(|| {
            footprint::scope(|s| {
                for t in 0..threads {
                    let m = &m;
                    s.spawn(move || {
                        for i in 0..per {
                            std::hint::black_box(small_work(i) & 1);
                            critical(&mut m.lock(), t * per + i);
                        }
                    });
                }
            });
            *m.lock()
        })
    })
}

fn mutex_std(e: &Env) -> Run {
    let (threads, per) = mutex_threads(e);
    let m = std::sync::Mutex::new(0u64);
    timed(|| {
        os_threads(threads, e.cpus, |t| {
            for i in 0..per {
                std::hint::black_box(small_work(i) & 1);
                critical(&mut m.lock().unwrap(), t * per + i);
            }
        });
        let v = *m.lock().unwrap();
        v
    })
}

fn mutex_parking_lot(e: &Env) -> Run {
    let (threads, per) = mutex_threads(e);
    let m = parking_lot::Mutex::new(0u64);
    timed(|| {
        os_threads(threads, e.cpus, |t| {
            for i in 0..per {
                std::hint::black_box(small_work(i) & 1);
                critical(&mut m.lock(), t * per + i);
            }
        });
        let v = *m.lock();
        v
    })
}

/// Shared arrays of the SPMD stencil: rank `r` writes only its block of `dst` in a sweep, and
/// reads `src` (neighbours' blocks included) after the barrier that ended the last sweep.
struct Arrays([*mut f64; 2], usize);
// SAFETY: ranks write disjoint blocks between barriers (see `stencil_rank`).
unsafe impl Sync for Arrays {}

/// One rank's sweeps: its block of `a` relaxed from the other array, a barrier per sweep.
fn stencil_rank(a: &Arrays, rank: usize, ranks: usize, sweeps: usize, wait: &dyn Fn()) {
    let n = a.1;
    let block = n.div_ceil(ranks);
    let (lo, hi) = ((rank * block).min(n), ((rank + 1) * block).min(n));
    for s in 0..sweeps {
        let (src, dst) = (a.0[s % 2], a.0[(s + 1) % 2]);
        // SAFETY: in sweep `s` every rank reads all of `src` and writes only its own block of
        // `dst`; the barrier after the sweep orders these accesses before the next sweep's.
        unsafe {
            let src = std::slice::from_raw_parts(src, n);
            let out = std::slice::from_raw_parts_mut(dst.add(lo), hi - lo);
            relax(src, lo, out);
        }
        wait();
    }
}

fn stencil_arrays(n: usize) -> (Vec<f64>, Vec<f64>) {
    ((0..n).map(|i| (i % 89) as f64).collect(), vec![0.0; n])
}

fn stencil_checksum(a: &[f64], b: &[f64], sweeps: usize) -> u64 {
    let last = if sweeps.is_multiple_of(2) { a } else { b };
    last.iter().fold(0u64, |s, x| s.wrapping_add(x.to_bits()))
}

fn stencil_fp(e: &Env, ranks: usize) -> Run {
    let (n, sweeps) = (e.sizes.stencil_points, e.sizes.stencil_sweeps);
    let (mut a, mut b) = stencil_arrays(n);
    let arrays = Arrays([a.as_mut_ptr(), b.as_mut_ptr()], n);
    let barrier = footprint::sync::Barrier::new(ranks);
    let run = e.rt.block_on(|| {
        timed(|| {
            footprint::scope(|s| {
                for r in 0..ranks {
                    let (arrays, barrier) = (&arrays, &barrier);
                    s.spawn(move || {
                        stencil_rank(arrays, r, ranks, sweeps, &|| {
                            barrier.wait();
                        })
                    });
                }
            });
            0
        })
    });
    Run {
        check: stencil_checksum(&a, &b, sweeps),
        ..run
    }
}

fn stencil_os(e: &Env, ranks: usize) -> Run {
    let (n, sweeps) = (e.sizes.stencil_points, e.sizes.stencil_sweeps);
    let (mut a, mut b) = stencil_arrays(n);
    let arrays = Arrays([a.as_mut_ptr(), b.as_mut_ptr()], n);
    let barrier = std::sync::Barrier::new(ranks);
    let run = timed(|| {
        os_threads(ranks, e.cpus, |r| {
            stencil_rank(&arrays, r, ranks, sweeps, &|| {
                barrier.wait();
            })
        });
        0
    });
    Run {
        check: stencil_checksum(&a, &b, sweeps),
        ..run
    }
}

/// Lanes of the pipeline: one per worker, each a producer, a transforming stage and a consumer.
fn lanes(e: &Env) -> (usize, usize) {
    (e.w, e.sizes.messages / e.w)
}

const CAPACITY: usize = 64;

fn pipeline_fp(e: &Env) -> Run {
    let (lanes, per) = lanes(e);
    e.rt.block_on(|| {
        timed(|| {
            let total = AtomicU64::new(0);
            footprint::scope(|s| {
                for _ in 0..lanes {
                    let (tx1, rx1) = footprint::channel::bounded::<u64>(CAPACITY);
                    let (tx2, rx2) = footprint::channel::bounded::<u64>(CAPACITY);
                    s.spawn(move || {
                        for i in 0..per as u64 {
                            tx1.send(i).expect("stage alive");
                        }
                    });
                    s.spawn(move || {
                        for v in rx1 {
                            tx2.send(mix(v) & 0xFFFF).expect("consumer alive");
                        }
                    });
                    let total = &total;
                    s.spawn(move || {
                        let sum: u64 = rx2.into_iter().sum();
                        total.fetch_add(sum, Ordering::Relaxed);
                    });
                }
            });
            total.into_inner()
        })
    })
}

fn pipeline_crossbeam(e: &Env) -> Run {
    let (lanes, per) = lanes(e);
    timed(|| {
        let total = AtomicU64::new(0);
        let chans: Vec<_> = (0..lanes)
            .map(|_| {
                let (tx1, rx1) = crossbeam_channel::bounded::<u64>(CAPACITY);
                let (tx2, rx2) = crossbeam_channel::bounded::<u64>(CAPACITY);
                std::sync::Mutex::new(Some((tx1, rx1, tx2, rx2)))
            })
            .collect();
        type Ends = (
            crossbeam_channel::Sender<u64>,
            crossbeam_channel::Receiver<u64>,
            crossbeam_channel::Sender<u64>,
            crossbeam_channel::Receiver<u64>,
        );
        let take = |l: usize| -> Ends { chans[l].lock().unwrap().take().expect("lane") };
        let ends: Vec<std::sync::Mutex<Vec<Option<StageEnd>>>> = (0..lanes)
            .map(|l| {
                let (tx1, rx1, tx2, rx2) = take(l);
                std::sync::Mutex::new(vec![
                    Some(StageEnd::Produce(tx1)),
                    Some(StageEnd::Map(rx1, tx2)),
                    Some(StageEnd::Consume(rx2)),
                ])
            })
            .collect();
        os_threads(3 * lanes, e.cpus, |t| {
            let end = ends[t / 3].lock().unwrap()[t % 3].take().expect("stage");
            match end {
                StageEnd::Produce(tx) => {
                    for i in 0..per as u64 {
                        tx.send(i).expect("stage alive");
                    }
                }
                StageEnd::Map(rx, tx) => {
                    for v in rx {
                        tx.send(mix(v) & 0xFFFF).expect("consumer alive");
                    }
                }
                StageEnd::Consume(rx) => {
                    let sum: u64 = rx.into_iter().sum();
                    total.fetch_add(sum, Ordering::Relaxed);
                }
            }
        });
        total.into_inner()
    })
}

/// One OS thread's part of a crossbeam pipeline lane.
enum StageEnd {
    Produce(crossbeam_channel::Sender<u64>),
    Map(
        crossbeam_channel::Receiver<u64>,
        crossbeam_channel::Sender<u64>,
    ),
    Consume(crossbeam_channel::Receiver<u64>),
}
