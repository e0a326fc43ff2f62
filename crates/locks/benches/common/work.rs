//! Calibrated busy work for the lock benchmarks and probes (`benches/locks.rs`,
//! `examples/contend_probe.rs`): the work inside and outside their critical sections.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Instant;

/// Work units per microsecond, calibrated once per process.
pub fn units_per_us() -> u64 {
    static U: OnceLock<u64> = OnceLock::new();
    *U.get_or_init(|| {
        let n = 2_000_000u64;
        let t = Instant::now();
        work(n);
        let ns = t.elapsed().as_nanos().max(1) as u64;
        (n * 1000 / ns).max(1)
    })
}

/// `units` units of busy work: a multiply-add chain the optimiser cannot remove.
#[inline(never)]
pub fn work(units: u64) {
    let mut x = 1u64;
    for i in 0..units {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    black_box(x);
}
