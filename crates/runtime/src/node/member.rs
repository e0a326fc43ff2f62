//! A co-scheduled runtime's member daemon (`Builder::co_schedule`): it joins the node table,
//! publishes the runtime's profile every interval, acts as the Cores Allocator while its slot
//! is the first live one, and applies its own share through the active-worker limit and by
//! re-pinning its workers.

use super::allocator::{AllocReason, AllocatorConfig, CoresAllocator, CoresConfig};
use super::model::{LinearModel, Model, ProgramProfile};
use super::table::{table_path, NodeTable, TableGuard};
use crate::registry::Shared;
use footprint_pmu::{IntervalProfile, ProfileSampler, SamplerConfig, ThreadSelection};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How a runtime takes part in ADAPT's co-scheduling (see
/// [`Builder::co_schedule`](crate::Builder::co_schedule)).
///
/// ```
/// use footprint_runtime::node::NodeConfig;
/// use std::time::Duration;
/// let c = NodeConfig::new("solver-pool").interval(Duration::from_millis(500));
/// assert_eq!(c.interval, Duration::from_millis(500));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct NodeConfig {
    /// The table's file (default `/dev/shm/footprint-node-<name>`): programs sharing it are
    /// co-scheduled together.
    pub path: PathBuf,
    /// Time between two profiles (the paper: 2 s, the mean of ten 200 ms samples).
    pub interval: Duration,
    /// The allocator's numbers.
    pub allocator: AllocatorConfig,
    /// The PAAP/PACC model (default: the paper's linear coefficients).
    pub model: Arc<dyn Model + Send + Sync>,
}

impl std::fmt::Debug for NodeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeConfig")
            .field("path", &self.path)
            .field("interval", &self.interval)
            .field("allocator", &self.allocator)
            .finish()
    }
}

impl NodeConfig {
    /// Co-scheduling with the programs that use the same `name`.
    pub fn new(name: &str) -> NodeConfig {
        NodeConfig {
            path: table_path(name),
            interval: Duration::from_secs(2),
            allocator: AllocatorConfig::default(),
            model: Arc::new(LinearModel::paper()),
        }
    }

    /// Uses the table file at `path` instead.
    pub fn path(mut self, path: impl Into<PathBuf>) -> NodeConfig {
        self.path = path.into();
        self
    }

    /// Sets the interval.
    pub fn interval(mut self, interval: Duration) -> NodeConfig {
        self.interval = interval;
        self
    }

    /// Sets the allocator's numbers.
    pub fn allocator(mut self, config: AllocatorConfig) -> NodeConfig {
        self.allocator = config;
        self
    }

    /// Uses a fitted model (see [`fit`](super::fit())).
    pub fn model(mut self, model: impl Model + Send + Sync + 'static) -> NodeConfig {
        self.model = Arc::new(model);
        self
    }
}

/// One decision this runtime made while acting as the allocator.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NodeDecision {
    /// When, since the runtime was built.
    pub at: Duration,
    /// The members' pids, in the order of `config`'s sets.
    pub pids: Vec<u32>,
    /// The configuration given.
    pub config: CoresConfig,
    /// Predicted user share of each member (empty when not predicted).
    pub predicted: Vec<f64>,
    /// Why.
    pub reason: AllocReason,
}

impl std::fmt::Display for NodeDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.1} s: pids {:?}: {} ({})",
            self.at.as_secs_f64(),
            self.pids,
            self.config,
            self.reason
        )?;
        if !self.predicted.is_empty() {
            let p: Vec<String> = self.predicted.iter().map(|x| format!("{x:.1}")).collect();
            write!(f, " predicted usr% [{}]", p.join(", "))?;
        }
        Ok(())
    }
}

/// This runtime's part in the node (`RuntimeStats::node`).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct NodeStats {
    /// The table's file.
    pub path: PathBuf,
    /// Our slot (`None` before joining or after a failure).
    pub slot: Option<usize>,
    /// Live members at the last interval (us included).
    pub members: usize,
    /// Whether we acted as the allocator at the last interval.
    pub allocator: bool,
    /// Our share: `None` before the first, `Some(None)` all cores, `Some(Some(cpus))` a set.
    pub assigned: Option<Option<Vec<usize>>>,
    /// Active workers we set from the share.
    pub active: usize,
    /// The Policy Allocator's advice for us (003 §6.2.2) under our share: computed and
    /// reported, not applied (the tranquilizer owns the levers).
    pub policy: Option<super::ProgramPolicy>,
    /// The decisions we made as the allocator (the last 16).
    pub decisions: Vec<NodeDecision>,
    /// Intervals done.
    pub intervals: u64,
    /// The last error (table, sampling, re-pinning), if any.
    pub last_error: Option<String>,
}

