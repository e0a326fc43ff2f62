//! What a worker's idle search keeps between two idle spells, and how long the search is.
//!
//! A worker without work polls the other workers' queues in rounds whose waits double from one
//! pause up to `2^MAX_WAIT_SHIFT` (128) pauses; [`BASE_ROUNDS`] rounds make the base search
//! (≈ 1800 pauses: each poll reads the ends of a busy worker's deque, whose next push and pop then
//! miss in cache, so the fast polls are few).
//!
//! # How long to search
//!
//! Sleeping is not free for the *busy* workers: the sleeper's heavy barrier interrupts every CPU
//! that runs a worker of the runtime, and the next publisher that finds it asleep pays a futex
//! wake-up. A worker woken again before it had slept as long as it had searched was put to sleep
//! by a search too short for the rate at which work appears (one busy worker that spawns and
//! joins at once: each spawn wakes the sleeper, which finds the thread already joined and goes
//! back to sleep; on 2 workers that cycle cost the spawner a quarter of its speed, and a sleeper
//! that never slept restored it). Such a worker doubles its next search, up to
//! `2^MAX_EXTENSION_SHIFT` times the base; a sleep longer than the search before it (work is
//! sparse) restores the base. The extension adds rounds at the longest wait only, so a longer
//! search polls the busy workers no more often than the base search's last rounds do: it trades
//! sleep/wake cycles for polls at that rate. The rule compares two durations measured on the
//! same worker, so it holds at any worker count and clock rate. In a runtime with more workers
//! than CPUs the search keeps its base length: there a sleeping worker gives its CPU to a busy
//! one. (Not the kernel's count of runnable threads: with one worker per CPU that count sits at
//! the CPU count whenever the workers are busy, and the searching worker itself is one of them,
//! so any passing thread made the answer flip.)

use std::cell::Cell;

/// Rounds of the base search.
const BASE_ROUNDS: u32 = 20;
/// The longest wait between two polls is `2^MAX_WAIT_SHIFT` pauses.
const MAX_WAIT_SHIFT: u32 = 7;
/// At most `2^MAX_EXTENSION_SHIFT` times the base search's rounds at the longest wait.
const MAX_EXTENSION_SHIFT: u32 = 6;

/// The idle search's state of one worker (owner-only, in `WorkerLocal`).
///
/// - the next round of the search: kept when what the last search found was a stale queue
///   entry (nothing ran), so that such finds do not restart its fast polling;
/// - where the search stopped when it found the job that the worker's `run` started with;
/// - whether the worker is counted among the searching workers (`sleep.rs`): from the start of
///   its idle search, or from its waker's wake-up, until it finds work or sleeps;
/// - how long its searches are (see the module docs), and the tick its current search began.
#[derive(Debug, Default)]
pub(crate) struct IdleState {
    round: Cell<u32>,
    resume: Cell<u32>,
    searching: Cell<bool>,
    /// Rounds at the longest wait are multiplied by `2^extension`.
    extension: Cell<u32>,
    began: Cell<u64>,
    /// A look of this search left a thread to the worker whose running thread woke it
    /// (`Inbox::steal`: still in its grace).
    left_young: Cell<bool>,
}

impl IdleState {
    /// The round a search entered at tick `now` starts at: 0 (a new search, which began at
    /// `now`) unless the last find was stale (the search goes on, from where it stopped). The
    /// next search starts afresh unless told otherwise.
    #[inline]
    pub(crate) fn take_start_round(&self, now: u64) -> u32 {
        let round = self.round.replace(0);
        if round == 0 {
            self.began.set(now);
        }
        round
    }

    /// Rounds in a search of the current length.
    #[inline]
    pub(crate) fn rounds(&self) -> u32 {
        MAX_WAIT_SHIFT + ((BASE_ROUNDS - MAX_WAIT_SHIFT) << self.extension.get())
    }

    /// Pause instructions to wait after poll `round` found nothing.
    #[inline]
    pub(crate) fn wait_after(round: u32) -> u32 {
        1 << round.min(MAX_WAIT_SHIFT)
    }

    /// The search found nothing and the worker slept from tick `asleep_from` to `now`; `woken`:
    /// a publisher ended the sleep (else the safety net did). Sets the next search's length;
    /// `may_extend` false keeps it at the base (the runtime has more workers than CPUs: a longer
    /// search would burn a CPU that a busy worker waits for).
    #[inline]
    pub(crate) fn slept(&self, asleep_from: u64, now: u64, woken: bool, may_extend: bool) {
        let searched = asleep_from.wrapping_sub(self.began.get());
        let slept = now.wrapping_sub(asleep_from);
        let next = if woken && may_extend && slept < searched {
            (self.extension.get() + 1).min(MAX_EXTENSION_SHIFT)
        } else {
            0
        };
        self.extension.set(next);
    }

