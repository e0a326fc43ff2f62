//! The workloads the experiments run: the benches' own bodies (`benches/common`, so that the
//! report and `cargo bench` time the same code) and the report's own (UTS). The
//! bench files that carry no `#![allow(dead_code)]` of their own get one here.

#[path = "../../../benches/common/adaptive.rs"]
pub mod adaptive;
#[path = "../../../benches/common/fib.rs"]
pub mod fib;
#[path = "../../../benches/common/fragments.rs"]
pub mod fragments;
#[path = "../../../benches/common/lock_hot.rs"]
pub mod lock_hot;
#[path = "../../../benches/common/micro.rs"]
pub mod micro;
#[path = "../../../benches/common/multiprog.rs"]
pub mod multiprog;
#[path = "../../../benches/common/orders.rs"]
pub mod orders;
#[allow(dead_code)]
#[path = "../../../benches/common/peers.rs"]
pub mod peers;
#[allow(dead_code)]
#[path = "../../../benches/common/skynet.rs"]
pub mod skynet;
#[path = "../../../benches/common/smoother.rs"]
pub mod smoother;
pub mod uts;
#[path = "../../../benches/common/work.rs"]
pub mod work;
#[path = "../../../benches/common/working_set.rs"]
pub mod working_set;
