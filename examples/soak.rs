//! Seeded chaos soak over footprint's public API.
//!
//! ```text
//! cargo run --release --example soak -- --seconds 60 --seed 42
//! cargo run --release --example soak -- --seconds 600 --only locks   # one operation only
//! ```
//!
//! Each round picks a runtime shape (1–5 workers, sometimes a fresh runtime, built and dropped)
//! and a random operation — join trees, scopes with borrows, every lock algorithm, every barrier,
//! a condvar queue, detached spawns, dropped handles, panics, `GreenLocal`, `block_in_place`,
//! `sleep`, channel messages with panicking destructors — and checks its exact invariant
//! (counts, sums, leader counts, panics reaching the joiner, each message dropped once or
//! leaked). At the end the OS-thread count and the resident memory must be back at the baseline
//! (the shared blocking pool's threads, kept 10 s idle, must all retire within 20 s).
//! A failure prints the seed and the round and exits non-zero; a watchdog turns a round that
//! makes no progress for 60 s into a failure with the runtime's `debug_state()`. Every runtime
//! runs with the runtime's own hang watchdog (10 s) and blocking detector on, and must end
//! clean: a hang report or a blocking warning fails the soak.
//!
//! New APIs (channels, `RwLock`, `OnceLock` when they land) go in `OPS` below: add a function
//! `fn op_name(rng: &mut Rng, rt: &Runtime)` that asserts its invariant, and one row.

use clap::builder::PossibleValuesParser;
use clap::Parser;
use footprint::locks::green_wait::{self, GreenLockWait};
use footprint::sync::baseline::{
    BlockArrayMutex, BlockMcsMutex, BlockTicketMutex, BlockTtasMutex, SpinArrayMutex, SpinMcsMutex,
    SpinTicketMutex, SpinTtasMutex, TtasMutex,
};
use footprint::sync::{
    ArrayMutex, CentralBarrier, Condvar, DisseminationBarrier, McsMutex, Mutex, TicketMutex,
    TreeBarrier,
};
use footprint::{GreenBuilder, GreenLocal, Runtime};

/// The default `Mutex`, named for the soak's messages when it runs under
/// `GreenLockWait::Poll`.
type PollingMutex<T> = Mutex<T>;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

/// splitmix64: a small seeded generator (the soak must replay from its seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

type Op = fn(&mut Rng, &Runtime);

/// What the round in progress is doing beyond its operation's name (a lock type, a thread
/// count), printed with a failure; operations that have such parameters set it.
static DETAIL: StdMutex<String> = StdMutex::new(String::new());

fn set_detail(d: String) {
    *DETAIL.lock().unwrap_or_else(|e| e.into_inner()) = d;
}

