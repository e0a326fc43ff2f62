//! Where the workers go: the pinning choice ([`Pin`], `FOOTPRINT_PIN`), the worker count from
//! `FOOTPRINT_NUM_THREADS`, and the SMT-aware order of the CPUs workers are placed on.

use crate::error::Error;
use std::fmt;
use std::str::FromStr;

/// The variable the default worker count is read from (see [`Builder::workers`](crate::Builder::workers)).
pub const NUM_THREADS_VAR: &str = "FOOTPRINT_NUM_THREADS";
/// The variable the default pinning choice is read from (see [`Pin`]).
pub const PIN_VAR: &str = "FOOTPRINT_PIN";

/// How workers are placed on the CPUs of the runtime's CPU set (after OpenMP's
/// `OMP_PROC_BIND`/`OMP_PLACES`); set with [`Builder::pin`](crate::Builder::pin) or the
/// `FOOTPRINT_PIN` variable (`off`, `cores`, `threads`, `spread`), the builder winning.
///
/// SMT siblings (hardware threads of one core) are read from
/// `/sys/devices/system/cpu/cpuN/topology/thread_siblings_list`. On a machine without SMT,
/// `Cores` and `Threads` are the same.
///
/// ```
/// use footprint::{Pin, Runtime};
/// let rt = Runtime::builder().pin(Pin::Threads).build()?;
/// assert!(rt.worker_cpus().iter().all(|c| c.is_some()));
/// let loose = Runtime::builder().workers(2).pin(Pin::Off).build()?;
/// assert_eq!(loose.worker_cpus(), vec![None, None]);
/// assert_eq!("spread".parse::<Pin>(), Ok(Pin::Spread));
/// # Ok::<(), footprint::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Pin {
    /// No pinning: the OS places the workers. The default count is still one per core.
    Off,
    /// The default: one worker per physical core, each pinned to the core's first hardware
    /// thread; workers beyond the core count go to the second hardware threads, and so on.
    #[default]
    Cores,
    /// One worker per hardware thread (logical CPU), pinned; cores first (every core's first
    /// hardware thread, then every core's second), so `workers(n)` with `n` up to the core
    /// count still gets one core each.
    Threads,
    /// One worker per core by default; `workers(n)` with fewer workers than cores spaces them
    /// evenly over the cores (so they spread over sockets and caches rather than filling the
    /// first ones), pinned.
    Spread,
}

impl From<bool> for Pin {
    /// `true`: [`Pin::Cores`] (the default); `false`: [`Pin::Off`].
    fn from(on: bool) -> Pin {
        if on {
            Pin::Cores
        } else {
            Pin::Off
        }
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pin::Off => "off",
            Pin::Cores => "cores",
            Pin::Threads => "threads",
            Pin::Spread => "spread",
        })
    }
}

impl FromStr for Pin {
    type Err = String;

    /// `off`, `cores`, `threads` or `spread` (case-insensitive; `false`/`true` as `off`/`cores`).
    fn from_str(s: &str) -> Result<Pin, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" | "false" | "none" => Ok(Pin::Off),
            "cores" | "true" | "core" => Ok(Pin::Cores),
            "threads" | "thread" => Ok(Pin::Threads),
            "spread" => Ok(Pin::Spread),
            _ => Err("expected one of off, cores, threads, spread".into()),
        }
    }
}

/// Reads `var` from the environment: `None` when unset or empty.
fn env_value(var: &'static str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// The worker count `FOOTPRINT_NUM_THREADS` asks for: `None` when unset, empty or 0 (0 means
/// "the default", as rayon's `RAYON_NUM_THREADS=0`); a value that is not a number is an error.
pub(crate) fn env_workers() -> Result<Option<usize>, Error> {
    let Some(v) = env_value(NUM_THREADS_VAR) else {
        return Ok(None);
    };
    match v.trim().parse::<usize>() {
        Ok(0) => Ok(None),
        Ok(n) => Ok(Some(n)),
        Err(e) => Err(Error::BadEnvironment {
            var: NUM_THREADS_VAR,
            value: v,
            reason: format!("{e}; expected a worker count such as 8 (0 or unset: one per core)"),
        }),
    }
}

/// The pinning choice `FOOTPRINT_PIN` asks for (`None` when unset or empty).
pub(crate) fn env_pin() -> Result<Option<Pin>, Error> {
    let Some(v) = env_value(PIN_VAR) else {
        return Ok(None);
    };
    v.parse::<Pin>()
        .map(Some)
        .map_err(|reason| Error::BadEnvironment {
            var: PIN_VAR,
            value: v,
            reason,
        })
}

/// The hardware threads of each core among `cpus`, cores in order of their first CPU, each
/// core's CPUs ascending. `siblings(cpu)` gives the CPUs sharing `cpu`'s core (`None`: unknown,
/// the CPU is taken as a core of its own).
pub(crate) fn cores_of(
    cpus: &[usize],
    siblings: impl Fn(usize) -> Option<Vec<usize>>,
) -> Vec<Vec<usize>> {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut cores: Vec<Vec<usize>> = Vec::new();
    let mut placed = std::collections::HashSet::new();
    for &cpu in &sorted {
        if placed.contains(&cpu) {
            continue;
        }
        let mut core: Vec<usize> = siblings(cpu)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| sorted.binary_search(c).is_ok() && !placed.contains(c))
            .collect();
        if !core.contains(&cpu) {
            core.push(cpu);
        }
        core.sort_unstable();
        placed.extend(core.iter().copied());
        cores.push(core);
    }
    cores
}

