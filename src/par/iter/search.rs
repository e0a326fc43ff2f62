//! Searches that stop early: `find_any`/`find_first`, `any`/`all`, `position_*`. Once an item
//! is found, stretches that cannot hold a better one are skipped and running ones stop at their
//! next item (a search for the first skips only stretches after the best found so far).

use super::producer::Producer;
use super::ParIter;
use crate::par::engine::{drive, Sink};
use crate::par::schedule::Schedule;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Which found item a search returns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// Whichever is found first in time.
    Any,
    /// The one at the lowest position.
    First,
}

/// What the participants of one search share.
struct Found<R> {
    want: Want,
    /// Start of the stretch holding the best item found so far (`usize::MAX`: none yet).
    /// Within a stretch items come in position order, so the first hit of a stretch is its
    /// best, and hits of different stretches order by their stretches' starts.
    best: AtomicUsize,
    item: Mutex<Option<(usize, R)>>,
}

impl<R> Found<R> {
    /// Whether a stretch starting at `start` can no longer improve on what was found.
    #[inline]
    fn beaten(&self, start: usize) -> bool {
        let best = self.best.load(Ordering::Relaxed);
        match self.want {
            Want::Any => best != usize::MAX,
            Want::First => best < start,
        }
    }

    fn offer(&self, start: usize, r: R) {
        let mut item = self.item.lock().unwrap_or_else(|e| e.into_inner());
        let better = match &*item {
            None => true,
            Some((at, _)) => self.want == Want::First && start < *at,
        };
        if better {
            *item = Some((start, r));
            self.best.fetch_min(start, Ordering::Relaxed);
        }
    }
}

struct Search<'a, P, F, R> {
    producer: &'a P,
    f: &'a F,
    found: &'a Found<R>,
    /// Whether the deal hands out stretches in increasing order (`Dynamic`, `Guided`), so that
    /// once one starts after the best hit, every later one does too.
    increasing: bool,
    /// Start of this participant's latest stretch.
    latest: usize,
}

impl<P, F, R> Sink for Search<'_, P, F, R>
where
    P: Producer,
    F: Fn(P::Item) -> Option<R>,
{
    fn consume(&mut self, items: Range<usize>) {
        self.latest = items.start;
        if self.found.beaten(items.start) {
            return;
        }
        let start = items.start;
        // SAFETY: the engine hands every position of 0..len to exactly one consume, once.
        let mut it = unsafe { self.producer.stretch(items) };
        while !self.found.beaten(start) {
            let Some(x) = it.next() else { return };
            if let Some(r) = (self.f)(x) {
                self.found.offer(start, r);
                return;
            }
        }
    }

    fn finished(&self) -> bool {
        // Any hit ends a search for any item. A search for the first one must see every
        // stretch before the best hit: with stretches dealt in increasing order, a participant
        // stops once its latest one started after it; with per-worker lists (`Static`,
        // `Affinity`, a bounded number of stretches) every stretch is still taken, and the
        // ones after the hit are skipped unread.
        match self.found.want {
            Want::Any => self.found.beaten(0),
            Want::First => self.increasing && self.found.beaten(self.latest),
        }
    }
}

impl<P: Producer> ParIter<P> {
    /// The result of `f` for an item where it is `Some`: the first such item by position, or
    /// any (`want`). `None` when `f` is `None` for every item.
    #[track_caller]
    pub(crate) fn search<R, F>(self, want: Want, f: F) -> Option<R>
    where
        R: Send,
        F: Fn(P::Item) -> Option<R> + Sync,
    {
        let found = Found {
            want,
            best: AtomicUsize::new(usize::MAX),
            item: Mutex::new(None),
        };
        let producer = &self.producer;
        let increasing = matches!(self.schedule, Schedule::Dynamic(_) | Schedule::Guided(_));
        drive(
            producer.len(),
            &self.schedule,
            || Search {
                producer,
                f: &f,
                found: &found,
                increasing,
                latest: 0,
            },
            |_| {},
        );
        found
            .item
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .map(|(_, r)| r)
    }
}
