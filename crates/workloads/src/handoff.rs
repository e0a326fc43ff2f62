//! How long one cache line takes to move between two CPUs: a property of the machine that
//! decides lock benchmarks whose threads run on both CPUs, and that a virtual machine can
//! change under a running program.
//!
//! On the 2-vCPU KVM guest this repository is developed on, the hand-off between vCPU 0 and 1
//! reads either about 35 ns or about 165 ns, and stays at one of them for seconds at a time (the
//! host moves the vCPUs between cores that share a cache and cores that do not). 000's counter
//! benchmarks take twice as long in the slow state, green threads and OS threads alike, so a
//! comparison that times one side in one state and the other side in the other measures the
//! host: compare sides in alternating runs, and print this figure beside them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::scaling::cpus::restrict_current;

/// Hand-offs of one measurement (each side writes the line, then waits for the other's write).
const HANDOFFS: u64 = 100_000;

/// Median of three measurements of the one-way hand-off time between CPU `a` and CPU `b`, in
/// ns: two OS threads, one restricted to each CPU, take turns writing one atomic. The calling
/// thread's CPU mask is restored afterwards. Where a CPU is not in the process's allowed set
/// the threads run where the kernel puts them (a message says so) and the figure is that of
/// those CPUs.
///
/// ```
/// let ns = footprint_workloads::handoff::cache_line_handoff_ns(0, 1);
/// assert!(ns > 0.0);
/// ```
pub fn cache_line_handoff_ns(a: usize, b: usize) -> f64 {
    let mut v: Vec<f64> = (0..3).map(|_| one_measurement(a, b)).collect();
    v.sort_by(f64::total_cmp);
    v[1]
}

fn one_measurement(a: usize, b: usize) -> f64 {
    let turn = AtomicU64::new(0);
    std::thread::scope(|s| {
        let turn = &turn;
        let other = s.spawn(move || {
            restrict_current(&[b]);
            for i in 0..HANDOFFS {
                wait_for(turn, 2 * i + 1);
                turn.store(2 * i + 2, Ordering::Release);
            }
        });
        let first = s.spawn(move || {
            restrict_current(&[a]);
            let t = Instant::now();
            for i in 0..HANDOFFS {
                turn.store(2 * i + 1, Ordering::Release);
                wait_for(turn, 2 * i + 2);
            }
            t.elapsed()
        });
        other.join().expect("the hand-off thread does not panic");
        let t = first.join().expect("the hand-off thread does not panic");
        t.as_nanos() as f64 / (2 * HANDOFFS) as f64
    })
}

/// Spins until `turn` reads `value`; yields now and then, so that two threads on one CPU (or a
/// CPU taken by another process) still make progress.
fn wait_for(turn: &AtomicU64, value: u64) {
    let mut spins = 0u32;
    while turn.load(Ordering::Acquire) != value {
        spins += 1;
        if spins.is_multiple_of(128) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}
