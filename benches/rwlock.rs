//! `footprint::sync::RwLock` read-mostly beside parking_lot's `RwLock` in one run.
//!
//! 8 threads share one lock protecting a `[u64; 8]`; each operation is a read (sum the array)
//! with probability 95 % and a write (increment every element) otherwise, chosen by a per-thread
//! xorshift generator. One iteration is one operation (`iters` spread over the 8 threads).
//! footprint: 8 green threads on a 2-worker runtime; parking_lot: 8 OS threads.
//! Target: footprint ≥ parking_lot.
//!
//! Run: `cargo bench --bench rwlock -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const THREADS: u64 = 8;
/// Writes per 100 operations.
const WRITE_PERCENT: u64 = 5;

/// One thread's share: `ops` operations, reads or writes as the generator says.
fn mix(ops: u64, seed: u64, read: &dyn Fn() -> u64, write: &dyn Fn()) {
    let mut x = seed | 1;
    for _ in 0..ops {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 100 < WRITE_PERCENT {
            write();
        } else {
            black_box(read());
        }
    }
}

fn per_op(t: Duration, iters: u64, per: u64) -> Duration {
    t * iters as u32 / (per * THREADS) as u32
}

fn rwlock(c: &mut Criterion) {
    let mut group = c.benchmark_group("rwlock_read_mostly");
    group.throughput(Throughput::Elements(1));
    let rt = green::runtime(2);
    group.bench_function("footprint_green8_2workers", |b| {
        b.iter_custom(|iters| {
            let per = iters.div_ceil(THREADS);
            rt.block_on(|| {
                let lock = Arc::new(footprint::sync::RwLock::new([0u64; 8]));
                let start = Instant::now();
                let hs: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let lock = lock.clone();
                        footprint::spawn(move || {
                            mix(
                                per,
                                0x9E37_79B9 * (t + 1),
                                &|| lock.read().iter().sum(),
                                &|| lock.write().iter_mut().for_each(|v| *v += 1),
                            )
                        })
                    })
                    .collect();
                for h in hs {
                    h.join().expect("no panic");
                }
                per_op(start.elapsed(), iters, per)
            })
        })
    });
    group.bench_function("parking_lot_os8", |b| {
        b.iter_custom(|iters| {
            let per = iters.div_ceil(THREADS);
            let lock = Arc::new(parking_lot::RwLock::new([0u64; 8]));
            let start = Instant::now();
            let hs: Vec<_> = (0..THREADS)
                .map(|t| {
                    let lock = lock.clone();
                    std::thread::spawn(move || {
                        mix(
                            per,
                            0x9E37_79B9 * (t + 1),
                            &|| lock.read().iter().sum(),
                            &|| lock.write().iter_mut().for_each(|v| *v += 1),
                        )
                    })
                })
                .collect();
            for h in hs {
                h.join().expect("no panic");
            }
            per_op(start.elapsed(), iters, per)
        })
    });
    group.finish();
}

use footprint_workloads::green;
use footprint_workloads::short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = rwlock
}
criterion_main!(benches);
