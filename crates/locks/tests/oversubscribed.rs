//! The informing locks' oversubscribed paths (the door in front of FIFO locks, the next-in-line
//! that yields instead of parking), forced on for this whole test process so that they run
//! even on a machine with idle CPUs. Exact counts; 8 threads on however many CPUs there are.
#![cfg(not(loom))]

use footprint_locks::*;
use std::sync::Arc;

mod common;
use common::{exact_counter, iters};

fn counter_test<R: lock_api::RawMutex + Send + Sync + 'static>(threads: usize, per_thread: usize)
where
    R::Guard: 'static,
{
    os::force_oversubscribed(Some(true));
    assert!(os::oversubscribed());
    exact_counter::<R>(threads, per_thread);
}

#[test]
fn ticket_through_the_door() {
    counter_test::<RawTicketLock<Informed>>(8, iters(20_000));
}

#[test]
fn mcs_through_the_door() {
    counter_test::<RawMcsLock<Informed>>(8, iters(20_000));
}

#[test]
fn array_through_the_door() {
    counter_test::<RawArrayLock<Informed>>(8, iters(20_000));
    counter_test::<RawArrayLock<Informed, 4>>(8, iters(20_000));
}

#[test]
fn ttas_and_barriers_oversubscribed() {
    counter_test::<RawTtasLock<Informed>>(8, iters(20_000));
    let b = Arc::new(TreeBarrier::<Informed>::new(8));
    let hs: Vec<_> = (0..8)
        .map(|_| {
            let b = b.clone();
            std::thread::spawn(move || (0..iters(2_000)).filter(|_| b.wait().is_leader()).count())
        })
        .collect();
    let leaders: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(leaders, iters(2_000));
}
