//! The concurrency primitives the algorithms are written against: `std` normally, `loom` under
//! `cfg(loom)` so that the models in `tests/loom.rs` explore every interleaving.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
};

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

/// Orders a `SeqCst` read-modify-write before a following `SeqCst` load of another location in
/// the model build; nothing otherwise. The two already cannot be reordered (C++20
/// [atomics.order]: both are in the single total order), but loom models `SeqCst` accesses as
/// acquire/release only and supports `SeqCst` fences, so the model build adds the equivalent
/// fence. Call it where two threads each write one location and then read the other's (a
/// store-load "Dekker" pair), between the write and the read.
#[inline(always)]
pub(crate) fn model_sc_fence() {
    #[cfg(loom)]
    fence(Ordering::SeqCst);
}
