//! How many worker loops have returned, and waiting for them (what a shutdown waits on).

use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// The count of worker loops that have returned, with the condition variable a shutdown waits
/// on. Each worker calls [`note_exit`](Self::note_exit) once, as the last thing it does.
#[derive(Default)]
pub(crate) struct WorkerExits {
    exited: Mutex<usize>,
    changed: Condvar,
}

impl WorkerExits {
    /// Counts the calling worker's loop as returned and wakes whoever waits.
    pub(crate) fn note_exit(&self) {
        *self.exited.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.changed.notify_all();
    }

    /// Waits until `want` workers have exited or `deadline` passes (`None`: no deadline);
    /// whether they have.
    pub(crate) fn wait_for(&self, want: usize, deadline: Option<Instant>) -> bool {
        let mut n = self.exited.lock().unwrap_or_else(|e| e.into_inner());
        while *n < want {
            let Some(d) = deadline else {
                n = self.changed.wait(n).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            let now = Instant::now();
            if now >= d {
                return false;
            }
            n = self
                .changed
                .wait_timeout(n, d - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}
