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
    let mut parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Err(p) = outcome {
        // The finished participants' results, each dropped on its own before the panic goes
        // on (see `Sink::discard`).
        for (_, a) in parts {
            drop_quietly(a);
        }
        std::panic::resume_unwind(p);
    }
    parts.sort_unstable_by_key(|(r, _)| r.start);
    parts.into_iter().map(|(_, a)| a).reduce(combine)
}
