//! The idle protocol: how a worker without work searches, goes to sleep, and how publishers of
//! work wake it, with no lost wake-up and no timeout standing in for one.
//!
//! # The two sides
//!
//! A worker that runs out of local work *searches* (counted in `searching`): it polls the other
//! workers' deques, the inboxes and the injector, a bounded number of rounds (longer for a worker
//! that keeps being woken right after it sleeps: `worker/idle_state.rs`). If that finds
//! nothing it stops searching, announces itself asleep (`sleeping += 1`, its word `SLEEPING`),
//! issues the heavy barrier ([`barrier`]), searches every queue once more, and only then waits on
//! its futex. A publisher puts its work where thieves look, then:
//!
//! - after a push onto its *own* start deque (a spawn, a `join` half, a loop's participants):
//!   the light barrier, then if a worker sleeps while none searches, it wakes one
//!   (`notify_after_local_push`); a loop start wakes as many as it has participants to give
//!   ([`Shared::wake_for`]);
//! - after a push into the injector or an inbox spill: a SeqCst fence, then the same rule
//!   (`notify_one`);
//! - after putting a thread into a worker's inbox (an unpark): a SeqCst fence, then it wakes
//!   that worker if it sleeps or rests (`notify_worker`); if it is awake, the same rule as
//!   above (a sleeper is woken if nobody searches: the owner may be busy for long, and thieves
//!   look at inboxes too).
//!
//! A woken worker is taken out of `sleeping` and counted as searching by its waker, so pushes
//! that follow see a searcher and wake nobody more (Go's rule: one spinning thread while work
//! may appear, not a futex wake per push). A searcher that finds work stops searching, and if
//! it was the last one while others sleep, wakes one more: pushes that saw it searching woke
//! nobody, and it may have taken other work than theirs.
//!
//! # Why no wake-up is lost
//!
//! Take a job pushed by publisher X and assume it is never run while every other worker ends
//! asleep for good. Let W be the one of them whose last heavy barrier, H, comes last (the
//! barriers act as SeqCst fences, which are totally ordered).
//!
//! - If X's push precedes H (for the light barrier: the kernel's barrier point in X comes after
//!   the push; for fenced publishers: X's fence precedes H's fence), W's last search, after H,
//!   sees the job and W does not sleep.
//! - Otherwise X's loads after its push see everything the sleepers did before their barriers:
//!   each one's `sleeping += 1` and `SLEEPING`, and each one's last `searching -= 1` (a worker
//!   stops searching before it announces itself, and a woken worker's count was added by its
//!   waker before the wake). So X sees `sleeping > 0` and `searching == 0`, and its walk over
//!   the words finds W `SLEEPING` and wakes it.
//!
//! Either way some worker that was to sleep for good does not, a contradiction. The argument
//! needs no timeout and no promise that the publisher drains its own deque: a green thread that
//! spins until its pushed `join` half has run (`tests/deaf_sleep.rs`) is served like any other.
//! Work no other worker may take (a thread bound to its worker by a placement hint, a resumed
//! thread in its worker's own ready structure) waits for its worker, which is awake.
//!
//! The sleep's timeout ([`safety_net`]) stays only as a safety net against a bug in this
//! argument: `FOOTPRINT_IDLE_SAFETY_NET=off` removes it (the test suite runs so), and
//! `RuntimeStats` counts every sleep that ran out and then found work that nobody else would
//! have run (`expired_sleeps_with_work`: no worker searching, every other one waiting on its
//! futex past its last search), which is a lost wake-up the net covered: zero in every test
//! and bench. Work that an expired sleeper takes from under a searcher, a woken worker or a
//! worker in its last search is not a lost wake-up and is not counted.
//!
//! The steps of both sides that touch the protocol's atomics are the functions of `word.rs`
//! ([`SleepWord`](word::SleepWord), [`SleeperCount`], [`wake_one`]), which `tests/loom_idle.rs`
//! model-checks with no timeout, for every kind of publisher above (the barrier pair is a SeqCst
//! fence on each side there; with the pusher's removed, the own-deque model fails).

pub(crate) mod barrier;
pub(crate) mod word;

pub(crate) use word::{wake_all, wake_many, wake_one, Slept};

use crate::registry::Shared;
use crate::worker::local::WorkerLocal;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Duration;

/// The safety net's default: an idle worker looks again after this long asleep.
const SAFETY_NET_DEFAULT: Duration = Duration::from_millis(100);

/// The idle sleep's safety net: `None` when `FOOTPRINT_IDLE_SAFETY_NET` is `off` (or `0`),
/// else that many milliseconds, else 100 ms. Read once per process.
pub(crate) fn safety_net() -> Option<Duration> {
    static NET: OnceLock<Option<Duration>> = OnceLock::new();
    *NET.get_or_init(|| match std::env::var("FOOTPRINT_IDLE_SAFETY_NET") {
        Ok(v) if v == "off" || v == "0" => None,
        Ok(v) => match v.parse::<u64>() {
            Ok(ms) => Some(Duration::from_millis(ms)),
            Err(_) => {
                eprintln!(
                    "footprint: FOOTPRINT_IDLE_SAFETY_NET={v:?} is neither `off` nor a number of \
                     milliseconds; using {} ms",
                    SAFETY_NET_DEFAULT.as_millis()
                );
                Some(SAFETY_NET_DEFAULT)
            }
        },
        Err(_) => Some(SAFETY_NET_DEFAULT),
    })
}

