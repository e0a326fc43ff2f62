//! Thread shuffling (003 ch. 4), the runtime's side: measure each green thread's lock time,
//! and every monitoring interval let the affinity crate's `plan_shuffle` regroup the threads
//! with similar lock times (which contend for the same locks) onto one cache domain.
//!
//! - **Measured**: with shuffling on, the runtime's lock hook times every park of a green
//!   thread inside a lock, condition variable or barrier (`timed_lock_park`) and adds it to
//!   that thread's lock-wait total; the thread is registered for monitoring on its first such
//!   park. (Spinning before a park is not counted: the locks crate keeps per-lock and
//!   process-wide wait times, not per-thread ones, so the per-thread figure is the part the
//!   runtime sees.) A [`ShuffleConfig::lock_times`] source replaces the measurement (tests).
//! - **Rule** (003): a monitor thread (`monitor.rs`) samples every `sample_period` (200 ms); after `samples`
//!   samples (10: a 2 s interval) it computes each registered thread's lock-time fraction of the
//!   interval and calls `plan_shuffle(threads, domains, threshold)` (5 %). A plan gives each
//!   thread a cache domain; a thread whose domain changes gets a *home* worker in its new
//!   domain (the domain's workers in turn).
//! - **Applied** at the thread's next wake-up: a wake-up that names no worker goes to the home
//!   (bound there: idle workers do not steal it across domains); a lock-hot wake-up that names
//!   a worker in another domain than the home goes to the home too (shuffling wins across
//!   domains; inside a domain lock-hot placement still applies).
//! - **Visible** in [`PlacementStats`](crate::PlacementStats): rounds, decisions, swaps and the
//!   last decision's groups.
//!
//! Cache domains: the last-level caches of the topology the runtime was built with
//! ([`Builder::topology`](crate::Builder::topology)), restricted to the workers' CPUs; with no
//! cache information (or one domain) there is nothing to shuffle and no round decides.

use crate::task::extras::NO_HOME;
use crate::task::Task;
use footprint_affinity::placement::shuffle::{plan_shuffle, ShuffleThread};
use footprint_affinity::Topology;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A scripted lock-time source: the lock-time fraction (`0..=1`) of the thread with this id
/// (see [`current_thread_id`](crate::current_thread_id)) over the last interval, or `None` to
/// use the measured one.
///
/// ```
/// use footprint::runtime::{LockTimeSource, ShuffleConfig};
/// let every_thread_waits_40_percent: LockTimeSource = std::sync::Arc::new(|_id| Some(0.4));
/// let cfg = ShuffleConfig::new().lock_times(every_thread_waits_40_percent);
/// # let _ = cfg;
/// ```
pub type LockTimeSource = Arc<dyn Fn(u64) -> Option<f64> + Send + Sync>;

/// How thread shuffling runs (003 ch. 4), for [`Builder::shuffling`](crate::Builder::shuffling).
///
/// ```
/// use footprint::runtime::{Runtime, ShuffleConfig};
/// use std::time::Duration;
/// let cfg = ShuffleConfig::new(); // 003: 10 samples of 200 ms, 5 % threshold
/// assert_eq!(cfg.interval(), Duration::from_secs(2));
/// let rt = Runtime::builder().workers(2).shuffling(cfg).build().unwrap();
/// assert_eq!(rt.placement_stats().shuffle_decisions, 0);
/// ```
#[derive(Clone)]
pub struct ShuffleConfig {
    pub(crate) sample_period: Duration,
    pub(crate) samples: u32,
    threshold: f64,
    lock_times: Option<LockTimeSource>,
}

impl fmt::Debug for ShuffleConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShuffleConfig")
            .field("sample_period", &self.sample_period)
            .field("samples", &self.samples)
            .field("threshold", &self.threshold)
            .field("scripted_lock_times", &self.lock_times.is_some())
            .finish()
    }
}

impl Default for ShuffleConfig {
    fn default() -> Self {
        ShuffleConfig {
            sample_period: Duration::from_millis(200),
            samples: 10,
            threshold: footprint_affinity::placement::shuffle::DEFAULT_LOCK_TIME_THRESHOLD,
            lock_times: None,
        }
    }
}

impl ShuffleConfig {
    /// 003's rule: every 2 s (10 samples of 200 ms), regroup when the mean lock time exceeds 5 %.
    pub fn new() -> ShuffleConfig {
        ShuffleConfig::default()
    }

    /// The sampling period and the samples per decision (at least 1 ms and 1).
    pub fn periods(mut self, sample_period: Duration, samples: u32) -> ShuffleConfig {
        self.sample_period = sample_period.max(Duration::from_millis(1));
        self.samples = samples.max(1);
        self
    }

    /// The mean lock-time fraction above which a round regroups (clamped to `0..=1`; NaN: 0).
    pub fn threshold(mut self, fraction: f64) -> ShuffleConfig {
        self.threshold = if fraction.is_nan() {
            0.0
        } else {
            fraction.clamp(0.0, 1.0)
        };
        self
    }

    /// Replaces the measured lock times with `source` (scripted lock times for tests and
    /// experiments; threads it returns `None` for keep their measured figure).
    pub fn lock_times(mut self, source: LockTimeSource) -> ShuffleConfig {
        self.lock_times = Some(source);
        self
    }

    /// The monitoring interval: `sample_period × samples`.
    pub fn interval(&self) -> Duration {
        self.sample_period * self.samples
    }
}

