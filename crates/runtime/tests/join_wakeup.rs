//! Regression test for a lost wake-up in the park protocol.
//!
//! A `join` half run by a thief publishes `done` and then unparks the owner. When the owner
//! still held a stale permit (left by an earlier join whose `done` it saw before that join's
//! unpark arrived), the unparker used to return after a plain load of the permit state. The
//! owner could then consume the stale permit, re-read `done` before the thief's store was
//! visible, and park for good: `block_on(|| fib(20))` in a loop on 2 workers hung within a few
//! thousand iterations (release build, x86), both workers asleep and the caller parked.
//!
//! A hang here is reported as a failure after a generous bound instead of blocking the suite.

use footprint_runtime::{join, Runtime};
use std::sync::mpsc;
use std::time::Duration;

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

/// Runs `iters` rounds of `block_on(|| fib(n))` on a fresh runtime with `workers` workers in a
/// separate OS thread; fails if they do not all finish within `limit`.
fn block_on_fib_loop(workers: usize, n: u64, iters: u64, limit: Duration) {
    let want = fib_seq(n);
    let (tx, rx) = mpsc::channel();
    let runner = std::thread::spawn(move || {
        let rt = Runtime::builder()
            .workers(workers)
            .build()
            .expect("runtime");
        for i in 0..iters {
            assert_eq!(rt.block_on(|| fib(n)), want, "iteration {i}");
            tx.send(i + 1).expect("receiver alive");
        }
        // No idle sleep ran out and then found work (a lost wake-up the safety net hid).
        assert_eq!(rt.stats().expired_sleeps_with_work(), 0);
    });
    let mut done = 0;
    while done < iters {
        match rx.recv_timeout(limit) {
            Ok(i) => done = i,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "block_on(fib({n})) on {workers} workers made no progress for {limit:?} after \
                 {done} of {iters} iterations: lost wake-up (every worker asleep, caller parked)"
            ),
            // The runner panicked (wrong result): re-raise its panic below.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    if let Err(p) = runner.join() {
        std::panic::resume_unwind(p);
    }
    assert_eq!(done, iters);
}

// Iterations: before the fix a release build hung after 40 to ~3,000 rounds of fib(20) on 2
// workers. Debug builds are ~10x slower per round, so they run fewer (still several times the
// median rounds-to-hang seen before the fix, see the counts below).
const LIMIT: Duration = Duration::from_secs(60);

fn rounds(release: u64, debug: u64) -> u64 {
    if cfg!(debug_assertions) {
        debug
    } else {
        release
    }
}

#[test]
fn block_on_fib20_loop_two_workers_never_hangs() {
    block_on_fib_loop(2, 20, rounds(20_000, 2_000), LIMIT);
}

#[test]
fn block_on_fib10_loop_two_workers_never_hangs() {
    block_on_fib_loop(2, 10, rounds(200_000, 20_000), LIMIT);
}

#[test]
fn block_on_fib20_loop_three_workers_never_hangs() {
    block_on_fib_loop(3, 20, rounds(20_000, 2_000), LIMIT);
}
