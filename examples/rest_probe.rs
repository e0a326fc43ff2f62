//! A lock-bound loop (8 green threads on one `Mutex`, 32 KiB touched per critical section) on an
//! N-worker runtime whose active-worker limit is lowered after the first round (issue 12):
//! compare its time per operation with a 1-worker runtime's. Each round spawns new threads, so
//! rounds after the first show whether workers above the limit still take work.
//!
//! `cargo run --release --example rest_probe -- WORKERS ACTIVE ITERS FIRST_ACTIVE`, e.g.
//! `-- 8 1 5000 8` against `-- 1 1 5000 1`; prints ns per operation per round and the stats.
use footprint::sync::Mutex;
use std::time::Instant;
fn main() {
    let mut args = std::env::args().skip(1);
    let workers: usize = args.next().map_or(1, |a| a.parse().unwrap());
    let active: usize = args.next().map_or(1, |a| a.parse().unwrap());
    let iters: u64 = args.next().map_or(20000, |a| a.parse().unwrap());
    let first: usize = args.next().map_or(active, |a| a.parse().unwrap());
    let rt = footprint::Runtime::builder()
        .workers(workers)
        .pin(workers <= 2)
        .build()
        .unwrap();
    rt.set_active_workers(first).unwrap();
    let data = Mutex::new(vec![0u64; 4096]);
    for round in 0..4 {
        if round == 1 {
            rt.set_active_workers(active).unwrap();
        }
        let start = Instant::now();
        rt.block_on(|| {
            footprint::scope(|s| {
                for t in 0..8u64 {
                    let data = &data;
                    s.spawn(move || {
                        for i in 0..iters {
                            let mut d = data.lock();
                            for (k, w) in d.iter_mut().enumerate() {
                                *w = w.wrapping_add(t ^ i ^ k as u64);
                            }
                            drop(d);
                        }
                    });
                }
            })
        });
        let e = start.elapsed();
        println!(
            "workers={workers} active={active} round={round} per_op={:.1} ns",
            e.as_nanos() as f64 / (8 * iters) as f64
        );
    }
    println!("{}", rt.stats());
}
