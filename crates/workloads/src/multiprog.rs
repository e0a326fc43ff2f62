//! 002's lock-and-barrier loop and its background copies, shared by `benches/multiprog.rs` and the
//! report (`tools/report`), so that both time exactly the same program (see the bench's top
//! comment for the loop, the variants and the multiprogramming degrees).
//!
//! Background copies are the including binary re-run with `FOOTPRINT_MULTIPROG_BACKGROUND=<variant>`
//! (its `main` calls [`run_background_if_requested`] first). A copy exits when its stdin pipe
//! closes (the parent dropped its [`Background`] or died) and is killed by the kernel when the
//! thread that started it dies (`PR_SET_PDEATHSIG`), so an interrupted run leaves none behind.

pub use crate::work::work;

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use footprint::locks::{
    AlwaysSpin, BlockTtasMutex, CentralBarrier, ImmediateBlock, Informed, SpinTtasMutex, TtasMutex,
};

/// Threads per program in the bench: one per CPU of the 2-core machine it was written on (the
/// report runs one per worker it is given, [`Variant::run_on`]).
pub const THREADS: usize = 2;
/// Iterations between barriers.
pub const BARRIER_EVERY: u64 = 16;
/// Work units inside and outside the critical section (one unit is one dependent multiply-add
/// that the compiler cannot fold, ≈0.9–1.3 ns here).
pub const INSIDE: u64 = 40;
pub const OUTSIDE: u64 = 400;
/// Environment variable that turns this binary into a background copy.
pub const BACKGROUND_ENV: &str = "FOOTPRINT_MULTIPROG_BACKGROUND";
/// Environment variable with a background copy's thread count (default [`THREADS`]).
pub const THREADS_ENV: &str = "FOOTPRINT_MULTIPROG_THREADS";

/// A lock around a `u64` counter.
pub trait CounterLock: Sync {
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
pub trait PhaseBarrier: Sync {
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

/// Runs `iters` iterations of the loop on `threads` threads; returns the time from the first
/// thread's start (after all are lined up) to the last one's end. Each thread takes its own
/// timestamps: under multiprogramming the spawning thread may be preempted right after the
/// line-up and read the clock only after the loop is over, which made some runs look ~free.
///
/// # Panics
/// If `threads` is 0, or an update of the lock was lost.
pub fn lock_barrier_loop<L: CounterLock, B: PhaseBarrier>(threads: usize, iters: u64) -> Duration {
    assert!(threads > 0, "the loop needs at least one thread");
    let lock = L::new();
    let barrier = B::new(threads);
    let line_up = std::sync::Barrier::new(threads);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..threads as u64)
            .map(|t| {
                let (lock, barrier, line_up) = (&lock, &barrier, &line_up);
                s.spawn(move || {
                    line_up.wait();
                    let start = Instant::now();
                    for i in 0..iters {
                        lock.add(INSIDE);
                        work(OUTSIDE, t + i);
                        if i % BARRIER_EVERY == BARRIER_EVERY - 1 {
                            barrier.wait();
                        }
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|h| h.join().expect("a loop thread does not panic"))
            .collect()
    });
    assert_eq!(lock.get(), spans.len() as u64 * iters, "lost lock updates");
    let first = spans.iter().map(|s| s.0).min().expect("threads > 0");
    let last = spans.iter().map(|s| s.1).max().expect("threads > 0");
    last - first
}

#[derive(Clone, Copy, Debug)]
pub enum Variant {
    Informed,
    Spin,
    Block,
    Std,
    ParkingLot,
}

impl Variant {
    pub const ALL: [Variant; 5] = [
        Variant::Informed,
        Variant::Spin,
        Variant::Block,
        Variant::Std,
        Variant::ParkingLot,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Informed => "informed",
            Variant::Spin => "spin",
            Variant::Block => "block",
            Variant::Std => "std",
            Variant::ParkingLot => "parking_lot",
        }
    }

    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// `iters` iterations of the loop on the bench's [`THREADS`] threads.
    pub fn run(self, iters: u64) -> Duration {
        self.run_on(THREADS, iters)
    }

    /// `iters` iterations of the loop on `threads` threads.
    pub fn run_on(self, threads: usize, iters: u64) -> Duration {
        let t = threads;
        match self {
            Variant::Informed => {
                lock_barrier_loop::<TtasMutex<u64>, CentralBarrier<Informed>>(t, iters)
            }
            Variant::Spin => {
                lock_barrier_loop::<SpinTtasMutex<u64>, CentralBarrier<AlwaysSpin>>(t, iters)
            }
            Variant::Block => {
                lock_barrier_loop::<BlockTtasMutex<u64>, CentralBarrier<ImmediateBlock>>(t, iters)
            }
            Variant::Std => {
                lock_barrier_loop::<std::sync::Mutex<u64>, std::sync::Barrier>(t, iters)
            }
            Variant::ParkingLot => {
                lock_barrier_loop::<parking_lot::Mutex<u64>, std::sync::Barrier>(t, iters)
            }
        }
    }
}

/// Makes a child started by `command` die with the thread that starts it (`PR_SET_PDEATHSIG`:
/// the kernel sends SIGKILL when that thread exits, also when the process is killed), and exit at
/// once if its parent is already gone when it starts.
pub fn die_with_parent(command: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls only async-signal-safe
    // functions (prctl, getppid, _exit), touching no state shared with the parent.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                // The parent died before prctl: nobody would stop us.
                libc::_exit(0);
            }
            Ok(())
        });
    }
}

