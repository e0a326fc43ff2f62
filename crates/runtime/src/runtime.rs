//! The runtime: its builder, worker threads, `block_on`, `spawn`, the global runtime, shutdown.

use crate::config::{self, Config};
use crate::counters::Counters;
use crate::error::Error;
use crate::handle::JoinHandle;
use crate::job::RawJob;
use crate::pin::{self, Pin};
use crate::placement::{PlacementStats, ShuffleConfig};
use crate::ready::ReadyOrder;
use crate::registry::Shared;
use crate::spawn::spawn_plain;
use crate::stack::{check_stack_size, DEFAULT_STACK_SIZE};
use crate::stats::RuntimeStats;
use crate::worker::local::WorkerLocal;
use crate::{context, handle};
use crossbeam_deque::Worker as Deque;
use footprint_affinity::Topology;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, OnceLock};

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
    /// joiner (see [`JoinHandle::join`]). Where the kernel has lightweight guard regions
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
    /// cannot get a stack when it first runs fails its [`JoinHandle`] with that error (the
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
    /// counted in [`RuntimeStats::blocking_warnings`]. A thread computing on the CPU is not
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
    /// [`JoinHandle::stats`] and [`crate::current_stats`]; with [`Counters::Hardware`],
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

/// Starts a runtime whose state `shared` was made from `config`, with the owner ends of its
/// workers' start deques: the shuffling monitor, the workers (each pinned, if so configured,
/// before it reports in), then the tranquilizer, co-scheduling, watcher and adaptive
/// controller threads. On an error the workers that did start are stopped (by dropping the
/// runtime) and the first error is returned.
fn start(
    config: Config,
    shared: Arc<Shared>,
    deques: Vec<Deque<RawJob>>,
) -> Result<Runtime, Error> {
    if shared.counters().timed {
        crate::clock::init();
    }
    // The idle protocol's barrier pair is settled before any worker pushes or sleeps.
    crate::sleep::barrier::init();
    if shared.placement().shuffle.is_some() {
        crate::placement::monitor::start_monitor(shared.clone()).map_err(Error::Spawn)?;
    }
    crate::overflow::install_handler();
    let n = config.workers;
    if n > SAY_STARTING_ABOVE {
        // Thousands of OS threads take seconds to start: say so rather than go quiet.
        eprintln!(
            "footprint: starting {n} worker threads on {} CPUs (oversubscribe(true)); this can take a while",
            config.cpus.len()
        );
    }
    let (tx, rx) = mpsc::channel::<Result<(), Error>>();
    let mut threads = Vec::with_capacity(n);
    let mut first_err = None;
    for (i, deque) in deques.into_iter().enumerate() {
        let sh = shared.clone();
        let tx = tx.clone();
        let cpu = config.pinned_cpu(i);
        let spawned = std::thread::Builder::new()
            .name(format!("{}-{i}", config.thread_name))
            .spawn(move || worker_main(sh, i, deque, cpu, tx));
        match spawned {
            Ok(h) => threads.push(h),
            Err(e) => {
                first_err = Some(Error::Spawn(e));
                break;
            }
        }
    }
    drop(tx);
    for _ in 0..threads.len() {
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => break,
        }
    }
    if first_err.is_none() {
        first_err = start_services(&shared).err();
    }
    LIVE_RUNTIMES.fetch_add(1, Ordering::Relaxed);
    let rt = Runtime {
        shared,
        threads,
        topology: config.topology,
        worker_cpu: config.worker_cpu,
    };
    match first_err {
        Some(e) => Err(e), // dropping `rt` stops the workers that did start
        None => {
            crate::trace::built(rt.shared.id(), &rt.worker_cpus());
            Ok(rt)
        }
    }
}

/// Starts the runtime's own threads that its settings ask for, once its workers run: the
/// tranquilizer's daemon, the co-scheduling member, the watcher, the adaptive controller.
fn start_services(shared: &Arc<Shared>) -> Result<(), Error> {
    if shared.tranquilizer().is_some() {
        crate::tranquilizer::daemon::start(shared).map_err(Error::Spawn)?;
    }
    if shared.node().is_some() {
        crate::node::start_member(shared).map_err(|reason| Error::InvalidConfig { reason })?;
    }
    crate::watch::start(shared).map_err(Error::Spawn)?;
    if shared.adaptive().is_some() {
        crate::adaptive::thread::start(shared.clone()).map_err(Error::Spawn)?;
    }
    Ok(())
}

