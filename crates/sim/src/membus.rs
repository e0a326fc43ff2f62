//! A memory bus shared by the CPUs of one node, and 004's Process Cruise Control on it
//! (§4.2): a reserved thread beside streaming threads, with and without throttling.
//!
//! # The model
//! Each CPU runs one thread that alternates computing (`think_ns` per line) and reading one
//! 64-byte line from memory; one line is outstanding per CPU. The node's memory is one
//! first-come-first-served server (the bus and its banks) with exponentially distributed
//! service times of mean `64 B / capacity`, plus a fixed access latency that does not queue.
//! This is the closed queueing network whose mean-value analysis gives the falling per-CPU
//! copy rate of Table 4.2: [`BusModel::e3000_two_banks`] (420 MB/s, 173 ns) gives 197, 162,
//! 129 and 103 MB/s per CPU for 1..4 copying CPUs, against the paper's 197, 166, 127 and 101.
//!
//! # Cruise control
//! The same code the runtime uses decides: `footprint_bandwidth`'s [`Admission`] admits the
//! reservation against the copy rate calibrated on the simulated bus with every CPU streaming,
//! its [`ThrottleController`] sees each interval what the reserved thread moved, and each
//! streamer's [`TokenBucket`] is charged at its switch points (every `chunk_lines` lines);
//! a streamer in debt idles until the debt is paid (in the runtime, its green thread sleeps and
//! the worker runs other work). The reserved thread is never delayed.
//!
//! ```
//! use footprint_sim::membus::{BusModel, CruiseParams, cruise_control};
//! let p = CruiseParams { sim_ms: 40.0, ..CruiseParams::default() };
//! let off = cruise_control(&BusModel::e3000_two_banks(), &CruiseParams { throttle: false, ..p.clone() });
//! assert!(off.fraction_kept() < 0.6);
//! ```

use crate::rng::SplitMix64;
use footprint_bandwidth::{
    Admission, AdmissionError, Capacity, ReservedSample, Throttle, ThrottleConfig,
    ThrottleController, TokenBucket, LINE_BYTES,
};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::time::Duration;

/// The shared memory of one node.
#[derive(Clone, Debug, PartialEq)]
pub struct BusModel {
    /// Bytes per second the bus and banks serve when always busy.
    pub capacity: f64,
    /// Access latency that does not queue, nanoseconds.
    pub latency_ns: f64,
}

impl BusModel {
    /// Fitted to Table 4.2's two-bank SUN E3000 (see the module docs).
    pub fn e3000_two_banks() -> BusModel {
        BusModel {
            capacity: 420e6,
            latency_ns: 173.0,
        }
    }

    fn service_ns(&self) -> f64 {
        LINE_BYTES as f64 / self.capacity * 1e9
    }
}

/// What runs on one CPU.
#[derive(Clone, Debug, PartialEq)]
enum Role {
    Reserved { reserved: f64 },
    Streamer,
}

struct Cpu {
    role: Role,
    think_ns: f64,
    lines: u64,
    /// Lines since the last switch point.
    chunk: u64,
    bucket: Option<TokenBucket>,
    /// Lines in the current controller interval (reserved thread).
    interval_lines: u64,
    delayed_ns: f64,
}

/// One run's figures per CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct BusRun {
    /// Bytes per second each CPU moved.
    pub rates: Vec<f64>,
    /// Time each CPU idled for throttling, nanoseconds.
    pub delayed_ns: Vec<f64>,
    /// Controller intervals, and those in which the reserved thread was behind.
    pub intervals: (u64, u64),
    /// The throttle factor in force at the end (`None`: released).
    pub final_factor: Option<f64>,
}

struct Sim<'a> {
    bus: &'a BusModel,
    cpus: Vec<Cpu>,
    rng: SplitMix64,
    chunk_lines: u64,
}

/// How the simulated run throttles.
struct Control {
    admission: Admission,
    controller: ThrottleController,
}

