//! The scheduler loop: discrete-event simulation of one worker per CPU running a workload's
//! green threads with the real `footprint_affinity` policy machinery.
//!
//! Per CPU: a [`ReadyHeap`] and a [`WorkerAffinity`] on one [`Ledger`] of the counted cache
//! level (the last level by default, as the runtime's `Ledger::for_last_level`); per thread a
//! [`ThreadAffinity`]. As in the runtime (`crates/runtime/src/sched.rs`):
//! - a thread that stops (blocks or yields) is recorded with `policy.on_stop(thread, misses,
//!   worker)`, `misses` being the counted-level misses of the run from the cache model (`None`
//!   with [`SimConfig::miss_counts`] off: no PMU);
//! - a woken thread is pushed with `policy.key(thread, target)` onto the *waker's* CPU
//!   ([`WakePlacement::Waker`], the runtime's `schedule_woken`), or onto its last CPU
//!   ([`WakePlacement::LastCpu`], ELiTE's deblocking to the thread's processor);
//! - a yielding thread is queued with the largest key;
//! - an idle CPU steals in topology order (`Topology::steal_order`: same L2, same L3 / node,
//!   the rest), taking the victim's coldest thread (largest key, the runtime's `take_cold`);
//!   when ready threads outnumber the CPUs that can take them, idle CPUs are woken nearest first.
//!
//! Time: a segment costs the switch (plus the PMU read and key computation of the policies that
//! need them), its computation and its references' latencies; a steal adds the steal cost.
//! Events are ordered by time, then by sequence number: the simulation is deterministic.

use crate::machine::{Machine, MachineError};
use crate::memory::{CacheKind, Memory, MemoryError, RunCost};
use crate::workload::{After, Segment, ThreadId, Workload};
use footprint_affinity::ready::ReadyHeap;
use footprint_affinity::{
    AffinityPolicy, Ledger, Policy, PolicyKind, ThreadAffinity, WorkerAffinity,
};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// Which policy to run: one of the five, or `Auto` (`Policy::auto_for` on the machine's topology).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyChoice {
    /// A fixed strategy.
    Fixed(PolicyKind),
    /// What `Policy::auto_for(topology, miss_counts)` picks.
    Auto,
}

impl PolicyChoice {
    /// The five strategies and `Auto`, in the order of the report table.
    pub const ALL: [PolicyChoice; 6] = [
        PolicyChoice::Fixed(PolicyKind::NoAffinity),
        PolicyChoice::Fixed(PolicyKind::VirtualTime),
        PolicyChoice::Fixed(PolicyKind::MinMisses),
        PolicyChoice::Fixed(PolicyKind::MissSum),
        PolicyChoice::Fixed(PolicyKind::ReloadTransient),
        PolicyChoice::Auto,
    ];

    /// `NoAffinity`, ..., `ReloadTransient`, `Auto`.
    pub fn name(self) -> &'static str {
        match self {
            PolicyChoice::Fixed(k) => k.name(),
            PolicyChoice::Auto => "Auto",
        }
    }
}

/// Where a woken thread is queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakePlacement {
    /// On the CPU of the thread that woke it (the runtime's behaviour).
    Waker,
    /// On the CPU it last ran on (004's ELiTE).
    LastCpu,
}

/// Settings of one simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// The policy.
    pub policy: PolicyChoice,
    /// The replacement model of every cache.
    pub cache: CacheKind,
    /// Set sampling: simulate one line in `sample` (a power of two; 1 = every reference).
    pub sample: u64,
    /// The cache level whose misses feed `on_stop` and the ledger; `None`: the last level.
    pub count_level: Option<u8>,
    /// Where woken threads go.
    pub wake: WakePlacement,
    /// Stop after this many synchronisations.
    pub max_syncs: u64,
    /// Seed of the caches' generators (the workload has its own).
    pub seed: u64,
    /// Whether runs' miss counts reach the policy (a PMU); off, miss-based policies order like
    /// VirtualTime, as in the runtime without counters.
    pub miss_counts: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            policy: PolicyChoice::Fixed(PolicyKind::VirtualTime),
            cache: CacheKind::Lru,
            sample: 16,
            count_level: None,
            wake: WakePlacement::Waker,
            max_syncs: 100_000,
            seed: 1,
            miss_counts: true,
        }
    }
}

