//! The run-time profile of 003 (Pusukuri): CPU utilisation, voluntary and involuntary
//! context-switch rates, migration rate, run-queue delay, LLC miss ratio and lock time, per
//! process and per thread, sampled at a fixed interval (200 ms) and summarised over a decision
//! window (10 samples: mean and standard deviation, as Thread Tranquilizer uses them).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::caps::Availability;
use crate::error::PmuError;
use crate::profile::{ProcProfileSource, ProfileSource, Snapshot, TaskCounts, ThreadSelection};
use crate::sys::{self, Tid};
use crate::ticker::{SamplerOverhead, Ticker};

/// Where the sampler reads the process-wide lock-wait time: cumulative nanoseconds that
/// threads have spent waiting for locks (the locks crate keeps this counter; the facade wires
/// it). Any `Fn() -> u64 + Send` closure is one.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use footprint_pmu::LockTimeSource;
/// let waited = Arc::new(AtomicU64::new(0));
/// let w = Arc::clone(&waited);
/// let source: Box<dyn LockTimeSource> = Box::new(move || w.load(Ordering::Relaxed));
/// waited.fetch_add(1_000, Ordering::Relaxed);
/// assert_eq!(source.lock_wait_ns(), 1_000);
/// ```
pub trait LockTimeSource: Send {
    /// Cumulative lock-wait nanoseconds of the whole process (monotonic).
    fn lock_wait_ns(&self) -> u64;
}

impl<F: Fn() -> u64 + Send> LockTimeSource for F {
    fn lock_wait_ns(&self) -> u64 {
        self()
    }
}

/// Sampler settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplerConfig {
    /// Time between samples (default 200 ms, as 003's thread shuffling uses).
    pub interval: Duration,
    /// Intervals per decision window (default 10: a 2 s window at 200 ms).
    pub window: usize,
    /// Intervals kept in the history (default 50; at least `window`).
    pub history: usize,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            interval: Duration::from_millis(200),
            window: 10,
            history: 50,
        }
    }
}

impl SamplerConfig {
    fn validate(&self) -> Result<(), PmuError> {
        if self.interval < Duration::from_millis(1) {
            return Err(PmuError::InvalidConfig(format!(
                "sampler interval {:?} is below 1 ms; use 100-200 ms (each sample reads /proc \
                 for every thread)",
                self.interval
            )));
        }
        if self.window == 0 {
            return Err(PmuError::InvalidConfig(
                "decision window of 0 samples; use at least 1 (003 uses 10)".into(),
            ));
        }
        if self.history < self.window {
            return Err(PmuError::InvalidConfig(format!(
                "history of {} intervals cannot hold a window of {}; make history >= window",
                self.history, self.window
            )));
        }
        Ok(())
    }
}

/// Rates of one task (the process or one thread) over one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    /// CPUs' worth of CPU time used: Δcpu / Δwall (1.0 = one core busy all the time).
    pub cpu_utilisation: f64,
    /// Voluntary context switches per second.
    pub voluntary_switches_per_s: f64,
    /// Involuntary context switches (preemptions) per second.
    pub involuntary_switches_per_s: f64,
    /// Migrations between CPUs per second, where known.
    pub migrations_per_s: Option<f64>,
    /// Δrun-queue delay / Δwall: for a thread, the fraction of the interval it was runnable
    /// but waiting for a CPU (003's latency, LAT); for the process, the sum over its threads
    /// (mean number of threads waiting for a CPU).
    pub run_delay_share: Option<f64>,
    /// Δ LLC misses / Δ LLC references, where hardware counters exist and there were
    /// references.
    pub llc_miss_ratio: Option<f64>,
}

/// One thread's rates over one interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThreadRates {
    /// Kernel thread id.
    pub tid: Tid,
    /// Its rates.
    pub rates: Rates,
}

