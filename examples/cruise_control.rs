//! Process Cruise Control (004 ch. 4.2) on this machine: a latency-sensitive green thread (a
//! 5-point stencil with a deadline per step) beside streaming green threads, with bandwidth
//! reservation and throttling off and on. Prints the steps missed, the step latencies and the
//! streamers' throughput per mode, and which traffic source the runtime used; writes
//! `OUT/cruise_control.csv` and `OUT/cruise_control.svg` (step latency against the deadline).
//!
//! ```text
//! cargo run --release --example cruise_control
//! cargo run --release --example cruise_control -- --streamers 3 --steps 300 --grid 1024 --rounds 2
//! ```
//!
//! Options: `--workers N` (default: every allowed CPU), `--streamers N` (3), `--steps N` per
//! mode and round (300), `--grid N` (the stencil's N × N grid of f64, 1024: 16 MiB per step),
//! `--stream-mib N` (each streamer's arrays together, 256), `--deadline-factor F` (the deadline
//! is F × the step's median time alone, 1.5), `--rounds N` (off/on pairs, 2), `--out DIR`
//! (`target/cruise_control`).
//!
//! With throttling on, the stencil reserves the rate it needs to finish a step in 80 % of its
//! deadline (bytes per step over that time), admitted against `footprint::bandwidth::calibrate()`
//! (cached); the streamers declare their traffic (`GreenBuilder::traffic`) and the stencil its
//! own (`record_traffic`), unless hardware counters or resctrl measure it.

use clap::Parser;
use footprint::bandwidth::{self, Capacity};
use footprint::{Counters, GreenBuilder, Runtime};
use footprint_workloads::cli;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Process Cruise Control on this machine: a latency-sensitive stencil with a deadline per step
/// beside streaming green threads, with bandwidth reservation and throttling off and on.
#[derive(Parser)]
#[command(name = "cruise_control")]
struct Args {
    /// Workers: at least 2 (one for the reserved thread, one for the rest) [default: one per CPU]
    #[arg(long, value_parser = two_or_more)]
    workers: Option<usize>,
    /// Streaming green threads
    #[arg(long, default_value_t = 3, value_parser = cli::positive_count)]
    streamers: usize,
    /// Stencil steps per round
    #[arg(long, default_value_t = 300, value_parser = cli::positive_count)]
    steps: usize,
    /// The stencil's side (at least 3)
    #[arg(long, default_value_t = 1024, value_parser = cli::positive_count)]
    grid: usize,
    /// MiB each streamer streams over
    #[arg(long = "stream-mib", default_value_t = 256, value_parser = cli::positive_count)]
    stream_mib: usize,
    /// A step's deadline: this factor times its time alone (a number >= 1)
    #[arg(long = "deadline-factor", default_value_t = 1.5, value_parser = deadline_factor)]
    deadline_factor: f64,
    /// Rounds per mode
    #[arg(long, default_value_t = 2, value_parser = cli::positive_count)]
    rounds: usize,
    /// Where the CSV and the plot go
    #[arg(long, default_value = "target/cruise_control")]
    out: PathBuf,
}

/// `--workers`: one for the reserved thread, one for the rest.
fn two_or_more(v: &str) -> Result<usize, String> {
    match cli::count(v)? {
        n if n >= 2 => Ok(n),
        _ => Err("at least 2 are needed: one for the reserved thread, one for the rest".into()),
    }
}

/// `--deadline-factor`: a finite number of at least 1.
fn deadline_factor(v: &str) -> Result<f64, String> {
    v.parse::<f64>()
        .ok()
        .filter(|f| *f >= 1.0 && f.is_finite())
        .ok_or_else(|| format!("a number >= 1 is needed, got {v:?}"))
}

/// The run's settings: the command line with its defaults resolved.
struct Options {
    workers: usize,
    streamers: usize,
    steps: usize,
    grid: usize,
    stream_mib: usize,
    deadline_factor: f64,
    rounds: usize,
    out: PathBuf,
}

fn parse_args() -> Result<Options, String> {
    let a = Args::parse();
    let workers = a
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    if workers < 2 {
        return Err(format!(
            "this machine offers {workers} CPU: pass --workers 2 or more (one for the reserved \
             thread, one for the rest)"
        ));
    }
    Ok(Options {
        workers,
        streamers: a.streamers,
        steps: a.steps,
        grid: a.grid.max(3),
        stream_mib: a.stream_mib,
        deadline_factor: a.deadline_factor,
        rounds: a.rounds,
        out: a.out,
    })
}

