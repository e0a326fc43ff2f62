//! The bodies of the runtime micro-benchmarks (yield, spawn + join) for footprint and its peers,
//! shared by `benches/runtime_micro.rs` and the report (`tools/report`), so that both time
//! exactly the same code. Each takes an iteration count and returns the time of the timed loop
//! (set-up outside it); see the bench's top comment for what one iteration is.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use corosensei::{Coroutine, CoroutineResult};

/// `may` is configured once per process, before its scheduler starts: one worker, so that its
/// yield is measured like ours (two coroutines sharing one worker).
pub fn configure_may() {
    may::config().set_workers(1).set_stack_size(0x1000);
}

/// `iters` yields of each of two green threads ping-ponging on `rt` (one worker); the time per
/// yield is the result divided by `iters`.
pub fn footprint_yield(rt: &footprint::Runtime, iters: u64) -> Duration {
    rt.block_on(|| {
        let started = Arc::new(AtomicBool::new(false));
        let partner_started = Arc::clone(&started);
        let partner = footprint::spawn(move || {
            partner_started.store(true, Ordering::Release);
            for _ in 0..iters {
                footprint::yield_now();
            }
        });
        // Both threads must be in their loops when timing starts.
        while !started.load(Ordering::Acquire) {
            footprint::yield_now();
        }
        let start = Instant::now();
        for _ in 0..iters {
            footprint::yield_now();
        }
        partner.join().expect("the partner does not panic");
        start.elapsed() / 2
    })
}

/// The same ping-pong with two `may` coroutines (after [`configure_may`]).
pub fn may_yield(iters: u64) -> Duration {
    let timer = may::go!(move || {
        // may runs a new coroutine only when its worker's local queue is empty, and a
        // yielding coroutine never leaves it empty: block on a channel until the partner
        // runs, so that both are in the local queue and alternate.
        let (started_tx, started_rx) = may::sync::mpsc::channel();
        let partner = may::go!(move || {
            started_tx.send(()).expect("the timer waits for this");
            for _ in 0..iters {
                may::coroutine::yield_now();
            }
        });
        started_rx.recv().expect("the partner starts");
        let start = Instant::now();
        for _ in 0..iters {
            may::coroutine::yield_now();
        }
        partner.join().expect("the partner does not panic");
        start.elapsed() / 2
    });
    timer.join().expect("the timing coroutine does not panic")
}

/// `iters` resume + suspend pairs of one raw `corosensei` coroutine: the two stack switches any
/// yield through a scheduler needs (the floor).
pub fn corosensei_resume_suspend(iters: u64) -> Duration {
    let mut co: Coroutine<(), (), ()> = Coroutine::new(|yielder, ()| loop {
        yielder.suspend(());
    });
    let start = Instant::now();
    for _ in 0..iters {
        match co.resume(()) {
            CoroutineResult::Yield(()) => {}
            CoroutineResult::Return(()) => unreachable!("the coroutine loops forever"),
        }
    }
    start.elapsed()
    // The coroutine is dropped suspended: corosensei unwinds its stack.
}

/// `iters` spawns of an empty green thread from a green thread of `rt`, each joined.
pub fn footprint_spawn_join(rt: &footprint::Runtime, iters: u64) -> Duration {
    rt.block_on(|| {
        let start = Instant::now();
        for _ in 0..iters {
            let h = footprint::spawn(|| black_box(0u64));
            black_box(h.join().expect("an empty thread does not panic"));
        }
        start.elapsed()
    })
}

/// The same with `may` coroutines, from a coroutine.
pub fn may_spawn_join(iters: u64) -> Duration {
    may::go!(move || {
        let start = Instant::now();
        for _ in 0..iters {
            let h = may::go!(|| black_box(0u64));
            black_box(h.join().expect("an empty coroutine does not panic"));
        }
        start.elapsed()
    })
    .join()
    .expect("the timing coroutine does not panic")
}

/// The same with OS threads (`std::thread::spawn` + `join`).
pub fn std_spawn_join(iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        let h = std::thread::spawn(|| black_box(0u64));
        black_box(h.join().expect("an empty thread does not panic"));
    }
    start.elapsed()
}

/// The CPU time of the whole process so far (`CLOCK_PROCESS_CPUTIME_ID`): unlike the wall clock
/// it does not grow while other processes hold the CPU, so the probes compare processes (and
/// builds) on a loaded machine with it.
///
/// ```
/// let before = footprint_workloads::micro::process_cpu();
/// let mut x = 0u64;
/// for i in 0..1_000_000u64 {
///     x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
/// }
/// assert!(footprint_workloads::micro::process_cpu() >= before);
/// # let _ = x;
/// ```
pub fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_PROCESS_CPUTIME_ID is available on Linux");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