/// The profile of one interval between two samples.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalProfile {
    /// 0 for the first interval, then 1, 2, ...
    pub seq: u64,
    /// Monotonic start of the interval, ns.
    pub start_ns: u64,
    /// Monotonic end of the interval, ns.
    pub end_ns: u64,
    /// CPUs the process may run on.
    pub cpus: usize,
    /// Whole-process rates. CPU utilisation and switch rates come from the process counters
    /// (every thread, live or exited, the sampler's included); where the source gives no
    /// process value (migrations, run delay and LLC with [`ProcProfileSource`]), the sum over
    /// the threads sampled at both ends of the interval.
    pub process: Rates,
    /// Rates of the threads present at both ends of the interval, by tid.
    pub threads: Vec<ThreadRates>,
    /// Threads present at the end of the interval.
    pub live_threads: usize,
    /// Δ lock-wait ns / Δwall: mean number of threads waiting for a lock. `None` without a
    /// lock-time source.
    pub lock_waiting: Option<f64>,
    /// 003's lock time: the share of the threads' elapsed time spent waiting for locks,
    /// `lock_waiting / live_threads`. `None` without a lock-time source or without threads.
    pub lock_time_fraction: Option<f64>,
}

impl IntervalProfile {
    /// Length of the interval.
    pub fn duration(&self) -> Duration {
        Duration::from_nanos(self.end_ns - self.start_ns)
    }

    /// Process CPU utilisation as a fraction of the CPUs it may use (0..=1).
    pub fn cpu_fraction(&self) -> f64 {
        self.process.cpu_utilisation / self.cpus.max(1) as f64
    }

    /// The rates of thread `tid`, if it was sampled over this whole interval.
    pub fn thread(&self, tid: Tid) -> Option<&Rates> {
        self.threads
            .binary_search_by_key(&tid, |t| t.tid)
            .ok()
            .map(|i| &self.threads[i].rates)
    }
}

/// Mean, standard deviation and range of one quantity over a window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Population standard deviation.
    pub std_dev: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Stat {
    /// Statistics of `values`; `None` when empty.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Stat> {
        let v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() {
            return None;
        }
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Stat {
            n,
            mean: mean.clamp(min, max),
            std_dev: var.sqrt(),
            min,
            max,
        })
    }
}

/// Process-level statistics over the last `window` intervals: the profile a policy decides on
/// (003: Thread Reinforcer compares means between runs; Thread Tranquilizer compares mean and
/// standard deviation of miss ratio and involuntary-switch rate; Thread Shuffling triggers on
/// lock time above 5 %).
#[derive(Clone, Debug, PartialEq)]
pub struct WindowSummary {
    /// Intervals summarised.
    pub intervals: usize,
    /// Sequence number of the last interval in the window.
    pub last_seq: u64,
    /// Wall time covered.
    pub span: Duration,
    /// Process CPU utilisation (CPUs' worth).
    pub cpu_utilisation: Stat,
    /// Voluntary switches per second.
    pub voluntary_switches_per_s: Stat,
    /// Involuntary switches per second.
    pub involuntary_switches_per_s: Stat,
    /// Migrations per second, where known.
    pub migrations_per_s: Option<Stat>,
    /// Process run-delay share, where known.
    pub run_delay_share: Option<Stat>,
    /// LLC miss ratio, where counted.
    pub llc_miss_ratio: Option<Stat>,
    /// Lock-time fraction, where a lock-time source is wired.
    pub lock_time_fraction: Option<Stat>,
}

impl WindowSummary {
    fn of(intervals: &[&IntervalProfile]) -> Option<WindowSummary> {
        let first = intervals.first()?;
        let last = intervals.last()?;
        let proc_stat = |f: fn(&Rates) -> f64| Stat::of(intervals.iter().map(|p| f(&p.process)));
        let opt_stat = |f: fn(&IntervalProfile) -> Option<f64>| {
            Stat::of(intervals.iter().filter_map(|p| f(p)))
        };
        Some(WindowSummary {
            intervals: intervals.len(),
            last_seq: last.seq,
            span: Duration::from_nanos(last.end_ns - first.start_ns),
            cpu_utilisation: proc_stat(|r| r.cpu_utilisation)?,
            voluntary_switches_per_s: proc_stat(|r| r.voluntary_switches_per_s)?,
            involuntary_switches_per_s: proc_stat(|r| r.involuntary_switches_per_s)?,
            migrations_per_s: opt_stat(|p| p.process.migrations_per_s),
            run_delay_share: opt_stat(|p| p.process.run_delay_share),
            llc_miss_ratio: opt_stat(|p| p.process.llc_miss_ratio),
            lock_time_fraction: opt_stat(|p| p.lock_time_fraction),
        })
    }
}

