//! The runtime's error type.

use std::fmt;

/// Why a runtime could not be built (or a green thread could not get a stack).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// `workers(0)` was asked for explicitly.
    ZeroWorkers,
    /// `cpus(&[])` was given an empty list.
    NoCpus,
    /// A CPU in `cpus(..)` is not in the process's allowed CPU set.
    CpuNotAllowed {
        /// The CPU asked for.
        cpu: usize,
        /// The CPUs this process may run on.
        allowed: Vec<usize>,
    },
    /// The green-thread stack size is below the minimum.
    StackTooSmall {
        /// Bytes asked for.
        requested: usize,
        /// The smallest accepted size in bytes.
        minimum: usize,
    },
    /// The process's CPU mask could not be read.
    Affinity(footprint_affinity::TopologyError),
    /// Pinning a worker to its CPU failed.
    Pin {
        /// The worker's index.
        worker: usize,
        /// The CPU it should have been pinned to.
        cpu: usize,
        /// The OS error.
        source: std::io::Error,
    },
    /// Starting a worker OS thread failed.
    Spawn(std::io::Error),
    /// Mapping a green-thread stack failed.
    Stack(std::io::Error),
    /// [`Counters::Hardware`](crate::Counters::Hardware) was asked for and this machine has no
    /// usable cache-miss counter.
    NoHardwareCounters {
        /// Why, from the PMU crate's capability probe.
        reason: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ZeroWorkers => write!(
                f,
                "a runtime needs at least one worker: pass workers(n) with n >= 1, or leave it unset for one per allowed CPU"
            ),
            Error::NoCpus => write!(
                f,
                "cpus(&[]) is empty: list at least one CPU of the process's allowed set, or leave it unset"
            ),
            Error::CpuNotAllowed { cpu, allowed } => write!(
                f,
                "CPU {cpu} is not in this process's allowed CPU set {allowed:?}: pick CPUs from that set (see taskset/sched_getaffinity)"
            ),
            Error::StackTooSmall { requested, minimum } => write!(
                f,
                "green-thread stack size {requested} bytes is below the minimum of {minimum} bytes: pass stack_size(n) with n >= {minimum}"
            ),
            Error::Affinity(e) => write!(f, "could not read the process CPU mask ({e}); pass cpus(..) explicitly or pin(false)"),
            Error::Pin { worker, cpu, source } => write!(
                f,
                "pinning worker {worker} to CPU {cpu} failed ({source}); pass pin(false) to run unpinned"
            ),
            Error::Spawn(e) => write!(f, "starting a worker thread failed ({e}); lower workers(n) or raise the process's thread limit"),
            Error::Stack(e) => write!(
                f,
                "mapping a green-thread stack failed ({e}); lower stack_size(..) or the number of live green threads (each stack is one mmap; see vm.max_map_count)"
            ),
            Error::NoHardwareCounters { reason } => write!(
                f,
                "Counters::Hardware needs a cache-miss counter and this machine has none ({reason}); use Counters::Auto (hardware where present, else time only) or Counters::Time"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Affinity(e) => Some(e),
            Error::Pin { source, .. } => Some(source),
            Error::Spawn(e) | Error::Stack(e) => Some(e),
            _ => None,
        }
    }
}
