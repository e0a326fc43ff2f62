//! The deterministic brain of footprint's scheduler: topology, the reload-transient cache model,
//! the footprint ledger, affinity policies and placement advice. No threads of its own: the
//! runtime holds the state and calls in; every decision depends only on its inputs.
//!
//! - [`topology`]: cache domains, NUMA nodes, steal order (sysfs; hwloc with feature `hwloc`).
//! - [`reload`]: `F(v, n)`, `V(f, n)`, `RT(f, v)` of 004 §3.3.1, the Markov-matrix oracle, the
//!   hot-path table.
//! - [`ledger`]: per-domain miss clocks; a thread's valid lines now in O(1).
//! - [`policy`]: the five strategies of 004 Table 3.3 behind one trait, and `Auto`.
//! - [`ready`]: a ready structure ordered by key, FIFO among equal keys.
//! - [`placement`]: lock-hot placement (000), data-fragment batching (001), thread shuffling
//!   (003).
//! - [`research`]: models no runtime path uses, for experiments: partner forces (004 §5.3) and
//!   001's penalty model.
//!
//! ```
//! use std::sync::Arc;
//! use footprint_affinity::{AffinityPolicy, Ledger, Policy, ThreadAffinity, Topology, WorkerAffinity};
//!
//! let topo = Topology::detect();
//! let ledger = Arc::new(Ledger::for_last_level(&topo));
//! let policy = Policy::auto(false); // no cache-miss counter on this machine
//! let worker = WorkerAffinity::new(0, topo.cpus().first().copied(), ledger);
//! let mut thread = ThreadAffinity::new();
//! policy.on_stop(&mut thread, None, &worker);   // it stopped on worker 0
//! let key = policy.key(&thread, &worker);        // it is ready again: smaller runs first
//! assert!(key < u64::MAX);
//! ```

// docs.rs (`--cfg docsrs`, nightly) badges the items that need a cargo feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "hwloc")]
mod hwloc_backend;
pub mod ledger;
pub mod placement;
pub mod policy;
pub mod ready;
pub mod reload;
pub mod research;
pub mod topology;

pub use ledger::Ledger;
pub use policy::{AffinityPolicy, Policy, PolicyKind, ThreadAffinity, WorkerAffinity};
pub use topology::{allowed_cpus, CacheDomain, NumaNode, Topology, TopologyError};
