//! Folding a loop's items into one value, in item order, whatever order the participants took
//! them in (so `collect` keeps order and `reduce` needs only associativity).

use super::engine::{drive_catching, drop_quietly, Sink};
use super::schedule::Schedule;
use std::ops::Range;
use std::sync::Mutex;

/// One participant's partial results: maximal runs of consecutive items it took, each folded.
struct Runs<'f, A, F, C> {
    runs: Vec<(Range<usize>, A)>,
    fold: &'f F,
    combine: &'f C,
}

impl<A, F, C> Sink for Runs<'_, A, F, C>
where
    F: Fn(Range<usize>) -> A,
    C: Fn(A, A) -> A,
{
    fn consume(&mut self, items: Range<usize>) {
        let part = (self.fold)(items.clone());
        match self.runs.last_mut() {
            Some((run, _)) if run.end == items.start => {
                let (run, acc) = self.runs.pop().expect("a last run");
                self.runs
                    .push((run.start..items.end, (self.combine)(acc, part)));
            }
            _ => self.runs.push((items, part)),
        }
    }

    fn discard(self) {
        for (_, a) in self.runs {
            drop_quietly(a);
        }
    }
}

/// Folds items `0..items` with `schedule`: `fold(r)` folds one take `r`, `combine(a, b)` joins
/// the results of two neighbouring stretches (`a` before `b`). `None` when `items` is 0.
#[track_caller]
pub(crate) fn fold_in_order<A, F, C>(
    items: usize,
    schedule: &Schedule,
    fold: F,
    combine: C,
) -> Option<A>
where
    A: Send,
    F: Fn(Range<usize>) -> A + Sync,
    C: Fn(A, A) -> A + Sync,
{
    let parts: Mutex<Vec<(Range<usize>, A)>> = Mutex::new(Vec::new());
    let outcome = drive_catching(
        items,
        schedule,
        || Runs {
            runs: Vec::new(),
            fold: &fold,
            combine: &combine,
        },
        |sink| {
            parts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(sink.runs)
        },
    );
    let parts = in_item_order(parts, outcome);
    parts.into_iter().reduce(combine)
}

/// One participant's accumulators: one per maximal run of consecutive items it took, each run
/// folded from a fresh `start()` in item order.
struct Accumulators<'f, A, S, F> {
    runs: Vec<(Range<usize>, A)>,
    start: &'f S,
    feed: &'f F,
}

impl<A, S, F> Sink for Accumulators<'_, A, S, F>
where
    S: Fn() -> A,
    F: Fn(A, Range<usize>) -> A,
{
    fn consume(&mut self, items: Range<usize>) {
        match self.runs.pop() {
            Some((run, acc)) if run.end == items.start => {
                let acc = (self.feed)(acc, items.clone());
                self.runs.push((run.start..items.end, acc));
            }
            last => {
                self.runs.extend(last);
                let acc = (self.feed)((self.start)(), items.clone());
                self.runs.push((items, acc));
            }
        }
    }
}

/// Folds items `0..items` with `schedule` into one accumulator per maximal run of consecutive
/// items a participant took (rayon's `fold`: an accumulator per split): each run starts from
/// `start()` and `feed(acc, r)` folds a take `r` into it. The accumulators come back in item
/// order; none when `items` is 0.
#[track_caller]
pub(crate) fn fold_runs<A, S, F>(items: usize, schedule: &Schedule, start: S, feed: F) -> Vec<A>
where
    A: Send,
    S: Fn() -> A + Sync,
    F: Fn(A, Range<usize>) -> A + Sync,
{
    let parts: Mutex<Vec<(Range<usize>, A)>> = Mutex::new(Vec::new());
    let outcome = drive_catching(
        items,
        schedule,
        || Accumulators {
            runs: Vec::new(),
            start: &start,
            feed: &feed,
        },
        |sink| {
            parts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(sink.runs)
        },
    );
    in_item_order(parts, outcome)
}

/// The participants' partial results in item order, once the loop is over; after a panic
/// (`outcome` holds its payload) each finished participant's result is dropped on its own
/// (see `Sink::discard`) and the panic goes on.
fn in_item_order<A>(
    parts: Mutex<Vec<(Range<usize>, A)>>,
    outcome: Result<(), Box<dyn std::any::Any + Send>>,
) -> Vec<A> {
    let mut parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Err(p) = outcome {
        for (_, a) in parts {
            drop_quietly(a);
        }
        std::panic::resume_unwind(p);
    }
    parts.sort_unstable_by_key(|(r, _)| r.start);
    parts.into_iter().map(|(_, a)| a).collect()
}
