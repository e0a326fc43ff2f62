//! The workloads the experiments run: the benches' own bodies (`benches/common`, so that the
//! report and `cargo bench` time the same code) and the report's own (UTS, the smoother).

#[allow(dead_code)]
#[path = "../../../benches/common/fib.rs"]
pub mod fib;
#[allow(dead_code)]
#[path = "../../../benches/common/lock_hot.rs"]
pub mod lock_hot;
#[allow(dead_code)]
#[path = "../../../benches/common/micro.rs"]
pub mod micro;
#[allow(dead_code)]
#[path = "../../../benches/common/multiprog.rs"]
pub mod multiprog;
#[allow(dead_code)]
#[path = "../../../benches/common/peers.rs"]
pub mod peers;
#[allow(dead_code)]
#[path = "../../../benches/common/skynet.rs"]
pub mod skynet;
pub mod smoother;
pub mod uts;
#[allow(dead_code)]
#[path = "../../../benches/common/working_set.rs"]
pub mod working_set;