/// One Jacobi sweep of the 5-point stencil from `src` into `dst` (N × N, fixed border).
fn stencil_step(n: usize, src: &[f64], dst: &mut [f64]) {
    for i in 1..n - 1 {
        let (up, row, down) = (
            &src[(i - 1) * n..i * n],
            &src[i * n..(i + 1) * n],
            &src[(i + 1) * n..(i + 2) * n],
        );
        let out = &mut dst[i * n..(i + 1) * n];
        for j in 1..n - 1 {
            out[j] = 0.2 * (row[j] + row[j - 1] + row[j + 1] + up[j] + down[j]);
        }
    }
}

struct Grid {
    n: usize,
    a: Vec<f64>,
    b: Vec<f64>,
}

impl Grid {
    fn new(n: usize) -> Grid {
        let mut a = vec![0.0; n * n];
        a[n / 2 * n + n / 2] = 1e6;
        let b = a.clone();
        Grid { n, a, b }
    }
    fn step(&mut self) {
        stencil_step(self.n, &self.a, &mut self.b);
        std::mem::swap(&mut self.a, &mut self.b);
    }
    /// Bytes one step reads and writes (both grids).
    fn bytes(&self) -> u64 {
        (2 * self.n * self.n * 8) as u64
    }
}

/// A streamer's arrays; it copies `src` into `dst` a block at a time, yielding between blocks.
struct Stream {
    src: Vec<f64>,
    dst: Vec<f64>,
}

const BLOCK: usize = 1 << 17; // 1 MiB of f64

fn stream(mut s: Stream, stop: Arc<AtomicBool>, copied: Arc<AtomicU64>) -> Stream {
    let mut at = 0;
    while !stop.load(Ordering::Relaxed) {
        let end = (at + BLOCK).min(s.src.len());
        s.dst[at..end].copy_from_slice(&s.src[at..end]);
        copied.fetch_add((2 * 8 * (end - at)) as u64, Ordering::Relaxed);
        at = if end == s.src.len() { 0 } else { end };
        footprint::yield_now();
    }
    s
}

