//! Loom models for every lock, barrier and the condition variable.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-locks --release --target-dir target/loom --test loom`
//! (preemptions are bounded to 2 here unless `LOOM_MAX_PREEMPTIONS` says otherwise).
#![cfg(loom)]

use footprint_locks::*;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// Serialises the models of this process: the door models force the process-wide
/// oversubscription signal, which must not change under another model's feet.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn model(f: impl Fn() + Sync + Send + 'static) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    b.check(f);
}

/// Checks `f` under loom with one preemption (for the three-thread models, whose state space is
/// large). The caller holds `SERIAL`.
fn model_one_preemption(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(1);
    b.max_branches = 100_000;
    b.check(f);
}

/// Like [`model`], with room for the longer executions of the ring channel's models (each retry
/// of a ring operation is a model read-modify-write and a yield).
fn model_ring(f: impl Fn() + Sync + Send + 'static) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    b.max_branches = 100_000;
    b.check(f);
}

/// Adds 1 to `value` with a non-atomic read-then-write under `lock`.
fn increment_under<L: RawLock>(lock: &L, value: &AtomicUsize) {
    let t = lock.lock();
    let v = value.load(Ordering::Relaxed);
    value.store(v + 1, Ordering::Relaxed);
    // SAFETY: we hold the lock through `t`.
    unsafe { lock.unlock(t) };
}

/// Spawns `n` threads that each run [`increment_under`] once.
fn spawn_incrementers<L: RawLock + 'static>(
    n: usize,
    lock: &Arc<L>,
    value: &Arc<AtomicUsize>,
) -> Vec<thread::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let (lock, value) = (lock.clone(), value.clone());
            thread::spawn(move || increment_under(&*lock, &value))
        })
        .collect()
}

/// Two threads increment a counter with a non-atomic read-then-write under the lock: a broken
/// lock loses an update in some interleaving. Both must finish (no lost wake-up: loom reports a
/// deadlock if a parked thread is never woken).
fn mutual_exclusion<L: RawLock + Default + 'static>() {
    model(|| {
        let lock = Arc::new(L::default());
        let value = Arc::new(AtomicUsize::new(0));
        let hs = spawn_incrementers(2, &lock, &value);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(value.load(Ordering::Relaxed), 2);
        assert!(!lock.is_locked());
    });
}

/// FIFO with two threads: while the main thread holds the lock, a second thread enqueues; the
/// main thread then releases and at once asks again. A FIFO lock must let the enqueued thread in
/// first (a TTAS lock may let the main thread barge). The main thread waits for the enqueue a
/// bounded number of yields, so that the model stays finite; in the interleavings where the
/// other thread had not enqueued by then, the order is not asserted.
fn fifo<L: RawLock + Default + 'static>() {
    static CHECKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    CHECKED.store(0, std::sync::atomic::Ordering::SeqCst);
    model(|| {
        let lock = Arc::new(L::default());
        let order = Arc::new(AtomicUsize::new(0));
        let t = lock.lock();
        let before = lock.arrival_token();
        let (l, o) = (lock.clone(), order.clone());
        let h = thread::spawn(move || {
            let t = l.lock();
            let v = o.load(Ordering::Relaxed);
            o.store(v * 10 + 1, Ordering::Relaxed);
            // SAFETY: held through `t`.
            unsafe { l.unlock(t) };
        });
        let mut tries = 0;
        while lock.arrival_token() == before && tries < 2 {
            thread::yield_now();
            tries += 1;
        }
        let enqueued = lock.arrival_token() != before;
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        let t = lock.lock();
        let v = order.load(Ordering::Relaxed);
        order.store(v * 10 + 2, Ordering::Relaxed);
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        h.join().unwrap();
        let order = order.load(Ordering::Relaxed);
        assert!(order == 12 || order == 21, "both entered once: {order}");
        if enqueued {
            CHECKED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            assert_eq!(
                order, 12,
                "FIFO: the enqueued thread enters before a later arrival"
            );
        }
    });
    assert!(
        CHECKED.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "some interleaving enqueued the waiter before the release"
    );
}

macro_rules! lock_models {
    ($($name:ident: $f:ident::<$raw:ty>),* $(,)?) => {$(
        #[test]
        fn $name() {
            $f::<$raw>();
        }
    )*};
}

lock_models! {
    ttas_informed_excl: mutual_exclusion::<RawTtasLock<Informed>>,
    ttas_block_excl: mutual_exclusion::<RawTtasLock<ImmediateBlock>>,
    ttas_spin_excl: mutual_exclusion::<RawTtasLock<AlwaysSpin>>,
    ticket_informed_excl: mutual_exclusion::<RawTicketLock<Informed>>,
    ticket_block_excl: mutual_exclusion::<RawTicketLock<ImmediateBlock>>,
    ticket_spin_excl: mutual_exclusion::<RawTicketLock<AlwaysSpin>>,
    mcs_informed_excl: mutual_exclusion::<RawMcsLock<Informed>>,
    mcs_block_excl: mutual_exclusion::<RawMcsLock<ImmediateBlock>>,
    mcs_spin_excl: mutual_exclusion::<RawMcsLock<AlwaysSpin>>,
    array_informed_excl: mutual_exclusion::<RawArrayLock<Informed, 4>>,
    array_block_excl: mutual_exclusion::<RawArrayLock<ImmediateBlock, 4>>,
    array_spin_excl: mutual_exclusion::<RawArrayLock<AlwaysSpin, 4>>,
    // Capacity 1: the waiters' tickets share the one slot, each waiting for its own value.
    array_shared_slot_block_excl: mutual_exclusion::<RawArrayLock<ImmediateBlock, 1>>,
    array_shared_slot_informed_excl: mutual_exclusion::<RawArrayLock<Informed, 1>>,
    array_shared_slot_spin_excl: mutual_exclusion::<RawArrayLock<AlwaysSpin, 1>>,
    ticket_fifo: fifo::<RawTicketLock<ImmediateBlock>>,
    mcs_fifo: fifo::<RawMcsLock<ImmediateBlock>>,
    array_fifo: fifo::<RawArrayLock<ImmediateBlock, 4>>,
    mcs_informed_fifo: fifo::<RawMcsLock<Informed>>,
}

