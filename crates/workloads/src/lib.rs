//! The workloads that footprint's benches, examples, report (`tools/report`) and scaling suite
//! time: one copy of each body, so that `cargo bench`, a probe example and the report measure
//! exactly the same code. Each module says which benches and tools use it.
//!
//! This crate is a development tool of the repository (`publish = false`): the published crates
//! reach it only as a dev-dependency, which `cargo package` strips.
//!
//! ```
//! // The sequential oracle of the fork-join benches.
//! assert_eq!(footprint_workloads::fib::fib_sequential(20), 6765);
//! ```

pub mod adaptive;
pub mod calibrated;
pub mod cli;
pub mod fib;
pub mod fragments;
pub mod green;
pub mod handoff;
pub mod jacobi;
pub mod lock_hot;
pub mod many_core;
pub mod micro;
pub mod multiprog;
pub mod orders;
pub mod peers;
pub mod scaling;
pub mod short;
pub mod skynet;
pub mod sleep;
pub mod smoother;
pub mod work;
pub mod working_set;
