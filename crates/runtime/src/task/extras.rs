//! What the scheduling features keep per green thread beside its mechanism: the affinity
//! policy's record, placement hints and binding, thread shuffling's marks and the watcher's
//! wait record.
//!
//! The control block ([`Task`](super::Task)) holds one [`TaskExtras`] and hands it out by
//! `Task::extras`; the fields are written by the features that own them (`ready.rs`,
//! `placement/`, `watch/`), each under the rule its doc states. `Task::init` resets them for a
//! new green thread ([`TaskExtras::reset`]).

use super::Task;
use footprint_affinity::ThreadAffinity;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// A green thread's research state (see the module doc). The order is fixed (`repr(C)`) so
/// that `bound` comes last, in the control block's line of hand-off bytes (see `Task`).
#[repr(C)]
pub(crate) struct TaskExtras {
    /// What it last parked on (`watch/record.rs`).
    pub(crate) wait: crate::watch::record::WaitRecord,
    /// The affinity policy's record of this thread (last worker, virtual-time stamp, miss
    /// history, footprint). Touched only when the runtime orders its ready threads by a
    /// [`ReadyOrder::Policy`](crate::ReadyOrder::Policy): written at every stop by the worker
    /// holding the run reference, read for the ready key by whoever pushes it on a ready
    /// structure (after the park/unpark or inbox hand-over, which orders the accesses).
    /// Boxed on the first stop under a policy and kept with the pooled block, so the default
    /// orders carry one word here, not 80 bytes (`None` reads as a thread that never ran).
    affinity: UnsafeCell<Option<Box<ThreadAffinity>>>,
    /// The placement hints of this thread (`GreenBuilder::fragment`, `partner`, `rival`,
    /// `set_fragment`). `None` for a thread without hints, so the wake path pays one load.
    /// Written by the creator before the thread is published, by the thread itself while it
    /// runs, and cleared when it finishes (`placement::on_finish`); read by whoever places it
    /// (after the park/unpark or queue hand-over, which orders the accesses).
    pub(crate) hints: UnsafeCell<Option<Box<PlacementHints>>>,
    /// Thread shuffling (003): nanoseconds parked in locks (written by the thread itself), the
    /// home worker a shuffling decision gave it ([`NO_HOME`]: none), and whether the monitor
    /// holds it.
    pub(crate) lock_wait_ns: AtomicU64,
    pub(crate) shuffle_home: AtomicUsize,
    pub(crate) shuffle_monitored: AtomicBool,
    /// Placed by a hint or `migrate_to` (it waits in a bound queue): its joiner must not run it
    /// inline on the joiner's worker, which would defeat the placement.
    pub(crate) bound: AtomicBool,
}

/// [`TaskExtras::shuffle_home`] of a thread that shuffling gave no home.
pub(crate) const NO_HOME: usize = usize::MAX;

impl TaskExtras {
    pub(crate) fn new() -> TaskExtras {
        TaskExtras {
            affinity: UnsafeCell::new(None),
            hints: UnsafeCell::new(None),
            bound: AtomicBool::new(false),
            lock_wait_ns: AtomicU64::new(0),
            shuffle_home: AtomicUsize::new(NO_HOME),
            shuffle_monitored: AtomicBool::new(false),
            wait: Default::default(),
        }
    }

    /// Resets the state of the block's previous green thread for a new one (the hints were
    /// cleared when that one finished or was recycled).
    ///
    /// # Safety
    /// The caller owns the block exclusively (`Task::init`'s contract).
    #[inline]
    pub(crate) unsafe fn reset(&self) {
        // SAFETY: exclusive access per the contract.
        unsafe {
            if let Some(a) = (*self.affinity.get()).as_deref_mut() {
                *a = ThreadAffinity::new();
            }
            debug_assert!((*self.hints.get()).is_none());
        }
        self.bound.store(false, Ordering::Relaxed);
        self.lock_wait_ns.store(0, Ordering::Relaxed);
        self.shuffle_home.store(NO_HOME, Ordering::Relaxed);
    }

    /// The affinity record (see the field).
    ///
    /// # Safety
    /// No one writes the record meanwhile (see the field).
    #[inline]
    pub(crate) unsafe fn affinity(&self) -> &ThreadAffinity {
        static NEVER_RAN: ThreadAffinity = ThreadAffinity::new();
        // SAFETY: per the contract.
        unsafe { (*self.affinity.get()).as_deref().unwrap_or(&NEVER_RAN) }
    }

    /// The affinity record for writing, boxed on first use.
    ///
    /// # Safety
    /// The caller holds the run reference (see the field).
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn affinity_mut(&self) -> &mut ThreadAffinity {
        // SAFETY: per the contract.
        unsafe { (*self.affinity.get()).get_or_insert_with(|| Box::new(ThreadAffinity::new())) }
    }

    /// Whether the thread has placement hints.
    ///
    /// # Safety
    /// As for reading the `hints` field (see there).
    #[inline]
    pub(crate) unsafe fn has_hints(&self) -> bool {
        // SAFETY: per the contract.
        unsafe { (*self.hints.get()).is_some() }
    }
}

/// A green thread's placement hints (see `crate::placement`).
#[derive(Clone, Default)]
pub(crate) struct PlacementHints {
    /// The data fragment it works on: `(id, bytes)` (001).
    pub(crate) fragment: Option<(u64, usize)>,
    /// Run on the same worker as this thread (004 §5.3, attract).
    pub(crate) partner: Option<Arc<Task>>,
    /// Run on another worker than this thread (004 §5.3, repulse).
    pub(crate) rival: Option<Arc<Task>>,
    /// The ready key of its fragment batch on its worker (smaller first).
    pub(crate) batch_order: u64,
}

impl PlacementHints {
    /// Whether any hint is set.
    pub(crate) fn is_empty(&self) -> bool {
        self.fragment.is_none() && self.partner.is_none() && self.rival.is_none()
    }
}

impl std::fmt::Debug for PlacementHints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlacementHints")
            .field("fragment", &self.fragment)
            .field("partner", &self.partner.is_some())
            .field("rival", &self.rival.is_some())
            .finish()
    }
}
