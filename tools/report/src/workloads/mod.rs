//! The workloads the experiments run: the benches' own bodies (`crates/workloads`, so that the
//! report and `cargo bench` time the same code) and the report's own (UTS).

pub use footprint_workloads::adaptive;
pub use footprint_workloads::fib;
pub use footprint_workloads::fragments;
pub use footprint_workloads::lock_hot;
pub use footprint_workloads::micro;
pub use footprint_workloads::multiprog;
pub use footprint_workloads::orders;
pub use footprint_workloads::peers;
pub use footprint_workloads::skynet;
pub use footprint_workloads::smoother;
pub mod uts;
pub use footprint_workloads::working_set;
