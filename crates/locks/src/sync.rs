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

/// Exponential backoff for spin loops: each round pauses twice as long as the one before (1, 2,
/// 4, ... [`spin_hint`]s), up to 2^`cap` per round.
pub(crate) struct SpinBackoff {
    shift: u32,
    cap: u32,
}

impl SpinBackoff {
    pub(crate) const fn new(cap: u32) -> SpinBackoff {
        SpinBackoff { shift: 0, cap }
    }

    /// Pauses for one round; returns how many pause instructions it took.
    #[inline(always)]
    pub(crate) fn pause(&mut self) -> u64 {
        let pauses = 1u32 << self.shift;
        for _ in 0..pauses {
            spin_hint();
        }
        self.shift = (self.shift + 1).min(self.cap);
        u64::from(pauses)
    }
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
