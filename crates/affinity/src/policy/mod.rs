//! Affinity policies (004 Table 3.3): which ready thread a worker runs next.
//!
//! A policy turns a thread's history into a `u64` **ordering key for a worker's ready threads:
//! smaller keys run first**. The runtime keeps one [`ThreadAffinity`] per green thread and one
//! [`WorkerAffinity`] per worker, and calls
//! - [`AffinityPolicy::on_stop`]`(&mut thread, misses, &worker)` when a thread stops running on
//!   a worker (blocks, yields, is preempted), with the cache misses of that run if a PMU counted
//!   them (`None` otherwise), and
//! - [`AffinityPolicy::key`]`(&thread, &worker)` when the thread becomes ready for `worker`
//!   (possibly on another worker's OS thread: everything a key reads is either the thread's own
//!   record or an atomic), and orders `worker`'s ready structure by it. Keys are computed once at
//!   enqueue; 004 notes the order among ready threads does not change as others arrive.
//!
//! | policy | key (smaller first) | needs |
//! | --- | --- | --- |
//! | [`NoAffinity`] | LIFO: `u64::MAX −` an enqueue stamp of this worker | nothing |
//! | [`VirtualTime`] | `u64::MAX −` the stamp this worker gave the thread at its last stop (most recent first); threads last run elsewhere get `u64::MAX` | nothing |
//! | [`MinMisses`] | misses in the last run | miss counts |
//! | [`MissSum`] | cumulative misses, halved every [`MISS_SUM_HALF_LIFE`] scheduling operations of the worker | miss counts |
//! | [`ReloadTransient`] | expected misses to rebuild the footprint in this worker's cache, in 1/256 misses | miss counts, a ledger |
//!
//! Policies that need miss counts use the [`VirtualTime`] key for a thread whose last run was not
//! counted (no PMU, or the counter failed): on a machine without counters they order exactly like
//! virtual time. [`Policy::auto`] picks ReloadTransient when cache misses can be counted and
//! VirtualTime otherwise, and says which it picked; [`Policy::auto_for`] decides for a given
//! [`Topology`] (VirtualTime also when its caches are unknown), from the scheduling simulator's
//! results (`crates/sim`).
//!
//! ```
//! use std::sync::Arc;
//! use footprint_affinity::ledger::Ledger;
//! use footprint_affinity::policy::{AffinityPolicy, Policy, PolicyKind, ThreadAffinity, WorkerAffinity};
//! use footprint_affinity::Topology;
//!
//! let topo = Topology::detect();
//! let ledger = Arc::new(Ledger::for_last_level(&topo));
//! let worker = WorkerAffinity::new(0, Some(topo.cpus()[0]), ledger);
//! let policy = Policy::auto(false);                // no PMU here
//! assert_eq!(policy.kind(), PolicyKind::VirtualTime);
//! println!("{policy}");                            // "VirtualTime (auto: no cache-miss counts)"
//!
//! let (mut a, mut b) = (ThreadAffinity::new(), ThreadAffinity::new());
//! policy.on_stop(&mut a, None, &worker);
//! policy.on_stop(&mut b, None, &worker);          // b ran more recently on this worker
//! assert!(policy.key(&b, &worker) < policy.key(&a, &worker));
//! ```

use crate::ledger::{DomainId, Footprint, Ledger};
use crate::topology::Topology;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// [`MissSum`] halves a thread's cumulative misses every this many scheduling operations
/// (stops) of the worker it last ran on.
pub const MISS_SUM_HALF_LIFE: u64 = 32;

/// [`Policy::auto_for`] picks VirtualTime instead of ReloadTransient when the last-level cache
/// holds more than this many bytes per CPU (32 MiB): there, working sets stay in it, runs count
/// (almost) no misses, the model sees (almost) no footprints, every reload-transient key ties
/// and the ready heap runs first in, first out (the scheduling simulator: 1024 × 64 KiB threads
/// on 2 CPUs gain 1.08–1.32× with 1–16 MiB of L3 per CPU, lose 8 % with 64 MiB and 19 % with
/// this development VM's 130 MiB).
pub const AUTO_MAX_LAST_LEVEL_PER_CPU: u64 = 32 << 20;

/// What [`Policy::auto_for`] knows of the last-level cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CacheInfo {
    /// No cache in the topology.
    Unknown,
    /// Above [`AUTO_MAX_LAST_LEVEL_PER_CPU`].
    Huge,
    /// Known, of an ordinary size.
    Known,
}

