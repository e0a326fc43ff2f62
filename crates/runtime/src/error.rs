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
    /// The green-thread stack size (plus its guard page) cannot be mapped.
    StackTooLarge {
        /// Bytes asked for.
        requested: usize,
        /// The largest accepted size in bytes ([`crate::MAX_STACK_SIZE`]).
        maximum: usize,
    },
    /// As many green-thread stacks are live as `Builder::max_stacks` allows.
    StackLimit {
        /// The cap set with `Builder::max_stacks`.
        limit: usize,
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
    /// Mapping a green-thread stack failed: out of memory, or out of memory mappings
    /// (`vm.max_map_count`; with guard pages each stack costs two).
    Stack(std::io::Error),
    /// [`Counters::Hardware`](crate::Counters::Hardware) was asked for and this machine has no
    /// usable cache-miss counter.
    NoHardwareCounters {
        /// Why, from the PMU crate's capability probe.
        reason: String,
    },
    // placement (issue 10 B)
    /// A data-fragment hint named a fragment of 0 bytes.
    EmptyFragment {
        /// The fragment's id.
        fragment: u64,
    },
    /// A call that acts on the calling green thread was made outside one.
    NotGreen {
        /// The call.
        what: &'static str,
    },
    /// A worker index not below the runtime's worker count.
    NoSuchWorker {
        /// The index asked for.
        worker: usize,
        /// The runtime's worker count.
        workers: usize,
    },
    // adaptive (issue 12)
    /// `Builder::adaptive_workers(min..=max)` was given `min` = 0, `min > max`, or `max` above
    /// the CPUs the runtime may use.
    AdaptiveRange {
        /// The range's start.
        min: usize,
        /// The range's end.
        max: usize,
        /// The CPUs the runtime may use (`cpus(..)` or the allowed set).
        cpus: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A memory-bandwidth reservation or capacity change failed (see
    /// [`Runtime::reserve_bandwidth`](crate::Runtime::reserve_bandwidth)).
    Bandwidth(crate::bandwidth::error::BandwidthError),
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
            Error::StackTooLarge { requested, maximum } => write!(
                f,
                "green-thread stack size {requested} bytes is above the maximum of {maximum} bytes: pass stack_size(n) with n <= {maximum}"
            ),
            Error::StackLimit { limit } => write!(
                f,
                "{limit} green-thread stacks are live, the cap set with Builder::max_stacks({limit}): raise the cap, or let threads finish before spawning more"
            ),
            Error::Affinity(e) => write!(f, "could not read the process CPU mask ({e}); pass cpus(..) explicitly or pin(false)"),
            Error::Pin { worker, cpu, source } => write!(
                f,
                "pinning worker {worker} to CPU {cpu} failed ({source}); pass pin(false) to run unpinned"
            ),
            Error::Spawn(e) => write!(f, "starting a worker thread failed ({e}); lower workers(n) or raise the process's thread limit"),
            Error::EmptyFragment { fragment } => write!(
                f,
                "data fragment {fragment} was given a size of 0 bytes: pass the fragment's approximate size in bytes (at least 1), or no fragment hint"
            ),
            Error::NotGreen { what } => write!(
                f,
                "{what} acts on the calling green thread but was called outside one: call it from a thread spawned on a footprint runtime (spawn, block_on)"
            ),
            Error::AdaptiveRange { min, max, cpus, reason } => write!(
                f,
                "adaptive_workers({min}..={max}): {reason}; pass a range with 1 <= min <= max <= {cpus} (the CPUs this runtime may use)"
            ),
            Error::NoSuchWorker { worker, workers } => write!(
                f,
                "worker {worker} does not exist: this runtime has {workers} workers (indices 0..{workers})"
            ),
            Error::Stack(e) => write!(
                f,
                "mapping a green-thread stack failed ({e}): out of memory or of memory mappings; lower stack_size(..) or the number of live green threads, or build the runtime with guard_pages(false) (a guarded stack costs two of the process's vm.max_map_count mappings, an unguarded one none of its own)"
            ),
            Error::Bandwidth(e) => write!(f, "{e}"),
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
            Error::Bandwidth(e) => Some(e),
            _ => None,
        }
    }
}
