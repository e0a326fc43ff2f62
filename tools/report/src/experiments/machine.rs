//! The machine section: topology (`footprint::affinity::Topology::detect`), which counters exist
//! and why others do not (`footprint::pmu::Capabilities::probe`), and the build.

use footprint::affinity::topology::Topology;
use footprint::pmu::Capabilities;

use crate::experiments::Ctx;
use crate::model::{Section, Table};

/// The build and the moment of the run, as the README headers state them.
pub struct BuildInfo {
    pub commit: String,
    pub rustc: String,
    pub profile: &'static str,
    pub load_average: String,
}

/// Output of a command, trimmed; `None` when it cannot run or fails.
fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit (`git rev-parse --short HEAD`, `+dirty` with uncommitted changes), rustc's
/// version, the build profile and the load average now.
pub fn build_info() -> BuildInfo {
    let commit = match command_output("git", &["rev-parse", "--short", "HEAD"]) {
        Some(hash) => {
            let dirty = command_output("git", &["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{hash}+dirty")
            } else {
                hash
            }
        }
        None => "unknown (not a git checkout)".into(),
    };
    BuildInfo {
        commit,
        rustc: command_output("rustc", &["--version"]).unwrap_or_else(|| "unknown".into()),
        profile: if cfg!(debug_assertions) {
            "debug (figures are not meaningful: use --release)"
        } else {
            "release"
        },
        load_average: load_average(),
    }
}

/// The time one cache line takes between the first two CPUs the process may use, in ns, with
/// those CPUs (`footprint_workloads::handoff`); `None` with one CPU. The header states it: on a
/// VM it can change several-fold for seconds, and lock comparisons with it (benches/README.md,
/// `lock_hot`).
pub fn cache_line_handoff() -> Option<(usize, usize, f64)> {
    match footprint::affinity::allowed_cpus().as_deref() {
        Ok([a, b, ..]) => Some((
            *a,
            *b,
            footprint_workloads::handoff::cache_line_handoff_ns(*a, *b),
        )),
        _ => None,
    }
}

/// The 1, 5 and 15 minute load averages from `/proc/loadavg`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

/// The CPU model from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

pub fn run(_: &Ctx) -> Result<Section, String> {
    let mut s = Section::new(
        "machine",
        "The machine: topology, counters, build",
        "DESIGN.md; footprint-affinity topology, footprint-pmu capability probe",
        "Every figure below belongs to this machine: read ratios within one table, not absolute \
         numbers across machines.",
    );
    let topology = Topology::detect();
    let caps = Capabilities::probe();
    let build = build_info();

    let mut machine = Table::new("Topology and build", &["item", "value"]);
    machine.row(vec!["CPU".into(), cpu_model()]);
    for (i, line) in topology.to_string().lines().enumerate() {
        let item = if i == 0 { "topology" } else { "" };
        machine.row(vec![item.into(), line.trim().to_string()]);
    }
    machine.row(vec!["commit".into(), build.commit.clone()]);
    machine.row(vec!["rustc".into(), build.rustc.clone()]);
    machine.row(vec!["profile".into(), build.profile.into()]);
    machine.row(vec![
        "load average at start (1, 5, 15 min)".into(),
        build.load_average.clone(),
    ]);
    s.tables.push(machine);

    let mut counters = Table::new(
        "Counters (Capabilities::probe): which exist here, and why the others do not",
        &["event", "perf_event_open", "fallback source", "countable"],
    );
    for e in &caps.events {
        let perf = match &e.perf {
            None => "no perf event".to_string(),
            Some(a) => match a.reason() {
                None => "available".to_string(),
                Some(why) => format!("no: {why}"),
            },
        };
        counters.row(vec![
            e.event.to_string(),
            perf,
            e.fallback.unwrap_or("—").to_string(),
            if e.countable() { "yes" } else { "no" }.into(),
        ]);
    }
    s.tables.push(counters);

    let levels: Vec<String> = topology
        .caches()
        .iter()
        .filter(|c| c.cpus.first() == topology.cpus().first())
        .map(|c| {
            if c.size_bytes >= 1 << 20 {
                format!("L{} {} MiB", c.level, c.size_bytes >> 20)
            } else {
                format!("L{} {} KiB", c.level, c.size_bytes >> 10)
            }
        })
        .collect();
    s.measured = format!(
        "{} CPUs ({}); hardware counters {}; {} build",
        topology.cpus().len(),
        levels.join(", "),
        if caps.hardware_group.is_available() {
            "available"
        } else {
            "not available (see the probe below)"
        },
        build.profile
    );
    s.verdict = if caps.cache_misses_available() {
        "cache-miss counters available: the miss-based affinity policies can use real counts".into()
    } else {
        "no cache-miss counters here: miss-based policies order like VirtualTime (see the probe's reasons)"
            .into()
    };
    if cfg!(debug_assertions) {
        s.notes
            .push("Built without --release: the timings in this report are not meaningful.".into());
    }
    Ok(s)
}
