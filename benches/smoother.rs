//! 004's irregular workload: the active-threads smoother. One green thread per point of an
//! unstructured grid (4096 points, each with 512 bytes of values per buffer: 4 MiB in all with
//! the two Jacobi buffers); in each of `ITERS` sweeps a point waits until all its neighbours have
//! finished the previous sweep, averages its values with theirs (Jacobi smoothing), publishes
//! the result, wakes the neighbours it made runnable and parks. There is no global barrier:
//! which thread can run next depends on the grid, so the order in which woken threads resume decides how often a
//! point's and its neighbours' data are still in the cache. Compare with `working_set.rs` (004's
//! regular workload, 1024 × 64 KiB behind group barriers).
//!
//! Grid (`common/smoother.rs`, shared with the report): a 64 × 64 lattice with jittered extra diagonals (degree 4 to 8, symmetric), point ids
//! shuffled so that spawn order is not spatial order. The result is checked against a sequential
//! Jacobi sweep (bit-exact: same operations in the same order).
//!
//! Rows: `footprint_lifo`, `footprint_fifo`, `footprint_virtual_time` (the ready orders, 2
//! workers), `rayon_bulk_sync` (peer: each sweep a `par_iter` over all points, a global barrier
//! between sweeps), `sequential` (the oracle's loop).
//!
//! Run: `cargo bench --bench smoother -- --warm-up-time 1 --measurement-time 2`

use criterion::{criterion_group, criterion_main, Criterion};
use footprint::sync::Barrier;
use smoother_grid::Grid;

const SIDE: usize = 64;
const POINTS: usize = SIDE * SIDE;
const ITERS: u32 = 10;
const WORKERS: usize = 2;

fn smoother(c: &mut Criterion) {
    let mut grid = Grid::new(SIDE, ITERS);
    grid.run_sequential();
    let expected = grid.result();
    let mut group = c.benchmark_group(format!("smoother_{POINTS}pts_x{ITERS}"));
    group.sample_size(10);
    let start = Barrier::new(POINTS);
    for (name, rt) in orders::ready_order_runtimes(WORKERS) {
        grid.reset();
        grid.run_footprint(&rt, &start);
        assert!(grid.result() == expected, "{name}: wrong result");
        group.bench_function(name, |b| {
            b.iter(|| {
                grid.reset();
                grid.run_footprint(&rt, &start)
            })
        });
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(WORKERS)
        .build()
        .expect("a rayon pool");
    grid.reset();
    grid.run_rayon(&pool);
    assert!(grid.result() == expected, "rayon: wrong result");
    group.bench_function("rayon_bulk_sync", |b| {
        b.iter(|| {
            grid.reset();
            grid.run_rayon(&pool)
        })
    });
    group.bench_function("sequential", |b| {
        b.iter(|| {
            grid.reset();
            grid.run_sequential()
        })
    });
    group.finish();
}

use footprint_workloads::orders;
use footprint_workloads::smoother as smoother_grid;

criterion_group!(benches, smoother);
criterion_main!(benches);
