//! 004's regular workload (1024 green threads × 64 KiB working sets, groups of 4 at barriers; see
//! `benches/working_set.rs` for the whole description), shared by that bench and the report
//! (`tools/report`), so that both time exactly the same program.

use std::hint::black_box;
use std::sync::OnceLock;

use footprint::sync::Barrier;

pub const THREADS: usize = 1024;
pub const WORKING_SET_BYTES: usize = 64 << 10;
pub const WORDS: usize = WORKING_SET_BYTES / 8;
pub const GROUP: usize = 4;
pub const ROUNDS: usize = 8;
pub const WORKERS: usize = 2;

/// The order in which a sweep visits the 1024 lines of a working set: a fixed pseudo-random
/// permutation, so that hardware prefetchers cannot hide the misses (as with 004's "snooping").
pub fn line_order() -> &'static [u16] {
    static ORDER: OnceLock<Vec<u16>> = OnceLock::new();
    ORDER.get_or_init(|| {
        let lines = WORDS / 8;
        let mut order: Vec<u16> = (0..lines as u16).collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in (1..lines).rev() {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(i, (x >> 33) as usize % (i + 1));
        }
        order
    })
}

/// One pass over a working set: a read-modify-write of the first word of every 64-byte line,
/// lines in `line_order()`.
pub fn sweep(working_set: &mut [u64]) {
    for &line in line_order() {
        let word = &mut working_set[line as usize * 8];
        *word = word.wrapping_add(1);
    }
    black_box(working_set);
}

pub fn run_footprint(
    rt: &footprint::Runtime,
    data: &mut [u64],
    start: &Barrier,
    barriers: &[Barrier],
) {
    rt.block_on(|| {
        footprint::scope(|s| {
            for (i, working_set) in data.chunks_exact_mut(WORDS).enumerate() {
                let barrier = &barriers[i / GROUP];
                s.spawn(move || {
                    start.wait();
                    for _ in 0..ROUNDS {
                        sweep(working_set);
                        barrier.wait();
                    }
                });
            }
        })
    })
}

pub fn run_std_threads(
    data: &mut [u64],
    start: &std::sync::Barrier,
    barriers: &[std::sync::Barrier],
) {
    std::thread::scope(|s| {
        for (i, working_set) in data.chunks_exact_mut(WORDS).enumerate() {
            let barrier = &barriers[i / GROUP];
            std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn_scoped(s, move || {
                    start.wait();
                    for _ in 0..ROUNDS {
                        sweep(working_set);
                        barrier.wait();
                    }
                })
                .expect("starting an OS thread");
        }
    })
}

/// Every word's line was touched once per round by its owner, and nothing else touched it.
pub fn check(data: &[u64], runs: u64) {
    for (i, line) in data.chunks_exact(8).enumerate() {
        assert_eq!(line[0], runs * ROUNDS as u64, "line {i}");
    }
}
