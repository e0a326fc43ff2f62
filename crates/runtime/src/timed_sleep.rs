//! `sleep` and `sleep_until`: a green thread parks on the runtime's timer thread (its worker runs
//! other green threads meanwhile); an OS thread outside a runtime sleeps with `std::thread`.

use crate::{context, parking, timer};
use footprint_locks::SchedulerHook;
use std::time::{Duration, Instant};

/// Puts the calling thread to sleep for at least `dur`.
///
/// On a green thread the worker runs other green threads meanwhile: the thread parks and the
/// runtime's timer thread wakes it once the deadline has passed. On an OS thread outside any
/// runtime it is `std::thread::sleep`. Never returns early; it returns late by the timer's and
/// the scheduler's delay (the README's "Reliability" section has the figures).
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let slept = rt.block_on(|| {
///     let t0 = Instant::now();
///     footprint::sleep(Duration::from_millis(2));
///     t0.elapsed()
/// });
/// assert!(slept >= Duration::from_millis(2));
/// # Ok::<(), footprint::Error>(())
/// ```
#[track_caller]
pub fn sleep(dur: Duration) {
    match Instant::now().checked_add(dur) {
        Some(deadline) => sleep_until(deadline),
        // Past the end of `Instant`: sleeps forever, as `std::thread::sleep(Duration::MAX)` does.
        None => loop {
            sleep_until(Instant::now() + Duration::from_secs(3600));
        },
    }
}

/// Puts the calling thread to sleep until `deadline` (returns at once if it has passed).
///
/// Same rules as [`sleep`]: never early; a green thread parks on the runtime's timer.
///
/// ```
/// use std::time::{Duration, Instant};
/// let deadline = Instant::now() + Duration::from_millis(1);
/// footprint::sleep_until(deadline); // an OS thread: std::thread::sleep
/// assert!(Instant::now() >= deadline);
/// ```
#[track_caller]
pub fn sleep_until(deadline: Instant) {
    if context::current_task_ptr().is_null() {
        // An OS thread (also a worker outside a green thread, e.g. block_in_place's caller).
        loop {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            std::thread::sleep(deadline - now);
        }
    }
    if Instant::now() >= deadline {
        return;
    }
    // One timer entry; the timer unparks it only once `deadline` has passed, so every earlier
    // (spurious) return from park just parks again and the entry still wakes it at the deadline.
    timer::wake_at(deadline, crate::hook::GREEN_HOOK.current_unparker());
    crate::watch::note::note_current(
        crate::watch::record::WaitKind::Sleep,
        0,
        Some(std::panic::Location::caller()),
    );
    while Instant::now() < deadline {
        parking::park_current();
    }
}