/// `threads` threads pass `phases` phases; after each wait every thread of the phase has arrived,
/// and exactly one leader per phase.
fn barrier_model<B: Send + Sync + 'static>(
    make: fn(usize) -> B,
    wait: fn(&B) -> BarrierWaitResult,
    threads: usize,
    phases: usize,
) {
    model(move || {
        let b = Arc::new(make(threads));
        let arrived = Arc::new(AtomicUsize::new(0));
        let leaders = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let (b, arrived, leaders) = (b.clone(), arrived.clone(), leaders.clone());
                thread::spawn(move || {
                    for p in 0..phases {
                        arrived.fetch_add(1, Ordering::SeqCst);
                        if wait(&b).is_leader() {
                            leaders.fetch_add(1, Ordering::SeqCst);
                        }
                        assert!(arrived.load(Ordering::SeqCst) >= (p + 1) * threads);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(leaders.load(Ordering::SeqCst), phases);
    });
}

macro_rules! barrier_models {
    ($($name:ident: $ty:ty, $phases:expr),* $(,)?) => {$(
        #[test]
        fn $name() {
            barrier_model(<$ty>::new, <$ty>::wait, 2, $phases);
        }
    )*};
}

// Two threads, two phases (one for the always-spin barrier: its spinning multiplies the
// interleavings).
barrier_models! {
    central_block_phases: CentralBarrier<ImmediateBlock>, 2,
    central_informed_phases: CentralBarrier<Informed>, 2,
    central_spin_phases: CentralBarrier<AlwaysSpin>, 1,
    tree_block_phases: TreeBarrier<ImmediateBlock>, 2,
    tree_informed_phases: TreeBarrier<Informed>, 2,
    dissemination_block_phases: DisseminationBarrier<ImmediateBlock>, 2,
    dissemination_informed_phases: DisseminationBarrier<Informed>, 2,
}

/// Three threads on a lock while the machine counts as oversubscribed: the third arrival waits
/// at the door of the FIFO lock (holder + next-in-line inside) and must be let in; the
/// next-in-line yields instead of parking. One preemption: three threads are costly.
fn door_model<L: RawLock + Default + 'static>() {
    oversubscribed_three::<L>(1);
}

/// Three plain threads each take `L` once while the machine counts as oversubscribed, under
/// at most `preemptions` preemptions.
fn oversubscribed_three<L: RawLock + Default + 'static>(preemptions: usize) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    os::force_oversubscribed(Some(true));
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.max_branches = 100_000;
    b.check(|| {
        let lock = Arc::new(L::default());
        let value = Arc::new(AtomicUsize::new(0));
        let hs = spawn_incrementers(2, &lock, &value);
        increment_under(&*lock, &value);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(value.load(Ordering::Relaxed), 3);
    });
    os::force_oversubscribed(None);
}

/// The default lock's OS-thread path on an oversubscribed machine (a read-only poll of the word,
/// then a park), three plain threads; two preemptions, so that one thread waits in the poll
/// while another is preempted in its critical section and a third arrives.
#[test]
fn ttas_oversubscribed() {
    oversubscribed_three::<RawTtasLock<Informed>>(2);
}
#[test]
fn ticket_door() {
    door_model::<RawTicketLock<Informed>>();
}
#[test]
fn mcs_door() {
    door_model::<RawMcsLock<Informed>>();
}
#[test]
fn array_door() {
    door_model::<RawArrayLock<Informed, 4>>();
}

/// Three threads exercise the inner tree nodes and a second dissemination round (one
/// preemption: the three-thread state space is large).
fn barrier_model_three<B: Send + Sync + 'static>(
    make: fn(usize) -> B,
    wait: fn(&B) -> BarrierWaitResult,
) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    model_one_preemption(move || {
        let b = Arc::new(make(3));
        let arrived = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (b, arrived) = (b.clone(), arrived.clone());
                thread::spawn(move || {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    let leader = wait(&b).is_leader();
                    assert_eq!(arrived.load(Ordering::SeqCst), 3);
                    leader
                })
            })
            .collect();
        arrived.fetch_add(1, Ordering::SeqCst);
        let mut leaders = usize::from(wait(&b).is_leader());
        assert_eq!(arrived.load(Ordering::SeqCst), 3);
        for h in hs {
            leaders += usize::from(h.join().unwrap());
        }
        assert_eq!(leaders, 1);
    });
}

#[test]
fn tree_block_three() {
    barrier_model_three(TreeBarrier::<ImmediateBlock>::new, TreeBarrier::wait);
}
#[test]
fn dissemination_block_three() {
    barrier_model_three(
        DisseminationBarrier::<ImmediateBlock>::new,
        DisseminationBarrier::wait,
    );
}

/// The central barrier parks each phase's waiters under the phase's parity: three threads, two
/// phases, one preemption, so that a thread released from the first phase parks for the second
/// while the first's release may still be waking (neither phase's waiter may be missed).
#[test]
fn central_block_three_two_phases() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    model_one_preemption(|| {
        let b = Arc::new(CentralBarrier::<ImmediateBlock>::new(3));
        let arrived = Arc::new(AtomicUsize::new(0));
        let pass = {
            let (b, arrived) = (b.clone(), arrived.clone());
            move || {
                let mut leaders = 0;
                for p in 0..2 {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    leaders += usize::from(b.wait().is_leader());
                    assert!(arrived.load(Ordering::SeqCst) >= (p + 1) * 3);
                }
                leaders
            }
        };
        let hs: Vec<_> = (0..2).map(|_| thread::spawn(pass.clone())).collect();
        let mut leaders = pass();
        for h in hs {
            leaders += h.join().unwrap();
        }
        assert_eq!(leaders, 2);
    });
}

