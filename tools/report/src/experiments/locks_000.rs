//! 000's seven lock micro-benchmarks (the bench's bodies, `crates/workloads/src/lock_hot.rs`): 4
//! green threads per worker on a `--workers` runtime with lock-hot placement on and off, and as
//! many OS threads with `std::sync` on the same CPUs as the peer.

use footprint::locks::placement;
use footprint::runtime::ReadyOrder;

use crate::experiments::cpus::{on_cpus, peer_cpus, peer_note};
use crate::experiments::{runtime, Ctx};
use crate::measure::repeat;
use crate::model::{format_ns, format_ratio, plural, Axis, Plot, PlotKind, Section, Table, X};
use crate::stats::StatsTable;
use crate::workloads::lock_hot::{Green, OsThreads, ALL, THREADS_PER_WORKER};

/// Geometric mean of positive finite values; NaN when there are none.
pub fn geomean(values: &[f64]) -> f64 {
    let v: Vec<f64> = values
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if v.is_empty() {
        return f64::NAN;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Restores lock-hot placement when dropped (also when a benchmark panics).
struct LockHotRestore;

impl Drop for LockHotRestore {
    fn drop(&mut self) {
        placement::set_lock_hot(true);
    }
}

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "locks_000",
        "000: the seven lock benchmarks, lock-hot on / off, std threads",
        "000 (Sridharan et al., FAST: futex-aware scheduling), §3.2.1",
        "Running a woken lock waiter on the processor that released the lock (lock-hot \
         placement) keeps the lock and its data in one cache and speeds up lock-intensive \
         programs.",
    );
    let reps = ctx.mode.pick(1, 5, 25, 75);
    let workers = ctx.workers;
    let threads = THREADS_PER_WORKER * workers;
    let rt = runtime(workers, ReadyOrder::default())?;
    let cpus = peer_cpus(&rt);
    let green = Green { rt, threads };
    let os = OsThreads { threads };
    let mut stats = StatsTable::new();
    let mut plot = Plot::new(
        "locks_000",
        &format!(
            "000's seven lock benchmarks: time per run, {threads} threads on {workers} \
             processor{}",
            plural(workers)
        ),
        PlotKind::Bars,
        "variant",
        Axis::linear("benchmark", "benchmark"),
        Axis::linear("time_ms", "time per run, ms (median)"),
    );
    let mut table = Table::new(
        &format!(
            "Median time of one run ({threads} threads, {THREADS_PER_WORKER} per worker, on \
             {workers} worker{}; all lined up to all done)",
            plural(workers)
        ),
        &[
            "benchmark (000 name)",
            "lock-hot on",
            "lock-hot off",
            "std threads + std::sync",
            "on ÷ off",
            "footprint (on) ÷ std",
        ],
    )
    .for_readme("locks_000");
    let (mut on_off, mut on_std) = (Vec::new(), Vec::new());
    let _restore = LockHotRestore;
    for bench in &ALL {
        let mut medians = [0.0f64; 3];
        for (i, lock_hot) in [true, false].into_iter().enumerate() {
            ctx.step(&format!(
                "{} lock-hot {}",
                bench.name,
                if lock_hot { "on" } else { "off" }
            ));
            placement::set_lock_hot(lock_hot);
            let label = format!(
                "{} lock-hot {}",
                bench.name,
                if lock_hot { "on" } else { "off" }
            );
            medians[i] = stats
                .record(&label, &green.rt, || repeat(reps, || (bench.green)(&green)))
                .median();
        }
        placement::set_lock_hot(true);
        ctx.step(&format!("{} std", bench.name));
        medians[2] = on_cpus(&cpus, || repeat(reps, || (bench.os)(&os))).median();
        for (series, v) in [
            "footprint lock-hot on",
            "footprint lock-hot off",
            "std threads",
        ]
        .iter()
        .zip(medians)
        {
            plot.push(series, X::Cat(bench.name.into()), v / 1e6);
        }
        on_off.push(medians[0] / medians[1]);
        on_std.push(medians[0] / medians[2]);
        table.row(vec![
            format!("`{}`", bench.name),
            format_ns(medians[0]),
            format_ns(medians[1]),
            format_ns(medians[2]),
            format_ratio(medians[0] / medians[1]),
            format_ratio(medians[0] / medians[2]),
        ]);
    }
    let (g_on_off, g_on_std) = (geomean(&on_off), geomean(&on_std));
    s.plots.push(plot);
    s.tables.push(table);
    s.tables.push(stats.into_table());
    s.measured = format!(
        "on ÷ off: geometric mean {} (range {}–{}); footprint ÷ std threads: geometric mean {}",
        format_ratio(g_on_off),
        format_ratio(on_off.iter().copied().fold(f64::INFINITY, f64::min)),
        format_ratio(on_off.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        format_ratio(g_on_std)
    );
    s.verdict = if workers == 1 {
        "not judged with one worker: every wake-up resumes on it, lock-hot placement or not".into()
    } else if g_on_off < 0.95 {
        format!(
            "lock-hot placement helps here ({} of off's time)",
            format_ratio(g_on_off)
        )
    } else if g_on_off <= 1.05 {
        "no measurable effect of lock-hot placement (on ≈ off within 5 %)".into()
    } else {
        format!(
            "lock-hot placement is slower here ({})",
            format_ratio(g_on_off)
        )
    };
    s.notes.push(peer_note(&cpus));
    s.notes.push(
        "Until the scheduler issue lands, the runtime resumes every green thread woken by a \
         green thread on the waker's worker, so on and off may run the same path (see the \
         README's limits)."
            .into(),
    );
    Ok(s)
}