/// Fixed-point scale of [`ReloadTransient`] keys: 256 key units per expected miss.
pub const RELOAD_KEY_SCALE: f64 = 256.0;

const NO_WORKER: u32 = u32::MAX;

/// The five strategies of 004 Table 3.3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    /// LIFO, no affinity.
    NoAffinity,
    /// Most recently run on this worker first.
    VirtualTime,
    /// Fewest misses in the last run first.
    MinMisses,
    /// Smallest aged cumulative miss count first.
    MissSum,
    /// Smallest reload transient (Markov model) first.
    ReloadTransient,
}

impl PolicyKind {
    /// Every kind, in Table 3.3's order.
    pub const ALL: [PolicyKind; 5] = [
        PolicyKind::NoAffinity,
        PolicyKind::VirtualTime,
        PolicyKind::MinMisses,
        PolicyKind::MissSum,
        PolicyKind::ReloadTransient,
    ];

    /// True for the strategies that need cache-miss counts.
    pub fn needs_miss_counts(self) -> bool {
        matches!(
            self,
            PolicyKind::MinMisses | PolicyKind::MissSum | PolicyKind::ReloadTransient
        )
    }

    /// The name, as in Table 3.3.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::NoAffinity => "NoAffinity",
            PolicyKind::VirtualTime => "VirtualTime",
            PolicyKind::MinMisses => "MinMisses",
            PolicyKind::MissSum => "MissSum",
            PolicyKind::ReloadTransient => "ReloadTransient",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy name that [`PolicyKind::from_str`](std::str::FromStr) does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown affinity policy {:?}: use one of auto, no-affinity, virtual-time, \
             min-misses, miss-sum, reload-transient",
            self.0
        )
    }
}

impl std::error::Error for UnknownPolicy {}

impl std::str::FromStr for PolicyKind {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm: String = s
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        Ok(match norm.as_str() {
            "noaffinity" | "lifo" => PolicyKind::NoAffinity,
            "virtualtime" | "vt" => PolicyKind::VirtualTime,
            "minmisses" | "minimummisses" => PolicyKind::MinMisses,
            "misssum" | "cachemisssum" => PolicyKind::MissSum,
            "reloadtransient" | "rt" => PolicyKind::ReloadTransient,
            _ => return Err(UnknownPolicy(s.to_string())),
        })
    }
}

/// Per-worker state: the worker's id, its cache domain in the ledger, and its counters. Shared
/// by reference: wakers on other workers compute keys for this worker.
#[derive(Debug)]
pub struct WorkerAffinity {
    id: u32,
    domain: Option<DomainId>,
    ledger: Arc<Ledger>,
    /// Scheduling operations (stops) on this worker: the virtual-time clock and MissSum's age.
    ops: AtomicU64,
    /// Enqueue stamps for LIFO.
    enqueues: AtomicU64,
}

impl WorkerAffinity {
    /// State for worker `id` pinned to `cpu` (`None`: unpinned, no cache domain).
    ///
    /// # Panics
    /// If `id` does not fit in a `u32` minus one (four billion workers).
    pub fn new(id: usize, cpu: Option<usize>, ledger: Arc<Ledger>) -> WorkerAffinity {
        let id = u32::try_from(id)
            .ok()
            .filter(|&i| i != NO_WORKER)
            .expect("worker id below u32::MAX");
        WorkerAffinity {
            id,
            domain: cpu.and_then(|c| ledger.domain_of_cpu(c)),
            ledger,
            ops: AtomicU64::new(0),
            enqueues: AtomicU64::new(0),
        }
    }

    /// The worker's id.
    pub fn id(&self) -> usize {
        self.id as usize
    }

    /// Its cache domain in the ledger (`None`: unpinned or no cache information).
    pub fn domain(&self) -> Option<DomainId> {
        self.domain
    }

    /// The ledger it reads.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// Scheduling operations (stops) recorded on this worker so far.
    pub fn operations(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }
}

/// Per-green-thread state (80 bytes, `Copy`): its last worker, virtual-time stamp, miss
/// history and footprint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThreadAffinity {
    last_worker: u32,
    counted: bool,
    vt_stamp: u64,
    last_misses: u64,
    miss_sum: u64,
    miss_sum_stamp: u64,
    footprint: Footprint,
}

impl Default for ThreadAffinity {
    fn default() -> Self {
        ThreadAffinity::new()
    }
}

impl ThreadAffinity {
    /// A thread that never ran.
    pub const fn new() -> ThreadAffinity {
        ThreadAffinity {
            last_worker: NO_WORKER,
            counted: false,
            vt_stamp: 0,
            last_misses: 0,
            miss_sum: 0,
            miss_sum_stamp: 0,
            footprint: Footprint::NONE,
        }
    }

