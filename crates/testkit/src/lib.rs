//! Helpers shared by the test suites of the runtime crate and of the facade: one watchdog for
//! the whole repository, so that a lost wake-up fails a test with a message instead of hanging
//! the suite.
//!
//! This crate is a development tool of the repository (`publish = false`): the published crates
//! reach it only as a dev-dependency, which `cargo package` strips.

use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on a helper thread and fails the test if it takes longer than `secs` (a lost
/// wake-up would hang forever otherwise). A panic in `f` is re-raised.
///
/// ```
/// footprint_testkit::with_watchdog(10, "a quick sum", || assert_eq!((1..=4).sum::<u32>(), 10));
/// ```
///
/// ```should_panic
/// // A body that never finishes is reported after `secs` seconds.
/// footprint_testkit::with_watchdog(1, "a hang", || loop {
///     std::thread::park();
/// });
/// ```
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
