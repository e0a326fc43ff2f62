//! Deterministic tests of two windows in the waiting protocols, each holding a waiter inside the
//! window with a fake scheduler hook (a condvar defect and the ArrayMutex's slots):
//!
//! - a condition-variable waiter between releasing its mutex and parking must already be queued,
//!   so that a notifier that took the mutex after it counts it;
//! - a thread waiting at the door of a full array lock publishes `Waiter`, not `Running` (with
//!   `Running`, the door waiters of a green-thread runtime yielded their workers to one another
//!   forever).
#![cfg(not(loom))]

use footprint_locks::{
    install_hook, uninstall_hook, BlockTtasMutex, Condvar, Informed, PriorityClass, RawArrayLock,
};

mod common;
use common::fake_hook::{until_parked, with_parked_waiter, FakeHook};

/// The waiter stops in `wait` right after releasing the mutex (its next `class_cell` call:
/// the condvar publishes `Waiter` there, before parking). A notifier then takes the mutex, sets
/// the flag and notifies: `notify_one` must report the waiter (before the fix it was not queued
/// yet, and `notify_one` returned `false`).
#[test]
fn notify_one_counts_a_waiter_between_unlock_and_park() {
    let flag = BlockTtasMutex::new(false);
    let cv = Condvar::new();
    let waiter = FakeHook::leak(Some(0));
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            install_hook(waiter);
            let mut set = flag.lock();
            waiter.gate.arm();
            while !*set {
                cv.wait(&mut set);
            }
            uninstall_hook();
        });
        waiter.gate.until_reached();
        *flag.lock() = true;
        let woke = cv.notify_one();
        waiter.gate.open();
        h.join().unwrap();
        assert!(
            woke,
            "the waiter had released the mutex before the notifier took it: it must be counted"
        );
    });
}

/// The same window for `notify_all`: three waiters, each stopped after its release.
#[test]
fn notify_all_counts_waiters_between_unlock_and_park() {
    let flag = BlockTtasMutex::new(false);
    let cv = Condvar::new();
    let waiters: Vec<&'static FakeHook> = (0..3).map(|_| FakeHook::leak(Some(0))).collect();
    std::thread::scope(|s| {
        let hs: Vec<_> = waiters
            .iter()
            .map(|&w| {
                let (flag, cv) = (&flag, &cv);
                s.spawn(move || {
                    install_hook(w);
                    let mut set = flag.lock();
                    w.gate.arm();
                    while !*set {
                        cv.wait(&mut set);
                    }
                    uninstall_hook();
                })
            })
            .collect();
        for w in &waiters {
            w.gate.until_reached();
        }
        *flag.lock() = true;
        let woken = cv.notify_all();
        for w in &waiters {
            w.gate.open();
        }
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(
            woken, 3,
            "every waiter had released the mutex: all are counted"
        );
    });
}

/// A thread waiting behind another on a full array lock publishes `Waiter`, and gets the lock in
/// its turn. Capacity 1, held by the test thread (ticket 0): a first waiter takes ticket 1 and
/// waits on the only slot (next in line: `ImmediateWaiter`); a second takes ticket 2 and waits
/// on the same slot for its own ticket.
#[test]
fn array_waiter_behind_another_publishes_waiter() {
    let lock = lock_api::Mutex::<RawArrayLock<Informed, 1>, Vec<usize>>::new(Vec::new());
    let first = FakeHook::leak(Some(0));
    let second = FakeHook::leak(Some(0));
    let mut held = lock.lock();
    let (first_class, second_class) = std::thread::scope(|s| {
        let spawn_waiter = |hook: &'static FakeHook, id: usize| {
            let lock = &lock;
            s.spawn(move || {
                install_hook(hook);
                lock.lock().push(id);
                uninstall_hook();
            })
        };
        let h1 = spawn_waiter(first, 1);
        until_parked(first, 1);
        let h2 = spawn_waiter(second, 2);
        until_parked(second, 1);
        let classes = (first.cell.get(), second.cell.get());
        held.push(0);
        drop(held);
        h1.join().unwrap();
        h2.join().unwrap();
        classes
    });
    assert_eq!(
        first_class,
        PriorityClass::ImmediateWaiter,
        "the thread on the slot is next in line"
    );
    assert_eq!(
        second_class,
        PriorityClass::Waiter,
        "a thread at the door waits for the lock: it must not rank as Running"
    );
    assert_eq!(
        *lock.lock(),
        [0, 1, 2],
        "past the capacity the lock is still FIFO"
    );
}