impl fmt::Display for WindowSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |x: &Stat| format!("{:.3} ± {:.3}", x.mean, x.std_dev);
        let o = |x: &Option<Stat>| x.as_ref().map_or("n/a".to_string(), s);
        write!(
            f,
            "{} intervals over {:.2?}: cpu {} CPUs, voluntary {} /s, involuntary {} /s, \
             migrations {} /s, run delay {}, LLC miss ratio {}, lock time {}",
            self.intervals,
            self.span,
            s(&self.cpu_utilisation),
            s(&self.voluntary_switches_per_s),
            s(&self.involuntary_switches_per_s),
            o(&self.migrations_per_s),
            o(&self.run_delay_share),
            o(&self.llc_miss_ratio),
            o(&self.lock_time_fraction),
        )
    }
}

fn delta(cur: u64, prev: u64) -> Option<u64> {
    cur.checked_sub(prev)
}

fn opt_delta(cur: Option<u64>, prev: Option<u64>) -> Option<u64> {
    delta(cur?, prev?)
}

fn ratio(misses: Option<u64>, refs: Option<u64>) -> Option<f64> {
    match (misses, refs) {
        (Some(m), Some(r)) if r > 0 => Some(m as f64 / r as f64),
        _ => None,
    }
}

/// Rates from two cumulative counts of one task; `None` if any count went backwards (a
/// reused tid, or a broken source).
fn task_rates(cur: &TaskCounts, prev: &TaskCounts, wall_ns: u64) -> Option<Rates> {
    let secs = wall_ns as f64 / 1e9;
    let cpu = delta(cur.cpu_ns, prev.cpu_ns)?;
    let vol = delta(cur.voluntary_switches, prev.voluntary_switches)?;
    let invol = delta(cur.involuntary_switches, prev.involuntary_switches)?;
    Some(Rates {
        cpu_utilisation: cpu as f64 / wall_ns as f64,
        voluntary_switches_per_s: vol as f64 / secs,
        involuntary_switches_per_s: invol as f64 / secs,
        migrations_per_s: opt_delta(cur.migrations, prev.migrations).map(|m| m as f64 / secs),
        run_delay_share: opt_delta(cur.run_delay_ns, prev.run_delay_ns)
            .map(|d| d as f64 / wall_ns as f64),
        llc_miss_ratio: ratio(
            opt_delta(cur.llc_misses, prev.llc_misses),
            opt_delta(cur.llc_references, prev.llc_references),
        ),
    })
}

/// Sums of per-thread deltas, for process fields the source left `None`.
#[derive(Default)]
struct ThreadSums {
    migrations: Option<u64>,
    run_delay: Option<u64>,
    llc_misses: Option<u64>,
    llc_refs: Option<u64>,
}

fn add(acc: &mut Option<u64>, x: Option<u64>) {
    if let Some(x) = x {
        *acc = Some(acc.unwrap_or(0) + x);
    }
}

/// A callback run with each completed decision window.
type WindowCallback = Box<dyn FnMut(&WindowSummary) + Send>;

