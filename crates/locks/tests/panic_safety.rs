//! What happens to user values when a user callback panics (the crate README's list): each
//! value is dropped at most once, the others dropped after or leaked, and the panic reaches the
//! caller. Values count their drops (`Probe`), so a double drop fails the test (or aborts it).
#![cfg(not(loom))]

use footprint_locks::channel;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Drop counters, one per value.
#[derive(Clone)]
struct Drops(Arc<Vec<AtomicUsize>>);

impl Drops {
    fn new(n: usize) -> Drops {
        Drops(Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect()))
    }
    fn of(&self, i: usize) -> usize {
        self.0[i].load(Ordering::SeqCst)
    }
    fn all(&self) -> Vec<usize> {
        (0..self.0.len()).map(|i| self.of(i)).collect()
    }
    fn probe(&self, id: usize, panics: bool) -> Probe {
        Probe {
            id,
            panics,
            drops: self.clone(),
        }
    }
}

/// A value that counts its drops and, if `panics`, panics in its first one ("first drop").
/// A second drop panics with "double drop" (and, during an unwind, aborts the process).
struct Probe {
    id: usize,
    panics: bool,
    drops: Drops,
}

impl Drop for Probe {
    fn drop(&mut self) {
        let before = self.drops.0[self.id].fetch_add(1, Ordering::SeqCst);
        if before > 0 {
            panic!("double drop");
        }
        if self.panics {
            panic!("first drop");
        }
    }
}

fn message(p: &(dyn std::any::Any + Send)) -> &str {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("?")
}

/// crossbeam-channel's `panic_on_drop`: two buffered messages whose destructors panic, the
/// sender gone, the receiver dropped inside `catch_unwind`. The first message's panic comes
/// out; it was dropped once; the second is leaked (dropping it during the unwind would abort).
fn last_receiver_drops_panicking_messages(cap: Option<usize>) {
    let drops = Drops::new(2);
    let (tx, rx) = match cap {
        Some(c) => channel::bounded(c),
        None => channel::unbounded(),
    };
    tx.send(drops.probe(0, true)).unwrap();
    tx.send(drops.probe(1, true)).unwrap();
    drop(tx);
    let r = catch_unwind(AssertUnwindSafe(move || drop(rx)));
    assert_eq!(message(&*r.unwrap_err()), "first drop");
    assert_eq!(
        drops.all(),
        [1, 0],
        "the first dropped once, the second leaked"
    );
}

#[test]
fn bounded_receiver_drop_with_panicking_messages() {
    last_receiver_drops_panicking_messages(Some(2));
}

#[test]
fn unbounded_receiver_drop_with_panicking_messages() {
    last_receiver_drops_panicking_messages(None);
}

/// The same with the receiver dropped first and the sender last: the buffer drains when the
/// last receiver goes, whoever holds the last reference to the channel.
#[test]
fn receiver_dropped_before_the_sender() {
    let drops = Drops::new(3);
    let (tx, rx) = channel::bounded(3);
    tx.send(drops.probe(0, false)).unwrap();
    tx.send(drops.probe(1, true)).unwrap();
    tx.send(drops.probe(2, true)).unwrap();
    let r = catch_unwind(AssertUnwindSafe(move || drop(rx)));
    assert_eq!(message(&*r.unwrap_err()), "first drop");
    assert_eq!(drops.all(), [1, 1, 0]);
    // The channel is disconnected: the sender gets its message back, and drops it itself.
    let back = tx.send(drops.probe(0, false)).unwrap_err().into_inner();
    std::mem::forget(back); // (its counter is already 1)
    drop(tx);
    assert_eq!(drops.all(), [1, 1, 0]);
}

/// Messages without panicking destructors are all dropped, once, when the last receiver goes.
#[test]
fn receiver_drop_drops_every_buffered_message_once() {
    let drops = Drops::new(5);
    let (tx, rx) = channel::unbounded();
    for i in 0..5 {
        tx.send(drops.probe(i, false)).unwrap();
    }
    drop(rx);
    assert_eq!(drops.all(), [1; 5]);
    drop(tx);
    assert_eq!(drops.all(), [1; 5]);
}

