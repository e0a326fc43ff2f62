//! 004's Process Cruise Control (§4.2): the simulated memory bus (Table 4.2 and the reserved
//! thread beside 1..3 streamers, throttling off / on), and on this machine a stencil with a
//! deadline per period beside streaming green threads, bandwidth control off / on, on a
//! `--workers` runtime. The on-machine half is a short form of `examples/cruise_control.rs`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use footprint::bandwidth::{self, Capacity};
use footprint::{GreenBuilder, Runtime};
use footprint_sim::membus::{calibrate, cruise_control, BusModel, CruiseParams};

use crate::experiments::Ctx;
use crate::model::{format_number, plural, Axis, Plot, PlotKind, Section, Table, X};

/// Streaming green threads beside the stencil on `workers` workers: one per other worker, at
/// least the paper's [`STREAMERS`] (so 3 on 2 workers, as the bench's machine had).
fn streamers(workers: usize) -> usize {
    STREAMERS.max(workers.saturating_sub(1))
}

/// Streamers beside the reserved thread in the paper (Table 4.2's machine: one CPU each, 4 CPUs).
const STREAMERS: usize = 3;
const GRID: usize = 1024;
const BLOCK: usize = 1 << 17;

pub fn run(ctx: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "cruise_004",
        "004: Process Cruise Control, bandwidth reservation and throttling",
        "004 (Bellosa), §4.2 (Table 4.2, §4.2.2, §4.2.3)",
        "A thread with a bandwidth reservation keeps its rate while other CPUs stream, when the \
         threads without a reservation are throttled: ≥ 90 % of its rate alone beside 3 \
         streamers, against < 60 % without throttling (the issue's form of the claim).",
    );
    ctx.step("simulated bus");
    let bus = BusModel::e3000_two_banks();
    let sim_ms = ctx.mode.pick(20.0, 50.0, 100.0, 200.0);
    let mut t42 = Table::new(
        "Table 4.2 on the simulated bus: copy rate per CPU, MB/s",
        &["CPUs", "simulated", "paper (2 banks)"],
    );
    for (i, (r, paper)) in calibrate(&bus, 4, sim_ms, 1)
        .iter()
        .zip([197, 166, 127, 101])
        .enumerate()
    {
        t42.row(vec![
            (i + 1).to_string(),
            format!("{:.1}", r / 1e6 / (i + 1) as f64),
            paper.to_string(),
        ]);
    }
    let mut kept = Plot::new(
        "cruise_004-sim",
        "Simulated bus: share of its rate alone the reserved thread keeps",
        PlotKind::Bars,
        "throttling",
        Axis::linear("streamers", "streamers beside it"),
        Axis::linear("kept_percent", "% of its rate alone"),
    );
    let mut sim_table = Table::new(
        "Simulated bus: reserved thread (92 % of its rate alone reserved) beside streamers",
        &["streamers", "throttling", "kept", "streamers together MB/s"],
    );
    let mut sim_three = (0.0, 0.0);
    for streamers in 1..=3 {
        for throttle in [false, true] {
            let p = CruiseParams {
                streamers,
                throttle,
                sim_ms,
                ..CruiseParams::default()
            };
            let r = cruise_control(&bus, &p);
            let name = if throttle { "on" } else { "off" };
            kept.push(
                name,
                X::Cat(streamers.to_string()),
                100.0 * r.fraction_kept(),
            );
            sim_table.row(vec![
                streamers.to_string(),
                name.into(),
                format!("{:.1} %", 100.0 * r.fraction_kept()),
                format!("{:.1}", r.streamer_rates.iter().sum::<f64>() / 1e6),
            ]);
            if streamers == 3 {
                if throttle {
                    sim_three.1 = r.fraction_kept();
                } else {
                    sim_three.0 = r.fraction_kept();
                }
            }
        }
    }
    ctx.step("stencil beside streamers");
    let steps = ctx.mode.pick(40, 100, 200, 400);
    let machine = on_machine(steps, ctx)?;
    let mut lat = Plot::new(
        "cruise_004-machine",
        "This machine: stencil step latency per period (release to done)",
        PlotKind::Lines,
        "bandwidth_control",
        Axis::linear("step", "step"),
        Axis::linear("latency_ms", "latency, ms"),
    );
    let workers = ctx.workers;
    let mut mt = Table::new(
        &format!(
            "This machine: stencil (1024², deadline 1.5 × its step alone) beside {} streaming \
             green threads, {workers} worker{}",
            streamers(workers),
            plural(workers)
        ),
        &[
            "control",
            "periods missed",
            "p50 ms",
            "p99 ms",
            "streamers GB/s",
            "throttle delays",
        ],
    );
    for m in &machine.modes {
        let name = if m.on { "on" } else { "off" };
        for (i, d) in m.latencies.iter().enumerate() {
            lat.push(name, X::Num(i as f64), d.as_secs_f64() * 1e3);
        }
        let mut l = m.latencies.clone();
        l.sort();
        let p = |q: f64| {
            l.get(((l.len().max(1) - 1) as f64 * q) as usize)
                .copied()
                .unwrap_or_default()
        };
        mt.row(vec![
            name.into(),
            format!("{} of {steps}", m.missed),
            format!("{:.3}", p(0.5).as_secs_f64() * 1e3),
            format!("{:.3}", p(0.99).as_secs_f64() * 1e3),
            format!("{:.2}", m.gb_s),
            format_number(m.delays as f64),
        ]);
    }
    s.plots.extend([kept, lat]);
    s.tables.extend([t42, sim_table, mt]);
    let off = machine.modes.iter().find(|m| !m.on);
    let on = machine.modes.iter().find(|m| m.on);
    let on_missed = match on {
        Some(m) => format!(
            "{} of {steps} periods missed with bandwidth control on",
            m.missed
        ),
        None => "bandwidth control on not run (one worker: a reservation keeps a second CPU \
                 free for the threads without one)"
            .into(),
    };
    s.measured = format!(
        "Simulated bus, 3 streamers: the reserved thread keeps {:.1} % with throttling, {:.1} % \
         without. This machine (deadline {:.3} ms): {on_missed}, {} of {steps} off; traffic \
         source: {}.",
        100.0 * sim_three.1,
        100.0 * sim_three.0,
        machine.deadline.as_secs_f64() * 1e3,
        off.map_or(0, |m| m.missed),
        machine.source
    );
    s.verdict = if sim_three.1 >= 0.9 && sim_three.0 < 0.6 {
        "simulated: met (≥ 90 % kept with throttling, < 60 % without); on this machine see the \
         table (on a VM shared with other work, CPU time rather than memory bandwidth may \
         dominate)"
            .into()
    } else {
        format!(
            "simulated: missed ({:.1} % with, {:.1} % without)",
            100.0 * sim_three.1,
            100.0 * sim_three.0
        )
    };
    s.notes.push(format!(
        "On this machine the traffic is declared (GreenBuilder::traffic for the streamers, \
         record_traffic for the stencil) unless hardware counters or resctrl are present; the \
         capacity is the copy rate calibrated at the stencil's working-set size ({}).",
        machine.capacity
    ));
    s.notes.push(format!(
        "On this machine the stencil runs beside one streaming green thread per other worker, at \
         least the paper's {STREAMERS} ({} on {workers} worker{}): fewer would leave the memory \
         bus of a many-core machine idle.",
        streamers(workers),
        plural(workers)
    ));
    Ok(s)
}