impl Eq for NodeStats {}

impl std::fmt::Display for NodeStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let share = match &self.assigned {
            None => "none yet".to_string(),
            Some(None) => "all cores".to_string(),
            Some(Some(c)) => format!("CPUs {c:?}"),
        };
        writeln!(
            f,
            "node {}: slot {:?} of {} members, allocator: {}, share: {share}, {} active",
            self.path.display(),
            self.slot,
            self.members,
            self.allocator,
            self.active
        )?;
        for d in &self.decisions {
            writeln!(f, "    {d}")?;
        }
        if let Some(p) = &self.policy {
            let class = if p.fixed_class { "fixed" } else { "default" };
            writeln!(
                f,
                "    policy advice: memory {}, {class} class (not applied)",
                p.memory
            )?;
        }
        if let Some(e) = &self.last_error {
            writeln!(f, "    last error: {e}")?;
        }
        Ok(())
    }
}

/// A co-scheduled runtime's state, in its `Shared`.
pub(crate) struct NodeState {
    config: NodeConfig,
    table: NodeTable,
    /// Kernel thread id of each worker, by index (0 until it started).
    tids: Mutex<Vec<i32>>,
    stats: Mutex<NodeStats>,
    stopped: Mutex<bool>,
    daemon: Mutex<Option<std::thread::JoinHandle<()>>>,
    started: Instant,
}

impl NodeState {
    /// Opens (creates) the table; the error says what to do.
    pub(crate) fn new(config: NodeConfig, workers: usize) -> Result<NodeState, String> {
        if config.interval < Duration::from_millis(10) {
            return Err(format!(
                "co_schedule: interval {:?} is below 10 ms; the paper uses 2 s",
                config.interval
            ));
        }
        let table = NodeTable::open(&config.path).map_err(|e| format!("co_schedule: {e}"))?;
        Ok(NodeState {
            stats: Mutex::new(NodeStats {
                path: config.path.clone(),
                ..NodeStats::default()
            }),
            config,
            table,
            tids: Mutex::new(vec![0; workers]),
            stopped: Mutex::new(false),
            daemon: Mutex::new(None),
            started: Instant::now(),
        })
    }

    /// Called by worker `index` on its own thread when it starts.
    pub(crate) fn register_worker(&self, index: usize) {
        let tid = footprint_pmu::current_tid();
        if let Some(t) = self
            .tids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(index)
        {
            *t = tid;
        }
    }

    pub(crate) fn stats(&self) -> NodeStats {
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stops the daemon and leaves the table (the runtime is dropping).
    pub(crate) fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        let handle = self.daemon.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            h.thread().unpark();
            // Not from the daemon itself (it may hold the last reference to the runtime).
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
        let slot = self.stats.lock().unwrap_or_else(|e| e.into_inner()).slot;
        if let (Some(i), Ok(mut g)) = (slot, self.table.lock()) {
            g.leave(i);
        }
    }

    fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn error(&self, e: String) {
        self.stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last_error = Some(e);
    }
}

/// Joins the table and starts the daemon.
pub(crate) fn start(shared: &Arc<Shared>) -> Result<(), String> {
    let n = shared.node().expect("a co-scheduled runtime");
    let slot = n
        .table
        .lock()
        .and_then(|mut g| {
            g.sweep();
            g.join(shared.workers().len())
        })
        .map_err(|e| format!("co_schedule: {e}"))?;
    n.stats.lock().unwrap_or_else(|e| e.into_inner()).slot = Some(slot);
    let weak = Arc::downgrade(shared);
    let handle = std::thread::Builder::new()
        .name("footprint-node".into())
        .spawn(move || run(weak, slot))
        .map_err(|e| format!("co_schedule: starting its thread failed ({e})"))?;
    *n.daemon.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
    Ok(())
}

/// The profile ADAPT reads, from one sampled interval of our workers.
fn program_profile(p: &IntervalProfile, workers: usize) -> ProgramProfile {
    let w = workers.max(1) as f64;
    ProgramProfile {
        // The sampler counts CPU time, not user time alone: all of it counts as `usr` (our
        // workers make few system calls), and `sys` stays 0.
        usr: (p.process.cpu_utilisation / w * 100.0).clamp(0.0, 100.0),
        sys: 0.0,
        lat: p.process.run_delay_share.map_or(0.0, |d| d / w * 100.0),
        lock: p.lock_time_fraction.map_or(0.0, |l| l * 100.0),
        mpa: p.process.llc_miss_ratio.unwrap_or(0.0),
        threads: workers,
    }
}