/// The SMT siblings of `cpu` from sysfs (`None` where the file is missing or unreadable).
pub(crate) fn sysfs_siblings(cpu: usize) -> Option<Vec<usize>> {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
    ["thread_siblings_list", "core_cpus_list"]
        .iter()
        .find_map(|f| std::fs::read_to_string(format!("{dir}/{f}")).ok())
        .and_then(|text| footprint_affinity::topology::parse_cpu_list(&text).ok())
}

/// The default worker count for `pin` on these cores: one per core, or one per hardware
/// thread with [`Pin::Threads`].
pub(crate) fn default_workers(pin: Pin, cores: &[Vec<usize>]) -> usize {
    match pin {
        Pin::Threads => cores.iter().map(Vec::len).sum(),
        Pin::Off | Pin::Cores | Pin::Spread => cores.len(),
    }
}

/// The CPU of each of `n` workers: cores first (every core's first hardware thread, then every
/// core's second, ...), wrapping around when there are more workers than CPUs; with
/// [`Pin::Spread`] and at most one worker per core, evenly spaced over the cores.
pub(crate) fn worker_cpus(pin: Pin, cores: &[Vec<usize>], n: usize) -> Vec<usize> {
    let m = cores.len();
    if pin == Pin::Spread && n <= m {
        return (0..n).map(|i| cores[i * m / n][0]).collect();
    }
    let depth = cores.iter().map(Vec::len).max().unwrap_or(0);
    let order: Vec<usize> = (0..depth)
        .flat_map(|k| cores.iter().filter_map(move |c| c.get(k).copied()))
        .collect();
    (0..n).map(|i| order[i % order.len()]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 cores with 2 hardware threads each, numbered as Linux does on x86 (cpu i and i+4 share
    /// a core).
    fn smt_siblings(cpu: usize) -> Option<Vec<usize>> {
        Some(vec![cpu % 4, cpu % 4 + 4])
    }

    #[test]
    fn siblings_group_into_cores() {
        let cores = cores_of(&(0..8).collect::<Vec<_>>(), smt_siblings);
        assert_eq!(cores, vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        // Only the allowed CPUs count; unknown siblings make a CPU its own core.
        assert_eq!(
            cores_of(&[5, 1, 2], smt_siblings),
            vec![vec![1, 5], vec![2]]
        );
        assert_eq!(cores_of(&[3, 1], |_| None), vec![vec![1], vec![3]]);
    }

    #[test]
    fn cores_first_then_siblings() {
        let cores = cores_of(&(0..8).collect::<Vec<_>>(), smt_siblings);
        assert_eq!(default_workers(Pin::Cores, &cores), 4);
        assert_eq!(default_workers(Pin::Off, &cores), 4);
        assert_eq!(default_workers(Pin::Threads, &cores), 8);
        assert_eq!(worker_cpus(Pin::Cores, &cores, 4), vec![0, 1, 2, 3]);
        assert_eq!(
            worker_cpus(Pin::Threads, &cores, 8),
            vec![0, 1, 2, 3, 4, 5, 6, 7]
        );
        assert_eq!(worker_cpus(Pin::Threads, &cores, 2), vec![0, 1]);
        assert_eq!(worker_cpus(Pin::Cores, &cores, 6), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(worker_cpus(Pin::Cores, &cores, 10)[8..], [0, 1]);
    }

    #[test]
    fn spread_spaces_workers_over_the_cores() {
        let cores: Vec<Vec<usize>> = (0..16).map(|c| vec![c]).collect();
        assert_eq!(worker_cpus(Pin::Spread, &cores, 4), vec![0, 4, 8, 12]);
        assert_eq!(worker_cpus(Pin::Spread, &cores, 2), vec![0, 8]);
        assert_eq!(
            worker_cpus(Pin::Spread, &cores, 16),
            (0..16).collect::<Vec<_>>()
        );
        let smt = cores_of(&(0..8).collect::<Vec<_>>(), smt_siblings);
        assert_eq!(worker_cpus(Pin::Spread, &smt, 2), vec![0, 2]);
        assert_eq!(worker_cpus(Pin::Spread, &smt, 5), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn pin_parses_the_variable_vocabulary() {
        for (text, pin) in [
            ("off", Pin::Off),
            ("CORES", Pin::Cores),
            (" threads ", Pin::Threads),
            ("spread", Pin::Spread),
            ("false", Pin::Off),
        ] {
            assert_eq!(text.parse::<Pin>(), Ok(pin));
            assert_eq!(pin.to_string().parse::<Pin>(), Ok(pin));
        }
        assert!("close".parse::<Pin>().is_err());
        assert_eq!(Pin::from(false), Pin::Off);
        assert_eq!(Pin::from(true), Pin::default());
    }
}
