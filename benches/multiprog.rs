//! 002's experiment at small size: a lock-and-barrier loop under multiprogramming degree 1–4,
//! i.e. 1 to 4 copies of the same program running at once on this machine's 2 CPUs.
//!
//! The program: 2 OS threads (one per CPU). Each iteration takes the lock, does ≈40 ns of work
//! on the shared counter inside, releases it and does ≈400 ns of work outside; every 16
//! iterations all threads meet at a barrier. One criterion iteration is one loop iteration of
//! every thread (the time is from the moment the threads are lined up to the last one's end).
//!
//! Multiprogramming degree `d`: before timing, `d - 1` background copies of this bench binary are
//! started (same variant, same loop, repeated until they are killed), so `2d` threads compete for
//! 2 CPUs and lock holders and barrier laggards get preempted — the case informing waiting was
//! designed for.
//!
//! Variants (same program, only the waiting differs):
//! - `informed`: footprint-locks TTAS mutex + central barrier with `Informed` waiting (002/004:
//!   spin while the holder runs, block when the expected wait is long or the machine is
//!   oversubscribed);
//! - `spin`: the same algorithms with `AlwaysSpin` (scheduler-oblivious spinning);
//! - `block`: the same algorithms with `ImmediateBlock` (park at once);
//! - `std`: `std::sync::Mutex` + `std::sync::Barrier` (peer);
//! - `parking_lot`: `parking_lot::Mutex` + `std::sync::Barrier` (peer).
//!
//! Run: `cargo bench --bench multiprog -- --warm-up-time 1 --measurement-time 3`
//! (the background copies are this binary re-run with `FOOTPRINT_MULTIPROG_BACKGROUND=<variant>`;
//! they are killed when their degree is done.)

use std::hint::black_box;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion};
use footprint::locks::{
    AlwaysSpin, BlockTtasMutex, CentralBarrier, ImmediateBlock, Informed, SpinTtasMutex, TtasMutex,
};

/// Threads per program: one per CPU of this machine.
const THREADS: usize = 2;
/// Iterations between barriers.
const BARRIER_EVERY: u64 = 16;
/// Work units inside and outside the critical section (one unit is one dependent multiply-add
/// that the compiler cannot fold, ≈0.9–1.3 ns here).
const INSIDE: u64 = 40;
const OUTSIDE: u64 = 400;
/// Environment variable that turns this binary into a background copy.
const BACKGROUND_ENV: &str = "FOOTPRINT_MULTIPROG_BACKGROUND";

