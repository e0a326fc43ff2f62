//! `sleep` / `sleep_until`: never early, on green and OS threads; many sleepers all wake; the
//! worker runs other green threads while one sleeps.

mod common;

use common::{rt, with_watchdog};
use footprint_runtime::{park, sleep, sleep_until, spawn};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn green_sleep_is_never_early() {
    with_watchdog(60, "green sleep", || {
        let rt = rt(2);
        rt.block_on(|| {
            let hs: Vec<_> = (0..200u64)
                .map(|i| {
                    spawn(move || {
                        let d = Duration::from_micros((i * 37) % 3000);
                        let t0 = Instant::now();
                        sleep(d);
                        assert!(t0.elapsed() >= d, "woke early: {:?} < {d:?}", t0.elapsed());
                        let deadline = Instant::now() + d;
                        sleep_until(deadline);
                        assert!(Instant::now() >= deadline, "sleep_until returned early");
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        });
    });
}

#[test]
fn an_earlier_unpark_does_not_end_the_sleep() {
    with_watchdog(60, "sleep after unpark", || {
        let rt = rt(1);
        rt.block_on(|| {
            // A permit is pending: the first park returns at once; the sleep must park again.
            park::current_unparker().unpark(footprint_locks::Placement::Anywhere);
            let d = Duration::from_millis(5);
            let t0 = Instant::now();
            sleep(d);
            assert!(t0.elapsed() >= d);
        });
    });
}

#[test]
fn os_thread_sleep_is_never_early() {
    let d = Duration::from_millis(3);
    let t0 = Instant::now();
    sleep(d);
    assert!(t0.elapsed() >= d);
    sleep_until(Instant::now() - Duration::from_millis(1)); // past: returns at once
}

#[test]
fn a_thousand_sleepers_all_wake() {
    with_watchdog(60, "1,000 sleepers", || {
        let rt = rt(2);
        let woke = Arc::new(AtomicUsize::new(0));
        let w = woke.clone();
        rt.block_on(move || {
            let hs: Vec<_> = (0..1000u64)
                .map(|i| {
                    let w = w.clone();
                    spawn(move || {
                        sleep(Duration::from_micros(500 + (i % 7) * 300));
                        w.fetch_add(1, Ordering::SeqCst);
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        });
        assert_eq!(woke.load(Ordering::SeqCst), 1000);
    });
}

#[test]
fn a_sleeping_green_thread_leaves_its_worker_to_others() {
    with_watchdog(60, "sleep frees the worker", || {
        let rt = rt(1);
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        let seen = rt.block_on(move || {
            let f2 = f.clone();
            let a = spawn(move || {
                sleep(Duration::from_secs(1));
                f2.load(Ordering::SeqCst)
            });
            let b = spawn(move || f.store(true, Ordering::SeqCst));
            b.join().unwrap();
            a.join().unwrap()
        });
        // One worker: had the sleep blocked it, the setter would have run after the sleeper read.
        assert!(seen, "the setter did not run while the sleeper slept");
    });
}
