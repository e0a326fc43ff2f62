//! The deterministic brain of footprint's scheduler: topology, the reload-transient cache model,
//! the footprint ledger, affinity policies and placement advice. No threads of its own.

#[cfg(feature = "hwloc")]
mod hwloc_backend;
pub mod ledger;
pub mod placement;
pub mod policy;
pub mod reload;
pub mod topology;

pub use topology::{allowed_cpus, CacheDomain, NumaNode, Topology, TopologyError};
