//! One background thread that wakes parked threads at deadlines (`park_timeout`).

use footprint_locks::{Placement, Unparker};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

struct Entry {
    at: Instant,
    seq: u64,
    who: Unparker,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> CmpOrdering {
        // Earliest first in a max-heap.
        o.at.cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

struct Timer {
    heap: Mutex<(BinaryHeap<Entry>, u64)>,
    cv: Condvar,
}

static TIMER: OnceLock<&'static Timer> = OnceLock::new();

/// The earliest deadline of a timer entry (all runtimes), if the timer was ever used.
pub(crate) fn next_deadline() -> Option<Instant> {
    let t = TIMER.get()?;
    let g = t.heap.lock().unwrap_or_else(|e| e.into_inner());
    g.0.peek().map(|e| e.at)
}

fn timer() -> &'static Timer {
    TIMER.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::new(Timer {
            heap: Mutex::new((BinaryHeap::new(), 0)),
            cv: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("footprint-timer".into())
            .spawn(move || run(t))
            .expect("footprint: could not start the timer thread");
        t
    })
}

fn run(t: &'static Timer) {
    let mut g = t.heap.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        let mut due = Vec::new();
        while g.0.peek().is_some_and(|e| e.at <= now) {
            due.push(g.0.pop().expect("peeked").who);
        }
        if !due.is_empty() {
            drop(g);
            for u in due {
                u.unpark(Placement::Anywhere);
            }
            g = t.heap.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        g = match g.0.peek().map(|e| e.at) {
            Some(at) => {
                let wait = at.saturating_duration_since(now);
                t.cv.wait_timeout(g, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => t.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

/// Unparks `who` at `at` (a spurious wake-up if it was woken before).
pub(crate) fn wake_at(at: Instant, who: Unparker) {
    let t = timer();
    let mut g = t.heap.lock().unwrap_or_else(|e| e.into_inner());
    g.1 += 1;
    let seq = g.1;
    g.0.push(Entry { at, seq, who });
    // The timer thread waits until the earliest deadline; only a new earliest one changes
    // that (10,000 sleepers used to wake the timer thread 10,000 times).
    let earliest = g.0.peek().is_some_and(|e| e.seq == seq);
    drop(g);
    if earliest {
        t.cv.notify_one();
    }
}
