//! 003: the thread-count experiment (Thread Reinforcer online): a lock-bound and a
//! compute-bound fork-join workload (`crates/workloads/src/adaptive.rs`, the bodies of
//! `benches/adaptive.rs`) on fixed worker counts 1..=min(2, CPUs) and on one adaptive runtime
//! (`adaptive_workers(1..=max)`) that meets them in turn, measured after its search. The
//! adaptive runtime's sampled profile (one row per 100 ms interval: active workers, CPU
//! utilisation, lock time) is plotted over the whole run, with its decisions.

use std::time::Duration;

use crate::experiments::Ctx;
use crate::measure::repeat;
use crate::model::{format_number, Axis, Plot, PlotKind, Section, Table, X};
use crate::workloads::adaptive::{self, Config};
use footprint::Runtime;

type Workload = (&'static str, Box<dyn Fn(&Runtime) -> Duration>);

fn workloads(ctx: &Ctx) -> Vec<Workload> {
    let lock_iters = ctx.mode.pick(20, 100, 300, 600);
    let rounds = ctx.mode.pick(2, 6, 16, 32);
    vec![
        (
            "lock_bound",
            Box::new(move |rt: &Runtime| adaptive::lock_bound(rt, lock_iters)),
        ),
        (
            "fork_join",
            Box::new(move |rt: &Runtime| adaptive::fork_join(rt, rounds)),
        ),
    ]
}

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "threads_003",
        "003: thread count (adaptive vs fixed) and the sampled profile",
        "003 (Pusukuri: Thread Reinforcer, FaithFul), ch. 2 and 5",
        "Cheap run-time monitoring (lock time, context-switch and migration rates, CPU \
         utilisation) is enough to choose the number of threads: the adaptive count matches \
         the best fixed count.",
    );
    let min_warm = Duration::from_secs_f64(ctx.mode.pick(0.3, 0.6, 1.0, 1.5));
    let settle_limit = Duration::from_secs_f64(ctx.mode.pick(0.6, 2.0, 4.0, 6.0));
    let wls = workloads(ctx);
    let configs = Config::all();
    let mut times = Plot::new(
        "threads_003",
        "003: time per workload run, fixed worker counts and adaptive (median)",
        PlotKind::Bars,
        "workers",
        Axis::linear("workload", "workload"),
        Axis::linear("time_ms", "time per run, ms (median)"),
    );
    // medians[workload][config]
    let mut medians = vec![vec![f64::NAN; configs.len()]; wls.len()];
    let mut settled = Vec::new();
    let mut adaptive_rt = None;
    for (ci, config) in configs.iter().enumerate() {
        let rt = config.build();
        for (wi, (name, f)) in wls.iter().enumerate() {
            ctx.step(&format!("{name}, {}", config.name()));
            if let Config::Adaptive(..) = config {
                let ok = adaptive::settle(&rt, min_warm, settle_limit, |rt| {
                    f(rt);
                });
                let active = rt.active_workers();
                settled.push(format!(
                    "{name}: {} at {active} active",
                    if ok { "settled" } else { "still searching" }
                ));
            }
            let m = repeat(ctx.reps(), || f(&rt)).median() / 1e6;
            medians[wi][ci] = m;
            times.push(&config.name(), X::Cat((*name).into()), m);
        }
        if let Config::Adaptive(..) = config {
            adaptive_rt = Some(rt);
        }
    }
    let rt = adaptive_rt.ok_or("no adaptive configuration")?;
    let stats = rt
        .stats()
        .adaptive
        .ok_or("the adaptive runtime has no adaptive stats")?;
    let samples = rt.adaptive_samples();
    drop(rt);

    let mut header: Vec<String> = vec!["workload".into()];
    header.extend(configs.iter().map(|c| format!("{} (ms)", c.name())));
    header.push("adaptive ÷ best fixed".into());
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new("Median time per run", &header_refs);
    let mut within = 0;
    let mut ratios = Vec::new();
    for (wi, (name, _)) in wls.iter().enumerate() {
        let fixed = configs
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(c, Config::Fixed(_)))
            .map(|(ci, _)| medians[wi][ci])
            .fold(f64::INFINITY, f64::min);
        let ada = medians[wi][configs.len() - 1];
        let ratio = ada / fixed;
        if ratio <= 1.05 {
            within += 1;
        }
        ratios.push(format!("{name} {}", format_number(ratio)));
        let mut row = vec![(*name).to_string()];
        row.extend(medians[wi].iter().map(|m| format_number(*m)));
        row.push(format_number(ratio));
        table.row(row);
    }
    s.tables.push(table);

    let mut decisions = Table::new(
        "The adaptive runtime's decisions",
        &["at (s)", "active", "why"],
    );
    for d in &stats.decisions {
        decisions.row(vec![
            format_number(d.at.as_secs_f64()),
            d.active.to_string(),
            d.reason.to_string(),
        ]);
    }
    s.tables.push(decisions);

    let mut profile = Plot::new(
        "threads_003-profile",
        "The adaptive runtime's sampled profile (lock_bound, then fork_join)",
        PlotKind::Lines,
        "channel",
        Axis::linear("time_s", "time since the runtime was built, s"),
        Axis::linear(
            "value",
            "workers / CPUs busy / share of time waiting for locks",
        ),
    );
    for p in &samples {
        let t = X::Num(p.at.as_secs_f64());
        profile.push("active workers", t.clone(), p.active as f64);
        profile.push("CPU utilisation (CPUs)", t.clone(), p.cpu);
        if let Some(l) = p.lock_time {
            profile.push("lock time", t.clone(), l);
        }
        if let Some(o) = p.others {
            profile.push("other programs' runnable threads", t, o);
        }
    }
    s.plots.push(times);
    s.plots.push(profile);
    s.measured = format!(
        "adaptive ÷ best fixed count: {} ({}); {} intervals sampled, {} decisions; controller \
         {} % of one core",
        ratios.join(", "),
        settled.join("; "),
        stats.intervals,
        stats.decisions_total,
        format_number(100.0 * stats.controller_share()),
    );
    s.notes.push(
        "This machine's choice is between 1 and 2 workers (2 CPUs), and it is shared: the best \
         fixed count depends on the load at the time."
            .into(),
    );
    s.verdict = format!(
        "adaptive within 5 % of the best fixed count on {within} of {} workloads",
        wls.len()
    );
    Ok(s)
}
