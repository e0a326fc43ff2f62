//! The synchronisation shapes that fall behind OS threads on many workers, at 2 workers (or
//! `FOOTPRINT_MANY_CORE_WORKERS`), each beside its peer in one run; the bodies are in
//! `common/many_core.rs` and check their results.
//!
//! - `many_core_stencil/*`: SPMD 2-D Jacobi (258², 300 sweeps), one band
//!   of rows per rank, a barrier per sweep; 1 and 4 ranks per worker. footprint: green ranks,
//!   `footprint::sync::Barrier`; peer: as many OS threads with `std::sync::Barrier`.
//! - `many_core_mutex/*`: 4 threads per worker × 20,000 × { lock a `Mutex<[u64; 8]>`, bump
//!   all eight; 40 LCG steps outside }. footprint: green threads, `footprint::sync::Mutex`
//!   under the default rule (`GreenLockWait::Auto`: parks on 2 workers, polls on more; see
//!   `footprint::locks::green_wait`), `footprint_park` and `footprint_poll` with the rule
//!   forced, and
//!   the baselines that park at once (`footprint_block`) or never (`footprint_spin`); peers: as
//!   many OS threads with `std::sync::Mutex` and `parking_lot::Mutex`.
//! - `many_core_tsp/*`: branch and bound over a 12-city instance, the bound read at
//!   every node and offered at every tour, tasks spawned down to depth 4. footprint `scope` with
//!   the bound in a `footprint::sync::Mutex` (`footprint_mutex`; `footprint_mutex_park` and
//!   `footprint_mutex_poll` with the rule forced), a `footprint::sync::RwLock`
//!   (`footprint_rwlock`) or an `AtomicU64` (`footprint_atomic`: the optimistic read a one-word
//!   bound allows); peer: rayon `scope` + `std::sync::Mutex`.
//! - `many_core_pipeline/*`: 1 producer per worker → `bounded(64)` → 2 squarers per worker →
//!   `bounded(64)` → 1 summer, 50,000 messages. footprint: green threads,
//!   `footprint::channel`; peer: OS threads, crossbeam-channel.
//!
//! Both sides run on the same CPUs: with fewer workers than CPUs the process first restricts
//! itself to the first W (so on 16 CPUs the W = 4 rows compare 4 workers with OS threads on 4
//! CPUs); on the 2-core development machine at 2 workers that is both CPUs.
//! `FOOTPRINT_MANY_CORE_WORKERS=16` oversubscribes them (16 workers, 64 ranks / threads on 2
//! CPUs): ratios only, not what 16 cores would show.
//!
//! Run: `cargo bench --bench many_core_sync -- --warm-up-time 1 --measurement-time 3`
//!
//! `FOOTPRINT_MANY_CORE_PROBE=<runs>` skips criterion and prints, per workload, the median of
//! `<runs>` alternating runs of each variant (one line each: name, median and minimum ms, each
//! as a ratio to the first variant, the peer), a quick look for before/after comparisons, and
//! per green variant what the runtime did per run (contended lock acquisitions, blocking
//! barrier waits, parks, runs, steals, worker sleeps, inbox wake-ups).
//! `FOOTPRINT_MANY_CORE_ONLY=<part of a group name>` picks the workloads.
//! `FOOTPRINT_MANY_CORE_SIZES=issue` runs the sizes the many-core comparison was first measured
//! at on 16 cores (a 1026² stencil for 200 sweeps, 200,000 pipeline messages, a 13-city tour)
//! instead of the quick ones above.

use footprint::locks::green_wait::{self, GreenLockWait};
use footprint_workloads::many_core::{self as bodies, RuntimeCounts};
use footprint_workloads::scaling::cpus;

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};

/// The sizes of the four workloads.
#[derive(Clone, Copy)]
struct Sizes {
    stencil_side: usize,
    stencil_sweeps: usize,
    bump_ops: usize,
    tsp_cities: usize,
    pipe_messages: u64,
}

/// Quick sizes (the default), or with `FOOTPRINT_MANY_CORE_SIZES=issue` the sizes the
/// comparison was first measured at on 16 cores.
fn sizes() -> Sizes {
    match std::env::var("FOOTPRINT_MANY_CORE_SIZES").as_deref() {
        Ok("issue") => Sizes {
            stencil_side: 1026,
            stencil_sweeps: 200,
            bump_ops: 20_000,
            tsp_cities: 13,
            pipe_messages: 200_000,
        },
        Ok(other) if !other.is_empty() => {
            panic!("FOOTPRINT_MANY_CORE_SIZES={other}: the only sizes by name are `issue`")
        }
        _ => Sizes {
            stencil_side: 258,
            stencil_sweeps: 300,
            bump_ops: 20_000,
            tsp_cities: 12,
            pipe_messages: 50_000,
        },
    }
}