/// A monitored thread: its control block and its lock-wait total at the interval's start.
struct Monitored {
    task: Arc<Task>,
    wait_at_start: u64,
}

/// The runtime's shuffling state (in `PlacementState`).
pub(crate) struct ShuffleState {
    pub(crate) config: ShuffleConfig,
    /// Cache domain of each worker.
    pub(crate) worker_domain: Box<[usize]>,
    domains: usize,
    /// The workers of each domain and the next one to hand out as a home.
    domain_workers: Vec<Vec<usize>>,
    next_in_domain: Vec<AtomicUsize>,
    threads: Mutex<Vec<Monitored>>,
    pub(crate) last: Mutex<Option<Vec<Vec<u64>>>>,
    pub(crate) stop: AtomicBool,
}

impl ShuffleState {
    /// The state for workers on `worker_cpu`, domains from `topology`'s last-level caches.
    pub(crate) fn new(config: ShuffleConfig, topology: &Topology, worker_cpu: &[usize]) -> Self {
        let llc = topology.last_level();
        let mut keys: Vec<Vec<usize>> = Vec::new();
        let worker_domain: Box<[usize]> = worker_cpu
            .iter()
            .map(|&cpu| {
                let key = llc
                    .and_then(|l| topology.cache_of(cpu, l))
                    .map_or_else(Vec::new, |c| c.cpus.clone());
                match keys.iter().position(|k| *k == key) {
                    Some(d) => d,
                    None => {
                        keys.push(key);
                        keys.len() - 1
                    }
                }
            })
            .collect();
        let domains = keys.len();
        let domain_workers: Vec<Vec<usize>> = (0..domains)
            .map(|d| {
                (0..worker_cpu.len())
                    .filter(|&w| worker_domain[w] == d)
                    .collect()
            })
            .collect();
        ShuffleState {
            config,
            worker_domain,
            domains,
            next_in_domain: (0..domains).map(|_| AtomicUsize::new(0)).collect(),
            domain_workers,
            threads: Mutex::new(Vec::new()),
            last: Mutex::new(None),
            stop: AtomicBool::new(false),
        }
    }

    /// Registers `t` for monitoring (once).
    pub(crate) fn register(&self, t: &Arc<Task>) {
        if !t.extras().shuffle_monitored.swap(true, Ordering::Relaxed) {
            let mut g = self.threads.lock().unwrap_or_else(|e| e.into_inner());
            g.push(Monitored {
                task: t.clone(),
                wait_at_start: t.extras().lock_wait_ns.load(Ordering::Relaxed),
            });
        }
    }

    /// Where a wake-up of `t` naming worker `hinted` (if any) goes, when shuffling gave `t` a
    /// home: the home, unless the hinted worker shares the home's domain.
    #[inline]
    pub(crate) fn redirect(&self, t: &Task, hinted: Option<usize>) -> Option<usize> {
        let home = t.extras().shuffle_home.load(Ordering::Relaxed);
        if home == NO_HOME {
            return None;
        }
        match hinted {
            Some(w) if self.worker_domain.get(w) == self.worker_domain.get(home) => None,
            _ => Some(home),
        }
    }

    /// One decision over the interval that just ended (`wall`: its length) for a runtime of
    /// `n` workers; returns the number of swaps when the threshold was exceeded.
    pub(crate) fn decide(&self, n: usize, wall: Duration) -> Option<usize> {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        threads.retain(|m| {
            let live = !m.task.has_finished();
            if !live {
                m.task
                    .extras()
                    .shuffle_monitored
                    .store(false, Ordering::Relaxed);
            }
            live
        });
        let wall_ns = wall.as_nanos().max(1) as f64;
        let records: Vec<ShuffleThread> = threads
            .iter_mut()
            .map(|m| {
                let now = m.task.extras().lock_wait_ns.load(Ordering::Relaxed);
                let measured = now.saturating_sub(m.wait_at_start) as f64 / wall_ns;
                m.wait_at_start = now;
                let id = super::thread_id(&m.task);
                let lock_time = self
                    .config
                    .lock_times
                    .as_ref()
                    .and_then(|s| s(id))
                    .unwrap_or(measured);
                let home = m.task.extras().shuffle_home.load(Ordering::Relaxed);
                let worker = if home == NO_HOME {
                    m.task.last_worker() % n
                } else {
                    home
                };
                ShuffleThread {
                    id,
                    lock_time,
                    domain: self.worker_domain[worker],
                }
            })
            .collect();
        let plan = plan_shuffle(&records, self.domains, self.config.threshold)?;
        let index: std::collections::HashMap<u64, usize> =
            records.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        for (d, group) in plan.groups.iter().enumerate() {
            for id in group {
                let i = index[id];
                let (m, r) = (&threads[i], &records[i]);
                // A thread that stays in its domain keeps its worker as its home; one that
                // changes domain gets the new domain's workers in turn. Either way it is bound
                // there (idle workers of other domains do not steal it back).
                let home = if r.domain == d {
                    let h = m.task.extras().shuffle_home.load(Ordering::Relaxed);
                    if h == NO_HOME {
                        m.task.last_worker() % n
                    } else {
                        h
                    }
                } else {
                    let ws = &self.domain_workers[d];
                    let k = self.next_in_domain[d].fetch_add(1, Ordering::Relaxed);
                    ws[k % ws.len()]
                };
                m.task.extras().shuffle_home.store(home, Ordering::Relaxed);
            }
        }
        let swaps = plan.swaps.len();
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(plan.groups);
        Some(swaps)
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
