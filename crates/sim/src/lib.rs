//! A deterministic scheduling simulator for footprint's affinity policies.
//!
//! It runs the *same* `footprint_affinity` code the runtime runs (the [`Policy`] keys, the
//! [`ReadyHeap`](footprint_affinity::ready::ReadyHeap), the [`Ledger`](footprint_affinity::Ledger)
//! and `on_stop`) on simulated machines of 2 to hundreds of CPUs with NUMA nodes, feeding it
//! per-run miss counts from cache models instead of a PMU. Modules:
//!
//! - [`machine`]: machine descriptions, presets (`this`, `2x16`, `4x16`), validation;
//! - [`cache`]: set-associative LRU and random-replacement caches;
//! - [`memory`]: the hierarchy, NUMA homes, coherence of shared lines;
//! - [`membus`]: a memory bus shared by the CPUs of a node, and 004's Process Cruise Control
//!   (bandwidth reservation and throttling) on it;
//! - [`workload`]: 004's regular and smoother workloads, 001's data fragments, 000's locks;
//! - [`sched`]: the scheduler loop ([`simulate`]);
//! - [`model_check`]: the Markov model against the random-replacement cache;
//! - [`report`]: table, CSV and SVG plot.
//!
//! ```
//! use footprint_sim::{simulate, Machine, PolicyChoice, SimConfig, WorkloadSpec};
//! use footprint_sim::workload::regular::RegularParams;
//! use footprint_affinity::PolicyKind;
//!
//! let machine = Machine::preset("2x2").unwrap();
//! let spec = WorkloadSpec::Regular(RegularParams { threads: 32, ..RegularParams::default() });
//! let cfg = SimConfig {
//!     policy: PolicyChoice::Fixed(PolicyKind::ReloadTransient),
//!     max_syncs: 500,
//!     ..SimConfig::default()
//! };
//! let report = simulate(&machine, spec.build(7).as_mut(), &cfg).unwrap();
//! assert_eq!(report.syncs, 500);
//! assert!(report.misses_per_sync() > 0.0);
//! ```
//!
//! [`Policy`]: footprint_affinity::Policy

pub mod cache;
pub mod machine;
pub mod membus;
pub mod memory;
pub mod model_check;
pub mod report;
pub mod rng;
pub mod sched;
pub mod workload;

pub use machine::{Machine, MachineError};
pub use memory::CacheKind;
pub use sched::{simulate, PolicyChoice, SimConfig, SimError, SimReport, WakePlacement};
pub use workload::{Workload, WorkloadSpec};
