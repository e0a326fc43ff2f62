//! The hang watchdog and the blocking detector, each case run in a child process (this test
//! binary again, with `FOOTPRINT_CHILD` naming the case) whose stderr the parent reads: the
//! report must come within the time set, and the child (which hangs on purpose) is killed.

use footprint_locks::{Barrier, Mutex};
use footprint_runtime::{spawn, yield_now, GreenBuilder, Runtime};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The watchdog period the hanging children use.
const PERIOD: Duration = Duration::from_millis(1000);
/// How long the parent waits for a report: the period, the watcher's ticks, and a loaded
/// machine's start-up of the child.
const PATIENCE: Duration = Duration::from_secs(30);

/// A child process killed when dropped.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs test `name` of this binary in a child with `FOOTPRINT_CHILD=name`; its stderr lines.
fn child(name: &str) -> (Kid, Receiver<String>) {
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads", "1"])
        .env("FOOTPRINT_CHILD", name)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let err = c.stderr.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (Kid(c), rx)
}

fn is_child(name: &str) -> bool {
    std::env::var("FOOTPRINT_CHILD").is_ok_and(|v| v == name)
}

/// Collects the child's lines until every one of `wanted` has been seen in some line (each a
/// set of parts that one line must all contain), or `PATIENCE` passed (then fails, showing
/// what came). Returns the lines.
fn expect_lines(rx: &Receiver<String>, wanted: &[&[&str]]) -> Vec<String> {
    let start = Instant::now();
    let mut lines = Vec::new();
    loop {
        let found = wanted.iter().all(|parts| {
            lines
                .iter()
                .any(|l: &String| parts.iter().all(|p| l.contains(p)))
        });
        if found {
            return lines;
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(l) => lines.push(l),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                panic!(
                    "the child ended before reporting {wanted:?}:\n{}",
                    lines.join("\n")
                )
            }
        }
        assert!(
            start.elapsed() < PATIENCE,
            "no report with {wanted:?} after {PATIENCE:?}:\n{}",
            lines.join("\n")
        );
    }
}

fn watched(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .pin(false)
        .watchdog(Some(PERIOD))
        .build()
        .unwrap()
}

/// Two green threads take two locks in opposite orders and deadlock: the watchdog names both,
/// each parked on a lock, and the joiner waiting for them.
#[test]
fn opposite_order_locks_are_reported() {
    const NAME: &str = "opposite_order_locks_are_reported";
    if is_child(NAME) {
        let rt = watched(2);
        rt.block_on(|| {
            let a = Arc::new(Mutex::new(0));
            let b = Arc::new(Mutex::new(0));
            let both = Arc::new(Barrier::new(2));
            let take = |name: &str, first: Arc<Mutex<i32>>, second: Arc<Mutex<i32>>| {
                let both = both.clone();
                GreenBuilder::new()
                    .name(name)
                    .spawn(move || {
                        let _g1 = first.lock();
                        both.wait(); // each holds its first lock now
                        let _g2 = second.lock();
                    })
                    .unwrap()
            };
            let l = take("left", a.clone(), b.clone());
            let r = take("right", b, a);
            // Let both start on their own stacks (a thread joined before it started would run
            // inline on its joiner, and be reported as its joiner).
            yield_now();
            yield_now();
            l.join().unwrap();
            r.join().unwrap();
        });
        return;
    }
    let (_kid, rx) = child(NAME);
    let lines = expect_lines(
        &rx,
        &[
            &["no green thread of runtime", "has run for"],
            &["'left' waits on a lock at 0x"],
            &["'right' waits on a lock at 0x"],
            &["waits on joining green thread 'left'"],
        ],
    );
    // Each reported once.
    let reports = lines
        .iter()
        .filter(|l| l.contains("no green thread of runtime"))
        .count();
    assert_eq!(reports, 1, "{}", lines.join("\n"));
}

/// Three green threads wait on a barrier for four: the report shows the barrier and the
/// arrivals.
#[test]
fn a_barrier_one_short_is_reported() {
    const NAME: &str = "a_barrier_one_short_is_reported";
    if is_child(NAME) {
        let rt = watched(2);
        rt.block_on(|| {
            let barrier = Arc::new(Barrier::new(4));
            let hs: Vec<_> = (0..3)
                .map(|i| {
                    let b = barrier.clone();
                    GreenBuilder::new()
                        .name(format!("party-{i}"))
                        .spawn(move || {
                            b.wait();
                        })
                        .unwrap()
                })
                .collect();
            for _ in 0..3 {
                yield_now(); // all start on their own stacks (see the case above)
            }
            for h in hs {
                h.join().unwrap();
            }
        });
        return;
    }
    let (_kid, rx) = child(NAME);
    expect_lines(
        &rx,
        &[
            &["no green thread of runtime"],
            &["4 parked green threads"],
            &[
                "waits on joining green thread 'party-0', called at",
                "tests/watchdog.rs:",
            ],
            &[
                "'party-",
                "waits on a barrier at 0x",
                "(it arrived 3 of 4), called at",
                "tests/watchdog.rs:",
            ],
            &["'party-", "(it arrived 1 of 4)"],
        ],
    );
}

