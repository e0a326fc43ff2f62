//! Stress tests with exact counts: every lock (informed, spin, block) and every barrier, on OS
//! threads, including oversubscribed runs (more threads than CPUs).

#![cfg(not(loom))]

use footprint_locks::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod common;
use common::{exact_counter, iters};

fn counter_test<R: lock_api::RawMutex + Send + Sync + 'static>(threads: usize, per_thread: usize)
where
    R::Guard: 'static,
{
    let m = exact_counter::<R>(threads, per_thread);
    assert!(!m.is_locked());
}

/// The waiting mode of a raw lock type.
trait RawLockPolicy {
    const MODE: WaitMode;
}
impl<W: WaitPolicy> RawLockPolicy for RawTtasLock<W> {
    const MODE: WaitMode = W::MODE;
}
impl<W: WaitPolicy> RawLockPolicy for RawTicketLock<W> {
    const MODE: WaitMode = W::MODE;
}
impl<W: WaitPolicy> RawLockPolicy for RawMcsLock<W> {
    const MODE: WaitMode = W::MODE;
}
impl<W: WaitPolicy, const N: usize> RawLockPolicy for RawArrayLock<W, N> {
    const MODE: WaitMode = W::MODE;
}

macro_rules! counter_tests {
    ($($name:ident: $raw:ty),* $(,)?) => {$(
        #[test]
        fn $name() {
            let spin = <$raw as RawLockPolicy>::MODE == WaitMode::Spin;
            // Always-spin locks crawl whenever the test runner's other tests take the CPUs, so
            // they run as many threads as there are CPUs here, and few rounds oversubscribed.
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            counter_test::<$raw>(if spin { cpus.min(4) } else { 4 }, iters(20_000));
            // Oversubscribed: 8 OS threads on (typically) 2 cores must finish. Always-spin FIFO
            // locks crawl there (a preempted waiter stalls everyone behind it: 002's point), so
            // they get fewer rounds.
            counter_test::<$raw>(8, if spin { 20 } else { iters(5_000) });
        }
    )*};
}

counter_tests! {
    ttas_informed: RawTtasLock<Informed>,
    ttas_spin: RawTtasLock<AlwaysSpin>,
    ttas_block: RawTtasLock<ImmediateBlock>,
    ticket_informed: RawTicketLock<Informed>,
    ticket_spin: RawTicketLock<AlwaysSpin>,
    ticket_block: RawTicketLock<ImmediateBlock>,
    mcs_informed: RawMcsLock<Informed>,
    mcs_spin: RawMcsLock<AlwaysSpin>,
    mcs_block: RawMcsLock<ImmediateBlock>,
    array_informed: RawArrayLock<Informed>,
    array_spin: RawArrayLock<AlwaysSpin>,
    array_block: RawArrayLock<ImmediateBlock>,
    // Capacity 2 with 4 and 8 threads: waiters share slots, each waiting for its own ticket.
    array_informed_over_capacity: RawArrayLock<Informed, 2>,
    array_block_over_capacity: RawArrayLock<ImmediateBlock, 2>,
}

