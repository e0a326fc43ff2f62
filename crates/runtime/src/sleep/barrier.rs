//! The asymmetric barrier pair of the idle protocol: a *light* barrier on the hot side (a
//! worker's push onto its own deque, at every spawn and `join`) and a *heavy* one on the cold
//! side (a worker about to sleep).
//!
//! The pair gives what a SeqCst fence on both sides gives (of a push followed by a load on one
//! side and a store followed by a search on the other, at least one side sees the other's
//! store), at no cost to the pusher: the heavy side is Linux's
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which makes every other running thread of
//! the process pass a full memory barrier (an interrupt, or the context switch that a thread
//! not running makes anyway) before it returns. For a pusher that is like a SeqCst fence at
//! some point of its execution: a point before its push lets its later load see the sleeper's
//! announcement, a point after its push lets the sleeper's later search see the push. The
//! light side only has to keep the compiler from moving its load above its push.
//!
//! Where the kernel refuses `membarrier` (older than 4.14, or filtered by seccomp), both sides
//! issue a SeqCst fence instead. Under loom both sides are SeqCst fences: the model of what the
//! pair guarantees.

use crate::sync::atomic::{fence, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{compiler_fence, AtomicU8};

/// Not yet asked the kernel / `membarrier` is ours / it is not (fences on both sides).
#[cfg(not(loom))]
const UNKNOWN: u8 = 0;
#[cfg(not(loom))]
const ASYMMETRIC: u8 = 1;
#[cfg(not(loom))]
const SYMMETRIC: u8 = 2;

#[cfg(not(loom))]
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Registers the process for expedited private `membarrier` (once; every runtime calls this
/// before its workers start, so the mode is settled before any push or sleep).
#[cfg(not(loom))]
pub(crate) fn init() {
    if MODE.load(Ordering::Acquire) != UNKNOWN {
        return;
    }
    let mode = if crate::sys::membarrier_register() {
        ASYMMETRIC
    } else {
        SYMMETRIC
    };
    // Two runtimes built at once both register: the same answer.
    MODE.store(mode, Ordering::Release);
}

#[cfg(loom)]
pub(crate) fn init() {}

/// The pusher's side: orders its push before its next load.
#[inline(always)]
pub(crate) fn light() {
    #[cfg(not(loom))]
    {
        if MODE.load(Ordering::Relaxed) == ASYMMETRIC {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
    }
    #[cfg(loom)]
    fence(Ordering::SeqCst);
}

/// The sleeper's side: a SeqCst fence, and where the light side is only a compiler fence, the
/// kernel's barrier on every other running thread of the process.
#[inline]
pub(crate) fn heavy() {
    fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    if MODE.load(Ordering::Relaxed) == ASYMMETRIC && !crate::sys::membarrier_private() {
        // Registered but refused now (it should not happen): fences on both sides from here
        // on. This sleep stays correct only if pushes were fenced, so fall back and let the
        // safety net stand in for this one sleep.
        MODE.store(SYMMETRIC, Ordering::SeqCst);
    }
}
