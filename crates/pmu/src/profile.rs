//! What the sampler reads: cumulative counts of the process and its threads at one instant,
//! from `/proc` and `getrusage` (real) or from a script (tests).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use crate::caps::Availability;
use crate::error::PmuError;
use crate::event::Event;
use crate::perf::{PerfGroup, PerfOptions, RdpmcMode};
use crate::software::ProcTaskSource;
use crate::source::{CounterSource, Target};
use crate::sys::{self, RusageWho, Tid};

/// Cumulative counts of one task (the process, or one thread) at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskCounts {
    /// Kernel thread id (the process id for the process row).
    pub tid: Tid,
    /// CPU time in nanoseconds, user plus system.
    pub cpu_ns: u64,
    /// Voluntary context switches (the task blocked).
    pub voluntary_switches: u64,
    /// Involuntary context switches (the task was preempted).
    pub involuntary_switches: u64,
    /// Migrations between CPUs, where known.
    pub migrations: Option<u64>,
    /// Nanoseconds spent runnable but waiting for a CPU, where known.
    pub run_delay_ns: Option<u64>,
    /// Last-level cache misses, where hardware counters exist.
    pub llc_misses: Option<u64>,
    /// Last-level cache references, where hardware counters exist.
    pub llc_references: Option<u64>,
}

/// The process and its threads at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// `CLOCK_MONOTONIC` time of the snapshot, in nanoseconds.
    pub at_ns: u64,
    /// CPUs the process may run on (the denominator of utilisation as a fraction).
    pub cpus: usize,
    /// Whole-process counts. Fields left `None` here are summed from the threads' deltas.
    pub process: TaskCounts,
    /// Per-thread counts (the threads the source tracks).
    pub threads: Vec<TaskCounts>,
}

/// Where the sampler gets its snapshots: [`ProcProfileSource`] on a real process,
/// [`ScriptedProfile`] in tests.
pub trait ProfileSource: Send {
    /// Fills `out` with cumulative counts taken now (reusing its allocations).
    fn snapshot(&mut self, out: &mut Snapshot) -> Result<(), PmuError>;

    /// Leave thread `tid` out of the per-thread rows (the sampler's own thread).
    fn exclude_thread(&mut self, _tid: Tid) {}

    /// Whether last-level-cache counts are available, and why not.
    fn llc_status(&self) -> Availability {
        Availability::NotSupported {
            reason: "this profile source does not count cache misses".into(),
        }
    }
}

/// A shared, growable set of thread ids to sample: workers register themselves (from their own
/// thread, with [`ThreadRegistry::register_current`]) and unregister on exit.
#[derive(Clone, Debug, Default)]
pub struct ThreadRegistry {
    tids: Arc<Mutex<BTreeSet<Tid>>>,
}

impl ThreadRegistry {
    /// An empty registry.
    pub fn new() -> ThreadRegistry {
        ThreadRegistry::default()
    }

    /// Adds the calling thread; returns its tid.
    pub fn register_current(&self) -> Tid {
        let tid = sys::current_tid();
        self.register(tid);
        tid
    }

    /// Adds `tid`.
    pub fn register(&self, tid: Tid) {
        self.lock().insert(tid);
    }

    /// Removes `tid`.
    pub fn unregister(&self, tid: Tid) {
        self.lock().remove(&tid);
    }

