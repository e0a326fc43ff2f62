//! The scheduling simulator (crates/sim): runs footprint's affinity policies on a simulated
//! machine and prints one row per policy, writing a CSV and an SVG plot.
//!
//! ```text
//! cargo run --release --example simulate -- --machine 4x16 --workload regular
//! cargo run --release --example simulate -- --machine 4x16 --cpus 2,4,8,16,32,64 --syncs 100000
//! cargo run --release --example simulate -- --check-model
//! ```
//!
//! Options: `--machine this|2x16|4x16|NxM`, `--workload regular|smoother|fragments|lock-counter|
//! lock-multi`, `--cpus LIST` (a sweep over the first CPUs of the machine), `--syncs N`,
//! `--sample S` (set sampling: simulate 1 line in S), `--cache lru|random`, `--count-level L`
//! (default: the last level, as the runtime's ledger), `--wake waker|last`, `--no-pmu`,
//! `--private-only` (drop the shared caches: private caches and NUMA memory, like 004's machine),
//! `--l3-mib N` (the size of each shared last-level cache),
//! `--seed N`, `--policies LIST`, `--out DIR`; `--check-model [--model-lines N]
//! [--model-seeds N]` runs the model check and exits 1 when a tolerance is missed.

use clap::{Parser, ValueEnum};
use footprint_affinity::PolicyKind;
use footprint_sim::model_check::{check_model, ModelCheckParams};
use footprint_sim::report::{csv, svg_plot, table};
use footprint_sim::{
    simulate, CacheKind, Machine, PolicyChoice, SimConfig, WakePlacement, WorkloadSpec,
};
use std::path::PathBuf;
use std::process::ExitCode;

