//! The ready orders that the working-set benches (`working_set.rs`, 004's regular workload, and
//! `smoother.rs`, its irregular one) and the report compare, each on a runtime of its own.

use footprint::affinity::{Policy, PolicyKind};
use footprint::runtime::ReadyOrder;
use footprint::Counters;

/// The footprint ready orders the workloads run under, named as the benches name them.
pub fn ready_orders() -> [(&'static str, ReadyOrder); 3] {
    [
        ("footprint_lifo", ReadyOrder::Lifo),
        ("footprint_fifo", ReadyOrder::Fifo),
        (
            "footprint_virtual_time",
            ReadyOrder::Policy(Policy::new(PolicyKind::VirtualTime)),
        ),
    ]
}

/// A runtime of `workers` workers with `order` and `counters`.
pub fn runtime(workers: usize, order: ReadyOrder, counters: Counters) -> footprint::Runtime {
    footprint::Runtime::builder()
        .workers(workers)
        .oversubscribe(true) // an experiment's explicit count: more workers than CPUs is meant
        .ready_order(order)
        .counters(counters)
        .build()
        .unwrap_or_else(|e| panic!("a {workers}-worker runtime ({order}): {e}"))
}

/// `(row name, runtime)` for every order of [`ready_orders`], `workers` workers each.
pub fn ready_order_runtimes(workers: usize) -> Vec<(&'static str, footprint::Runtime)> {
    ready_orders()
        .into_iter()
        .map(|(name, order)| (name, runtime(workers, order, Counters::Off)))
        .collect()
}