/// A notification after the waiter released the lock is never lost.
#[test]
fn condvar_no_lost_wakeup() {
    model(|| {
        let lock = Arc::new(RawTtasLock::<ImmediateBlock>::new());
        let cv = Arc::new(Condvar::new());
        let flag = Arc::new(AtomicUsize::new(0));
        let (l2, c2, f2) = (lock.clone(), cv.clone(), flag.clone());
        let setter = thread::spawn(move || {
            let t = l2.lock();
            f2.store(1, Ordering::Relaxed);
            // SAFETY: held through `t`.
            unsafe { l2.unlock(t) };
            c2.notify_one();
        });
        let mut t = lock.lock();
        while flag.load(Ordering::Relaxed) == 0 {
            // SAFETY: held through `t`.
            t = unsafe { cv.wait_raw(&*lock, t) };
        }
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        setter.join().unwrap();
    });
}

/// notify_all wakes both waiters.
#[test]
fn condvar_notify_all() {
    model(|| {
        let lock = Arc::new(RawTicketLock::<ImmediateBlock>::new());
        let cv = Arc::new(Condvar::new());
        let flag = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (l, c, f) = (lock.clone(), cv.clone(), flag.clone());
                thread::spawn(move || {
                    let mut t = l.lock();
                    while f.load(Ordering::Relaxed) == 0 {
                        // SAFETY: held through `t`.
                        t = unsafe { c.wait_raw(&*l, t) };
                    }
                    // SAFETY: held through `t`.
                    unsafe { l.unlock(t) };
                })
            })
            .collect();
        let t = lock.lock();
        flag.store(1, Ordering::Relaxed);
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        cv.notify_all();
        for h in hs {
            h.join().unwrap();
        }
    });
}

/// A `notify_all` wakes and counts each waiter once, also when a waiter it woke waits again
/// while the call is still popping (the model build pops one waiter per batch, so that two
/// waiters are enough to see a second batch): with both waiters queued, the call reports exactly
/// two. Before, a woken waiter that re-queued at the head was popped again by the next batch
/// (the call reported three).
#[test]
fn condvar_notify_all_counts_each_waiter_once() {
    model(|| {
        let lock = Arc::new(RawTtasLock::<ImmediateBlock>::new());
        let cv = Arc::new(Condvar::new());
        let waiting = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (l, c, w, s) = (lock.clone(), cv.clone(), waiting.clone(), stop.clone());
                thread::spawn(move || {
                    let mut t = l.lock();
                    w.fetch_add(1, Ordering::Relaxed);
                    while s.load(Ordering::Relaxed) == 0 {
                        // SAFETY: held through `t`.
                        t = unsafe { c.wait_raw(&*l, t) };
                    }
                    // SAFETY: held through `t`.
                    unsafe { l.unlock(t) };
                })
            })
            .collect();
        // Both counted themselves under the lock; once we have held it, both are queued.
        let mut t = lock.lock();
        while waiting.load(Ordering::Relaxed) < 2 {
            // SAFETY: held through `t`.
            unsafe { lock.unlock(t) };
            thread::yield_now();
            t = lock.lock();
        }
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        assert_eq!(
            cv.notify_all(),
            2,
            "each queued waiter woken and counted once"
        );
        let t = lock.lock();
        stop.store(1, Ordering::Relaxed);
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        cv.notify_all();
        for h in hs {
            h.join().unwrap();
        }
    });
}

/// A regression case: the window between a condvar waiter's release of the mutex and its park.
/// The notifier takes the mutex, sees whether the waiter is already waiting (it marks itself
/// under the mutex before `wait`), sets the flag, releases, and notifies: when the waiter was
/// waiting, `notify_one` must report it (it is queued before it releases the mutex), and the
/// waiter must wake (loom reports a deadlock otherwise).
#[test]
fn condvar_notify_counts_waiter_in_unlock_window() {
    model(|| {
        let lock = Arc::new(RawTtasLock::<ImmediateBlock>::new());
        let cv = Arc::new(Condvar::new());
        // 0: not yet waiting, 1: waiting, 2: flag set.
        let state = Arc::new(AtomicUsize::new(0));
        let (l2, c2, s2) = (lock.clone(), cv.clone(), state.clone());
        let notifier = thread::spawn(move || {
            let t = l2.lock();
            let was_waiting = s2.load(Ordering::Relaxed) == 1;
            s2.store(2, Ordering::Relaxed);
            // SAFETY: held through `t`.
            unsafe { l2.unlock(t) };
            let woke = c2.notify_one();
            assert!(
                !was_waiting || woke,
                "a waiter that released the mutex before the notifier took it is counted"
            );
        });
        let mut t = lock.lock();
        if state.load(Ordering::Relaxed) == 0 {
            state.store(1, Ordering::Relaxed);
        }
        while state.load(Ordering::Relaxed) != 2 {
            // SAFETY: held through `t`.
            t = unsafe { cv.wait_raw(&*lock, t) };
        }
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        notifier.join().unwrap();
    });
}

/// More waiters than slots. Capacity 1: while one thread holds the lock, the other two
/// wait on the one slot, each for its own ticket (an earlier version had a door there, which
/// ticket-valued slots made unnecessary); every thread gets in exactly once and
/// none is left parked.
fn array_shared_slot_three<W: WaitPolicy>() {
    three_take_it_once(RawArrayLock::<W, 1>::new);
}

/// The TTAS lock's barging release and its "wake-up in flight" mark (`WAKING`), with three
/// threads: two wait behind the main thread (parked at once with `ImmediateBlock`, after the quick
/// spin with `Informed`), so a release wakes one while the other stays parked; the woken thread may
/// lose the lock to a barger and park again. Every thread must get in exactly once (mutual
/// exclusion: no lost update; no lost wake-up: loom reports a deadlock if the mark were left set
/// with a thread parked and the lock free). One preemption: three threads are costly.
fn ttas_three<W: WaitPolicy>() {
    three_take_it_once(RawTtasLock::<W>::new);
}

/// Three threads (the main one and two spawned) each take a fresh lock made by `make` once,
/// with one preemption (three threads are costly): every increment lands and the lock ends free.
fn three_take_it_once<L: RawLock + 'static>(make: fn() -> L) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    model_one_preemption(move || {
        let lock = Arc::new(make());
        let value = Arc::new(AtomicUsize::new(0));
        let hs = spawn_incrementers(2, &lock, &value);
        increment_under(&*lock, &value);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(value.load(Ordering::Relaxed), 3);
        assert!(!lock.is_locked());
    });
}