    /// The worker it last stopped on.
    pub fn last_worker(&self) -> Option<usize> {
        (self.last_worker != NO_WORKER).then_some(self.last_worker as usize)
    }

    /// Misses in the last run, if they were counted.
    pub fn last_misses(&self) -> Option<u64> {
        self.counted.then_some(self.last_misses)
    }

    /// The cumulative miss sum as of the last stop (before aging since).
    pub fn miss_sum(&self) -> u64 {
        self.miss_sum
    }

    /// The footprint left at the last stop.
    pub fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    /// Records a stop on `worker` after a run with `misses` cache misses (`None`: not counted).
    /// Every policy's [`AffinityPolicy::on_stop`] does this; it updates the state of all five
    /// strategies, so the policy can change between runs.
    pub fn record_stop(&mut self, misses: Option<u64>, worker: &WorkerAffinity) {
        let ops = worker.ops.fetch_add(1, Ordering::Relaxed) + 1;
        let same_worker = self.last_worker == worker.id;
        self.vt_stamp = ops;
        match misses {
            Some(n) => {
                if same_worker {
                    let halvings = ops.saturating_sub(self.miss_sum_stamp) / MISS_SUM_HALF_LIFE;
                    self.miss_sum = self.miss_sum.checked_shr(halvings as u32).unwrap_or(0);
                    self.miss_sum_stamp += halvings * MISS_SUM_HALF_LIFE;
                } else {
                    self.miss_sum_stamp = ops;
                }
                self.miss_sum = self.miss_sum.saturating_add(n);
                self.last_misses = n;
                self.counted = true;
                match worker.domain {
                    Some(d) => self.footprint.record_run(&worker.ledger, d, n),
                    None => self.footprint.clear(),
                }
            }
            None => {
                self.counted = false;
                self.footprint.clear();
            }
        }
        self.last_worker = worker.id;
    }

    /// Estimated cache misses of a run on `worker` for a thread that declared a working set of
    /// `working_set_lines` lines (of the ledger's level), for machines without a PMU: the model's
    /// reload transient `RT(W, v)` from the lines it still has there, rounded up. Passing this as
    /// the run's `misses` keeps the thread's footprint at about its working set, so the
    /// reload-transient policy works from hints alone. `None` when the worker has no cache domain.
    pub fn estimated_misses(&self, working_set_lines: u64, worker: &WorkerAffinity) -> Option<u64> {
        let d = worker.domain?;
        let ledger = &worker.ledger;
        let valid = self.footprint.valid_in(ledger, Some(d));
        let rt =
            ledger
                .table()
                .reload_transient_in(ledger.model(d), working_set_lines as f64, valid);
        Some(rt.ceil() as u64)
    }

    #[inline]
    fn virtual_time_key(&self, worker: &WorkerAffinity) -> u64 {
        if self.last_worker == worker.id {
            u64::MAX - self.vt_stamp
        } else {
            u64::MAX
        }
    }
}

/// An affinity policy: how a worker orders its ready threads. Smaller keys run first.
pub trait AffinityPolicy: Send + Sync {
    /// Which strategy this is.
    fn kind(&self) -> PolicyKind;

    /// Called when `thread` stops running on `worker`, with the cache misses of that run (`None`
    /// when not counted). The default records everything every strategy needs.
    fn on_stop(&self, thread: &mut ThreadAffinity, misses: Option<u64>, worker: &WorkerAffinity) {
        thread.record_stop(misses, worker);
    }

    /// The ordering key of `thread` in `worker`'s ready structure (smaller runs first).
    fn key(&self, thread: &ThreadAffinity, worker: &WorkerAffinity) -> u64;
}

/// No affinity: last in, first out (each call to `key` takes a fresh enqueue stamp).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAffinity;

impl AffinityPolicy for NoAffinity {
    fn kind(&self) -> PolicyKind {
        PolicyKind::NoAffinity
    }
    #[inline]
    fn key(&self, _thread: &ThreadAffinity, worker: &WorkerAffinity) -> u64 {
        u64::MAX - 1 - worker.enqueues.fetch_add(1, Ordering::Relaxed)
    }
}

/// Virtual time: the thread this worker ran most recently first; threads last run elsewhere
/// (or never) after all of them.
#[derive(Clone, Copy, Debug, Default)]
pub struct VirtualTime;

