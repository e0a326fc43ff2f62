//! The OS hook's switch-cost estimate comes from the wake-ups parked OS threads measure, unless a
//! program fixed it. Its own test process: the estimate is process-wide, and other tests' parks
//! would move it meanwhile.
#![cfg(not(loom))]

use footprint_locks::*;
use std::sync::Arc;

/// `rounds` phases of a two-thread barrier whose waiters always park: every phase but the
/// leader's side is one park and one wake-up of an OS thread.
fn parked_phases(rounds: usize) {
    let barrier = Arc::new(CentralBarrier::<ImmediateBlock>::new(2));
    let other = {
        let barrier = barrier.clone();
        std::thread::spawn(move || {
            for _ in 0..rounds {
                barrier.wait();
            }
        })
    };
    for _ in 0..rounds {
        barrier.wait();
    }
    other.join().expect("the barrier thread does not panic");
}

#[test]
fn parks_measure_the_switch_cost_until_it_is_fixed() {
    // Samples taken while the machine is oversubscribed are dropped: a loaded CI machine must
    // not turn this test into one that measures nothing.
    os::force_oversubscribed(Some(false));
    let start = os::switch_cost_ns();
    assert_eq!(start, os::DEFAULT_SWITCH_COST_NS, "nothing parked yet");
    // The estimate moves an eighth of the way per sample: it cannot stay exactly where it
    // started through a thousand real wake-ups (each at least a futex call and a switch).
    parked_phases(1_000);
    let measured = os::switch_cost_ns();
    assert_ne!(
        measured, start,
        "1,000 parked barrier phases left the estimate at its default"
    );
    assert!(measured > 0);

    os::set_switch_cost_ns(12_345);
    parked_phases(200);
    assert_eq!(
        os::switch_cost_ns(),
        12_345,
        "a fixed estimate is not measured over"
    );
    os::force_oversubscribed(None);
}