fn run(weak: Weak<Shared>, slot: usize) {
    let Some(shared) = weak.upgrade() else {
        return;
    };
    let n = shared.node().expect("a co-scheduled runtime");
    let workers = shared.workers().len();
    let config = n.config.clone();
    let cpus = footprint_affinity::allowed_cpus().unwrap_or_else(|_| vec![0]);
    // The workers started before this thread (build waits for them): their ids are known.
    let tids: Vec<i32> = n
        .tids
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .copied()
        .filter(|&t| t != 0)
        .collect();
    let sampler = ProfileSampler::procfs(
        SamplerConfig {
            interval: config.interval,
            window: 1,
            history: 1,
        },
        ThreadSelection::Only(tids),
    );
    let mut sampler = match sampler {
        Ok(s) => s.with_lock_time(footprint_locks::stats::process_lock_wait_ns),
        Err(e) => {
            n.error(format!("no profile sampler: {e}"));
            return;
        }
    };
    let mut allocator = CoresAllocator::new(SharedModel(config.model.clone()), config.allocator);
    let mut applied: Option<Option<Vec<usize>>> = None;
    drop(shared);
    loop {
        let until = Instant::now() + config.interval;
        loop {
            let Some(s) = weak.upgrade() else { return };
            if s.node().is_none_or(NodeState::is_stopped) {
                return;
            }
            drop(s);
            let now = Instant::now();
            if now >= until {
                break;
            }
            std::thread::park_timeout(until - now);
        }
        let Some(shared) = weak.upgrade() else { return };
        let n = shared.node().expect("a co-scheduled runtime");
        let profile = match sampler.sample_now() {
            Ok(Some(p)) => Some(program_profile(&p, shared.active_limit())),
            Ok(None) => None,
            Err(e) => {
                n.error(format!("sampling: {e}"));
                None
            }
        };
        let mut g = match n.table.lock() {
            Ok(g) => g,
            Err(e) => {
                n.error(e.to_string());
                continue;
            }
        };
        g.sweep();
        if g.member(slot).is_none_or(|m| m.pid != std::process::id()) {
            // Swept by mistake (e.g. a start time we could not read): join again.
            match g.join(workers) {
                Ok(_) => {}
                Err(e) => {
                    n.error(e.to_string());
                    continue;
                }
            }
        }
        if let Some(p) = &profile {
            g.publish(slot, p);
        }
        let is_allocator = g.is_allocator(slot);
        if is_allocator {
            if let Some(d) = allocate(&mut g, &mut allocator, &cpus) {
                let mut st = n.stats.lock().unwrap_or_else(|e| e.into_inner());
                if st.decisions.len() == 16 {
                    st.decisions.remove(0);
                }
                st.decisions.push(NodeDecision {
                    at: n.started.elapsed(),
                    ..d
                });
            }
        }
        let all = g.members();
        let members = all.len();
        let mine = g.member(slot).and_then(|m| m.assigned);
        let policy = mine.as_ref().and_then(|share| {
            let config = match share {
                None => CoresConfig::AllCores,
                Some(_) => CoresConfig::Sets(Vec::new()),
            };
            let profiles: Vec<ProgramProfile> = all.iter().map(|m| m.profile).collect();
            let at = all.iter().position(|m| m.slot == slot)?;
            super::policies(&profiles, &config, &n.config.allocator)
                .get(at)
                .copied()
        });
        drop(g);
        if mine != applied {
            if let Some(share) = &mine {
                if let Err(e) = apply(&shared, n, share.as_deref()) {
                    n.error(e);
                }
            }
            applied = mine.clone();
        }
        let mut st = n.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.members = members;
        st.allocator = is_allocator;
        st.assigned = mine;
        st.active = shared.active_limit();
        st.policy = policy;
        st.intervals += 1;
    }
}

/// A shared model, usable where the allocator wants a `Model` by value.
struct SharedModel(Arc<dyn Model + Send + Sync>);

impl Model for SharedModel {
    fn paap(&self, a: &ProgramProfile, b: &ProgramProfile, cores: usize) -> f64 {
        self.0.paap(a, b, cores)
    }

    fn pacc(&self, a: &ProgramProfile, cores: usize) -> f64 {
        self.0.pacc(a, cores)
    }
}

