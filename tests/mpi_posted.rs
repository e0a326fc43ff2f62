//! Posted MPI operations from many green threads, through the route `footprint::mpi::init`
//! chose (feature `mpi`). Run plain, the library grants `MPI_THREAD_MULTIPLE` and green threads
//! call MPI themselves (`Route::Direct`); with `--funneled` the program asks for
//! `MPI_THREAD_FUNNELED` and every call goes through the owner thread, whose progress engine
//! tests the posted requests (`Route::Owner`). The program is the same either way.
//!
//! Each of 64 green threads per rank passes a 16 KiB token around a ring of ranks: it posts its
//! receive first, and on every rank but the first waits for it before it forwards the token, so
//! each receive is posted long before its matching send exists (another rank's later job). With
//! jobs that block (the old funnelled style) this deadlocks; with posted operations every value
//! must arrive, exactly as a one-process replay of the ring computes it. The ring runs on a
//! duplicate of the world and on a split communicator (even and odd ranks). Under the owner
//! route every start must run on the owner thread.
//!
//! Run: `mpirun -n 4 <test binary> [--funneled]` (CI runs both), or as one process. A plain test
//! binary (`harness = false`: MPI is initialised once per process); a watchdog aborts a hung rank.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use footprint::mpi::rsmpi::topology::Color;
use footprint::mpi::rsmpi::traits::*;
use footprint::mpi::rsmpi::Threading;
use footprint::mpi::{Comm, Route};
use footprint::Runtime;

/// Green threads per rank (one token each).
const THREADS: u64 = 64;
/// Words per token: 16 KiB, past Open MPI's eager limits, so a send needs the receiver's
/// progress (a rendezvous protocol).
const LEN: usize = 2048;
/// Seconds before the watchdog aborts this rank (and with it the job).
const WATCHDOG_SECS: u64 = 120;
/// The owner thread's name (set by `ProgressOwner::start`).
const OWNER: &str = "footprint-mpi-owner";

/// The token thread `t` starts with.
fn first_token(t: u64) -> Vec<u64> {
    (0..LEN as u64).map(|i| t * 1_000_003 + i).collect()
}

/// What rank `r` adds to every word of thread `t`'s token before forwarding it.
fn step(r: i32, t: u64) -> u64 {
    (r as u64 + 1) * (t + 1)
}

/// The token thread `t` of rank `r` (not the first) receives: the one-process replay.
fn expected_at(r: i32, size: i32, t: u64) -> Vec<u64> {
    let mut token = first_token(t);
    // Rank 0 receives the token after it went round every other rank.
    let upto = if r == 0 { size } else { r };
    for q in 1..upto {
        for w in &mut token {
            *w += step(q, t);
        }
    }
    token
}

/// Runs the ring on `comm`; returns the number of tokens that arrived wrong.
fn ring(comm: &Comm, route: Route, off_owner: &Arc<AtomicBool>) -> usize {
    let (r, n) = (comm.rank(), comm.size());
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let comm = comm.clone();
            let off_owner = off_owner.clone();
            footprint::spawn(move || {
                let tag = t as i32;
                let check = move |off: &AtomicBool| {
                    if route == Route::Owner && std::thread::current().name() != Some(OWNER) {
                        off.store(true, Ordering::Relaxed);
                    }
                };
                let (o1, o2) = (off_owner.clone(), off_owner.clone());
                // Posted first: its matching send comes only once the token went round.
                let recv = comm.post(vec![0u64; LEN], move |buf, c, scope| {
                    check(&o1);
                    c.process_at_rank(prev).immediate_receive_into_with_tag(
                        scope,
                        &mut buf[..],
                        tag,
                    )
                });
                let forward = |token: Vec<u64>| {
                    comm.post(token, move |buf, c, scope| {
                        check(&o2);
                        c.process_at_rank(next)
                            .immediate_send_with_tag(scope, &buf[..], tag)
                    })
                    .wait();
                };
                if r == 0 {
                    forward(first_token(t));
                    let (got, status) = recv.wait();
                    usize::from(got != expected_at(0, n, t) || status.tag() != tag)
                } else {
                    let (mut got, _) = recv.wait();
                    let wrong = usize::from(got != expected_at(r, n, t));
                    for w in &mut got {
                        *w += step(r, t);
                    }
                    forward(got);
                    wrong
                }
            })
        })
        .collect();
    threads.into_iter().map(|h| h.join().unwrap()).sum()
}

fn main() -> ExitCode {
    let funneled = std::env::args().any(|a| a == "--funneled");
    let mpi = if funneled {
        footprint::mpi::init_requesting(Threading::Funneled)
    } else {
        footprint::mpi::init()
    };
    let mpi = match mpi {
        Ok(m) => m,
        Err(e) => {
            eprintln!("mpi_posted: {e}");
            return ExitCode::FAILURE;
        }
    };
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(WATCHDOG_SECS));
        eprintln!("mpi_posted: no result after {WATCHDOG_SECS} s (a lost request?); aborting");
        std::process::abort();
    });
    let want = if mpi.provided() >= Threading::Multiple {
        Route::Direct
    } else {
        Route::Owner
    };
    let world = mpi.world();
    let (rank, size) = (world.rank(), world.size());
    let mut failed = false;
    if mpi.route() != want || (funneled && mpi.route() != Route::Owner) {
        eprintln!(
            "mpi_posted rank {rank}: granted {:?} but route {:?}",
            mpi.provided(),
            mpi.route()
        );
        failed = true;
    }
    let rt = Runtime::builder()
        .workers(2)
        .build()
        .expect("a 2-worker runtime");
    let off_owner = Arc::new(AtomicBool::new(false));
    let dup = world.duplicate();
    let half = world
        .split_by_color(Color::with_value(rank % 2))
        .expect("every rank has a color");
    for (name, comm) in [("world duplicate", &dup), ("split half", &half)] {
        let wrong = rt.block_on(|| ring(comm, mpi.route(), &off_owner));
        if wrong != 0 {
            eprintln!("mpi_posted rank {rank}: {wrong} tokens arrived wrong on the {name}");
            failed = true;
        }
    }
    if off_owner.load(Ordering::Relaxed) {
        eprintln!("mpi_posted rank {rank}: a posted start ran off the owner thread");
        failed = true;
    }
    // A start closure's panic reaches the waiter; the route keeps serving.
    let caught = rt.block_on(|| {
        let world = world.clone();
        footprint::spawn(move || {
            world
                .post(
                    vec![0u8; 1],
                    |_, _, _| -> footprint::mpi::rsmpi::request::Request<'_, [u8], _> {
                        panic!("a start's panic")
                    },
                )
                .wait()
        })
        .join()
    });
    if caught.is_ok() || world.call(|c| c.size()) != size {
        eprintln!("mpi_posted rank {rank}: a start's panic did not reach its waiter");
        failed = true;
    }
    world.call(|c| c.barrier());
    drop((dup, half, world));
    if failed {
        return ExitCode::FAILURE;
    }
    println!(
        "mpi_posted rank {rank}/{size}: {THREADS} green threads x 2 rings, every token as the \
         one-process replay (granted {:?}, route {:?})",
        mpi.provided(),
        mpi.route()
    );
    ExitCode::SUCCESS
}
