//! The channel pipeline and the SPMD stencil of the many-core suite, alone in their process, with
//! what the workers did per message (per barrier phase): for finding why a run is slow, and
//! for process-to-process comparisons on a loaded machine (the process CPU time does not grow
//! when other processes take the CPU away).
//!
//! ```text
//! cargo run --release --example pipeline_probe -- pipeline 2 2 4 200000 5
//! cargo run --release --example pipeline_probe -- crossbeam 2 2 4 200000 5
//! cargo run --release --example pipeline_probe -- stencil 2 4 0 300 5
//! cargo run --release --example pipeline_probe -- std_stencil 2 4 0 300 5
//! ```
//!
//! Arguments: workload, workers W, producers (stencil: ranks per worker), squarers (stencil:
//! ignored), messages (stencil: sweeps), runs. Prints each run's wall-clock and process CPU
//! time, and for footprint the workers' runs, parks, steals, sleeps and inbox wake-ups per
//! message (per rank and sweep).

use footprint_workloads::many_core as bodies;
use footprint_workloads::micro::process_cpu;
use std::time::Instant;

/// Sums of the workers' counters.
#[derive(Clone, Copy, Default, Debug)]
struct Counts {
    runs: u64,
    parks: u64,
    steals: u64,
    sleeps: u64,
    inbox_wakeups: u64,
}

fn counts(rt: &footprint::Runtime) -> Counts {
    let st = rt.stats();
    let mut c = Counts::default();
    for w in &st.workers {
        c.runs += w.runs;
        c.parks += w.parks;
        c.steals += w.steals_by_tier.iter().sum::<u64>();
        c.sleeps += w.sleeps;
        c.inbox_wakeups += w.inbox_wakeups;
    }
    c
}

const STENCIL_SIDE: usize = 258;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: pipeline_probe <pipeline|crossbeam|stencil|std_stencil> <workers> \
                 <producers|ranks per worker> <squarers> <messages|sweeps> <runs>";
    if args.len() != 6 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let num = |i: usize| -> u64 {
        args[i].parse().unwrap_or_else(|_| {
            eprintln!("{usage}: `{}` is not a number", args[i]);
            std::process::exit(2)
        })
    };
    let (w, p, q, m, runs) = (
        num(1) as usize,
        num(2) as usize,
        num(3) as usize,
        num(4),
        num(5),
    );
    // FOOTPRINT_PROBE_OVERSUBSCRIBED=0/1 fixes the kernel's oversubscription signal (the
    // machine this runs on is shared: a loaded machine makes informed waiters park).
    match std::env::var("FOOTPRINT_PROBE_OVERSUBSCRIBED").as_deref() {
        Ok("0") => footprint::locks::os::force_oversubscribed(Some(false)),
        Ok("1") => footprint::locks::os::force_oversubscribed(Some(true)),
        _ => {}
    }
    let rt = footprint::Runtime::builder()
        .workers(w)
        .oversubscribe(true)
        .build()
        .expect("a runtime");
    let expected = if args[0].contains("stencil") {
        bodies::stencil_expected(STENCIL_SIDE, m as usize)
    } else {
        0.0
    };
    let units = if args[0].contains("stencil") {
        (w * p) as u64 * m
    } else {
        m
    };
    for _ in 0..runs {
        let before = counts(&rt);
        let cpu = process_cpu();
        let t = Instant::now();
        match args[0].as_str() {
            "pipeline" => {
                bodies::pipeline_green(&rt, p, q, m);
            }
            "crossbeam" => {
                bodies::pipeline_crossbeam(p, q, m);
            }
            "stencil" => {
                bodies::stencil_green(&rt, STENCIL_SIDE, m as usize, w * p, expected);
            }
            "std_stencil" => {
                bodies::stencil_os(STENCIL_SIDE, m as usize, w * p, expected);
            }
            other => {
                eprintln!("{usage}: unknown workload `{other}`");
                std::process::exit(2);
            }
        }
        let wall = t.elapsed();
        let cpu = process_cpu() - cpu;
        let after = counts(&rt);
        let per = |a: u64, b: u64| (a - b) as f64 / units as f64;
        println!(
            "{}: wall {:.2} ms, cpu {:.2} ms; per unit: runs {:.3}, parks {:.3}, steals {:.3}, \
             sleeps {:.4}, inbox wake-ups {:.3}",
            args[0],
            wall.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e3,
            per(after.runs, before.runs),
            per(after.parks, before.parks),
            per(after.steals, before.steals),
            per(after.sleeps, before.sleeps),
            per(after.inbox_wakeups, before.inbox_wakeups),
        );
    }
}
