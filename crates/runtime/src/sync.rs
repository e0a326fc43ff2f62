//! The primitives the runtime's hand-off protocols are written against: `std` normally, `loom`
//! under `cfg(loom)`, so that the models in `tests/loom_*.rs` drive the runtime's own protocol
//! functions (`sleep/word.rs`, `task/states.rs`, the pool levels in `pool.rs`) through every
//! interleaving loom explores. Outside `cfg(loom)` these are plain re-exports: no wrapper, no
//! cost.

pub(crate) mod atomic {
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU8, AtomicUsize};
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU8, AtomicUsize};

    pub(crate) use std::sync::atomic::Ordering;
}

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
