//! Loom model of the active-worker limit's rest handshake (`adaptive/limit.rs`:
//! `WorkerLocal::rest_surplus`, `Shared::set_active`, and `notify_worker` on a resting worker),
//! through the runtime's own `SleepWord` steps (`sleep/word.rs`; under loom its futex is a
//! notification permit, as in `loom_idle`), with a mutex-protected count for the inbox. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-runtime --release --test loom_rest`.
//!
//! Two properties, each a model in which a lost wake-up leaves a thread blocked forever (loom
//! reports the deadlock):
//! - raising the limit always brings a resting worker back;
//! - a thread put in a resting worker's inbox is always handed on to the injector.
#![cfg(loom)]

use footprint_runtime::loom_protocols::{wake_all, SleepWord, SleeperCount};
use loom::sync::atomic::{fence, AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

/// The worker under test.
const ME: usize = 1;

struct Runtime {
    active: AtomicUsize,
    shutdown: AtomicUsize,
    /// The worker's sleep word: the runtime's own type, whose `announce_rest`/`rest`/
    /// `set_awake` (resting side), `rouse` (`set_active`), `wake_after_publish`
    /// (`notify_worker`) and `wake_all` (shutdown) are the steps under test.
    sleep: SleepWord,
    /// The resting worker's inbox (its length; the queue itself is mutex-protected).
    inbox: Mutex<usize>,
    inbox_len: AtomicUsize,
    /// Threads handed to the injector, and a condition to wait for them.
    injector: Mutex<usize>,
    injected: Condvar,
}

impl Runtime {
    fn new() -> Runtime {
        Runtime {
            active: AtomicUsize::new(1),
            shutdown: AtomicUsize::new(0),
            sleep: SleepWord::new(),
            inbox: Mutex::new(0),
            inbox_len: AtomicUsize::new(0),
            injector: Mutex::new(0),
            injected: Condvar::new(),
        }
    }

    fn surplus(&self) -> bool {
        ME >= self.active.load(Ordering::Relaxed) && self.shutdown.load(Ordering::Relaxed) == 0
    }

    fn hand_off(&self) {
        let mut q = self.inbox.lock().unwrap();
        if *q > 0 {
            *self.injector.lock().unwrap() += *q;
            *q = 0;
            self.inbox_len.store(0, Ordering::Release);
            self.injected.notify_all();
        }
    }

    /// `WorkerLocal::rest_surplus`.
    fn rest(&self) {
        loop {
            self.hand_off();
            self.sleep.announce_rest();
            if !self.surplus() {
                break;
            }
            if self.inbox_len.load(Ordering::SeqCst) > 0 {
                continue;
            }
            self.sleep.rest();
            if !self.surplus() {
                break;
            }
        }
        self.sleep.set_awake();
    }

    /// `Shared::set_active`.
    fn set_active(&self, n: usize) {
        self.active.swap(n, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.sleep.rouse();
    }

    /// `Inbox::push` then `Shared::notify_worker`.
    fn push_and_notify(&self) {
        {
            let mut q = self.inbox.lock().unwrap();
            *q += 1;
            self.inbox_len.store(*q, Ordering::Release);
        }
        self.sleep.wake_after_publish(&SleeperCount::new());
    }

    /// `Shared::notify_all` at shutdown.
    fn shut_down(&self) {
        self.shutdown.store(1, Ordering::SeqCst);
        wake_all(&SleeperCount::new(), std::iter::once(&self.sleep));
    }
}

/// Checks `f` under loom with at most 3 preemptions (unless `LOOM_MAX_PREEMPTIONS` says
/// otherwise): every interleaving of these models' handshakes needs at most 2.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

#[test]
fn raising_the_limit_brings_a_resting_worker_back() {
    model(|| {
        let rt = Arc::new(Runtime::new());
        let w = {
            let rt = rt.clone();
            thread::spawn(move || rt.rest())
        };
        rt.set_active(2);
        w.join().unwrap(); // a lost activation leaves the worker waiting: loom reports it
        assert!(!rt.surplus());
    });
}

#[test]
fn a_thread_placed_on_a_resting_worker_is_handed_on() {
    model(|| {
        let rt = Arc::new(Runtime::new());
        let w = {
            let rt = rt.clone();
            thread::spawn(move || rt.rest())
        };
        let p = {
            let rt = rt.clone();
            thread::spawn(move || rt.push_and_notify())
        };
        p.join().unwrap();
        {
            // Waits until the worker handed the thread to the injector (stranded: deadlock).
            let mut n = rt.injector.lock().unwrap();
            while *n == 0 {
                n = rt.injected.wait(n).unwrap();
            }
            assert_eq!(*n, 1);
        }
        rt.shut_down();
        w.join().unwrap();
        assert_eq!(*rt.inbox.lock().unwrap(), 0, "nothing left in the inbox");
    });
}
