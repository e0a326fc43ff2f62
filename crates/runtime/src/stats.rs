//! What a user can read about what the scheduler did: per green thread ([`ThreadStats`], from
//! [`JoinHandle::stats`](crate::JoinHandle::stats) or [`current_stats`]) and per runtime
//! ([`RuntimeStats`] with one [`WorkerStats`] per worker, from
//! [`Runtime::stats`](crate::Runtime::stats)). Plain structs; `Display` prints a table.

use crate::accounting::{ThreadAccount, WorkerAccount};
use crate::clock;
use crate::context::current_green_on_worker;
use crate::loops::LoopStats;
use crate::registry::Shared;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What one green thread did, as far as the runtime measured it (see
/// [`Counters`](crate::Counters)): zero everywhere when counters are off.
///
/// Figures are exact once the thread has finished (at
/// [`JoinHandle::is_finished`](crate::JoinHandle::is_finished)); while it runs elsewhere they
/// may lag by one switch. A thread that its joiner ran inline (spawned, then joined before any
/// worker started it) never ran on a worker of its own: its time is counted in the joiner's.
///
/// ```
/// use footprint::{Counters, Runtime};
/// let rt = Runtime::builder().workers(1).counters(Counters::Time).build()?;
/// let h = rt.spawn(|| {
///     footprint::yield_now();
///     footprint::yield_now();
///     footprint::current_stats().expect("on a green thread")
/// });
/// let s = h.join().unwrap();
/// assert_eq!(s.runs, 3); // the first start and one resume per yield
/// println!("{s}");
/// # Ok::<(), footprint::Error>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThreadStats {
    /// Time spent running on workers (for [`current_stats`], the current run so far included).
    pub run_time: Duration,
    /// Times a worker started or resumed it.
    pub runs: u64,
    /// Runs on another worker than the run before.
    pub migrations: u64,
    /// Runs that began with the thread taken by a steal (from another worker's start deque or
    /// inbox).
    pub steals: u64,
    /// Time from stopping on a park to the next resume (the wait for the wake-up and then for
    /// a worker to take it).
    pub parked_time: Duration,
    /// Cache misses during its runs, when a counter source counted them.
    pub misses: Option<u64>,
    /// Runs whose misses were counted.
    pub counted_runs: u64,
    /// Time it waited for `footprint_locks` locks (contended acquisitions, spinning and parked;
    /// counted whatever the counter setting, through the locks' per-thread wait sink).
    pub lock_wait: Duration,
}

impl ThreadStats {
    /// The record's figures, plus `running` ticks of a run in progress.
    pub(crate) fn from_account(a: &ThreadAccount, running: u64) -> ThreadStats {
        let ld = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let counted_runs = ld(&a.counted_runs);
        ThreadStats {
            run_time: clock::to_duration(ld(&a.run_ticks).wrapping_add(running)),
            runs: ld(&a.runs),
            migrations: ld(&a.migrations),
            steals: ld(&a.steals),
            parked_time: clock::to_duration(ld(&a.parked_ticks)),
            misses: (counted_runs > 0).then(|| ld(&a.misses)),
            counted_runs,
            lock_wait: Duration::from_nanos(ld(&a.lock_wait_ns)),
        }
    }
}

/// The calling green thread's figures so far, the current run included (`None` outside a green
/// thread). See [`ThreadStats`].
///
/// ```
/// use footprint::{Counters, Runtime};
/// let rt = Runtime::builder().workers(1).counters(Counters::Time).build()?;
/// let runs = rt.block_on(|| footprint::current_stats().map(|s| s.runs));
/// assert_eq!(runs, Some(1));
/// assert!(footprint::current_stats().is_none()); // not on a green thread
/// # Ok::<(), footprint::Error>(())
/// ```
pub fn current_stats() -> Option<ThreadStats> {
    let (t, w) = current_green_on_worker()?;
    // SAFETY: both are the calling thread's own: the running green thread and its worker.
    unsafe {
        Some(ThreadStats::from_account(
            (*t).account(),
            (*w).running_ticks(),
        ))
    }
}

