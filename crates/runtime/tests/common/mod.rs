//! Helpers shared by the runtime's integration tests (each test file uses a subset).
#![allow(dead_code)]

use footprint_runtime::Runtime;
use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on a helper thread and fails the test if it takes longer than `secs` (a lost
/// wake-up would hang forever otherwise). A panic in `f` is re-raised.
pub fn with_watchdog(secs: u64, what: &str, f: impl FnOnce() + Send + 'static) {
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

/// A runtime with `workers` workers and every other setting at its default.
pub fn rt(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .build()
        .expect("runtime")
}
