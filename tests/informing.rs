//! When the default `Mutex` turns informing on for green threads: only once most of its sampled
//! holds outlast half a switch. A hot lock with holds of tens of nanoseconds stays plain (its
//! holders publish no `Holder` class, whose bookkeeping lengthened every hand-over between the
//! cores); a lock whose holders keep it for microseconds turns informing, and its holders are
//! then seen as `Holder` by the scheduler. Exact counts, under a watchdog.

mod common;

use common::{runtime, with_watchdog};
use footprint::locks::{current_hook, PriorityClass};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Spins for about `micros` µs on the clock: a hold long enough to span a switch.
fn hold_for(micros: u64) {
    let until = std::time::Instant::now() + std::time::Duration::from_micros(micros);
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// The class the calling green thread publishes while it holds `m`.
fn class_while_holding(m: &footprint::sync::Mutex<u64>) -> PriorityClass {
    let _g = m.lock();
    current_hook().class_cell().get()
}

#[test]
fn a_hot_lock_with_short_holds_stays_uninforming() {
    with_watchdog(120, "hot Mutex with short holds", || {
        const THREADS: u64 = 8;
        const PER_THREAD: u64 = 20_000;
        let rt = runtime(2);
        let m = Arc::new(footprint::sync::Mutex::new(0u64));
        let contended = footprint::sync::stats::process_totals().contended;
        let (total, class) = rt.block_on(|| {
            let hs: Vec<_> = (0..THREADS)
                .map(|_| {
                    let m = m.clone();
                    footprint::spawn(move || {
                        for _ in 0..PER_THREAD {
                            *m.lock() += 1;
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            let total = *m.lock();
            (total, class_while_holding(&m))
        });
        assert_eq!(total, THREADS * PER_THREAD);
        assert!(
            footprint::sync::stats::process_totals().contended > contended,
            "the threads met the lock held (the waits that could turn informing on)"
        );
        assert_eq!(
            class,
            PriorityClass::Running,
            "a holder of a lock with short holds publishes no class"
        );
    });
}

#[test]
fn a_lock_with_long_holds_turns_informing() {
    with_watchdog(120, "Mutex with long holds", || {
        const THREADS: u64 = 4;
        // Enough contended holds for the sampled ones (one in 256 per worker) to fill most of
        // the lock's history many times over.
        const MAX_PER_THREAD: u64 = 25_000;
        let rt = runtime(2);
        let m = Arc::new(footprint::sync::Mutex::new(0u64));
        let seen = Arc::new(AtomicBool::new(false));
        let done = rt.block_on(|| {
            let hs: Vec<_> = (0..THREADS)
                .map(|_| {
                    let (m, seen) = (m.clone(), seen.clone());
                    footprint::spawn(move || {
                        let mut n = 0;
                        while n < MAX_PER_THREAD && !seen.load(Ordering::Relaxed) {
                            let mut g = m.lock();
                            *g += 1;
                            if current_hook().class_cell().get() == PriorityClass::Holder {
                                seen.store(true, Ordering::Relaxed);
                            }
                            hold_for(2);
                            drop(g);
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        });
        assert_eq!(*m.lock(), done, "every increment landed");
        assert!(
            seen.load(Ordering::Relaxed),
            "after {done} holds of 2 µs no holder published `Holder`: informing never turned on"
        );
    });
}

#[test]
fn a_lock_whose_long_holds_begin_on_a_free_lock_turns_informing() {
    // One thread takes the lock only when nobody waits for it and keeps it across yields for
    // tens of microseconds; the other waits for it in each such hold and keeps it only for an
    // increment. The long holds never begin with a wait (those are the holds the lock times),
    // the short ones always do: only the rest of the long hold that the waiter parked behind
    // tells the lock its holds are long.
    with_watchdog(120, "Mutex whose long holds begin free", || {
        const MAX_ROUNDS: u64 = 2_000;
        let rt = runtime(2);
        let m = Arc::new(footprint::sync::Mutex::new(0u64));
        let seen = Arc::new(AtomicBool::new(false));
        // Rounds begun by the long holder and rounds finished by the waiter.
        let begun = Arc::new(AtomicU64::new(0));
        let finished = Arc::new(AtomicU64::new(0));
        let rounds = rt.block_on(|| {
            let long = {
                let (m, seen, begun, finished) =
                    (m.clone(), seen.clone(), begun.clone(), finished.clone());
                footprint::spawn(move || {
                    let mut round = 0;
                    while round < MAX_ROUNDS && !seen.load(Ordering::Relaxed) {
                        while finished.load(Ordering::Acquire) < round {
                            footprint::yield_now();
                        }
                        let mut g = m.lock();
                        *g += 1;
                        if current_hook().class_cell().get() == PriorityClass::Holder {
                            seen.store(true, Ordering::Relaxed);
                        }
                        if seen.load(Ordering::Relaxed) {
                            eprintln!("DBG seen at round {round}");
                        }
                        round += 1;
                        begun.store(round, Ordering::Release);
                        for _ in 0..4 {
                            footprint::yield_now();
                        }
                        hold_for(50);
                        drop(g);
                    }
                    begun.store(u64::MAX, Ordering::Release);
                    round
                })
            };
            let waiter = {
                let (m, begun, finished) = (m.clone(), begun.clone(), finished.clone());
                footprint::spawn(move || {
                    let mut round = 0;
                    loop {
                        let b = loop {
                            let b = begun.load(Ordering::Acquire);
                            if b > round {
                                break b;
                            }
                            footprint::yield_now();
                        };
                        if b == u64::MAX {
                            return;
                        }
                        *m.lock() += 1;
                        round += 1;
                        finished.store(round, Ordering::Release);
                    }
                })
            };
            let rounds = long.join().unwrap();
            waiter.join().unwrap();
            rounds
        });
        assert!(
            seen.load(Ordering::Relaxed),
            "after {rounds} holds of 50 µs that a waiter parked behind, the holder never \
             published `Holder`: informing never turned on"
        );
        assert_eq!(*m.lock(), 2 * rounds, "every increment landed");
    });
}