impl fmt::Display for ThreadStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.runs == 0 {
            return writeln!(
                f,
                "green thread: not measured (counters off, or it never ran on a worker); lock wait {}",
                fmt_duration(self.lock_wait)
            );
        }
        writeln!(f, "green thread")?;
        writeln!(f, "  runs         {:>12}", self.runs)?;
        writeln!(f, "  run time     {:>12}", fmt_duration(self.run_time))?;
        writeln!(f, "  migrations   {:>12}", self.migrations)?;
        writeln!(f, "  steals       {:>12}", self.steals)?;
        writeln!(f, "  parked       {:>12}", fmt_duration(self.parked_time))?;
        match self.misses {
            Some(m) => writeln!(
                f,
                "  misses       {m:>12} ({} of {} runs counted)",
                self.counted_runs, self.runs
            )?,
            None => writeln!(f, "  misses       {:>12}", "not counted")?,
        }
        writeln!(f, "  lock wait    {:>12}", fmt_duration(self.lock_wait))
    }
}

/// What one worker did.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerStats {
    /// The CPU it is pinned to.
    pub cpu: Option<usize>,
    /// Green-thread runs (starts and resumes) on it.
    pub runs: u64,
    /// Green threads that parked on it.
    pub parks: u64,
    /// Successful steals by tier of its steal order, nearest first (same core, shared L2,
    /// shared L3 or NUMA node, the rest: see `Topology::steal_order`).
    pub steals_by_tier: Vec<u64>,
    /// Jobs taken from the runtime's shared injector (work spawned from outside).
    pub injector_takes: u64,
    /// Time spent looking for work with nothing local (spinning and asleep).
    pub idle_time: Duration,
    /// Times it went to sleep on its futex.
    pub sleeps: u64,
    /// Of those, sleeps that ran out (the idle protocol's safety net, `FOOTPRINT_IDLE_SAFETY_NET`)
    /// instead of being woken: an idle runtime's workers look again now and then.
    pub expired_sleeps: u64,
    /// Of the expired sleeps, those after which the worker's first look (one pass over the
    /// queues) found work while no worker searched and every other one waited on its futex
    /// past its last search: a wake-up the protocol lost and the safety net made up for (see
    /// [`RuntimeStats::expired_sleeps_with_work`]).
    pub expired_sleeps_with_work: u64,
    /// Green threads woken elsewhere and handed to it through its inbox.
    pub inbox_wakeups: u64,
    /// Time green threads ran on it (counters on; zero when off).
    pub busy_time: Duration,
    /// Cache misses counted during runs on it.
    pub misses: u64,
    /// Counter-source failures (it then accounts time only).
    pub counter_failures: u64,
}

impl WorkerStats {
    pub(crate) fn from_account(a: &WorkerAccount, cpu: Option<usize>, inbox: u64) -> WorkerStats {
        let ld = |c: &AtomicU64| c.load(Ordering::Relaxed);
        WorkerStats {
            cpu,
            runs: ld(&a.runs),
            parks: ld(&a.parks),
            steals_by_tier: a.steals_by_tier.iter().map(ld).collect(),
            injector_takes: ld(&a.injector_takes),
            idle_time: clock::to_duration(ld(&a.idle_ticks)),
            sleeps: ld(&a.sleeps),
            expired_sleeps: ld(&a.expired_sleeps),
            expired_sleeps_with_work: ld(&a.expired_with_work),
            inbox_wakeups: inbox,
            busy_time: clock::to_duration(ld(&a.busy_ticks)),
            misses: ld(&a.misses),
            counter_failures: ld(&a.counter_failures),
        }
    }

    /// Steals over all tiers.
    pub fn steals(&self) -> u64 {
        self.steals_by_tier.iter().sum()
    }

