//! What a worker's idle search keeps between two idle spells.

use std::cell::Cell;

/// The idle search's state of one worker (owner-only, in `WorkerLocal`).
///
/// - the next round of the search: kept when what the last search found was a stale queue
///   entry (nothing ran), so that such finds do not restart its fast polling;
/// - where the search stopped when it found the job that the worker's `run` started with;
/// - whether the worker is counted among the searching workers (`sleep.rs`): from the start of
///   its idle search, or from its waker's wake-up, until it finds work or sleeps.
#[derive(Debug, Default)]
pub(crate) struct IdleState {
    round: Cell<u32>,
    resume: Cell<u32>,
    searching: Cell<bool>,
}

impl IdleState {
    /// The round a new search starts at (0 unless the last find was stale); the next search
    /// starts afresh unless told otherwise.
    #[inline]
    pub(crate) fn take_start_round(&self) -> u32 {
        self.round.replace(0)
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

    /// Marks this worker searching or not; returns whether it was.
    #[inline]
    pub(crate) fn set_searching(&self, searching: bool) -> bool {
        self.searching.replace(searching)
    }
}

#[cfg(test)]
mod tests {
    use super::IdleState;

    #[test]
    fn a_stale_find_resumes_the_search_where_it_stopped() {
        let s = IdleState::default();
        assert_eq!(s.take_start_round(), 0);
        s.found_at(7);
        s.work_runs();
        s.stale_found();
        assert_eq!(s.take_start_round(), 7);
        // Taken: the following search starts afresh.
        assert_eq!(s.take_start_round(), 0);
    }

    #[test]
    fn work_that_ran_restarts_the_search() {
        let s = IdleState::default();
        s.found_at(5);
        s.work_runs();
        assert_eq!(s.take_start_round(), 0);
    }

    #[test]
    fn searching_flag_reports_the_previous_value() {
        let s = IdleState::default();
        assert!(!s.set_searching(true));
        assert!(s.set_searching(false));
        assert!(!s.set_searching(false));
    }
}
