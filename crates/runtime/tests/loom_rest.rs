//! Loom model of the active-worker limit's rest handshake (`adaptive/limit.rs`:
//! `WorkerLocal::rest_surplus`, `Shared::set_active`, and `notify_worker` on a resting worker),
//! reduced to its atomics; the futex is a mutex + condition variable (the kernel checks the
//! word under its bucket lock). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-runtime --release --test loom_rest`.
//!
//! Two properties, each a model in which a lost wake-up leaves a thread blocked forever (loom
//! reports the deadlock):
//! - raising the limit always brings a resting worker back;
//! - a thread put in a resting worker's inbox is always handed on to the injector.
#![cfg(loom)]

use loom::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

const AWAKE: u32 = 0;
const NOTIFIED: u32 = 2;
const SURPLUS: u32 = 3;
/// The worker under test.
const ME: usize = 1;

#[derive(Default)]
struct Futex {
    bucket: Mutex<()>,
    cv: Condvar,
}

impl Futex {
    fn wait(&self, word: &AtomicU32, expected: u32) {
        let g = self.bucket.lock().unwrap();
        if word.load(Ordering::SeqCst) == expected {
            drop(self.cv.wait(g).unwrap());
        }
    }

    fn wake(&self) {
        let _g = self.bucket.lock().unwrap();
        self.cv.notify_all();
    }
}

struct Runtime {
    active: AtomicUsize,
    shutdown: AtomicUsize,
    sleep: AtomicU32,
    futex: Futex,
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
            sleep: AtomicU32::new(AWAKE),
            futex: Futex::default(),
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
            self.sleep.store(SURPLUS, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if !self.surplus() {
                break;
            }
            if self.inbox_len.load(Ordering::SeqCst) > 0 {
                continue;
            }
            while self.sleep.load(Ordering::Acquire) == SURPLUS {
                self.futex.wait(&self.sleep, SURPLUS);
            }
            if !self.surplus() {
                break;
            }
        }
        self.sleep.store(AWAKE, Ordering::SeqCst);
    }

    /// `Shared::set_active`.
    fn set_active(&self, n: usize) {
        self.active.swap(n, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self
            .sleep
            .compare_exchange(SURPLUS, NOTIFIED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.futex.wake();
        }
    }

    /// `Inbox::push` then `Shared::notify_worker` (the resting branch).
    fn push_and_notify(&self) {
        {
            let mut q = self.inbox.lock().unwrap();
            *q += 1;
            self.inbox_len.store(*q, Ordering::Release);
        }
        fence(Ordering::SeqCst);
        let state = self.sleep.load(Ordering::Relaxed);
        if state == SURPLUS
            && self
                .sleep
                .compare_exchange(state, NOTIFIED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            self.futex.wake();
        }
    }

    /// `Shared::notify_all` at shutdown.
    fn shut_down(&self) {
        self.shutdown.store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.sleep.swap(NOTIFIED, Ordering::AcqRel) == SURPLUS {
            self.futex.wake();
        }
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
