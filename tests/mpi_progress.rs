//! MPI inside footprint (feature `mpi`): a green thread blocked in an MPI receive does not stop
//! the other green threads on its worker. Runs as one process (`cargo test --features mpi`) or
//! under `mpirun -n 2`; each rank receives from the previous rank (itself when alone).
//!
//! A plain test binary (`harness = false`): MPI may be initialised once per process, so the
//! checks run in sequence from `main`. A watchdog aborts every rank when a check hangs.
//!
//! The argument for each check: on a one-worker runtime the receiver enters its receive first;
//! the others wait for that, then count, and only then does the sender send the message the
//! peer's receiver waits for. If the blocked receiver held the worker, no rank would ever send,
//! and the watchdog would fire.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use footprint::mpi::rsmpi::topology::SimpleCommunicator;
use footprint::mpi::rsmpi::traits::*;
use footprint::mpi::{self as fmpi, MpiError};
use footprint::Runtime;

/// Green threads that must run while the receiver is blocked.
const OTHERS: usize = 4;
/// Increments (each followed by a yield) per other green thread.
const STEPS: usize = 50;
/// Seconds before the watchdog aborts every rank.
const WATCHDOG_SECS: u64 = 60;

/// How the receiver waits.
#[derive(Clone, Copy, Debug)]
enum Receive {
    /// A blocking `receive` run through `footprint::mpi::blocking`.
    Blocking,
    /// An immediate receive polled by `footprint::mpi::wait`.
    Immediate,
}

/// What one check observed on this rank.
#[derive(Debug, PartialEq)]
struct Outcome {
    received: u64,
    counted: usize,
}

fn world() -> SimpleCommunicator {
    SimpleCommunicator::world()
}

/// The value rank `r` sends for `tag`.
fn payload(rank: i32, tag: i32) -> u64 {
    (rank as u64) * 1000 + tag as u64
}

/// Runs one receive-while-others-run exchange on a one-worker runtime.
fn blocked_receive_lets_others_run(rt: &Runtime, how: Receive, tag: i32) -> Outcome {
    let (rank, size) = (world().rank(), world().size());
    let (to, from) = ((rank + 1) % size, (rank + size - 1) % size);
    let entered = AtomicBool::new(false);
    let counter = AtomicUsize::new(0);
    let (entered, counter) = (&entered, &counter);
    rt.block_on(|| {
        footprint::scope(|s| {
            let receiver = s.spawn(move || match how {
                Receive::Blocking => fmpi::blocking(|| {
                    entered.store(true, Ordering::Release);
                    world().process_at_rank(from).receive_with_tag::<u64>(tag).0
                }),
                Receive::Immediate => {
                    let mut v = 0u64;
                    fmpi::rsmpi::request::scope(|scope| {
                        let req = world()
                            .process_at_rank(from)
                            .immediate_receive_into_with_tag(scope, &mut v, tag);
                        entered.store(true, Ordering::Release);
                        fmpi::wait(req);
                    });
                    v
                }
            });
            let others: Vec<_> = (0..OTHERS)
                .map(|_| {
                    s.spawn(move || {
                        while !entered.load(Ordering::Acquire) {
                            footprint::yield_now();
                        }
                        for _ in 0..STEPS {
                            counter.fetch_add(1, Ordering::Relaxed);
                            footprint::yield_now();
                        }
                    })
                })
                .collect();
            let sender = s.spawn(move || {
                for h in others {
                    h.join().expect("a counting green thread panicked");
                }
                let counted = counter.load(Ordering::Relaxed);
                let value = payload(rank, tag);
                fmpi::blocking(|| world().process_at_rank(to).send_with_tag(&value, tag));
                counted
            });
            let counted = sender.join().expect("the sender panicked");
            let received = receiver.join().expect("the receiver panicked");
            Outcome { received, counted }
        })
    })
}

/// `progress` keeps a request whose message cannot have been sent yet (every rank sends only
/// after a barrier that follows the check) and drops it once the message has landed.
fn progress_keeps_pending_requests(world: &SimpleCommunicator, tag: i32) -> u64 {
    let (rank, size) = (world.rank(), world.size());
    let (to, from) = ((rank + 1) % size, (rank + size - 1) % size);
    let mut got = 0u64;
    fmpi::rsmpi::request::scope(|scope| {
        let mut reqs = vec![world
            .process_at_rank(from)
            .immediate_receive_into_with_tag(scope, &mut got, tag)];
        fmpi::progress(&mut reqs);
        assert_eq!(reqs.len(), 1, "a receive completed before any rank sent");
        world.barrier();
        world
            .process_at_rank(to)
            .send_with_tag(&payload(rank, tag), tag);
        while !reqs.is_empty() {
            fmpi::progress(&mut reqs);
        }
    });
    got
}

/// Aborts every rank unless `done` is signalled within the watchdog time.
fn start_watchdog() -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) =
            rx.recv_timeout(Duration::from_secs(WATCHDOG_SECS))
        {
            eprintln!(
                "rank {}: no progress after {WATCHDOG_SECS} s: a blocked receive stalled its \
                 worker; aborting",
                world().rank()
            );
            world().abort(3);
        }
    });
    tx
}

fn main() -> ExitCode {
    let universe = match fmpi::initialize() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("mpi_progress: {e}");
            return ExitCode::FAILURE;
        }
    };
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let done = start_watchdog();
    // A failed check on one rank must not leave the others waiting for it.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        SimpleCommunicator::world().abort(2);
    }));

    // The granted level is what footprint needs, and a second initialisation is refused.
    assert_eq!(
        fmpi::rsmpi::environment::threading_support(),
        fmpi::REQUIRED_THREADING
    );
    assert!(matches!(
        fmpi::initialize(),
        Err(MpiError::AlreadyInitialized)
    ));

    // Placement: the reported set is the process's allowed set, and the default runtime puts
    // one worker on each of its CPUs.
    let here = fmpi::placement(&world).expect("placement");
    assert_eq!((here.rank, here.size), (rank, size));
    assert_eq!(
        here.cpus,
        footprint::affinity::allowed_cpus().expect("allowed CPUs")
    );
    assert!(!here.shares_cpus_with.contains(&rank));
    let default_rt = Runtime::builder().build().expect("default runtime");
    assert_eq!(default_rt.workers(), here.cpus.len());
    drop(default_rt);

    let rt = Runtime::builder()
        .workers(1)
        .build()
        .expect("one-worker runtime");
    let from = (rank + size - 1) % size;
    for (how, tag) in [(Receive::Blocking, 11), (Receive::Immediate, 12)] {
        let got = blocked_receive_lets_others_run(&rt, how, tag);
        assert_eq!(
            got,
            Outcome {
                received: payload(from, tag),
                counted: OTHERS * STEPS
            },
            "{how:?} receive on rank {rank}"
        );
        println!("rank {rank}/{size}: {how:?} receive: other green threads ran, got {got:?}");
    }
    drop(rt);
    assert_eq!(
        progress_keeps_pending_requests(&world, 13),
        payload(from, 13)
    );
    world.barrier();
    let _ = done.send(());
    println!("rank {rank}/{size}: {here}: all MPI progress checks passed");
    ExitCode::SUCCESS
}
