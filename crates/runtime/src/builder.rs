//! The runtime's builder: its settings, their checks and resolution into a `Config`
//! (`Builder::config`), and `Builder::build` (→ `Shared::new` → `runtime::start`).

use crate::config::{self, Config};
use crate::counters::Counters;
use crate::error::Error;
use crate::pin::{self, Pin};
use crate::placement::ShuffleConfig;
use crate::ready::ReadyOrder;
use crate::registry::Shared;
use crate::runtime::{start, Runtime};
use crate::stack::{check_stack_size, DEFAULT_STACK_SIZE};
use footprint_affinity::Topology;

/// Configures and builds a [`Runtime`].
///
/// ```
/// let rt = footprint::Runtime::builder()
///     .workers(2)
///     .stack_size(1 << 20)
///     .thread_name("solver")
///     .build()
///     .unwrap();
/// assert_eq!(rt.workers(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    workers: Option<usize>,
    cpus: Option<Vec<usize>>,
    stack_size: usize,
    thread_name: String,
    pin: Option<Pin>,
    ready_order: ReadyOrder,
    switch_cost_ns: u64,
    guard_pages: bool,
    max_stacks: Option<usize>,
    oversubscribe: bool,
    watchdog: Option<std::time::Duration>,
    blocking_warning: Option<std::time::Duration>,
    counters: Counters,
    // placement
    shuffling: Option<ShuffleConfig>,
    topology: Option<Topology>,
    // adaptive: `adaptive_workers(min..=max)`, set in `adaptive/mod.rs`.
    pub(crate) adaptive: Option<std::ops::RangeInclusive<usize>>,
    // Thread Tranquilizer: set in `adaptive/tranquilizer/mod.rs`.
    pub(crate) tranquilizer: Option<crate::tranquilizer::TranquilizerConfig>,
    // ADAPT: set in `node/mod.rs`.
    pub(crate) co_schedule: Option<crate::node::NodeConfig>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: None,
            cpus: None,
            stack_size: DEFAULT_STACK_SIZE,
            thread_name: "footprint-worker".into(),
            pin: None,
            ready_order: ReadyOrder::default(),
            switch_cost_ns: 300,
            guard_pages: true,
            max_stacks: None,
            oversubscribe: false,
            watchdog: cfg!(debug_assertions).then_some(crate::watch::DEFAULT_WATCHDOG),
            blocking_warning: Some(crate::watch::DEFAULT_BLOCKING_WARNING),
            counters: Counters::default(),
            shuffling: None,
            topology: None,
            adaptive: None,
            tranquilizer: None,
            co_schedule: None,
        }
    }
}

impl Builder {
    /// A builder with the defaults: one pinned worker per core of the process's allowed CPU set
    /// ([`Pin::Cores`]), [`DEFAULT_STACK_SIZE`] stacks. What is left unset here is read from the
    /// environment when the runtime is built: the worker count from `FOOTPRINT_NUM_THREADS`,
    /// the pinning from `FOOTPRINT_PIN` (see [`workers`](Builder::workers) and [`Pin`]).
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Number of workers (OS threads); 0 is an error. More workers than CPUs are placed
    /// round-robin over the CPUs.
    ///
    /// Unset: the `FOOTPRINT_NUM_THREADS` environment variable if it holds a count (0 or empty
    /// mean unset; anything else that is not a number makes [`build`](Builder::build) fail with
    /// [`Error::BadEnvironment`]), else one per core of the CPU set (one per hardware thread
    /// with [`Pin::Threads`]; one per listed CPU with [`cpus`](Builder::cpus)).
    /// `RAYON_NUM_THREADS` and `OMP_NUM_THREADS` are not read: they size other pools of the
    /// same process (a rayon pool, an OpenMP BLAS, often set to 1 under an outer parallel
    /// runtime), and following them would shrink footprint's pool by accident.
    ///
    /// ```
    /// let rt = footprint::Runtime::builder().workers(3).pin(false).build()?;
    /// assert_eq!(rt.workers(), 3);
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn workers(mut self, n: usize) -> Builder {
        self.workers = Some(n);
        self
    }