/// The sampler: takes snapshots from a [`ProfileSource`] and turns each pair into an
/// [`IntervalProfile`]. Driven explicitly with [`sample_now`](ProfileSampler::sample_now)
/// (deterministic tests, or a caller with its own clock), or on its own thread with
/// [`start`](ProfileSampler::start).
///
/// ```
/// use footprint_pmu::{ProfileSampler, SamplerConfig, ScriptedProfile, Snapshot, TaskCounts};
/// let snap = |t_ms: u64, cpu_ms: u64| Snapshot {
///     at_ns: t_ms * 1_000_000,
///     cpus: 2,
///     process: TaskCounts { cpu_ns: cpu_ms * 1_000_000, ..TaskCounts::default() },
///     threads: vec![],
/// };
/// let source = ScriptedProfile::new([snap(0, 0), snap(200, 300)]);
/// let mut sampler = ProfileSampler::new(SamplerConfig::default(), source).unwrap();
/// assert!(sampler.sample_now().unwrap().is_none()); // the first snapshot is the baseline
/// let p = sampler.sample_now().unwrap().unwrap();
/// assert_eq!(p.process.cpu_utilisation, 1.5); // 300 ms of CPU in 200 ms
/// ```
pub struct ProfileSampler {
    config: SamplerConfig,
    source: Box<dyn ProfileSource>,
    lock_time: Option<Box<dyn LockTimeSource>>,
    prev: Option<(Snapshot, Option<u64>)>,
    cur: Snapshot,
    history: VecDeque<IntervalProfile>,
    seq: u64,
    since_window: usize,
    on_window: Vec<WindowCallback>,
    prev_index: HashMap<Tid, usize>,
}

impl fmt::Debug for ProfileSampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProfileSampler")
            .field("config", &self.config)
            .field("intervals", &self.seq)
            .field("lock_time", &self.lock_time.is_some())
            .finish()
    }
}

impl ProfileSampler {
    /// A sampler over `source`. Fails on a nonsensical config.
    pub fn new(
        config: SamplerConfig,
        source: impl ProfileSource + 'static,
    ) -> Result<ProfileSampler, PmuError> {
        config.validate()?;
        Ok(ProfileSampler {
            history: VecDeque::with_capacity(config.history),
            config,
            source: Box::new(source),
            lock_time: None,
            prev: None,
            cur: Snapshot::default(),
            seq: 0,
            since_window: 0,
            on_window: Vec::new(),
            prev_index: HashMap::new(),
        })
    }

    /// A sampler of this process through `/proc` and `getrusage` ([`ProcProfileSource`]).
    pub fn procfs(
        config: SamplerConfig,
        threads: ThreadSelection,
    ) -> Result<ProfileSampler, PmuError> {
        ProfileSampler::new(config, ProcProfileSource::new(threads))
    }

    /// Wires the process-wide lock-wait counter (cumulative ns), e.g. from the locks crate.
    pub fn with_lock_time(mut self, source: impl LockTimeSource + 'static) -> ProfileSampler {
        self.lock_time = Some(Box::new(source));
        self
    }

    /// Sets (or replaces) the lock-wait counter on an existing sampler. The next interval has
    /// no lock time (it needs two readings of the same counter).
    pub fn set_lock_time(&mut self, source: Box<dyn LockTimeSource>) {
        self.lock_time = Some(source);
        if let Some((_, prev_lock)) = self.prev.as_mut() {
            *prev_lock = None;
        }
    }

    /// Calls `f` with the window summary each time `window` new intervals are complete (every
    /// 2 s by default), on the sampling thread. `f` must not call back into the
    /// [`BackgroundSampler`] that runs it (it holds the sampler), and should not panic: a
    /// panic ends the background thread (reported by the panic hook; later intervals stop).
    pub fn on_window(mut self, f: impl FnMut(&WindowSummary) + Send + 'static) -> ProfileSampler {
        self.on_window.push(Box::new(f));
        self
    }

    /// The configuration.
    pub fn config(&self) -> &SamplerConfig {
        &self.config
    }

    /// LLC counting status of the source.
    pub fn llc_status(&self) -> Availability {
        self.source.llc_status()
    }

