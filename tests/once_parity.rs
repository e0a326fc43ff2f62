//! std's tests of `Once`, `OnceLock` and `LazyLock` (their behaviour, rewritten here), run
//! against footprint's once types on OS threads and on green threads with 1 and 2 workers;
//! plus `Barrier::new(0)` and `Condvar::wait_for` as std and parking_lot define them.

mod common;

use common::{runtime, with_watchdog};
use footprint::sync::{Barrier, Condvar, LazyLock, Mutex, Once, OnceLock};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

/// Where a test's threads run: OS threads, or green threads of one runtime.
#[derive(Clone, Copy, Debug)]
enum On {
    Os,
    Green,
}

/// A handle to join, whatever the thread kind.
type Join<T> = Box<dyn FnOnce() -> std::thread::Result<T> + Send>;

impl On {
    fn spawn<T: Send + 'static>(self, f: impl FnOnce() -> T + Send + 'static) -> Join<T> {
        match self {
            On::Os => {
                let h = std::thread::spawn(f);
                Box::new(move || h.join())
            }
            On::Green => {
                let h = footprint::spawn(f);
                Box::new(move || h.join())
            }
        }
    }

    fn yield_now(self) {
        match self {
            On::Os => std::thread::yield_now(),
            On::Green => footprint::yield_now(),
        }
    }
}

/// Runs `test` on OS threads, then inside green threads on 1 and 2 workers, each under a
/// watchdog (a waiter that is never woken fails the test instead of hanging it).
fn everywhere(name: &'static str, test: fn(On)) {
    with_watchdog(60, &format!("{name} on OS threads"), move || test(On::Os));
    for workers in [1, 2] {
        with_watchdog(60, &format!("{name} on {workers} worker(s)"), move || {
            runtime(workers).block_on(move || test(On::Green))
        });
    }
}

/// Ten threads race to run one initialiser: it runs once, and every caller returns after it.
fn once_stampede(on: On) {
    let once = Arc::new(Once::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..10)
        .map(|_| {
            let (once, runs) = (once.clone(), runs.clone());
            on.spawn(move || {
                on.yield_now();
                once.call_once(|| {
                    runs.fetch_add(1, SeqCst);
                });
                assert_eq!(
                    runs.load(SeqCst),
                    1,
                    "returned before the initialiser finished"
                );
            })
        })
        .collect();
    once.call_once(|| {
        runs.fetch_add(1, SeqCst);
    });
    for h in hs {
        h().unwrap();
    }
    assert_eq!(runs.load(SeqCst), 1);
    assert!(once.is_completed());
}

/// A panicking initialiser poisons: `call_once` panics, `call_once_force` runs (seeing the
/// poison) and completes it; then neither runs again.
fn once_poison(on: On) {
    let once = Arc::new(Once::new());
    let o = once.clone();
    assert!(on.spawn(move || o.call_once(|| panic!("poison")))().is_err());
    assert!(!once.is_completed());
    assert!(catch_unwind(AssertUnwindSafe(|| once.call_once(|| {}))).is_err());
    let mut saw = None;
    once.call_once_force(|s| saw = Some(s.is_poisoned()));
    assert_eq!(saw, Some(true));
    assert!(once.is_completed());
    once.call_once_force(|_| panic!("runs again"));
    once.call_once(|| panic!("runs again"));
}

/// `wait` returns once another thread's initialiser completed; `wait` on a poisoned `Once`
/// panics, `wait_force` goes on waiting until a forced run completes it.
fn once_wait_and_wait_force(on: On) {
    let once = Arc::new(Once::new());
    let o = once.clone();
    let waiter = on.spawn(move || {
        o.wait();
        assert!(o.is_completed());
    });
    on.yield_now();
    once.call_once(|| {});
    waiter().unwrap();

    let once = Arc::new(Once::new());
    let _ = catch_unwind(AssertUnwindSafe(|| once.call_once(|| panic!("poison"))));
    assert!(catch_unwind(AssertUnwindSafe(|| once.wait())).is_err());
    let forced = Arc::new(AtomicUsize::new(0));
    let (o, f) = (once.clone(), forced.clone());
    let waiter = on.spawn(move || {
        o.wait_force();
        assert_eq!(
            f.load(SeqCst),
            1,
            "wait_force returned before the forced run"
        );
    });
    on.yield_now();
    once.call_once_force(|s| {
        assert!(s.is_poisoned());
        forced.store(1, SeqCst);
    });
    waiter().unwrap();
}