    /// The registered tids, sorted.
    pub fn tids(&self) -> Vec<Tid> {
        self.lock().iter().copied().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<Tid>> {
        // Insert and remove are single operations: a poisoned set is still consistent.
        self.tids.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Which threads a [`ProcProfileSource`] samples one by one.
#[derive(Clone, Debug, Default)]
pub enum ThreadSelection {
    /// Every live thread of the process (from `/proc/self/task`), except the sampler's own.
    #[default]
    All,
    /// Only these threads (those that have exited are skipped).
    Only(Vec<Tid>),
    /// The threads in a registry, as it is at each sample.
    Registry(ThreadRegistry),
    /// No per-thread rows: process totals only (cheapest).
    ProcessOnly,
}

struct Tracked {
    proc: ProcTaskSource,
    llc: Option<PerfGroup>,
}

/// Whether a [`ProcProfileSource`] opens per-thread LLC counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LlcCounting {
    /// Open `cache-misses`/`cache-references` per thread where perf allows it (the default);
    /// after the first refusal, stop trying and report why in
    /// [`ProfileSource::llc_status`].
    #[default]
    IfAvailable,
    /// Never open hardware counters.
    Off,
}

/// The real profile source: process totals from `getrusage(RUSAGE_SELF)` (all threads, live
/// and exited); per thread `schedstat` (CPU time, run delay) and `sched` (switches, migrations)
/// under `/proc/self/task/<tid>/`, kept open and re-read with `pread`; LLC misses and references
/// through per-thread perf groups where the hardware and permissions allow.
pub struct ProcProfileSource {
    selection: ThreadSelection,
    llc: LlcCounting,
    llc_status: Availability,
    tracked: BTreeMap<Tid, Tracked>,
    excluded: BTreeSet<Tid>,
    cpus: usize,
    tids: Vec<Tid>,
    thread_events: Vec<Event>,
}

impl std::fmt::Debug for ProcProfileSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcProfileSource")
            .field("selection", &self.selection)
            .field("llc", &self.llc)
            .field("llc_status", &self.llc_status)
            .field("threads", &self.tracked.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ProcProfileSource {
    /// A source sampling `selection`, with LLC counters if available.
    pub fn new(selection: ThreadSelection) -> ProcProfileSource {
        let probe_tid = sys::current_tid();
        let mut thread_events = vec![
            Event::TaskClock,
            Event::RunDelay,
            Event::VoluntaryContextSwitches,
            Event::InvoluntaryContextSwitches,
        ];
        if std::path::Path::new(&format!("/proc/self/task/{probe_tid}/sched")).exists() {
            thread_events.push(Event::CpuMigrations);
        }
        ProcProfileSource {
            selection,
            llc: LlcCounting::IfAvailable,
            llc_status: Availability::Failed {
                reason: "not tried yet (no thread sampled)".into(),
            },
            tracked: BTreeMap::new(),
            excluded: BTreeSet::new(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tids: Vec::new(),
            thread_events,
        }
    }

    /// Sets whether per-thread LLC counters are opened.
    pub fn llc(mut self, llc: LlcCounting) -> ProcProfileSource {
        self.llc = llc;
        if llc == LlcCounting::Off {
            self.llc_status = Availability::NotSupported {
                reason: "turned off (LlcCounting::Off)".into(),
            };
        }
        self
    }

    fn wanted_tids(&mut self) -> Result<(), PmuError> {
        self.tids.clear();
        match &self.selection {
            ThreadSelection::All => self.tids.extend(sys::process_threads()?),
            ThreadSelection::Only(t) => self.tids.extend(t.iter().copied()),
            ThreadSelection::Registry(r) => self.tids.extend(r.tids()),
            ThreadSelection::ProcessOnly => {}
        }
        let excluded = &self.excluded;
        self.tids.retain(|t| !excluded.contains(t));
        self.tids.sort_unstable();
        self.tids.dedup();
        Ok(())
    }

    fn open_llc(&mut self, tid: Tid) -> Option<PerfGroup> {
        if self.llc == LlcCounting::Off
            || matches!(
                self.llc_status,
                Availability::NotSupported { .. } | Availability::PermissionDenied { .. }
            )
        {
            return None;
        }
        match PerfGroup::open(
            &[Event::LlcMisses, Event::LlcReferences],
            Target::Thread(tid),
            PerfOptions {
                rdpmc: RdpmcMode::Off,
            },
        ) {
            Ok(g) => {
                self.llc_status = Availability::Available;
                Some(g)
            }
            Err(e @ (PmuError::NotSupported { .. } | PmuError::PermissionDenied { .. })) => {
                self.llc_status = match e {
                    PmuError::NotSupported { reason, .. } => Availability::NotSupported { reason },
                    PmuError::PermissionDenied { reason, .. } => {
                        Availability::PermissionDenied { reason }
                    }
                    _ => unreachable!("matched above"),
                };
                None
            }
            // The thread exited in between, or a transient error: try again next time.
            Err(_) => None,
        }
    }
}

impl ProfileSource for ProcProfileSource {
    fn snapshot(&mut self, out: &mut Snapshot) -> Result<(), PmuError> {
        self.wanted_tids()?;
        // Forget threads no longer wanted (exited or unregistered).
        let tids = std::mem::take(&mut self.tids);
        self.tracked.retain(|t, _| tids.binary_search(t).is_ok());
        out.threads.clear();
        for &tid in &tids {
            if !self.tracked.contains_key(&tid) {
                let proc =
                    match ProcTaskSource::with_events(Target::Thread(tid), &self.thread_events) {
                        Ok(p) => p,
                        Err(PmuError::NoSuchThread { .. }) => continue,
                        Err(e) => {
                            self.tids = tids;
                            return Err(e);
                        }
                    };
                let llc = self.open_llc(tid);
                self.tracked.insert(tid, Tracked { proc, llc });
            }
            let Some(t) = self.tracked.get_mut(&tid) else {
                continue;
            };
            let r = match t.proc.read() {
                Ok(r) => r,
                Err(PmuError::NoSuchThread { .. }) => {
                    self.tracked.remove(&tid);
                    continue;
                }
                Err(e) => {
                    self.tids = tids;
                    return Err(e);
                }
            };
            let p = &t.proc;
            let mut c = TaskCounts {
                tid,
                cpu_ns: p.value(&r, Event::TaskClock).unwrap_or(0),
                voluntary_switches: p.value(&r, Event::VoluntaryContextSwitches).unwrap_or(0),
                involuntary_switches: p.value(&r, Event::InvoluntaryContextSwitches).unwrap_or(0),
                migrations: p.value(&r, Event::CpuMigrations),
                run_delay_ns: p.value(&r, Event::RunDelay),
                llc_misses: None,
                llc_references: None,
            };
            if let Some(g) = t.llc.as_mut() {
                if let Ok(lr) = g.read_syscall() {
                    c.llc_misses = lr.get(0);
                    c.llc_references = lr.get(1);
                }
            }
            out.threads.push(c);
        }
        self.tids = tids;
        let ru = sys::getrusage(RusageWho::Process)?;
        out.process = TaskCounts {
            tid: sys::current_pid(),
            cpu_ns: ru.cpu_ns,
            voluntary_switches: ru.voluntary_switches,
            involuntary_switches: ru.involuntary_switches,
            // Summed from the threads' deltas by the sampler.
            migrations: None,
            run_delay_ns: None,
            llc_misses: None,
            llc_references: None,
        };
        out.cpus = self.cpus;
        out.at_ns = sys::monotonic_ns();
        Ok(())
    }

    fn exclude_thread(&mut self, tid: Tid) {
        self.excluded.insert(tid);
        self.tracked.remove(&tid);
    }

    fn llc_status(&self) -> Availability {
        self.llc_status.clone()
    }
}

/// Replays given snapshots, one per [`ProfileSource::snapshot`], for deterministic tests of the
/// sampler and of everything that consumes its profile. More can be pushed through a
/// [`ScriptedProfileFeeder`] while it is in use.
#[derive(Debug, Default)]
pub struct ScriptedProfile {
    queue: Arc<Mutex<VecDeque<Snapshot>>>,
    served: usize,
}

impl ScriptedProfile {
    /// A source replaying `snapshots` in order; it fails with [`PmuError::ScriptExhausted`]
    /// once they are used up.
    pub fn new(snapshots: impl IntoIterator<Item = Snapshot>) -> ScriptedProfile {
        ScriptedProfile {
            queue: Arc::new(Mutex::new(snapshots.into_iter().collect())),
            served: 0,
        }
    }

    /// A handle that appends snapshots from anywhere.
    pub fn feeder(&self) -> ScriptedProfileFeeder {
        ScriptedProfileFeeder {
            queue: Arc::clone(&self.queue),
        }
    }
}

impl ProfileSource for ScriptedProfile {
    fn snapshot(&mut self, out: &mut Snapshot) -> Result<(), PmuError> {
        let next = self
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        match next {
            Some(s) => {
                *out = s;
                self.served += 1;
                Ok(())
            }
            None => Err(PmuError::ScriptExhausted {
                served: self.served,
            }),
        }
    }

    fn llc_status(&self) -> Availability {
        Availability::Available
    }
}

/// Appends snapshots to a [`ScriptedProfile`].
#[derive(Clone, Debug)]
pub struct ScriptedProfileFeeder {
    queue: Arc<Mutex<VecDeque<Snapshot>>>,
}

impl ScriptedProfileFeeder {
    /// Queues one snapshot.
    pub fn push(&self, snapshot: Snapshot) {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(snapshot);
    }
}