    /// What this worker did since `earlier` (a snapshot of the same worker taken before):
    /// every count and time minus the earlier one (never below zero); `cpu` as now.
    pub fn since(&self, earlier: &WorkerStats) -> WorkerStats {
        WorkerStats {
            cpu: self.cpu,
            runs: self.runs.saturating_sub(earlier.runs),
            parks: self.parks.saturating_sub(earlier.parks),
            steals_by_tier: self
                .steals_by_tier
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    n.saturating_sub(earlier.steals_by_tier.get(i).copied().unwrap_or(0))
                })
                .collect(),
            injector_takes: self.injector_takes.saturating_sub(earlier.injector_takes),
            idle_time: self.idle_time.saturating_sub(earlier.idle_time),
            sleeps: self.sleeps.saturating_sub(earlier.sleeps),
            expired_sleeps: self.expired_sleeps.saturating_sub(earlier.expired_sleeps),
            expired_sleeps_with_work: self
                .expired_sleeps_with_work
                .saturating_sub(earlier.expired_sleeps_with_work),
            inbox_wakeups: self.inbox_wakeups.saturating_sub(earlier.inbox_wakeups),
            busy_time: self.busy_time.saturating_sub(earlier.busy_time),
            misses: self.misses.saturating_sub(earlier.misses),
            counter_failures: self
                .counter_failures
                .saturating_sub(earlier.counter_failures),
        }
    }
}

/// Counters of a runtime (see [`Runtime::stats`](crate::Runtime::stats)); `Display` prints a
/// table with one row per worker.
///
/// ```
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// rt.block_on(|| footprint::spawn(|| 1).join().unwrap());
/// let s = rt.stats();
/// assert_eq!(s.workers.len(), 2);
/// assert!(s.workers.iter().map(|w| w.runs).sum::<u64>() >= 1);
/// println!("{s}");
/// # Ok::<(), footprint::Error>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuntimeStats {
    /// Green threads created so far (including stolen `join` halves that needed one).
    pub spawned: u64,
    /// Green threads finished so far.
    pub finished: u64,
    /// Successful steals (all workers, all tiers): the same figure as
    /// [`steals()`](RuntimeStats::steals), kept as a field for existing code.
    pub steals: u64,
    /// Stacks mapped fresh (not from a pool).
    pub stacks_mapped: u64,
    /// Stack overflows caught and reported to joiners.
    pub overflows: u64,
    /// Green threads that could not get a stack when they first ran (the live-stack cap,
    /// memory, memory mappings): each failed its `JoinHandle`; the first was said on stderr.
    pub stack_failures: u64,
    /// Runs of one green thread that the blocking detector reported
    /// ([`Builder::blocking_warning`](crate::Builder::blocking_warning)).
    pub blocking_warnings: u64,
    /// Hang reports the watchdog printed ([`Builder::watchdog`](crate::Builder::watchdog)).
    pub hang_reports: u64,
    /// What is measured at each switch, in words (see [`Counters`](crate::Counters)).
    pub counters: String,
    /// The first counter-source failure, if any (the workers then account time only).
    pub counter_error: Option<String>,
    /// One entry per worker.
    pub workers: Vec<WorkerStats>,
    // adaptive: what the worker-count controller decided.
    /// The adaptive controller's state and last decisions (`None` unless built with
    /// [`Builder::adaptive_workers`](crate::Builder::adaptive_workers)).
    pub adaptive: Option<crate::AdaptiveStats>,
    /// What `footprint::par` loops with an `Affinity` schedule did on this runtime.
    pub loops: LoopStats,
    /// Thread Tranquilizer's decisions (`None` unless built with
    /// [`Builder::tranquilizer`](crate::Builder::tranquilizer)).
    pub tranquilizer: Option<crate::tranquilizer::TranquilizerStats>,
    /// ADAPT co-scheduling: this runtime's share and decisions (`None` unless built with
    /// [`Builder::co_schedule`](crate::Builder::co_schedule)).
    pub node: Option<crate::node::NodeStats>,
    /// Memory-bandwidth control: the traffic source in force (hardware, resctrl, declared, or
    /// none and why), reservations, the throttle and its delays.
    pub bandwidth: crate::bandwidth::stats::BandwidthStats,
}

