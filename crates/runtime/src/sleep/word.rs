//! The idle protocol's state, reduced to what it synchronises on: one [`SleepWord`] per worker
//! (the futex its owner sleeps on) and the runtime's [`SleeperCount`] (how many workers sleep,
//! how many search), with the steps each side takes. The runtime calls exactly these functions
//! (`sleep.rs` on the publisher side, `WorkerLocal::idle` in `worker/idle.rs` on the sleeper side);
//! `tests/loom_idle.rs` drives the same functions under loom (through `crate::sync`), with model
//! queues in place of the deques. The argument for why no wake-up is lost is in `sleep.rs`.

use super::barrier;
use crate::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

/// States of a worker's sleep word.
pub const AWAKE: u32 = 0;
/// The owner waits (or is about to wait) on its futex; it is counted in
/// [`SleeperCount::sleeping`].
pub const SLEEPING: u32 = 1;
/// A publisher moved a sleeping owner on (and counted it as searching); it is waking up.
pub const NOTIFIED: u32 = 2;
/// adaptive: the owner rests above the active-worker limit (`adaptive/limit.rs`).
/// General wake-ups ([`wake_one`]) pass it by; a wake-up aimed at this worker
/// ([`SleepWord::wake_after_publish`]), [`SleepWord::rouse`] and [`wake_all`] reach it.
pub const SURPLUS: u32 = 3;
/// A waker claimed a sleeping owner and is moving the counts (it is taken out of the sleeping
/// count and counted as searching) before it sets [`NOTIFIED`]: the owner waits for that, so
/// that it never acts as woken before its waker has counted it.
pub const WAKING: u32 = 4;

/// One worker's sleep word: [`AWAKE`], [`SLEEPING`], [`NOTIFIED`] or [`SURPLUS`]. Its owner
/// sleeps on it as a futex; anyone may wake it.
pub struct SleepWord {
    state: AtomicU32,
    /// Diagnostics only, not part of the protocol: set while the owner waits on the futex
    /// (after its last search found nothing), so that a worker whose sleep ran out can tell
    /// whether every other worker was past its last search (`RuntimeStats`'s lost wake-ups).
    waiting: std::sync::atomic::AtomicBool,
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
    /// Its last search, after announcing itself, found this job (it did not sleep). With
    /// `true`, a publisher woke it meanwhile and counted it as searching: the caller stops
    /// searching ([`SleeperCount::stop_searching`]).
    Found(J, bool),
    /// A publisher woke it: it is counted as searching (see [`SleeperCount::stop_searching`]).
    Woke,
    /// Its safety-net timeout ran out before anyone woke it (never when the net is off).
    Expired,
    /// Nothing found and the runtime may stop: leave the loop.
    Exit,
}

