//! An idle worker and a spawner whose joiner runs each thread inline (spawn, then join): the
//! two sides of the idle protocol's trade (`sleep.rs`). The spawner must not wake the idle
//! worker at every push (a futex wake-up per spawn, and a thief polling its deque), and work it
//! pushes that only the idle worker can run (a `join` half whose first half spins, never
//! yielding, until the second has run) must still wake it, whatever state it is in: asleep,
//! falling asleep or searching. A sleep once had to be bounded because such a push could be
//! missed (the test hung in 3 of 40 runs); the protocol now loses no wake-up, and the test
//! suite runs with the sleep's safety net off (`FOOTPRINT_IDLE_SAFETY_NET=off`, `.ci/run`).
//!
//! Every test runs under a watchdog: a lost wake-up would hang it, which is then reported as a
//! failure; and every test checks that no sleep ran out and then found work.

mod common;

use common::with_watchdog;
use footprint_runtime::{join, spawn, Runtime};
use std::sync::atomic::{AtomicBool, Ordering};

/// Spawn + join of empty threads from one green thread: the joiner runs each inline, so the
/// other worker's wake-ups find nothing.
fn spawn_join_inline(n: u64) {
    for i in 0..n {
        assert_eq!(spawn(move || i).join().unwrap(), i);
    }
}

#[test]
fn a_deaf_worker_still_takes_a_join_half_that_needs_a_second_worker() {
    with_watchdog(120, "deaf worker takes a later join half", || {
        let rt = Runtime::builder().workers(2).build().expect("runtime");
        for round in 0..60 {
            rt.block_on(move || {
                spawn_join_inline(20_000);
                // The first half spins (it never parks or yields) until the second half runs,
                // which it can only do on the other worker: that worker must take it off this
                // worker's deque, whether it sleeps deaf, hearing, or is awake.
                let ran = AtomicBool::new(false);
                join(
                    || {
                        while !ran.load(Ordering::Acquire) {
                            std::hint::spin_loop();
                        }
                    },
                    || ran.store(true, Ordering::Release),
                );
                assert!(ran.load(Ordering::Relaxed), "round {round}");
            });
        }
        assert_eq!(rt.stats().expired_sleeps_with_work(), 0);
    });
}

#[test]
fn a_spawner_whose_threads_run_inline_wakes_the_idle_worker_rarely() {
    with_watchdog(120, "spawner and idle worker", || {
        let rt = Runtime::builder().workers(2).build().expect("runtime");
        let n = 400_000u64;
        rt.block_on(move || spawn_join_inline(n));
        let s = rt.stats();
        let sleeps: u64 = s.workers.iter().map(|w| w.sleeps).sum();
        // A woken worker searches (a bounded number of polls) before it sleeps again, and
        // while it searches the spawner's pushes wake nobody: the spawner's 400,000 pushes
        // cause far fewer sleeps (and wake-ups) than one each.
        assert!(
            sleeps <= n / 8,
            "{sleeps} sleeps for {n} spawns: the spawner woke the idle worker at nearly every push"
        );
        assert_eq!(
            s.expired_sleeps_with_work(),
            0,
            "a sleep ran out and then found work"
        );
    });
}
