//! Stopping a runtime: `Runtime::drop` (waits for every green thread, and says on stderr what
//! it waits for when that takes long) and `Runtime::shutdown_timeout` (gives up and abandons).

use crate::context;
use crate::runtime::Runtime;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Runtime {
    /// Shuts the runtime down, waiting at most `timeout` for its green threads to finish, and
    /// returns how many green threads were left unfinished (0: a clean shutdown, as `drop`).
    ///
    /// Past the timeout the runtime is abandoned: idle workers stop at once (a worker still
    /// running a green thread that never parks or yields stays with it, detached). The green
    /// threads left — parked ones, and ready ones nobody ran — are **never resumed**: their
    /// destructors do not run, and their stacks, control blocks and the runtime's shared state are
    /// **leaked**, not freed, so that a later unpark of one of them (a lock released, a timer
    /// firing) stays harmless: it queues the thread on a runtime nobody runs. Called from one of
    /// the runtime's own green threads it cannot wait for itself: it returns at once with the
    /// live count (the caller included) and the workers stop once idle, as with `drop`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = footprint::Runtime::builder().workers(2).build()?;
    /// rt.spawn(|| footprint::runtime::park::park()); // detached, parked forever
    /// let left = rt.shutdown_timeout(Duration::from_millis(50));
    /// assert!(left <= 1); // 1 once it has parked (0 only on a spurious wake-up)
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn shutdown_timeout(mut self, timeout: Duration) -> usize {
        let deadline = Instant::now().checked_add(timeout);
        self.shared.begin_shutdown();
        self.shared.notify_all();
        if context::current_shared() == Arc::as_ptr(&self.shared) {
            self.threads.clear();
            return self.shared.live() as usize;
        }
        if !self.wait_workers_exited(deadline) {
            self.shared.abandon();
            self.shared.notify_all();
            // Idle workers exit within microseconds; a busy one is left detached.
            self.wait_workers_exited(Instant::now().checked_add(ABANDON_GRACE));
        }
        let left = self.shared.live() as usize;
        if left > 0 {
            // The unfinished threads point at the shared state: it must outlive them (forever).
            std::mem::forget(self.shared.clone());
        }
        for t in std::mem::take(&mut self.threads) {
            if t.is_finished() {
                let _ = t.join();
            }
        }
        left
    }

    /// Waits until every started worker has left its loop or `deadline` passes (`None`: no
    /// deadline); whether they all have.
    fn wait_workers_exited(&self, deadline: Option<Instant>) -> bool {
        self.shared.exits().wait_for(self.threads.len(), deadline)
    }

    /// The stderr line `drop` prints when it has waited long: the count and the names.
    fn waiting_message(&self) -> String {
        let mut names: Vec<String> = self
            .shared
            .named_live(|m| m.values().map(|n| n.to_string()).collect());
        names.sort();
        format!(
            "footprint: dropping the runtime has waited {} s for {} unfinished green thread(s) \
             (named: [{}]; unnamed ones are not listed); it waits until they finish \
             (Runtime::shutdown_timeout gives up instead)",
            DROP_WARN_AFTER.as_secs(),
            self.shared.live(),
            names.join(", ")
        )
    }
}

/// How long `Runtime::drop` waits before it says on stderr what it waits for.
const DROP_WARN_AFTER: Duration = Duration::from_secs(3);
/// How long `shutdown_timeout` waits, once it has abandoned the runtime, for idle workers to stop.
const ABANDON_GRACE: Duration = Duration::from_millis(50);

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shared.watch().stop();
        crate::runtime::note_runtime_dropped();
        if cfg!(feature = "tracing") {
            let s = self.stats();
            crate::trace::shutdown(self.shared.id(), self.workers(), s.spawned, s.finished);
        }
        if let Some(s) = &self.shared.placement().shuffle {
            s.stop();
        }
        // adaptive
        if let Some(a) = self.shared.adaptive() {
            a.stop();
        }
        if let Some(t) = self.shared.tranquilizer() {
            t.stop();
        }
        if let Some(n) = self.shared.node() {
            n.stop();
        }
        self.shared.begin_shutdown();
        self.shared.notify_all();
        if context::current_shared() == Arc::as_ptr(&self.shared) {
            // Called from inside: the workers stop by themselves once the runtime is idle.
            self.threads.clear();
            return;
        }
        if !self.wait_workers_exited(Instant::now().checked_add(DROP_WARN_AFTER)) {
            eprintln!("{}", self.waiting_message());
            self.wait_workers_exited(None);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