/// The background copies of one degree; killed on drop.
pub struct Background(Vec<Child>);

impl Background {
    /// `copies` background copies of the bench's program ([`THREADS`] threads each).
    pub fn start(variant: Variant, copies: usize) -> Background {
        Background::start_on(variant, THREADS, copies)
    }

    /// `copies` background copies of a program of `threads` threads.
    pub fn start_on(variant: Variant, threads: usize, copies: usize) -> Background {
        let exe = std::env::current_exe().expect("the bench binary knows its path");
        let children = (0..copies)
            .map(|_| {
                let mut command = Command::new(&exe);
                command
                    .env(BACKGROUND_ENV, variant.name())
                    .env(THREADS_ENV, threads.to_string())
                    // The child exits when this pipe closes: when we drop it, or when this process
                    // dies without running destructors (Ctrl-C), so no copy is left behind.
                    .stdin(Stdio::piped())
                    // It says on this pipe when its loop starts.
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit());
                die_with_parent(&mut command);
                command
                    .spawn()
                    .expect("starting a background copy of the bench")
            })
            .collect::<Vec<Child>>();
        let mut background = Background(children);
        // Wait until every copy runs its loop: a measurement that starts earlier runs its first
        // milliseconds (the copies' exec and start-up) without them, and a short one all of it
        // (the always-spin variant read 1.4 µs per iteration at degree 4, where it takes
        // 400-500 µs with the copies running).
        for child in &mut background.0 {
            let mut byte = [0u8; 1];
            if let Some(out) = child.stdout.as_mut() {
                // EOF: the copy died (its stderr says why); the measurement goes on without it.
                let _ = out.read(&mut byte);
            }
        }
        background
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

/// Body of a background copy: the same loop on `threads` threads, until the parent closes our
/// stdin (or dies).
pub fn background(variant: Variant, threads: usize) -> ! {
    std::thread::spawn(|| {
        let mut byte = [0u8; 1];
        // EOF or an error: the parent is gone or done with us.
        let _ = std::io::stdin().read(&mut byte);
        std::process::exit(0)
    });
    // Tell the parent the loop starts (`Background::start_on` waits for it).
    let mut out = std::io::stdout();
    let _ = out.write_all(b"r").and_then(|()| out.flush());
    loop {
        variant.run_on(threads, 10_000);
    }
}

/// When this process was started as a background copy (by [`Background::start`]), runs that copy
/// and never returns; otherwise returns at once. Call it first thing in `main`.
pub fn run_background_if_requested() {
    if let Ok(name) = std::env::var(BACKGROUND_ENV) {
        let threads = match std::env::var(THREADS_ENV) {
            Err(_) => THREADS,
            Ok(t) => match t.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    eprintln!("{THREADS_ENV}={t:?} is not a positive thread count");
                    std::process::exit(2)
                }
            },
        };
        match Variant::from_name(&name) {
            Some(variant) => background(variant, threads),
            None => {
                eprintln!("{BACKGROUND_ENV}={name:?} is not a variant");
                std::process::exit(2)
            }
        }
    }
}