struct Mode {
    on: bool,
    latencies: Vec<Duration>,
    missed: usize,
    gb_s: f64,
    delays: u64,
}

struct Machine {
    deadline: Duration,
    modes: Vec<Mode>,
    source: String,
    capacity: String,
}

fn step(n: usize, src: &[f64], dst: &mut [f64]) {
    for i in 1..n - 1 {
        for j in 1..n - 1 {
            let k = i * n + j;
            dst[k] = 0.2 * (src[k] + src[k - 1] + src[k + 1] + src[k - n] + src[k + n]);
        }
    }
}

fn on_machine(steps: usize, ctx: &Ctx) -> Result<Machine, String> {
    let workers = ctx.workers;
    let rt = Runtime::builder()
        .workers(workers)
        .build()
        .map_err(|e| e.to_string())?;
    let array_bytes = GRID * GRID * 8;
    let cal = bandwidth::calibrate_with(&bandwidth::CalibrateOptions {
        array_bytes,
        cache_file: bandwidth::default_cache_file()
            .map(|p| p.with_file_name(format!("bandwidth-v1-{array_bytes}.txt"))),
        ..bandwidth::CalibrateOptions::default()
    })
    .map_err(|e| e.to_string())?;
    // The calibration measured 1 up to one thread per CPU; more workers than CPUs copy no faster.
    let copiers = workers.min(cal.total_rates.len());
    let rate = *cal
        .total_rates
        .get(copiers.max(1) - 1)
        .ok_or("the bandwidth calibration measured no rate")?;
    rt.set_bandwidth_capacity(Capacity::new(rate, workers).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let (mut a, mut b) = (vec![1.0f64; GRID * GRID], vec![0.0f64; GRID * GRID]);
    let mut alone: Vec<Duration> = (0..30)
        .map(|_| {
            let t = Instant::now();
            step(GRID, &a, &mut b);
            std::mem::swap(&mut a, &mut b);
            t.elapsed()
        })
        .collect();
    alone.sort();
    let deadline = alone[alone.len() / 2].mul_f64(1.5);
    let step_bytes = (2 * array_bytes) as u64;
    let per = 64 << 20 >> 4;
    let mut streams: Vec<(Vec<f64>, Vec<f64>)> = (0..streamers(workers))
        .map(|_| (vec![1.0; per], vec![0.0; per]))
        .collect();
    let mut modes = Vec::new();
    // A reservation keeps one CPU free for the threads without one: one worker cannot hold any.
    let controls: &[bool] = if workers >= 2 {
        &[false, true]
    } else {
        &[false]
    };
    for &on in controls {
        ctx.step(if on {
            "stencil, control on"
        } else {
            "stencil, control off"
        });
        let stop = Arc::new(AtomicBool::new(false));
        let copied = Arc::new(AtomicU64::new(0));
        let before = rt.stats().bandwidth.delays;
        let t0 = Instant::now();
        let (lat, missed, back) = rt.block_on(|| -> Result<_, String> {
            let reservation = if on {
                let need = step_bytes as f64 / (0.8 * deadline.as_secs_f64());
                Some(rt.reserve_bandwidth(need).map_err(|e| e.to_string())?)
            } else {
                None
            };
            let hs: Vec<_> = streams
                .drain(..)
                .map(|(src, mut dst)| {
                    let (stop, copied) = (stop.clone(), copied.clone());
                    GreenBuilder::new()
                        .traffic((16 * BLOCK) as u64)
                        .spawn(move || {
                            let mut at = 0;
                            while !stop.load(Ordering::Relaxed) {
                                let end = (at + BLOCK).min(src.len());
                                dst[at..end].copy_from_slice(&src[at..end]);
                                copied.fetch_add((16 * (end - at)) as u64, Ordering::Relaxed);
                                at = if end == src.len() { 0 } else { end };
                                footprint::yield_now();
                            }
                            (src, dst)
                        })
                        .map_err(|e| e.to_string())
                })
                .collect::<Result<_, _>>()?;
            let (mut lat, mut missed) = (Vec::new(), 0);
            let start = Instant::now() + deadline;
            let mut k = 0;
            while k < steps {
                let release = start + deadline * k as u32;
                footprint::sleep_until(release);
                step(GRID, &a, &mut b);
                std::mem::swap(&mut a, &mut b);
                bandwidth::record_traffic(step_bytes);
                let d = release.elapsed();
                lat.push(d);
                missed += usize::from(d > deadline);
                let next =
                    ((start.elapsed().as_nanos() / deadline.as_nanos()) as usize + 1).max(k + 1);
                missed += next.min(steps) - (k + 1);
                k = next;
            }
            drop(reservation);
            stop.store(true, Ordering::Relaxed);
            let back: Vec<_> = hs
                .into_iter()
                .map(|h| h.join().expect("streamer"))
                .collect();
            Ok((lat, missed, back))
        })?;
        streams = back;
        modes.push(Mode {
            on,
            latencies: lat,
            missed,
            gb_s: copied.load(Ordering::Relaxed) as f64 / t0.elapsed().as_secs_f64() / 1e9,
            delays: rt.stats().bandwidth.delays - before,
        });
    }
    Ok(Machine {
        deadline,
        modes,
        source: rt.stats().bandwidth.source.to_string(),
        capacity: format!("{:.0} MB/s with {copiers} threads", rate / 1e6),
    })
}
