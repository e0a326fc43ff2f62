//! The two ends of one worker's list of chunks, packed in one atomic word: the worker takes
//! from the front, thieves from the back, and one compare-and-swap decides each take, so every
//! place between the ends is taken exactly once (checked by the loom model in `ends/loom_model.rs`).

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

/// Places `front..back` of a list not yet taken.
pub(crate) struct Ends(AtomicU64);

/// A view of an [`Ends`], to take its back place with [`Ends::take_back`].
#[derive(Clone, Copy)]
pub(crate) struct Seen(u64);

fn pack(front: u32, back: u32) -> u64 {
    (u64::from(back) << 32) | u64::from(front)
}

fn unpack(v: u64) -> (u32, u32) {
    (v as u32, (v >> 32) as u32)
}

impl Seen {
    /// How many places were left when seen.
    pub(crate) fn left(self) -> u32 {
        let (front, back) = unpack(self.0);
        back.saturating_sub(front)
    }
}

impl Ends {
    /// Places `front..back`.
    pub(crate) fn new(front: u32, back: u32) -> Ends {
        Ends(AtomicU64::new(pack(front, back)))
    }

    /// Takes the front place, or `None` when none is left.
    pub(crate) fn take_front(&self) -> Option<u32> {
        let mut v = self.0.load(Ordering::Acquire);
        loop {
            let (front, back) = unpack(v);
            if front >= back {
                return None;
            }
            match self.0.compare_exchange_weak(
                v,
                pack(front + 1, back),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(front),
                Err(now) => v = now,
            }
        }
    }

    /// The ends as they are now.
    pub(crate) fn seen(&self) -> Seen {
        Seen(self.0.load(Ordering::Acquire))
    }

    /// Takes the back place if the ends are still as `seen` (`None` if they changed or nothing
    /// was left: look again).
    pub(crate) fn take_back(&self, seen: Seen) -> Option<u32> {
        if seen.left() == 0 {
            return None;
        }
        let (front, back) = unpack(seen.0);
        self.0
            .compare_exchange(
                seen.0,
                pack(front, back - 1),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .ok()
            .map(|_| back - 1)
    }
}

#[cfg(all(test, loom))]
mod loom_model;