/// The allocator's turn, once every member has published a profile: decide on the profiles
/// and write every member's share (also when nothing changed but a member has none yet).
/// Returns the decision made.
fn allocate(
    g: &mut TableGuard<'_>,
    allocator: &mut CoresAllocator<SharedModel>,
    cpus: &[usize],
) -> Option<NodeDecision> {
    let members = g.members();
    if members.iter().any(|m| m.heartbeat == 0) {
        // A member that has not published yet would look idle and uncontended: wait for it
        // (meanwhile it runs as the OS default has it, on all cores).
        return None;
    }
    let profiles: Vec<ProgramProfile> = members.iter().map(|m| m.profile).collect();
    let actual: Vec<f64> = profiles.iter().map(|p| p.usr).collect();
    let decided = allocator.observe(&profiles, cpus.len(), Some(&actual));
    let current = allocator.current()?.clone();
    let shares: Vec<Option<Vec<usize>>> = match &current.config {
        CoresConfig::AllCores => vec![None; members.len()],
        CoresConfig::Sets(sizes) => {
            let mut at = 0;
            sizes
                .iter()
                .map(|&k| {
                    let set = cpus[at.min(cpus.len())..(at + k).min(cpus.len())].to_vec();
                    at += k;
                    Some(set)
                })
                .collect()
        }
    };
    for (m, share) in members.iter().zip(&shares) {
        if m.assigned.as_ref() != Some(share) {
            g.assign(m.slot, share.as_deref());
        }
    }
    decided.map(|a| NodeDecision {
        at: Duration::ZERO,
        pids: members.iter().map(|m| m.pid).collect(),
        config: a.config,
        predicted: a.predicted,
        reason: a.reason,
    })
}

/// Applies our share: all workers active and pinned where they started (all cores), or as
/// many active as the set has CPUs, worker `i` re-pinned to the set's `i`-th CPU.
fn apply(shared: &Shared, n: &NodeState, share: Option<&[usize]>) -> Result<(), String> {
    let workers = shared.workers().len();
    let tids = n.tids.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let pin = |tid: i32, cpus: &[usize]| -> Result<(), String> {
        // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            // SAFETY: c < CPU_SETSIZE.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: a valid set of the size given; the kernel checks the tid.
        let rc =
            unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!(
                "re-pinning thread {tid} to {cpus:?}: {}",
                std::io::Error::last_os_error()
            ))
        }
    };
    match share {
        None => {
            shared.set_active(workers);
            for (i, &tid) in tids.iter().enumerate().filter(|(_, &t)| t != 0) {
                if let Some(cpu) = shared.workers()[i].cpu() {
                    pin(tid, &[cpu])?;
                } else {
                    let all = footprint_affinity::allowed_cpus().map_err(|e| e.to_string())?;
                    pin(tid, &all)?;
                }
            }
        }
        Some(set) if !set.is_empty() => {
            shared.set_active(set.len().min(workers));
            for (i, &tid) in tids.iter().enumerate().filter(|(_, &t)| t != 0) {
                pin(tid, &[set[i % set.len()]])?;
            }
        }
        Some(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runtime;

    fn affinity(tid: i32) -> Vec<usize> {
        // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid out-pointer of the size given.
        let rc = unsafe {
            libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set)
        };
        assert_eq!(rc, 0);
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: c < CPU_SETSIZE.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    #[test]
    fn a_processor_set_share_limits_the_active_workers_and_re_pins_them_and_all_cores_undoes_it() {
        let cpus = footprint_affinity::allowed_cpus().unwrap();
        let path = std::env::temp_dir().join(format!("fp-node-apply-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let rt = Runtime::builder()
            .workers(2)
            .cpus(&[cpus[0], cpus[cpus.len() - 1]])
            .co_schedule(NodeConfig::new("apply").path(&path))
            .build()
            .unwrap();
        let n = rt.shared.node().unwrap();
        let tids = n.tids.lock().unwrap().clone();
        assert!(
            tids.iter().all(|&t| t != 0),
            "both workers registered: {tids:?}"
        );
        let last = *cpus.last().unwrap();
        apply(&rt.shared, n, Some(&[last])).unwrap();
        assert_eq!(rt.active_workers(), 1);
        assert_eq!(affinity(tids[0]), vec![last]);
        assert_eq!(affinity(tids[1]), vec![last]);
        // Work still runs (on the one active worker).
        assert_eq!(rt.block_on(|| crate::spawn(|| 6 * 7).join().unwrap()), 42);
        apply(&rt.shared, n, None).unwrap();
        assert_eq!(rt.active_workers(), 2);
        assert_eq!(affinity(tids[0]), vec![cpus[0]], "pinned where it started");
        assert_eq!(affinity(tids[1]), vec![last]);
        drop(rt);
        // Dropping the runtime left the table.
        let t = NodeTable::open(&path).unwrap();
        assert!(t.members().unwrap().is_empty());
        let _ = std::fs::remove_file(&path);
    }
}
