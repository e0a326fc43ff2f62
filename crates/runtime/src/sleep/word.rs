//! The idle protocol's state, reduced to what it synchronises on: one [`SleepWord`] per worker
//! (the futex its owner sleeps on) and the runtime's [`SleeperCount`], with the steps each side
//! takes. The runtime calls exactly these functions (`sleep.rs` on the publisher side,
//! `WorkerLocal::idle` in `worker.rs` on the sleeper side); `tests/loom_idle.rs` drives the same
//! functions under loom (through `crate::sync`), with model queues in place of the deques.

use crate::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

/// States of a worker's sleep word.
pub const AWAKE: u32 = 0;
/// The owner waits (or is about to wait) on its futex.
pub const SLEEPING: u32 = 1;
/// A publisher moved a sleeping owner on; it is waking up.
pub const NOTIFIED: u32 = 2;
/// adaptive (issue 12): the owner rests above the active-worker limit (`adaptive/limit.rs`).
/// General wake-ups ([`wake_one`]) pass it by; a wake-up aimed at this worker
/// ([`SleepWord::wake_after_publish`]), [`SleepWord::rouse`] and [`wake_all`] reach it.
pub const SURPLUS: u32 = 3;

/// One worker's sleep word: [`AWAKE`], [`SLEEPING`], [`NOTIFIED`] or [`SURPLUS`]. Its owner sleeps on it as a
/// futex; anyone may wake it.
pub struct SleepWord {
    state: AtomicU32,
    /// Under loom the futex is a notification (a permit a wake leaves and a wait consumes), so
    /// a wake between the owner's check and its wait is not lost, as with the kernel's futex.
    #[cfg(loom)]
    futex: loom::sync::Notify,
}

impl Default for SleepWord {
    fn default() -> Self {
        SleepWord::new()
    }
}

/// What a worker's [`SleepWord::sleep`] ended with.
pub enum Slept<J> {
    /// Its last search, after announcing itself, found this job (it did not sleep).
    Found(J),
    /// It slept and was woken (or found nothing and was told to look again).
    Woke,
    /// Its sleep's time ran out before anyone woke it (a deaf sleep's or a hearing one's, see
    /// [`SleepWord::sleep`]).
    Expired,
    /// Nothing found and the runtime may stop: leave the loop.
    Exit,
}

impl SleepWord {
    /// A word for an awake worker.
    pub fn new() -> SleepWord {
        SleepWord {
            state: AtomicU32::new(AWAKE),
            #[cfg(loom)]
            futex: loom::sync::Notify::new(),
        }
    }

    /// The current state (diagnostics).
    pub fn state(&self, order: Ordering) -> u32 {
        self.state.load(order)
    }

    /// Whether the owner sleeps, rests above the active limit, or is about to (a hint:
    /// placement prefers a waking worker).
    #[inline]
    pub fn is_sleeping(&self) -> bool {
        matches!(self.state.load(Ordering::Relaxed), SLEEPING | SURPLUS)
    }

    /// Moves the owner from `from` to [`NOTIFIED`] and wakes it; whether this call did.
    #[inline]
    fn wake_from(&self, from: u32) -> bool {
        if self
            .state
            .compare_exchange(from, NOTIFIED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.futex_wake();
            return true;
        }
        false
    }

    /// Publisher side: moves a sleeping owner to [`NOTIFIED`] and wakes it; whether this call
    /// did. The caller has published its work and issued a SeqCst fence first.
    #[inline]
    pub fn try_wake(&self) -> bool {
        self.state.load(Ordering::Relaxed) == SLEEPING && self.wake_from(SLEEPING)
    }

    /// Publisher side, after putting work where only this word's owner takes it first (its
    /// inbox): the SeqCst fence, then wakes the owner if it sleeps or rests (a resting owner
    /// hands the work on).
    #[inline]
    pub fn wake_after_publish(&self) -> bool {
        fence(Ordering::SeqCst);
        match self.state.load(Ordering::Relaxed) {
            s @ (SLEEPING | SURPLUS) => self.wake_from(s),
            _ => false,
        }
    }

