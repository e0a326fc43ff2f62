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

use criterion::{criterion_group, criterion_main, Criterion};
use workload::{Setup, CONFIGS, PER, WORKERS};

use footprint_workloads::fragments as workload;

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