    /// The CPUs to run on (each must be in the process's allowed set), used in the order given
    /// (no SMT reordering). Unset: the allowed set, cores first (see [`Pin`]).
    pub fn cpus(mut self, cpus: &[usize]) -> Builder {
        self.cpus = Some(cpus.to_vec());
        self
    }

    /// Usable bytes of each green thread's stack, not counting its guard page (default
    /// [`DEFAULT_STACK_SIZE`], minimum [`MIN_STACK_SIZE`](crate::MIN_STACK_SIZE), maximum
    /// [`MAX_STACK_SIZE`](crate::MAX_STACK_SIZE); others are a typed error from
    /// [`build`](Builder::build)).
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = bytes;
        self
    }

    /// Whether each green-thread stack has a guard page below it (default true).
    ///
    /// With guard pages a stack overflow hits the guard and becomes an error for the thread's
    /// joiner (see [`JoinHandle::join`](crate::JoinHandle::join)). Where the kernel has lightweight guard regions
    /// (`MADV_GUARD_INSTALL`, Linux 6.13+) a guard costs no memory mapping and a million
    /// guarded blocked threads fit; elsewhere each guarded stack splits the runtime's stack
    /// slab into two mappings, and Linux allows a process `vm.max_map_count` of them (65,530
    /// by default): about 30,000 green threads can hold a stack at once. Without guard pages
    /// stacks are carved from 64 MiB slabs that stay one mapping each; **an overflow is then
    /// not detected**: it silently overwrites the stack below it (another green thread's).
    /// Turn guards off only for threads whose stack depth you know fits `stack_size`.
    ///
    /// ```
    /// let rt = footprint::Runtime::builder()
    ///     .workers(1)
    ///     .stack_size(64 << 10)
    ///     .guard_pages(false)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(rt.block_on(|| footprint::spawn(|| 1).join().unwrap()), 1);
    /// ```
    pub fn guard_pages(mut self, on: bool) -> Builder {
        self.guard_pages = on;
        self
    }

    /// At most `n` green-thread stacks live at once (default: no cap beyond memory and
    /// mappings). At the cap, [`GreenBuilder::spawn`](crate::GreenBuilder::spawn) returns [`Error::StackLimit`],
    /// [`spawn`](crate::spawn) panics with its message, and a thread spawned before the cap was reached that
    /// cannot get a stack when it first runs fails its [`JoinHandle`](crate::JoinHandle) with that error (the
    /// payload downcasts to [`Error`]). `n` = 0 is an error from [`build`](Builder::build).
    pub fn max_stacks(mut self, n: usize) -> Builder {
        self.max_stacks = Some(n);
        self
    }

    /// Allows more workers than [`MAX_WORKERS_PER_CPU`] per allowed CPU (default false: such a
    /// count is an [`Error::TooManyWorkers`] from [`build`](Builder::build)). Workers beyond the
    /// CPUs only take turns on them; a count far above is usually a mistake (a thread count
    /// passed where a worker count was meant), and starting thousands of OS threads takes
    /// seconds.
    ///
    /// ```
    /// use footprint_runtime::{Error, Runtime};
    /// let e = Runtime::builder().workers(1_000_000).build().unwrap_err();
    /// assert!(matches!(e, Error::TooManyWorkers { requested: 1_000_000, .. }));
    /// // Opted in: as many as asked (here 9, whatever the CPU count).
    /// let rt = Runtime::builder().workers(9).pin(false).oversubscribe(true).build()?;
    /// assert_eq!(rt.workers(), 9);
    /// # Ok::<(), footprint_runtime::Error>(())
    /// ```
    pub fn oversubscribe(mut self, allow: bool) -> Builder {
        self.oversubscribe = allow;
        self
    }

    /// The hang watchdog: when no green thread of the runtime has run for `period` while some
    /// are live, no timer is due later, no `spawn_blocking`/`block_in_place` job is in flight
    /// and no worker is computing, the runtime prints once (stderr, and a `tracing` error with
    /// the `tracing` feature) what every parked green thread waits on (its name; the lock,
    /// barrier with its arrivals, condition variable, channel or join) and what each worker is
    /// doing, like Go's deadlock report; [`Runtime::debug_state`] gives the same text any time.
    /// Default: [`DEFAULT_WATCHDOG`](crate::DEFAULT_WATCHDOG) (10 s) in debug builds, off
    /// (`None`) in release builds. The watcher thread reads what the workers already publish at
    /// each switch; it costs the switch path nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = footprint_runtime::Runtime::builder()
    ///     .workers(1)
    ///     .watchdog(Some(Duration::from_secs(30)))
    ///     .build()?;
    /// assert_eq!(rt.stats().hang_reports, 0);
    /// # Ok::<(), footprint_runtime::Error>(())
    /// ```
    pub fn watchdog(mut self, period: Option<std::time::Duration>) -> Builder {
        self.watchdog = period;
        self
    }

    /// The blocking detector: a worker that has run one green thread for longer than
    /// `threshold` without a switch, with its OS thread blocked in the kernel (a `std` lock, a
    /// `std::thread::sleep`, blocking I/O), is reported once per such run on stderr (and as a
    /// `tracing` warning) with the thread's name and, where `/proc` shows it, the system call;
    /// counted in [`RuntimeStats::blocking_warnings`](crate::RuntimeStats::blocking_warnings). A thread computing on the CPU is not
    /// reported. Default [`DEFAULT_BLOCKING_WARNING`](crate::DEFAULT_BLOCKING_WARNING)
    /// (100 ms); `None` turns it off.
    ///
    /// ```
    /// let rt = footprint_runtime::Runtime::builder().workers(1).blocking_warning(None).build()?;
    /// assert_eq!(rt.stats().blocking_warnings, 0);
    /// # Ok::<(), footprint_runtime::Error>(())
    /// ```
    pub fn blocking_warning(mut self, threshold: Option<std::time::Duration>) -> Builder {
        self.blocking_warning = threshold;
        self
    }

    /// Prefix of the worker threads' names (`"<prefix>-<index>"`).
    pub fn thread_name(mut self, prefix: impl Into<String>) -> Builder {
        self.thread_name = prefix.into();
        self
    }

    /// How to pin workers to CPUs (default [`Pin::Cores`], or the `FOOTPRINT_PIN` variable:
    /// `off`, `cores`, `threads`, `spread`; an unknown value makes [`build`](Builder::build)
    /// fail with [`Error::BadEnvironment`]). `true` and `false` still work, as
    /// [`Pin::Cores`] and [`Pin::Off`]. A failed pin is an [`Error::Pin`].
    ///
    /// ```
    /// use footprint::{Pin, Runtime};
    /// let rt = Runtime::builder().workers(1).pin(Pin::Spread).build()?;
    /// assert!(rt.worker_cpus()[0].is_some());
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn pin(mut self, pin: impl Into<Pin>) -> Builder {
        self.pin = Some(pin.into());
        self
    }

    /// Order of the per-worker ready structure (default [`ReadyOrder::Lifo`]). With
    /// [`ReadyOrder::Policy`] or [`ReadyOrder::Auto`] each worker orders its ready green threads
    /// by an affinity policy's key; [`Runtime::ready_order`] reports what is in force.
    pub fn ready_order(mut self, order: ReadyOrder) -> Builder {
        self.ready_order = order;
        self
    }

    /// The estimated cost of a park plus an unpark, reported to locks for their spin-or-block
    /// decision (default 300 ns).
    pub fn switch_cost_ns(mut self, ns: u64) -> Builder {
        self.switch_cost_ns = ns;
        self
    }

    /// What to measure when a green thread starts and stops running (default
    /// [`Counters::Off`]): see [`Counters`]. The figures are read with [`Runtime::stats`],
    /// [`JoinHandle::stats`](crate::JoinHandle::stats) and [`crate::current_stats`]; with [`Counters::Hardware`],
    /// [`Counters::Auto`] on a machine with a PMU, or [`Counters::Source`], each run's cache
    /// misses also feed the ready order's affinity policy. [`Counters::Hardware`] on a machine
    /// without usable counters makes `build` fail with [`Error::NoHardwareCounters`].
    ///
    /// ```
    /// use footprint::{Counters, Runtime};
    /// let rt = Runtime::builder().workers(2).counters(Counters::Time).build()?;
    /// assert_eq!(rt.stats().counters, "time only");
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn counters(mut self, counters: Counters) -> Builder {
        self.counters = counters;
        self
    }

    /// Turns thread shuffling on (003 ch. 4; default off): the runtime measures each green
    /// thread's lock-wait time and, every monitoring interval, regroups threads with similar
    /// lock times onto one cache domain. See [`ShuffleConfig`] and
    /// [`PlacementStats`](crate::PlacementStats) for the decisions.
    ///
    /// ```
    /// use footprint::runtime::{Runtime, ShuffleConfig};
    /// let rt = Runtime::builder().workers(2).shuffling(ShuffleConfig::new()).build().unwrap();
    /// assert_eq!(rt.placement_stats().shuffle_swaps, 0);
    /// ```
    pub fn shuffling(mut self, config: ShuffleConfig) -> Builder {
        self.shuffling = Some(config);
        self
    }

    /// The topology to derive the steal order and the shuffling domains from (default: this
    /// machine's, [`Topology::detect`]); e.g. one read from a fake sysfs tree with
    /// `Topology::from_sysfs` to try another machine's shape.
    pub fn topology(mut self, topology: Topology) -> Builder {
        self.topology = Some(topology);
        self
    }

    /// Starts the workers: checks the settings and resolves what they leave open (a
    /// `Config`), makes the runtime's state from it, then starts the workers and the
    /// runtime's own threads.
    pub fn build(self) -> Result<Runtime, Error> {
        let config = self.config()?;
        let (shared, deques) = Shared::new(&config)?;
        start(config, shared, deques)
    }

    /// Checks the settings and resolves them into a [`Config`]; starts and maps nothing.
    fn config(&self) -> Result<Config, Error> {
        if self.workers == Some(0) {
            return Err(Error::ZeroWorkers);
        }
        let pin = match self.pin {
            Some(p) => p,
            None => pin::env_pin()?.unwrap_or_default(),
        };
        let env_workers = match (self.workers, &self.adaptive) {
            (None, None) => pin::env_workers()?,
            _ => None,
        };
        check_stack_size(self.stack_size)?;
        if self.max_stacks == Some(0) {
            return Err(Error::StackLimit { limit: 0 });
        }
        let allowed = footprint_affinity::allowed_cpus().map_err(Error::Affinity)?;
        let cpus = self.candidate_cpus(&allowed)?;
        let listed = self.cpus.is_some();
        let counters = self.counters.resolve()?;
        // adaptive: `max` workers, `min` of them active at first.
        if let Some(r) = &self.adaptive {
            crate::adaptive::state::check_range(r, cpus.len())?;
        }
        // Listed CPUs are used as given; the allowed set is grouped into cores (SMT siblings).
        let cores: Vec<Vec<usize>> = if listed {
            cpus.iter().map(|&c| vec![c]).collect()
        } else {
            pin::cores_of(&cpus, pin::sysfs_siblings)
        };
        if let Some(t) = &self.tranquilizer {
            t.check()
                .map_err(|reason| Error::InvalidConfig { reason })?;
        }
        let n = match &self.adaptive {
            Some(r) => *r.end(),
            None => self
                .workers
                .or(env_workers)
                .unwrap_or_else(|| match listed {
                    true => cpus.len(),
                    false => pin::default_workers(pin, &cores),
                }),
        };
        let allowed_n = allowed.len().max(1);
        if n > allowed_n.saturating_mul(MAX_WORKERS_PER_CPU) && !self.oversubscribe {
            return Err(Error::TooManyWorkers {
                requested: n,
                cpus: allowed_n,
                max: allowed_n * MAX_WORKERS_PER_CPU,
            });
        }
        let worker_cpu: Vec<usize> = match listed {
            true => (0..n).map(|i| cpus[i % cpus.len()]).collect(),
            false => pin::worker_cpus(pin, &cores, n),
        };
        let topology = self.topology.clone().unwrap_or_else(Topology::detect);
        let steal_tiers = config::steal_tiers(&topology, &worker_cpu);
        let ready_order = self
            .ready_order
            .resolve(&topology, counters.source.is_some());
        Ok(Config {
            workers: n,
            cpus,
            worker_cpu,
            pinned: pin != Pin::Off,
            topology,
            steal_tiers,
            ready_order,
            counters,
            stack_size: self.stack_size,
            guard_pages: self.guard_pages,
            max_stacks: self.max_stacks,
            switch_cost_ns: self.switch_cost_ns,
            thread_name: self.thread_name.clone(),
            watch: crate::watch::WatchConfig {
                hang_after: self.watchdog,
                blocking_after: self.blocking_warning,
            },
            shuffling: self.shuffling.clone(),
            adaptive: self.adaptive.clone(),
            tranquilizer: self.tranquilizer.clone(),
            co_schedule: self.co_schedule.clone(),
        })
    }

    /// The CPUs the workers may use: the listed ones (each must be allowed), else the allowed
    /// set (CPU 0 when the affinity mask could not be read).
    fn candidate_cpus(&self, allowed: &[usize]) -> Result<Vec<usize>, Error> {
        match &self.cpus {
            Some(c) if c.is_empty() => Err(Error::NoCpus),
            Some(c) => {
                if let Some(&cpu) = c.iter().find(|cpu| !allowed.contains(cpu)) {
                    return Err(Error::CpuNotAllowed {
                        cpu,
                        allowed: allowed.to_vec(),
                    });
                }
                Ok(c.clone())
            }
            None if allowed.is_empty() => Ok(vec![0]),
            None => Ok(allowed.to_vec()),
        }
    }
}