#[inline(never)]
fn work(units: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..units {
        // black_box per step: the compiler can neither fold the recurrence nor drop the call.
        x = black_box(x)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    black_box(x)
}

/// A lock around a `u64` counter.
trait CounterLock: Sync {
    fn new() -> Self;
    /// Takes the lock, works `units` inside, increments the counter.
    fn add(&self, units: u64);
    fn get(&self) -> u64;
}

/// The `lock_api` mutexes (footprint's three waiting policies and parking_lot) share one shape.
macro_rules! lock_api_counter {
    ($($ty:ty),*) => {$(
        impl CounterLock for $ty {
            fn new() -> Self {
                <$ty>::new(0)
            }
            fn add(&self, units: u64) {
                let mut guard = self.lock();
                work(units, *guard);
                *guard += 1;
            }
            fn get(&self) -> u64 {
                *self.lock()
            }
        }
    )*};
}

lock_api_counter!(
    TtasMutex<u64>,
    SpinTtasMutex<u64>,
    BlockTtasMutex<u64>,
    parking_lot::Mutex<u64>
);

impl CounterLock for std::sync::Mutex<u64> {
    fn new() -> Self {
        std::sync::Mutex::new(0)
    }
    fn add(&self, units: u64) {
        let mut guard = self.lock().expect("no thread panics while holding it");
        work(units, *guard);
        *guard += 1;
    }
    fn get(&self) -> u64 {
        *self.lock().expect("no thread panics while holding it")
    }
}

/// A reusable barrier for `n` threads.
trait PhaseBarrier: Sync {
    fn new(n: usize) -> Self;
    fn wait(&self);
}

impl<W: footprint::locks::WaitPolicy> PhaseBarrier for CentralBarrier<W> {
    fn new(n: usize) -> Self {
        CentralBarrier::new(n)
    }
    fn wait(&self) {
        CentralBarrier::wait(self);
    }
}

impl PhaseBarrier for std::sync::Barrier {
    fn new(n: usize) -> Self {
        std::sync::Barrier::new(n)
    }
    fn wait(&self) {
        std::sync::Barrier::wait(self);
    }
}

/// Runs `iters` iterations of the loop on `THREADS` threads; returns the time from the moment all
/// threads are lined up to the end of the last one.
fn lock_barrier_loop<L: CounterLock, B: PhaseBarrier>(iters: u64) -> Duration {
    let lock = L::new();
    let barrier = B::new(THREADS);
    let line_up = std::sync::Barrier::new(THREADS + 1);
    let elapsed = std::thread::scope(|s| {
        for t in 0..THREADS as u64 {
            let (lock, barrier, line_up) = (&lock, &barrier, &line_up);
            s.spawn(move || {
                line_up.wait();
                for i in 0..iters {
                    lock.add(INSIDE);
                    work(OUTSIDE, t + i);
                    if i % BARRIER_EVERY == BARRIER_EVERY - 1 {
                        barrier.wait();
                    }
                }
            });
        }
        line_up.wait();
        let start = Instant::now();
        // The scope joins the threads when the closure returns; time it from here.
        start
    })
    .elapsed();
    assert_eq!(lock.get(), THREADS as u64 * iters, "lost lock updates");
    elapsed
}

#[derive(Clone, Copy, Debug)]
enum Variant {
    Informed,
    Spin,
    Block,
    Std,
    ParkingLot,
}

impl Variant {
    const ALL: [Variant; 5] = [
        Variant::Informed,
        Variant::Spin,
        Variant::Block,
        Variant::Std,
        Variant::ParkingLot,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::Informed => "informed",
            Variant::Spin => "spin",
            Variant::Block => "block",
            Variant::Std => "std",
            Variant::ParkingLot => "parking_lot",
        }
    }

    fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    fn run(self, iters: u64) -> Duration {
        match self {
            Variant::Informed => {
                lock_barrier_loop::<TtasMutex<u64>, CentralBarrier<Informed>>(iters)
            }
            Variant::Spin => {
                lock_barrier_loop::<SpinTtasMutex<u64>, CentralBarrier<AlwaysSpin>>(iters)
            }
            Variant::Block => {
                lock_barrier_loop::<BlockTtasMutex<u64>, CentralBarrier<ImmediateBlock>>(iters)
            }
            Variant::Std => lock_barrier_loop::<std::sync::Mutex<u64>, std::sync::Barrier>(iters),
            Variant::ParkingLot => {
                lock_barrier_loop::<parking_lot::Mutex<u64>, std::sync::Barrier>(iters)
            }
        }
    }
}

/// The background copies of one degree; killed on drop.
struct Background(Vec<Child>);

impl Background {
    fn start(variant: Variant, copies: usize) -> Background {
        let exe = std::env::current_exe().expect("the bench binary knows its path");
        let children = (0..copies)
            .map(|_| {
                Command::new(&exe)
                    .env(BACKGROUND_ENV, variant.name())
                    // The child exits when this pipe closes: when we drop it, or when this process
                    // dies without running destructors (Ctrl-C), so no copy is left behind.
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .expect("starting a background copy of the bench")
            })
            .collect();
        Background(children)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        for child in &mut self.0 {
            // Only the children this bench started; errors mean it already exited.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Body of a background copy: the same loop, until the parent closes our stdin (or dies).
fn background(variant: Variant) -> ! {
    std::thread::spawn(|| {
        let mut byte = [0u8; 1];
        // EOF or an error: the parent is gone or done with us.
        let _ = std::io::stdin().read(&mut byte);
        std::process::exit(0)
    });
    loop {
        variant.run(10_000);
    }
}

fn multiprogramming(c: &mut Criterion) {
    let mut group = c.benchmark_group("multiprog");
    for degree in 1..=4usize {
        for variant in Variant::ALL {
            let _background = Background::start(variant, degree - 1);
            group.bench_function(BenchmarkId::new(variant.name(), degree), |b| {
                b.iter_custom(|iters| variant.run(iters))
            });
        }
    }
    group.finish();
}

#[path = "common/short.rs"]
mod short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = multiprogramming
}

fn main() {
    if let Ok(name) = std::env::var(BACKGROUND_ENV) {
        match Variant::from_name(&name) {
            Some(variant) => background(variant),
            None => {
                eprintln!("{BACKGROUND_ENV}={name:?} is not a variant");
                std::process::exit(2)
            }
        }
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
