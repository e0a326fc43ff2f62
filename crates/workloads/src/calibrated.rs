//! Calibrated busy work for the lock benchmarks and probes of the locks crate
//! (`crates/locks/benches/locks.rs`, `crates/locks/examples/contend_probe.rs`): the work inside
//! and outside their critical sections, in units calibrated once per process.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Instant;

/// Work units per microsecond, calibrated once per process: the fastest of
/// [`CALIBRATION_RUNS`] timed runs, after one untimed run.
///
/// One timed run (as before the locks were retuned) took whatever the shared machine gave it at
/// that moment: a preemption or a busy sibling during the calibration made every critical section
/// and every piece of outside work of that process shorter, which moved the peers' own times in
/// `oversub8` by 25–40 % between processes. The fastest run is the one the fewest
/// interruptions hit, so it is the most repeatable estimate.
pub fn units_per_us() -> u64 {
    static U: OnceLock<u64> = OnceLock::new();
    *U.get_or_init(|| {
        let n = 500_000u64;
        work(n);
        let best_ns = (0..CALIBRATION_RUNS)
            .map(|_| {
                let t = Instant::now();
                work(n);
                t.elapsed().as_nanos().max(1) as u64
            })
            .min()
            .unwrap_or(1);
        (n * 1000 / best_ns).max(1)
    })
}

/// Timed calibration runs of [`units_per_us`] (each ≈0.5 ms here).
pub const CALIBRATION_RUNS: usize = 9;

/// `units` units of busy work: a multiply-add chain the optimiser cannot remove.
#[inline(never)]
pub fn work(units: u64) {
    let mut x = 1u64;
    for i in 0..units {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    black_box(x);
}
