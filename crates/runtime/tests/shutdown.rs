//! `Runtime::shutdown_timeout`: returns with the count of unfinished green threads when some stay
//! parked forever; abandoned threads are never resumed, and a later unpark is harmless.

mod common;

use common::{rt, with_watchdog};
use footprint_locks::{Placement, Unparker};
use footprint_runtime::{park, GreenBuilder};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Spawns a detached green thread that parks forever (re-parking on every wake-up) and sets
/// `resumed` if a park ever returns; sends its unparker once it is about to park.
fn park_forever(
    rt: &footprint_runtime::Runtime,
    resumed: Arc<AtomicBool>,
    tx: mpsc::Sender<Unparker>,
) {
    rt.spawn(move || {
        tx.send(park::current_unparker()).unwrap();
        loop {
            park::park();
            resumed.store(true, Ordering::SeqCst);
        }
    });
}

#[test]
fn a_thread_parked_forever_is_counted_and_never_resumed() {
    with_watchdog(60, "shutdown_timeout with a parked thread", || {
        let rt = rt(2);
        let resumed = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        park_forever(&rt, resumed.clone(), tx);
        let unparker = rx.recv().unwrap();
        let left = rt.shutdown_timeout(Duration::from_millis(20));
        assert_eq!(left, 1);
        // The workers have stopped: the unpark only queues the thread on a runtime nobody runs.
        unparker.unpark(Placement::Anywhere);
        drop(unparker);
        assert!(
            !resumed.load(Ordering::SeqCst),
            "an abandoned thread resumed"
        );
    });
}

#[test]
fn many_parked_threads_are_all_counted() {
    with_watchdog(60, "shutdown_timeout with 1,000 parked threads", || {
        let rt = rt(2);
        let resumed = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        for _ in 0..1000 {
            park_forever(&rt, resumed.clone(), tx.clone());
        }
        let unparkers: Vec<Unparker> = (0..1000).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(rt.shutdown_timeout(Duration::from_millis(20)), 1000);
        for u in &unparkers {
            u.unpark(Placement::Anywhere);
        }
    });
}

#[test]
fn a_finished_runtime_shuts_down_cleanly() {
    with_watchdog(60, "clean shutdown_timeout", || {
        let rt = rt(2);
        let done = Arc::new(AtomicUsize::new(0));
        for _ in 0..100 {
            let d = done.clone();
            rt.spawn(move || {
                d.fetch_add(1, Ordering::SeqCst);
            });
        }
        // Generous: the detached threads finish long before; a clean shutdown returns 0.
        assert_eq!(rt.shutdown_timeout(Duration::from_secs(30)), 0);
        assert_eq!(done.load(Ordering::SeqCst), 100);
    });
}

#[test]
fn named_parked_threads_are_counted() {
    with_watchdog(60, "named parked thread", || {
        let rt = rt(1);
        let (tx, rx) = mpsc::channel();
        rt.block_on(|| {
            GreenBuilder::new()
                .name("stuck-forever")
                .spawn(move || {
                    tx.send(park::current_unparker()).unwrap();
                    loop {
                        park::park();
                    }
                })
                .unwrap();
        });
        let _u: Unparker = rx.recv().unwrap();
        assert_eq!(rt.shutdown_timeout(Duration::from_millis(10)), 1);
    });
}