#[test]
fn array_shared_slot_three_block() {
    array_shared_slot_three::<ImmediateBlock>();
}
#[test]
fn array_shared_slot_three_informed() {
    array_shared_slot_three::<Informed>();
}

/// Channel: two senders, one place; the receiver gets both messages (none lost, none twice), and
/// a sender parked on the full buffer is woken when a place frees.
#[test]
fn channel_no_lost_message() {
    model(|| {
        let (tx, rx) = channel::bounded::<usize>(1);
        let tx2 = tx.clone();
        let h1 = thread::spawn(move || tx.send(1).unwrap());
        let h2 = thread::spawn(move || tx2.send(2).unwrap());
        let a = rx.recv().unwrap();
        let b = rx.recv().unwrap();
        assert_eq!(a + b, 3);
        h1.join().unwrap();
        h2.join().unwrap();
        assert_eq!(rx.try_recv(), Err(channel::TryRecvError::Disconnected));
    });
}

/// Channel: a rendezvous; whichever side arrives first parks and the other wakes it.
#[test]
fn channel_rendezvous_no_lost_wakeup() {
    model(|| {
        let (tx, rx) = channel::bounded::<usize>(0);
        let h = thread::spawn(move || tx.send(7).unwrap());
        assert_eq!(rx.recv(), Ok(7));
        h.join().unwrap();
    });
}

/// Channel: disconnection. A message sent before the last sender drops is still delivered, then
/// the receiver (parked or not) learns the disconnection; a sender parked on a rendezvous learns
/// that the receiver is gone and gets its message back.
#[test]
fn channel_disconnect() {
    model(|| {
        let (tx, rx) = channel::unbounded::<usize>();
        let h = thread::spawn(move || {
            tx.send(1).unwrap();
            drop(tx);
        });
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Err(channel::RecvError));
        h.join().unwrap();
    });
    model(|| {
        let (tx, rx) = channel::bounded::<usize>(0);
        let h = thread::spawn(move || tx.send(5));
        drop(rx);
        assert_eq!(h.join().unwrap(), Err(channel::SendError(5)));
    });
}

/// Select: a blocked select links a watch per channel while a sender races it; whichever
/// order the linking, the readiness check and the send take, the select gets the message (no
/// lost wake-up), parking at most once per round.
#[test]
fn select_registration_races_a_send() {
    model(|| {
        let (tx1, rx1) = channel::bounded::<usize>(1);
        let (_tx2, rx2) = channel::bounded::<usize>(1);
        let h = thread::spawn(move || tx1.send(3).unwrap());
        let mut sel = channel::Select::new();
        let a = sel.recv(&rx1);
        let _b = sel.recv(&rx2);
        let oper = sel.select();
        assert_eq!(oper.index(), a);
        assert_eq!(oper.recv(&rx1), Ok(3));
        h.join().unwrap();
    });
}

/// Select: two senders on the two watched channels race each other and the registration; the
/// select takes one message and the other stays buffered.
#[test]
fn select_two_senders_one_wins() {
    model(|| {
        let (tx1, rx1) = channel::bounded::<usize>(1);
        let (tx2, rx2) = channel::bounded::<usize>(1);
        let h1 = thread::spawn(move || tx1.send(1).unwrap());
        let h2 = thread::spawn(move || tx2.send(2).unwrap());
        let got = channel::select! {
            recv(rx1) -> m => m.unwrap(),
            recv(rx2) -> m => m.unwrap(),
        };
        let other = if got == 1 { rx2.recv() } else { rx1.recv() };
        assert_eq!(got + other.unwrap(), 3);
        // Not joined: the select's wake-up may leave its thread a park permit (a spurious
        // wake-up, which `park` allows), and loom's `join` does not model one.
        drop((h1, h2));
    });
}

/// Select without waiting is linearizable: channel 1 holds a message while another thread
/// sends on channel 2 and only then takes channel 1's message, so at every instant one of the
/// two holds one, and `try_select` (looking at channel 2 first) must find it, whatever the
/// interleaving of its looks with that thread's send and take.
#[test]
fn try_select_sees_a_message_moved_between_its_looks() {
    model(|| {
        let (tx1, rx1) = channel::bounded::<usize>(1);
        let (tx2, rx2) = channel::bounded::<usize>(1);
        tx1.send(1).unwrap();
        let rx1b = rx1.clone();
        let h = thread::spawn(move || {
            tx2.send(2).unwrap();
            rx1b.try_recv().is_ok()
        });
        let mut sel = channel::Select::new();
        let b = sel.recv(&rx2);
        let a = sel.recv(&rx1);
        let oper = sel
            .try_select()
            .expect("one of the two channels holds a message");
        let got = if oper.index() == a {
            oper.recv(&rx1).unwrap()
        } else {
            assert_eq!(oper.index(), b);
            oper.recv(&rx2).unwrap()
        };
        let took_first = h.join().unwrap();
        // The message the select did not take is still where it was, or with the other thread.
        let left = rx1
            .try_recv()
            .ok()
            .into_iter()
            .chain(rx2.try_recv().ok())
            .count();
        assert_eq!(usize::from(took_first) + left + 1, 2);
        assert!(got == 1 || got == 2);
    });
}

/// Select: a disconnection races the registration; the select sees the disconnected arm.
#[test]
fn select_sees_a_racing_disconnection() {
    model(|| {
        let (tx, rx) = channel::bounded::<usize>(0);
        let h = thread::spawn(move || drop(tx));
        let r = channel::select! {
            recv(rx) -> m => m,
        };
        assert_eq!(r, Err(channel::RecvError));
        h.join().unwrap();
    });
}