impl AffinityPolicy for VirtualTime {
    fn kind(&self) -> PolicyKind {
        PolicyKind::VirtualTime
    }
    #[inline]
    fn key(&self, thread: &ThreadAffinity, worker: &WorkerAffinity) -> u64 {
        thread.virtual_time_key(worker)
    }
}

/// Minimum misses: fewest cache misses in the last run first (virtual time when not counted).
#[derive(Clone, Copy, Debug, Default)]
pub struct MinMisses;

impl AffinityPolicy for MinMisses {
    fn kind(&self) -> PolicyKind {
        PolicyKind::MinMisses
    }
    #[inline]
    fn key(&self, thread: &ThreadAffinity, worker: &WorkerAffinity) -> u64 {
        if thread.counted {
            thread.last_misses
        } else {
            thread.virtual_time_key(worker)
        }
    }
}

/// Cache miss sum: smallest cumulative misses first, halved every [`MISS_SUM_HALF_LIFE`]
/// scheduling operations of the worker the thread last ran on (so a long wait ages the sum and
/// prevents starvation); a new thread starts at 0. Virtual time when not counted.
#[derive(Clone, Copy, Debug, Default)]
pub struct MissSum;

impl AffinityPolicy for MissSum {
    fn kind(&self) -> PolicyKind {
        PolicyKind::MissSum
    }
    #[inline]
    fn key(&self, thread: &ThreadAffinity, worker: &WorkerAffinity) -> u64 {
        if !thread.counted {
            return thread.virtual_time_key(worker);
        }
        if thread.last_worker == worker.id {
            let halvings =
                worker.operations().saturating_sub(thread.miss_sum_stamp) / MISS_SUM_HALF_LIFE;
            thread.miss_sum.checked_shr(halvings as u32).unwrap_or(0)
        } else {
            thread.miss_sum
        }
    }
}

/// Reload transient: the smallest expected number of misses to rebuild the thread's footprint in
/// this worker's cache first (`RT(f, V(f, m))` with `m` the domain's misses since the thread
/// stopped there; `RT(f, 0)` when its footprint is in another domain), through the ledger's
/// [`crate::reload::ReloadTable`]. Virtual time for threads without a counted footprint or workers without a
/// cache domain.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReloadTransient;

impl ReloadTransient {
    /// The expected reload transient in misses (the key divided by [`RELOAD_KEY_SCALE`]), or
    /// `None` when it cannot be estimated.
    #[inline]
    pub fn expected_misses(&self, thread: &ThreadAffinity, worker: &WorkerAffinity) -> Option<f64> {
        let d = worker.domain?;
        if !thread.counted || thread.footprint.domain().is_none() {
            return None;
        }
        Some(thread.footprint.reload_transient_in(&worker.ledger, d))
    }
}

impl AffinityPolicy for ReloadTransient {
    fn kind(&self) -> PolicyKind {
        PolicyKind::ReloadTransient
    }
    #[inline]
    fn key(&self, thread: &ThreadAffinity, worker: &WorkerAffinity) -> u64 {
        match self.expected_misses(thread, worker) {
            // `as` saturates; RT is finite and ≥ 0.
            Some(rt) => (rt * RELOAD_KEY_SCALE) as u64,
            None => thread.virtual_time_key(worker),
        }
    }
}

/// The policy the runtime holds: one of the five, dispatched without a virtual call, and how it
/// was chosen.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    kind: PolicyKind,
    auto_reason: Option<&'static str>,
}

impl Policy {
    /// The given strategy.
    pub fn new(kind: PolicyKind) -> Policy {
        Policy {
            kind,
            auto_reason: None,
        }
    }

    /// ReloadTransient when cache misses can be counted (`cache_misses_available`, e.g. from the
    /// PMU crate's capability probe), VirtualTime otherwise: [`Policy::auto_for`] on a machine
    /// whose cache topology is known. [`Policy::auto_reason`] and `Display` say which was
    /// picked and why. A caller that holds a [`Topology`] (the runtime) should call
    /// [`Policy::auto_for`] with it, which also covers machines whose caches are unknown.
    pub fn auto(cache_misses_available: bool) -> Policy {
        Policy::decide(cache_misses_available, CacheInfo::Known)
    }