fn detail() -> String {
    DETAIL.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Every operation a round may run: its name (printed on failure) and its function.
const OPS: &[(&str, Op)] = &[
    ("join_tree", op_join_tree),
    ("scope_borrows", op_scope_borrows),
    ("locks", op_locks),
    ("barriers", op_barriers),
    ("condvar_queue", op_condvar_queue),
    ("detached_spawns", op_detached_spawns),
    ("dropped_handles", op_dropped_handles),
    ("panics", op_panics),
    ("green_local", op_green_local),
    ("block_in_place", op_block_in_place),
    ("sleep", op_sleep),
    ("panicking_messages", op_panicking_messages),
    ("many_per_worker", op_many_per_worker),
    ("channel_spin", op_channel_spin),
    ("os_barriers", op_os_barriers),
    // Add channels / RwLock / OnceLock here when they are on main.
];

fn tree_sum(lo: u64, hi: u64) -> u64 {
    if hi - lo <= 8 {
        return (lo..hi).sum();
    }
    let mid = lo + (hi - lo) / 2;
    let (a, b) = footprint::join(|| tree_sum(lo, mid), || tree_sum(mid, hi));
    a + b
}

fn op_join_tree(rng: &mut Rng, rt: &Runtime) {
    let n = rng.range(1, 20_000);
    let got = rt.block_on(|| tree_sum(0, n));
    assert_eq!(got, n * (n - 1) / 2, "join tree sum of 0..{n}");
}

fn op_scope_borrows(rng: &mut Rng, rt: &Runtime) {
    let k = rng.range(1, 64) as usize;
    let reps = rng.range(1, 50);
    let mut slots = vec![0u64; k];
    rt.block_on(|| {
        footprint::scope(|s| {
            for slot in slots.iter_mut() {
                s.spawn(move || {
                    for _ in 0..reps {
                        *slot += 1;
                        footprint::yield_now();
                    }
                });
            }
        })
    });
    assert!(
        slots.iter().all(|&v| v == reps),
        "scope slots {slots:?} != {reps}"
    );
}

/// `threads` green threads add 1 `iters` times each under `lock`; the total must be exact.
macro_rules! hammer {
    ($ty:ident, $rt:expr, $threads:expr, $iters:expr) => {{
        let m = Arc::new($ty::new(0u64));
        let m2 = m.clone();
        let (threads, iters) = ($threads, $iters);
        set_detail(format!(
            "{} threads={threads} iters={iters} workers={}",
            stringify!($ty),
            $rt.workers()
        ));
        $rt.block_on(move || {
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    let m = m2.clone();
                    footprint::spawn(move || {
                        for i in 0..iters {
                            *m.lock() += 1;
                            if i % 16 == 0 {
                                footprint::yield_now();
                            }
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        });
        assert_eq!(*m.lock(), threads * iters, "{} total", stringify!($ty));
    }};
}

fn op_locks(rng: &mut Rng, rt: &Runtime) {
    let t = rng.range(1, 16);
    let i = rng.range(1, 500);
    match rng.range(0, 13) {
        0 => hammer!(Mutex, rt, t, i),
        13 => {
            // The default Mutex with contended green threads polling while it changes hands.
            green_wait::with_green_lock_wait(GreenLockWait::Poll, || {
                hammer!(PollingMutex, rt, t, i)
            });
        }
        1 => hammer!(TtasMutex, rt, t, i),
        2 => hammer!(TicketMutex, rt, t, i),
        3 => hammer!(McsMutex, rt, t, i),
        4 => hammer!(ArrayMutex, rt, t, i),
        5 => hammer!(SpinTtasMutex, rt, t, i),
        6 => hammer!(SpinTicketMutex, rt, t, i),
        7 => hammer!(SpinMcsMutex, rt, t, i),
        8 => hammer!(BlockTtasMutex, rt, t, i),
        9 => hammer!(BlockTicketMutex, rt, t, i),
        10 => hammer!(BlockMcsMutex, rt, t, i),
        11 => hammer!(SpinArrayMutex, rt, t, i),
        _ => hammer!(BlockArrayMutex, rt, t, i),
    }
}

/// One of `n` participants passing `rounds` barrier episodes (`wait` waits once and says whether
/// this thread leads): counts its arrivals in `count` and its leaderships in `leaders`, and
/// checks that it never leaves an episode before all `n` threads have arrived at it.
fn barrier_episodes(
    n: u64,
    rounds: u64,
    count: &AtomicU64,
    leaders: &AtomicU64,
    wait: &dyn Fn() -> bool,
) {
    for r in 0..rounds {
        count.fetch_add(1, Ordering::SeqCst);
        if wait() {
            leaders.fetch_add(1, Ordering::SeqCst);
        }
        let seen = count.load(Ordering::SeqCst);
        assert!(seen >= (r + 1) * n, "passed a barrier early: {seen}");
        wait();
    }
}

/// `n` green threads pass `rounds` barrier episodes; exactly one leader per episode, and every
/// thread sees all increments of the episode before it.
macro_rules! barrier_run {
    ($ty:ident, $rt:expr, $n:expr, $rounds:expr) => {{
        let (n, rounds) = ($n, $rounds);
        set_detail(format!(
            "{} threads={n} rounds={rounds} workers={}",
            stringify!($ty),
            $rt.workers()
        ));
        let b = Arc::new(<$ty>::new(n as usize));
        let leaders = Arc::new(AtomicU64::new(0));
        let count = Arc::new(AtomicU64::new(0));
        let (b2, l2, c2) = (b.clone(), leaders.clone(), count.clone());
        $rt.block_on(move || {
            let hs: Vec<_> = (0..n)
                .map(|_| {
                    let (b, l, c) = (b2.clone(), l2.clone(), c2.clone());
                    footprint::spawn(move || {
                        barrier_episodes(n, rounds, &c, &l, &|| b.wait().is_leader())
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        });
        assert_eq!(
            leaders.load(Ordering::SeqCst),
            rounds,
            "{} leaders",
            stringify!($ty)
        );
        assert_eq!(count.load(Ordering::SeqCst), rounds * n);
    }};
}

fn op_barriers(rng: &mut Rng, rt: &Runtime) {
    // At most as many green threads as workers + 3: a spinning barrier needs its peers to run.
    let n = rng.range(1, rt.workers() as u64 + 3);
    let rounds = rng.range(1, 30);
    match rng.range(0, 2) {
        0 => barrier_run!(CentralBarrier, rt, n, rounds),
        1 => barrier_run!(TreeBarrier, rt, n, rounds),
        _ => barrier_run!(DisseminationBarrier, rt, n, rounds),
    }
}

/// Green threads outnumbering workers (up to 4 per worker, plus one) through the informed
/// barrier, the default mutex and a bounded channel pipeline: the wait paths that ask the
/// runtime whether the awaited threads run, and the wake-ups that send a barrier's or a
/// channel's waiters back to their own workers. Checks: one leader per phase and no early
/// passage, the exact mutex counts, the pipeline's exact sum.
fn op_many_per_worker(rng: &mut Rng, rt: &Runtime) {
    let per = rng.range(1, 4);
    let n = rt.workers() as u64 * per + rng.range(0, 1);
    let rounds = rng.range(1, 20);
    match rng.range(0, 2) {
        0 => barrier_run!(CentralBarrier, rt, n, rounds),
        1 => {
            let ops = rng.range(1, 2000);
            set_detail(format!("Mutex<[u64; 8]> threads={n} ops={ops}"));
            let m = Arc::new(Mutex::new([0u64; 8]));
            let m2 = m.clone();
            rt.block_on(move || {
                footprint::scope(|s| {
                    for i in 0..n {
                        let m = &m2;
                        s.spawn(move || {
                            let mut x = i;
                            for _ in 0..ops {
                                let mut g = m.lock();
                                for v in g.iter_mut() {
                                    *v += 1;
                                }
                                // Now and then the holder yields inside: its waiters on other
                                // workers then wait for a holder that is queued, not running
                                // (they park, or yield to the threads queued on their own).
                                if x & 63 == 0 {
                                    footprint::yield_now();
                                }
                                drop(g);
                                x = x.wrapping_mul(6364136223846793005).wrapping_add(1) ^ (x >> 29);
                            }
                            std::hint::black_box(x);
                        });
                    }
                })
            });
            assert_eq!(*m.lock(), [n * ops; 8], "mutex counts");
        }
        _ => {
            let cap = rng.range(0, 8) as usize;
            let messages = rng.range(0, 3000);
            let squarers = rng.range(1, n.max(1));
            set_detail(format!(
                "pipeline producers={n} squarers={squarers} cap={cap} messages={messages}"
            ));
            let sum = rt.block_on(move || {
                let (tx1, rx1) = footprint::channel::bounded::<u64>(cap);
                let (tx2, rx2) = footprint::channel::bounded::<u64>(cap);
                footprint::scope(|s| {
                    for p in 0..n {
                        let tx = tx1.clone();
                        s.spawn(move || {
                            let mut v = p;
                            while v < messages {
                                tx.send(v).unwrap();
                                v += n;
                            }
                        });
                    }
                    drop(tx1);
                    for _ in 0..squarers {
                        let (rx, tx) = (rx1.clone(), tx2.clone());
                        s.spawn(move || {
                            for v in rx.iter() {
                                tx.send(v * v).unwrap();
                            }
                        });
                    }
                    drop((rx1, tx2));
                    rx2.iter().sum::<u64>()
                })
            });
            assert_eq!(
                sum,
                (0..messages).map(|v| v * v).sum::<u64>(),
                "pipeline sum"
            );
        }
    }
}

/// Puts the kernel's oversubscription signal back to sampling when dropped (also when the
/// operation's check panics).
struct SampleAgain;

impl Drop for SampleAgain {
    fn drop(&mut self) {
        footprint::locks::os::force_oversubscribed(None);
    }
}

/// Plain OS threads (no runtime) through the informed barriers, up to two more threads than
/// CPUs: the kernel-informed wait (spin while the machine is not oversubscribed, for half the
/// switch cost that parked threads measure, re-sampling the run queue while it spins), and the
/// wake-up latencies the parked ones record. Checks: one leader per phase, no early passage.
fn op_os_barriers(rng: &mut Rng, _rt: &Runtime) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let n = rng.range(2, cpus + 2);
    let rounds = rng.range(1, 200);
    macro_rules! os_run {
        ($ty:ident) => {{
            set_detail(format!(
                "{} on OS threads: threads={n} rounds={rounds}",
                stringify!($ty)
            ));
            let b = <$ty>::new(n as usize);
            let (leaders, count) = (AtomicU64::new(0), AtomicU64::new(0));
            std::thread::scope(|s| {
                for _ in 0..n {
                    s.spawn(|| {
                        barrier_episodes(n, rounds, &count, &leaders, &|| b.wait().is_leader())
                    });
                }
            });
            assert_eq!(leaders.into_inner(), rounds, "{} leaders", stringify!($ty));
            assert_eq!(count.into_inner(), rounds * n);
        }};
    }
    match rng.range(0, 2) {
        0 => os_run!(CentralBarrier),
        1 => os_run!(TreeBarrier),
        _ => os_run!(DisseminationBarrier),
    }
}

/// A channel pipeline with one green thread per stage (producer → `bounded(cap)` → stage →
/// `bounded(cap)` → consumer), the kernel's oversubscription signal forced off: the first
/// waiter of a side spins while the other side runs on another worker, then tries again
/// before it parks (on a loaded machine no waiter would spin). Blocking or timed operations
/// (long timeouts, never expiring). Checks: the exact count and sum, in order.
fn op_channel_spin(rng: &mut Rng, rt: &Runtime) {
    let cap = rng.range(1, 8) as usize;
    let messages = rng.range(0, 5000);
    let timed = rng.range(0, 1) == 1;
    set_detail(format!(
        "channel_spin cap={cap} messages={messages} timed={timed}"
    ));
    footprint::locks::os::force_oversubscribed(Some(false));
    let _again = SampleAgain;
    let long = Duration::from_secs(600);
    let (n, sum) = rt.block_on(move || {
        let (tx1, rx1) = footprint::channel::bounded::<u64>(cap);
        let (tx2, rx2) = footprint::channel::bounded::<u64>(cap);
        footprint::scope(|s| {
            s.spawn(move || {
                for v in 0..messages {
                    if timed {
                        tx1.send_timeout(v, long).unwrap();
                    } else {
                        tx1.send(v).unwrap();
                    }
                }
            });
            s.spawn(move || {
                while let Ok(v) = if timed {
                    rx1.recv_timeout(long).map_err(|e| {
                        assert!(e.is_disconnected(), "a 600 s timeout expired");
                    })
                } else {
                    rx1.recv().map_err(|_| ())
                } {
                    tx2.send(2 * v).unwrap();
                }
            });
            let (mut n, mut sum, mut last) = (0u64, 0u64, None);
            for v in rx2.iter() {
                assert!(last < Some(v), "{v} after {last:?}: out of order");
                last = Some(v);
                n += 1;
                sum += v;
            }
            (n, sum)
        })
    });
    assert_eq!(n, messages, "every message once");
    assert_eq!(sum, messages * messages.saturating_sub(1), "pipeline sum");
}

fn op_condvar_queue(rng: &mut Rng, rt: &Runtime) {
    let producers = rng.range(1, 6);
    let per = rng.range(1, 300);
    let q = Arc::new((Mutex::new((Vec::<u64>::new(), 0u64)), Condvar::new()));
    let q2 = q.clone();
    let sum = rt.block_on(move || {
        let consumer = {
            let q = q2.clone();
            footprint::spawn(move || {
                let (m, cv) = &*q;
                let (mut got, mut sum) = (0, 0u64);
                let mut g = m.lock();
                while got < producers * per {
                    match g.0.pop() {
                        Some(v) => {
                            got += 1;
                            sum += v;
                        }
                        None => cv.wait(&mut g),
                    }
                }
                sum
            })
        };
        let hs: Vec<_> = (0..producers)
            .map(|p| {
                let q = q2.clone();
                footprint::spawn(move || {
                    for i in 0..per {
                        q.0.lock().0.push(p * per + i);
                        q.1.notify_one();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        consumer.join().unwrap()
    });
    let n = producers * per;
    assert_eq!(sum, n * (n - 1) / 2, "condvar queue sum");
}

fn op_detached_spawns(rng: &mut Rng, _rt: &Runtime) {
    // A fresh runtime: its drop waits for the detached threads, so the count is exact after.
    let workers = rng.range(1, 4) as usize;
    let n = rng.range(1, 500);
    let done = Arc::new(AtomicU64::new(0));
    let rt = watched(workers);
    for _ in 0..n {
        let d = done.clone();
        rt.spawn(move || {
            footprint::yield_now();
            d.fetch_add(1, Ordering::SeqCst);
        });
    }
    assert_clean(&rt);
    drop(rt);
    assert_eq!(done.load(Ordering::SeqCst), n, "detached threads finished");
}

fn op_dropped_handles(rng: &mut Rng, rt: &Runtime) {
    let n = rng.range(1, 300);
    let done = Arc::new(AtomicU64::new(0));
    let d = done.clone();
    rt.block_on(move || {
        for _ in 0..n {
            let d = d.clone();
            drop(footprint::spawn(move || d.fetch_add(1, Ordering::SeqCst)));
        }
        // The handles are gone: wait for the count itself, yielding the worker meanwhile.
        while d.load(Ordering::SeqCst) < n {
            footprint::yield_now();
        }
    });
    assert_eq!(done.load(Ordering::SeqCst), n);
}

fn op_panics(rng: &mut Rng, rt: &Runtime) {
    let n = rng.range(1, 50);
    let errs = rt.block_on(move || {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                footprint::spawn(move || {
                    if i % 2 == 0 {
                        panic!("soak: intended panic {i}");
                    }
                    i
                })
            })
            .collect();
        let mut errs = 0;
        for (i, h) in hs.into_iter().enumerate() {
            match h.join() {
                Err(_) => errs += 1,
                Ok(v) => assert_eq!(v, i as u64),
            }
        }
        errs
    });
    assert_eq!(errs, n.div_ceil(2), "panics reaching their joiners");
}

/// A channel message whose destructor panics when `panics` is set; it counts its drops in its
/// own counter, so a message dropped twice (or never, though not leaked by a panicking drain)
/// shows. (One counter per message, not a shared table: a leaked message keeps only its own
/// counter alive.)
struct Probe {
    id: usize,
    panics: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        let before = self.drops.fetch_add(1, Ordering::SeqCst);
        assert_eq!(before, 0, "soak: message {} dropped twice", self.id);
        if self.panics {
            panic!("soak: intended panic dropping message {}", self.id);
        }
    }
}

/// Drops `value`, returning whether its destructor panicked.
fn drop_caught<T>(value: T) -> bool {
    std::panic::catch_unwind(AssertUnwindSafe(move || drop(value))).is_err()
}

/// Producers send messages, a quarter of them with panicking destructors, over a random kind
/// of channel (rendezvous, bounded, unbounded); consumers take a random share, drop each (a
/// panic caught), then drop their receivers (the last one's drain may panic). Every message is
/// dropped exactly once — by a consumer, by its producer after a failed send, by the drain — or
/// leaked by a drain that panicked, and then only messages that were in the buffer.
fn op_panicking_messages(rng: &mut Rng, rt: &Runtime) {
    let cap = match rng.range(0, 3) {
        0 => Some(0),
        1 => Some(rng.range(1, 9) as usize),
        _ => None,
    };
    let producers = rng.range(1, 5) as usize;
    let consumers = rng.range(1, 4) as usize;
    // Few messages: a drain that panics leaks the rest of the buffer (by design), and the soak
    // checks its resident memory at the end.
    let per = rng.range(1, 40) as usize;
    let n = producers * per;
    let quota = rng.range(0, n as u64 + 1) as usize;
    let panics: Vec<bool> = (0..n).map(|_| rng.range(0, 3) == 0).collect();
    set_detail(format!(
        "cap {cap:?}, {producers} producers x {per}, {consumers} consumers, quota {quota}"
    ));
    let drops: Arc<Vec<Arc<AtomicUsize>>> = Arc::new((0..n).map(|_| Arc::default()).collect());
    let d = drops.clone();
    let (received, returned, drain_panicked) = rt.block_on(move || {
        let (tx, rx) = match cap {
            Some(c) => footprint::channel::bounded(c),
            None => footprint::channel::unbounded(),
        };
        let taken = Arc::new(AtomicUsize::new(0));
        let cs: Vec<_> = (0..consumers)
            .map(|_| {
                let (rx, taken) = (rx.clone(), taken.clone());
                footprint::spawn(move || {
                    let mut got = 0;
                    while taken.fetch_add(1, Ordering::SeqCst) < quota {
                        match rx.recv() {
                            Ok(m) => {
                                got += 1;
                                drop_caught(m);
                            }
                            Err(_) => break,
                        }
                    }
                    (got, drop_caught(rx))
                })
            })
            .collect();
        drop(rx);
        let ps: Vec<_> = (0..producers)
            .map(|p| {
                let (tx, d, panics) = (tx.clone(), d.clone(), panics.clone());
                footprint::spawn(move || {
                    let mut back = 0;
                    for id in p * per..(p + 1) * per {
                        let m = Probe {
                            id,
                            panics: panics[id],
                            drops: d[id].clone(),
                        };
                        if let Err(e) = tx.send(m) {
                            back += 1;
                            drop_caught(e.into_inner());
                        }
                    }
                    back
                })
            })
            .collect();
        drop(tx);
        let returned: usize = ps.into_iter().map(|h| h.join().unwrap()).sum();
        let (mut received, mut drain_panicked) = (0, false);
        for h in cs {
            let (got, panicked) = h.join().unwrap();
            received += got;
            drain_panicked |= panicked;
        }
        (received, returned, drain_panicked)
    });
    let counts: Vec<usize> = drops.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    assert!(counts.iter().all(|&c| c <= 1), "a message dropped twice");
    let leaked = counts.iter().filter(|&&c| c == 0).count();
    assert!(received + returned <= n, "more messages than were sent");
    assert!(
        leaked == 0 || drain_panicked,
        "{leaked} messages never dropped, with no panicking drain"
    );
    if let Some(c) = cap {
        assert!(leaked <= c, "{leaked} leaked, more than the buffer's {c}");
    }
}

static LOCAL: GreenLocal<std::cell::Cell<u64>> = GreenLocal::new(|| std::cell::Cell::new(0));

fn op_green_local(rng: &mut Rng, rt: &Runtime) {
    let n = rng.range(1, 100);
    rt.block_on(move || {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                GreenBuilder::new()
                    .name(format!("soak-local-{i}"))
                    .spawn(move || {
                        LOCAL.with(|c| c.set(i));
                        footprint::yield_now();
                        assert_eq!(LOCAL.with(|c| c.get()), i, "GreenLocal followed its thread");
                    })
                    .expect("spawn")
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
}

fn op_block_in_place(rng: &mut Rng, rt: &Runtime) {
    let n = rng.range(1, 20);
    let got = rt.block_on(move || {
        let hs: Vec<_> = (0..n)
            .map(|i| footprint::spawn(move || footprint::block_in_place(|| i * 3)))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    assert_eq!(got, 3 * n * (n - 1) / 2);
}

fn op_sleep(rng: &mut Rng, rt: &Runtime) {
    let n = rng.range(1, 200);
    let woke = rt.block_on(move || {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                footprint::spawn(move || {
                    let d = Duration::from_micros(i * 10);
                    let t0 = Instant::now();
                    footprint::sleep(d);
                    assert!(t0.elapsed() >= d, "sleep returned early");
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().is_ok() as u64).sum::<u64>()
    });
    assert_eq!(woke, n);
}

/// The name (as the kernel truncates it to 15 bytes) of the runtime's blocking-pool threads:
/// they serve `block_in_place` and `spawn_blocking` for every runtime and retire after 10 s idle.
const BLOCKING_POOL_COMM: &str = "footprint-block";

/// How long an idle blocking-pool thread lives (the runtime's keep-alive, 10 s) plus slack for a
/// loaded machine.
const BLOCKING_RETIRE_WITHIN: Duration = Duration::from_secs(20);

/// OS threads of this process that belong to the blocking pool (Linux /proc).
fn blocking_pool_threads() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm"))
                .is_ok_and(|c| c.trim_end() == BLOCKING_POOL_COMM)
        })
        .count() as u64
}

/// OS threads and resident KiB of this process (Linux /proc).
fn threads_and_rss() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        s.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("Threads:"), field("VmRSS:"))
}

/// Seeded chaos soak over footprint's public API, with the hang watchdog and the blocking
/// detector on: a hang report or a blocking warning fails it.
#[derive(Parser)]
#[command(name = "soak")]
struct Args {
    /// How long to run, in seconds
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// The generator's seed (replay a run with its seed) [default: from the clock]
    #[arg(long)]
    seed: Option<u64>,
    /// After the warm-up rounds, run only this operation
    #[arg(long, value_parser = PossibleValuesParser::new(OPS.iter().map(|(n, _)| *n)))]
    only: Option<String>,
}

/// The parsed command line, with the seed chosen and `--only` as an index into `OPS`.
struct Settings {
    seconds: u64,
    seed: u64,
    only: Option<usize>,
}

fn args() -> Settings {
    let a = Args::parse();
    Settings {
        seconds: a.seconds,
        seed: a.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        }),
        only: a.only.map(|name| {
            OPS.iter()
                .position(|(n, _)| *n == name)
                .expect("the parser admits only these names")
        }),
    }
}

/// A runtime with `workers` workers, the hang watchdog and the blocking detector on (in
/// release builds too).
fn watched(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .watchdog(Some(Duration::from_secs(10)))
        .blocking_warning(Some(footprint::DEFAULT_BLOCKING_WARNING))
        .build()
        .expect("runtime")
}

/// Whether the runtime's watcher stayed quiet (no hang report, no blocking warning).
fn clean(rt: &Runtime) -> Result<(), String> {
    let s = rt.stats();
    if s.hang_reports + s.blocking_warnings > 0 {
        return Err(format!(
            "the watcher reported {} hang(s) and {} blocking run(s) (see stderr)",
            s.hang_reports, s.blocking_warnings
        ));
    }
    Ok(())
}

fn assert_clean(rt: &Runtime) {
    if let Err(msg) = clean(rt) {
        panic!("{msg}");
    }
}

/// What the watchdog reads: the round in progress and the runtime it runs on.
struct Progress {
    round: AtomicU64,
    op: AtomicUsize,
    rt: StdMutex<Option<Arc<Runtime>>>,
}

const STALL: Duration = Duration::from_secs(60);

fn main() {
    let a = args();
    let only = a.only;
    println!(
        "soak: seed={} seconds={}{}",
        a.seed,
        a.seconds,
        only.map(|k| format!(" only={}", OPS[k].0))
            .unwrap_or_default()
    );
    let progress = Arc::new(Progress {
        round: AtomicU64::new(0),
        op: AtomicUsize::new(0),
        rt: StdMutex::new(None),
    });
    let seed = a.seed;
    {
        let p = progress.clone();
        std::thread::spawn(move || {
            let mut last = u64::MAX;
            loop {
                std::thread::sleep(STALL);
                let r = p.round.load(Ordering::SeqCst);
                if r == last {
                    let state = p.rt.lock().unwrap().as_ref().map(|rt| rt.debug_state());
                    eprintln!(
                        "soak: FAILED seed={seed} round={r} op={} ({}): no progress for {} s; \
                         debug_state: {}",
                        OPS[p.op.load(Ordering::SeqCst)].0,
                        detail(),
                        STALL.as_secs(),
                        state.unwrap_or_else(|| "(no runtime)".into())
                    );
                    std::process::exit(1);
                }
                last = r;
            }
        });
    }
    std::panic::set_hook(Box::new(|_| {})); // intended panics stay quiet; failures print below
    let mut rng = Rng(seed);
    let end = Instant::now() + Duration::from_secs(a.seconds);
    let mut baseline = None;
    let mut rt: Arc<Runtime> = Arc::new(watched(2));
    let mut round = 0u64;
    let mut counts = vec![0u64; OPS.len()];
    while Instant::now() < end || round < OPS.len() as u64 {
        round += 1;
        if rng.range(0, 9) == 0 {
            // A runtime built and dropped: the old one's drop waits for all its threads.
            let workers = rng.range(1, 5) as usize;
            *progress.rt.lock().unwrap() = None;
            if let Err(msg) = clean(&rt) {
                eprintln!("soak: FAILED seed={seed} round={round}: {msg}");
                std::process::exit(1);
            }
            rt = Arc::new(watched(workers));
        }
        // The first rounds run every operation once (warm-up: lazily started threads and pools).
        let op = if round <= OPS.len() as u64 {
            round as usize - 1
        } else {
            let k = rng.range(0, OPS.len() as u64 - 1) as usize;
            only.unwrap_or(k)
        };
        set_detail(String::new());
        progress.op.store(op, Ordering::SeqCst);
        *progress.rt.lock().unwrap() = Some(rt.clone());
        progress.round.store(round, Ordering::SeqCst);
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| (OPS[op].1)(&mut rng, &rt)));
        if let Err(p) = r {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            eprintln!(
                "soak: FAILED seed={seed} round={round} op={} ({}): {msg}",
                OPS[op].0,
                detail()
            );
            std::process::exit(1);
        }
        counts[op] += 1;
        if round == OPS.len() as u64 {
            let (threads, rss) = threads_and_rss();
            baseline = Some((threads - blocking_pool_threads().min(threads), rss));
        }
    }
    *progress.rt.lock().unwrap() = None;
    let rt_threads = rt.workers() as u64;
    if let Err(msg) = clean(&rt) {
        eprintln!("soak: FAILED seed={seed} round={round}: {msg}");
        std::process::exit(1);
    }
    drop(rt);
    // The blocking pool keeps idle threads for its keep-alive and is shared by every runtime, so
    // its threads are counted apart: they must all retire (a thread that never does is a leak),
    // and every other thread must be back to the baseline's count at once.
    let retire_by = Instant::now() + BLOCKING_RETIRE_WITHIN;
    let mut pool_left = blocking_pool_threads();
    while pool_left > 0 && Instant::now() < retire_by {
        std::thread::sleep(Duration::from_millis(100));
        pool_left = blocking_pool_threads();
    }
    if pool_left > 0 {
        eprintln!(
            "soak: FAILED seed={seed} round={round}: {pool_left} blocking-pool threads still \
             alive {} s after the last use (keep-alive is 10 s)",
            BLOCKING_RETIRE_WITHIN.as_secs()
        );
        std::process::exit(1);
    }
    // Back to the shape of the baseline: the same runtime size is not guaranteed, so compare
    // with the workers of both accounted for.
    let (t_end, rss_end) = threads_and_rss();
    let (t_base, rss_base) = baseline.expect("baseline");
    let per_op: Vec<String> = OPS
        .iter()
        .zip(&counts)
        .map(|((n, _), c)| format!("{n}={c}"))
        .collect();
    println!(
        "soak: rounds={round} threads baseline={t_base} end={t_end} (+{rt_threads} workers dropped) \
         rss_kib baseline={rss_base} end={rss_end} | {}",
        per_op.join(" ")
    );
    // The baseline had the 2-worker first runtime (unless rebuilt) running; at the end none runs.
    if t_end > t_base {
        eprintln!("soak: FAILED seed={seed} round={round}: OS threads {t_end} > baseline {t_base}");
        std::process::exit(1);
    }
    if rss_end > rss_base * 2 + 64 * 1024 {
        eprintln!(
            "soak: FAILED seed={seed} round={round}: resident memory {rss_end} KiB, baseline \
             {rss_base} KiB"
        );
        std::process::exit(1);
    }
    println!("soak: ok seed={seed}");
}