    /// The search found a job after `round` rounds: a stale find resumes after it.
    #[inline]
    pub(crate) fn found_at(&self, round: u32) {
        self.round.set(round);
    }

    /// Work is about to run: the next search starts afresh, unless the work turns out stale
    /// ([`stale_found`](Self::stale_found)).
    #[inline]
    pub(crate) fn work_runs(&self) {
        self.resume.set(self.round.replace(0));
    }

    /// What `run` started with was a stale entry: the next search goes on where the last one
    /// stopped.
    #[inline]
    pub(crate) fn stale_found(&self) {
        self.round.set(self.resume.get());
    }

    /// A look found a thread still in its grace on another worker.
    #[inline]
    pub(crate) fn left_young(&self) {
        self.left_young.set(true);
    }

    /// Whether a look since the last call found a thread in its grace.
    #[inline]
    pub(crate) fn take_left_young(&self) -> bool {
        self.left_young.replace(false)
    }

    /// Marks this worker searching or not; returns whether it was.
    #[inline]
    pub(crate) fn set_searching(&self, searching: bool) -> bool {
        self.searching.replace(searching)
    }
}

#[cfg(test)]
mod tests {
    use super::IdleState;

    use super::{BASE_ROUNDS, MAX_EXTENSION_SHIFT, MAX_WAIT_SHIFT};

    #[test]
    fn a_stale_find_resumes_the_search_where_it_stopped() {
        let s = IdleState::default();
        assert_eq!(s.take_start_round(0), 0);
        s.found_at(7);
        s.work_runs();
        s.stale_found();
        assert_eq!(s.take_start_round(0), 7);
        // Taken: the following search starts afresh.
        assert_eq!(s.take_start_round(0), 0);
    }

    #[test]
    fn base_search_is_the_base_rounds() {
        let s = IdleState::default();
        assert_eq!(s.rounds(), BASE_ROUNDS);
        let pauses: u32 = (0..BASE_ROUNDS).map(IdleState::wait_after).sum();
        // 1 + 2 + ... + 64, then 13 rounds of 128.
        assert_eq!(pauses, 127 + 13 * 128);
    }

    #[test]
    fn quick_wake_ups_double_the_search_up_to_the_cap() {
        let s = IdleState::default();
        let mut at_longest = BASE_ROUNDS - MAX_WAIT_SHIFT;
        for _ in 0..MAX_EXTENSION_SHIFT {
            // Searched 100 ticks (from 1000), slept 10, woken.
            assert_eq!(s.take_start_round(1000), 0);
            s.slept(1100, 1110, true, true);
            at_longest *= 2;
            assert_eq!(s.rounds(), MAX_WAIT_SHIFT + at_longest);
        }
        s.take_start_round(1000);
        s.slept(1100, 1110, true, true);
        assert_eq!(s.rounds(), MAX_WAIT_SHIFT + at_longest, "capped");
        for round in 0..s.rounds() {
            assert!(IdleState::wait_after(round) <= 1 << MAX_WAIT_SHIFT);
        }
    }

    #[test]
    fn a_long_sleep_or_an_expired_one_restores_the_base() {
        let s = IdleState::default();
        s.take_start_round(0);
        s.slept(100, 110, true, true);
        assert!(s.rounds() > BASE_ROUNDS);
        s.take_start_round(0);
        s.slept(100, 300, true, true);
        assert_eq!(s.rounds(), BASE_ROUNDS, "slept longer than it searched");
        s.take_start_round(0);
        s.slept(100, 110, true, true);
        s.take_start_round(0);
        s.slept(100, 110, false, true);
        assert_eq!(s.rounds(), BASE_ROUNDS, "the safety net ended the sleep");
        s.take_start_round(0);
        s.slept(100, 110, true, false);
        assert_eq!(s.rounds(), BASE_ROUNDS, "oversubscribed: no extension");
    }

    #[test]
    fn a_stale_resumed_search_counts_from_where_it_began() {
        let s = IdleState::default();
        s.take_start_round(1000);
        s.found_at(3);
        s.work_runs();
        s.stale_found();
        // Resumed at tick 1090: the search began at 1000, so 100 ticks searched > 50 slept.
        assert_eq!(s.take_start_round(1090), 3);
        s.slept(1100, 1150, true, true);
        assert!(s.rounds() > BASE_ROUNDS);
    }

    #[test]
    fn work_that_ran_restarts_the_search() {
        let s = IdleState::default();
        s.found_at(5);
        s.work_runs();
        assert_eq!(s.take_start_round(0), 0);
    }

    #[test]
    fn searching_flag_reports_the_previous_value() {
        let s = IdleState::default();
        assert!(!s.set_searching(true));
        assert!(s.set_searching(false));
        assert!(!s.set_searching(false));
    }
}