/// A `std::sync::Mutex` held across `footprint::sleep` on one worker: the next green thread
/// that locks it blocks the worker's OS thread, so the sleeper can never run again. The
/// blocking detector names the blocked thread and its system call, and the watchdog reports
/// the worker stuck in it.
#[test]
fn a_std_mutex_across_a_sleep_is_reported() {
    const NAME: &str = "a_std_mutex_across_a_sleep_is_reported";
    if is_child(NAME) {
        let rt = watched(1);
        rt.block_on(|| {
            let m = Arc::new(std::sync::Mutex::new(0));
            let m2 = m.clone();
            let holder = GreenBuilder::new()
                .name("holder")
                .spawn(move || {
                    let g = m2.lock().unwrap();
                    footprint_runtime::sleep(Duration::from_millis(50));
                    drop(g);
                })
                .unwrap();
            yield_now(); // the holder takes the lock and sleeps
            let blocked = GreenBuilder::new()
                .name("blocked")
                .spawn(move || *m.lock().unwrap() += 1)
                .unwrap();
            yield_now(); // the blocked thread blocks this worker for good
            holder.join().unwrap();
            blocked.join().unwrap();
        });
        return;
    }
    let (_kid, rx) = child(NAME);
    expect_lines(
        &rx,
        &[
            &["worker 0 has run green thread 'blocked'", "futex"],
            &["no green thread of runtime"],
            &["worker 0", "running green thread 'blocked'", "futex"],
        ],
    );
}

/// A green thread that calls `std::thread::sleep(300 ms)` is named by the blocking detector,
/// with the sleep's system call, while it sleeps (and so within a second); the stats count it.
#[test]
fn a_blocking_sleep_is_named_while_it_sleeps() {
    const NAME: &str = "a_blocking_sleep_is_named_while_it_sleeps";
    if is_child(NAME) {
        let rt = Runtime::builder()
            .workers(1)
            .pin(false)
            .blocking_warning(Some(Duration::from_millis(100)))
            .build()
            .unwrap();
        rt.block_on(|| {
            let h = GreenBuilder::new()
                .name("sleeper")
                .spawn(|| std::thread::sleep(Duration::from_millis(300)))
                .unwrap();
            yield_now(); // it starts on its own stack (joined unstarted, it would run inline)
            h.join().unwrap();
        });
        eprintln!("slept; blocking_warnings={}", rt.stats().blocking_warnings);
        return;
    }
    let (mut kid, rx) = child(NAME);
    assert!(kid.0.wait().unwrap().success());
    let lines: Vec<String> = rx.iter().collect();
    let warned = lines
        .iter()
        .position(|l| l.contains("has run green thread 'sleeper'") && l.contains("nanosleep"));
    let slept = lines.iter().position(|l| l.starts_with("slept;"));
    match (warned, slept) {
        (Some(w), Some(s)) => assert!(w < s, "{}", lines.join("\n")),
        _ => panic!("no warning naming 'sleeper':\n{}", lines.join("\n")),
    }
    assert!(
        lines.iter().any(|l| l == "slept; blocking_warnings=1"),
        "{}",
        lines.join("\n")
    );
}

/// A green thread that computes for longer than the threshold is not reported (it works; it
/// does not block), and a runtime that finishes its work reports no hang.
#[test]
fn computing_and_finishing_are_not_reported() {
    let rt = Runtime::builder()
        .workers(1)
        .pin(false)
        .watchdog(Some(Duration::from_millis(200)))
        .blocking_warning(Some(Duration::from_millis(50)))
        .build()
        .unwrap();
    let x = rt.block_on(|| {
        let h = spawn(|| {
            let start = Instant::now();
            let mut x = 0u64;
            while start.elapsed() < Duration::from_millis(400) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            x
        });
        h.join().unwrap()
    });
    std::hint::black_box(x);
    std::thread::sleep(Duration::from_millis(500)); // idle: nothing live, nothing to report
    let s = rt.stats();
    assert_eq!((s.blocking_warnings, s.hang_reports), (0, 0));
}

/// The watcher neither keeps a dropped runtime alive nor delays its drop.
#[test]
fn dropping_a_watched_runtime_is_prompt() {
    let rt = watched(2);
    assert_eq!(rt.block_on(|| 1 + 1), 2);
    let start = Instant::now();
    drop(rt);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}
