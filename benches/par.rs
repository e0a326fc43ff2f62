//! Parallel loops, 2 workers, peers side by side in one run:
//!
//! - `jacobi1d/<bytes>`, `jacobi2d/<bytes>`: one sweep of a 1-D 3-point / 2-D 5-point Jacobi
//!   iteration over two arrays of `bytes` in all (256 KiB: fits one 1 MiB L2; 1.5 MiB: fits the
//!   two L2s, not one; 8 MiB: fits the 32 MiB L3; 64 MiB: memory), 32 chunks: footprint's
//!   `for_each_chunk_mut` with `Static`, `Dynamic(1)`, `Guided(1)`, `Affinity` (one handle
//!   kept across sweeps) and the default schedule; rayon `par_chunks_mut` on a 2-thread pool;
//!   2 pinned OS threads that always sweep the same half and meet at a `std::sync::Barrier`
//!   (OpenMP's `schedule(static)` with bound threads).
//! - `triangular`: 4096 iterations, iteration `i` costs `i` units (uneven): `par_iter_mut`
//!   with each schedule vs rayon `par_iter_mut`.
//! - `dot`: `map_reduce` dot product of two 2^20-element vectors (16 MiB) vs rayon
//!   `par_iter().zip().map().sum()`; here `Dynamic` and `Guided` take 2^13 indices at a time.
//! - `empty_loop`: a loop over 2 chunks with an empty body (per-loop overhead) vs rayon.
//! - `sort/<n>`: `par_sort` and `par_sort_unstable` of `n` random `u64`s (10^6, 10^7) vs
//!   rayon's, each sort on a fresh copy of the input (the copy is not timed).
//!
//! Everything is timed from inside the runtime / pool (`block_on` / `install` around criterion's
//! whole batch, `iter_custom`), so only the loops are measured.
//!
//! Run: `cargo bench --bench par -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use footprint::par::{self, Affinity, Schedule};

use footprint_workloads::jacobi;
use footprint_workloads::peers;
use footprint_workloads::short;

const WORKERS: usize = 2;
const CHUNKS: usize = 32;
const SIZES: [(usize, &str); 4] = [
    (256 << 10, "256KiB"),
    (3 << 19, "1.5MiB"),
    (8 << 20, "8MiB"),
    (64 << 20, "64MiB"),
];

/// A named way to make the schedule of each loop run.
type ScheduleRow = (&'static str, Box<dyn Fn() -> Schedule + Send + Sync>);

/// The footprint schedules every loop row runs with; `Affinity` gets a fresh handle per row
/// (kept across that row's sweeps).
fn schedules() -> Vec<ScheduleRow> {
    let memory = Affinity::new();
    vec![
        ("footprint_static", Box::new(|| Schedule::Static)),
        ("footprint_dynamic", Box::new(|| Schedule::Dynamic(1))),
        ("footprint_guided", Box::new(|| Schedule::Guided(1))),
        (
            "footprint_affinity",
            Box::new(move || Schedule::Affinity(memory.clone())),
        ),
        ("footprint_default", Box::new(Schedule::default)),
    ]
}

fn jacobi(c: &mut Criterion) {
    let (rt, pool) = peers::runtime_and_rayon(WORKERS);
    for two_d in [false, true] {
        let mut g = c.benchmark_group(if two_d { "jacobi2d" } else { "jacobi1d" });
        for (bytes, label) in SIZES {
            if bytes >= 8 << 20 {
                g.sample_size(10);
            }
            let mut grid = jacobi::Grid::new(two_d, bytes, CHUNKS);
            for (name, schedule) in schedules() {
                g.bench_function(BenchmarkId::new(name, label), |b| {
                    b.iter_custom(|iters| {
                        on_footprint(&rt, iters, || {
                            grid.sweep_footprint(schedule());
                        })
                    })
                });
            }
            g.bench_function(BenchmarkId::new("rayon", label), |b| {
                b.iter_custom(|iters| {
                    on_rayon(&pool, iters, || {
                        grid.sweep_rayon();
                    })
                })
            });
            g.bench_function(BenchmarkId::new("fixed_threads", label), |b| {
                b.iter_custom(|iters| {
                    let t = Instant::now();
                    grid.sweeps_fixed_threads(WORKERS, iters as usize);
                    t.elapsed()
                })
            });
            black_box(grid.checksum());
        }
        g.finish();
    }
}

/// Times `iters` runs of `f` on a green thread of `rt` (entering the runtime is not timed).
fn on_footprint(rt: &footprint::Runtime, iters: u64, mut f: impl FnMut() + Send) -> Duration {
    rt.block_on(|| {
        let t = Instant::now();
        (0..iters).for_each(|_| f());
        t.elapsed()
    })
}

/// Times `iters` runs of `f` inside `pool` (entering the pool is not timed).
fn on_rayon(pool: &rayon::ThreadPool, iters: u64, mut f: impl FnMut() + Send) -> Duration {
    pool.install(|| {
        let t = Instant::now();
        (0..iters).for_each(|_| f());
        t.elapsed()
    })
}

/// `i` units of dependent arithmetic.
fn work(i: usize) -> u64 {
    (0..i as u64).fold(i as u64, |a, b| {
        a.wrapping_mul(6364136223846793005).wrapping_add(b)
    })
}

fn triangular_footprint(out: &mut [u64], schedule: Schedule) {
    use footprint::par::prelude::*;
    out.par_iter_mut()
        .enumerate()
        .with_schedule(schedule)
        .for_each(|(i, o)| *o = work(i));
}

fn triangular(c: &mut Criterion) {
    let (rt, pool) = peers::runtime_and_rayon(WORKERS);
    let mut g = c.benchmark_group("triangular");
    let mut out = vec![0u64; 4096];
    let mut rows = schedules();
    rows.push(("footprint_dynamic16", Box::new(|| Schedule::Dynamic(16))));
    for (name, schedule) in rows {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                on_footprint(&rt, iters, || {
                    triangular_footprint(&mut out, schedule());
                })
            })
        });
    }
    g.bench_function("rayon", |b| {
        use rayon::prelude::*;
        b.iter_custom(|iters| {
            on_rayon(&pool, iters, || {
                out.par_iter_mut()
                    .enumerate()
                    .for_each(|(i, o)| *o = work(i));
            })
        })
    });
    black_box(&out);
    g.finish();
}