/// What one simulation measured.
#[derive(Clone, Debug, PartialEq)]
pub struct SimReport {
    /// The policy row name (`Auto` for [`PolicyChoice::Auto`]).
    pub policy: &'static str,
    /// The policy in force (what `Auto` resolved to).
    pub resolved: PolicyKind,
    /// CPUs simulated.
    pub cpus: usize,
    /// NUMA nodes among them.
    pub nodes: usize,
    /// Workload name.
    pub workload: String,
    /// Synchronisations done.
    pub syncs: u64,
    /// Segments run.
    pub runs: u64,
    /// Thread stops (`on_stop` calls).
    pub stops: u64,
    /// Threads taken from other CPUs.
    pub steals: u64,
    /// Simulated time (cycles until the last synchronisation).
    pub cycles: u64,
    /// Misses at the counted level (scaled from the sample).
    pub counted_misses: u64,
    /// Last-level misses (scaled).
    pub llc_misses: u64,
    /// Line references represented.
    pub refs: u64,
    /// Line references simulated.
    pub simulated_refs: u64,
    /// Wall-clock seconds the simulation took.
    pub wall_secs: f64,
    /// The machine's clock, for simulated seconds.
    pub clock_ghz: f64,
}

impl SimReport {
    /// Counted-level misses per synchronisation.
    pub fn misses_per_sync(&self) -> f64 {
        self.counted_misses as f64 / self.syncs.max(1) as f64
    }

    /// Last-level misses per synchronisation.
    pub fn llc_misses_per_sync(&self) -> f64 {
        self.llc_misses as f64 / self.syncs.max(1) as f64
    }

    /// Simulated seconds.
    pub fn sim_seconds(&self) -> f64 {
        self.cycles as f64 / (self.clock_ghz * 1e9)
    }

    /// Synchronisations per simulated second.
    pub fn syncs_per_sim_second(&self) -> f64 {
        self.syncs as f64 / self.sim_seconds().max(1e-12)
    }

    /// Line references represented per wall-clock second.
    pub fn refs_per_wall_second(&self) -> f64 {
        self.refs as f64 / self.wall_secs.max(1e-9)
    }

    /// Line references simulated per wall-clock second.
    pub fn simulated_per_wall_second(&self) -> f64 {
        self.simulated_refs as f64 / self.wall_secs.max(1e-9)
    }
}

/// Why a simulation did not produce a report.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SimError {
    /// The machine is impossible.
    Machine(MachineError),
    /// The memory settings do not fit the machine.
    Memory(MemoryError),
    /// Every thread is blocked and the workload is not finished.
    Deadlock {
        /// Workload name.
        workload: String,
        /// Threads blocked.
        blocked: usize,
        /// Synchronisations done before.
        syncs: u64,
        /// Simulated cycles at the deadlock.
        cycles: u64,
    },
    /// The workload ran this many segments without reaching `max_syncs` at the expected rate
    /// (a livelock: threads run but never synchronise).
    NoProgress {
        /// Segments run.
        runs: u64,
        /// Synchronisations done.
        syncs: u64,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Machine(e) => write!(f, "{e}"),
            SimError::Memory(e) => write!(f, "{e}"),
            SimError::Deadlock {
                workload,
                blocked,
                syncs,
                cycles,
            } => write!(
                f,
                "deadlock in workload {workload}: all {blocked} live threads blocked after \
                 {syncs} synchronisations at cycle {cycles}; the workload's synchronisation \
                 cannot complete (check its group sizes and wake-ups)"
            ),
            SimError::NoProgress { runs, syncs } => write!(
                f,
                "no progress: {runs} segments ran but only {syncs} synchronisations happened; \
                 the workload spins without synchronising"
            ),
        }
    }
}

impl std::error::Error for SimError {}

impl From<MachineError> for SimError {
    fn from(e: MachineError) -> Self {
        SimError::Machine(e)
    }
}

impl From<MemoryError> for SimError {
    fn from(e: MemoryError) -> Self {
        SimError::Memory(e)
    }
}

