//! The OS-thread scheduler hook (placeholder: plain std park/unpark; the locks work replaces it
//! with the informed version).

use crate::hook::{ClassCell, Placement, PriorityClass, SchedulerHook, Unpark, Unparker};
use std::sync::Arc;
use std::time::Duration;

struct OsHook;

struct OsUnpark(std::thread::Thread);

impl Unpark for OsUnpark {
    fn unpark(&self, _hint: Placement) {
        self.0.unpark()
    }
}

std::thread_local! {
    static CLASS: ClassCell = const { ClassCell::new(PriorityClass::Running) };
    static UNPARKER: Unparker = Unparker::new(Arc::new(OsUnpark(std::thread::current())));
}

impl SchedulerHook for OsHook {
    fn class_cell(&self) -> &ClassCell {
        // SAFETY: the thread-local lives as long as the current OS thread, which is the contract.
        CLASS.with(|c| unsafe { &*(c as *const ClassCell) })
    }
    fn higher_class_ready(&self, _than: PriorityClass) -> bool {
        false
    }
    fn yield_to_higher(&self, _than: PriorityClass) -> bool {
        false
    }
    fn yield_now(&self) {
        std::thread::yield_now()
    }
    fn current_unparker(&self) -> Unparker {
        UNPARKER.with(|u| u.clone())
    }
    fn park(&self) {
        std::thread::park()
    }
    fn park_timeout(&self, timeout: Duration) -> bool {
        let start = std::time::Instant::now();
        std::thread::park_timeout(timeout);
        start.elapsed() < timeout
    }
    fn worker_id(&self) -> Option<usize> {
        None
    }
    fn switch_cost_ns(&self) -> u64 {
        5_000
    }
}

static OS_HOOK: OsHook = OsHook;

/// The hook used on threads where none is installed.
pub fn os_hook() -> &'static dyn SchedulerHook {
    &OS_HOOK
}
