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

use footprint_affinity::PolicyKind;
use footprint_sim::model_check::{check_model, ModelCheckParams};
use footprint_sim::report::{csv, svg_plot, table};
use footprint_sim::{
    simulate, CacheKind, Machine, PolicyChoice, SimConfig, WakePlacement, WorkloadSpec,
};
use std::path::PathBuf;
use std::process::ExitCode;

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

fn usage() -> &'static str {
    "usage: simulate [--machine this|2x16|4x16|NxM] [--workload regular|smoother|fragments|\
     lock-counter|lock-multi] [--cpus 2,4,8] [--syncs N] [--sample S] [--cache lru|random] \
     [--count-level L] [--wake waker|last] [--no-pmu] [--private-only] [--l3-mib N] [--seed N] [--policies a,b] [--out DIR] \
     | --check-model [--model-lines N] [--model-seeds N]"
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        machine: "4x16".into(),
        workload: "regular".into(),
        cpus: None,
        policies: PolicyChoice::ALL.to_vec(),
        out: PathBuf::from("target/simulate"),
        cfg: SimConfig {
            max_syncs: 200_000,
            ..SimConfig::default()
        },
        check_model: false,
        model: ModelCheckParams::default(),
        private_only: false,
        l3_mib: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value\n{}", usage()))
        };
        let num = |v: String| -> Result<u64, String> {
            v.replace('_', "")
                .parse::<u64>()
                .map_err(|_| format!("{flag}: {v:?} is not a number"))
        };
        match flag.as_str() {
            "--machine" => a.machine = value()?,
            "--workload" => a.workload = value()?,
            "--cpus" => {
                let list = value()?;
                let cpus = list
                    .split(',')
                    .map(|c| c.trim().parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| format!("--cpus: {list:?} is not a list like 2,4,8"))?;
                a.cpus = Some(cpus);
            }
            "--syncs" => a.cfg.max_syncs = num(value()?)?,
            "--sample" => a.cfg.sample = num(value()?)?,
            "--seed" => a.cfg.seed = num(value()?)?,
            "--count-level" => {
                a.cfg.count_level =
                    Some(u8::try_from(num(value()?)?).map_err(|_| "--count-level: 1 to 255")?)
            }
            "--cache" => {
                a.cfg.cache = match value()?.as_str() {
                    "lru" => CacheKind::Lru,
                    "random" => CacheKind::Random,
                    v => return Err(format!("--cache: {v:?}: use lru or random")),
                }
            }
            "--wake" => {
                a.cfg.wake = match value()?.as_str() {
                    "waker" => WakePlacement::Waker,
                    "last" => WakePlacement::LastCpu,
                    v => return Err(format!("--wake: {v:?}: use waker or last")),
                }
            }
            "--no-pmu" => a.cfg.miss_counts = false,
            "--private-only" => a.private_only = true,
            "--l3-mib" => a.l3_mib = Some(num(value()?)?),
            "--policies" => {
                a.policies = value()?
                    .split(',')
                    .map(|p| match p.trim() {
                        "Auto" | "auto" => Ok(PolicyChoice::Auto),
                        other => other
                            .parse::<PolicyKind>()
                            .map(PolicyChoice::Fixed)
                            .map_err(|e| e.to_string()),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--out" => a.out = PathBuf::from(value()?),
            "--check-model" => a.check_model = true,
            "--model-lines" => a.model.lines = num(value()?)?,
            "--model-seeds" => a.model.seeds = num(value()?)?,
            "-h" | "--help" => return Err(usage().to_string()),
            other => return Err(format!("unknown option {other:?}\n{}", usage())),
        }
    }
    Ok(a)
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
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
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