    /// Takes a snapshot now. Returns the profile of the interval since the previous snapshot,
    /// or `None` for the first one (the baseline) and for a snapshot not later than the
    /// previous one (ignored).
    pub fn sample_now(&mut self) -> Result<Option<IntervalProfile>, PmuError> {
        self.source.snapshot(&mut self.cur)?;
        let lock = self.lock_time.as_ref().map(|l| l.lock_wait_ns());
        self.cur.threads.sort_unstable_by_key(|t| t.tid);
        let Some((prev, prev_lock)) = self.prev.as_mut() else {
            self.prev = Some((std::mem::take(&mut self.cur), lock));
            return Ok(None);
        };
        if self.cur.at_ns <= prev.at_ns {
            return Ok(None);
        }
        let wall = self.cur.at_ns - prev.at_ns;
        self.prev_index.clear();
        self.prev_index
            .extend(prev.threads.iter().enumerate().map(|(i, t)| (t.tid, i)));
        let mut sums = ThreadSums::default();
        let mut threads = Vec::with_capacity(self.cur.threads.len());
        for t in &self.cur.threads {
            let Some(&i) = self.prev_index.get(&t.tid) else {
                continue;
            };
            let p = &prev.threads[i];
            if let Some(rates) = task_rates(t, p, wall) {
                add(&mut sums.migrations, opt_delta(t.migrations, p.migrations));
                add(
                    &mut sums.run_delay,
                    opt_delta(t.run_delay_ns, p.run_delay_ns),
                );
                add(&mut sums.llc_misses, opt_delta(t.llc_misses, p.llc_misses));
                add(
                    &mut sums.llc_refs,
                    opt_delta(t.llc_references, p.llc_references),
                );
                threads.push(ThreadRates { tid: t.tid, rates });
            }
        }
        let mut process = task_rates(&self.cur.process, &prev.process, wall).unwrap_or_default();
        let secs = wall as f64 / 1e9;
        if process.migrations_per_s.is_none() {
            process.migrations_per_s = sums.migrations.map(|m| m as f64 / secs);
        }
        if process.run_delay_share.is_none() {
            process.run_delay_share = sums.run_delay.map(|d| d as f64 / wall as f64);
        }
        if process.llc_miss_ratio.is_none() {
            process.llc_miss_ratio = ratio(sums.llc_misses, sums.llc_refs);
        }
        let live = self.cur.threads.len();
        let lock_waiting = match (lock, *prev_lock) {
            (Some(c), Some(p)) => delta(c, p).map(|d| d as f64 / wall as f64),
            _ => None,
        };
        let profile = IntervalProfile {
            seq: self.seq,
            start_ns: prev.at_ns,
            end_ns: self.cur.at_ns,
            cpus: self.cur.cpus,
            process,
            threads,
            live_threads: live,
            lock_waiting,
            lock_time_fraction: lock_waiting.filter(|_| live > 0).map(|w| w / live as f64),
        };
        std::mem::swap(prev, &mut self.cur);
        *prev_lock = lock;
        self.seq += 1;
        if self.history.len() == self.config.history {
            self.history.pop_front();
        }
        self.history.push_back(profile.clone());
        self.since_window += 1;
        if self.since_window >= self.config.window {
            self.since_window = 0;
            if !self.on_window.is_empty() {
                if let Some(summary) = self.window_summary() {
                    for f in &mut self.on_window {
                        f(&summary);
                    }
                }
            }
        }
        Ok(Some(profile))
    }

    /// The latest interval.
    pub fn latest(&self) -> Option<&IntervalProfile> {
        self.history.back()
    }

    /// The kept intervals, oldest first.
    pub fn history(&self) -> impl ExactSizeIterator<Item = &IntervalProfile> + '_ {
        self.history.iter()
    }

    /// Intervals completed so far.
    pub fn intervals(&self) -> u64 {
        self.seq
    }

    /// Statistics over the last `window` intervals; `None` until that many exist.
    pub fn window_summary(&self) -> Option<WindowSummary> {
        let n = self.config.window;
        if self.history.len() < n {
            return None;
        }
        let last: Vec<&IntervalProfile> =
            self.history.iter().skip(self.history.len() - n).collect();
        WindowSummary::of(&last)
    }

    /// Moves the sampler onto its own thread, sampling every `config.interval`.
    pub fn start(self) -> Result<BackgroundSampler, PmuError> {
        BackgroundSampler::start(self)
    }
}