    /// Wakes the owner whatever it is doing: it looks again before it sleeps (see [`wake_all`]).
    fn wake_always(&self) {
        if matches!(
            self.state.swap(NOTIFIED, Ordering::AcqRel),
            SLEEPING | SURPLUS
        ) {
            self.futex_wake();
        }
    }

    /// Controller side (adaptive, issue 12), after raising the active limit (store, SeqCst
    /// fence): wakes the owner if it rests; whether this call did.
    #[inline]
    pub fn rouse(&self) -> bool {
        self.wake_from(SURPLUS)
    }

    /// Resting side (adaptive): announces the rest (`SURPLUS`, SeqCst fence). The owner then
    /// re-reads the limit and its inbox and, if still surplus with nothing arrived, calls
    /// [`rest`](Self::rest): store → fence → load against the waker's store → fence → load.
    #[inline]
    pub fn announce_rest(&self) {
        self.state.store(SURPLUS, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Resting side: waits on the futex while the word reads `SURPLUS`.
    pub fn rest(&self) {
        while self.state.load(Ordering::Acquire) == SURPLUS {
            self.futex_wait(SURPLUS);
        }
    }

    /// Resting side: awake again (after a rest, or an announcement it did not wait on).
    pub fn set_awake(&self) {
        self.state.store(AWAKE, Ordering::SeqCst);
    }

    /// Sleeper side, after the owner's searches found nothing and its own queues are empty:
    /// announces itself (`SLEEPING`, `sleepers += 1`, SeqCst fence), searches once more with
    /// `last_search`, and unless that finds work or `may_exit` says stop, calls `on_sleep` and
    /// waits on the futex until a publisher moves the word on. Then it is `AWAKE` again and no
    /// longer counted.
    ///
    /// Why no wake-up is lost: the owner does store (`SLEEPING`) → SeqCst fence → load (the
    /// queues, in `last_search`); a publisher does store (its push) → SeqCst fence → load
    /// (`sleepers`, then this word). Of two such sequences at least one sees the other's store:
    /// the last search finds the work, or the publisher finds the sleeper and wakes it.
    ///
    /// With `deaf_for`, the owner sleeps *deaf to local pushes*: it is counted among the
    /// sleepers (every fenced publisher still wakes it) but not among those a push onto a
    /// worker's own deque wakes ([`SleeperCount::any_after_local_push`]), and it wakes by itself
    /// after that long ([`Slept::Expired`]) to search again. Without, it hears local pushes and
    /// wakes by itself after `hearing_for`. A local push it did not hear (or that did not wake
    /// it: such pushes are not fenced) costs at most that delay in parallelism, never progress,
    /// even where the pusher waits for the pushed work without draining its own deque (a green
    /// thread that spins until the other half of its `join` has run). A worker sleeps deaf
    /// after repeated wake-ups that found nothing to take (a spawner whose threads its joiner
    /// runs inline, `worker.rs`).
    #[inline]
    pub fn sleep<J>(
        &self,
        sleepers: &SleeperCount,
        deaf_for: Option<Duration>,
        hearing_for: Duration,
        last_search: impl FnOnce() -> Option<J>,
        may_exit: impl FnOnce() -> bool,
        on_sleep: impl FnOnce(),
    ) -> Slept<J> {
        self.state.store(SLEEPING, Ordering::SeqCst);
        sleepers.count.fetch_add(1, Ordering::SeqCst);
        if deaf_for.is_none() {
            sleepers.hearing.fetch_add(1, Ordering::SeqCst);
        }
        fence(Ordering::SeqCst);
        let found = last_search();
        let exit = found.is_none() && may_exit();
        if found.is_none() && !exit {
            on_sleep();
            self.futex_wait_while_sleeping_for(deaf_for.unwrap_or(hearing_for));
        }
        // A publisher that moved the word on (NOTIFIED) woke us; else the sleep ran out.
        let woken = self.state.swap(AWAKE, Ordering::SeqCst) != SLEEPING;
        sleepers.count.fetch_sub(1, Ordering::SeqCst);
        if deaf_for.is_none() {
            sleepers.hearing.fetch_sub(1, Ordering::SeqCst);
        }
        match found {
            Some(j) => Slept::Found(j),
            None if exit => Slept::Exit,
            None if woken => Slept::Woke,
            None => Slept::Expired,
        }
    }

    /// Waits on the futex while the word reads `SLEEPING`, for at most `d`.
    #[cfg(not(loom))]
    fn futex_wait_while_sleeping_for(&self, d: Duration) {
        let deadline = std::time::Instant::now() + d;
        while self.state.load(Ordering::Acquire) == SLEEPING {
            let now = std::time::Instant::now();
            if now >= deadline {
                return;
            }
            crate::sys::futex_wait_for(&self.state, SLEEPING, deadline - now);
        }
    }

    /// Under loom a sleep never runs out (the latest its timer may fire): the models then show
    /// that no work depends on the timer, only on the fenced publishers' wake-ups and on
    /// pushers draining their own deques. (Running out early only adds a search.)
    #[cfg(loom)]
    fn futex_wait_while_sleeping_for(&self, _d: Duration) {
        while self.state.load(Ordering::Acquire) == SLEEPING {
            self.futex_wait(SLEEPING);
        }
    }

    #[cfg(not(loom))]
    #[inline]
    fn futex_wait(&self, expected: u32) {
        crate::sys::futex_wait(&self.state, expected);
    }

    #[cfg(not(loom))]
    #[inline]
    fn futex_wake(&self) {
        crate::sys::futex_wake(&self.state, 1);
    }

    #[cfg(loom)]
    fn futex_wait(&self, expected: u32) {
        if self.state.load(Ordering::SeqCst) == expected {
            self.futex.wait();
        }
    }

    #[cfg(loom)]
    fn futex_wake(&self) {
        self.futex.notify();
    }
}

/// How many workers are announced asleep (see [`SleepWord::sleep`]), and how many of them a
/// local push wakes (those not sleeping deaf).
pub struct SleeperCount {
    count: AtomicUsize,
    hearing: AtomicUsize,
}

impl Default for SleeperCount {
    fn default() -> Self {
        SleeperCount::new()
    }
}

impl SleeperCount {
    /// No sleepers.
    pub fn new() -> SleeperCount {
        SleeperCount {
            count: AtomicUsize::new(0),
            hearing: AtomicUsize::new(0),
        }
    }

    /// The current count (diagnostics).
    pub fn get(&self, order: Ordering) -> usize {
        self.count.load(order)
    }

    /// Publisher side, after publishing stealable work (the injector, an inbox spill): the
    /// SeqCst fence, then whether anyone may sleep (then wake one with [`wake_one`]).
    #[inline]
    pub fn any_after_publish(&self) -> bool {
        fence(Ordering::SeqCst);
        self.count.load(Ordering::Acquire) != 0
    }

    /// Publisher side, after a push to the calling worker's *own* start deque: no fence (the
    /// pusher drains its own deque before it goes idle, and every sleep is bounded, so a missed
    /// sleeper costs parallelism only). Whether anyone may sleep who is not deaf to local
    /// pushes.
    #[inline]
    pub fn any_after_local_push(&self) -> bool {
        self.hearing.load(Ordering::SeqCst) != 0
    }
}

/// Wakes the first sleeping owner among `words`; whether one was woken.
#[inline]
pub fn wake_one<'a>(words: impl IntoIterator<Item = &'a SleepWord>) -> bool {
    words.into_iter().any(SleepWord::try_wake)
}

/// Wakes every owner among `words` whatever it is doing (shutdown, the last green thread
/// finished): after the SeqCst fence each word becomes [`NOTIFIED`], so an owner about to sleep
/// looks again, and a sleeping one is woken.
pub fn wake_all<'a>(words: impl IntoIterator<Item = &'a SleepWord>) {
    fence(Ordering::SeqCst);
    for w in words {
        w.wake_always();
    }
}