/// `MutexGuard::unlock_fair` hands the lock to the parked waiter: a `try_lock` right after the
/// fair unlock fails (no barging), and the waiter's critical section runs next.
#[test]
fn unlock_fair_hands_over_to_the_parked_waiter() {
    use footprint_locks::{Mutex, MutexGuard};
    let lock = Mutex::new(Vec::new());
    let waiter = FakeHook::leak(Some(0));
    with_parked_waiter(
        &lock,
        waiter,
        |v| v.push("waiter"),
        |mut held| {
            held.push("holder");
            MutexGuard::unlock_fair(held);
            // Fails while the waiter owns the lock; may succeed once it has left.
            if let Some(mut g) = lock.try_lock() {
                g.push("barger");
            }
        },
    );
    let order = lock.lock().clone();
    assert_eq!(
        order[..2],
        ["holder", "waiter"],
        "a fair unlock lets no later arrival in before the waiter: {order:?}"
    );
}

/// `try_lock_for` gives up after its timeout (never earlier) while the lock stays held, and
/// succeeds once it is free.
#[test]
fn try_lock_for_times_out_then_succeeds() {
    use footprint_locks::Mutex;
    use std::time::{Duration, Instant};
    let lock = Mutex::new(0);
    let held = lock.lock();
    std::thread::scope(|s| {
        s.spawn(|| {
            let d = Duration::from_millis(5);
            let start = Instant::now();
            assert!(lock.try_lock_for(d).is_none());
            assert!(start.elapsed() >= d, "never early");
        })
        .join()
        .unwrap();
    });
    drop(held);
    *lock
        .try_lock_until(Instant::now() + Duration::from_secs(5))
        .expect("free") += 1;
    assert_eq!(*lock.lock(), 1);
}

/// A `try_lock_for` waiter woken by an unlock must not leave the lock's "wake-up in flight" mark
/// set: the next unlock has to wake the plain `lock` waiter parked behind it. Before the fix the
/// timed path never cleared the mark, so every later unlock woke nobody and the plain waiter
/// slept forever (the watchdog turns that into a failure).
#[test]
fn a_timed_waiter_woken_by_unlock_lets_the_next_unlock_wake() {
    use std::sync::mpsc;
    use std::time::Duration;
    let lock = BlockTtasMutex::new(0u32);
    let plain = FakeHook::leak(Some(0));
    let timed = FakeHook::leak(Some(1));
    let held = lock.lock();
    let (done, finished) = mpsc::channel();
    std::thread::scope(|s| {
        let (lock, done) = (&lock, done.clone());
        s.spawn(move || {
            install_hook(plain);
            *lock.lock() += 1;
            uninstall_hook();
            done.send("plain").unwrap();
        });
        until_parked(plain, 1);
        s.spawn(move || {
            install_hook(timed);
            *lock
                .try_lock_for(Duration::from_secs(3600))
                .expect("woken long before the timeout") += 1;
            uninstall_hook();
        });
        until_parked(timed, 1);
        // The queue pops its newest waiter first: this unlock wakes the timed one, whose own
        // unlock must then wake the plain one.
        drop(held);
        if finished.recv_timeout(Duration::from_secs(30)).is_err() {
            eprintln!("the plain waiter was never woken after the timed waiter's unlock");
            std::process::exit(1);
        }
    });
    assert_eq!(*lock.lock(), 2);
}

/// The default `Mutex` publishes its holder's class only where a scheduler can read it: on a
/// thread with a scheduler hook. A waiter that parked publishes `Holder` when it gets the lock
/// and restores its class at its release; other holders publish only once the lock is
/// informing, which takes its holds reading as spanning switches (one contended wait does
/// not: `tests/informing.rs` in the root crate turns it on with long holds). A plain
/// OS thread (no hook) publishes nothing.
#[test]
fn default_mutex_publishes_holder_for_parked_waiters_and_only_for_a_scheduler() {
    let m = footprint_locks::Mutex::new(0u32);
    let me = FakeHook::leak(Some(1));
    install_hook(me);
    {
        let _g = m.lock();
        assert_eq!(me.cell.get(), PriorityClass::Running, "never contended");
    }
    let waiter = FakeHook::leak(Some(0));
    with_parked_waiter(
        &m,
        waiter,
        |v| {
            assert_eq!(
                waiter.cell.get(),
                PriorityClass::Holder,
                "the waiter that parked"
            );
            *v += 1;
        },
        |held| drop(held),
    );
    assert_eq!(
        waiter.cell.get(),
        PriorityClass::Running,
        "restored at its release"
    );
    let g = m.lock();
    assert_eq!(
        me.cell.get(),
        PriorityClass::Running,
        "contended once, no hold known to be long: not informing"
    );
    assert_eq!(*g, 1);
    drop(g);
    uninstall_hook();
    let os_cell = footprint_locks::current_hook().class_cell();
    let _g = m.lock();
    assert_eq!(
        os_cell.get(),
        PriorityClass::Running,
        "a plain OS thread publishes nothing"
    );
}