impl Sim<'_> {
    fn exp(&mut self, mean: f64) -> f64 {
        // Inverse transform; 1 - u is in (0, 1].
        -mean * (1.0 - self.rng.unit()).ln()
    }

    /// Runs `sim_ns` of simulated time.
    fn run(mut self, sim_ns: f64, mut control: Option<Control>) -> BusRun {
        let n = self.cpus.len();
        let interval_ns = control.as_ref().map_or(f64::INFINITY, |c| {
            c.controller.config().interval.as_nanos() as f64
        });
        let mut next_interval = interval_ns;
        let mut events: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
        for i in 0..n {
            let t = self.exp(self.cpus[i].think_ns.max(1.0));
            events.push(Reverse((t as u64, i)));
        }
        let service = self.bus.service_ns();
        let mut bus_free = 0.0f64;
        let mut throttle = Throttle::Released;
        while let Some(Reverse((t, i))) = events.pop() {
            let t = t as f64;
            if t >= sim_ns {
                break;
            }
            while t >= next_interval {
                if let Some(c) = control.as_mut() {
                    throttle = self.decide(c, next_interval, interval_ns);
                }
                next_interval += interval_ns;
            }
            // The request reaches the bus at `t`, is served in arrival order, and the line
            // arrives `latency` after its service ends.
            let start = t.max(bus_free);
            bus_free = start + self.exp(service);
            let done = bus_free + self.bus.latency_ns;
            let think = self.cpus[i].think_ns;
            let think = if think > 0.0 { self.exp(think) } else { 0.0 };
            let mut next = done + think;
            let chunk_lines = self.chunk_lines;
            let cpu = &mut self.cpus[i];
            cpu.lines += 1;
            cpu.interval_lines += 1;
            cpu.chunk += 1;
            if cpu.chunk == chunk_lines {
                cpu.chunk = 0;
                // A switch point: a streamer pays for its chunk and waits out any debt.
                if cpu.role == Role::Streamer {
                    if let Some(rate) = throttle.per_thread(n - 1) {
                        let bucket = cpu.bucket.get_or_insert_with(|| {
                            TokenBucket::new(rate, rate * interval_ns * 1e-9, done as u64)
                        });
                        bucket.set_rate(rate, rate * interval_ns * 1e-9, done as u64);
                        let delay = bucket.charge(chunk_lines * LINE_BYTES, done as u64);
                        let d = delay.as_nanos() as f64;
                        cpu.delayed_ns += d;
                        next += d;
                    } else {
                        cpu.bucket = None;
                    }
                }
            }
            events.push(Reverse((next as u64, i)));
        }
        let secs = sim_ns * 1e-9;
        BusRun {
            rates: self
                .cpus
                .iter()
                .map(|c| (c.lines * LINE_BYTES) as f64 / secs)
                .collect(),
            delayed_ns: self.cpus.iter().map(|c| c.delayed_ns).collect(),
            intervals: control.as_ref().map_or((0, 0), |c| c.controller.counts()),
            final_factor: match throttle {
                Throttle::Released => None,
                Throttle::Engaged { factor, .. } => Some(factor),
            },
        }
    }

    /// The controller's decision at the end of an interval, from what the reserved threads
    /// moved in it (each ran the whole interval: it has its CPU to itself).
    fn decide(&mut self, c: &mut Control, now: f64, interval_ns: f64) -> Throttle {
        let unreserved_bytes: u64 = self
            .cpus
            .iter()
            .filter(|c| c.role == Role::Streamer)
            .map(|c| c.interval_lines * LINE_BYTES)
            .sum();
        let unreserved_rate = unreserved_bytes as f64 / (interval_ns * 1e-9);
        let samples: Vec<ReservedSample> = self
            .cpus
            .iter_mut()
            .filter_map(|cpu| match cpu.role {
                Role::Reserved { reserved } => {
                    let s = ReservedSample {
                        reserved,
                        bytes: std::mem::take(&mut cpu.interval_lines) * LINE_BYTES,
                        run_time: Duration::from_nanos(interval_ns as u64),
                    };
                    Some(s)
                }
                Role::Streamer => {
                    cpu.interval_lines = 0;
                    None
                }
            })
            .collect();
        c.controller.update(
            now as u64,
            c.admission.free_bandwidth(),
            unreserved_rate,
            &samples,
        )
    }
}

