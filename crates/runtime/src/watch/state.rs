//! The watcher's per-runtime state, kept in the runtime's `Shared`: what it is configured to
//! watch for, each worker's registration, what it saw at its last tick and its counters. Apart
//! from the watcher's thread (`watch/mod.rs`), so that the runtime's shared state can hold it
//! without depending on the code that reads the runtime.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The hang watchdog's default period in debug builds (`Builder::watchdog`).
pub const DEFAULT_WATCHDOG: Duration = Duration::from_secs(10);
/// The blocking detector's default threshold (`Builder::blocking_warning`).
pub const DEFAULT_BLOCKING_WARNING: Duration = Duration::from_millis(100);

/// Ticks while no worker runs a green thread (nothing can block then; the watchdog's periods
/// are seconds).
pub(crate) const IDLE_TICK: Duration = Duration::from_millis(100);

/// What the watcher watches for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WatchConfig {
    pub(crate) hang_after: Option<Duration>,
    pub(crate) blocking_after: Option<Duration>,
}

impl WatchConfig {
    pub(crate) fn any(&self) -> bool {
        self.hang_after.is_some() || self.blocking_after.is_some()
    }

    /// The tick while some worker runs a thread: a quarter of the blocking threshold (an
    /// episode is then reported at most a quarter late), an eighth of the hang period.
    pub(crate) fn busy_tick(&self) -> Duration {
        let a = self.blocking_after.map_or(Duration::MAX, |d| d / 4);
        let b = self.hang_after.map_or(Duration::MAX, |d| d / 8);
        a.min(b)
            .clamp(Duration::from_millis(5), Duration::from_secs(1))
    }
}

/// One worker as the watcher sees it.
pub(crate) struct WorkerWatch {
    /// The worker's `ThreadCtx::current` while its loop runs (null before and after); the
    /// mutex keeps the worker from leaving its loop (whose frame holds the cell) while the
    /// watcher reads through it.
    current: Mutex<*const AtomicPtr<crate::task::Task>>,
    /// The worker's kernel thread id (0 before it started).
    pub(crate) tid: AtomicI32,
}

// SAFETY: the raw pointer is only dereferenced under the mutex, while the worker's loop (whose
// frame owns the cell) cannot end (see `unregister_worker`).
unsafe impl Send for WorkerWatch {}
// SAFETY: as above.
unsafe impl Sync for WorkerWatch {}

/// What the watcher saw of one worker at its last tick.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen {
    /// The green thread it was running (0: none) and its run counter.
    pub(crate) current: usize,
    pub(crate) runs: u64,
    /// Since when (the first tick that saw this run).
    pub(crate) since: Instant,
    /// This run was reported as blocking.
    pub(crate) warned: bool,
    /// The worker's CPU time when the run had lasted half the threshold, and when that was
    /// (read only for runs that long: a blocked run uses next to no CPU after it).
    pub(crate) cpu_mark: Option<(u64, Instant)>,
}

/// The watcher's per-runtime state (in `Shared`).
pub(crate) struct Watch {
    pub(crate) config: WatchConfig,
    pub(crate) workers: Box<[WorkerWatch]>,
    /// What the last tick saw, per worker (`None` before the first; read by reports for how
    /// long a worker has run its thread).
    pub(crate) seen: Mutex<Vec<Option<Seen>>>,
    pub(crate) blocking_warnings: AtomicU64,
    pub(crate) hang_reports: AtomicU64,
    pub(crate) stop: Arc<Stop>,
}

#[derive(Default)]
pub(crate) struct Stop {
    pub(crate) stopped: Mutex<bool>,
    pub(crate) cv: Condvar,
}

impl Watch {
    pub(crate) fn new(config: WatchConfig, workers: usize) -> Watch {
        Watch {
            config,
            workers: (0..workers)
                .map(|_| WorkerWatch {
                    current: Mutex::new(std::ptr::null()),
                    tid: AtomicI32::new(0),
                })
                .collect(),
            seen: Mutex::new(vec![None; workers]),
            blocking_warnings: AtomicU64::new(0),
            hang_reports: AtomicU64::new(0),
            stop: Arc::new(Stop::default()),
        }
    }

    /// Called by worker `index` on its own thread before its loop: where its current thread
    /// is kept, and its kernel thread id.
    pub(crate) fn register_worker(&self, index: usize, current: &AtomicPtr<crate::task::Task>) {
        let w = &self.workers[index];
        w.tid.store(super::proc::gettid(), Ordering::Relaxed);
        *w.current.lock().unwrap_or_else(|e| e.into_inner()) = current;
    }

    /// Called by worker `index` after its loop, before the cell goes away.
    pub(crate) fn unregister_worker(&self, index: usize) {
        *self.workers[index]
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = std::ptr::null();
    }

    /// The green thread worker `index` runs now (0: none).
    pub(crate) fn current_of(&self, index: usize) -> usize {
        let g = self.workers[index]
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if g.is_null() {
            return 0;
        }
        // SAFETY: registered and not yet unregistered: the worker's loop, whose frame holds the
        // cell, cannot end while we hold the lock.
        unsafe { (**g).load(Ordering::Relaxed) as usize }
    }

    /// Tells the watcher thread to stop (`Runtime::drop`); it does not wait for it.
    pub(crate) fn stop(&self) {
        *self.stop.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.stop.cv.notify_all();
    }
}
