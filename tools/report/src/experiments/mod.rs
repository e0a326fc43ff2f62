//! The experiments, one module each, registered in one table ([`all`]). To add or fill in one:
//! write `pub fn run(ctx: &Ctx) -> Result<Section, String>` in its module and list it here.

use std::time::Duration;

use crate::cli::Mode;
use crate::model::Section;
use crate::progress::Stepper;

mod cpus;
mod cruise_004;
mod fib;
mod fragments_001;
mod injected;
mod locks_000;
mod machine;
mod micro;
mod multiprog_002;
mod orders;
mod reload_004;
mod skynet;
mod smoother_004;
mod threads_003;
mod uts;
mod working_set_004;

pub use machine::{
    build_info as machine_build_info, cache_line_handoff, cpu_model as machine_cpu_model,
    load_average,
};
pub use orders::runtime;
pub use skynet::child_main;

/// What an experiment gets: the mode and a way to say what it is doing.
/// One worker per CPU of the allowed set (the default of `--workers`).
pub fn all_cpus() -> usize {
    skynet::all_cpus()
}

pub struct Ctx {
    pub mode: Mode,
    /// Workers of every experiment but 002's and 003's (`--workers`, default all CPUs); the
    /// peers get as many threads (the lock benchmarks: 4 per worker on both sides).
    pub workers: usize,
    stepper: Stepper,
}

impl Ctx {
    pub fn new(mode: Mode, workers: usize, stepper: Stepper) -> Ctx {
        Ctx {
            mode,
            workers,
            stepper,
        }
    }

    /// Repetitions of one measurement (medians are taken over them).
    pub fn reps(&self) -> usize {
        self.mode.pick(1, 3, 7, 21)
    }

    /// Shows what is running now.
    pub fn step(&self, what: &str) {
        self.stepper.step(what);
    }
}

/// One experiment of the report.
pub struct Experiment {
    /// `--only` name and file stem prefix.
    pub name: &'static str,
    pub title: &'static str,
    pub run: fn(&Ctx) -> Result<Section, String>,
    /// Expected seconds in tiny, quick, default and full mode (for the progress estimate).
    pub estimate_s: [f64; 4],
    /// Time limit override in seconds (default: six times the estimate, at least a minute).
    pub limit_s: Option<f64>,
}

impl Experiment {
    pub fn estimate(&self, mode: Mode) -> Duration {
        let [t, q, d, f] = self.estimate_s;
        Duration::from_secs_f64(mode.pick(t, q, d, f))
    }

    pub fn limit(&self, mode: Mode) -> Duration {
        match self.limit_s {
            Some(s) => Duration::from_secs_f64(s),
            None => (self.estimate(mode) * 6).max(Duration::from_secs(60)),
        }
    }
}

/// Every experiment, in report order.
pub fn all() -> Vec<Experiment> {
    vec![
        Experiment {
            name: "machine",
            title: "The machine: topology, counters, build",
            run: machine::run,
            estimate_s: [0.1, 0.1, 0.1, 0.1],
            limit_s: None,
        },
        Experiment {
            name: "micro",
            title: "Runtime vs peers: yield and spawn + join",
            run: micro::run,
            estimate_s: [0.5, 4.0, 25.0, 70.0],
            limit_s: None,
        },
        Experiment {
            name: "fib",
            title: "Runtime vs peers: fib with a join at every level",
            run: fib::run,
            estimate_s: [0.3, 3.0, 8.0, 30.0],
            limit_s: None,
        },
        Experiment {
            name: "skynet",
            title: "Runtime vs peers: skynet, time and peak memory",
            run: skynet::run,
            estimate_s: [1.0, 6.0, 15.0, 45.0],
            limit_s: None,
        },
        Experiment {
            name: "uts",
            title: "Runtime vs peers: UTS-like unbalanced tree",
            run: uts::run,
            estimate_s: [1.0, 5.0, 12.0, 40.0],
            limit_s: None,
        },
        Experiment {
            name: "locks_000",
            title: "000: the seven lock benchmarks, lock-hot on / off, std threads",
            run: locks_000::run,
            estimate_s: [0.5, 2.0, 6.0, 20.0],
            limit_s: None,
        },
        Experiment {
            name: "fragments_001",
            title: "001: data-fragment hints on / off",
            run: fragments_001::run,
            estimate_s: [0.5, 3.0, 8.0, 25.0],
            limit_s: None,
        },
        Experiment {
            name: "multiprog_002",
            title: "002: lock + barrier loop under multiprogramming degree 1–4",
            run: multiprog_002::run,
            estimate_s: [2.0, 12.0, 60.0, 190.0],
            limit_s: None,
        },
        Experiment {
            name: "threads_003",
            title: "003: thread count (adaptive vs fixed) and the sampled profile",
            run: threads_003::run,
            estimate_s: [3.0, 8.0, 16.0, 30.0],
            limit_s: None,
        },
        Experiment {
            name: "working_set_004",
            title: "004: regular workload, 1024 threads × 64 KiB, per ready order",
            run: working_set_004::run,
            estimate_s: [1.0, 4.0, 10.0, 30.0],
            limit_s: None,
        },
        Experiment {
            name: "smoother_004",
            title:
                "004: irregular active-threads smoother on an unstructured grid, per ready order",
            run: smoother_004::run,
            estimate_s: [1.0, 5.0, 15.0, 45.0],
            limit_s: None,
        },
        Experiment {
            name: "reload_004",
            title: "004: reload-transient model curves (Fig. 3.7, 3.9, 3.10)",
            run: reload_004::run,
            estimate_s: [0.1, 0.1, 0.1, 0.1],
            limit_s: None,
        },
        Experiment {
            name: "cruise_004",
            title: "004: Process Cruise Control, bandwidth reservation and throttling",
            run: cruise_004::run,
            estimate_s: [2.0, 4.0, 8.0, 15.0],
            limit_s: None,
        },
    ]
}

/// Two experiments that fail on purpose (`--inject-failure`, for the smoke test): one panics,
/// one hangs past its one-second limit.
pub fn injected() -> Vec<Experiment> {
    vec![
        Experiment {
            name: "injected_panic",
            title: "Injected failure: a panicking experiment",
            run: injected::panics,
            estimate_s: [0.0; 4],
            limit_s: None,
        },
        Experiment {
            name: "injected_hang",
            title: "Injected failure: an experiment that never returns",
            run: injected::hangs,
            estimate_s: [1.0; 4],
            limit_s: Some(1.0),
        },
    ]
}