fn dot(c: &mut Criterion) {
    let (rt, pool) = peers::runtime_and_rayon(WORKERS);
    let mut g = c.benchmark_group("dot");
    let n = 1 << 20;
    let a: Vec<f64> = (0..n).map(|i| (i % 17) as f64).collect();
    let b: Vec<f64> = (0..n).map(|i| (i % 5) as f64).collect();
    let expect: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    // An index loop: `Dynamic`/`Guided` get the chunk size a user would give them (64 takes
    // per worker), not the Jacobi rows' 1 (a million single-index takes).
    let mut rows = schedules();
    rows[1].1 = Box::new(move || Schedule::Dynamic(n / 128));
    rows[2].1 = Box::new(move || Schedule::Guided(n / 128));
    for (name, schedule) in rows {
        g.bench_function(name, |bench| {
            bench.iter_custom(|iters| {
                on_footprint(&rt, iters, || {
                    let d =
                        par::map_reduce(0..n, schedule(), |i| a[i] * b[i], || 0.0, |x, y| x + y);
                    assert_eq!(d, expect);
                })
            })
        });
    }
    g.bench_function("rayon", |bench| {
        use rayon::prelude::*;
        bench.iter_custom(|iters| {
            on_rayon(&pool, iters, || {
                let d: f64 = a.par_iter().zip(&b).map(|(x, y)| x * y).sum();
                assert_eq!(d, expect);
            })
        })
    });
    g.finish();
}

fn empty_loop(c: &mut Criterion) {
    let (rt, pool) = peers::runtime_and_rayon(WORKERS);
    let mut g = c.benchmark_group("empty_loop");
    let mut buf = [0u8; 2];
    for (name, schedule) in schedules() {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                on_footprint(&rt, iters, || {
                    par::for_each_chunk_mut(&mut buf, 1, schedule(), |_, c| {
                        black_box(c);
                    });
                })
            })
        });
    }
    g.bench_function("rayon", |b| {
        use rayon::prelude::*;
        b.iter_custom(|iters| {
            on_rayon(&pool, iters, || {
                buf.par_chunks_mut(1).for_each(|c| {
                    black_box(c);
                });
            })
        })
    });
    g.finish();
}

/// A random input of `n` values (xorshift, fixed seed).
fn random_u64s(n: usize) -> Vec<u64> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

/// Sums the time of `iters` runs of `sort` on fresh copies of `input` (copies not timed).
fn time_sorts(input: &[u64], iters: u64, sort: &mut dyn FnMut(&mut [u64])) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let mut v = input.to_vec();
        let t = Instant::now();
        sort(&mut v);
        total += t.elapsed();
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
    }
    total
}

fn sort(c: &mut Criterion) {
    let (rt, pool) = peers::runtime_and_rayon(WORKERS);
    let mut g = c.benchmark_group("sort");
    g.sample_size(10);
    for (n, name) in [(1_000_000, "1e6"), (10_000_000, "1e7")] {
        let input = random_u64s(n);
        g.bench_function(BenchmarkId::new("footprint_par_sort", name), |b| {
            use footprint::par::prelude::*;
            b.iter_custom(|iters| rt.block_on(|| time_sorts(&input, iters, &mut |v| v.par_sort())))
        });
        g.bench_function(BenchmarkId::new("rayon_par_sort", name), |b| {
            use rayon::prelude::*;
            b.iter_custom(|iters| pool.install(|| time_sorts(&input, iters, &mut |v| v.par_sort())))
        });
        g.bench_function(BenchmarkId::new("footprint_par_sort_unstable", name), |b| {
            use footprint::par::prelude::*;
            b.iter_custom(|iters| {
                rt.block_on(|| time_sorts(&input, iters, &mut |v| v.par_sort_unstable()))
            })
        });
        g.bench_function(BenchmarkId::new("rayon_par_sort_unstable", name), |b| {
            use rayon::prelude::*;
            b.iter_custom(|iters| {
                pool.install(|| time_sorts(&input, iters, &mut |v| v.par_sort_unstable()))
            })
        });
    }
    g.finish();
}

/// Prints the load average next to the figures (the machine is shared).
fn load(_: &mut Criterion) {
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        eprintln!("par bench: load average {}", l.trim());
    }
}

criterion_group! {
    name = benches;
    config = short::config();
    targets = load, empty_loop, triangular, dot, jacobi, sort, load
}
criterion_main!(benches);
