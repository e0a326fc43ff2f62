//! The default `Mutex` on green threads, counted exactly, under a watchdog: the waits that ask
//! the runtime whether the holder runs (pause while it runs on another worker, yield the worker
//! to the threads queued on it, park where the holder waits for a processor elsewhere).

mod common;

use common::{runtime, with_watchdog};
use std::sync::Arc;

/// What a holder does inside its critical section, to put its waiters on each path.
#[derive(Clone, Copy, Debug)]
enum Inside {
    /// Nothing: the holder runs until it releases (waiters pause or spin).
    Nothing,
    /// Yields its worker once in a while: the holder is queued, not running (waiters on its
    /// worker yield to it; waiters elsewhere park).
    Yields,
    /// Parks briefly (a channel round trip to a helper thread) once in a while.
    Parks,
}

fn count(workers: usize, threads: usize, per_thread: usize, inside: Inside) {
    let rt = runtime(workers);
    let m = Arc::new(footprint::sync::Mutex::new(0u64));
    let (ping_tx, ping_rx) = footprint::channel::bounded::<()>(0);
    let (pong_tx, pong_rx) = footprint::channel::bounded::<()>(0);
    let total = rt.block_on(|| {
        let echo = footprint::spawn(move || {
            while ping_rx.recv().is_ok() {
                if pong_tx.send(()).is_err() {
                    break;
                }
            }
        });
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let m = m.clone();
                let (ping_tx, pong_rx) = (ping_tx.clone(), pong_rx.clone());
                footprint::spawn(move || {
                    for i in 0..per_thread {
                        let mut g = m.lock();
                        let v = *g;
                        match inside {
                            Inside::Nothing => {}
                            Inside::Yields if (i + t) % 16 == 0 => footprint::yield_now(),
                            Inside::Parks if (i + t) % 64 == 0 => {
                                ping_tx.send(()).unwrap();
                                pong_rx.recv().unwrap();
                            }
                            _ => {}
                        }
                        *g = std::hint::black_box(v) + 1;
                        drop(g);
                        std::hint::black_box((0..16u64).fold(i as u64, |a, k| a ^ (a >> 3) ^ k));
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        drop(ping_tx);
        echo.join().unwrap();
        *m.lock()
    });
    assert_eq!(total, (threads * per_thread) as u64, "{inside:?}");
}

#[test]
fn four_threads_per_worker_count_exactly() {
    with_watchdog(120, "default Mutex, 8 green threads on 2 workers", || {
        count(2, 8, 5_000, Inside::Nothing);
    });
}

#[test]
fn holders_that_yield_inside_count_exactly() {
    with_watchdog(120, "default Mutex, holders yielding inside", || {
        count(2, 8, 2_000, Inside::Yields);
    });
}

#[test]
fn holders_that_park_inside_count_exactly() {
    with_watchdog(120, "default Mutex, holders parking inside", || {
        count(2, 8, 1_000, Inside::Parks);
    });
}

#[test]
fn one_worker_with_holders_that_yield_counts_exactly() {
    // Every waiter shares the holder's worker: it must never wait for a holder queued behind it.
    with_watchdog(
        120,
        "default Mutex, one worker, holders yielding inside",
        || {
            count(1, 6, 2_000, Inside::Yields);
        },
    );
}
