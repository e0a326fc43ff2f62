//! Waiting with a deadline on a [`WaitQueue`]: the building block of the timed operations
//! (`try_lock_for`, `Semaphore::acquire_timeout`).

use crate::hook::{current_hook, PriorityClass, WaitOn};
use crate::wait::{ClassScope, Informed, WaitQueue};
use std::time::Instant;

/// Parks under `key` until `ready()` holds (returns `true`) or `deadline` passes (returns
/// `false`; never earlier). Publishes `Waiter` meanwhile. A notifier changes what `ready` reads
/// with a `SeqCst` read-modify-write and then wakes the queue's threads (see `WaitQueue`).
pub(crate) fn park_until(
    queue: &WaitQueue,
    key: usize,
    ready: &mut dyn FnMut() -> bool,
    deadline: Option<Instant>,
    what: WaitOn,
) -> bool {
    if ready() {
        return true;
    }
    let hook = current_hook();
    hook.note_wait(what);
    let scope = ClassScope::enter::<Informed>();
    scope.publish(PriorityClass::Waiter);
    let ok = loop {
        if ready() {
            break true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break false;
        }
        queue.park_once(hook, key, &mut || !ready(), deadline);
    };
    scope.restore();
    ok
}
