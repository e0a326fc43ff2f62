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
use std::time::{Duration, Instant};

use crate::scaling::cpus::restrict_current;

/// Hand-offs of one measurement at most (each side writes the line, then waits for the other's
/// write).
const HANDOFFS: u64 = 100_000;
/// A measurement stops after this long, whatever it has done by then: on a busy machine each
/// hand-off can wait for a descheduled partner, and the figure then says so anyway.
const BUDGET: Duration = Duration::from_millis(20);
/// The first thread looks at the clock every this many hand-offs.
const CLOCK_EVERY: u64 = 256;
/// Written instead of the next turn: the measurement is over.
const STOP: u64 = u64::MAX;

/// Median of three measurements of the one-way hand-off time between CPU `a` and CPU `b`, in
/// ns: two OS threads, one restricted to each CPU, take turns writing one atomic, for at most
/// 100,000 turns or 20 ms each. Where a CPU is not in the process's allowed set the threads
/// run where the kernel puts them (a message says so) and the figure is that of those CPUs.
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
            let mut i = 0;
            while wait_for(turn, 2 * i + 1) {
                turn.store(2 * i + 2, Ordering::Release);
                i += 1;
            }
        });
        let first = s.spawn(move || {
            restrict_current(&[a]);
            let t = Instant::now();
            let mut done = 0;
            while done < HANDOFFS {
                turn.store(2 * done + 1, Ordering::Release);
                wait_for(turn, 2 * done + 2);
                done += 1;
                if done.is_multiple_of(CLOCK_EVERY) && t.elapsed() >= BUDGET {
                    break;
                }
            }
            let elapsed = t.elapsed();
            turn.store(STOP, Ordering::Release);
            elapsed.as_nanos() as f64 / (2 * done) as f64
        });
        other.join().expect("the hand-off thread does not panic");
        first.join().expect("the hand-off thread does not panic")
    })
}

/// Spins until `turn` reads `value` (`true`) or [`STOP`] (`false`); yields now and then, so that
/// two threads on one CPU (or a CPU taken by another process) still make progress.
fn wait_for(turn: &AtomicU64, value: u64) -> bool {
    let mut spins = 0u32;
    loop {
        match turn.load(Ordering::Acquire) {
            v if v == value => return true,
            STOP => return false,
            _ => {}
        }
        spins += 1;
        if spins.is_multiple_of(128) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both threads on one CPU: every hand-off waits for a yield, so the measurement ends on
    /// its budget and the stop reaches the waiting partner (a lost stop would hang here).
    #[test]
    fn a_measurement_on_one_cpu_stops_and_reports_its_average() {
        let ns = one_measurement(0, 0);
        assert!(ns.is_finite() && ns > 0.0, "{ns}");
    }
}