fn workers() -> usize {
    std::env::var("FOOTPRINT_MANY_CORE_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&w| w > 0)
        .unwrap_or(2)
}

fn runtime(workers: usize) -> footprint::Runtime {
    footprint::Runtime::builder()
        .workers(workers)
        // `FOOTPRINT_MANY_CORE_WORKERS=16` on a 2-core machine means it (see the module docs).
        .oversubscribe(true)
        .build()
        .unwrap_or_else(|e| panic!("a {workers}-worker runtime: {e}"))
}

/// One variant of a workload: its name and one timed run.
type Variant<'a> = (String, Box<dyn Fn() -> Duration + 'a>);

/// The variants of the four workloads on `rt` (`w` workers), grouped by workload.
fn workloads<'a>(
    rt: &'a footprint::Runtime,
    pool: &'a rayon::ThreadPool,
    w: usize,
) -> Vec<(&'static str, Vec<Variant<'a>>)> {
    let Sizes {
        stencil_side,
        stencil_sweeps,
        bump_ops,
        tsp_cities,
        pipe_messages,
    } = sizes();
    let stencil_expected = bodies::stencil_expected(stencil_side, stencil_sweeps);
    let d: &'a [Vec<u64>] = Box::leak(bodies::tsp_instance(tsp_cities).into_boxed_slice());
    let tsp_expected = bodies::tsp_expected(d);
    let mut stencil: Vec<Variant<'a>> = Vec::new();
    for per in [1usize, 4] {
        let ranks = w * per;
        stencil.push((
            format!("std_threads/{per}_per_worker"),
            Box::new(move || {
                bodies::stencil_os(stencil_side, stencil_sweeps, ranks, stencil_expected)
            }),
        ));
        stencil.push((
            format!("footprint/{per}_per_worker"),
            Box::new(move || {
                bodies::stencil_green(rt, stencil_side, stencil_sweeps, ranks, stencil_expected)
            }),
        ));
    }
    let threads = 4 * w;
    let mutex: Vec<Variant<'a>> = vec![
        (
            "std".into(),
            Box::new(move || bodies::bump_os::<std::sync::Mutex<[u64; 8]>>(threads, bump_ops)),
        ),
        (
            "parking_lot".into(),
            Box::new(move || bodies::bump_os::<parking_lot::Mutex<[u64; 8]>>(threads, bump_ops)),
        ),
        (
            "footprint".into(),
            Box::new(move || {
                bodies::bump_green::<footprint::sync::Mutex<[u64; 8]>>(rt, threads, bump_ops)
            }),
        ),
        (
            "footprint_park".into(),
            Box::new(move || {
                green_wait::with_green_lock_wait(GreenLockWait::Park, || {
                    bodies::bump_green::<footprint::sync::Mutex<[u64; 8]>>(rt, threads, bump_ops)
                })
            }),
        ),
        (
            "footprint_poll".into(),
            Box::new(move || {
                green_wait::with_green_lock_wait(GreenLockWait::Poll, || {
                    bodies::bump_green::<footprint::sync::Mutex<[u64; 8]>>(rt, threads, bump_ops)
                })
            }),
        ),
        (
            "footprint_block".into(),
            Box::new(move || {
                bodies::bump_green::<footprint::sync::baseline::BlockTtasMutex<[u64; 8]>>(
                    rt, threads, bump_ops,
                )
            }),
        ),
        (
            "footprint_spin".into(),
            Box::new(move || {
                bodies::bump_green::<footprint::sync::baseline::SpinTtasMutex<[u64; 8]>>(
                    rt, threads, bump_ops,
                )
            }),
        ),
    ];
    let tsp: Vec<Variant<'a>> = vec![
        (
            "rayon_std_mutex".into(),
            Box::new(move || bodies::tsp_rayon::<std::sync::Mutex<u64>>(pool, d, tsp_expected)),
        ),
        (
            "footprint_mutex".into(),
            Box::new(move || bodies::tsp_green::<footprint::sync::Mutex<u64>>(rt, d, tsp_expected)),
        ),
        (
            "footprint_mutex_park".into(),
            Box::new(move || {
                green_wait::with_green_lock_wait(GreenLockWait::Park, || {
                    bodies::tsp_green::<footprint::sync::Mutex<u64>>(rt, d, tsp_expected)
                })
            }),
        ),
        (
            "footprint_mutex_poll".into(),
            Box::new(move || {
                green_wait::with_green_lock_wait(GreenLockWait::Poll, || {
                    bodies::tsp_green::<footprint::sync::Mutex<u64>>(rt, d, tsp_expected)
                })
            }),
        ),
        (
            "footprint_rwlock".into(),
            Box::new(move || {
                bodies::tsp_green::<footprint::sync::RwLock<u64>>(rt, d, tsp_expected)
            }),
        ),
        (
            "footprint_atomic".into(),
            Box::new(move || bodies::tsp_green::<AtomicU64>(rt, d, tsp_expected)),
        ),
    ];
    let pipeline: Vec<Variant<'a>> = vec![
        (
            "crossbeam".into(),
            Box::new(move || bodies::pipeline_crossbeam(w, 2 * w, pipe_messages)),
        ),
        (
            "footprint".into(),
            Box::new(move || bodies::pipeline_green(rt, w, 2 * w, pipe_messages)),
        ),
    ];
    vec![
        ("many_core_stencil", stencil),
        ("many_core_mutex", mutex),
        ("many_core_tsp", tsp),
        ("many_core_pipeline", pipeline),
    ]
}

