//! footprint: green threads for HPC codes on a cache-affine work-stealing pool, with informing
//! locks and barriers.

pub use footprint_affinity as affinity;
pub use footprint_locks as locks;
pub use footprint_pmu as pmu;
pub use footprint_runtime as runtime;
