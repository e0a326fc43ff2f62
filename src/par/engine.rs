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
pub(crate) trait Sink: Sized {
    /// Runs items `items` (each item of the loop reaches exactly one `consume`, once).
    fn consume(&mut self, items: Range<usize>);

    /// Whether this participant wants no more takes (a search that found what it looks for):
    /// it stops taking, and the items nobody took are left unconsumed.
    fn finished(&self) -> bool {
        false
    }

    /// Drops what the participant gathered, after a panic stopped the loop: without letting a
    /// destructor's panic out (the loop's first panic is the one that reaches the caller, and
    /// a second one during its unwind would abort). A sink holding several values drops each
    /// on its own, so that one panicking destructor does not stop the others.
    fn discard(self) {
        drop_quietly(self);
    }
}

/// Drops `value`, swallowing a panic of its destructor (and of that panic's payload's, which
/// is leaked then): for values dropped on the way to re-raising another panic.
pub(crate) fn drop_quietly<T>(value: T) {
    if let Err(p) = panic::catch_unwind(AssertUnwindSafe(move || drop(value))) {
        if let Err(inner) = panic::catch_unwind(AssertUnwindSafe(move || drop(p))) {
            std::mem::forget(inner);
        }
    }
}

/// Runs a loop over `items` items dealt by `schedule` on the current runtime (the global one
/// outside): every participant starts from `new_sink()`, feeds it its takes and hands it to
/// `finish`. Returns after every participant has finished; re-raises the first panic of any of
/// them (no new takes start once one has panicked). A participant that panicked drops its sink
/// with [`Sink::discard`].
#[track_caller]
pub(crate) fn drive<S, N, F>(items: usize, schedule: &Schedule, new_sink: N, finish: F)
where
    S: Sink,
    N: Fn() -> S + Sync,
    F: Fn(S) + Sync,
{
    if let Err(p) = drive_catching(items, schedule, new_sink, finish) {
        panic::resume_unwind(p);
    }
}

/// [`drive`], returning the first panic's payload instead of re-raising it: for a caller that
/// holds what the participants finished with and must drop it before the panic goes on.
#[track_caller]
pub(crate) fn drive_catching<S, N, F>(
    items: usize,
    schedule: &Schedule,
    new_sink: N,
    finish: F,
) -> Result<(), Box<dyn Any + Send>>
where
    S: Sink,
    N: Fn() -> S + Sync,
    F: Fn(S) + Sync,
{
    schedule.check();
    if items == 0 {
        return Ok(());
    }
    let workers = footprint_runtime::current_num_threads();
    let deal = Deal::new(items, schedule, workers);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<Box<dyn Any + Send>>> = Mutex::new(None);
    let participate = || {
        // Outside the unwinding closure, so that a panic in `consume` leaves the sink here to be
        // discarded (dropped during the unwind, a panicking destructor in it would abort).
        let mut sink = None;
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            let s = sink.insert(new_sink());
            let mut worker = None;
            while !stop.load(Ordering::Relaxed) && !s.finished() {
                let Some(claim) = deal.next(&mut worker) else {
                    break;
                };
                s.consume(claim.items);
                // A chunk is a switch point for bandwidth control: an unreserved loop beside a
                // reserved thread that falls behind is slowed here, chunk by chunk.
                footprint_runtime::bandwidth::checkpoint();
            }
            finish(sink.take().expect("the sink is there until finished"));
        }));
        if let Err(p) = r {
            stop.store(true, Ordering::Relaxed);
            if let Some(s) = sink.take() {
                s.discard();
            }
            let mut first = failure.lock().unwrap_or_else(|e| e.into_inner());
            if first.is_none() {
                *first = Some(p);
            } else {
                drop(first);
                drop_quietly(p);
            }
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
        return Err(p);
    }
    deal.finish();
    Ok(())
}

/// Runs `participant` `n` times, potentially in parallel: `n - 1` copies are offered at once
/// (the stealable halves of `n - 1` nested `join`s, all pushed before any copy runs), as many
/// idle workers are woken in one fan-out (`wake_idle_workers`), and one copy runs inline.
/// Copies nobody took are taken back by their `join`s and run inline (finding nothing left),
/// so the loop's end waits for no sleeper, only for copies already running.
///
/// When a `join`'s inline side is done while a thief still runs its copy (typically finding
/// nothing left), it spins a little before `join` would park it: a park and a cross-worker
/// wake-up cost more than the thief's remaining few hundred nanoseconds.
fn fan_out(n: usize, participant: &(dyn Fn() + Sync)) {
    if n <= 1 {
        participant();
        return;
    }
    offer(n - 1, n - 1, participant);
}

/// Offers `left` more copies of `participant` (each the second half of a `join`, pushed before
/// the first half goes deeper), then wakes `total` workers and runs one copy inline.
fn offer(left: usize, total: usize, participant: &(dyn Fn() + Sync)) {
    if left == 0 {
        footprint_runtime::wake_idle_workers(total);
        participant();
        return;
    }
    let copy = AtomicU8::new(REST_WAITING);
    footprint_runtime::join(
        || {
            offer(left - 1, total, participant);
            let mut spins = 0;
            while copy.load(Ordering::Acquire) == REST_RUNNING && spins < SPINS_BEFORE_PARK {
                std::hint::spin_loop();
                spins += 1;
            }
        },
        || {
            copy.store(REST_RUNNING, Ordering::Release);
            participant();
            copy.store(REST_DONE, Ordering::Release);
        },
    );
}

/// States of an offered copy of a fan-out.
const REST_WAITING: u8 = 0;
const REST_RUNNING: u8 = 1;
const REST_DONE: u8 = 2;

/// How long an inline side waits for a running copy before `join` parks it (a few
/// microseconds of `spin_loop`).
const SPINS_BEFORE_PARK: u32 = 1 << 10;
