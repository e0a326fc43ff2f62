//! A scheduler hook for one OS thread that pretends to be on a runtime worker (or on none),
//! parks on a recording permit, and can stop its thread at a chosen point (the gate), so that
//! tests can hold a waiter inside a window of a protocol and act while it is there.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar as StdCondvar, Mutex as StdMutex};
use std::time::Duration;

use footprint_locks::{ClassCell, Placement, PriorityClass, SchedulerHook, Unpark, Unparker};

/// A permit with a record of every hint it was unparked with.
#[derive(Default)]
pub struct RecordingPermit {
    available: StdMutex<bool>,
    signal: StdCondvar,
    pub hints: StdMutex<Vec<Placement>>,
    /// How many times the owner entered `park` (the test waits for the waiter to be parked).
    pub parks: AtomicUsize,
}

impl Unpark for RecordingPermit {
    fn unpark(&self, hint: Placement) {
        self.hints.lock().unwrap().push(hint);
        *self.available.lock().unwrap() = true;
        self.signal.notify_all();
    }
}

/// Stops the hook's thread at its next `class_cell` call once armed, until opened.
#[derive(Default)]
pub struct Gate {
    armed: AtomicBool,
    /// The thread is stopped at the gate (or went through it).
    pub reached: AtomicBool,
    open: StdMutex<bool>,
    opened: StdCondvar,
}

impl Gate {
    /// The next `class_cell` call of the hook's thread stops there.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// Waits (yielding) until the thread stopped at the gate: a real condition, no sleep.
    pub fn until_reached(&self) {
        while !self.reached.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }

    /// Lets the thread go on.
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    fn pass(&self) {
        if self.armed.swap(false, Ordering::SeqCst) {
            self.reached.store(true, Ordering::SeqCst);
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.opened.wait(open).unwrap();
            }
        }
    }
}

/// A scheduler hook for one OS thread that pretends to be on `worker` and parks on `permit`.
pub struct FakeHook {
    worker: Option<usize>,
    pub cell: ClassCell,
    pub permit: Arc<RecordingPermit>,
    pub gate: Gate,
}

impl FakeHook {
    pub fn leak(worker: Option<usize>) -> &'static FakeHook {
        Box::leak(Box::new(FakeHook {
            worker,
            cell: ClassCell::new(PriorityClass::Running),
            permit: Arc::new(RecordingPermit::default()),
            gate: Gate::default(),
        }))
    }

    fn wait_for_permit(&self, timeout: Option<Duration>) -> bool {
        self.permit.parks.fetch_add(1, Ordering::SeqCst);
        let mut available = self.permit.available.lock().unwrap();
        while !*available {
            match timeout {
                None => available = self.permit.signal.wait(available).unwrap(),
                Some(t) => {
                    let (a, r) = self.permit.signal.wait_timeout(available, t).unwrap();
                    available = a;
                    if r.timed_out() && !*available {
                        return false;
                    }
                }
            }
        }
        *available = false;
        true
    }
}

impl SchedulerHook for FakeHook {
    fn class_cell(&self) -> &ClassCell {
        self.gate.pass();
        &self.cell
    }
    fn higher_class_ready(&self, _than: PriorityClass) -> bool {
        false
    }
    fn yield_to_higher(&self, _than: PriorityClass) -> bool {
        false
    }
    fn yield_now(&self) {
        std::thread::yield_now();
    }
    fn current_unparker(&self) -> Unparker {
        Unparker::new(self.permit.clone())
    }
    fn park(&self) {
        self.wait_for_permit(None);
    }
    fn park_timeout(&self, timeout: Duration) -> bool {
        self.wait_for_permit(Some(timeout))
    }
    fn worker_id(&self) -> Option<usize> {
        self.worker
    }
    fn switch_cost_ns(&self) -> u64 {
        10_000
    }
}

/// Waits (yielding) until the waiter has entered `park` `n` times: a real condition, no sleep.
pub fn until_parked(waiter: &FakeHook, n: usize) {
    while waiter.permit.parks.load(Ordering::SeqCst) < n {
        std::thread::yield_now();
    }
}

/// The calling thread holds `lock`; a waiter thread under `waiter`'s hook blocks on it and then
/// runs `in_waiter` on the data. Once the waiter is parked, `while_parked` gets the held guard
/// (and must release it); its result is returned after the waiter finished.
pub fn with_parked_waiter<R, T, U>(
    lock: &lock_api::Mutex<R, T>,
    waiter: &'static FakeHook,
    in_waiter: impl FnOnce(&mut T) + Send,
    while_parked: impl FnOnce(lock_api::MutexGuard<'_, R, T>) -> U,
) -> U
where
    R: lock_api::RawMutex + Sync,
    T: Send,
{
    let held = lock.lock();
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            footprint_locks::install_hook(waiter);
            in_waiter(&mut lock.lock());
            footprint_locks::uninstall_hook();
        });
        until_parked(waiter, 1);
        let r = while_parked(held);
        h.join().unwrap();
        r
    })
}
