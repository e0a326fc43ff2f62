//! The channel on OS threads: semantics (rendezvous, disconnection, timeouts, errors), a
//! proptest of operation sequences against a `VecDeque` model, and exact-count MPMC stress.
#![cfg(not(loom))]

use footprint_locks::channel::{
    self, RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError,
};
use proptest::prelude::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::iters;

#[test]
fn buffered_messages_survive_the_senders() {
    let (tx, rx) = channel::bounded(3);
    for i in 0..3 {
        tx.send(i).unwrap();
    }
    drop(tx);
    assert_eq!(rx.len(), 3);
    assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(rx.recv(), Err(RecvError));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

#[test]
fn send_without_receivers_returns_the_message() {
    let (tx, rx) = channel::unbounded();
    drop(rx);
    assert_eq!(
        tx.send(String::from("m")),
        Err(SendError(String::from("m")))
    );
    let (tx, rx) = channel::bounded(0);
    drop(rx);
    assert_eq!(tx.try_send(5), Err(TrySendError::Disconnected(5)));
}

#[test]
fn buffered_messages_are_dropped_with_the_last_receiver() {
    let token = Arc::new(());
    let (tx, rx) = channel::bounded(4);
    tx.send(token.clone()).unwrap();
    tx.send(token.clone()).unwrap();
    assert_eq!(Arc::strong_count(&token), 3);
    drop(rx);
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "dropped with the last receiver"
    );
}

#[test]
fn rendezvous_send_waits_for_a_receiver() {
    let (tx, rx) = channel::bounded(0);
    assert_eq!(tx.capacity(), Some(0));
    assert!(tx.try_send(1).unwrap_err().is_full(), "no receiver waits");
    let taken = Arc::new(AtomicUsize::new(0));
    let t = taken.clone();
    let h = std::thread::spawn(move || {
        let v = rx.recv().unwrap();
        t.store(1, Ordering::SeqCst);
        v
    });
    tx.send(42).unwrap();
    // A rendezvous send returns only after a receiver took the message.
    assert_eq!(h.join().unwrap(), 42);
    assert!(taken.load(Ordering::SeqCst) == 1);
}

#[test]
fn a_blocked_sender_learns_the_receivers_are_gone() {
    let (tx, rx) = channel::bounded(1);
    tx.send(1).unwrap();
    std::thread::scope(|s| {
        let h = s.spawn(|| tx.send(2));
        // Parked or not yet sending: losing the receivers fails the send with its message.
        assert!(tx.try_send(3).unwrap_err().is_full());
        drop(rx);
        assert_eq!(h.join().unwrap(), Err(SendError(2)));
    });
}

#[test]
fn a_blocked_receiver_learns_the_senders_are_gone() {
    let (tx, rx) = channel::unbounded::<u8>();
    let h = std::thread::spawn(move || rx.recv());
    drop(tx);
    assert_eq!(h.join().unwrap(), Err(RecvError));
}

#[test]
fn timeouts_never_end_early() {
    let (tx, rx) = channel::bounded::<u8>(0);
    let d = Duration::from_millis(3);
    let start = Instant::now();
    assert_eq!(rx.recv_timeout(d), Err(RecvTimeoutError::Timeout));
    assert!(start.elapsed() >= d);
    let start = Instant::now();
    assert_eq!(tx.send_timeout(9, d).unwrap_err().into_inner(), 9);
    assert!(start.elapsed() >= d);
    // The timed-out waiters left nothing behind: a later pair still meets.
    std::thread::scope(|s| {
        s.spawn(|| tx.send(1).unwrap());
        assert_eq!(rx.recv(), Ok(1));
    });
}

