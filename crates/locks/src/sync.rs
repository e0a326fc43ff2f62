//! The concurrency primitives the algorithms are written against: `std` normally, `loom` under
//! `cfg(loom)` so that the models in `tests/loom.rs` explore every interleaving.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicUsize};

pub(crate) use std::sync::atomic::Ordering;

/// One iteration of a spin loop: a CPU pause hint (under loom: a yield, so that the model
/// scheduler can run the thread being waited for).
#[inline(always)]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// Yields the OS thread (under loom: a model yield).
#[inline]
pub(crate) fn os_yield() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}
