//! MPI funnelled through one owner thread (feature `mpi`): `footprint::mpi::ProgressOwner`
//! initialises MPI on its own OS thread and runs the MPI calls of 64 green threads per rank
//! there, one at a time (what `MPI_THREAD_FUNNELED`/`SERIALIZED` allow). Each green thread
//! sends a value to the next rank and polls for the previous rank's value (a matched probe,
//! then a receive of the message already there, so no job blocks the owner); every value must
//! arrive exactly once and every MPI call must run on the owner thread. A panic in a job must
//! reach its caller and leave the owner serving (its message is printed by the panic hook on
//! the owner thread: expected output).
//!
//! Run: `mpirun -n 4 <test binary>` (CI), or as one process. A plain test binary
//! (`harness = false`: MPI is initialised once per process); a watchdog aborts a hung rank.

use std::process::ExitCode;
use std::time::Duration;

use footprint::mpi::rsmpi::topology::SimpleCommunicator;
use footprint::mpi::rsmpi::traits::*;
use footprint::mpi::rsmpi::Threading;
use footprint::mpi::ProgressOwner;
use footprint::Runtime;

/// Green threads per rank.
const THREADS: i32 = 64;
/// Seconds before the watchdog aborts this rank (and with it the job).
const WATCHDOG_SECS: u64 = 120;
/// The owner thread's name (set by `ProgressOwner::start`).
const OWNER: &str = "footprint-mpi-owner";

fn on_owner() -> bool {
    std::thread::current().name() == Some(OWNER)
}

fn main() -> ExitCode {
    // Funneled: the level this owner exists for (the library may grant more).
    let owner = match ProgressOwner::start_requesting(Threading::Funneled) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mpi_funnel: {e}");
            return ExitCode::FAILURE;
        }
    };
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(WATCHDOG_SECS));
        eprintln!("mpi_funnel: no result after {WATCHDOG_SECS} s (a lost message?); aborting");
        std::process::abort();
    });
    let (rank, size) = owner.call(|| {
        let w = SimpleCommunicator::world();
        (w.rank(), w.size())
    });
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let rt = Runtime::builder()
        .workers(2)
        .build()
        .expect("a 2-worker runtime");
    let results: Vec<(i32, bool)> = rt.block_on(|| {
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let owner = owner.clone();
                footprint::spawn(move || {
                    let mut all_on_owner = owner.call(move || {
                        let w = SimpleCommunicator::world();
                        w.process_at_rank(next).send_with_tag(&(rank * 1000 + t), t);
                        on_owner()
                    });
                    loop {
                        let (got, here) = owner.call(move || {
                            let w = SimpleCommunicator::world();
                            let got = w
                                .process_at_rank(prev)
                                .immediate_matched_probe_with_tag(t)
                                .map(|(msg, _)| msg.matched_receive::<i32>().0);
                            (got, on_owner())
                        });
                        all_on_owner &= here;
                        match got {
                            Some(v) => break (v, all_on_owner),
                            None => footprint::yield_now(),
                        }
                    }
                })
            })
            .collect();
        threads.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut failed = false;
    for (t, &(v, here)) in results.iter().enumerate() {
        if v != prev * 1000 + t as i32 || !here {
            eprintln!("mpi_funnel rank {rank}: green thread {t} got {v} (on owner: {here})");
            failed = true;
        }
    }
    // A panicking job reaches its caller; the owner keeps serving.
    let caught = rt.block_on(|| {
        let owner = owner.clone();
        footprint::spawn(move || owner.call(|| panic!("a job's panic"))).join()
    });
    if caught.is_ok() || owner.call(|| SimpleCommunicator::world().size()) != size {
        eprintln!(
            "mpi_funnel rank {rank}: a job's panic did not reach its caller or stopped the owner"
        );
        failed = true;
    }
    // A job that calls the owner again runs the inner job at once (no self-deadlock).
    let nested = {
        let inner = owner.clone();
        owner.call(move || inner.call(|| SimpleCommunicator::world().rank()))
    };
    if nested != rank {
        eprintln!("mpi_funnel rank {rank}: a nested call returned {nested}");
        failed = true;
    }
    owner.call(|| SimpleCommunicator::world().barrier());
    if failed {
        return ExitCode::FAILURE;
    }
    println!(
        "mpi_funnel rank {rank}/{size}: {THREADS} green threads, every value once, every MPI call \
         on the owner thread (granted {:?})",
        owner.provided()
    );
    ExitCode::SUCCESS
}
