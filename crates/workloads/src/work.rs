//! The private work of the lock benchmarks (`lock_hot.rs`, `multiprog.rs`): a dependent
//! multiply-add chain the compiler can neither fold nor drop (one unit ≈ 1 ns here).

use std::hint::black_box;

/// `units` dependent multiply-adds starting from `seed`.
#[inline(never)]
pub fn work(units: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..units {
        // black_box per step: the compiler can neither fold the recurrence nor drop the call.
        x = black_box(x)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    black_box(x)
}
