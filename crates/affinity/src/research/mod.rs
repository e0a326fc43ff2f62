//! Research models that no runtime path uses: kept, tested and documented for experiments and
//! for the papers' comparisons, and outside the scheduling the runtime does (the advisors it
//! consults are in [`placement`](crate::placement)).
//!
//! - [`forces`]: synchronisation partners attract, compute-heavy partners repulse (004 §5.3);
//!   not wired into the runtime.
//! - [`penalty`]: 001's penalty model, the cost of a schedule of jobs on data fragments.

pub mod forces;
pub mod penalty;