struct Shared {
    ticker: Ticker,
    sampler: Mutex<ProfileSampler>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here leaves its data consistent at each step (counters and whole
    // values are replaced), so a panic elsewhere does not make the state unusable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A [`ProfileSampler`] running on its own thread (`footprint-pmu-sampler`), one snapshot per
/// interval. Waits between samples on a condition variable with a timeout, so dropping it (or
/// [`stop`](BackgroundSampler::stop)) ends the thread promptly, without waiting out the interval.
///
/// ```
/// use std::time::Duration;
/// use footprint_pmu::{ProfileSampler, SamplerConfig, ThreadSelection};
/// let config = SamplerConfig { interval: Duration::from_millis(10), ..SamplerConfig::default() };
/// let sampler = ProfileSampler::procfs(config, ThreadSelection::All)?.start()?;
/// assert!(sampler.wait_for_intervals(2, Duration::from_secs(10)));
/// let p = sampler.latest().unwrap();
/// assert!(p.process.cpu_utilisation >= 0.0);
/// # Ok::<(), footprint_pmu::PmuError>(())
/// ```
pub struct BackgroundSampler {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl fmt::Debug for BackgroundSampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.shared.ticker.lock();
        f.debug_struct("BackgroundSampler")
            .field("intervals", &c.intervals)
            .field("errors", &c.errors)
            .field("overhead", &c.overhead)
            .finish()
    }
}

impl BackgroundSampler {
    /// Starts `sampler` on its own thread.
    pub fn start(sampler: ProfileSampler) -> Result<BackgroundSampler, PmuError> {
        let interval = sampler.config.interval;
        let shared = Arc::new(Shared {
            ticker: Ticker::new(),
            sampler: Mutex::new(sampler),
        });
        let thread_shared = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("footprint-pmu-sampler".into())
            .spawn(move || run(&thread_shared, interval))
            .map_err(|e| PmuError::io("spawning the sampler thread", e))?;
        Ok(BackgroundSampler {
            shared,
            handle: Some(handle),
        })
    }

    /// The latest interval profile.
    pub fn latest(&self) -> Option<IntervalProfile> {
        lock(&self.shared.sampler).latest().cloned()
    }

    /// The kept intervals, oldest first.
    pub fn history(&self) -> Vec<IntervalProfile> {
        lock(&self.shared.sampler).history().cloned().collect()
    }

    /// Statistics over the last decision window.
    pub fn window_summary(&self) -> Option<WindowSummary> {
        lock(&self.shared.sampler).window_summary()
    }

    /// Runs `f` on the sampler (briefly blocks sampling).
    pub fn with_sampler<R>(&self, f: impl FnOnce(&ProfileSampler) -> R) -> R {
        f(&lock(&self.shared.sampler))
    }

    /// Intervals completed so far.
    pub fn intervals(&self) -> u64 {
        self.shared.ticker.lock().intervals
    }

    /// Wires (or replaces) the process-wide lock-wait counter while the sampler runs. The
    /// first interval after this has no lock time (it needs two readings).
    pub fn set_lock_time(&self, source: Box<dyn LockTimeSource>) {
        lock(&self.shared.sampler).set_lock_time(source);
    }

    /// Snapshots that failed, and the last error's message.
    pub fn errors(&self) -> (u64, Option<String>) {
        let c = self.shared.ticker.lock();
        (c.errors, c.last_error.clone())
    }

    /// Kernel thread id of the sampler thread (once it has started).
    pub fn sampler_tid(&self) -> Option<Tid> {
        self.shared.ticker.lock().sampler_tid
    }

    /// CPU time of the sampler thread against wall time.
    pub fn overhead(&self) -> SamplerOverhead {
        self.shared.ticker.lock().overhead
    }

    /// Blocks until at least `n` intervals are complete or `timeout` passes; `true` if they
    /// are. Wakes on each completed interval (no polling).
    pub fn wait_for_intervals(&self, n: u64, timeout: Duration) -> bool {
        self.shared.ticker.wait_for_intervals(n, timeout)
    }

    /// Stops the thread (promptly) and hands the sampler back with its history.
    pub fn stop(mut self) -> ProfileSampler {
        self.stop_thread();
        let shared = Arc::clone(&self.shared);
        drop(self);
        match Arc::try_unwrap(shared) {
            Ok(s) => s
                .sampler
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
            Err(_) => unreachable!("the sampler thread has been joined and holds no reference"),
        }
    }