/// `FOOTPRINT_MANY_CORE_PROBE`: medians of alternating runs, no criterion.
fn probe(runs: usize, only: Option<&str>) {
    let w = workers();
    cpus::keep_first(w);
    let rt = runtime(w);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(w)
        .build()
        .expect("a rayon pool");
    println!("{w} workers, {runs} alternating runs, medians (indicative)");
    for (group, variants) in workloads(&rt, &pool, w) {
        if only.is_some_and(|o| !group.contains(o)) {
            continue;
        }
        let mut times = vec![Vec::new(); variants.len()];
        let mut counts = vec![RuntimeCounts::default(); variants.len()];
        for _ in 0..runs {
            for (i, (_, run)) in variants.iter().enumerate() {
                let before = RuntimeCounts::of(&rt);
                times[i].push(run());
                counts[i] = counts[i].plus(&RuntimeCounts::of(&rt).since(&before));
            }
        }
        for t in times.iter_mut() {
            t.sort();
        }
        let (medians, mins): (Vec<Duration>, Vec<Duration>) =
            times.iter().map(|t| (t[t.len() / 2], t[0])).unzip();
        for (((name, _), m), lo) in variants.iter().zip(&medians).zip(&mins) {
            println!(
                "{group}/{name}: median {:.2} ms ({:.2}x {}), min {:.2} ms ({:.2}x)",
                m.as_secs_f64() * 1e3,
                m.as_secs_f64() / medians[0].as_secs_f64(),
                variants[0].0,
                lo.as_secs_f64() * 1e3,
                lo.as_secs_f64() / mins[0].as_secs_f64(),
            );
        }
        // What the runtime did per run (the green variants): where a row falls behind, whether
        // its threads parked, its workers slept and were woken, or threads moved between them.
        for ((name, _), c) in variants.iter().zip(&counts) {
            if !name.starts_with("footprint") {
                continue;
            }
            let per = |n: u64| n as f64 / runs as f64;
            println!(
                "  {group}/{name} per run: contended acquisitions {:.0}, barrier waits {:.0}, \
                 parks {:.0}, runs {:.0}, steals {:.0}, sleeps {:.0} ({:.0} ran out), \
                 inbox wake-ups {:.0}",
                per(c.contended),
                per(c.barrier_waits),
                per(c.parks),
                per(c.runs),
                per(c.steals),
                per(c.sleeps),
                per(c.expired_sleeps),
                per(c.inbox_wakeups),
            );
        }
    }
}

fn criterion_groups(c: &mut Criterion) {
    let w = workers();
    cpus::keep_first(w);
    let rt = runtime(w);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(w)
        .build()
        .expect("a rayon pool");
    for (group, variants) in workloads(&rt, &pool, w) {
        let mut g = c.benchmark_group(group);
        g.sample_size(10);
        for (name, run) in &variants {
            g.bench_function(BenchmarkId::new(name.clone(), w), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| run()).sum())
            });
        }
        g.finish();
    }
}

fn main() {
    if let Some(runs) = std::env::var("FOOTPRINT_MANY_CORE_PROBE")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        let only = std::env::var("FOOTPRINT_MANY_CORE_ONLY").ok();
        probe(runs, only.as_deref());
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    criterion_groups(&mut c);
    c.final_summary();
}
