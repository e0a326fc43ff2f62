//! The idle protocol: how a worker without work goes to sleep and how publishers of work wake it,
//! with no lost wake-ups.
//!
//! A worker that finds no work spins a little while stealing, then announces itself:
//! `sleep = SLEEPING`, `sleepers += 1`, a SeqCst fence, and one more full search. If that finds
//! nothing it waits on the futex `sleep` while it reads `SLEEPING`. A publisher of stealable work
//! pushes it, issues a SeqCst fence and reads `sleepers`; if non-zero it moves one `SLEEPING`
//! worker to `NOTIFIED` and wakes its futex. Each side does store → SeqCst fence → load, so at
//! least one of them sees the other: the final search finds the work, or the publisher finds the
//! sleeper. A worker woken this way that finds work wakes one more (a wake chain), so a burst of
//! pushes seen as "one sleeper" by several publishers still reaches every idle worker.
//!
//! The publisher side lives here (`Shared::notify_*`); the sleeper side is
//! `WorkerLocal::idle` in `worker.rs`, which searches with the worker's own steal order. The
//! steps of both sides that touch the protocol's atomics are the functions of `word.rs`
//! ([`SleepWord`], [`SleeperCount`], [`wake_one`]), which `tests/loom_idle.rs` model-checks.

pub(crate) mod word;

pub(crate) use word::{wake_all, wake_one, SleeperCount, Slept};

use crate::registry::{Shared, WorkerLocal};
use std::sync::atomic::Ordering;

impl Shared {
    /// Wakes one sleeping worker if any (after publishing stealable work).
    #[inline]
    pub(crate) fn notify_one(&self, from: usize) {
        if !self.sleepers.any_after_publish() {
            return;
        }
        self.wake_one_slow(from);
    }

    /// Wakes the first sleeping worker after `from`, in ring order ending with `from` itself
    /// (two slices: no division per worker; while a woken worker is still counted as a sleeper
    /// every push of a busy spawner comes here, issue 15).
    #[cold]
    fn wake_one_slow(&self, from: usize) -> bool {
        let (upto, after) = self.workers.split_at((from + 1).min(self.workers.len()));
        wake_one(after.iter().chain(upto).map(|w| &*w.sleep))
    }

    /// Wakes worker `w` if it sleeps (after putting work in its inbox). A worker resting above
    /// the active limit (adaptive, issue 12) is woken too: it hands the work on.
    pub(crate) fn notify_worker(&self, w: usize) {
        let ws = &self.workers[w];
        if !ws.sleep.wake_after_publish() && ws.inbox.len.load(Ordering::Relaxed) > 1 {
            // The target is busy and work piles up: let an idle worker take some (load balance
            // wins over placement).
            self.notify_one(w);
        }
    }

    pub(crate) fn notify_all(&self) {
        wake_all(self.workers.iter().map(|w| &*w.sleep));
    }

    /// Workers currently asleep on their futex (or about to be), resting ones included.
    pub(crate) fn sleeping_workers(&self) -> usize {
        self.workers
            .iter()
            .filter(|w| {
                matches!(
                    w.sleep.state(Ordering::Acquire),
                    word::SLEEPING | word::SURPLUS
                )
            })
            .count()
    }
}

/// Local pushes that skip the wake-up attempt after one found no worker asleep (see
/// [`WorkerLocal::notify_after_local_push`]).
const LOCAL_WAKE_SKIP: u32 = 63;

impl WorkerLocal {
    /// Wakes one sleeping worker after a push to this worker's *own* start deque.
    ///
    /// No fence here: such a push is not lost, because the pushing worker drains its own deque
    /// before it goes idle (a `join` takes its half back or waits while its worker runs other
    /// work), and a pusher that never does (a green thread spinning until its pushed half has
    /// run) is served by the sleeper's bound: every idle sleep runs out after at most 64 ms
    /// (`worker.rs`, `HEARING_FIRST`). If the load below misses a worker that is just falling
    /// asleep, the cost is parallelism, not progress.
    ///
    /// By the same argument, after an attempt that found the announced sleepers already woken
    /// (`NOTIFIED`, still counted until they run) the next `LOCAL_WAKE_SKIP` pushes skip the
    /// attempt: a woken worker waiting for a CPU otherwise made every push of a busy spawner
    /// walk the sleep words (14 % of the instructions of fib(30) under callgrind, issue 15).
    #[inline]
    pub(crate) fn notify_after_local_push(&self) {
        let skip = self.local_wake_skip.get();
        if skip != 0 {
            self.local_wake_skip.set(skip - 1);
            return;
        }
        let shared = self.shared();
        if shared.sleepers.any_after_local_push() && !shared.wake_one_slow(self.index) {
            self.local_wake_skip.set(LOCAL_WAKE_SKIP);
        }
    }
}
