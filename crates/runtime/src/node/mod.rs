//! ADAPT (003 ch. 6): co-scheduling several footprint programs on one node.
//!
//! - `model.rs`: PAAP (Eq. 6.1) and PACC (Eq. 6.3) as pure functions with the paper's linear
//!   coefficients, and the [`Model`] trait for a fitted one;
//! - `fit.rs`: [`fit`] (least squares from recorded co-runs) and [`smape`] (Eq. 6.2);
//! - `allocator.rs`: the Cores Allocator (all cores vs processor sets, phase changes with the
//!   γ threshold), tested on the paper's FA + SM and apsi + fma3d examples;
//! - `policy.rs`: the Policy Allocator's rule ([`policies`]; computed and reported in
//!   [`NodeStats::policy`], not applied: run [`Builder::tranquilizer`](crate::Builder::tranquilizer) for the levers);
//! - `table.rs`: the node-wide table in `/dev/shm` ([`NodeTable`]): versioned layout, a
//!   lock the kernel releases when its holder dies, dead members swept;
//! - `member.rs`: [`Builder::co_schedule`](crate::Builder::co_schedule)'s daemon (publish, allocate, apply).

mod allocator;
#[cfg(test)]
mod allocator_tests;
mod fit;
mod member;
mod model;
mod policy;
mod table;

pub use allocator::{
    allocate, best_of, cpu_bound_uncontended, predict, splits, AllocReason, Allocation,
    AllocatorConfig, CoresAllocator, CoresConfig,
};
pub use fit::{fit, smape, FitError, FitReport, PaapSample, PaccSample};
pub(crate) use member::{start as start_member, NodeState};
pub use member::{NodeConfig, NodeDecision, NodeStats};
pub use model::{
    cores_to_threads, paap, pacc, reduced_cores_to_threads, LinearModel, Model, ProgramProfile,
};
pub use policy::{policies, ProgramPolicy};
pub use table::{
    table_path, MemberView, NodeTable, TableError, TableGuard, LAYOUT_VERSION, MAX_MEMBERS,
};