impl Builder {
    /// Takes part in ADAPT's co-scheduling (003 ch. 6; default off): the runtime registers in
    /// the node table named by `config` (one file under `/dev/shm`), publishes its profile
    /// every interval (CPU share, run delay, lock time, miss ratio where counted), and whichever
    /// member holds the first slot acts as the Cores Allocator: it gives every member all cores
    /// or a processor set of its own, by the PAAP/PACC predictions. Each member applies its
    /// share through the active-worker limit and by re-pinning its workers. What it decided and
    /// was given is in [`RuntimeStats::node`](crate::RuntimeStats::node).
    ///
    /// Errors from [`build`](Builder::build): [`Error::InvalidConfig`](crate::Error) when the
    /// table cannot be opened (the message names the file and what to do) or the interval is
    /// below 10 ms.
    ///
    /// ```
    /// use footprint_runtime::node::NodeConfig;
    /// let path = std::env::temp_dir().join(format!("fp-doc-node-{}", std::process::id()));
    /// let rt = footprint_runtime::Runtime::builder()
    ///     .workers(1)
    ///     .co_schedule(NodeConfig::new("doc").path(&path))
    ///     .build()?;
    /// assert_eq!(rt.stats().node.unwrap().slot.is_some(), true);
    /// drop(rt);
    /// # let _ = std::fs::remove_file(&path);
    /// # Ok::<(), footprint_runtime::Error>(())
    /// ```
    pub fn co_schedule(mut self, config: crate::node::NodeConfig) -> Builder {
        self.co_schedule = Some(config);
        self
    }
}

/// Workers per allowed CPU above which [`Builder::build`] refuses the count unless
/// [`Builder::oversubscribe`]`(true)`: [`Error::TooManyWorkers`].
pub const MAX_WORKERS_PER_CPU: usize = 4;

impl Runtime {
    /// A builder (see [`Builder`]).
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// A runtime with the default configuration.
    pub fn new() -> Result<Runtime, Error> {
        Builder::new().build()
    }
}
