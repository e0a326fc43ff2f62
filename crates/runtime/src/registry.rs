//! The runtime's state: what every worker may touch ([`Shared`], one [`WorkerShared`] per
//! worker). What only a worker's own OS thread touches is `worker/local.rs` (`WorkerLocal`).
//!
//! Per worker (ELiTE §3.2.2): a start deque for new work (Chase-Lev: owner LIFO, thieves FIFO),
//! a ready structure for resumed green threads (owner-only, ordered by the
//! [`ReadyOrder`](crate::ReadyOrder)), an inbox (mutex) through which other threads hand it woken
//! threads and through which it offers surplus ready threads to idle workers, and pools of
//! control blocks and stacks that overflow to a shared level (ELiTE's processor / node pools).
//!
//! This module holds the data and its plain accessors; the behaviour lives beside it:
//! `sleep.rs` (the idle protocol), `pool.rs` (the pools), `context.rs` (the thread-local
//! context), `spawn.rs`, `parking.rs` and `worker/` (the worker loop).

use crate::accounting::WorkerAccount;
use crate::config::Config;
use crate::counters::Resolved;
use crate::error::Error;
use crate::exits::WorkerExits;
use crate::inbox::Inbox;
use crate::job::RawJob;
use crate::pool::levels::Pools;
use crate::ready::{ReadyOrder, RuntimeAffinity};
use crate::sleep::word::{SleepWord, SleeperCount};
use crate::stack::{Slabs, StackLimits};
use crate::task::Task;
use crossbeam_deque::{Injector, Steal, Stealer, Worker as Deque};
use crossbeam_utils::CachePadded;
use footprint_locks::ClassCell;
use std::collections::HashMap;
use std::ptr;
use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

impl Task {
    /// The runtime this green thread belongs to (null before its first `init`).
    ///
    /// # Safety
    /// The caller must not race with `init` (it holds the run reference, a handle, or the task
    /// is parked or queued, all of which follow `init`).
    #[inline]
    pub(crate) unsafe fn runtime(&self) -> *const Shared {
        // SAFETY: per the contract.
        unsafe { self.runtime_untyped().cast() }
    }
}

/// The part of a worker others may touch.
pub(crate) struct WorkerShared {
    stealer: Stealer<RawJob>,
    inbox: Inbox,
    /// The idle protocol's word (`sleep/word.rs`).
    sleep: CachePadded<SleepWord>,
    cpu: Option<usize>,
    /// Victim worker indices, nearest tier first.
    steal_tiers: Vec<Vec<usize>>,
    /// Green threads created / finished by this worker (written by the owner only).
    spawned: CachePadded<AtomicU64>,
    finished: AtomicU64,
    // accounting: this worker's totals, written by its own OS thread only.
    acct: CachePadded<WorkerAccount>,
    /// The class cell of the green thread running here now (null between runs): what a lock
    /// waiter on another worker compares its lock's holder with (`hook.rs`, `run_state`).
    /// Written by the owner at every resumption and suspension.
    running: CachePadded<AtomicPtr<ClassCell>>,
}

impl WorkerShared {
    /// The thieves' end of its start deque.
    #[inline]
    pub(crate) fn stealer(&self) -> &Stealer<RawJob> {
        &self.stealer
    }

    /// Its inbox.
    #[inline]
    pub(crate) fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    /// Its idle-protocol word.
    #[inline]
    pub(crate) fn sleep(&self) -> &SleepWord {
        &self.sleep
    }

    /// The CPU it is pinned to, if pinned.
    #[inline]
    pub(crate) fn cpu(&self) -> Option<usize> {
        self.cpu
    }

    /// Victim worker indices, nearest tier first.
    #[inline]
    pub(crate) fn steal_tiers(&self) -> &[Vec<usize>] {
        &self.steal_tiers
    }

    /// Its accounting totals (bumped by its own OS thread only).
    #[inline]
    pub(crate) fn account(&self) -> &WorkerAccount {
        &self.acct
    }