impl Builder {
    /// Builds the runtime and makes it the global one: the runtime that
    /// [`spawn`](crate::spawn), [`join`](crate::join), [`scope`](crate::scope), footprint's
    /// parallel loops and the other free functions use when called outside any runtime (see
    /// [`global`]), like rayon's `ThreadPoolBuilder::build_global`. Call it once, early in
    /// `main`: once the global runtime has started (an earlier `build_global`, or a free
    /// function called outside any runtime, which starts it with the defaults) it fails with
    /// [`Error::GlobalAlreadyStarted`]. The global runtime lives until the process exits.
    ///
    /// ```
    /// footprint::Builder::new().workers(2).thread_name("solver").build_global()?;
    /// assert_eq!(footprint::current_num_threads(), 2);
    /// let err = footprint::Builder::new().build_global().unwrap_err();
    /// assert!(matches!(err, footprint::Error::GlobalAlreadyStarted));
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn build_global(self) -> Result<(), Error> {
        if GLOBAL.get().is_some() {
            return Err(Error::GlobalAlreadyStarted);
        }
        let rt = self.build()?;
        // Another thread may have started the global runtime meanwhile: ours is then dropped.
        GLOBAL.set(rt).map_err(|_| Error::GlobalAlreadyStarted)
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

/// Worker counts above which `build` says on stderr that it starts them (an opted-in
/// oversubscription: thousands of OS threads take seconds).
const SAY_STARTING_ABOVE: usize = 1024;

fn worker_main(
    shared: Arc<Shared>,
    index: usize,
    deque: Deque<RawJob>,
    cpu: Option<usize>,
    ready: mpsc::Sender<Result<(), Error>>,
) {
    let pinned = match cpu {
        Some(c) => crate::sys::pin_current_thread(c).map_err(|source| Error::Pin {
            worker: index,
            cpu: c,
            source,
        }),
        None => Ok(()),
    };
    // On a pin failure build() reports the error and drops the runtime; this worker just takes
    // part in the shutdown.
    // adaptive: the controller samples the workers' kernel threads.
    if let Some(a) = shared.adaptive() {
        a.threads.register_current();
    }
    if let Some(t) = shared.tranquilizer() {
        t.threads.register_current();
    }
    if let Some(n) = shared.node() {
        n.register_worker(index);
    }
    let _ = ready.send(pinned);
    drop(ready);
    let prev_hook = footprint_locks::install_hook(&crate::hook::GREEN_HOOK);
    let prev_sink = footprint_locks::stats::set_thread_wait_sink(Some(crate::hook::lock_wait_sink));
    let _alt = crate::overflow::AltStack::install();
    let mut local = WorkerLocal::new(index, &shared, deque);
    // `local` stays in this frame, unmoved, until the loop returns.
    context::set_ctx(local.bind_context());
    shared
        .watch()
        .register_worker(index, local.context().current_cell());
    local.open_source();
    local.run_loop();
    shared.watch().unregister_worker(index);
    let abandoned = shared.is_abandoned();
    // Stale entries (threads their joiners ran inline) still hold task references. Abandoned
    // (`shutdown_timeout`): queued green threads are never resumed, so nothing is dropped.
    while let Some(j) = local.deque().pop().filter(|_| !abandoned) {
        drop(j.into_job());
    }
    context::set_ctx(std::ptr::null());
    footprint_locks::stats::set_thread_wait_sink(prev_sink);
    match prev_hook {
        Some(h) => {
            footprint_locks::install_hook(h);
        }
        None => {
            footprint_locks::uninstall_hook();
        }
    }
    if abandoned {
        std::mem::forget(local);
    } else {
        drop(local);
    }
    shared.exits().note_exit();
    drop(shared);
}

/// A pool of pinned workers running green threads.
///
/// Dropping it waits until every green thread of the runtime has finished — detached ones
/// included — and then stops the workers; pooled stacks and control blocks are freed. A detached
/// green thread that never finishes (or stays parked forever) therefore makes the drop wait
/// forever; after a few seconds of waiting it says on stderr how many green threads it waits for
/// and the names of the named ones. [`Runtime::shutdown_timeout`] gives up after a timeout
/// instead. Dropping a runtime from one of its own green threads cannot wait for itself: the
/// workers are then told to stop once the runtime is idle, and the drop returns at once.
pub struct Runtime {
    pub(crate) shared: Arc<Shared>,
    pub(crate) threads: Vec<std::thread::JoinHandle<()>>,
    topology: Topology,
    worker_cpu: Vec<usize>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.workers())
            .field("cpus", &self.worker_cpu)
            .field("stack_size", &self.shared.stack_size())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// A builder (see [`Builder`]).
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// A runtime with the default configuration.
    pub fn new() -> Result<Runtime, Error> {
        Builder::new().build()
    }

    /// Runs `f` on a green thread of this runtime and blocks the calling OS thread until it has
    /// finished; returns its value or re-raises its panic. `f` may borrow from the caller. Called
    /// from a green thread of this runtime, it runs `f` inline; from a green thread of another
    /// runtime, it parks that green thread (not its worker).
    pub fn block_on<F, R>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        if context::same_runtime_green(Arc::as_ptr(&self.shared)) {
            return f();
        }
        // SAFETY: join_task below waits for completion before `f`'s borrows can end.
        let t = unsafe { spawn_plain(&self.shared, f) };
        // SAFETY: the task's result type is R and we own its only handle.
        match unsafe { handle::join_task::<R>(t, None) } {
            Ok(v) => v,
            Err(p) => resume_with_message(p),
        }
    }

