//! What the runtime's loom models share: the model runner with its default preemption bound,
//! and a model green thread that parks and is unparked through the runtime's own
//! [`ParkState`] (the steps of `parking::park_current`, `WorkerLocal::finish_park` and
//! `Task::unpark_task`, with a notification standing in for the run queue).
#![allow(dead_code)]

use footprint_runtime::loom_protocols::ParkState;
use loom::sync::Notify;

/// Checks `f` under every interleaving loom explores, with at most `LOOM_MAX_PREEMPTIONS`
/// preemptions (2 when unset), so that each model finishes in seconds.
pub fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    b.check(f);
}

/// A green thread as the park protocol sees it.
pub struct Green {
    pub park: ParkState,
    /// Notified when an unparker schedules the parked thread (stands for its run queue and the
    /// worker that resumes it).
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
            self.scheduled.wait();
        }
    }

    /// `Task::unpark_task`: the unparker that wins the parked thread schedules it; whether
    /// this call did.
    pub fn unpark(&self) -> bool {
        let won = self.park.unpark();
        if won {
            self.scheduled.notify();
        }
        won
    }
}
