//! The spare reference of a control block: a strong count the block keeps for its next queue
//! entry, so that spawn-then-join (the joiner takes its own queue entry back) costs no atomic
//! reference-count operations, and the pooled block ([`Pooled`]) that gives it up when dropped.
//!
//! The flag (`Task::spare_flag`) is touched only by the block's exclusive owner: the spawner
//! before it publishes the block ([`entry_ref`]), the joiner that pops the block's own queue
//! entry ([`keep_entry_ref`]), and its recycler (`pool::recycle`, [`release_spare`]). A block
//! with a spare reference has no queue entry and no run reference, so only its handle's owner
//! ever recycles it.

use crate::task::Task;
use std::sync::Arc;

/// A pooled control block. Dropping it (a pool dropped with its runtime, or trimmed) gives up
/// the block's spare reference, if it has one, so that the block is freed.
pub(crate) struct Pooled(pub(crate) Arc<Task>);

impl Pooled {
    /// The block, out of the pool (its spare reference, if any, stays with it).
    pub(crate) fn take(self) -> Arc<Task> {
        let me = std::mem::ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped, so the Arc is moved out exactly once.
        unsafe { std::ptr::read(&me.0) }
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        // SAFETY: a pooled block is exclusively the pool's.
        unsafe { release_spare(&self.0) };
    }
}

/// A second reference to the new green thread `t`, for its queue entry: the block's spare
/// reference if it has one (no atomic operation), else a new one.
///
/// # Safety
/// The caller owns `t` exclusively (it is being spawned and not yet published).
#[inline]
pub(crate) unsafe fn entry_ref(t: &Arc<Task>) -> Arc<Task> {
    // SAFETY: per the contract the flag is ours; a spare reference is counted in the block's
    // strong count and held by nobody, so it may become this Arc.
    unsafe {
        let spare = t.spare_flag();
        if *spare {
            *spare = false;
            Arc::from_raw(Arc::as_ptr(t))
        } else {
            t.clone()
        }
    }
}

/// A joiner took its thread's queue entry back (spawn, then join): instead of dropping that
/// reference (an atomic decrement) the block keeps it as its spare, for its next spawn.
///
/// # Safety
/// The caller holds `entry` and the thread's join handle, and nobody else holds the block (it
/// never started).
#[inline]
pub(crate) unsafe fn keep_entry_ref(entry: Arc<Task>) {
    // SAFETY: per the contract the flag is ours (a block that has a queue entry has no spare).
    unsafe { *entry.spare_flag() = true };
    std::mem::forget(entry);
}

/// Gives up `t`'s spare reference, if it has one: the block is no longer going to a pool, and
/// the last `Arc` dropped must free it.
///
/// # Safety
/// The caller holds `t` and is the only party that may touch its spare flag (its recycler).
pub(crate) unsafe fn release_spare(t: &Arc<Task>) {
    // SAFETY: per the contract; the spare reference is counted and held by nobody.
    unsafe {
        let spare = t.spare_flag();
        if *spare {
            *spare = false;
            Arc::decrement_strong_count(Arc::as_ptr(t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spare(t: &Arc<Task>) -> bool {
        // SAFETY: the test is the block's only user.
        unsafe { *t.spare_flag() }
    }

    #[test]
    fn a_kept_entry_reference_serves_the_next_spawn_without_a_new_count() {
        let t = Arc::new(Task::new());
        // SAFETY (all calls below): the test owns the block exclusively, as spawner and joiner.
        let entry = unsafe { entry_ref(&t) };
        assert_eq!(
            Arc::strong_count(&t),
            2,
            "the first entry is a new reference"
        );
        unsafe { keep_entry_ref(entry) };
        assert!(spare(&t));
        assert_eq!(
            Arc::strong_count(&t),
            2,
            "the kept reference is still counted"
        );
        let entry = unsafe { entry_ref(&t) };
        assert!(!spare(&t));
        assert_eq!(
            Arc::strong_count(&t),
            2,
            "the spare became the entry: no new count"
        );
        drop(entry);
        assert_eq!(Arc::strong_count(&t), 1);
    }

    #[test]
    fn a_pooled_block_with_a_spare_reference_is_freed_when_the_pool_drops_it() {
        let t = Arc::new(Task::new());
        let weak = Arc::downgrade(&t);
        // SAFETY: as above.
        unsafe { keep_entry_ref(entry_ref(&t)) };
        drop(Pooled(t));
        assert!(weak.upgrade().is_none(), "the block was freed, not leaked");
    }

    #[test]
    fn taking_a_block_out_of_the_pool_keeps_its_spare_reference() {
        let t = Arc::new(Task::new());
        // SAFETY: as above.
        unsafe { keep_entry_ref(entry_ref(&t)) };
        let back = Pooled(t).take();
        assert!(spare(&back));
        assert_eq!(Arc::strong_count(&back), 2);
        drop(Pooled(back));
    }
}