/// A sender waiting on a zero-capacity channel keeps its message in its own node: when the
/// last receiver goes, the message comes back in `SendError` (the channel never drops it), and
/// the caller's drop of it is the only one.
#[test]
fn rendezvous_sender_gets_a_panicking_message_back() {
    let drops = Drops::new(1);
    let (tx, rx) = channel::bounded::<Probe>(0);
    let d = drops.clone();
    let sender = std::thread::spawn(move || tx.send(d.probe(0, true)).unwrap_err().into_inner());
    // Whether the sender is parked yet or not, disconnection hands the message back.
    drop(rx);
    let back = sender.join().unwrap();
    assert_eq!(drops.all(), [0]);
    let r = catch_unwind(AssertUnwindSafe(move || drop(back)));
    assert_eq!(message(&*r.unwrap_err()), "first drop");
    assert_eq!(drops.all(), [1]);
}

/// A message handed straight to a waiting receiver (zero capacity) is the receiver's to drop.
#[test]
fn rendezvous_receiver_owns_a_panicking_message() {
    let drops = Drops::new(1);
    let (tx, rx) = channel::bounded::<Probe>(0);
    let d = drops.clone();
    let sender = std::thread::spawn(move || tx.send(d.probe(0, true)).is_ok());
    let m = rx.recv().unwrap();
    assert!(sender.join().unwrap());
    assert_eq!(drops.all(), [0]);
    let r = catch_unwind(AssertUnwindSafe(move || drop(m)));
    assert_eq!(message(&*r.unwrap_err()), "first drop");
    drop(rx);
    assert_eq!(drops.all(), [1]);
}

/// A consumer whose loop over `try_iter` panics dropping one message leaves the rest in the
/// channel, in order, for the next receive; the last receiver's drop drops what remains, once.
#[test]
fn try_iter_consumer_panicking_on_a_message() {
    let drops = Drops::new(4);
    let (tx, rx) = channel::bounded(4);
    for i in 0..4 {
        tx.send(drops.probe(i, i == 1)).unwrap();
    }
    let r = catch_unwind(AssertUnwindSafe(|| {
        for m in rx.try_iter() {
            drop(m);
        }
    }));
    assert_eq!(message(&*r.unwrap_err()), "first drop");
    assert_eq!(drops.all(), [1, 1, 0, 0]);
    assert_eq!(rx.len(), 2);
    assert_eq!(rx.try_iter().next().map(|m| m.id), Some(2));
    drop((tx, rx));
    assert_eq!(drops.all(), [1; 4]);
}

/// The last sender's drop touches no message: the buffered ones stay for the receivers.
#[test]
fn sender_drop_leaves_the_buffer_to_the_receivers() {
    let drops = Drops::new(2);
    let (tx, rx) = channel::unbounded();
    tx.send(drops.probe(0, true)).unwrap();
    tx.send(drops.probe(1, false)).unwrap();
    drop(tx);
    assert_eq!(drops.all(), [0, 0]);
    let first = rx.recv().unwrap();
    assert!(catch_unwind(AssertUnwindSafe(move || drop(first))).is_err());
    assert_eq!(rx.recv().map(|m| m.id).ok(), Some(1));
    assert!(rx.recv().is_err());
    assert_eq!(drops.all(), [1, 1]);
}

/// A panic while a `Mutex` guard is held releases the lock (no poisoning: parking_lot's
/// rule) and leaves the value as the panicking code left it; `into_inner` moves it out, and
/// its one drop is the caller's.
#[test]
fn mutex_panic_while_held_and_into_inner() {
    let drops = Drops::new(1);
    let m = footprint_locks::Mutex::new((0, drops.probe(0, false)));
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut g = m.lock();
        g.0 = 1;
        panic!("in the critical section");
    }));
    assert!(r.is_err());
    assert!(
        !m.is_locked(),
        "the guard released the lock while unwinding"
    );
    assert_eq!(m.lock().0, 1, "the value keeps the panicking code's write");
    let (v, p) = m.into_inner();
    assert_eq!((v, drops.all()), (1, vec![0]));
    drop(p);
    assert_eq!(drops.all(), [1]);
}

