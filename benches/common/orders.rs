//! The ready orders that the working-set benches (`working_set.rs`, 004's regular workload, and
//! `smoother.rs`, its irregular one) compare, each on a runtime of its own.

use footprint::affinity::{Policy, PolicyKind};
use footprint::runtime::ReadyOrder;

/// `(row name, runtime)` for LIFO, FIFO and the VirtualTime policy order, `workers` workers each.
pub fn ready_order_runtimes(workers: usize) -> Vec<(&'static str, footprint::Runtime)> {
    [
        ("footprint_lifo", ReadyOrder::Lifo),
        ("footprint_fifo", ReadyOrder::Fifo),
        (
            "footprint_virtual_time",
            ReadyOrder::Policy(Policy::new(PolicyKind::VirtualTime)),
        ),
    ]
    .into_iter()
    .map(|(name, order)| {
        let rt = footprint::Runtime::builder()
            .workers(workers)
            .ready_order(order)
            .build()
            .unwrap_or_else(|e| panic!("a {workers}-worker runtime ({name}): {e}"));
        (name, rt)
    })
    .collect()
}
