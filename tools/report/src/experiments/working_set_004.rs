//! 004's regular workload (the bench's program, `crates/workloads/src/working_set.rs`): 1024 green
//! threads × 64 KiB working sets, groups of 4 at barriers, 8 rounds, per ready order on a
//! `--workers` runtime, and 1024 OS threads on the same CPUs as the peer.

use footprint::sync::Barrier;

use crate::experiments::cpus::{on_cpus, peer_cpus, peer_note};
use crate::experiments::orders::{cache_note, Comparison};
use crate::experiments::{runtime, Ctx};
use crate::measure::repeat_whole;
use crate::model::{format_ns, format_ratio, plural, Axis, Plot, PlotKind, Section, Table, X};
use crate::stats::StatsTable;
use crate::workloads::orders::ready_orders;
use crate::workloads::working_set::{
    check, run_footprint, run_std_threads, GROUP, ROUNDS, THREADS, WORDS,
};

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "working_set_004",
        "004: regular workload, 1024 threads × 64 KiB, per ready order",
        "004 (Bellosa), §3.3.2, Fig. 3.11",
        "With a regular execution order (1024 threads snooping through 64 KiB between \
         synchronizations), affinity strategies that resume cache-warm threads first execute \
         more synchronizations per second than an order without affinity.",
    );
    let reps = ctx.mode.pick(1, 3, 9, 27);
    let workers = ctx.workers;
    let mut cpus = Vec::new();
    let sweeps = (THREADS * ROUNDS) as f64;
    let start = Barrier::new(THREADS);
    let barriers: Vec<Barrier> = (0..THREADS / GROUP).map(|_| Barrier::new(GROUP)).collect();
    let mut stats = StatsTable::new();
    let mut results: Vec<(String, f64)> = Vec::new();
    for (name, order) in ready_orders() {
        ctx.step(name);
        let rt = runtime(workers, order)?;
        cpus = peer_cpus(&rt);
        let mut data = vec![0u64; THREADS * WORDS];
        let mut runs = 0u64;
        let sample = stats.record(name, &rt, || {
            repeat_whole(reps, || {
                run_footprint(&rt, &mut data, &start, &barriers);
                runs += 1;
            })
        });
        check(&data, runs);
        results.push((name.to_string(), sample.median()));
    }
    ctx.step("std_threads");
    let std_start = std::sync::Barrier::new(THREADS);
    let std_barriers: Vec<std::sync::Barrier> = (0..THREADS / GROUP)
        .map(|_| std::sync::Barrier::new(GROUP))
        .collect();
    let mut data = vec![0u64; THREADS * WORDS];
    let mut runs = 0u64;
    let sample = on_cpus(&cpus, || {
        repeat_whole(reps, || {
            run_std_threads(&mut data, &std_start, &std_barriers);
            runs += 1;
        })
    });
    check(&data, runs);
    results.push(("std_threads".into(), sample.median()));

    let mut plot = Plot::new(
        "working_set_004",
        &format!(
            "004 regular workload: time per sweep + barrier arrival (1024 threads × 64 KiB, \
             {workers} worker{})",
            plural(workers)
        ),
        PlotKind::Bars,
        "variant",
        Axis::linear("workload", "workload"),
        Axis::linear(
            "us_per_sweep",
            "µs per sweep + barrier arrival (median run ÷ 8192)",
        ),
    );
    let fifo = results
        .iter()
        .find(|(n, _)| n == "footprint_fifo")
        .map_or(f64::NAN, |r| r.1);
    let mut table = Table::new(
        &format!(
            "Median time of one run (1024 threads × 8 rounds = 8192 sweeps, {workers} worker{})",
            plural(workers)
        ),
        &[
            "variant",
            "per run",
            "per sweep + barrier arrival",
            "÷ oldest-first (FIFO)",
        ],
    )
    .for_readme("working_set_004");
    for (name, t) in &results {
        plot.push(
            name,
            X::Cat("1024 × 64 KiB, groups of 4".into()),
            t / sweeps / 1e3,
        );
        table.row(vec![
            format!("`{name}`"),
            format_ns(*t),
            format_ns(t / sweeps),
            format_ratio(t / fifo),
        ]);
    }
    s.plots.push(plot);
    s.tables.push(table);
    s.tables.push(stats.into_table());
    let c = Comparison::of(results[..3].iter().map(|(n, t)| (n.as_str(), *t)))
        .ok_or("no ready order ran")?;
    let std_time = results[3].1;
    s.measured = format!(
        "best ready order {} {} per run ({} of FIFO's, {} of 1024 OS threads')",
        c.best,
        format_ns(c.best_value),
        format_ratio(c.ratio()),
        format_ratio(c.best_value / std_time)
    );
    s.verdict = c.verdict();
    s.notes.push(cache_note(THREADS * WORDS * 8));
    s.notes.push(peer_note(&cpus));
    Ok(s)
}