#[test]
fn capacity_that_cannot_be_allocated_is_an_error() {
    let e = channel::try_bounded::<[u8; 64]>(usize::MAX / 2).unwrap_err();
    assert!(e.to_string().contains("smaller capacity"), "{e}");
    let r = std::panic::catch_unwind(|| channel::bounded::<u64>(usize::MAX));
    let msg = r.unwrap_err();
    let msg = msg.downcast_ref::<String>().expect("a formatted message");
    assert!(msg.contains("bounded(18446744073709551615)"), "{msg}");
    assert_eq!(channel::unbounded::<u8>().0.capacity(), None);
}

/// One operation of the model test.
#[derive(Clone, Debug)]
enum Op {
    Send(u16),
    Recv,
    DropSenders,
    DropReceivers,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<u16>().prop_map(Op::Send),
        6 => Just(Op::Recv),
        1 => Just(Op::DropSenders),
        1 => Just(Op::DropReceivers),
    ]
}

proptest! {
    /// Non-blocking operations on one thread against a `VecDeque` with the same capacity rules.
    #[test]
    fn matches_a_vecdeque_model(cap in prop::option::of(0usize..5), ops in prop::collection::vec(op(), 0..64)) {
        let (tx, rx) = match cap {
            Some(c) => channel::bounded(c),
            None => channel::unbounded(),
        };
        let (mut tx, mut rx) = (Some(tx), Some(rx));
        let mut model: VecDeque<u16> = VecDeque::new();
        let limit = cap.unwrap_or(usize::MAX);
        for op in ops {
            match op {
                Op::Send(v) => {
                    let Some(t) = &tx else { continue };
                    let got = t.try_send(v);
                    if rx.is_none() {
                        prop_assert_eq!(got, Err(TrySendError::Disconnected(v)));
                    } else if model.len() < limit {
                        prop_assert_eq!(got, Ok(()));
                        model.push_back(v);
                    } else {
                        prop_assert_eq!(got, Err(TrySendError::Full(v)));
                    }
                }
                Op::Recv => {
                    let Some(r) = &rx else { continue };
                    let got = r.try_recv();
                    match model.pop_front() {
                        Some(v) => prop_assert_eq!(got, Ok(v)),
                        None if tx.is_none() => prop_assert_eq!(got, Err(TryRecvError::Disconnected)),
                        None => prop_assert_eq!(got, Err(TryRecvError::Empty)),
                    }
                }
                Op::DropSenders => tx = None,
                Op::DropReceivers => {
                    rx = None;
                    model.clear();
                }
            }
            if let Some(r) = &rx {
                prop_assert_eq!(r.len(), model.len());
                prop_assert_eq!(r.is_empty(), model.is_empty());
            }
        }
    }
}

/// `producers` × `per` distinct messages through one channel to `consumers` threads: every
/// message arrives exactly once (sum and count), and each producer's messages in order.
fn mpmc(cap: Option<usize>, producers: usize, consumers: usize, per: usize) {
    let (tx, rx) = match cap {
        Some(c) => channel::bounded(c),
        None => channel::unbounded(),
    };
    let hs: Vec<_> = (0..consumers)
        .map(|_| {
            let rx = rx.clone();
            std::thread::spawn(move || {
                let mut last = vec![None::<usize>; producers];
                let (mut n, mut sum) = (0usize, 0usize);
                for (p, i) in rx.iter() {
                    assert!(last[p] < Some(i), "producer {p}: {i} after {:?}", last[p]);
                    last[p] = Some(i);
                    n += 1;
                    sum += i;
                }
                (n, sum)
            })
        })
        .collect();
    drop(rx);
    let ps: Vec<_> = (0..producers)
        .map(|p| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    tx.send((p, i)).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    for p in ps {
        p.join().unwrap();
    }
    let (n, sum) = hs
        .into_iter()
        .map(|h| h.join().unwrap())
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert_eq!(n, producers * per);
    assert_eq!(sum, producers * per * (per - 1) / 2);
}

#[test]
fn mpmc_exact_counts_on_os_threads() {
    let per = iters(20_000);
    for cap in [Some(0), Some(1), Some(64), None] {
        mpmc(cap, 4, 4, per);
    }
}
