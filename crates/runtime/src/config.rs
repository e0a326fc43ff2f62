//! What `Builder::build` decided before anything is made: the builder's settings, checked and
//! resolved ([`Config`]). `Shared::new` (`registry.rs`) makes the runtime's state from it, and
//! `runtime.rs` starts the workers.
//!
//! Resolving fills in what the builder left open: the worker count and each worker's CPU (from
//! the allowed CPUs, the pinning mode and `FOOTPRINT_NUM_THREADS` / `FOOTPRINT_PIN`), the
//! topology and each worker's steal order, the ready order `Auto` picks, the counters.

use crate::counters::Resolved;
use crate::ready::ReadyOrder;
use footprint_affinity::Topology;
use std::ops::RangeInclusive;

/// A runtime's settings, checked and resolved (see the module doc).
pub(crate) struct Config {
    /// Workers started (with adaptive workers: the range's maximum).
    pub(crate) workers: usize,
    /// The CPUs the workers may use (listed by `Builder::cpus`, else the allowed set).
    pub(crate) cpus: Vec<usize>,
    /// Each worker's CPU, and whether workers are pinned to it.
    pub(crate) worker_cpu: Vec<usize>,
    pub(crate) pinned: bool,
    pub(crate) topology: Topology,
    /// Per worker, the victims to steal from, nearest tier first.
    pub(crate) steal_tiers: Vec<Vec<Vec<usize>>>,
    /// Never `Auto`.
    pub(crate) ready_order: ReadyOrder,
    pub(crate) counters: Resolved,
    pub(crate) stack_size: usize,
    pub(crate) guard_pages: bool,
    pub(crate) max_stacks: Option<usize>,
    pub(crate) switch_cost_ns: u64,
    pub(crate) thread_name: String,
    pub(crate) watch: crate::watch::state::WatchConfig,
    pub(crate) shuffling: Option<crate::placement::shuffle::ShuffleConfig>,
    /// Adaptive workers: active ones at first (`start`) up to all of them (`end`).
    pub(crate) adaptive: Option<RangeInclusive<usize>>,
    pub(crate) tranquilizer: Option<crate::adaptive::tranquilizer::config::TranquilizerConfig>,
    pub(crate) co_schedule: Option<crate::node::NodeConfig>,
}

impl Config {
    /// Worker `i`'s CPU when workers are pinned.
    pub(crate) fn pinned_cpu(&self, i: usize) -> Option<usize> {
        self.pinned.then_some(self.worker_cpu[i])
    }
}

/// Worker indices to steal from, nearest first, for each worker: workers on the same CPU, then
/// the topology's tiers around it (`Topology::steal_order`: same core, L2, L3/NUMA), then the
/// rest.
pub(crate) fn steal_tiers(topo: &Topology, worker_cpu: &[usize]) -> Vec<Vec<Vec<usize>>> {
    let mut among: Vec<usize> = worker_cpu.to_vec();
    among.sort_unstable();
    among.dedup();
    (0..worker_cpu.len())
        .map(|i| {
            let cpu = worker_cpu[i];
            let mut tiers: Vec<Vec<usize>> = Vec::new();
            let mut seen = vec![false; worker_cpu.len()];
            seen[i] = true;
            let same: Vec<usize> = (0..worker_cpu.len())
                .filter(|&j| j != i && worker_cpu[j] == cpu)
                .collect();
            for &j in &same {
                seen[j] = true;
            }
            if !same.is_empty() {
                tiers.push(same);
            }
            for tier in topo.steal_order(cpu, &among) {
                let ws: Vec<usize> = (0..worker_cpu.len())
                    .filter(|&j| !seen[j] && tier.contains(&worker_cpu[j]))
                    .collect();
                for &j in &ws {
                    seen[j] = true;
                }
                if !ws.is_empty() {
                    tiers.push(ws);
                }
            }
            let rest: Vec<usize> = (0..worker_cpu.len()).filter(|&j| !seen[j]).collect();
            if !rest.is_empty() {
                tiers.push(rest);
            }
            tiers
        })
        .collect()
}