/// A `Mutex` whose value's destructor panics: the panic comes out of the mutex's drop, once.
#[test]
fn mutex_drop_with_a_panicking_value() {
    let drops = Drops::new(1);
    let m = footprint_locks::Mutex::new(drops.probe(0, true));
    let r = catch_unwind(AssertUnwindSafe(move || drop(m)));
    assert_eq!(message(&*r.unwrap_err()), "first drop");
    assert_eq!(drops.all(), [1]);
}

/// `RwLock`: a panic under the write guard or under read guards releases the lock (no
/// poisoning) and leaves the value in place.
#[test]
fn rwlock_panic_under_write_and_read_guards() {
    let drops = Drops::new(1);
    let l = footprint_locks::RwLock::new((0, drops.probe(0, false)));
    let r = catch_unwind(AssertUnwindSafe(|| {
        l.write().0 = 7;
        let _a = l.read();
        let _b = l.read();
        panic!("under two read guards");
    }));
    assert!(r.is_err());
    assert!(!l.is_locked());
    assert_eq!(l.write().0, 7);
    drop(l);
    assert_eq!(drops.all(), [1]);
}

/// `Once`: a panicking initialiser poisons it; `call_once` then panics, `call_once_force` runs
/// and sees the poison. What the initialiser captured is dropped once, by its unwind.
#[test]
fn once_panicking_initialiser_poisons() {
    let drops = Drops::new(1);
    let once = footprint_locks::Once::new();
    let p = drops.probe(0, false);
    let r = catch_unwind(AssertUnwindSafe(|| {
        once.call_once(move || {
            let _captured = p;
            panic!("initialiser");
        })
    }));
    assert!(r.is_err());
    assert_eq!(drops.all(), [1]);
    assert!(catch_unwind(AssertUnwindSafe(|| once.call_once(|| {}))).is_err());
    let mut saw = None;
    once.call_once_force(|s| saw = Some(s.is_poisoned()));
    assert_eq!(saw, Some(true));
    assert!(once.is_completed());
}

/// `OnceLock`: a panicking initialiser leaves the cell empty (the next caller initialises it);
/// the value is dropped once with the cell, or not at all by the cell once `take`n.
#[test]
fn once_lock_panicking_initialiser_and_value() {
    let drops = Drops::new(3);
    let cell = footprint_locks::OnceLock::new();
    let r = catch_unwind(AssertUnwindSafe(|| {
        cell.get_or_init(|| -> Probe { panic!("initialiser") })
    }));
    assert!(r.is_err());
    assert!(cell.get().is_none());
    assert_eq!(cell.get_or_init(|| drops.probe(0, false)).id, 0);
    let mut cell = cell;
    let taken = cell.take().unwrap();
    drop(cell);
    assert_eq!(drops.of(0), 0, "a taken value is not the cell's to drop");
    drop(taken);
    // A value whose destructor panics: the cell's drop lets the one panic out.
    let cell = footprint_locks::OnceLock::new();
    assert!(cell.set(drops.probe(1, true)).is_ok());
    let r = catch_unwind(AssertUnwindSafe(move || drop(cell)));
    assert_eq!(message(&*r.unwrap_err()), "first drop");
    // `set` on a full cell gives the value back, untouched.
    let cell = footprint_locks::OnceLock::new();
    cell.set(0).unwrap();
    let back = cell.set(1).unwrap_err();
    assert_eq!(back, 1);
    assert_eq!(drops.all(), [1, 1, 0]);
}

/// `LazyLock`: a panicking initialiser is consumed (its captures dropped once) and poisons the
/// lock: later accesses panic. One never forced drops its initialiser once.
#[test]
fn lazy_lock_panicking_initialiser_poisons() {
    let drops = Drops::new(2);
    let p = drops.probe(0, false);
    let lazy = footprint_locks::LazyLock::new(move || -> u32 {
        let _captured = p;
        panic!("initialiser")
    });
    assert!(catch_unwind(AssertUnwindSafe(|| *lazy)).is_err());
    assert_eq!(drops.all(), [1, 0]);
    let r = catch_unwind(AssertUnwindSafe(|| *lazy));
    assert!(message(&*r.unwrap_err()).contains("poisoned"));
    drop(lazy);
    let p = drops.probe(1, false);
    let never = footprint_locks::LazyLock::new(move || {
        let captured = p;
        captured.id
    });
    drop(never);
    assert_eq!(drops.all(), [1, 1]);
}