    fn stop_thread(&mut self) {
        self.shared.ticker.stop();
        if let Some(h) = self.handle.take() {
            // A panic in the sampler thread (a panicking on_window callback) has already been
            // reported by the panic hook; nothing more to do with it here.
            let _ = h.join();
        }
    }
}

impl Drop for BackgroundSampler {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

fn run(shared: &Shared, interval: Duration) {
    let tid = sys::current_tid();
    lock(&shared.sampler).source.exclude_thread(tid);
    shared.ticker.publish(|c| c.sampler_tid = Some(tid));
    let started_wall = sys::monotonic_ns();
    let started_cpu = sys::thread_cpu_time_ns();
    let mut next = Instant::now();
    while shared.ticker.wait_until(next) {
        let result = lock(&shared.sampler).sample_now();
        let now = Instant::now();
        next += interval;
        if next <= now {
            // We fell behind (a stalled machine): skip the missed ticks instead of bursting.
            next = now + interval;
        }
        let overhead_cpu = sys::thread_cpu_time_ns() - started_cpu;
        let overhead_wall = sys::monotonic_ns() - started_wall;
        shared.ticker.publish(|c| {
            match result {
                Ok(Some(_)) => c.intervals += 1,
                Ok(None) => {}
                Err(e) => {
                    c.errors += 1;
                    c.last_error = Some(e.to_string());
                }
            }
            c.overhead = SamplerOverhead {
                cpu_ns: overhead_cpu,
                wall_ns: overhead_wall,
                snapshots: c.overhead.snapshots + 1,
            };
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stat_of_nothing_is_none() {
        assert!(Stat::of(std::iter::empty()).is_none());
        let s = Stat::of([4.0]).unwrap();
        assert_eq!(
            (s.n, s.mean, s.std_dev, s.min, s.max),
            (1, 4.0, 0.0, 4.0, 4.0)
        );
    }

    proptest! {
        // Oracle: mean and variance through E[x²] − E[x]² in 128-bit integers, exact for
        // integer data.
        #[test]
        fn stat_matches_an_exact_integer_oracle(xs in proptest::collection::vec(-1_000_000i64..1_000_000, 1..50)) {
            let n = xs.len() as i128;
            let sum: i128 = xs.iter().map(|&x| x as i128).sum();
            let sum_sq: i128 = xs.iter().map(|&x| (x as i128) * (x as i128)).sum();
            let mean = sum as f64 / n as f64;
            let var = (n * sum_sq - sum * sum) as f64 / (n * n) as f64;
            let s = Stat::of(xs.iter().map(|&x| x as f64)).unwrap();
            prop_assert_eq!(s.n, xs.len());
            prop_assert!((s.mean - mean).abs() <= 1e-9 * (1.0 + mean.abs()));
            prop_assert!((s.std_dev - var.sqrt()).abs() <= 1e-6 * (1.0 + var.sqrt()));
            prop_assert_eq!(s.min, *xs.iter().min().unwrap() as f64);
            prop_assert_eq!(s.max, *xs.iter().max().unwrap() as f64);
            prop_assert!(s.min <= s.mean && s.mean <= s.max);
        }

        #[test]
        fn rates_scale_with_the_interval(
            cpu in 0u64..10_000_000_000, vol in 0u64..100_000, wall_ms in 1u64..10_000,
        ) {
            let prev = TaskCounts::default();
            let cur = TaskCounts { cpu_ns: cpu, voluntary_switches: vol, ..TaskCounts::default() };
            let wall = wall_ms * 1_000_000;
            let r = task_rates(&cur, &prev, wall).unwrap();
            prop_assert!((r.cpu_utilisation - cpu as f64 / wall as f64).abs() < 1e-12 * (1.0 + r.cpu_utilisation));
            prop_assert!((r.voluntary_switches_per_s * wall_ms as f64 / 1000.0 - vol as f64).abs() < 1e-6 * (1.0 + vol as f64));
            // Going backwards is never a rate.
            prop_assert!(task_rates(&prev, &cur, wall).is_none() || (cpu == 0 && vol == 0));
        }
    }
}
