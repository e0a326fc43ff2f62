//! Property tests: random sequences of lock / try-lock / unlock / barrier / condvar operations
//! against a model.

#![cfg(not(loom))]

use footprint_locks::*;
use proptest::prelude::*;
use std::sync::Arc;

#[derive(Clone, Debug)]
enum Op {
    Lock(usize),
    TryLock(usize),
    UnlockLast,
    BarrierOfOne,
    CondvarTimeout,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..4usize).prop_map(Op::Lock),
        2 => (0..4usize).prop_map(Op::TryLock),
        4 => Just(Op::UnlockLast),
        1 => Just(Op::BarrierOfOne),
        1 => Just(Op::CondvarTimeout),
    ]
}

/// The four algorithms behind one object-safe interface.
fn locks() -> Vec<Box<dyn RawLock>> {
    vec![
        Box::new(RawTtasLock::<Informed>::new()),
        Box::new(RawTicketLock::<Informed>::new()),
        Box::new(RawMcsLock::<Informed>::new()),
        Box::new(RawArrayLock::<Informed, 4>::new()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// One thread: which locks are held, whether try_lock succeeds, and the published class all
    /// follow the model (a stack of held locks, released last-in first-out).
    #[test]
    fn single_thread_sequences_follow_the_model(ops in prop::collection::vec(op(), 0..60)) {
        let locks = locks();
        let cell = current_hook().class_cell();
        let mut held: Vec<(usize, HeldToken)> = Vec::new();
        let barrier = Barrier::new(1);
        let cv = Condvar::new();
        let m = Mutex::new(());
        for op in ops {
            match op {
                Op::Lock(i) => {
                    if held.iter().all(|(j, _)| *j != i) {
                        held.push((i, locks[i].lock()));
                    }
                }
                Op::TryLock(i) => {
                    let is_held = held.iter().any(|(j, _)| *j == i);
                    let r = locks[i].try_lock();
                    prop_assert_eq!(r.is_some(), !is_held, "try_lock of lock {} (held: {})", i, is_held);
                    if let Some(t) = r {
                        held.push((i, t));
                    }
                }
                Op::UnlockLast => {
                    if let Some((i, t)) = held.pop() {
                        // SAFETY: `t` is the token of the current acquisition of lock i.
                        unsafe { locks[i].unlock(t) };
                    }
                }
                Op::BarrierOfOne => {
                    prop_assert!(barrier.wait().is_leader());
                }
                Op::CondvarTimeout => {
                    let mut g = m.lock();
                    prop_assert!(cv.wait_timeout(&mut g, std::time::Duration::ZERO).timed_out());
                }
            }
            for (i, l) in locks.iter().enumerate() {
                prop_assert_eq!(l.is_locked(), held.iter().any(|(j, _)| *j == i));
            }
            // The TTAS lock (index 0) is never contended here: its holder publishes no class
            // (no thread waits to read it). Every other lock's holder publishes `Holder`.
            let expected = if held.iter().all(|(j, _)| *j == 0) {
                PriorityClass::Running
            } else {
                PriorityClass::Holder
            };
            prop_assert_eq!(cell.get(), expected);
        }
        while let Some((i, t)) = held.pop() {
            // SAFETY: as above.
            unsafe { locks[i].unlock(t) };
        }
        prop_assert_eq!(cell.get(), PriorityClass::Running);
    }

    /// Several threads run random sequences of increments on random locks: every counter ends
    /// at exactly the number of increments aimed at it.
    #[test]
    fn concurrent_random_increments_are_exact(
        plans in prop::collection::vec(prop::collection::vec(0..4usize, 0..300), 2..5)
    ) {
        let locks: Arc<Vec<Box<dyn RawLock>>> = Arc::new(locks());
        let counters: Arc<Vec<std::sync::atomic::AtomicU64>> =
            Arc::new((0..4).map(|_| std::sync::atomic::AtomicU64::new(0)).collect());
        let mut expected = [0u64; 4];
        for plan in &plans {
            for &i in plan {
                expected[i] += 1;
            }
        }
        let hs: Vec<_> = plans
            .into_iter()
            .map(|plan| {
                let (locks, counters) = (locks.clone(), counters.clone());
                std::thread::spawn(move || {
                    for i in plan {
                        let t = locks[i].lock();
                        // Non-atomic read-modify-write under the lock.
                        let v = counters[i].load(std::sync::atomic::Ordering::Relaxed);
                        counters[i].store(v + 1, std::sync::atomic::Ordering::Relaxed);
                        // SAFETY: held through `t`.
                        unsafe { locks[i].unlock(t) };
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        for i in 0..4 {
            prop_assert_eq!(counters[i].load(std::sync::atomic::Ordering::Relaxed), expected[i]);
        }
    }
}