    /// Counts a green thread created on this worker (by its own OS thread only: a plain
    /// increment, published with Release for `Shared::live`).
    #[inline]
    pub(crate) fn count_spawned(&self) {
        let s = &self.spawned;
        s.store(s.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    /// Counts a green thread finished on this worker (its own OS thread only, as
    /// [`count_spawned`](Self::count_spawned)).
    #[inline]
    pub(crate) fn count_finished(&self) {
        let f = &self.finished;
        f.store(f.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    /// Green threads created / finished on this worker so far.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.spawned.load(Ordering::Relaxed),
            self.finished.load(Ordering::Relaxed),
        )
    }

    /// Publishes the class cell of the green thread running here now (null between runs).
    /// Relaxed: a waiter only compares the pointer (never dereferences it) to decide between
    /// spinning and parking, and re-reads it; a stale value costs at most a short spin.
    #[inline]
    pub(crate) fn set_running(&self, cell: *const ClassCell) {
        self.running.store(cell.cast_mut(), Ordering::Relaxed);
    }

    /// The class cell [`set_running`](Self::set_running) published last (null: none runs).
    #[inline]
    pub(crate) fn running(&self) -> *const ClassCell {
        self.running.load(Ordering::Relaxed)
    }
}

impl WorkerShared {
    pub(crate) fn new(
        stealer: Stealer<RawJob>,
        cpu: Option<usize>,
        steal_tiers: Vec<Vec<usize>>,
    ) -> Self {
        let acct = CachePadded::new(WorkerAccount::new(steal_tiers.len()));
        WorkerShared {
            stealer,
            inbox: Inbox::new(),
            sleep: CachePadded::new(SleepWord::new()),
            cpu,
            steal_tiers,
            spawned: CachePadded::new(AtomicU64::new(0)),
            finished: AtomicU64::new(0),
            acct,
            running: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
        }
    }
}

/// Runtime-wide state.
pub(crate) struct Shared {
    workers: Box<[WorkerShared]>,
    injector: Injector<RawJob>,
    sleepers: CachePadded<SleeperCount>,
    idle: CachePadded<AtomicUsize>,
    shutdown: AtomicBool,
    ext_spawned: AtomicU64,
    ext_finished: AtomicU64,
    /// What `footprint::par`'s `Affinity` loops did here (`RuntimeStats::loops`).
    loops: crate::loops::LoopTotals,
    /// The shared level of the control-block and stack pools (`pool.rs`).
    pools: Pools,
    /// Where stacks of `stack_size` are carved from.
    slabs: Slabs,
    /// Whether each stack has a guard page (`Builder::guard_pages`).
    guard_pages: bool,
    /// The live-stack cap and the last refusal to make a stack.
    stack_limits: StackLimits,
    stack_size: usize,
    /// The order in force (never `Auto`: resolved at build).
    ready_order: ReadyOrder,
    /// Present exactly when `ready_order` is a policy.
    affinity: Option<RuntimeAffinity>,
    switch_cost_ns: u64,
    /// Stack overflows caught and turned into errors.
    overflows: AtomicU64,
    /// Stacks mapped (fresh) so far.
    stacks_mapped: AtomicU64,
    // accounting: what is measured at each switch, and the first counter failure.
    counters: Resolved,
    counter_error: Mutex<Option<String>>,
    // placement: the fragment batcher and the placement counters.
    placement: crate::placement::state::PlacementState,
    /// This runtime's process-unique number (see [`next_runtime_id`]).
    id: u64,
    /// Set by `Runtime::shutdown_timeout` when it gives up: idle workers exit with green threads
    /// still live, and leave them (and this state) leaked.
    abandoned: AtomicBool,
    /// Workers whose loop has returned (shutdown waits on it).
    exits: WorkerExits,
    /// Live green threads that have a name (`GreenBuilder::name`), by control block address: the
    /// names `Runtime::drop` reports when it waits long.
    named: Mutex<HashMap<usize, Arc<str>>>,
    // adaptive: workers with an index at or above `active` rest and hand their
    // queued threads to the others (`adaptive/limit.rs`; `workers.len()` when not adaptive);
    // the controller's state when `Builder::adaptive_workers` is on.
    active: CachePadded<AtomicUsize>,
    adaptive: Option<crate::adaptive::state::AdaptiveState>,
    /// Thread Tranquilizer's daemon state (`Builder::tranquilizer`).
    tranquilizer: Option<crate::tranquilizer::daemon::TranquilizerState>,
    /// ADAPT's member state (`Builder::co_schedule`).
    node: Option<crate::node::NodeState>,
    /// The watcher's view of the workers and its counters (`watch/`).
    watch: crate::watch::state::Watch,
    /// Memory-bandwidth reservations and throttling (`bandwidth/`).
    bandwidth: Arc<crate::bandwidth::state::BandwidthState>,
}

/// A number no other runtime of this process has had or will have (never reused, unlike the
/// address of a dropped runtime's state).
pub(crate) fn next_runtime_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Shared {
    /// The state of a runtime configured by `config`, and the owner ends of its workers' start
    /// deques (worker `i`'s at index `i`, for `runtime::start` to hand over). Fails only when
    /// the co-scheduling table cannot be opened (or its interval is too short).
    pub(crate) fn new(config: &Config) -> Result<(Arc<Shared>, Vec<Deque<RawJob>>), Error> {
        let n = config.workers;
        let node = match &config.co_schedule {
            Some(c) => Some(
                crate::node::NodeState::new(c.clone(), n)
                    .map_err(|reason| Error::InvalidConfig { reason })?,
            ),
            None => None,
        };
        let deques: Vec<Deque<RawJob>> = (0..n).map(|_| Deque::new_lifo()).collect();
        let workers = deques
            .iter()
            .zip(&config.steal_tiers)
            .enumerate()
            .map(|(i, (d, t))| WorkerShared::new(d.stealer(), config.pinned_cpu(i), t.clone()))
            .collect();
        let affinity = config.ready_order.policy().map(|policy| {
            RuntimeAffinity::new(
                policy,
                &config.topology,
                (0..n).map(|i| config.pinned_cpu(i)),
            )
        });
        let counters = config.counters.clone();
        let bandwidth = Arc::new(crate::bandwidth::state::BandwidthState::new(
            n,
            counters.source.is_some(),
            &counters.describe,
        ));
        let shuffle = config.shuffling.clone().map(|c| {
            crate::placement::shuffle::ShuffleState::new(c, &config.topology, &config.worker_cpu)
        });
        let shared = Shared {
            workers,
            injector: Injector::new(),
            sleepers: CachePadded::new(SleeperCount::new()),
            idle: CachePadded::new(AtomicUsize::new(0)),
            shutdown: AtomicBool::new(false),
            ext_spawned: AtomicU64::new(0),
            ext_finished: AtomicU64::new(0),
            loops: Default::default(),
            pools: Pools::new(),
            stack_size: config.stack_size,
            slabs: Slabs::new(config.stack_size, config.guard_pages),
            guard_pages: config.guard_pages,
            stack_limits: StackLimits::new(config.max_stacks),
            ready_order: config.ready_order,
            affinity,
            switch_cost_ns: config.switch_cost_ns,
            overflows: AtomicU64::new(0),
            stacks_mapped: AtomicU64::new(0),
            counters,
            counter_error: Mutex::new(None),
            placement: crate::placement::state::PlacementState::new(n, shuffle),
            id: next_runtime_id(),
            abandoned: AtomicBool::new(false),
            exits: WorkerExits::default(),
            named: Mutex::new(HashMap::new()),
            active: CachePadded::new(AtomicUsize::new(
                config.adaptive.as_ref().map_or(n, |r| *r.start()),
            )),
            adaptive: config
                .adaptive
                .as_ref()
                .map(|r| crate::adaptive::state::AdaptiveState::new(r, n, config.cpus.len())),
            tranquilizer: config
                .tranquilizer
                .clone()
                .map(crate::tranquilizer::daemon::TranquilizerState::new),
            node,
            watch: crate::watch::state::Watch::new(config.watch, n),
            bandwidth,
        };
        Ok((Arc::new(shared), deques))
    }

    /// Runs `f` on the named-live-threads map.
    pub(crate) fn named_live<R>(&self, f: impl FnOnce(&mut HashMap<usize, Arc<str>>) -> R) -> R {
        f(&mut self.named.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether an idle worker may stop: shut down, and nothing live (or the live ones abandoned).
    pub(crate) fn may_exit(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
            && (self.abandoned.load(Ordering::SeqCst) || self.live() == 0)
    }

    /// Green threads created and not finished. Exact once no new ones can be created.
    pub(crate) fn live(&self) -> u64 {
        let mut fin = self.ext_finished.load(Ordering::SeqCst);
        for w in self.workers.iter() {
            fin += w.finished.load(Ordering::SeqCst);
        }
        fence(Ordering::SeqCst);
        let mut sp = self.ext_spawned.load(Ordering::SeqCst);
        for w in self.workers.iter() {
            sp += w.spawned.load(Ordering::SeqCst);
        }
        sp.saturating_sub(fin)
    }
}

/// Read access to the parts of the state that own their behaviour (queues, pools, counters
/// with methods of their own) or never change after `Shared::new` (the resolved settings).
impl Shared {
    /// One entry per worker, by index.
    #[inline]
    pub(crate) fn workers(&self) -> &[WorkerShared] {
        &self.workers
    }

    /// The queue of green threads spawned off the workers and of handed-off work.
    #[inline]
    pub(crate) fn injector(&self) -> &Injector<RawJob> {
        &self.injector
    }

    /// The idle protocol's count of sleeping and searching workers (`sleep/word.rs`).
    #[inline]
    pub(crate) fn sleepers(&self) -> &SleeperCount {
        &self.sleepers
    }

    /// What `footprint::par`'s `Affinity` loops did here.
    #[inline]
    pub(crate) fn loops(&self) -> &crate::loops::LoopTotals {
        &self.loops
    }

    /// The shared level of the control-block and stack pools.
    #[inline]
    pub(crate) fn pools(&self) -> &Pools {
        &self.pools
    }

    /// Where stacks of [`stack_size`](Self::stack_size) are carved from.
    #[inline]
    pub(crate) fn slabs(&self) -> &Slabs {
        &self.slabs
    }

    /// Whether each stack has a guard page.
    #[inline]
    pub(crate) fn guard_pages(&self) -> bool {
        self.guard_pages
    }

    /// The live-stack cap and the last refusal to make a stack.
    #[inline]
    pub(crate) fn stack_limits(&self) -> &StackLimits {
        &self.stack_limits
    }

    /// The stack size of green threads that ask for none.
    #[inline]
    pub(crate) fn stack_size(&self) -> usize {
        self.stack_size
    }

    /// The ready order in force (never `Auto`).
    #[inline]
    pub(crate) fn ready_order(&self) -> ReadyOrder {
        self.ready_order
    }

    /// The affinity policy's state, exactly when the ready order is a policy.
    #[inline]
    pub(crate) fn affinity(&self) -> Option<&RuntimeAffinity> {
        self.affinity.as_ref()
    }

    /// What a lock waiter is told a switch costs (`Builder::switch_cost_ns`).
    #[inline]
    pub(crate) fn switch_cost_ns(&self) -> u64 {
        self.switch_cost_ns
    }

    /// What is measured at each switch.
    #[inline]
    pub(crate) fn counters(&self) -> &Resolved {
        &self.counters
    }

    /// The fragment batcher, thread shuffling and the placement counters.
    #[inline]
    pub(crate) fn placement(&self) -> &crate::placement::state::PlacementState {
        &self.placement
    }

    /// This runtime's process-unique number.
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The adaptive worker count's state, when `Builder::adaptive_workers` is on.
    #[inline]
    pub(crate) fn adaptive(&self) -> Option<&crate::adaptive::state::AdaptiveState> {
        self.adaptive.as_ref()
    }

    /// Thread Tranquilizer's daemon state, when `Builder::tranquilizer` is on.
    #[inline]
    pub(crate) fn tranquilizer(&self) -> Option<&crate::tranquilizer::daemon::TranquilizerState> {
        self.tranquilizer.as_ref()
    }

    /// ADAPT's member state, when `Builder::co_schedule` is on.
    #[inline]
    pub(crate) fn node(&self) -> Option<&crate::node::NodeState> {
        self.node.as_ref()
    }

    /// The watcher's view of the workers and its counters.
    #[inline]
    pub(crate) fn watch(&self) -> &crate::watch::state::Watch {
        &self.watch
    }

    /// Memory-bandwidth reservations and throttling.
    #[inline]
    pub(crate) fn bandwidth(&self) -> &Arc<crate::bandwidth::state::BandwidthState> {
        &self.bandwidth
    }
}

/// The state's counters and flags, each changed by the one method that says what happened.
impl Shared {
    /// Starts the shutdown: from now on idle workers exit once nothing is live.
    pub(crate) fn begin_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
    }

    /// Whether the runtime shuts down (a relaxed read: callers re-check under the protocol
    /// that needs it, `may_exit`).
    #[inline]
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed)
    }

    /// Gives up on the live green threads (`Runtime::shutdown_timeout`): idle workers exit
    /// without them.
    pub(crate) fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
    }

