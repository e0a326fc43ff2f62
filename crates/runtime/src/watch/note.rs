//! Notes what the calling green thread waits on, in its control block's wait record (read by
//! the watcher's report). Apart from `record` so that the record, which every control block
//! holds, does not depend on the thread context.

use super::record::{Wait, WaitKind};
use std::panic::Location;

/// Notes a wait of the calling green thread, if the caller is one (the runtime's own waits),
/// called at `at` when known.
#[inline]
pub(crate) fn note_current(kind: WaitKind, addr: usize, at: Option<&'static Location<'static>>) {
    let t = crate::context::current_task_ptr();
    if !t.is_null() {
        let runtime = crate::context::current_shared() as usize;
        let w = Wait {
            kind,
            addr,
            a: 0,
            b: 0,
            runtime,
            at,
        };
        // SAFETY: the running green thread's control block is alive while it runs.
        unsafe { (*t).extras().wait.note(w) };
    }
}