/// A waiter parked on a running initialiser that panics wakes and, with `call_once_force`,
/// runs its own initialiser.
fn once_force_after_a_panicking_run(on: On) {
    let once = Arc::new(Once::new());
    let started = Arc::new(AtomicUsize::new(0));
    let (o, s) = (once.clone(), started.clone());
    let first = on.spawn(move || {
        o.call_once(|| {
            s.store(1, SeqCst);
            for _ in 0..10 {
                on.yield_now();
            }
            panic!("first initialiser");
        })
    });
    while started.load(SeqCst) == 0 {
        on.yield_now();
    }
    let mut ran = false;
    once.call_once_force(|_| ran = true);
    assert!(first().is_err());
    assert!(ran, "the forced initialiser ran after the panicking one");
    assert!(once.is_completed());
}

/// `OnceLock`: `get`, `set`, `get_or_init` from several threads, `get_mut`, `take`,
/// `into_inner`; the value is dropped with the cell, and an empty cell drops nothing.
fn once_lock_basics(on: On) {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    struct Counted(u32);
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, SeqCst);
        }
    }
    DROPS.store(0, SeqCst);
    let cell = Arc::new(OnceLock::new());
    assert!(cell.get().is_none());
    let hs: Vec<_> = (0..4)
        .map(|i| {
            let c = cell.clone();
            on.spawn(move || c.get_or_init(|| Counted(i)).0)
        })
        .collect();
    let seen: Vec<u32> = hs.into_iter().map(|h| h().unwrap()).collect();
    assert!(
        seen.iter().all(|&v| v == seen[0]),
        "one value for all: {seen:?}"
    );
    assert!(cell.set(Counted(99)).is_err());
    assert_eq!(
        DROPS.load(SeqCst),
        1,
        "the value `set` gave back was dropped by the caller"
    );
    let mut cell = Arc::try_unwrap(cell).unwrap_or_else(|_| unreachable!());
    cell.get_mut().unwrap().0 = 7;
    assert_eq!(cell.get().unwrap().0, 7);
    assert_eq!(cell.take().unwrap().0, 7);
    assert_eq!(DROPS.load(SeqCst), 2);
    assert!(cell.get().is_none() && cell.get_mut().is_none());
    cell.set(Counted(3)).unwrap_or_else(|_| unreachable!());
    assert_eq!(cell.into_inner().map(|c| c.0), Some(3));
    assert_eq!(DROPS.load(SeqCst), 3);
    drop(OnceLock::<Counted>::new());
    drop(OnceLock::from(Counted(4)));
    assert_eq!(DROPS.load(SeqCst), 4);
}

/// `OnceLock`: `wait` returns the value another thread sets; `Clone`, `From`, `PartialEq`.
fn once_lock_wait_clone_from_eq(on: On) {
    let cell = Arc::new(OnceLock::new());
    let c = cell.clone();
    let waiter = on.spawn(move || *c.wait());
    on.yield_now();
    cell.set(92).unwrap();
    assert_eq!(waiter().unwrap(), 92);

    let empty = OnceLock::<String>::new();
    assert_eq!(empty.clone().get(), None);
    let full = OnceLock::from("x".to_string());
    let copy = full.clone();
    assert_eq!(copy.get().map(String::as_str), Some("x"));
    assert_eq!(full, copy);
    assert_ne!(full, empty);
    assert_eq!(empty, OnceLock::new());
    assert_ne!(OnceLock::from(1), OnceLock::from(2));
}