/// Select on a rendezvous: a select's send arm and another select's receive arm can only
/// complete with each other. Whichever registers first is claimed by the other (while that one
/// tries its operations, or aborts its own registration on seeing the first): the message
/// arrives exactly once, whatever the interleaving of linking, claiming and parking.
#[test]
fn selects_pair_on_a_rendezvous() {
    model(|| {
        let (tx, rx) = channel::bounded::<usize>(0);
        let h = thread::spawn(move || {
            channel::select! {
                send(tx, 7) -> res => res.unwrap(),
            }
        });
        let got = channel::select! {
            recv(rx) -> m => m.unwrap(),
        };
        assert_eq!(got, 7);
        h.join().unwrap();
    });
}

/// Select on a rendezvous: two selects each offer a send and a receive on one zero-capacity
/// channel (crossbeam's `matching`): they pair with each other, never with themselves; one
/// sends, the other receives its value.
#[test]
fn two_matching_selects_pair_up() {
    model(|| {
        let (tx, rx) = channel::bounded::<usize>(0);
        let (tx2, rx2) = (tx.clone(), rx.clone());
        let h = thread::spawn(move || {
            channel::select! {
                recv(rx2) -> m => m.unwrap(),
                send(tx2, 2) -> res => { res.unwrap(); 0 },
            }
        });
        let mine = channel::select! {
            recv(rx) -> m => m.unwrap(),
            send(tx, 1) -> res => { res.unwrap(); 0 },
        };
        let theirs = h.join().unwrap();
        // Exactly one of the two received, and it received the other's value.
        assert!(
            (mine, theirs) == (2, 0) || (mine, theirs) == (0, 1),
            "{mine} {theirs}"
        );
    });
}

/// A chosen send dropped without its message releases the receiver it claimed (or that
/// claimed it), which then takes the next message: no receiver is left waiting for a send
/// that will never come.
#[test]
fn a_dropped_chosen_send_releases_its_receiver() {
    model(|| {
        let (tx, rx) = channel::bounded::<usize>(0);
        let h = thread::spawn(move || rx.recv());
        {
            let mut sel = channel::Select::new();
            sel.send(&tx);
            drop(sel.select());
        }
        tx.send(9).unwrap();
        assert_eq!(h.join().unwrap(), Ok(9));
    });
}

/// Ring (a bounded channel with places, no lock on the message path): a receiver finds the
/// channel empty and links its node while a sender fills the last place. Either the
/// receiver's last look at the ring after linking finds the message, or the sender finds the
/// receiver counted and wakes it: the receive always completes (loom reports a deadlock
/// otherwise). Capacity 1 (the one place is the last) and 2 with two messages.
#[test]
fn ring_send_races_a_receiver_linking() {
    model_ring(|| {
        let (tx, rx) = channel::bounded::<usize>(1);
        let h = thread::spawn(move || tx.send(7).unwrap());
        assert_eq!(rx.recv(), Ok(7));
        h.join().unwrap();
    });
    model_ring(|| {
        let (tx, rx) = channel::bounded::<usize>(2);
        let h = thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
        });
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        h.join().unwrap();
    });
}

/// Ring: a sender finds the channel full and links its node while a receiver frees the place;
/// the send completes, and the messages arrive in order.
#[test]
fn ring_recv_races_a_sender_linking() {
    model_ring(|| {
        let (tx, rx) = channel::bounded::<usize>(1);
        tx.send(1).unwrap();
        let h = thread::spawn(move || tx.send(2).unwrap());
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        h.join().unwrap();
    });
}

/// Ring: two senders and two receivers on capacity 1: every message is received exactly once, whichever sender or receiver a
/// notification reaches and whoever takes the place or the message first (a woken thread that
/// loses re-links; a thread notified of what it no longer needs passes the notification on).
#[test]
fn ring_two_senders_two_receivers() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Three threads: the main thread is the second sender, then the second receiver.
    model_one_preemption(|| {
        let (tx, rx) = channel::bounded::<usize>(1);
        let (tx2, rx2) = (tx.clone(), rx.clone());
        let s1 = thread::spawn(move || tx2.send(1).unwrap());
        let r1 = thread::spawn(move || rx2.recv().unwrap());
        tx.send(2).unwrap();
        let a = rx.recv().unwrap();
        let b = r1.join().unwrap();
        assert_eq!(a + b, 3);
        s1.join().unwrap();
    });
}

/// Ring: two senders (one sending twice) and one receiver on capacity 2, one preemption.
#[test]
fn ring_two_senders_capacity_two() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    model_one_preemption(|| {
        let (tx, rx) = channel::bounded::<usize>(2);
        let tx2 = tx.clone();
        let s1 = thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
        });
        let s2 = thread::spawn(move || tx2.send(3).unwrap());
        let got: usize = (0..3).map(|_| rx.recv().unwrap()).sum();
        assert_eq!(got, 6);
        s1.join().unwrap();
        s2.join().unwrap();
    });
}

/// Ring, three threads and two preemptions (the other three-thread ring models have one): a
/// send is preempted between claiming the one place of a capacity-1 channel and writing its
/// message while two others wait for that write in the retries of `Ring::push` and
/// `Ring::pop` (a receive and the other send; then two receives). Both messages arrive, once
/// each, and the model ends: loom's scheduler is not fair, and without the ring's stutter rule
/// (`Backoff::wait`) it explores the two waiters taking turns for ever (this model ran for
/// minutes). The receiver yields before it receives, as a green receiver's informed spin
/// does: without a free switch there the model reaches that state only with more
/// preemptions. The senders are not joined: a completer's unpark may come after its waiter
/// found the completion without parking, and loom's join takes that unpark for its own
/// wake-up ("assertion failed: state.notified"); loom still runs every thread to its end.
#[test]
fn ring_two_waiters_behind_a_preempted_send() {
    model_ring(|| {
        let (tx, rx) = channel::bounded::<usize>(1);
        let tx2 = tx.clone();
        thread::spawn(move || tx.send(1).unwrap());
        thread::spawn(move || tx2.send(2).unwrap());
        thread::yield_now();
        let a = rx.recv().unwrap();
        let b = rx.recv().unwrap();
        assert_eq!(a + b, 3);
    });
    model_ring(|| {
        let (tx, rx) = channel::bounded::<usize>(1);
        let rx2 = rx.clone();
        let sum = Arc::new(AtomicUsize::new(0));
        let s2 = sum.clone();
        thread::spawn(move || {
            thread::yield_now();
            s2.fetch_add(rx2.recv().unwrap(), Ordering::SeqCst);
        });
        thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
        });
        thread::yield_now();
        let a = rx.recv().unwrap();
        // The other receiver's message: it may still be on its way (not joined, see above).
        while sum.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        assert_eq!(a + sum.load(Ordering::SeqCst), 3);
    });
}

