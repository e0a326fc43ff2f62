//! footprint's first example: what machine it found, then spawn, join and scope on its workers.
//!
//! ```text
//! cargo run --release --example hello
//! ```
//!
//! Needs no system packages: the topology comes from Linux sysfs.

use footprint::affinity::{allowed_cpus, Topology};

/// Which worker the calling green thread runs on now (a green thread may move between workers).
fn here() -> String {
    match footprint::runtime::park::current_worker() {
        Some(worker) => format!("worker {worker}"),
        None => "no worker (an OS thread)".to_string(),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The machine.
    let topology = Topology::detect();
    println!("topology: {}", topology.to_string().trim_end());
    for warning in topology.warnings() {
        println!("  warning: {warning}");
    }
    println!("allowed CPUs: {:?}", allowed_cpus()?);

    // 2. A runtime: one pinned worker per allowed CPU.
    let rt = footprint::Runtime::builder().build()?;
    let cpus: Vec<String> = rt
        .worker_cpus()
        .iter()
        .enumerate()
        .map(|(worker, cpu)| match cpu {
            Some(cpu) => format!("worker {worker} on CPU {cpu}"),
            None => format!("worker {worker} unpinned"),
        })
        .collect();
    println!(
        "runtime: {} workers ({}), {} KiB stacks",
        rt.workers(),
        cpus.join(", "),
        rt.stack_size() >> 10
    );

    let total = rt.block_on(|| {
        println!("block_on: the closure runs on a green thread on {}", here());

        // spawn: a 'static green thread with a JoinHandle.
        let handles: Vec<_> = (0..4u64)
            .map(|i| {
                footprint::spawn(move || {
                    println!("  spawn #{i} runs on {}", here());
                    i * i
                })
            })
            .collect();
        let squares: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        println!("spawn: 0² + 1² + 2² + 3² = {squares}");

        // join: fork-join; the second half may be stolen by another worker.
        let (left, right) = footprint::join(
            || {
                println!("  join left runs on {}", here());
                (1..=50u64).sum::<u64>()
            },
            || {
                println!("  join right runs on {}", here());
                (51..=100u64).sum::<u64>()
            },
        );
        println!("join: 1 + .. + 100 = {}", left + right);

        // scope: green threads that borrow local data.
        let words = ["footprint", "green", "threads", "on", "pinned", "workers"];
        let mut lengths = [0usize; 6];
        footprint::scope(|s| {
            for (word, length) in words.iter().zip(lengths.iter_mut()) {
                s.spawn(move || {
                    println!("  scope: {word:?} measured on {}", here());
                    *length = word.len();
                });
            }
        });
        let letters: usize = lengths.iter().sum();
        println!("scope: {} words, {letters} letters", words.len());

        squares + left + right + letters as u64
    });
    println!("result: {total}");
    let stats = rt.stats();
    println!(
        "runtime stats: {} green threads spawned, {} finished, {} steals, {} stacks mapped",
        stats.spawned, stats.finished, stats.steals, stats.stacks_mapped
    );
    Ok(())
}
