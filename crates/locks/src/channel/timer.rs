//! Channels that deliver time: [`after`], [`at`], [`tick`], and [`never`], which delivers
//! nothing. One timer thread (started on first use) sends at the deadlines.

use super::{bounded, Receiver, Sender, TrySendError};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Drops `tx` without disconnecting its channel: a sender count with no sender behind it, so
/// the receivers find the channel empty forever (nothing is leaked: the channel goes when its
/// receivers do).
fn keep_open<T>(tx: Sender<T>) {
    super::chan::acquire(&tx.chan.sender_count);
    drop(tx);
}

struct Timer {
    /// Deadline, sequence number (ties in order of arming), the sender and, for a tick, its
    /// period.
    due: BinaryHeap<Reverse<(Instant, u64, Slot)>>,
    seq: u64,
}

struct Slot(Sender<Instant>, Option<Duration>);

impl PartialEq for Slot {
    fn eq(&self, _: &Slot) -> bool {
        true
    }
}
impl Eq for Slot {}
impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Slot) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Slot {
    fn cmp(&self, _: &Slot) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

fn timer() -> &'static (Mutex<Timer>, Condvar) {
    static TIMER: OnceLock<(Mutex<Timer>, Condvar)> = OnceLock::new();
    TIMER.get_or_init(|| {
        std::thread::Builder::new()
            .name("footprint-channel-timer".into())
            .spawn(run)
            .expect("footprint::channel: could not start the timer thread of after/tick");
        (
            Mutex::new(Timer {
                due: BinaryHeap::new(),
                seq: 0,
            }),
            Condvar::new(),
        )
    })
}

fn arm(at: Instant, tx: Sender<Instant>, period: Option<Duration>) {
    let (lock, cv) = timer();
    let mut t = lock.lock().unwrap_or_else(|e| e.into_inner());
    t.seq += 1;
    let seq = t.seq;
    t.due.push(Reverse((at, seq, Slot(tx, period))));
    cv.notify_one();
}

/// The timer thread: sends at each deadline, re-arms ticks, drops what nobody receives.
fn run() {
    let (lock, cv) = timer();
    let mut t = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        while t.due.peek().is_some_and(|Reverse((at, _, _))| *at <= now) {
            let Reverse((at, _, Slot(tx, period))) = t.due.pop().expect("peeked");
            match (tx.try_send(now), period) {
                (Err(TrySendError::Disconnected(_)), _) => {}
                (_, Some(p)) => {
                    // A tick: next one a period later (a period from now when it fell
                    // behind: missed ticks are skipped); a tick nobody took in time is dropped
                    // (capacity 1), as in crossbeam.
                    let next = at
                        .checked_add(p)
                        .filter(|&n| n > now)
                        .or_else(|| now.checked_add(p.max(Duration::from_nanos(1))));
                    if let Some(next) = next {
                        t.seq += 1;
                        let seq = t.seq;
                        t.due.push(Reverse((next, seq, Slot(tx, Some(p)))));
                    }
                }
                // Fired: empty from now on, not disconnected (as in crossbeam).
                (_, None) => keep_open(tx),
            }
        }
        t = match t.due.peek() {
            Some(Reverse((at, _, _))) => {
                let wait = at.saturating_duration_since(Instant::now());
                cv.wait_timeout(t, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => cv.wait(t).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

/// A channel that delivers the current instant once, after `duration` (crossbeam-channel's
/// `after`); it is empty afterwards, never disconnected.
///
/// ```
/// use footprint_locks::channel::{after, select};
/// use std::time::Duration;
/// let (_tx, rx) = footprint_locks::channel::unbounded::<i32>();
/// let timed_out = select! {
///     recv(rx) -> _ => false,
///     recv(after(Duration::from_millis(10))) -> _ => true,
/// };
/// assert!(timed_out);
/// ```
pub fn after(duration: Duration) -> Receiver<Instant> {
    match Instant::now().checked_add(duration) {
        Some(at) => self::at(at),
        None => never(),
    }
}

/// A channel that delivers the current instant once, at `when` (crossbeam-channel's `at`).
pub fn at(when: Instant) -> Receiver<Instant> {
    let (tx, rx) = bounded(1);
    let now = Instant::now();
    if when <= now {
        // Due already: ready at once (a select on `after(Duration::ZERO)` finds it ready, as in
        // crossbeam), without a round trip through the timer thread.
        let _ = tx.try_send(now);
        keep_open(tx);
    } else {
        arm(when, tx, None);
    }
    rx
}

/// A channel that delivers the current instant every `period` (crossbeam-channel's `tick`);
/// it holds one tick at most, and a tick nobody received in time is dropped.
///
/// ```
/// let ticks = footprint_locks::channel::tick(std::time::Duration::from_millis(2));
/// let a = ticks.recv().unwrap();
/// let b = ticks.recv().unwrap();
/// assert!(b > a);
/// ```
pub fn tick(period: Duration) -> Receiver<Instant> {
    let (tx, rx) = bounded(1);
    let now = Instant::now();
    match now.checked_add(period) {
        Some(first) if period.is_zero() => {
            // A zero period: the first tick is due now, ready at once like `after(ZERO)`.
            let _ = tx.try_send(now);
            arm(first, tx, Some(period));
        }
        Some(first) => arm(first, tx, Some(period)),
        None => keep_open(tx),
    }
    rx
}

/// A channel that never delivers anything and never disconnects (crossbeam-channel's
/// `never`): a select arm on it is never chosen.
///
/// ```
/// use footprint_locks::channel::{never, select};
/// let r = never::<u32>();
/// let picked = select! {
///     recv(r) -> _ => "never",
///     default => "default",
/// };
/// assert_eq!(picked, "default");
/// ```
pub fn never<T>() -> Receiver<T> {
    let (tx, rx) = bounded(0);
    keep_open(tx);
    rx
}
