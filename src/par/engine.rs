//! Running one loop: participants on the current runtime's workers take items from a [`Deal`]
//! until none are left; a panic stops the loop and reaches the caller after it has stopped.

use super::deal::Deal;
use super::schedule::Schedule;
use footprint_runtime::park::current_worker;
use std::any::Any;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;

/// What a participant does with the items it takes.
pub(crate) trait Sink {
    /// Runs items `items` (each item of the loop reaches exactly one `consume`, once).
    fn consume(&mut self, items: Range<usize>);
}

/// Runs a loop over `items` items dealt by `schedule` on the current runtime (the global one
/// outside): every participant starts from `new_sink()`, feeds it its takes and hands it to
/// `finish`. Returns after every participant has finished; re-raises the first panic of any of
/// them (no new takes start once one has panicked).
#[track_caller]
pub(crate) fn drive<S, N, F>(items: usize, schedule: &Schedule, new_sink: N, finish: F)
where
    S: Sink,
    N: Fn() -> S + Sync,
    F: Fn(S) + Sync,
{
    schedule.check();
    if items == 0 {
        return;
    }
    let workers = footprint_runtime::current_num_threads();
    let deal = Deal::new(items, schedule, workers);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<Box<dyn Any + Send>>> = Mutex::new(None);
    let participate = || {
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            let mut sink = new_sink();
            let mut worker = None;
            while !stop.load(Ordering::Relaxed) {
                let Some(claim) = deal.next(&mut worker) else {
                    break;
                };
                sink.consume(claim.items);
                // A chunk is a switch point for bandwidth control: an unreserved loop beside a
                // reserved thread that falls behind is slowed here, chunk by chunk.
                footprint_runtime::bandwidth::checkpoint();
            }
            finish(sink);
        }));
        if let Err(p) = r {
            stop.store(true, Ordering::Relaxed);
            failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(p);
        }
    };
    let participants = deal.participants(workers);
    if current_worker().is_some() {
        fan_out(participants, &participate);
    } else {
        // Off the runtime's workers: move onto a green thread first, so that the participants
        // all run on workers (and the caller's OS thread only waits).
        footprint_runtime::join(|| fan_out(participants, &participate), || ());
    }
    if let Some(p) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        panic::resume_unwind(p);
    }
    deal.finish();
}

/// Runs `participant` `n` times, potentially in parallel: inline, with the rest offered to idle
/// workers (`join`); whatever nobody took runs inline afterwards (and finds nothing left).
///
/// When the inline participant is done while a thief still runs the rest (typically finding
/// nothing left), it spins a little before `join` would park it: a park and a cross-worker
/// wake-up cost more than the thief's remaining few hundred nanoseconds.
fn fan_out(n: usize, participant: &(dyn Fn() + Sync)) {
    if n <= 1 {
        participant();
        return;
    }
    let rest = AtomicU8::new(REST_WAITING);
    footprint_runtime::join(
        || {
            participant();
            let mut spins = 0;
            while rest.load(Ordering::Acquire) == REST_RUNNING && spins < SPINS_BEFORE_PARK {
                std::hint::spin_loop();
                spins += 1;
            }
        },
        || {
            rest.store(REST_RUNNING, Ordering::Release);
            fan_out(n - 1, participant);
            rest.store(REST_DONE, Ordering::Release);
        },
    );
}

/// States of the offered rest of a fan-out.
const REST_WAITING: u8 = 0;
const REST_RUNNING: u8 = 1;
const REST_DONE: u8 = 2;

/// How long the inline participant waits for a running rest before `join` parks it (a few
/// microseconds of `spin_loop`).
const SPINS_BEFORE_PARK: u32 = 1 << 10;