/// The scheduling simulator: footprint's affinity policies on a simulated machine, one row per
/// policy, with a CSV and an SVG plot; or, with --check-model, the cache model's check.
#[derive(Parser)]
#[command(name = "simulate")]
struct Cli {
    /// The machine: this, 2x16, 4x16 or NxM (N sockets of M CPUs)
    #[arg(long, default_value = "4x16")]
    machine: String,
    /// The workload: regular, smoother, fragments, lock-counter or lock-multi
    #[arg(long, default_value = "regular")]
    workload: String,
    /// A sweep over the first CPUs of the machine, e.g. 2,4,8
    #[arg(long, value_delimiter = ',')]
    cpus: Option<Vec<usize>>,
    /// Synchronisations simulated (`_` separators allowed)
    #[arg(long, default_value = "200_000", value_parser = number)]
    syncs: u64,
    /// Set sampling: simulate 1 line in S [default: the simulator's]
    #[arg(long, value_parser = number)]
    sample: Option<u64>,
    /// The caches' replacement
    #[arg(long, value_enum)]
    cache: Option<Cache>,
    /// The cache level whose misses are counted, 1 to 255 [default: the last level, as the
    /// runtime's ledger]
    #[arg(long = "count-level")]
    count_level: Option<u8>,
    /// Where a woken thread is placed
    #[arg(long, value_enum)]
    wake: Option<Wake>,
    /// No miss counts (as without hardware counters)
    #[arg(long = "no-pmu")]
    no_pmu: bool,
    /// Drop the shared caches: private caches and NUMA memory, like 004's machine
    #[arg(long = "private-only")]
    private_only: bool,
    /// MiB of each shared last-level cache
    #[arg(long = "l3-mib", value_parser = number)]
    l3_mib: Option<u64>,
    /// The simulation's seed [default: the simulator's]
    #[arg(long, value_parser = number)]
    seed: Option<u64>,
    /// The policies, comma-separated (`auto` or a policy name) [default: all]
    #[arg(long, value_delimiter = ',', value_parser = policy)]
    policies: Option<Vec<PolicyChoice>>,
    /// Where the CSV and the plot go
    #[arg(long, default_value = "target/simulate")]
    out: PathBuf,
    /// Run the model check instead (exit 1 when a tolerance is missed)
    #[arg(long = "check-model")]
    check_model: bool,
    /// Lines of the model check (at least 16) [default: the check's]
    #[arg(long = "model-lines", value_parser = number)]
    model_lines: Option<u64>,
    /// Seeds of the model check (at least 1) [default: the check's]
    #[arg(long = "model-seeds", value_parser = number)]
    model_seeds: Option<u64>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Cache {
    Lru,
    Random,
}

#[derive(Clone, Copy, ValueEnum)]
enum Wake {
    /// On the waker's CPU.
    Waker,
    /// On the CPU the thread last ran on.
    Last,
}

/// A number with optional `_` separators.
fn number(v: &str) -> Result<u64, String> {
    v.replace('_', "")
        .parse::<u64>()
        .map_err(|_| format!("a number is needed, got {v:?}"))
}

/// One entry of `--policies`.
fn policy(v: &str) -> Result<PolicyChoice, String> {
    match v.trim() {
        "Auto" | "auto" => Ok(PolicyChoice::Auto),
        other => other
            .parse::<PolicyKind>()
            .map(PolicyChoice::Fixed)
            .map_err(|e| e.to_string()),
    }
}

/// The run's settings: the command line applied to the simulator's defaults.
struct Args {
    machine: String,
    workload: String,
    cpus: Option<Vec<usize>>,
    policies: Vec<PolicyChoice>,
    out: PathBuf,
    cfg: SimConfig,
    check_model: bool,
    model: ModelCheckParams,
    private_only: bool,
    l3_mib: Option<u64>,
}

fn parse_args() -> Args {
    let c = Cli::parse();
    let mut cfg = SimConfig {
        max_syncs: c.syncs,
        ..SimConfig::default()
    };
    if let Some(v) = c.sample {
        cfg.sample = v;
    }
    if let Some(v) = c.seed {
        cfg.seed = v;
    }
    if c.count_level.is_some() {
        cfg.count_level = c.count_level;
    }
    if let Some(v) = c.cache {
        cfg.cache = match v {
            Cache::Lru => CacheKind::Lru,
            Cache::Random => CacheKind::Random,
        };
    }
    if let Some(v) = c.wake {
        cfg.wake = match v {
            Wake::Waker => WakePlacement::Waker,
            Wake::Last => WakePlacement::LastCpu,
        };
    }
    if c.no_pmu {
        cfg.miss_counts = false;
    }
    let mut model = ModelCheckParams::default();
    if let Some(v) = c.model_lines {
        model.lines = v;
    }
    if let Some(v) = c.model_seeds {
        model.seeds = v;
    }
    Args {
        machine: c.machine,
        workload: c.workload,
        cpus: c.cpus,
        policies: c.policies.unwrap_or_else(|| PolicyChoice::ALL.to_vec()),
        out: c.out,
        cfg,
        check_model: c.check_model,
        model,
        private_only: c.private_only,
        l3_mib: c.l3_mib,
    }
}

fn run_model_check(p: &ModelCheckParams) -> ExitCode {
    if p.lines < 16 || p.seeds == 0 {
        eprintln!("--model-lines must be at least 16 and --model-seeds at least 1");
        return ExitCode::FAILURE;
    }
    let check = check_model(p);
    print!("{}", check.table());
    if check.passed() {
        println!("model check passed (footprint within 2 %, reload transient within 5 % on the random cache)");
        ExitCode::SUCCESS
    } else {
        println!("model check FAILED: a random-cache point is outside its tolerance");
        ExitCode::FAILURE
    }
}

fn main() -> ExitCode {
    let args = parse_args();
    if args.check_model {
        return run_model_check(&args.model);
    }
    let machine = match Machine::preset(&args.machine) {
        Ok(mut m) if args.private_only => {
            // 004's Convex SPP: private caches only, misses go to (NUMA) memory.
            m.shared.clear();
            m.name.push_str(" private-only");
            m
        }
        Ok(mut m) => {
            if let (Some(mib), Some(l3)) = (args.l3_mib, m.shared.last_mut()) {
                l3.cache.size_bytes = mib << 20;
                m.name.push_str(&format!(" L3 {mib} MiB"));
            }
            if let Err(e) = m.validate() {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
            m
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let spec = match WorkloadSpec::parse(&args.workload) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let sweep = args.cpus.clone().unwrap_or_else(|| vec![machine.cpus]);
    let mut rows = Vec::new();
    for &n in &sweep {
        let m = match machine.with_cpus(n) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("--cpus {n}: {e}");
                return ExitCode::from(2);
            }
        };
        let auto = footprint_sim::sched::resolve(PolicyChoice::Auto, &m, args.cfg.miss_counts);
        eprintln!("{n} CPUs, {} nodes: Auto is {auto}", m.numa_nodes());
        for &policy in &args.policies {
            let cfg = SimConfig {
                policy,
                ..args.cfg.clone()
            };
            let mut w = spec.build(args.cfg.seed);
            match simulate(&m, w.as_mut(), &cfg) {
                Ok(r) => {
                    eprintln!(
                        "  {:<16} {:>8.2} s wall, {:.1}M refs/s represented, {:.1}M simulated/s",
                        r.policy,
                        r.wall_secs,
                        r.refs_per_wall_second() / 1e6,
                        r.simulated_per_wall_second() / 1e6
                    );
                    rows.push(r);
                }
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let title = format!(
        "{} on {} ({:?} caches, 1/{} set sampling, wake to {:?}, {} syncs)",
        rows.first()
            .map_or(args.workload.clone(), |r| r.workload.clone()),
        machine.name,
        args.cfg.cache,
        args.cfg.sample,
        args.cfg.wake,
        args.cfg.max_syncs
    );
    println!("{title}");
    print!("{}", table(&rows));
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        eprintln!("cannot create {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    let stem = format!(
        "simulate-{}-{}{}",
        args.machine,
        args.workload,
        if args.private_only {
            "-private-only"
        } else {
            ""
        }
    );
    let csv_path = args.out.join(format!("{stem}.csv"));
    let svg_path = args.out.join(format!("{stem}.svg"));
    for (path, text) in [
        (&csv_path, csv(&rows)),
        (&svg_path, svg_plot(&title, &rows)),
    ] {
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    println!("wrote {} and {}", csv_path.display(), svg_path.display());
    ExitCode::SUCCESS
}