/// A bank of accounts, one lock each; transfers lock two accounts in address order. The total
/// must be conserved.
fn bank_test<R: lock_api::RawMutex + Send + Sync + 'static>()
where
    R::Guard: 'static,
{
    const ACCOUNTS: usize = 8;
    const START: i64 = 1_000;
    let bank: Arc<Vec<lock_api::Mutex<R, i64>>> =
        Arc::new((0..ACCOUNTS).map(|_| lock_api::Mutex::new(START)).collect());
    let hs: Vec<_> = (0..6u64)
        .map(|t| {
            let bank = bank.clone();
            std::thread::spawn(move || {
                let mut x = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for _ in 0..iters(20_000) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let a = (x % ACCOUNTS as u64) as usize;
                    let b = ((x >> 8) % ACCOUNTS as u64) as usize;
                    if a == b {
                        continue;
                    }
                    let (lo, hi) = (a.min(b), a.max(b));
                    let mut g_lo = bank[lo].lock();
                    let mut g_hi = bank[hi].lock();
                    let amount = (x >> 20) as i64 % 50;
                    if a == lo {
                        *g_lo -= amount;
                        *g_hi += amount;
                    } else {
                        *g_hi -= amount;
                        *g_lo += amount;
                    }
                    // Released in reverse order (nesting).
                    drop(g_hi);
                    drop(g_lo);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let total: i64 = bank.iter().map(|m| *m.lock()).sum();
    assert_eq!(total, START * ACCOUNTS as i64);
}

#[test]
fn bank_conserves_money_under_every_lock() {
    bank_test::<RawTtasLock>();
    bank_test::<RawTicketLock>();
    bank_test::<RawMcsLock>();
    bank_test::<RawArrayLock>();
    bank_test::<RawMcsLock<ImmediateBlock>>();
    bank_test::<RawTtasLock<AlwaysSpin>>();
}

#[test]
fn classes_are_restored_after_nested_locks() {
    let cell = current_hook().class_cell();
    assert_eq!(cell.get(), PriorityClass::Running);
    let a = McsMutex::new(());
    let b = TicketMutex::new(());
    let ga = a.lock();
    assert_eq!(cell.get(), PriorityClass::Holder);
    let gb = b.lock();
    assert_eq!(cell.get(), PriorityClass::Holder);
    drop(gb);
    assert_eq!(cell.get(), PriorityClass::Holder);
    drop(ga);
    assert_eq!(cell.get(), PriorityClass::Running);
}

fn barrier_phases<B: Send + Sync + 'static>(
    make: impl Fn(usize) -> B,
    wait: fn(&B) -> BarrierWaitResult,
    threads: usize,
    phases: usize,
) {
    let b = Arc::new(make(threads));
    let arrived = Arc::new(AtomicUsize::new(0));
    let leaders = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let (b, arrived, leaders) = (b.clone(), arrived.clone(), leaders.clone());
            std::thread::spawn(move || {
                for p in 0..phases {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    if wait(&b).is_leader() {
                        leaders.fetch_add(1, Ordering::SeqCst);
                    }
                    // Everyone of phase p has arrived, nobody of phase p+1 can have passed.
                    let seen = arrived.load(Ordering::SeqCst);
                    assert!(
                        seen >= (p + 1) * threads && seen <= (p + 2) * threads,
                        "phase {p}: {seen} arrivals seen"
                    );
                    wait(&b);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(arrived.load(Ordering::SeqCst), threads * phases);
    assert_eq!(
        leaders.load(Ordering::SeqCst),
        phases,
        "one leader per phase"
    );
}

macro_rules! barrier_tests {
    ($($name:ident: $ty:ty, $spin:expr),* $(,)?) => {$(
        #[test]
        fn $name() {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            for threads in [1, 2, 3, 5, 8] {
                // Always-spin barriers with more threads than CPUs crawl (each phase waits for
                // preempted threads' time slices, 002's point): a few phases prove they finish.
                let phases = match ($spin, threads > cpus) {
                    (true, true) => 2,
                    (true, false) => 50,
                    _ => iters(2_000) / threads,
                };
                barrier_phases(<$ty>::new, <$ty>::wait, threads, phases);
            }
        }
    )*};
}

barrier_tests! {
    central_informed: CentralBarrier<Informed>, false,
    central_spin: CentralBarrier<AlwaysSpin>, true,
    central_block: CentralBarrier<ImmediateBlock>, false,
    tree_informed: TreeBarrier<Informed>, false,
    tree_spin: TreeBarrier<AlwaysSpin>, true,
    tree_block: TreeBarrier<ImmediateBlock>, false,
    dissemination_informed: DisseminationBarrier<Informed>, false,
    dissemination_spin: DisseminationBarrier<AlwaysSpin>, true,
    dissemination_block: DisseminationBarrier<ImmediateBlock>, false,
}

#[test]
fn zero_participants_is_a_typed_error() {
    assert_eq!(
        Barrier::try_new(0).unwrap_err(),
        BarrierError::ZeroParticipants
    );
    assert!(TreeBarrier::<Informed>::try_new(0).is_err());
    assert!(DisseminationBarrier::<Informed>::try_new(0).is_err());
    let msg = BarrierError::ZeroParticipants.to_string();
    assert!(msg.contains("n = 0"), "{msg}");
}

#[test]
fn condvar_no_lost_wakeups() {
    // Ping-pong: each side waits for its turn; any lost wake-up hangs the test.
    let state = Arc::new((Mutex::new(0usize), Condvar::new()));
    let rounds = iters(5_000);
    let hs: Vec<_> = (0..2)
        .map(|me| {
            let state = state.clone();
            std::thread::spawn(move || {
                let (m, cv) = &*state;
                for _ in 0..rounds {
                    let mut g = m.lock();
                    cv.wait_while(&mut g, |turn| *turn % 2 != me);
                    *g += 1;
                    cv.notify_all();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*state.0.lock(), 2 * rounds);
}

#[test]
fn condvar_producers_consumers_exact() {
    let q = Arc::new((Mutex::new(Vec::<u64>::new()), Condvar::new()));
    let per = iters(20_000) as u64;
    let consumed = Arc::new(AtomicUsize::new(0));
    let sum = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut hs = Vec::new();
    for p in 0..3u64 {
        let q = q.clone();
        hs.push(std::thread::spawn(move || {
            for i in 0..per {
                q.0.lock().push(p * per + i);
                q.1.notify_one();
            }
        }));
    }
    let total = 3 * per as usize;
    for _ in 0..3 {
        let (q, consumed, sum) = (q.clone(), consumed.clone(), sum.clone());
        hs.push(std::thread::spawn(move || loop {
            let mut g = q.0.lock();
            loop {
                if let Some(v) = g.pop() {
                    sum.fetch_add(v, Ordering::Relaxed);
                    consumed.fetch_add(1, Ordering::SeqCst);
                    break;
                }
                if consumed.load(Ordering::SeqCst) >= total {
                    q.1.notify_all();
                    return;
                }
                q.1.wait_timeout(&mut g, std::time::Duration::from_millis(10));
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
    let n = 3 * per;
    assert_eq!(consumed.load(Ordering::SeqCst), total);
    assert_eq!(sum.load(Ordering::Relaxed), n * (n - 1) / 2);
}

#[test]
fn condvar_wait_timeout_times_out() {
    let m = Mutex::new(());
    let cv = Condvar::new();
    let mut g = m.lock();
    let r = cv.wait_timeout(&mut g, std::time::Duration::from_millis(5));
    assert!(r.timed_out());
    assert!(!cv.notify_one(), "nobody is parked any more");
}

#[test]
fn wait_times_are_counted_per_lock_and_process() {
    // This test needs the waiter to queue behind the holder (take a ticket), which an informing
    // FIFO lock does only while the machine is not oversubscribed (else it waits at the door
    // without a ticket): pin the signal for this process (stress tests stay correct either way).
    footprint_locks::os::force_oversubscribed(Some(false));
    // The holder releases as soon as it sees the waiter's ticket, and the waiter may find the
    // lock already served at its first look (a wait of 0 ns, correctly counted as such): each
    // attempt checks the counts, and some attempt within 200 must have waited for real.
    for attempt in 0..200 {
        let m = Arc::new(TicketMutex::new(0u64));
        let before = footprint_locks::stats::process_totals();
        let g = m.lock();
        // SAFETY: only reads counters.
        let raw = unsafe { m.raw() };
        let token = raw.arrival_token();
        let m2 = m.clone();
        let t = std::thread::spawn(move || *m2.lock() += 1);
        // Hold until the other thread has taken its ticket: it must then wait for us.
        while raw.arrival_token() == token {
            std::thread::yield_now();
        }
        drop(g);
        t.join().unwrap();
        assert_eq!(*m.lock(), 1);
        let times = raw.times();
        assert_eq!(times.contended, 1, "attempt {attempt}");
        let after = footprint_locks::stats::process_totals();
        assert!(after.contended > before.contended);
        assert!(after.wait_ns >= before.wait_ns + times.wait_ns);
        if times.wait_ns > 0 {
            return;
        }
    }
    panic!("200 contended acquisitions, and none counted any wait time");
}

#[test]
fn hold_times_are_counted_when_enabled() {
    footprint_locks::stats::set_enabled(true);
    let m = McsMutex::new(0u64);
    for _ in 0..10 {
        *m.lock() += 1;
    }
    // SAFETY: only reads counters.
    let times = unsafe { m.raw() }.times();
    assert_eq!(times.acquisitions, 10);
    assert!(times.hold_ns > 0);
    assert!(footprint_locks::stats::process_lock_hold_ns() >= times.hold_ns);
}