    /// Spawns a green thread on this runtime from any thread.
    ///
    /// # Panics
    /// In the caller, with the [`Error`]'s message, at a stack limit (as [`spawn`](crate::spawn)).
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if let Err(e) = self.shared.stack_limits().admit() {
            panic!("footprint::Runtime::spawn: {e}");
        }
        // SAFETY: 'static closure and result.
        let t = unsafe { spawn_plain(&self.shared, f) };
        JoinHandle {
            task: Some(t),
            _marker: PhantomData,
        }
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.shared.workers().len()
    }

    /// The CPU each worker is pinned to (`None` when built with `pin(false)`).
    pub fn worker_cpus(&self) -> Vec<Option<usize>> {
        self.shared.workers().iter().map(|w| w.cpu).collect()
    }

    /// The topology the workers' steal order was derived from.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The order of the workers' ready structures in force: what [`Builder::ready_order`] asked
    /// for, with [`ReadyOrder::Auto`] resolved to the affinity policy it picked (whose `Display`
    /// says why, e.g. `VirtualTime (auto: no cache-miss counts)`).
    pub fn ready_order(&self) -> ReadyOrder {
        self.shared.ready_order()
    }

    /// Usable bytes of each green thread's stack (guard page not included).
    pub fn stack_size(&self) -> usize {
        self.shared.stack_size()
    }

    /// Workers currently asleep on their futex (announced idle). An idle runtime reaches
    /// `sleeping_workers() == workers()` and then uses no CPU.
    pub fn sleeping_workers(&self) -> usize {
        self.shared.sleeping_workers()
    }

    /// CPU time (user + system) consumed so far by the worker threads together.
    pub fn workers_cpu_time(&self) -> std::time::Duration {
        use std::os::unix::thread::JoinHandleExt;
        let mut total = std::time::Duration::ZERO;
        for t in &self.threads {
            let mut clock: libc::clockid_t = 0;
            // SAFETY: the pthread is alive (joined only in Drop); clock is a valid out-pointer.
            if unsafe { libc::pthread_getcpuclockid(t.as_pthread_t(), &mut clock) } != 0 {
                continue;
            }
            // SAFETY: timespec is plain data filled by clock_gettime.
            let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
            // SAFETY: valid clock id and out-pointer.
            if unsafe { libc::clock_gettime(clock, &mut ts) } == 0 {
                total += std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
            }
        }
        total
    }

    /// Returns the memory of idle pooled stacks to the system after a burst of green threads
    /// (`madvise(MADV_DONTNEED)`; the stacks stay mapped and pooled, and read as zero when next
    /// used). Returns how many stacks were trimmed. The stacks a worker keeps at hand (up to 16
    /// each) are left alone. Stack memory is otherwise kept until the runtime is dropped.
    ///
    /// ```
    /// let rt = footprint::Runtime::builder().workers(1).build().unwrap();
    /// rt.block_on(|| {
    ///     let hs: Vec<_> = (0..64).map(|i| footprint::spawn(move || i)).collect();
    ///     hs.into_iter().for_each(|h| drop(h.join()));
    /// });
    /// let _trimmed: usize = rt.trim_stacks();
    /// ```
    pub fn trim_stacks(&self) -> usize {
        self.shared.pools().trim_stacks()
    }

    /// Counters since the runtime started: totals, and per worker runs, parks, steals by
    /// topology tier, idle time, sleeps, inbox wake-ups, busy time, misses and counter
    /// failures (see [`RuntimeStats`]; `Display` prints them as a table). The per-worker run,
    /// park, steal, idle and inbox figures are kept whatever [`Builder::counters`] says; busy
    /// time and misses need counters on.
    pub fn stats(&self) -> RuntimeStats {
        RuntimeStats::collect(&self.shared)
    }

    /// What the placement rules did so far (fragment batches, partners, rivals, migrations,
    /// shuffling decisions); `Display` prints a table. See [`PlacementStats`].
    pub fn placement_stats(&self) -> PlacementStats {
        self.shared.placement().stats()
    }

    /// What the runtime is doing now, for diagnosing a hang: each worker (the green thread it
    /// runs and for how long, and whether its OS thread is blocked in the kernel and in which
    /// system call; or asleep), then every parked green thread with its name and what it waits
    /// on (the lock, the barrier with its arrivals, the condition variable, channel or join).
    /// The hang watchdog ([`Builder::watchdog`]) prints the same text. Addresses identify
    /// objects (two threads on one lock show one address).
    ///
    /// ```
    /// let rt = footprint_runtime::Runtime::builder().workers(1).build()?;
    /// let gate = std::sync::Arc::new(footprint_locks::Barrier::new(2));
    /// let g = gate.clone();
    /// let h = rt.block_on(|| {
    ///     footprint_runtime::GreenBuilder::new().name("waiter").spawn(move || {
    ///         g.wait();
    ///     })
    /// })?;
    /// while !rt.debug_state().contains("'waiter' waits on a barrier") {
    ///     std::thread::yield_now();
    /// }
    /// assert!(rt.debug_state().contains("(it arrived 1 of 2)"));
    /// gate.wait();
    /// h.join().unwrap();
    /// # Ok::<(), footprint_runtime::Error>(())
    /// ```
    pub fn debug_state(&self) -> String {
        crate::watch::report::state(&self.shared)
    }

    pub(crate) fn shared_ptr(&self) -> *const Shared {
        Arc::as_ptr(&self.shared)
    }
}

