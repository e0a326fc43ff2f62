//! What the runtime's loom models share: the model runner with its default preemption bound,
//! and a model green thread that parks and is unparked through the runtime's own
//! [`ParkState`] (the steps of `parking::park_current`, `WorkerLocal::finish_park` and
//! `Task::unpark_task`, with a notification standing in for the run queue).
#![allow(dead_code)]

use footprint_runtime::loom_protocols::ParkState;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Notify;

/// Plain (non-atomic) data the protocol under test hands from thread to thread: a loom cell,
/// so that an access not ordered after the last write by the protocol fails the model (loom
/// reports a causality violation).
pub struct Cell<T>(loom::cell::UnsafeCell<T>);

impl<T> Cell<T> {
    pub fn new(v: T) -> Cell<T> {
        Cell(loom::cell::UnsafeCell::new(v))
    }

    /// Writes `v`, returning the old value.
    pub fn replace(&self, v: T) -> T {
        // SAFETY: the pointer is the cell's own, valid for `&self`; loom records this write and
        // fails the model (before the access) if another access to the cell is concurrent with
        // it, so no data race happens in an execution that goes on.
        self.0
            .with_mut(|p| unsafe { std::mem::replace(&mut *p, v) })
    }

    /// Reads the value through `f`.
    pub fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        // SAFETY: as in `replace`, for a read.
        self.0.with(|p| f(unsafe { &*p }))
    }
}

/// Checks `f` under every interleaving loom explores with at most `bound` preemptions
/// (`LOOM_MAX_PREEMPTIONS` overrides it), so that each model finishes in seconds.
pub fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(bound);
    }
    b.check(f);
}

/// A green thread as the park protocol sees it.
pub struct Green {
    pub park: ParkState,
    /// Set by the unparker that schedules the parked thread, taken by its resumption: stands
    /// for the run queue (a push, then a worker's pop, which orders what the unparker did
    /// before against what the resumed thread does next).
    queued: AtomicBool,
    /// Wakes the parked thread's model once it is queued (loom's `Notify` may also return
    /// spuriously, so the resumption waits for `queued`).
    scheduled: Notify,
}

impl Default for Green {
    fn default() -> Self {
        Green::new()
    }
}

impl Green {
    pub fn new() -> Green {
        Green {
            park: ParkState::new(),
            queued: AtomicBool::new(false),
            scheduled: Notify::new(),
        }
    }

    /// `park_current` (consume a permit, else suspend), the worker's `finish_park` (publish
    /// parked, else run again at once), and the resumption by whoever schedules it.
    pub fn park(&self) {
        if self.park.take_permit() {
            return;
        }
        if self.park.publish_parked() {
            while !self.queued.swap(false, Ordering::AcqRel) {
                self.scheduled.wait();
            }
        }
    }

    /// `Task::unpark_task`: the unparker that wins the parked thread schedules it; whether
    /// this call did.
    pub fn unpark(&self) -> bool {
        let won = self.park.unpark();
        if won {
            assert!(
                !self.queued.swap(true, Ordering::AcqRel),
                "a thread scheduled twice for one park"
            );
            self.scheduled.notify();
        }
        won
    }
}