/// Counts its drops (a message dropped twice or never shows in the count).
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Ring: a disconnection races a park. The last sender goes while a receiver links (the
/// receiver learns it, after the buffered message); the last receiver goes while a sender
/// parks on a full channel (the sender gets its message back, and the buffered message is
/// dropped exactly once).
#[test]
fn ring_disconnect_races_a_park() {
    model_ring(|| {
        let (tx, rx) = channel::bounded::<usize>(1);
        let h = thread::spawn(move || {
            tx.send(4).unwrap();
            drop(tx);
        });
        assert_eq!(rx.recv(), Ok(4));
        assert_eq!(rx.recv(), Err(channel::RecvError));
        h.join().unwrap();
    });
    model_ring(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = channel::bounded::<Counted>(1);
        tx.send(Counted(drops.clone()))
            .unwrap_or_else(|_| unreachable!());
        let d = drops.clone();
        let h = thread::spawn(move || tx.send(Counted(d)).map_err(|e| e.0));
        drop(rx);
        let back = h.join().unwrap();
        // The parked (or late) send fails with its message; the buffered one was dropped.
        assert!(back.is_err());
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        drop(back);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

/// Ring: a select's chosen send reserves the one place and is then dropped, while another
/// sender finds the channel full (reserved) and parks: giving the reservation back wakes it,
/// and its message arrives.
#[test]
fn ring_released_reservation_wakes_a_sender() {
    model_ring(|| {
        let (tx, rx) = channel::bounded::<usize>(1);
        let tx2 = tx.clone();
        let h = thread::spawn(move || tx2.send(5).unwrap());
        {
            let mut sel = channel::Select::new();
            sel.send(&tx);
            if let Ok(oper) = sel.try_select() {
                drop(oper);
            }
        }
        assert_eq!(rx.recv(), Ok(5));
        h.join().unwrap();
    });
}

/// Ring: a select blocked on two ring channels while a sender fills one: the watch linking and
/// the sender's look at the waiting count race; the select always wakes with the message.
#[test]
fn ring_select_watch_races_a_send() {
    model_ring(|| {
        let (tx1, rx1) = channel::bounded::<usize>(2);
        let (_tx2, rx2) = channel::bounded::<usize>(2);
        let h = thread::spawn(move || tx1.send(3).unwrap());
        let got = channel::select! {
            recv(rx1) -> m => m.unwrap(),
            recv(rx2) -> m => m.unwrap(),
        };
        assert_eq!(got, 3);
        // Not joined: a fired select may keep a park permit (see `select_two_senders_one_wins`).
        drop(h);
    });
}

/// RwLock: a writer and a reader (policy `W`) exclude each other, and whichever waits is woken.
/// The reader sees the value before or after the write, never a torn one.
fn rwlock_model<W: WaitPolicy>() {
    model(|| {
        let lock = Arc::new(RawRwLock::<W>::new());
        let value = Arc::new(AtomicUsize::new(0));
        let (l, v) = (lock.clone(), value.clone());
        let writer = thread::spawn(move || {
            let t = l.write();
            // Two steps: a reader inside would see the odd value.
            v.store(1, Ordering::Relaxed);
            v.store(2, Ordering::Relaxed);
            // SAFETY: held exclusively through `t`.
            unsafe { l.unlock_write(t) };
        });
        let t = lock.read();
        let seen = value.load(Ordering::Relaxed);
        // SAFETY: held shared through `t`.
        unsafe { lock.unlock_read(t) };
        assert!(
            seen == 0 || seen == 2,
            "reader saw a write in progress: {seen}"
        );
        writer.join().unwrap();
        let t = lock.write();
        assert_eq!(value.load(Ordering::Relaxed), 2);
        // SAFETY: held exclusively through `t`.
        unsafe { lock.unlock_write(t) };
    });
}

#[test]
fn rwlock_block() {
    rwlock_model::<ImmediateBlock>();
}
#[test]
fn rwlock_informed() {
    rwlock_model::<Informed>();
}

/// RwLock: two writers exclude each other (a non-atomic increment under the write lock).
#[test]
fn rwlock_writers_exclusive() {
    model(|| {
        let lock = Arc::new(RawRwLock::<ImmediateBlock>::new());
        let value = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (l, v) = (lock.clone(), value.clone());
                thread::spawn(move || {
                    let t = l.write();
                    let x = v.load(Ordering::Relaxed);
                    v.store(x + 1, Ordering::Relaxed);
                    // SAFETY: held exclusively through `t`.
                    unsafe { l.unlock_write(t) };
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(value.load(Ordering::Relaxed), 2);
    });
}

/// Once: two callers, one initialiser run; the caller that did not run it returns only after
/// the run is visible (it parks meanwhile and is woken).
#[test]
fn once_runs_once_and_waiters_see_it() {
    model(|| {
        let once = Arc::new(Once::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let (o, r) = (once.clone(), runs.clone());
        let h = thread::spawn(move || {
            o.call_once(|| {
                r.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(r.load(Ordering::Relaxed), 1);
        });
        once.call_once(|| {
            runs.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        h.join().unwrap();
        assert!(once.is_completed());
    });
}

/// Semaphore: one permit, two takers; each gets it in turn (the second parks and is woken).
#[test]
fn semaphore_one_permit_two_takers() {
    model(|| {
        let sem = Arc::new(Semaphore::new(1));
        let inside = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (s, i) = (sem.clone(), inside.clone());
                thread::spawn(move || {
                    let p = s.acquire();
                    assert_eq!(i.fetch_add(1, Ordering::SeqCst), 0, "one holder at a time");
                    i.fetch_sub(1, Ordering::SeqCst);
                    drop(p);
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(sem.available_permits(), 1);
    });
}

/// TTAS fair unlock: the holder hands the lock to a waiter (parked or spinning) or releases it;
/// mutual exclusion holds and nobody is left waiting.
#[test]
fn ttas_fair_unlock() {
    model(|| {
        let lock = Arc::new(RawTtasLock::<Informed>::new());
        let value = Arc::new(AtomicUsize::new(0));
        let (l, v) = (lock.clone(), value.clone());
        let h = thread::spawn(move || increment_under(&*l, &v));
        let t = lock.lock();
        let x = value.load(Ordering::Relaxed);
        value.store(x + 1, Ordering::Relaxed);
        // SAFETY: held through `t`.
        unsafe { lock.unlock_fair(t) };
        h.join().unwrap();
        assert_eq!(value.load(Ordering::Relaxed), 2);
        assert!(!lock.is_locked());
    });
}
#[test]
fn ttas_block_three() {
    ttas_three::<ImmediateBlock>();
}
#[test]
fn ttas_informed_three() {
    ttas_three::<Informed>();
}

/// Barging with a wake-up in flight: two threads each take the lock twice, so a releaser takes
/// it again while the thread it woke has not run yet (that release must not lose the woken
/// thread's turn for good, nor wake a second time while the first wake-up is in flight).
fn ttas_barging<W: WaitPolicy>() {
    ttas_barging_on::<W>(|| {});
}

/// [`ttas_barging`] with `on_thread` run first on every thread (e.g. [`hooked`]).
fn ttas_barging_on<W: WaitPolicy>(on_thread: fn()) {
    model(move || {
        on_thread();
        let lock = Arc::new(RawTtasLock::<W>::new());
        let value = Arc::new(AtomicUsize::new(0));
        let (l, v) = (lock.clone(), value.clone());
        let h = thread::spawn(move || {
            on_thread();
            increment_under(&*l, &v);
            increment_under(&*l, &v);
        });
        increment_under(&*lock, &value);
        increment_under(&*lock, &value);
        h.join().unwrap();
        assert_eq!(value.load(Ordering::Relaxed), 4);
        assert!(!lock.is_locked());
    });
}

#[test]
fn ttas_block_barging() {
    ttas_barging::<ImmediateBlock>();
}
#[test]
fn ttas_informed_barging() {
    ttas_barging::<Informed>();
}

/// A waiter that leaves: while the main thread holds the lock, one thread tries it with a
/// deadline that passes during its first park (`lock_or_leave`) and another takes it for good.
/// The main thread's release may pop the leaving thread just as it times out (and mark the
/// wake-up in flight); it must not take the other thread's wake-up with it: every thread that
/// asked for good gets in, the leaving one at most once, and the lock ends free with no thread
/// left parked (loom reports a deadlock otherwise; leaving `WAKING` set when leaving is one,
/// checked by mutation). Two preemptions: with one, the popped-while-leaving case needs the
/// other thread parked first, which it does not reach.
fn ttas_leaver<W: WaitPolicy>() {
    model(|| {
        let lock = Arc::new(RawTtasLock::<W>::new());
        let value = Arc::new(AtomicUsize::new(0));
        let t = lock.lock();
        let (l, v) = (lock.clone(), value.clone());
        let leaver = thread::spawn(move || match l.lock_or_leave() {
            Some(t) => {
                v.fetch_add(10, Ordering::Relaxed);
                // SAFETY: held through `t`.
                unsafe { l.unlock(t) };
                true
            }
            None => false,
        });
        let stayer = spawn_incrementers(1, &lock, &value);
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        let got_in = leaver.join().unwrap();
        for h in stayer {
            h.join().unwrap();
        }
        let want = if got_in { 11 } else { 1 };
        assert_eq!(value.load(Ordering::Relaxed), want);
        assert!(!lock.is_locked());
    });
}

#[test]
fn ttas_block_leaver() {
    ttas_leaver::<ImmediateBlock>();
}
#[test]
fn ttas_informed_leaver() {
    ttas_leaver::<Informed>();
}

/// Parking and a release racing, with the releaser taking the lock back at once (a barger) and
/// a fair unlock last: two threads park behind the main thread, which releases, takes the lock
/// again and hands it over fairly. Every thread gets in exactly once more than the main one's
/// two holds, and the lock ends free with `PARKED` cleared by whoever emptied the queue.
fn ttas_park_barge_fair<W: WaitPolicy>() {
    ttas_park_barge_on::<W>(|| {}, true);
}

/// [`ttas_park_barge_fair`] with a plain unlock last: the main thread's second release finds
/// `PARKED` and `WAKING` set (the thread its first release woke is in flight) and swaps the word
/// to 0; the thread in flight may take and release the lock before the marks go back, its
/// release seeing no `PARKED`. The second release must then wake the parked thread itself
/// (checked by mutation: without that case loom reports the deadlock).
fn ttas_park_barge_plain<W: WaitPolicy>() {
    ttas_park_barge_on::<W>(|| {}, false);
}

/// [`ttas_park_barge_fair`] (or, with `fair` false, [`ttas_park_barge_plain`]) with `on_thread`
/// run first on every thread (e.g. [`hooked`]).
fn ttas_park_barge_on<W: WaitPolicy>(on_thread: fn(), fair: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    model_one_preemption(move || {
        on_thread();
        let lock = Arc::new(RawTtasLock::<W>::new());
        let value = Arc::new(AtomicUsize::new(0));
        let t = lock.lock();
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (l, v) = (lock.clone(), value.clone());
                thread::spawn(move || {
                    on_thread();
                    increment_under(&*l, &v);
                })
            })
            .collect();
        if !fair {
            // Lets the two threads reach the lock (and park) without spending the model's one
            // preemption on it: the window after the second release needs it.
            thread::yield_now();
            thread::yield_now();
        }
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        let t = lock.lock();
        let x = value.load(Ordering::Relaxed);
        value.store(x + 1, Ordering::Relaxed);
        if fair {
            // SAFETY: held through `t`.
            unsafe { lock.unlock_fair(t) };
        } else {
            // SAFETY: held through `t`.
            unsafe { lock.unlock(t) };
        }
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(value.load(Ordering::Relaxed), 3);
        assert!(!lock.is_locked());
    });
}

#[test]
fn ttas_block_park_barge_fair() {
    ttas_park_barge_fair::<ImmediateBlock>();
}
#[test]
fn ttas_informed_park_barge_fair() {
    ttas_park_barge_fair::<Informed>();
}
#[test]
fn ttas_block_park_barge_plain() {
    ttas_park_barge_plain::<ImmediateBlock>();
}
#[test]
fn ttas_informed_park_barge_plain() {
    ttas_park_barge_plain::<Informed>();
}

/// Installs the OS hook as the calling thread's scheduler hook, as a runtime installs its own on
/// a worker: the lock then takes the path of a thread whose class a scheduler reads (informed
/// waiting with `Waiter`/`Holder` published), not the plain OS thread's `lock_os_thread`.
fn hooked() {
    install_hook(footprint_locks::os::os_hook());
}

/// [`ttas_barging`] on the hooked path (plain OS threads, which every
/// other TTAS model runs on, now wait in `lock_os_thread`, so this keeps the informed wait with
/// `PARKED`/`WAKING` checked where green threads use it).
#[test]
fn ttas_hooked_barging() {
    ttas_barging_on::<Informed>(hooked);
    uninstall_hook();
}

/// [`ttas_park_barge_fair`] on the hooked path: two hooked threads park behind the main one,
/// which releases, barges back in and hands the lock over fairly.
#[test]
fn ttas_hooked_park_barge_fair() {
    ttas_park_barge_on::<Informed>(hooked, true);
    uninstall_hook();
}

/// parking_lot's condvar requeue test as a model: the waiter takes the lock, says so, and waits
/// on the condition variable until a flag is set; the main thread holds the lock and, for two
/// rounds or until `notify_one` reports the waiter, hands the lock over fairly and takes it
/// back at once (`MutexGuard::bump`); then sets the flag, releases and notifies. The hand-over
/// is the parked waiter's alone: whenever the fair unlock handed the lock over, the main thread's
/// own `lock` right after it must wait for the waiter's hold, which reaches the wait (it took
/// the hand-over back before, and on green threads the waiter never reached its wait). Loom
/// reports a deadlock if the waiter is never woken.
fn condvar_requeue<W: WaitPolicy>(on_thread: fn()) {
    model(move || {
        on_thread();
        let lock = Arc::new(RawTtasLock::<W>::new());
        let cv = Arc::new(Condvar::new());
        // 0: not yet holding the lock, 1: in the wait (set under the lock), 2: flag set.
        let state = Arc::new(AtomicUsize::new(0));
        let (l2, c2, s2) = (lock.clone(), cv.clone(), state.clone());
        let waiter = thread::spawn(move || {
            on_thread();
            let mut t = l2.lock();
            if s2.load(Ordering::Relaxed) == 0 {
                s2.store(1, Ordering::Relaxed);
            }
            while s2.load(Ordering::Relaxed) != 2 {
                // SAFETY: held through `t`.
                t = unsafe { c2.wait_raw(&*l2, t) };
            }
            // SAFETY: held through `t`.
            unsafe { l2.unlock(t) };
        });
        let mut t = lock.lock();
        for _ in 0..2 {
            if cv.notify_one() {
                break;
            }
            // SAFETY: held through `t`.
            let handed = unsafe { lock.unlock_fair_handed(t) };
            t = lock.lock();
            assert!(
                !handed || state.load(Ordering::Relaxed) == 1,
                "the thread handed the lock held it (and reached its wait) before the bump's lock"
            );
            thread::yield_now();
        }
        state.store(2, Ordering::Relaxed);
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        cv.notify_one();
        waiter.join().unwrap();
        assert!(!lock.is_locked());
    });
}

#[test]
fn condvar_requeue_block() {
    condvar_requeue::<ImmediateBlock>(|| {});
}
#[test]
fn condvar_requeue_informed() {
    condvar_requeue::<Informed>(|| {});
}
#[test]
fn condvar_requeue_hooked() {
    condvar_requeue::<Informed>(hooked);
    uninstall_hook();
}

/// A fair hand-over is not taken by a later arrival: the main thread holds the lock while a
/// second thread parks on it, then hands it over (`unlock_fair`) and at once asks for it again.
/// Whenever the fair unlock handed the lock to the parked thread, the main thread's second hold
/// comes after that thread's: the value it reads then is 1.
fn ttas_bump<W: WaitPolicy>(on_thread: fn()) {
    model(move || {
        on_thread();
        let lock = Arc::new(RawTtasLock::<W>::new());
        let value = Arc::new(AtomicUsize::new(0));
        let t = lock.lock();
        let (l, v) = (lock.clone(), value.clone());
        let h = thread::spawn(move || {
            on_thread();
            increment_under(&*l, &v)
        });
        // Lets the other thread reach the lock and park.
        thread::yield_now();
        thread::yield_now();
        // SAFETY: held through `t`.
        let handed = unsafe { lock.unlock_fair_handed(t) };
        let t = lock.lock();
        let seen = value.load(Ordering::Relaxed);
        if handed {
            assert_eq!(seen, 1, "the thread parked at the fair unlock went first");
        }
        value.store(seen + 10, Ordering::Relaxed);
        // SAFETY: held through `t`.
        unsafe { lock.unlock(t) };
        h.join().unwrap();
        assert_eq!(value.load(Ordering::Relaxed), 11);
        assert!(!lock.is_locked());
    });
}

#[test]
fn ttas_block_bump() {
    ttas_bump::<ImmediateBlock>(|| {});
}
#[test]
fn ttas_informed_bump() {
    ttas_bump::<Informed>(|| {});
}
#[test]
fn ttas_hooked_bump() {
    ttas_bump::<Informed>(hooked);
    uninstall_hook();
}
