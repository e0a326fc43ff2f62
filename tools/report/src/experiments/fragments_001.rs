//! 001's data-fragment benchmark (the bench's program, `crates/workloads/src/fragments.rs`): 8 green
//! threads per fragment, spawned interleaved, each reading its fragment once; hints on
//! (`GreenBuilder::fragment`: batched on one worker, run back to back), off, and rayon, on
//! `--workers` workers (the bench's fragment counts per worker, so that "all fit the L2s
//! together" or not holds at any worker count).

use crate::experiments::cpus::{peer_cpus, peer_note, rayon_pool};
use crate::experiments::Ctx;
use crate::measure::repeat_whole;
use crate::model::{format_ns, format_ratio, plural, Axis, Plot, PlotKind, Section, Table, X};
use crate::stats::StatsTable;
use crate::workloads::fragments::{configs, Setup, CONFIGS, PER, WORKERS};

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "fragments_001",
        "001: data-fragment hints on / off",
        "001 (Pinter, Zalmanovici: data sharing conscious scheduling), §3–5",
        "Batching the threads that work on one data fragment on one processor, back to back, \
         cuts the misses of reloading the fragment: less time where fragments fit the cache one \
         at a time but not all together.",
    );
    let reps = ctx.mode.pick(1, 3, 7, 21);
    let workers = ctx.workers;
    let rt = footprint::Runtime::builder()
        .workers(workers)
        .build()
        .map_err(|e| format!("a {workers}-worker runtime: {e}"))?;
    let cpus = peer_cpus(&rt);
    let pool = rayon_pool(workers, &cpus)?;
    let mut plot = Plot::new(
        "fragments_001",
        "001: DF micro-benchmark, time per run vs fragment size",
        PlotKind::Lines,
        "variant",
        Axis::log("fragment_kib", "fragment size, KiB"),
        Axis::log("time_ms", "time per run, ms (median)"),
    );
    let mut table = Table::new(
        &format!(
            "Median time of one run ({PER} threads per fragment, one pass each, {workers} \
             worker{})",
            plural(workers)
        ),
        &[
            "fragments",
            "hints on",
            "hints off",
            "rayon",
            "on ÷ off",
            "on ÷ rayon",
        ],
    )
    .for_readme("fragments_001");
    let mut stats = StatsTable::new();
    let mut target_ratio = f64::NAN;
    // In the tiny mode only the smallest configuration runs (seconds, not minutes).
    let mut configs = configs(workers);
    if reps == 1 {
        configs.truncate(1);
    }
    let mut target_count = 0;
    for &(bytes, count) in &configs {
        let setup = Setup::new(bytes, count);
        let label = format!("{count} × {} KiB", bytes >> 10);
        ctx.step(&label);
        let mut times = [f64::NAN; 3];
        for (i, hints) in [true, false].into_iter().enumerate() {
            let name = format!("{label}, hints {}", if hints { "on" } else { "off" });
            let mut wrong = None;
            let sample = stats.record(&name, &rt, || {
                repeat_whole(reps, || {
                    let sum = setup.run_footprint(&rt, hints);
                    if sum != setup.expected {
                        wrong = Some(sum);
                    }
                })
            });
            if let Some(sum) = wrong {
                return Err(format!("{name}: sum {sum}, expected {}", setup.expected));
            }
            times[i] = sample.median();
        }
        let mut wrong = None;
        times[2] = repeat_whole(reps, || {
            let sum = setup.run_rayon(&pool);
            if sum != setup.expected {
                wrong = Some(sum);
            }
        })
        .median();
        if let Some(sum) = wrong {
            return Err(format!(
                "{label}, rayon: sum {sum}, expected {}",
                setup.expected
            ));
        }
        let kib = (bytes >> 10) as f64;
        for (series, t) in ["hints on", "hints off", "rayon"].iter().zip(times) {
            plot.push(series, X::Num(kib), t / 1e6);
        }
        table.row(vec![
            label,
            format_ns(times[0]),
            format_ns(times[1]),
            format_ns(times[2]),
            format_ratio(times[0] / times[1]),
            format_ratio(times[0] / times[2]),
        ]);
        if bytes == 1 << 20 {
            target_ratio = times[0] / times[1];
            target_count = count;
        }
    }
    s.plots.push(plot);
    s.tables.push(table);
    s.tables.push(stats.into_table());
    s.notes.push(format!(
        "{PER} threads per fragment, spawned interleaved (fragment 0, 1, .., 0, 1, ..); each reads \
         one word of every line of its fragment in a fixed pseudo-random order. Placement \
         decisions: {}",
        rt.placement_stats().to_string().replace('\n', "; ")
    ));
    s.notes.push(format!(
        "The bench's fragment counts ({} on {WORKERS} workers) scaled to {workers} worker{} \
         ({} per worker): what each row tests (all fragments fit the L2s together, one fits an \
         L2 but not all, one exceeds an L2) depends on the total against the L2s of all the \
         processors.",
        CONFIGS
            .iter()
            .map(|&(bytes, count)| format!("{count} × {} KiB", bytes >> 10))
            .collect::<Vec<_>>()
            .join(", "),
        plural(workers),
        CONFIGS
            .iter()
            .map(|&(_, count)| (count / WORKERS).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    s.notes.push(peer_note(&cpus));
    if target_ratio.is_finite() {
        s.measured = format!(
            "{target_count} × 1 MiB fragments (one fits an L2, all do not): hints on ÷ off = {}",
            format_ratio(target_ratio)
        );
        s.verdict = if target_ratio <= 0.9 {
            format!(
                "≥ 10 % less time with hints: met ({})",
                format_ratio(target_ratio)
            )
        } else {
            format!(
                "≥ 10 % less time with hints: missed ({})",
                format_ratio(target_ratio)
            )
        };
    } else {
        s.measured = "only the smallest configuration ran (tiny mode)".into();
        s.verdict = "not judged in this mode (the 1 MiB row did not run)".into();
    }
    Ok(s)
}