static GLOBAL: OnceLock<Runtime> = OnceLock::new();

/// Runtimes built and not yet dropped (the global one included once started), so that the
/// global runtime can say when it starts beside a runtime the program built itself.
static LIVE_RUNTIMES: AtomicUsize = AtomicUsize::new(0);

/// Called by `Runtime::drop`.
pub(crate) fn note_runtime_dropped() {
    LIVE_RUNTIMES.fetch_sub(1, Ordering::Relaxed);
}

/// The global runtime used by [`spawn`](crate::spawn), [`crate::join`], [`crate::scope`],
/// footprint's parallel loops and the other free functions outside any runtime: the one
/// [`Builder::build_global`] installed, or else built on first use with the defaults (one pinned
/// worker per core of the allowed set, `FOOTPRINT_NUM_THREADS` and `FOOTPRINT_PIN` honoured;
/// unpinned if pinning is refused).
///
/// Called from a green thread of any runtime, the free functions use *that* runtime, never this
/// one. Called from another thread while a runtime the program built is alive, they start this
/// one beside it (two pools on the same CPUs): the first time that happens a line on stderr
/// says so and names the cures (run the call inside `rt.block_on(..)`, or install the runtime
/// with [`Builder::build_global`]).
///
/// # Panics
/// If no runtime can be built at all (no thread can be started, or `FOOTPRINT_NUM_THREADS` /
/// `FOOTPRINT_PIN` hold values that cannot be used: the message names the variable).
pub fn global() -> &'static Runtime {
    GLOBAL.get_or_init(|| {
        let others = LIVE_RUNTIMES.load(Ordering::Relaxed);
        let rt = Builder::new()
            .thread_name("footprint-global")
            .build()
            .or_else(|e| match e {
                Error::Pin { .. } => Builder::new()
                    .thread_name("footprint-global")
                    .pin(Pin::Off)
                    .build(),
                e => Err(e),
            })
            .unwrap_or_else(|e| panic!("footprint: building the global runtime failed: {e}"));
        if others > 0 {
            let msg = format!(
                "footprint: starting the global runtime ({} workers) beside {others} runtime(s) this program built: a free function (spawn, join, scope, a par loop, ...) was called outside every runtime. The pools now share the CPUs. Call it inside rt.block_on(..), or install your runtime with Builder::build_global().",
                rt.workers()
            );
            crate::trace::second_pool(&msg);
        }
        rt
    })
}