fn streamers(n: usize) -> Vec<Cpu> {
    (0..n)
        .map(|_| Cpu {
            role: Role::Streamer,
            think_ns: 0.0,
            lines: 0,
            chunk: 0,
            bucket: None,
            interval_lines: 0,
            delayed_ns: 0.0,
        })
        .collect()
}

/// Table 4.2 on the simulated bus: the total copy rate with 1..=`cpus` CPUs streaming.
///
/// ```
/// use footprint_sim::membus::{calibrate, BusModel};
/// let rates = calibrate(&BusModel::e3000_two_banks(), 4, 20.0, 1);
/// let per_cpu_4 = rates[3] / 4.0 / 1e6;
/// assert!((95.0..110.0).contains(&per_cpu_4), "{per_cpu_4}"); // the paper: 101 MB/s
/// ```
pub fn calibrate(bus: &BusModel, cpus: usize, sim_ms: f64, seed: u64) -> Vec<f64> {
    (1..=cpus)
        .map(|n| {
            let sim = Sim {
                bus,
                cpus: streamers(n),
                rng: SplitMix64::new(seed ^ n as u64),
                chunk_lines: u64::MAX,
            };
            sim.run(sim_ms * 1e6, None).rates.iter().sum()
        })
        .collect()
}

/// The cruise-control experiment: one reserved thread beside streamers on one node.
#[derive(Clone, Debug, PartialEq)]
pub struct CruiseParams {
    /// Streamers beside the reserved thread (each on a CPU of its own).
    pub streamers: usize,
    /// The reserved thread's compute per line, nanoseconds (0: it streams too).
    pub reserved_think_ns: f64,
    /// The share of its rate alone that it reserves.
    pub reserve_share: f64,
    /// Whether unreserved threads are throttled.
    pub throttle: bool,
    /// Lines between two switch points of a streamer.
    pub chunk_lines: u64,
    /// The controller's tunables.
    pub controller: ThrottleConfig,
    /// Simulated milliseconds.
    pub sim_ms: f64,
    /// The random seed.
    pub seed: u64,
}

impl Default for CruiseParams {
    fn default() -> Self {
        CruiseParams {
            streamers: 3,
            reserved_think_ns: 0.0,
            reserve_share: 0.92,
            throttle: true,
            chunk_lines: 64,
            controller: ThrottleConfig {
                interval: Duration::from_millis(1),
                ..ThrottleConfig::default()
            },
            sim_ms: 100.0,
            seed: 1,
        }
    }
}

/// What the experiment measured.
#[derive(Clone, Debug, PartialEq)]
pub struct CruiseReport {
    /// The reserved thread's rate with its CPU and the bus to itself, bytes per second.
    pub alone: f64,
    /// Its rate beside the streamers.
    pub beside: f64,
    /// What it reserved.
    pub reserved: f64,
    /// The copy rate with every CPU streaming (the admission's capacity).
    pub capacity: f64,
    /// The streamers' rates.
    pub streamer_rates: Vec<f64>,
    /// The run's details (the reserved thread is CPU 0).
    pub run: BusRun,
    /// Whether throttling was on.
    pub throttle: bool,
}

impl CruiseReport {
    /// The share of its rate alone the reserved thread kept.
    pub fn fraction_kept(&self) -> f64 {
        self.beside / self.alone
    }
}

