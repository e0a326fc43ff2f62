//! 001's data-fragment (DF) micro-benchmark: threads × fragment count × fragment size ×
//! iterations, with DF hints on / off / rayon side by side in one run.
//!
//! `FRAGMENTS` fragments of `SIZE` bytes each; `PER` green threads per fragment (all spawned up
//! front, interleaved: fragment 0, 1, .., F−1, 0, 1, ..); each thread reads its fragment
//! `PASSES` times (one word of every 64-byte line, lines in a fixed pseudo-random order so the
//! prefetchers cannot hide a reload) and returns the sum, which is checked.
//!
//! - `hints`: every thread is spawned with `GreenBuilder::fragment(f, SIZE)`: the runtime batches
//!   the threads of a fragment on one worker and runs them back to back (001's DF rule), so a
//!   fragment is read into that worker's cache once per batch, not once per thread.
//! - `off`: the same threads spawned plainly (`spawn`): they run in spawn order (the joiner runs
//!   unstarted ones inline, an idle worker steals the rest), so consecutive threads on a worker
//!   touch different fragments.
//! - `rayon`: the same work items on a 2-thread rayon pool (`into_par_iter` over the interleaved
//!   list), the usual data-parallel peer.
//!
//! Where it should pay (001 §5): a fragment fits the L2 (this machine: 2 MiB per core as the VM
//! reports it; the brief says 1 MiB) but all fragments together do not.
//!
//! Run: `cargo bench --bench fragments -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use rayon::prelude::*;

const WORKERS: usize = 2;
/// Threads per fragment.
const PER: usize = 8;
/// Passes of each thread over its fragment.
const PASSES: usize = 1;

/// The configurations: (fragment bytes, fragment count).
const CONFIGS: [(usize, usize); 3] = [
    // All 16 fit the two L2s together (4 MiB): little to gain.
    (256 << 10, 16),
    // One fits an L2, all 16 (16 MiB) do not: the case 001's rule is for.
    (1 << 20, 16),
    // One fragment exceeds the L2: a batch cannot keep it cached either.
    (4 << 20, 4),
];

/// A fixed pseudo-random permutation of `lines` line indices.
fn permutation(lines: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..lines as u32).collect();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

/// The work of one thread: `PASSES` reads of its fragment, one word per line.
fn work(fragment: &[u64], order: &[u32]) -> u64 {
    let mut sum = 0u64;
    for _ in 0..PASSES {
        for &line in order {
            sum = sum.wrapping_add(fragment[line as usize * 8]);
        }
    }
    black_box(sum)
}

struct Setup {
    fragments: Vec<Arc<Vec<u64>>>,
    order: Arc<Vec<u32>>,
    expected: u64,
}

impl Setup {
    fn new(bytes: usize, count: usize) -> Setup {
        let words = bytes / 8;
        let fragments: Vec<Arc<Vec<u64>>> = (0..count)
            .map(|f| Arc::new((0..words as u64).map(|i| i ^ f as u64).collect()))
            .collect();
        let order = Arc::new(permutation(words / 8));
        let expected = (0..PER * count)
            .map(|k| work(&fragments[k % count], &order))
            .fold(0u64, u64::wrapping_add);
        Setup {
            fragments,
            order,
            expected,
        }
    }

    fn run_footprint(&self, rt: &footprint::Runtime, hints: bool) -> u64 {
        let count = self.fragments.len();
        let bytes = self.fragments[0].len() * 8;
        rt.block_on(|| {
            let handles: Vec<_> = (0..PER * count)
                .map(|k| {
                    let f = k % count;
                    let (data, order) = (self.fragments[f].clone(), self.order.clone());
                    let job = move || work(&data, &order);
                    if hints {
                        footprint::GreenBuilder::new()
                            .fragment(f as u64, bytes)
                            .spawn(job)
                            .expect("a valid fragment hint")
                    } else {
                        footprint::spawn(job)
                    }
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic"))
                .fold(0u64, u64::wrapping_add)
        })
    }

    fn run_rayon(&self, pool: &rayon::ThreadPool) -> u64 {
        let count = self.fragments.len();
        pool.install(|| {
            (0..PER * count)
                .into_par_iter()
                .map(|k| work(&self.fragments[k % count], &self.order))
                .reduce(|| 0, u64::wrapping_add)
        })
    }
}

fn fragments(c: &mut Criterion) {
    let rt = footprint::Runtime::builder()
        .workers(WORKERS)
        .build()
        .expect("a 2-worker runtime");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(WORKERS)
        .build()
        .expect("a 2-thread rayon pool");
    for (bytes, count) in CONFIGS {
        let setup = Setup::new(bytes, count);
        let mut group =
            c.benchmark_group(format!("fragments/{}KiBx{count}x{PER}threads", bytes >> 10));
        group.sample_size(10);
        for (name, hints) in [("hints", true), ("off", false)] {
            assert_eq!(setup.run_footprint(&rt, hints), setup.expected, "{name}");
            group.bench_function(name, |b| b.iter(|| setup.run_footprint(&rt, hints)));
        }
        assert_eq!(setup.run_rayon(&pool), setup.expected, "rayon");
        group.bench_function("rayon", |b| b.iter(|| setup.run_rayon(&pool)));
        group.finish();
    }
    println!("{}", rt.placement_stats());
}

criterion_group!(benches, fragments);
criterion_main!(benches);