impl SleepWord {
    /// A word for an awake worker.
    pub fn new() -> SleepWord {
        SleepWord {
            state: AtomicU32::new(AWAKE),
            waiting: std::sync::atomic::AtomicBool::new(false),
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

    /// Whether the owner waits on its futex past its last search, unclaimed by any waker, or
    /// rests above the active limit (diagnostics: such a worker looks at no queue until it is
    /// woken).
    #[inline]
    pub fn is_waiting(&self) -> bool {
        match self.state.load(Ordering::SeqCst) {
            SLEEPING => self.waiting.load(std::sync::atomic::Ordering::SeqCst),
            SURPLUS => true,
            _ => false,
        }
    }

    /// Moves a sleeping owner to [`NOTIFIED`], takes it out of the sleeping count and counts it
    /// as searching, and wakes its futex; whether this call did. Whoever moves a word out of
    /// `SLEEPING` (this call, or the owner itself when its sleep ends otherwise) is the one that
    /// takes it out of the count, so the count never falls below the number of `SLEEPING` words;
    /// the counts move while the word reads [`WAKING`], before the owner can see that it was
    /// woken.
    #[inline]
    fn take_sleeper(&self, count: &SleeperCount) -> bool {
        if self.state.load(Ordering::SeqCst) != SLEEPING
            || self
                .state
                .compare_exchange(SLEEPING, WAKING, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        count.searching.fetch_add(1, Ordering::SeqCst);
        count.sleeping.fetch_sub(1, Ordering::SeqCst);
        self.state.store(NOTIFIED, Ordering::SeqCst);
        self.futex_wake();
        true
    }

    /// Owner side, at the end of a sleep: waits out a waker that claimed the word ([`WAKING`]),
    /// then sets it `AWAKE`; the state it left (`SLEEPING` if nobody woke the owner).
    fn settle(&self) -> u32 {
        let mut s = self.state.load(Ordering::SeqCst);
        loop {
            if s == WAKING {
                // The waker is between its claim and NOTIFIED: a few instructions.
                #[cfg(loom)]
                loom::thread::yield_now();
                #[cfg(not(loom))]
                std::hint::spin_loop();
                s = self.state.load(Ordering::SeqCst);
                continue;
            }
            match self
                .state
                .compare_exchange(s, AWAKE, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return s,
                Err(now) => s = now,
            }
        }
    }

    /// Publisher side, after putting work where only this word's owner takes it first (its
    /// inbox): the SeqCst fence, then wakes the owner if it sleeps or rests (a resting owner
    /// hands the work on); whether this call woke it.
    #[inline]
    pub fn wake_after_publish(&self, count: &SleeperCount) -> bool {
        fence(Ordering::SeqCst);
        match self.state.load(Ordering::SeqCst) {
            SLEEPING => self.take_sleeper(count),
            SURPLUS => self.rouse(),
            _ => false,
        }
    }

    /// Wakes the owner if it sleeps or rests (see [`wake_all`]); an owner about to sleep sees
    /// the caller's state change in its last look.
    fn wake_always(&self, count: &SleeperCount) {
        if !self.take_sleeper(count) {
            self.rouse();
        }
    }

    /// Controller side (adaptive), after raising the active limit (store, SeqCst fence): wakes
    /// the owner if it rests; whether this call did.
    #[inline]
    pub fn rouse(&self) -> bool {
        if self
            .state
            .compare_exchange(SURPLUS, NOTIFIED, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            self.futex_wake();
            return true;
        }
        false
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

    /// Sleeper side, after the owner's searches found nothing and it has stopped searching
    /// ([`SleeperCount::stop_searching`]): announces itself (`sleeping += 1`, `SLEEPING`),
    /// issues the *heavy* barrier (`sleep.rs`: it orders every other worker's earlier pushes
    /// before its own next loads, however those pushes were published), searches once more
    /// with `last_search`, and unless that finds work or `may_exit` says stop, calls `on_sleep`
    /// and waits on the futex until a publisher moves the word on, or `timeout` (the safety
    /// net; `None`: none) runs out. Then it is `AWAKE` again and out of the sleeping count.
    ///
    /// Woken ([`Slept::Woke`]), the owner is counted as searching (its waker counted it);
    /// otherwise it is not.
    #[inline]
    pub fn sleep<J>(
        &self,
        count: &SleeperCount,
        timeout: Option<Duration>,
        last_search: impl FnOnce() -> Option<J>,
        may_exit: impl FnOnce() -> bool,
        on_sleep: impl FnOnce(),
    ) -> Slept<J> {
        // Counted before the word says SLEEPING, so that a waker that sees the word always
        // finds the count to take it out of.
        count.sleeping.fetch_add(1, Ordering::SeqCst);
        self.state.store(SLEEPING, Ordering::SeqCst);
        barrier::heavy();
        let found = last_search();
        let exit = found.is_none() && may_exit();
        if found.is_none() && !exit {
            on_sleep();
            self.waiting
                .store(true, std::sync::atomic::Ordering::SeqCst);
            self.futex_wait_while_sleeping(timeout);
            self.waiting
                .store(false, std::sync::atomic::Ordering::SeqCst);
        }
        // A publisher that moved the word on (NOTIFIED) woke us and took us out of the count;
        // otherwise we take ourselves out.
        let woken = self.settle() != SLEEPING;
        if !woken {
            count.sleeping.fetch_sub(1, Ordering::SeqCst);
        }
        match found {
            Some(j) => Slept::Found(j, woken),
            None if woken => {
                if exit {
                    count.stop_searching();
                    Slept::Exit
                } else {
                    Slept::Woke
                }
            }
            None if exit => Slept::Exit,
            None => Slept::Expired,
        }
    }

    /// Waits on the futex while the word reads `SLEEPING`, for at most `timeout`.
    #[cfg(not(loom))]
    fn futex_wait_while_sleeping(&self, timeout: Option<Duration>) {
        // A waker's claim (WAKING) ends the wait; `settle` waits out the rest of its wake-up.
        let Some(d) = timeout else {
            while self.state.load(Ordering::Acquire) == SLEEPING {
                crate::sys::futex_wait(&self.state, SLEEPING);
            }
            return;
        };
        let deadline = std::time::Instant::now() + d;
        while self.state.load(Ordering::Acquire) == SLEEPING {
            let now = std::time::Instant::now();
            if now >= deadline {
                return;
            }
            crate::sys::futex_wait_for(&self.state, SLEEPING, deadline - now);
        }
    }

    /// Under loom a sleep never runs out: the models show that no work depends on the
    /// safety net, only on the publishers' wake-ups and the sleepers' last searches.
    #[cfg(loom)]
    fn futex_wait_while_sleeping(&self, _timeout: Option<Duration>) {
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

/// How many workers sleep (their word reads `SLEEPING`, or is about to) and how many search
/// for work (in their idle search, or woken and about to start it). Publishers read both: work
/// that a searcher will find needs no wake-up; work while nobody searches and someone sleeps
/// wakes one (the one-searcher rule of Go's scheduler: one worker looking while work may
/// appear, not one per push).
pub struct SleeperCount {
    sleeping: AtomicUsize,
    searching: AtomicUsize,
}

impl Default for SleeperCount {
    fn default() -> Self {
        SleeperCount::new()
    }
}

impl SleeperCount {
    /// No sleepers, no searchers.
    pub fn new() -> SleeperCount {
        SleeperCount {
            sleeping: AtomicUsize::new(0),
            searching: AtomicUsize::new(0),
        }
    }

    /// Workers counted asleep now (diagnostics).
    pub fn get(&self, order: Ordering) -> usize {
        self.sleeping.load(order)
    }

    /// Workers counted searching now (diagnostics).
    pub fn searching(&self, order: Ordering) -> usize {
        self.searching.load(order)
    }

    /// Sleeper side: the worker starts its idle search.
    #[inline]
    pub fn start_searching(&self) {
        self.searching.fetch_add(1, Ordering::SeqCst);
    }

    /// Sleeper side: the worker stops searching (it found work, or is about to sleep); whether
    /// it was the last searcher while others sleep (then, having found work, it wakes one:
    /// pushes that saw it searching woke nobody, and it may not have found theirs).
    #[inline]
    pub fn stop_searching(&self) -> bool {
        let was = self.searching.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(was > 0, "a worker stopped searching without having started");
        was == 1 && self.sleeping.load(Ordering::SeqCst) != 0
    }

    /// Publisher side, after publishing stealable work with a SeqCst fence of its own (the
    /// injector, an inbox spill): the fence, then whether a worker sleeps while none searches
    /// (then wake one with [`wake_one`]).
    #[inline]
    pub fn wake_needed_after_publish(&self) -> bool {
        fence(Ordering::SeqCst);
        self.wake_needed()
    }

    /// Publisher side, after a push onto the calling worker's *own* start deque: the light
    /// barrier (`sleep.rs`: no fence where the sleepers' heavy barrier stands in for it), then
    /// whether a worker sleeps while none searches.
    #[inline]
    pub fn wake_needed_after_local_push(&self) -> bool {
        barrier::light();
        self.wake_needed()
    }

    /// Whether a worker sleeps while none searches (after the caller's own fence).
    #[inline]
    pub fn wake_needed(&self) -> bool {
        self.sleeping.load(Ordering::SeqCst) != 0 && self.searching.load(Ordering::SeqCst) == 0
    }

    /// Publisher side, after pushing work for `n` workers at once onto its own deque (a loop's
    /// participants): the light barrier, then whether any worker sleeps (then wake up to `n`
    /// with [`wake_many`], searchers or not).
    #[inline]
    pub fn any_sleeping_after_local_push(&self) -> bool {
        barrier::light();
        self.sleeping.load(Ordering::SeqCst) != 0
    }
}

/// Wakes the first sleeping owner among `words`; whether one was woken.
#[inline]
pub fn wake_one<'a>(count: &SleeperCount, words: impl IntoIterator<Item = &'a SleepWord>) -> bool {
    words.into_iter().any(|w| w.take_sleeper(count))
}

/// Wakes up to `n` sleeping owners among `words`; how many were woken.
pub fn wake_many<'a>(
    count: &SleeperCount,
    words: impl IntoIterator<Item = &'a SleepWord>,
    n: usize,
) -> usize {
    let mut woken = 0;
    for w in words {
        if woken == n {
            break;
        }
        if w.take_sleeper(count) {
            woken += 1;
        }
    }
    woken
}

/// Wakes every sleeping or resting owner among `words` (shutdown, the last green thread
/// finished); an owner about to sleep sees the caller's state change (`may_exit`) in its last
/// look.
pub fn wake_all<'a>(count: &SleeperCount, words: impl IntoIterator<Item = &'a SleepWord>) {
    // The caller changed what `may_exit` reads before calling: the fence orders that before
    // the loads of the words, against a sleeper's store of SLEEPING, fence, and `may_exit`.
    fence(Ordering::SeqCst);
    for w in words {
        w.wake_always(count);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// `is_waiting` (what the lost-wake-up count reads) is true only while the owner waits on
    /// its futex after its last search, or rests; a waker's claim ends it at once.
    #[test]
    fn waiting_only_past_the_last_search_until_claimed() {
        let count = Arc::new(SleeperCount::new());
        let word = Arc::new(SleepWord::new());
        assert!(!word.is_waiting(), "an awake worker");

        // The last search runs while the word already reads SLEEPING: not waiting yet.
        let (w, c) = (Arc::clone(&word), Arc::clone(&count));
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let sleeper = std::thread::spawn(move || {
            let w2 = Arc::clone(&w);
            w.sleep(
                &c,
                None,
                move || {
                    seen_tx
                        .send((w2.state(Ordering::SeqCst), w2.is_waiting()))
                        .unwrap();
                    None::<()>
                },
                || false,
                || {},
            )
        });
        let (state, waiting) = seen_rx.recv().unwrap();
        assert_eq!(state, SLEEPING);
        assert!(
            !waiting,
            "in its last search the owner still looks at the queues"
        );

        // Then it waits on the futex: waiting, until a waker claims it.
        let watchdog = std::time::Instant::now();
        while !word.is_waiting() {
            assert!(
                watchdog.elapsed() < std::time::Duration::from_secs(10),
                "the sleeper never reached its futex wait"
            );
            std::thread::yield_now();
        }
        assert!(wake_one(&count, [&*word]), "the sleeper is woken");
        assert!(!word.is_waiting(), "claimed: no longer waiting");
        assert!(matches!(sleeper.join().unwrap(), Slept::Woke));

        // A resting worker looks at no queue either.
        word.announce_rest();
        assert!(word.is_waiting());
        word.set_awake();
        assert!(!word.is_waiting());
    }
}