/// `LazyLock`: initialised once under contention; `Default`; `force_mut` and `get_mut`.
fn lazy_lock_basics(on: On) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let lazy = Arc::new(LazyLock::new(move || {
        r.fetch_add(1, SeqCst);
        92
    }));
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let l = lazy.clone();
            on.spawn(move || **l)
        })
        .collect();
    for h in hs {
        assert_eq!(h().unwrap(), 92);
    }
    assert_eq!(runs.load(SeqCst), 1);

    let d: LazyLock<Vec<u32>> = LazyLock::default();
    assert!(d.is_empty());

    let mut m = LazyLock::new(|| 1);
    assert!(LazyLock::get_mut(&mut m).is_none());
    *LazyLock::force_mut(&mut m) += 1;
    assert_eq!(LazyLock::get_mut(&mut m), Some(&mut 2));
    assert_eq!(*m, 2);
}

/// `LazyLock`: a panicking initialiser poisons it for every later access, from any thread,
/// `force_mut` included.
fn lazy_lock_poisoning(on: On) {
    let lazy: Arc<LazyLock<u32>> = Arc::new(LazyLock::new(|| panic!("initialiser")));
    for _ in 0..2 {
        let l = lazy.clone();
        assert!(on.spawn(move || **l)().is_err());
    }
    let mut lazy = Arc::try_unwrap(lazy).unwrap_or_else(|_| unreachable!());
    assert!(catch_unwind(AssertUnwindSafe(|| *LazyLock::force_mut(&mut lazy))).is_err());
    assert!(LazyLock::get_mut(&mut lazy).is_none());
}

/// `Barrier::new(0)` behaves as `Barrier::new(1)` (std): every `wait` returns at once, as the
/// leader.
fn barrier_of_zero(_on: On) {
    let b = Barrier::new(0);
    assert_eq!(b.participants(), 1);
    for _ in 0..3 {
        assert!(b.wait().is_leader());
    }
}

/// `Condvar::wait_for` (parking_lot's name): times out with nobody notifying, returns early
/// (not timed out) when notified.
fn condvar_wait_for(on: On) {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let mut g = pair.0.lock();
    assert!(pair
        .1
        .wait_for(&mut g, Duration::from_millis(2))
        .timed_out());
    let p = pair.clone();
    let notifier = on.spawn(move || {
        *p.0.lock() = true;
        p.1.notify_one();
    });
    while !*g {
        if pair.1.wait_for(&mut g, Duration::from_secs(30)).timed_out() {
            panic!("wait_for: no notification within 30 s");
        }
    }
    drop(g);
    notifier().unwrap();
}

#[test]
fn once_stampede_everywhere() {
    everywhere("once_stampede", once_stampede);
}

#[test]
fn once_poison_everywhere() {
    everywhere("once_poison", once_poison);
}

#[test]
fn once_wait_and_wait_force_everywhere() {
    everywhere("once_wait_and_wait_force", once_wait_and_wait_force);
}

#[test]
fn once_force_after_a_panicking_run_everywhere() {
    everywhere(
        "once_force_after_a_panicking_run",
        once_force_after_a_panicking_run,
    );
}

#[test]
fn once_lock_basics_everywhere() {
    // One at a time: the test counts drops in a static.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    everywhere("once_lock_basics", once_lock_basics);
}

#[test]
fn once_lock_wait_clone_from_eq_everywhere() {
    everywhere("once_lock_wait_clone_from_eq", once_lock_wait_clone_from_eq);
}

#[test]
fn lazy_lock_basics_everywhere() {
    everywhere("lazy_lock_basics", lazy_lock_basics);
}

#[test]
fn lazy_lock_poisoning_everywhere() {
    everywhere("lazy_lock_poisoning", lazy_lock_poisoning);
}

#[test]
fn barrier_of_zero_everywhere() {
    everywhere("barrier_of_zero", barrier_of_zero);
}

#[test]
fn condvar_wait_for_everywhere() {
    everywhere("condvar_wait_for", condvar_wait_for);
}
