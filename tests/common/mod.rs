//! Helpers shared by the root integration tests (`forkjoin.rs`, `spmd.rs`, `par_*.rs`).

use footprint::Runtime;

/// The worker counts every program runs on: one, this machine's two cores, and more than the cores.
pub const WORKER_COUNTS: [usize; 3] = [1, 2, 5];

/// A runtime with exactly `workers` workers.
pub fn runtime(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .build()
        .unwrap_or_else(|e| panic!("building a runtime with {workers} workers failed: {e}"))
}

/// Runs `f` on its own thread and fails the test if it has not finished within `secs` seconds
/// (a hang becomes a failure naming `what`, not a stuck test run).
#[allow(dead_code)] // not every test file that includes this module uses it
pub fn with_watchdog(secs: u64, what: &str, f: impl FnOnce() + Send + 'static) {
    use std::sync::mpsc;
    use std::time::Duration;
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => h.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p)
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: no progress after {secs} s (lost wake-up?)")
        }
    }
}
