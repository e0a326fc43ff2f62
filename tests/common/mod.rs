//! Helpers shared by the root integration tests (each test file uses a subset).
#![allow(dead_code)]

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

/// Runs `f` on a helper thread and fails the test if it takes longer than `secs` (a lost
/// wake-up would hang forever otherwise). A panic in `f` is re-raised.
pub fn with_watchdog(secs: u64, what: &str, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(()) => h.join().unwrap(),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p)
            }
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: no progress after {secs} s (lost wake-up?)")
        }
    }
}
