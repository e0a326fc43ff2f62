//! The runtime: `start` (its worker threads and service threads), `Runtime` (`block_on`,
//! `spawn`, stats). Its builder is `builder.rs`, the global runtime `global.rs`, shutdown
//! `shutdown.rs`.

use crate::config::Config;
use crate::error::Error;
use crate::handle::JoinHandle;
use crate::job::RawJob;
use crate::placement::PlacementStats;
use crate::ready::ReadyOrder;
use crate::registry::Shared;
use crate::spawn::spawn_plain;
use crate::stats::RuntimeStats;
use crate::worker::local::WorkerLocal;
use crate::{context, handle};
use crossbeam_deque::Worker as Deque;
use footprint_affinity::Topology;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

/// Starts a runtime whose state `shared` was made from `config`, with the owner ends of its
/// workers' start deques: the shuffling monitor, the workers (each pinned, if so configured,
/// before it reports in), then the tranquilizer, co-scheduling, watcher and adaptive
/// controller threads. On an error the workers that did start are stopped (by dropping the
/// runtime) and the first error is returned.
pub(crate) fn start(
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
        self.shared.workers().iter().map(|w| w.cpu()).collect()
    }

    /// The topology the workers' steal order was derived from.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The order of the workers' ready structures in force: what [`Builder::ready_order`](crate::Builder::ready_order) asked
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
    /// park, steal, idle and inbox figures are kept whatever [`Builder::counters`](crate::Builder::counters) says; busy
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
    /// The hang watchdog ([`Builder::watchdog`](crate::Builder::watchdog)) prints the same text. Addresses identify
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

/// Runtimes built and not yet dropped (the global one included once started), so that the
/// global runtime can say when it starts beside a runtime the program built itself.
static LIVE_RUNTIMES: AtomicUsize = AtomicUsize::new(0);

/// Called by `Runtime::drop`.
pub(crate) fn note_runtime_dropped() {
    LIVE_RUNTIMES.fetch_sub(1, Ordering::Relaxed);
}

/// Runtimes built and not yet dropped.
pub(crate) fn live_runtimes() -> usize {
    LIVE_RUNTIMES.load(Ordering::Relaxed)
}

/// Re-raises a green thread's panic in the caller; a thread that got no stack carries the typed
/// [`Error`], raised as a panic with its message.
pub(crate) fn resume_with_message(p: Box<dyn std::any::Any + Send>) -> ! {
    match p.downcast::<Error>() {
        Ok(e) => panic!("footprint: {e}"),
        Err(p) => std::panic::resume_unwind(p),
    }
}
