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
    /// (`vm.max_map_count`; with `mprotect` guard pages, on kernels without lightweight guard
    /// regions, each stack costs two).
    Stack(std::io::Error),
    /// [`Counters::Hardware`](crate::Counters::Hardware) was asked for and this machine has no
    /// usable cache-miss counter.
    NoHardwareCounters {
        /// Why, from the PMU crate's capability probe.
        reason: String,
    },
    // placement
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
    /// `workers(n)` asked for more than [`MAX_WORKERS_PER_CPU`](crate::MAX_WORKERS_PER_CPU)
    /// workers per allowed CPU without `Builder::oversubscribe(true)`.
    TooManyWorkers {
        /// The worker count asked for.
        requested: usize,
        /// The CPUs the process may run on.
        cpus: usize,
        /// The largest count accepted without opting in.
        max: usize,
    },
    // adaptive
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
    /// An environment variable the default builder reads (`FOOTPRINT_NUM_THREADS`,
    /// `FOOTPRINT_PIN`) holds a value it cannot use.
    BadEnvironment {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong and what is expected.
        reason: String,
    },
    /// `Builder::build_global` was called after the global runtime had started (built by an
    /// earlier `build_global`, or on first use of a free function outside any runtime).
    GlobalAlreadyStarted,
    /// `Runtime::set_active_workers(0)`: at least one worker must stay active.
    ZeroActiveWorkers {
        /// The runtime's worker count.
        workers: usize,
    },
    /// A configuration passed to the builder (`tranquilizer`, `co_schedule`) is inconsistent;
    /// `reason` says which setting and what to pass instead.
    InvalidConfig {
        /// What is wrong.
        reason: String,
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
                "a runtime needs at least one worker: pass workers(n) with n >= 1, or leave it unset for one per core of the allowed CPU set"
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
            Error::TooManyWorkers { requested, cpus, max } => write!(
                f,
                "workers({requested}) is more than {} per CPU for the {cpus} CPUs this process may run on: pass workers(n) with n <= {max} (or leave it unset for one per CPU), or Builder::oversubscribe(true) if you mean it",
                max / (*cpus).max(1)
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
            Error::BadEnvironment { var, value, reason } => write!(
                f,
                "{var}={value:?} cannot be used ({reason}): fix or unset the variable"
            ),
            Error::GlobalAlreadyStarted => write!(
                f,
                "the global runtime has already started (an earlier build_global, or a free function such as footprint::spawn, join, scope or a par loop called outside any runtime): call build_global once, at the start of main, before anything runs in parallel"
            ),
            Error::ZeroActiveWorkers { workers } => write!(
                f,
                "set_active_workers(0): at least one worker must stay active; pass n with 1 <= n <= {workers} (this runtime's workers)"
            ),
            Error::NoSuchWorker { worker, workers } => write!(
                f,
                "worker {worker} does not exist: this runtime has {workers} workers (indices 0..{workers})"
            ),
            Error::Stack(e) => write!(
                f,
                "mapping a green-thread stack failed ({e}): out of memory or of memory mappings; lower stack_size(..) or the number of live green threads, or build the runtime with guard_pages(false) (a guarded stack costs two of the process's vm.max_map_count mappings, an unguarded one none of its own)"
            ),
            Error::InvalidConfig { reason } => write!(f, "{reason}"),
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
