//! Skynet: spawn a 10-ary tree of threads down to 1,000,000 leaves (1,111,110 spawns), each leaf
//! returning its number and each inner node summing its ten children. Measures the cost of
//! creating, scheduling and joining very many short-lived threads, on 2 workers.
//!
//! footprint: `footprint::spawn` + `JoinHandle::join` (one green thread per node).
//! rayon (peer): `rayon::scope` + `Scope::spawn` (one heap job per node) on a 2-thread pool.
//! may (peer): `may::go!` + `JoinHandle::join` (one coroutine per node) on 2 `may` workers, at
//! 10,000 leaves only: `may` starts children breadth-first and gives each live coroutine an mmap'd
//! stack with a guard page (two memory maps), so beyond ~30,000 live coroutines it exceeds
//! `vm.max_map_count` (65530 by default) and aborts with ENOMEM; 100,000 leaves already fails.
//!
//! Peak memory cannot be measured inside one criterion process (the peers share it): run
//! `examples/skynet.rs` once per implementation for time and peak RSS, see benches/README.md.
//!
//! Run: `cargo bench --bench skynet -- --warm-up-time 1 --measurement-time 3`

use footprint_workloads::skynet;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

const WORKERS: usize = 2;
/// The largest skynet `may` survives here (see the module comment).
const MAY_MAX_LEAVES: u64 = 10_000;

fn skynet_benches(c: &mut Criterion) {
    may::config().set_workers(WORKERS);
    let (rt, pool) = peers::runtime_and_rayon(WORKERS);

    let mut group = c.benchmark_group("skynet");
    group.sample_size(10);
    for leaves in [10_000u64, 1_000_000] {
        assert!(skynet::is_power_of_ten(leaves));
        let expected = skynet::expected(leaves);
        assert_eq!(rt.block_on(|| skynet::footprint_spawn(0, leaves)), expected);
        assert_eq!(pool.install(|| skynet::rayon_scope(0, leaves)), expected);
        let may_fits = leaves <= MAY_MAX_LEAVES;
        if may_fits {
            assert_eq!(
                may::go!(move || skynet::may_spawn(0, leaves))
                    .join()
                    .expect("may skynet"),
                expected
            );
        }

        group.bench_with_input(
            BenchmarkId::new("footprint_2w", leaves),
            &leaves,
            |b, &n| b.iter(|| rt.block_on(|| skynet::footprint_spawn(0, black_box(n)))),
        );
        group.bench_with_input(BenchmarkId::new("rayon_2t", leaves), &leaves, |b, &n| {
            b.iter(|| pool.install(|| skynet::rayon_scope(0, black_box(n))))
        });
        if may_fits {
            group.bench_with_input(BenchmarkId::new("may_2w", leaves), &leaves, |b, &n| {
                b.iter(|| {
                    may::go!(move || skynet::may_spawn(0, black_box(n)))
                        .join()
                        .expect("may skynet")
                })
            });
        }
    }
    group.finish();
}

use footprint_workloads::peers;
use footprint_workloads::short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = skynet_benches
}
criterion_main!(benches);