impl RuntimeStats {
    /// Successful steals over all workers and tiers (as [`WorkerStats::steals`] per worker).
    pub fn steals(&self) -> u64 {
        self.workers.iter().map(WorkerStats::steals).sum()
    }

    /// What the runtime did since `earlier`, a snapshot of the same runtime taken before:
    /// every count and time minus the earlier one (never below zero), per worker too; the
    /// counter description, the counter error and the adaptive state are the later ones.
    ///
    /// ```
    /// let rt = footprint::Runtime::builder().workers(2).build()?;
    /// rt.block_on(|| footprint::spawn(|| 1).join().unwrap());
    /// let before = rt.stats();
    /// rt.block_on(|| {
    ///     let hs: Vec<_> = (0..10).map(|i| footprint::spawn(move || i)).collect();
    ///     hs.into_iter().map(|h| h.join().unwrap()).sum::<i32>()
    /// });
    /// let delta = rt.stats().since(&before);
    /// assert_eq!(delta.spawned, 11); // ten threads and `block_on`'s own
    /// assert_eq!(delta.finished, delta.spawned);
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn since(&self, earlier: &RuntimeStats) -> RuntimeStats {
        RuntimeStats {
            spawned: self.spawned.saturating_sub(earlier.spawned),
            finished: self.finished.saturating_sub(earlier.finished),
            steals: self.steals.saturating_sub(earlier.steals),
            stacks_mapped: self.stacks_mapped.saturating_sub(earlier.stacks_mapped),
            overflows: self.overflows.saturating_sub(earlier.overflows),
            stack_failures: self.stack_failures.saturating_sub(earlier.stack_failures),
            blocking_warnings: self
                .blocking_warnings
                .saturating_sub(earlier.blocking_warnings),
            hang_reports: self.hang_reports.saturating_sub(earlier.hang_reports),
            counters: self.counters.clone(),
            counter_error: self.counter_error.clone(),
            workers: self
                .workers
                .iter()
                .enumerate()
                .map(|(i, w)| match earlier.workers.get(i) {
                    Some(e) => w.since(e),
                    None => w.clone(),
                })
                .collect(),
            adaptive: self.adaptive.clone(),
            loops: self.loops.since(&earlier.loops),
            tranquilizer: self.tranquilizer.clone(),
            node: self.node.clone(),
            bandwidth: self.bandwidth.clone(),
        }
    }

    /// Sleeps, over all workers, that ran out (the idle protocol's safety net) after which the
    /// worker's first look found work that nobody else would have run: no worker searched and
    /// every other one waited on its futex past its last search. Those are wake-ups the
    /// protocol lost. Zero unless the idle protocol has a bug (or a publisher outside the
    /// workers was preempted between its push and its wake-up just as the timer fired); tests
    /// and the scaling suite assert it. Work that a searching worker, a woken one or one in
    /// its last search would have taken is not counted, though the expired sleeper took it.
    ///
    /// ```
    /// let rt = footprint::Runtime::builder().workers(2).build()?;
    /// rt.block_on(|| footprint::join(|| 1, || 2));
    /// assert_eq!(rt.stats().expired_sleeps_with_work(), 0);
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn expired_sleeps_with_work(&self) -> u64 {
        self.workers
            .iter()
            .map(|w| w.expired_sleeps_with_work)
            .sum()
    }

    pub(crate) fn collect(sh: &Shared) -> RuntimeStats {
        let (spawned, finished) = sh.external_counts();
        let mut s = RuntimeStats {
            spawned,
            finished,
            stacks_mapped: sh.stacks_mapped(),
            overflows: sh.overflows(),
            stack_failures: sh.stack_limits().failures.load(Ordering::Relaxed),
            blocking_warnings: sh.watch().blocking_warnings.load(Ordering::Relaxed),
            hang_reports: sh.watch().hang_reports.load(Ordering::Relaxed),
            counters: sh.counters().describe.clone(),
            counter_error: sh.counter_error(),
            ..RuntimeStats::default()
        };
        for w in sh.workers().iter() {
            let (spawned, finished) = w.counts();
            s.spawned += spawned;
            s.finished += finished;
            let ws = WorkerStats::from_account(w.account(), w.cpu(), w.inbox().woken());
            s.steals += ws.steals();
            s.workers.push(ws);
        }
        s.loops = sh.loops().get();
        s.bandwidth = sh.bandwidth().stats(&sh.counters().describe);
        s.adaptive = sh
            .adaptive()
            .map(crate::adaptive::state::AdaptiveState::stats);
        s.tranquilizer = sh
            .tranquilizer()
            .map(crate::tranquilizer::daemon::TranquilizerState::stats);
        s.node = sh.node().map(crate::node::NodeState::stats);
        s
    }
}