struct ModeResult {
    throttle: bool,
    latencies: Vec<Duration>,
    /// Late steps plus dropped periods.
    missed: usize,
    /// Periods that began while a late step ran.
    dropped: usize,
    streamed_bytes: u64,
    wall: Duration,
    delays: u64,
    delay_time: Duration,
    behind: u64,
    source: String,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn run_mode(
    rt: &Runtime,
    o: &Options,
    grid: &mut Grid,
    streams: &mut Vec<Stream>,
    deadline: Duration,
    throttle: bool,
) -> Result<Result<ModeResult, String>, String> {
    let before = rt.stats().bandwidth;
    let need = grid.bytes() as f64 / (0.8 * deadline.as_secs_f64());
    let stop = Arc::new(AtomicBool::new(false));
    let copied = Arc::new(AtomicU64::new(0));
    let step_bytes = grid.bytes();
    let t0 = Instant::now();
    let run = rt.block_on(|| -> Result<_, String> {
        // Reserved before the streamers start, so that a refusal leaves nothing running.
        let reservation = if throttle {
            match rt.reserve_bandwidth(need) {
                Ok(r) => Some(r),
                Err(e) => return Ok(Err(format!("reserving {:.0} MB/s: {e}", need / 1e6))),
            }
        } else {
            None
        };
        let handles: Vec<_> = streams
            .drain(..)
            .map(|s| {
                let (stop, copied) = (stop.clone(), copied.clone());
                GreenBuilder::new()
                    .name("streamer")
                    .traffic((2 * 8 * BLOCK) as u64)
                    .spawn(move || stream(s, stop, copied))
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()?;
        // One step per period of `deadline`, released at the period's start; a step done
        // after its deadline is missed, and so is every period that began while it ran (the
        // next step starts at the next period: a late frame is dropped, not queued).
        let mut lat = Vec::with_capacity(o.steps);
        let mut dropped = 0;
        let start = Instant::now() + deadline;
        let mut k = 0;
        while k < o.steps {
            let release = start + deadline * k as u32;
            footprint::sleep_until(release);
            grid.step();
            bandwidth::record_traffic(step_bytes);
            lat.push(release.elapsed());
            let next = (start.elapsed().as_nanos() / deadline.as_nanos()) as usize + 1;
            let next = next.max(k + 1);
            dropped += next.min(o.steps) - (k + 1);
            k = next;
        }
        drop(reservation);
        stop.store(true, Ordering::Relaxed);
        let back: Vec<Stream> = handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "a streamer panicked".to_string()))
            .collect::<Result<_, _>>()?;
        Ok(Ok((lat, dropped, back)))
    })?;
    let (latencies, dropped, returned) = match run {
        Ok(r) => r,
        Err(refused) => return Ok(Err(refused)),
    };
    let wall = t0.elapsed();
    *streams = returned;
    let after = rt.stats().bandwidth;
    Ok(Ok(ModeResult {
        throttle,
        missed: latencies.iter().filter(|l| **l > deadline).count() + dropped,
        dropped,
        latencies,
        streamed_bytes: copied.load(Ordering::Relaxed),
        wall,
        delays: after.delays - before.delays,
        delay_time: after.delay_time - before.delay_time,
        behind: after.behind_intervals - before.behind_intervals,
        source: after.source.to_string(),
    }))
}

fn svg(results: &[ModeResult], deadline: Duration) -> String {
    let (w, h, left, bottom) = (760.0, 360.0, 60.0, 40.0);
    let steps = results
        .iter()
        .map(|r| r.latencies.len())
        .max()
        .unwrap_or(1)
        .max(2);
    let max_ms = results
        .iter()
        .flat_map(|r| r.latencies.iter())
        .map(|d| d.as_secs_f64() * 1e3)
        .fold(deadline.as_secs_f64() * 1e3 * 1.5, f64::max);
    let x = |i: usize| left + (w - left - 20.0) * i as f64 / (steps - 1) as f64;
    let y = |ms: f64| (h - bottom) - (h - bottom - 30.0) * (ms / max_ms).min(1.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"{left}\" y=\"18\">stencil step latency (release to done), first round; deadline {:.2} ms</text>\n\
         <line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n\
         <line x1=\"{left}\" y1=\"30\" x2=\"{left}\" y2=\"{}\" stroke=\"black\"/>\n",
        deadline.as_secs_f64() * 1e3,
        h - bottom,
        w - 20.0,
        h - bottom,
        h - bottom
    );
    for t in 0..=4 {
        let ms = max_ms * t as f64 / 4.0;
        let _ = writeln!(
            s,
            "<text x=\"5\" y=\"{:.1}\">{ms:.1} ms</text>",
            y(ms) + 4.0
        );
    }
    let _ = writeln!(s, "<text x=\"{}\" y=\"{}\">step</text>", w / 2.0, h - 8.0);
    let dl = y(deadline.as_secs_f64() * 1e3);
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" y1=\"{dl:.1}\" x2=\"{}\" y2=\"{dl:.1}\" stroke=\"gray\" stroke-dasharray=\"4 3\"/><text x=\"{}\" y=\"{:.1}\" fill=\"gray\">deadline</text>",
        w - 20.0,
        w - 75.0,
        dl - 4.0
    );
    for (r, color) in [(false, "#d62728"), (true, "#1f77b4")] {
        let Some(m) = results.iter().find(|m| m.throttle == r) else {
            continue;
        };
        let pts: Vec<String> = m
            .latencies
            .iter()
            .enumerate()
            .map(|(i, d)| format!("{:.1},{:.1}", x(i), y(d.as_secs_f64() * 1e3)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1\" points=\"{}\"/>",
            pts.join(" ")
        );
        let label = if r { "throttling on" } else { "throttling off" };
        let ly = if r { 40.0 } else { 56.0 };
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{ly}\" fill=\"{color}\">{label}: {} of {} periods missed</text>",
            w - 280.0,
            m.missed,
            m.latencies.len() + m.dropped
        );
    }
    s.push_str("</svg>\n");
    s
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let rt = match Runtime::builder()
        .workers(o.workers)
        .counters(Counters::Auto)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cruise_control: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The capacity the stencil competes for: the copy rate at its working-set size (on a
    // machine whose last-level cache holds the grid, that is the cache's bandwidth, not the
    // memory's), cached beside the default calibration.
    let array_bytes = o.grid * o.grid * 8;
    let opts = bandwidth::CalibrateOptions {
        array_bytes,
        cache_file: bandwidth::default_cache_file()
            .map(|p| p.with_file_name(format!("bandwidth-v1-{array_bytes}.txt"))),
        ..bandwidth::CalibrateOptions::default()
    };
    let cal = match bandwidth::calibrate_with(&opts) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cruise_control: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "calibrated with two arrays of {:.1} MiB per thread (the stencil's grids)",
        array_bytes as f64 / (1 << 20) as f64
    );
    print!("{cal}");
    let n = o.workers.min(cal.total_rates.len());
    let capacity =
        Capacity::new(cal.total_rates[n - 1], o.workers).expect("calibrated rates are positive");
    if let Err(e) = rt.set_bandwidth_capacity(capacity) {
        eprintln!("cruise_control: {e}");
        return ExitCode::FAILURE;
    }
    let mut grid = Grid::new(o.grid);
    // The step alone: median of 50 steps on the runtime with nothing beside it.
    let mut alone: Vec<Duration> = rt.block_on(|| {
        (0..50)
            .map(|_| {
                let t = Instant::now();
                grid.step();
                t.elapsed()
            })
            .collect()
    });
    alone.sort();
    let deadline = percentile(&alone, 0.5).mul_f64(o.deadline_factor);
    println!(
        "\nstencil {0}×{0} ({1:.1} MiB per step): {2:.3} ms per step alone (median of 50); deadline {3:.3} ms; reservation when on: {4:.0} MB/s",
        o.grid,
        grid.bytes() as f64 / (1 << 20) as f64,
        percentile(&alone, 0.5).as_secs_f64() * 1e3,
        deadline.as_secs_f64() * 1e3,
        grid.bytes() as f64 / (0.8 * deadline.as_secs_f64()) / 1e6
    );
    let per = o.stream_mib * (1 << 20) / 16;
    let mut streams: Vec<Stream> = (0..o.streamers)
        .map(|_| Stream {
            src: vec![1.0; per],
            dst: vec![0.0; per],
        })
        .collect();
    let mut results = Vec::new();
    for round in 0..o.rounds {
        for throttle in [false, true] {
            match run_mode(&rt, &o, &mut grid, &mut streams, deadline, throttle) {
                Ok(Ok(r)) => results.push((round, r)),
                // The admission's refusal is a result too: printed, and the mode skipped.
                Ok(Err(refused)) => println!("round {round}, throttling on: {refused}; skipped"),
                Err(e) => {
                    eprintln!("cruise_control: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    println!(
        "\n{} workers, {} streamers of {} MiB, {} steps per mode and round, {} rounds",
        o.workers, o.streamers, o.stream_mib, o.steps, o.rounds
    );
    println!(
        "{:>5} {:>10} {:>8} {:>10} {:>10} {:>10} {:>14} {:>8} {:>10} {:>7}",
        "round",
        "throttle",
        "missed",
        "p50 ms",
        "p99 ms",
        "max ms",
        "streamers GB/s",
        "delays",
        "delay ms",
        "behind"
    );
    let mut csv = String::from("round,throttle,steps,missed,deadline_ms,p50_ms,p99_ms,max_ms,streamers_gb_s,delays,delay_ms,behind_intervals,source\n");
    for (round, r) in &results {
        let mut l = r.latencies.clone();
        l.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let gbs = r.streamed_bytes as f64 / r.wall.as_secs_f64() / 1e9;
        println!(
            "{:>5} {:>10} {:>8} {:>10.3} {:>10.3} {:>10.3} {:>14.2} {:>8} {:>10.1} {:>7}",
            round,
            if r.throttle { "on" } else { "off" },
            format!("{}/{}", r.missed, o.steps),
            ms(percentile(&l, 0.5)),
            ms(percentile(&l, 0.99)),
            ms(*l.last().unwrap_or(&Duration::ZERO)),
            gbs,
            r.delays,
            ms(r.delay_time),
            r.behind
        );
        let _ = writeln!(
            csv,
            "{round},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.3},{},{:.2},{},\"{}\"",
            r.throttle,
            o.steps,
            r.missed,
            ms(deadline),
            ms(percentile(&l, 0.5)),
            ms(percentile(&l, 0.99)),
            ms(*l.last().unwrap_or(&Duration::ZERO)),
            gbs,
            r.delays,
            ms(r.delay_time),
            r.behind,
            r.source.replace('"', "'")
        );
    }
    let source = results
        .last()
        .map_or(String::new(), |(_, r)| r.source.clone());
    println!("traffic source: {source}");
    print!("{}", rt.stats().bandwidth);
    let first: Vec<ModeResult> = results
        .into_iter()
        .filter(|(round, _)| *round == 0)
        .map(|(_, r)| r)
        .collect();
    let write = std::fs::create_dir_all(&o.out)
        .and_then(|()| std::fs::write(o.out.join("cruise_control.csv"), &csv))
        .and_then(|()| std::fs::write(o.out.join("cruise_control.svg"), svg(&first, deadline)));
    match write {
        Ok(()) => println!(
            "wrote {0}/cruise_control.csv and {0}/cruise_control.svg",
            o.out.display()
        ),
        Err(e) => eprintln!("could not write to {}: {e}", o.out.display()),
    }
    ExitCode::SUCCESS
}
