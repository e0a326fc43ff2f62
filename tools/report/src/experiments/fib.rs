//! Runtime vs peers, fork-join overhead: `fib(n)` with a `join` at every level on `--workers`
//! workers, against rayon on as many threads and the sequential recursion (the bench's bodies).

use std::hint::black_box;

use crate::experiments::Ctx;
use crate::measure::repeat_whole_interleaved;
use crate::model::{format_ns, format_ratio, Axis, Plot, PlotKind, Section, Table, X};
use crate::stats::StatsTable;
use crate::workloads::fib::{fib_footprint, fib_rayon, fib_sequential};
use crate::workloads::peers::runtime_and_rayon;

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "fib",
        "Runtime vs peers: fib with a join at every level",
        "issue target (DESIGN.md); peer rayon",
        "footprint's fib(30) with a join at every level takes ≤ 1.2 × rayon's time on the same \
         number of workers.",
    );
    let sizes: &[u32] = ctx
        .mode
        .pick(&[15, 20], &[20, 25, 30], &[20, 25, 30], &[20, 25, 30, 32]);
    let reps = ctx.reps().max(3);
    let workers = ctx.workers;
    let (rt, pool) = runtime_and_rayon(workers);
    let oracle = fib_sequential(20);
    if rt.block_on(|| fib_footprint(20)) != oracle || pool.install(|| fib_rayon(20)) != oracle {
        return Err("fib(20) disagrees with the sequential oracle".into());
    }
    let mut stats = StatsTable::new();
    let mut plot = Plot::new(
        "fib",
        &format!("fib(n), join at every level, {workers} workers: time per call (log scale)"),
        PlotKind::Lines,
        "implementation",
        Axis::linear("n", "n"),
        Axis::log("time_ns", "time per call, ns (median)"),
    );
    let mut table = Table::new(
        "fib(n), median time per call",
        &[
            "n",
            &format!("footprint ({workers} workers)"),
            &format!("rayon ({workers} threads)"),
            "footprint ÷ rayon",
            "sequential",
        ],
    )
    .for_readme("fib");
    // footprint ÷ rayon at the largest n up to 30 (the target's n).
    let (mut target_n, mut target_ratio) = (0, f64::NAN);
    for &n in sizes {
        ctx.step(&format!("fib({n})"));
        // Interleaved: footprint, rayon and the sequential run take turns in each round. The
        // stats window covers all three; only footprint's runs move the runtime's counters.
        let samples = stats.record(&format!("fib({n})"), &rt, || {
            repeat_whole_interleaved(
                reps,
                &mut [
                    &mut || {
                        black_box(rt.block_on(|| fib_footprint(black_box(n))));
                    },
                    &mut || {
                        black_box(pool.install(|| fib_rayon(black_box(n))));
                    },
                    &mut || {
                        black_box(fib_sequential(black_box(n)));
                    },
                ],
            )
        });
        let [f, r, q] = [0, 1, 2].map(|i| samples[i].median());
        plot.push("footprint_2w", X::Num(n.into()), f);
        plot.push("rayon_2t", X::Num(n.into()), r);
        plot.push("sequential", X::Num(n.into()), q);
        if n <= 30 {
            (target_n, target_ratio) = (n, f / r);
        }
        table.row(vec![
            n.to_string(),
            format_ns(f),
            format_ns(r),
            format_ratio(f / r),
            format_ns(q),
        ]);
    }
    let n = target_n;
    let last_ratio = target_ratio;
    s.plots.push(plot);
    s.tables.push(table);
    s.tables.push(stats.into_table());
    s.measured = format!("fib({n}): footprint ÷ rayon = {}", format_ratio(last_ratio));
    s.verdict = if n < 30 {
        format!("n = {n} only in this mode; the target is stated at n = 30")
    } else if last_ratio <= 1.2 {
        "≤ 1.2 × rayon: met".into()
    } else {
        format!("≤ 1.2 × rayon: missed ({})", format_ratio(last_ratio))
    };
    Ok(s)
}