/// The policy a choice gives on `machine`.
pub fn resolve(choice: PolicyChoice, machine: &Machine, miss_counts: bool) -> Policy {
    match choice {
        PolicyChoice::Fixed(k) => Policy::new(k),
        PolicyChoice::Auto => Policy::auto_for(&machine.topology(), miss_counts),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ThreadState {
    Ready,
    Running,
    Blocked,
    Exited,
}

struct SimThread {
    aff: ThreadAffinity,
    home: Option<usize>,
    run_misses: u64,
    state: ThreadState,
}

struct Cpu {
    ready: ReadyHeap<ThreadId>,
    worker: WorkerAffinity,
    /// Steal victims, nearest tier first.
    tiers: Vec<Vec<usize>>,
    idle: bool,
}

/// An event: `(time, seq, cpu, thread + 1 or 0 for a dispatch)`.
type Event = Reverse<(u64, u64, u32, u32)>;

struct Sim<'a> {
    machine: &'a Machine,
    cfg: &'a SimConfig,
    policy: Policy,
    mem: Memory,
    cpus: Vec<Cpu>,
    threads: Vec<SimThread>,
    events: BinaryHeap<Event>,
    seq: u64,
    seg: Segment,
    wake: Vec<ThreadId>,
    run_overhead: u64,
    report: SimReport,
}

/// Runs `workload` on `machine` with `cfg` until `cfg.max_syncs` synchronisations (or until the
/// workload finishes). Deterministic: the same inputs give the same report (but `wall_secs`).
pub fn simulate(
    machine: &Machine,
    workload: &mut dyn Workload,
    cfg: &SimConfig,
) -> Result<SimReport, SimError> {
    machine.validate()?;
    let topo = machine.topology();
    let level = cfg
        .count_level
        .or_else(|| topo.last_level())
        .ok_or(MemoryError::NoCaches)?;
    let mem = Memory::new(machine, cfg.cache, cfg.sample, level, cfg.seed)?;
    let ledger = Arc::new(Ledger::new(&topo, level));
    let policy = resolve(cfg.policy, machine, cfg.miss_counts);
    let among: Vec<usize> = (0..machine.cpus).collect();
    let cpus = (0..machine.cpus)
        .map(|c| Cpu {
            ready: ReadyHeap::with_capacity(64),
            worker: WorkerAffinity::new(c, Some(c), ledger.clone()),
            tiers: topo.steal_order(c, &among),
            idle: false,
        })
        .collect();
    let kind = policy.kind();
    let lat = &machine.latencies;
    let mut run_overhead = u64::from(lat.switch);
    if kind.needs_miss_counts() && cfg.miss_counts {
        run_overhead += u64::from(lat.pmu_read);
    }
    if kind == PolicyKind::ReloadTransient && cfg.miss_counts {
        run_overhead += u64::from(lat.reload_key);
    }
    let threads = (0..workload.threads())
        .map(|_| SimThread {
            aff: ThreadAffinity::new(),
            home: None,
            run_misses: 0,
            state: ThreadState::Blocked,
        })
        .collect();
    let mut sim = Sim {
        machine,
        cfg,
        policy,
        mem,
        cpus,
        threads,
        events: BinaryHeap::new(),
        seq: 0,
        seg: Segment::default(),
        wake: Vec::new(),
        run_overhead,
        report: SimReport {
            policy: cfg.policy.name(),
            resolved: kind,
            cpus: machine.cpus,
            nodes: machine.numa_nodes(),
            workload: workload.name(),
            syncs: 0,
            runs: 0,
            stops: 0,
            steals: 0,
            cycles: 0,
            counted_misses: 0,
            llc_misses: 0,
            refs: 0,
            simulated_refs: 0,
            wall_secs: 0.0,
            clock_ghz: machine.clock_ghz,
        },
    };
    let started = Instant::now();
    sim.run(workload)?;
    sim.report.wall_secs = started.elapsed().as_secs_f64();
    Ok(sim.report)
}

impl Sim<'_> {
    fn push_event(&mut self, time: u64, cpu: usize, thread: Option<ThreadId>) {
        self.seq += 1;
        let t = thread.map_or(0, |t| t + 1);
        self.events.push(Reverse((time, self.seq, cpu as u32, t)));
    }

    fn enqueue(&mut self, cpu: usize, t: ThreadId, key: Option<u64>) {
        let key = key.unwrap_or_else(|| {
            self.policy
                .key(&self.threads[t as usize].aff, &self.cpus[cpu].worker)
        });
        self.threads[t as usize].state = ThreadState::Ready;
        self.cpus[cpu].ready.push(key, t);
    }

    fn run(&mut self, workload: &mut dyn Workload) -> Result<(), SimError> {
        let n = self.cpus.len();
        for (i, t) in workload.initial().into_iter().enumerate() {
            self.enqueue(i % n, t, None);
        }
        for c in 0..n {
            self.push_event(0, c, None);
        }
        let max_runs = self
            .cfg
            .max_syncs
            .saturating_mul(64)
            .saturating_add(1 << 20);
        while let Some(Reverse((now, _, cpu, t))) = self.events.pop() {
            let cpu = cpu as usize;
            if t == 0 {
                self.dispatch(cpu, now, workload);
            } else {
                self.finish(cpu, t - 1, now, workload);
                if self.report.syncs >= self.cfg.max_syncs {
                    self.report.cycles = now;
                    return Ok(());
                }
            }
            self.report.cycles = now;
            if self.report.runs > max_runs {
                return Err(SimError::NoProgress {
                    runs: self.report.runs,
                    syncs: self.report.syncs,
                });
            }
        }
        if workload.finished() {
            return Ok(());
        }
        Err(SimError::Deadlock {
            workload: workload.name(),
            blocked: self
                .threads
                .iter()
                .filter(|t| t.state == ThreadState::Blocked)
                .count(),
            syncs: self.report.syncs,
            cycles: self.report.cycles,
        })
    }

    /// CPU `cpu` looks for work at `now`: its own heap, then victims tier by tier.
    fn dispatch(&mut self, cpu: usize, now: u64, workload: &mut dyn Workload) {
        self.cpus[cpu].idle = false;
        if let Some((_, t)) = self.cpus[cpu].ready.pop() {
            self.start(cpu, t, now, self.run_overhead, workload);
            return;
        }
        let node = self.machine.node_of(cpu);
        for tier in 0..self.cpus[cpu].tiers.len() {
            for k in 0..self.cpus[cpu].tiers[tier].len() {
                let v = self.cpus[cpu].tiers[tier][k];
                // The coldest: largest key, the latest arrival among equals.
                let Some(victim) = self.cpus[v]
                    .ready
                    .iter()
                    .max_by_key(|&(key, &t)| (key, t))
                    .map(|(_, &t)| t)
                else {
                    continue;
                };
                let _ = self.cpus[v].ready.take_first(|&t| t == victim);
                self.report.steals += 1;
                let lat = &self.machine.latencies;
                let cost = if self.machine.node_of(v) == node {
                    lat.steal_local
                } else {
                    lat.steal_remote
                };
                self.start(
                    cpu,
                    victim,
                    now,
                    self.run_overhead + u64::from(cost),
                    workload,
                );
                return;
            }
        }
        self.cpus[cpu].idle = true;
    }

    /// Thread `t` starts a segment on `cpu` at `now` after `overhead` cycles.
    fn start(
        &mut self,
        cpu: usize,
        t: ThreadId,
        now: u64,
        overhead: u64,
        workload: &mut dyn Workload,
    ) {
        let node = self.machine.node_of(cpu);
        let th = &mut self.threads[t as usize];
        th.state = ThreadState::Running;
        let home = *th.home.get_or_insert(node);
        self.seg.clear();
        workload.start(t, &mut self.seg);
        let mut cost = RunCost::default();
        for r in &self.seg.refs {
            self.mem.access(cpu, home, r, &mut cost);
        }
        self.threads[t as usize].run_misses += cost.counted_misses;
        self.report.runs += 1;
        self.report.counted_misses += cost.counted_misses;
        self.report.llc_misses += cost.llc_misses;
        self.report.refs += cost.refs;
        self.report.simulated_refs += cost.simulated;
        let end = now + overhead + self.seg.compute_cycles + cost.cycles;
        self.push_event(end, cpu, Some(t));
    }

    /// Thread `t`'s segment on `cpu` ends at `now`.
    fn finish(&mut self, cpu: usize, t: ThreadId, now: u64, workload: &mut dyn Workload) {
        self.wake.clear();
        let mut wake = std::mem::take(&mut self.wake);
        let (after, syncs) = workload.finish(t, &mut wake);
        self.report.syncs += syncs;
        if after != After::Continue {
            let th = &mut self.threads[t as usize];
            let misses = self.cfg.miss_counts.then_some(th.run_misses);
            th.run_misses = 0;
            self.policy
                .on_stop(&mut th.aff, misses, &self.cpus[cpu].worker);
            self.report.stops += 1;
        }
        let mut pushed = 0usize;
        for &w in &wake {
            let target = match self.cfg.wake {
                WakePlacement::Waker => cpu,
                WakePlacement::LastCpu => self.threads[w as usize].aff.last_worker().unwrap_or(cpu),
            };
            self.enqueue(target, w, None);
            if target != cpu && self.cpus[target].idle {
                self.cpus[target].idle = false;
                self.push_event(now, target, None);
            } else {
                pushed += 1;
            }
        }
        self.wake = wake;
        match after {
            After::Continue => {
                self.start(cpu, t, now, 0, workload);
            }
            After::Yield => {
                self.enqueue(cpu, t, Some(u64::MAX));
                self.push_event(now, cpu, None);
            }
            After::Block => {
                self.threads[t as usize].state = ThreadState::Blocked;
                self.push_event(now, cpu, None);
            }
            After::Exit => {
                self.threads[t as usize].state = ThreadState::Exited;
                self.push_event(now, cpu, None);
            }
        }
        // Ready threads this CPU will not get to soon: wake idle CPUs, nearest first.
        if pushed > usize::from(after != After::Continue) {
            let mut extra = pushed - usize::from(after != After::Continue);
            for tier in 0..self.cpus[cpu].tiers.len() {
                for k in 0..self.cpus[cpu].tiers[tier].len() {
                    if extra == 0 {
                        return;
                    }
                    let v = self.cpus[cpu].tiers[tier][k];
                    if self.cpus[v].idle {
                        self.cpus[v].idle = false;
                        self.push_event(now, v, None);
                        extra -= 1;
                    }
                }
            }
        }
    }
}