pub(crate) fn global_shared() -> *const Shared {
    global().shared_ptr()
}

/// Runs `f` with the runtime of the calling worker, or the global runtime.
pub(crate) fn current_or_global<R>(f: impl FnOnce(&RuntimeRef) -> R) -> R {
    let s = context::current_shared();
    let r = RuntimeRef {
        shared: if s.is_null() { global_shared() } else { s },
    };
    f(&r)
}

/// The runtime a loop or `scope` started here runs on: the caller's own, or the global one.
fn current_or_global_shared() -> *const Shared {
    current_or_global(|r| r.shared)
}

/// A process-unique number of the runtime [`crate::current_num_threads`] counts (never reused
/// after a runtime is dropped), so state kept across calls can tell runtimes apart.
///
/// ```
/// let a = footprint::Runtime::builder().workers(1).build()?;
/// let b = footprint::Runtime::builder().workers(1).build()?;
/// let ida = a.block_on(footprint::runtime::current_runtime_id);
/// assert_eq!(ida, a.block_on(footprint::runtime::current_runtime_id));
/// assert_ne!(ida, b.block_on(footprint::runtime::current_runtime_id));
/// # Ok::<(), footprint::Error>(())
/// ```
pub fn current_runtime_id() -> u64 {
    // SAFETY: the caller's runtime outlives its workers and green threads; the global one lives
    // for the whole process.
    let shared = unsafe { &*current_or_global_shared() };
    shared.id()
}

/// A borrowed runtime (by its shared state).
pub(crate) struct RuntimeRef {
    shared: *const Shared,
}

impl RuntimeRef {
    pub(crate) fn block_on<F, R>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        if context::same_runtime_green(self.shared) {
            return f();
        }
        // SAFETY: the runtime is the caller's own (alive while it runs) or the global one; we
        // wait for completion before `f`'s borrows end.
        let t = unsafe { spawn_plain(&*self.shared, f) };
        // SAFETY: result type R, sole handle.
        match unsafe { handle::join_task::<R>(t, None) } {
            Ok(v) => v,
            Err(p) => resume_with_message(p),
        }
    }
}

/// Re-raises a green thread's panic in the caller; a thread that got no stack carries the typed
/// [`Error`], raised as a panic with its message.
fn resume_with_message(p: Box<dyn std::any::Any + Send>) -> ! {
    match p.downcast::<Error>() {
        Ok(e) => panic!("footprint: {e}"),
        Err(p) => std::panic::resume_unwind(p),
    }
}
