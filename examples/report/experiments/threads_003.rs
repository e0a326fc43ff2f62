//! 003: the thread-count experiment (adaptive vs fixed worker counts) is **pending** until the
//! adaptive-control issue (#12) lands; what the profile sampler (`footprint::start_profile_sampler`)
//! sees during a lock-bound run is measured now: CPU utilisation, context-switch rates and lock
//! time per interval, first with green threads on a 2-worker runtime, then with OS threads.
//!
//! To fill in the pending part: run each workload with fixed worker counts 1..=cores and with
//! `adaptive_workers`, push (variant, workload, time) into `planned_plot()`, and set the status
//! to measured with the verdict "adaptive within 5 % of the best fixed count".

use std::time::{Duration, Instant};

use footprint::pmu::SamplerConfig;
use footprint::runtime::ReadyOrder;

use crate::experiments::{runtime, Ctx};
use crate::model::{format_number, Axis, Plot, PlotKind, Section, Status, Table, X};
use crate::stats::StatsTable;
use crate::workloads::lock_hot::{Green, OsThreads, ALL, WORKERS};

pub const PENDING: &str = "issue 12 (adaptive worker count, 003)";

fn planned_plot() -> Plot {
    Plot::new(
        "threads_003",
        "003: time per workload, adaptive vs fixed worker counts",
        PlotKind::Bars,
        "workers",
        Axis::linear("workload", "workload"),
        Axis::linear("time_ms", "time per run, ms (median)"),
    )
}

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "threads_003",
        "003: thread count (adaptive vs fixed) and the sampler's profile",
        "003 (Pusukuri: Thread Reinforcer, FaithFul), ch. 2 and 5",
        "Cheap run-time monitoring (lock time, context-switch and migration rates, CPU \
         utilisation) is enough to choose the number of threads: the adaptive count matches \
         the best fixed count.",
    );
    s.status = Status::Pending(PENDING.into());
    s.plots
        .push(planned_plot().placeholder(&format!("pending: {PENDING}")));

    let interval = Duration::from_millis(ctx.mode.pick(20, 50, 100, 100));
    let phase = Duration::from_secs_f64(ctx.mode.pick(0.2, 0.75, 1.5, 3.0));
    let sampler = footprint::start_profile_sampler(SamplerConfig {
        interval,
        window: 2,
        history: 1000,
    })
    .map_err(|e| format!("starting the profile sampler: {e}"))?;
    let rt = runtime(WORKERS, ReadyOrder::default())?;
    let green = Green { rt };
    let bench = &ALL[0]; // single_ctr: one contended lock
    let mut stats = StatsTable::new();
    let t0 = Instant::now();
    ctx.step("green threads, single_ctr");
    let green_runs = stats.record(
        "single_ctr, green threads (profile phase 1)",
        &green.rt,
        || {
            let mut runs = 0u64;
            while t0.elapsed() < phase {
                (bench.green)(&green);
                runs += 1;
            }
            runs
        },
    );
    let switch_at = t0.elapsed();
    ctx.step("OS threads, single_ctr");
    let mut os_runs = 0u64;
    while t0.elapsed() < phase * 2 {
        (bench.os)(&OsThreads);
        os_runs += 1;
    }
    // The interval in progress at the end holds the end of phase 2.
    sampler.wait_for_intervals(sampler.intervals() + 1, interval * 20);
    let history = sampler.history();
    drop(sampler);
    if history.len() < 2 {
        return Err(format!(
            "the sampler delivered {} intervals in {:?}",
            history.len(),
            phase * 2
        ));
    }

    let mut util = Plot::new(
        "threads_003-profile-cpu-lock",
        &format!(
            "Sampler profile, single_ctr: green threads until {:.2} s, then OS threads",
            switch_at.as_secs_f64()
        ),
        PlotKind::Lines,
        "channel",
        Axis::linear("time_s", "time since the sampler started, s"),
        Axis::linear("value", "CPUs busy / share of time waiting for locks"),
    );
    let mut switches = Plot::new(
        "threads_003-profile-switches",
        "Sampler profile, single_ctr: context switches per second",
        PlotKind::Lines,
        "channel",
        Axis::linear("time_s", "time since the sampler started, s"),
        Axis::linear("per_second", "context switches per second"),
    );
    let origin = history[0].start_ns;
    for p in &history {
        let t = X::Num((p.end_ns - origin) as f64 / 1e9);
        util.push(
            "CPU utilisation (CPUs)",
            t.clone(),
            p.process.cpu_utilisation,
        );
        if let Some(lock) = p.lock_time_fraction {
            util.push("lock time fraction", t.clone(), lock);
        }
        switches.push("voluntary", t.clone(), p.process.voluntary_switches_per_s);
        switches.push(
            "involuntary",
            t.clone(),
            p.process.involuntary_switches_per_s,
        );
        if let Some(m) = p.process.migrations_per_s {
            switches.push("migrations", t, m);
        }
    }
    s.plots.push(util);
    s.plots.push(switches);
    s.tables.push(stats.into_table());
    let mut runs = Table::new("Profile run", &["phase", "runs of single_ctr", "intervals"]);
    runs.row(vec![
        "green threads, 2 workers".into(),
        green_runs.to_string(),
        String::new(),
    ]);
    runs.row(vec![
        "OS threads".into(),
        os_runs.to_string(),
        history.len().to_string(),
    ]);
    s.tables.push(runs);
    let mean = |f: &dyn Fn(&footprint::pmu::IntervalProfile) -> f64| {
        history.iter().map(f).sum::<f64>() / history.len() as f64
    };
    s.measured = format!(
        "adaptive vs fixed: not measured yet. Profile: {} intervals of {:?}; mean CPU \
         utilisation {} CPUs, {} voluntary switches/s",
        history.len(),
        interval,
        format_number(mean(&|p| p.process.cpu_utilisation)),
        format_number(mean(&|p| p.process.voluntary_switches_per_s).round()),
    );
    s.verdict = format!("pending: {PENDING} (the sampler's profile is shown)");
    Ok(s)
}