impl fmt::Display for CruiseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: f64 = self.streamer_rates.iter().sum();
        write!(
            f,
            "throttle {:<3}  reserved thread {:6.1} of {:6.1} MB/s alone ({:5.1} %), reserved {:6.1}; {} streamers {:6.1} MB/s together; capacity {:6.1} MB/s; intervals behind {}/{}",
            if self.throttle { "on" } else { "off" },
            self.beside / 1e6,
            self.alone / 1e6,
            100.0 * self.fraction_kept(),
            self.reserved / 1e6,
            self.streamer_rates.len(),
            total / 1e6,
            self.capacity / 1e6,
            self.run.intervals.1,
            self.run.intervals.0,
        )
    }
}

/// Runs the experiment: calibrates the bus with every CPU streaming, measures the reserved
/// thread alone, admits its reservation, and runs it beside the streamers.
///
/// # Panics
/// When the admission refuses the reservation (a `reserve_share` above what the rules admit);
/// [`try_cruise_control`] returns the refusal instead.
pub fn cruise_control(bus: &BusModel, p: &CruiseParams) -> CruiseReport {
    try_cruise_control(bus, p).unwrap_or_else(|e| panic!("cruise control: {e}"))
}

/// [`cruise_control`], with the admission's refusal as an error.
pub fn try_cruise_control(
    bus: &BusModel,
    p: &CruiseParams,
) -> Result<CruiseReport, AdmissionError> {
    let cpus = p.streamers + 1;
    let capacity = *calibrate(bus, cpus, p.sim_ms, p.seed)
        .last()
        .expect("at least one CPU");
    let reserved_cpu = |reserved| Cpu {
        role: Role::Reserved { reserved },
        think_ns: p.reserved_think_ns,
        lines: 0,
        chunk: 0,
        bucket: None,
        interval_lines: 0,
        delayed_ns: 0.0,
    };
    let alone = Sim {
        bus,
        cpus: vec![reserved_cpu(0.0)],
        rng: SplitMix64::new(p.seed.wrapping_add(17)),
        chunk_lines: p.chunk_lines,
    }
    .run(p.sim_ms * 1e6, None)
    .rates[0];
    let reserved = p.reserve_share * alone;
    let mut admission = Admission::new(Capacity::new(capacity, cpus)?);
    admission.admit(reserved)?;
    let mut cpus_v = vec![reserved_cpu(reserved)];
    cpus_v.extend(streamers(p.streamers));
    let control = p.throttle.then(|| Control {
        admission,
        controller: ThrottleController::new(p.controller.clone()),
    });
    let run = Sim {
        bus,
        cpus: cpus_v,
        rng: SplitMix64::new(p.seed.wrapping_add(29)),
        chunk_lines: p.chunk_lines,
    }
    .run(p.sim_ms * 1e6, control);
    Ok(CruiseReport {
        alone,
        beside: run.rates[0],
        reserved,
        capacity,
        streamer_rates: run.rates[1..].to_vec(),
        run,
        throttle: p.throttle,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bus_reproduces_table_4_2() {
        let rates = calibrate(&BusModel::e3000_two_banks(), 4, 50.0, 3);
        let paper = [197.0, 166.0, 127.0, 101.0];
        for (n, (r, want)) in rates.iter().zip(paper).enumerate() {
            let per_cpu = r / (n + 1) as f64 / 1e6;
            assert!(
                (per_cpu - want).abs() / want < 0.08,
                "{} CPUs: {per_cpu:.1} MB/s per CPU, paper {want}",
                n + 1
            );
        }
    }

    #[test]
    fn a_refused_reservation_is_an_error_not_a_run() {
        let p = CruiseParams {
            reserve_share: 3.0,
            sim_ms: 5.0,
            ..CruiseParams::default()
        };
        assert!(matches!(
            try_cruise_control(&BusModel::e3000_two_banks(), &p),
            Err(AdmissionError::AboveMaxRequest { .. } | AdmissionError::Overcommit { .. })
        ));
    }
}
