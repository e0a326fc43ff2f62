//! Helpers shared by the test files that count real threads' work.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

pub mod raw_probe;

use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use footprint_pmu::{current_tid, thread_cpu_time_ns, Tid};

/// Burns `ms` of this thread's CPU time (a condition on the CPU clock, not a wall-clock wait).
pub fn spin_cpu(ms: u64) {
    let start = thread_cpu_time_ns();
    let mut x = 1u64;
    while thread_cpu_time_ns() - start < ms * 1_000_000 {
        x = std::hint::black_box(x.wrapping_mul(3).wrapping_add(1));
    }
}

/// Another thread that reports its kernel tid, burns a fixed amount of CPU time when told to,
/// and stays alive until joined, so that its tid keeps naming it while a test reads it.
pub struct CpuBurner {
    tid: Tid,
    go: Sender<()>,
    done: Receiver<()>,
    exit: Sender<()>,
    handle: JoinHandle<()>,
}

impl CpuBurner {
    /// Starts the thread; it burns `ms` of CPU time once [`burn`](Self::burn) is called.
    pub fn spawn(ms: u64) -> Self {
        let (tid_tx, tid_rx) = mpsc::channel();
        let (go, go_rx) = mpsc::channel::<()>();
        let (done_tx, done) = mpsc::channel::<()>();
        let (exit, exit_rx) = mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            tid_tx.send(current_tid()).unwrap();
            go_rx.recv().unwrap();
            spin_cpu(ms);
            done_tx.send(()).unwrap();
            exit_rx.recv().unwrap();
        });
        let tid = tid_rx.recv().unwrap();
        CpuBurner {
            tid,
            go,
            done,
            exit,
            handle,
        }
    }

    /// The thread's kernel tid.
    pub fn tid(&self) -> Tid {
        self.tid
    }

    /// Lets the thread burn its CPU time and waits until it has.
    pub fn burn(&self) {
        self.go.send(()).unwrap();
        self.done.recv().unwrap();
    }

    /// Lets the thread exit and joins it.
    pub fn join(self) {
        self.exit.send(()).unwrap();
        self.handle.join().unwrap();
    }
}

/// Whether a test that needs software perf counters should run: `FOOTPRINT_PERF=1` forces it
/// (it then fails loudly where perf is refused), `=0` skips it, otherwise a raw probe decides.
/// A skip is said on stderr (`cargo test -- --nocapture` shows it).
pub fn perf_here() -> bool {
    decide(
        "FOOTPRINT_PERF",
        raw_probe::task_clock_opens,
        "perf_event_open refused here (seccomp or perf_event_paranoid >= 3): task-clock does not open",
    )
}

/// Whether a test that needs a hardware PMU should run (`FOOTPRINT_HW_PMU=1|0` as above).
pub fn hardware_pmu_here() -> bool {
    decide(
        "FOOTPRINT_HW_PMU",
        raw_probe::hardware_cycles_open,
        "no hardware PMU here: a cycles counter does not open (see the pmu_probe example)",
    )
}

fn decide(var: &str, probe: fn() -> bool, reason: &str) -> bool {
    let run = match std::env::var(var).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => probe(),
    };
    if !run {
        eprintln!("skipped: {reason}");
    }
    run
}