impl Shared {
    /// Wakes one sleeping worker if any while none searches (after publishing stealable work
    /// with a fence: the injector, an inbox spill).
    #[inline]
    pub(crate) fn notify_one(&self, from: usize) {
        if self.sleepers().wake_needed_after_publish() {
            self.wake_one_from(from);
        }
    }

    /// Wakes the first sleeping worker after `from`, in ring order ending with `from` itself
    /// (two slices: no division per worker).
    #[cold]
    pub(crate) fn wake_one_from(&self, from: usize) -> bool {
        let (upto, after) = self
            .workers()
            .split_at((from + 1).min(self.workers().len()));
        wake_one(self.sleepers(), after.iter().chain(upto).map(|w| w.sleep()))
    }

    /// Wakes up to `n` sleeping workers at once (searchers or not), after worker `from` pushed
    /// work for that many onto its own deque; how many it woke.
    pub(crate) fn wake_for(&self, from: usize, n: usize) -> usize {
        if n == 0 || !self.sleepers().any_sleeping_after_local_push() {
            return 0;
        }
        let (upto, after) = self
            .workers()
            .split_at((from + 1).min(self.workers().len()));
        wake_many(
            self.sleepers(),
            after.iter().chain(upto).map(|w| w.sleep()),
            n,
        )
    }

    /// Wakes worker `w` if it sleeps (after putting work in its inbox). A worker resting above
    /// the active limit (adaptive) is woken too: it hands the work on. If `w` is awake, a
    /// sleeper is woken when nobody searches: `w` may be busy for long, and thieves take from
    /// inboxes too (load balance wins over placement).
    pub(crate) fn notify_worker(&self, w: usize) {
        let ws = &self.workers()[w];
        // `wake_after_publish` issued the fence.
        if !ws.sleep().wake_after_publish(self.sleepers()) && self.sleepers().wake_needed() {
            self.wake_one_from(w);
        }
    }

    pub(crate) fn notify_all(&self) {
        wake_all(self.sleepers(), self.workers().iter().map(|w| w.sleep()));
    }

    /// Whether no worker but `me` searches, and every other one waits on its futex past its
    /// last search or rests: nobody would find work now without a wake-up (diagnostics for
    /// the lost wake-ups that `RuntimeStats` counts).
    pub(crate) fn nobody_else_looking(&self, me: usize) -> bool {
        self.sleepers().searching(Ordering::SeqCst) == 0
            && self
                .workers()
                .iter()
                .enumerate()
                .all(|(i, w)| i == me || w.sleep().is_waiting())
    }

    /// Workers currently asleep on their futex (or about to be), resting ones included.
    pub(crate) fn sleeping_workers(&self) -> usize {
        self.workers()
            .iter()
            .filter(|w| {
                matches!(
                    w.sleep().state(Ordering::Acquire),
                    word::SLEEPING | word::SURPLUS
                )
            })
            .count()
    }
}

impl WorkerLocal {
    /// Wakes one sleeping worker, if any while none searches, after a push onto this worker's
    /// *own* start deque: the light barrier and two loads when nobody needs waking.
    #[inline]
    pub(crate) fn notify_after_local_push(&self) {
        let shared = self.shared();
        if shared.sleepers().wake_needed_after_local_push() {
            shared.wake_one_from(self.index());
        }
    }

    /// Stops this worker's search (it found work): wakes one sleeper if it was the last
    /// searcher (see the module docs).
    #[inline]
    pub(crate) fn stop_searching_found(&self) {
        let shared = self.shared();
        if shared.sleepers().stop_searching() {
            shared.wake_one_from(self.index());
        }
    }
}

/// Wakes up to `n` sleeping workers of the calling green thread's runtime at once, after the
/// caller pushed work for that many onto its worker's deque (say, `n` halves of nested
/// [`join`](crate::join)s): one wake-up fan-out instead of a chain in which each woken thief
/// wakes the next. Returns how many it woke (0 outside a runtime's worker, or with nobody
/// asleep: searching workers find the work anyway).
///
/// Parallel loops call this when they start; ordinary spawns and joins need not, since every
/// push already wakes a worker when nobody searches.
///
/// ```
/// let rt = footprint_runtime::Runtime::builder().workers(2).build()?;
/// let woken = rt.block_on(|| footprint_runtime::wake_idle_workers(1));
/// assert!(woken <= 1);
/// assert_eq!(footprint_runtime::wake_idle_workers(1), 0); // not on a worker
/// # Ok::<(), footprint_runtime::Error>(())
/// ```
pub fn wake_idle_workers(n: usize) -> usize {
    let Some(index) = crate::context::current_worker_index() else {
        return 0;
    };
    let shared = crate::context::current_shared();
    // SAFETY: a worker's runtime outlives the green threads its loop runs, the caller included.
    unsafe { &*shared }.wake_for(index, n)
}