    /// Whether [`abandon`](Self::abandon) was called.
    pub(crate) fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::SeqCst)
    }

    /// Workers whose loop has returned, and waiting for them.
    pub(crate) fn exits(&self) -> &WorkerExits {
        &self.exits
    }

    /// Counts a green thread created off the workers (their own are counted per worker).
    #[inline]
    pub(crate) fn count_external_spawn(&self) {
        self.ext_spawned.fetch_add(1, Ordering::Release);
    }

    /// Counts a green thread finished off the workers (or on another runtime's worker).
    #[inline]
    pub(crate) fn count_external_finish(&self) {
        self.ext_finished.fetch_add(1, Ordering::Release);
    }

    /// Green threads created / finished off the workers so far.
    pub(crate) fn external_counts(&self) -> (u64, u64) {
        (
            self.ext_spawned.load(Ordering::Relaxed),
            self.ext_finished.load(Ordering::Relaxed),
        )
    }

    /// Counts a stack overflow caught and turned into an error.
    pub(crate) fn count_overflow(&self) {
        self.overflows.fetch_add(1, Ordering::Relaxed);
    }

    /// Stack overflows caught so far.
    pub(crate) fn overflows(&self) -> u64 {
        self.overflows.load(Ordering::Relaxed)
    }

    /// Counts a stack freshly mapped (or carved).
    #[inline]
    pub(crate) fn count_stack_mapped(&self) {
        self.stacks_mapped.fetch_add(1, Ordering::Relaxed);
    }

    /// Stacks mapped so far.
    pub(crate) fn stacks_mapped(&self) -> u64 {
        self.stacks_mapped.load(Ordering::Relaxed)
    }

    /// Keeps `message` as the counter failure the stats report, unless one is kept already.
    pub(crate) fn note_counter_error(&self, message: impl FnOnce() -> String) {
        let mut first = self.counter_error.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert_with(message);
    }

    /// The first counter failure, if any.
    pub(crate) fn counter_error(&self) -> Option<String> {
        self.counter_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Counts the calling worker as idle (searching or asleep) until
    /// [`leave_idle`](Self::leave_idle).
    #[inline]
    pub(crate) fn enter_idle(&self) {
        self.idle.fetch_add(1, Ordering::SeqCst);
    }

    /// Ends an [`enter_idle`](Self::enter_idle).
    #[inline]
    pub(crate) fn leave_idle(&self) {
        self.idle.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether some worker is idle (a relaxed read: a hint for spilling work, not a protocol
    /// step).
    #[inline]
    pub(crate) fn has_idle_workers(&self) -> bool {
        self.idle.load(Ordering::Relaxed) > 0
    }

    /// Sets the active-worker limit to `n` (clamped to 1..=workers) and wakes the resting
    /// workers it activates (`adaptive/limit.rs`).
    pub(crate) fn set_active(&self, n: usize) {
        let n = n.clamp(1, self.workers.len());
        let old = self.active.swap(n, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        for w in self.workers.iter().take(n).skip(old.min(n)) {
            w.sleep.rouse();
        }
    }

    /// The active-worker limit: workers with an index at or above it rest.
    #[inline]
    pub(crate) fn active_limit(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        loop {
            match self.injector.steal() {
                Steal::Success(j) => drop(j.into_job()),
                Steal::Retry => continue,
                Steal::Empty => break,
            }
        }
    }
}