impl fmt::Display for RuntimeStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "runtime: {} workers, counters: {}",
            self.workers.len(),
            self.counters
        )?;
        writeln!(
            f,
            "  green threads spawned {}, finished {}; steals {}; stacks mapped {}; overflows {}",
            self.spawned, self.finished, self.steals, self.stacks_mapped, self.overflows
        )?;
        if self.stack_failures + self.blocking_warnings + self.hang_reports > 0 {
            writeln!(
                f,
                "  stack failures {}; blocking warnings {}; hang reports {}",
                self.stack_failures, self.blocking_warnings, self.hang_reports
            )?;
        }
        if let Some(e) = &self.counter_error {
            writeln!(f, "  counter source failed: {e}")?;
        }
        writeln!(
            f,
            "  {:>6} {:>4} {:>10} {:>8} {:>16} {:>8} {:>10} {:>13} {:>8} {:>10} {:>10} {:>5}",
            "worker",
            "cpu",
            "runs",
            "parks",
            "steals by tier",
            "injector",
            "idle",
            "sleeps (exp/w)",
            "inbox",
            "busy",
            "misses",
            "fail"
        )?;
        for (i, w) in self.workers.iter().enumerate() {
            let tiers: Vec<String> = w.steals_by_tier.iter().map(u64::to_string).collect();
            writeln!(
                f,
                "  {:>6} {:>4} {:>10} {:>8} {:>16} {:>8} {:>10} {:>13} {:>8} {:>10} {:>10} {:>5}",
                i,
                w.cpu.map_or("-".to_string(), |c| c.to_string()),
                w.runs,
                w.parks,
                if tiers.is_empty() {
                    "-".to_string()
                } else {
                    tiers.join("/")
                },
                w.injector_takes,
                fmt_duration(w.idle_time),
                format!(
                    "{} ({}/{})",
                    w.sleeps, w.expired_sleeps, w.expired_sleeps_with_work
                ),
                w.inbox_wakeups,
                fmt_duration(w.busy_time),
                w.misses,
                w.counter_failures
            )?;
        }
        if let Some(a) = &self.adaptive {
            write!(f, "  {a}")?;
        }
        if let Some(t) = &self.tranquilizer {
            write!(f, "  {t}")?;
        }
        if let Some(n) = &self.node {
            write!(f, "  {n}")?;
        }
        write!(f, "  {}", self.bandwidth)
    }
}

/// A duration with three significant digits and a unit.
fn fmt_duration(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.1} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_print_every_figure() {
        let t = ThreadStats {
            runs: 3,
            misses: Some(42),
            counted_runs: 2,
            run_time: Duration::from_micros(1500),
            ..ThreadStats::default()
        };
        let s = t.to_string();
        assert!(s.contains("runs") && s.contains(" 3\n"), "{s}");
        assert!(
            s.contains("1.5 ms") && s.contains("42 (2 of 3 runs counted)"),
            "{s}"
        );
        assert!(ThreadStats::default().to_string().contains("not measured"));
        let r = RuntimeStats {
            counters: "time only".into(),
            workers: vec![WorkerStats {
                cpu: Some(1),
                runs: 7,
                steals_by_tier: vec![2, 5],
                ..WorkerStats::default()
            }],
            ..RuntimeStats::default()
        };
        let s = r.to_string();
        assert!(
            s.contains("counters: time only") && s.contains("2/5"),
            "{s}"
        );
        assert_eq!(r.workers[0].steals(), 7);
    }
}
