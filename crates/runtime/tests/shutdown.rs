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

/// The child half of `drop_names_what_it_waits_for` (does nothing unless the parent runs it):
/// drops a runtime whose named green thread stays parked until a line arrives on stdin.
#[test]
fn drop_warning_child() {
    if std::env::var_os("FOOTPRINT_DROP_WARNING_CHILD").is_none() {
        return;
    }
    let rt = rt(1);
    let (tx, rx) = mpsc::channel();
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    rt.block_on(|| {
        GreenBuilder::new()
            .name("waits-for-stdin")
            .spawn(move || {
                tx.send(park::current_unparker()).unwrap();
                while !d.load(Ordering::SeqCst) {
                    park::park();
                }
            })
            .unwrap();
    });
    let u: Unparker = rx.recv().unwrap();
    std::thread::spawn(move || {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        done.store(true, Ordering::SeqCst);
        u.unpark(Placement::Anywhere);
    });
    drop(rt); // waits; after 3 s it names the thread on stderr; the parent then writes a line
}

#[test]
fn drop_names_what_it_waits_for() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    with_watchdog(120, "drop warning", || {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "drop_warning_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("FOOTPRINT_DROP_WARNING_CHILD", "1")
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let mut warned = None;
        for line in stderr.lines() {
            let line = line.unwrap();
            if line.contains("dropping the runtime has waited") {
                warned = Some(line);
                break;
            }
        }
        let line = warned.expect("the drop never printed its warning");
        assert!(line.contains("for 1 unfinished green thread"), "{line}");
        assert!(line.contains("waits-for-stdin"), "{line}");
        // Let the parked thread finish: the drop then returns and the child passes.
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
        assert!(child.wait().unwrap().success());
    });
}