    /// The policy for a machine of `topology`, decided from the scheduling simulator
    /// (`crates/sim`; the root README's "Scheduling simulator" section has the decision table and
    /// the commands):
    ///
    /// | miss counts | cache topology | policy | simulated (2–64 CPUs, 1–4 NUMA nodes) |
    /// | --- | --- | --- | --- |
    /// | yes | known, at most 32 MiB of last level per CPU | ReloadTransient | best on 004's regular workload at 2–16 and 64 CPUs (up to 1.43× NoAffinity); elsewhere at most 5.4 % behind the best (its counter read and key cost, where the caches hold the working sets) |
    /// | yes | last level above [`AUTO_MAX_LAST_LEVEL_PER_CPU`] (32 MiB) per CPU | VirtualTime | the working sets stay in it: no misses, no modelled footprints, all reload-transient keys tie and the heap runs FIFO (2 CPUs: 0.81–0.92× NoAffinity where VirtualTime gets 0.99–1.02×) |
    /// | yes | unknown (no caches in the topology) | VirtualTime | ReloadTransient has no cache domain to place footprints in: its keys *are* VirtualTime's, plus the counter reads |
    /// | no | any | VirtualTime | miss-based policies order like VirtualTime without counts; VirtualTime beats LIFO when woken threads return to their last worker |
    ///
    /// The CPU count and NUMA node count do not change the choice on the simulated machines:
    /// ReloadTransient's lead shrinks with more CPUs (as the aggregate cache approaches the
    /// working sets) and what it loses where it does not pay is its switch cost, on every
    /// topology alike.
    ///
    /// ```
    /// use footprint_affinity::{AffinityPolicy, Policy, PolicyKind, Topology};
    /// let flat = Topology::flat(vec![0, 1, 2, 3]);
    /// assert_eq!(Policy::auto_for(&flat, true).kind(), PolicyKind::VirtualTime);
    /// assert_eq!(Policy::auto_for(&flat, false).kind(), PolicyKind::VirtualTime);
    /// ```
    pub fn auto_for(topology: &Topology, cache_misses_available: bool) -> Policy {
        let caches = match topology.last_level() {
            None => CacheInfo::Unknown,
            Some(level) => {
                let domains = topology.caches().iter().filter(|c| c.level == level);
                let (bytes, cpus) = domains.fold((0u64, 0usize), |(b, n), c| {
                    (b.saturating_add(c.size_bytes), n + c.cpus.len())
                });
                if bytes / (cpus.max(1) as u64) > AUTO_MAX_LAST_LEVEL_PER_CPU {
                    CacheInfo::Huge
                } else {
                    CacheInfo::Known
                }
            }
        };
        Policy::decide(cache_misses_available, caches)
    }

    /// The decision table of [`Policy::auto_for`].
    fn decide(cache_misses_available: bool, caches: CacheInfo) -> Policy {
        let (kind, reason) = if !cache_misses_available {
            (PolicyKind::VirtualTime, "no cache-miss counts")
        } else if caches == CacheInfo::Unknown {
            (
                PolicyKind::VirtualTime,
                "cache-miss counts but no cache topology to place footprints in",
            )
        } else if caches == CacheInfo::Huge {
            (
                PolicyKind::VirtualTime,
                "last-level cache too large per CPU for its misses to tell footprints apart",
            )
        } else {
            (PolicyKind::ReloadTransient, "cache-miss counts available")
        };
        Policy {
            auto_reason: Some(reason),
            ..Policy::new(kind)
        }
    }

    /// `Some(why)` when [`Policy::auto`] chose this policy.
    pub fn auto_reason(&self) -> Option<&'static str> {
        self.auto_reason
    }

    /// The reload-transient estimate in misses, whatever the policy (for reports).
    pub fn expected_reload(&self, thread: &ThreadAffinity, worker: &WorkerAffinity) -> Option<f64> {
        ReloadTransient.expected_misses(thread, worker)
    }
}

impl Default for Policy {
    /// VirtualTime: the right default without counters.
    fn default() -> Self {
        Policy::new(PolicyKind::VirtualTime)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.auto_reason {
            Some(why) => write!(f, "{} (auto: {why})", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

impl AffinityPolicy for Policy {
    fn kind(&self) -> PolicyKind {
        self.kind
    }
    #[inline]
    fn key(&self, thread: &ThreadAffinity, worker: &WorkerAffinity) -> u64 {
        match self.kind {
            PolicyKind::NoAffinity => NoAffinity.key(thread, worker),
            PolicyKind::VirtualTime => VirtualTime.key(thread, worker),
            PolicyKind::MinMisses => MinMisses.key(thread, worker),
            PolicyKind::MissSum => MissSum.key(thread, worker),
            PolicyKind::ReloadTransient => ReloadTransient.key(thread, worker),
        }
    }
}

#[cfg(test)]
mod tests;
