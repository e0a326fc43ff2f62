//! Pools of control blocks and stacks (ELiTE's processor / node pools): a worker-local level
//! touched only by the worker's OS thread, overflowing to a shared level in [`Shared`].
//!
//! Stacks of the runtime's size come from its slabs (`stack.rs`) and always go back to a pool:
//! the stack pools grow to the most stacks ever live at once and keep them, so a burst of a
//! million blocked threads is paid for once. The live-stack count is kept only under a
//! `Builder::max_stacks` cap. When a stack cannot be made, spawning is refused (with the same
//! error) until a stack comes back.

use crate::error::Error;
use crate::spare::{release_spare, Pooled};
use crate::stack::GreenStack;
use crate::sync::Mutex;
use crate::task::Task;
use crate::worker::local::WorkerLocal;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

pub(crate) mod levels;

const LOCAL_TASKS: usize = 256;
const SHARED_TASKS: usize = 4096;
const LOCAL_STACKS: usize = 16;

/// The sizes of one two-level pool: what a worker keeps, what the shared level may hold, and
/// how many a worker takes from the shared level at once.
#[derive(Clone, Copy, Debug)]
pub struct Levels {
    /// Items a worker's own level keeps; past it, half go to the shared level.
    pub local: usize,
    /// Items the shared level may hold; when a half would not fit, the surplus is dropped.
    pub shared: usize,
    /// Items a worker with an empty level takes from the shared level at once.
    pub batch: usize,
}

const TASK_LEVELS: Levels = Levels {
    local: LOCAL_TASKS,
    shared: SHARED_TASKS,
    batch: 32,
};

/// Stacks: the shared level keeps every stack given back (the pools grow to the most stacks
/// ever live at once), and a worker takes one at a time from it.
const STACK_LEVELS: Levels = Levels {
    local: LOCAL_STACKS,
    shared: usize::MAX / 2,
    batch: 1,
};

/// Takes an item from a worker's own level `local`, refilling it from the shared level with up
/// to `levels.batch` items (one lock) when it is empty; `None` when both are empty.
#[inline]
pub fn take_pooled<T>(local: &mut Vec<T>, shared: &Mutex<Vec<T>>, levels: Levels) -> Option<T> {
    match local.pop() {
        Some(t) => Some(t),
        None => refill(local, shared, levels),
    }
}

/// [`take_pooled`] with an empty own level.
#[cold]
fn refill<T>(local: &mut Vec<T>, shared: &Mutex<Vec<T>>, levels: Levels) -> Option<T> {
    {
        let mut g = shared.lock().unwrap_or_else(|e| e.into_inner());
        let k = g.len().min(levels.batch);
        let at = g.len() - k;
        local.extend(g.drain(at..));
    }
    local.pop()
}

/// Puts `item` on a worker's own level `local`; a full level first moves half of itself to the
/// shared level (one lock), or, when the shared level has no room for them, drops what is
/// over `levels.local`.
#[inline]
pub fn put_pooled<T>(local: &mut Vec<T>, shared: &Mutex<Vec<T>>, levels: Levels, item: T) {
    if local.len() < levels.local {
        local.push(item);
    } else {
        spill(local, shared, levels, item);
    }
}

/// [`put_pooled`] with a full own level.
#[cold]
fn spill<T>(local: &mut Vec<T>, shared: &Mutex<Vec<T>>, levels: Levels, item: T) {
    let mut g = shared.lock().unwrap_or_else(|e| e.into_inner());
    let k = levels.local / 2;
    if g.len() + k <= levels.shared {
        let at = local.len() - k;
        g.extend(local.drain(at..));
    }
    drop(g);
    local.push(item);
    local.truncate(levels.local);
}

impl WorkerLocal {
    #[inline]
    pub(crate) fn take_task(&self) -> Arc<Task> {
        // SAFETY: owner-only pool, no borrow escapes this call.
        let pool = unsafe { &mut *self.pools().tasks.get() };
        take_pooled(pool, &self.shared().pools().tasks, TASK_LEVELS)
            .map(Pooled::take)
            .unwrap_or_else(crate::task::blocks::new_task)
    }

    #[inline]
    fn put_task(&self, t: Arc<Task>) {
        let t = Pooled(t);
        // SAFETY: owner-only pool.
        let pool = unsafe { &mut *self.pools().tasks.get() };
        put_pooled(pool, &self.shared().pools().tasks, TASK_LEVELS, t);
    }

    /// A stack of `size` usable bytes: pooled when it is the runtime's size, else fresh. The
    /// error names the limit that was hit (the live-stack cap, or the OS's refusal).
    pub(crate) fn take_stack(&self, size: usize) -> Result<GreenStack, Error> {
        let shared = self.shared();
        shared.stack_limits().take()?;
        let made = if size == shared.stack_size() {
            // SAFETY: owner-only pool.
            let pool = unsafe { &mut *self.pools().stacks.get() };
            if let Some(s) = take_pooled(pool, &shared.pools().stacks, STACK_LEVELS) {
                return Ok(s);
            }
            shared.slabs().carve()
        } else {
            GreenStack::own(size, shared.guard_pages())
        };
        match made {
            Ok(s) => {
                shared.count_stack_mapped();
                Ok(s)
            }
            Err(e) => {
                shared.stack_limits().refuse(&e);
                shared.stack_limits().untake();
                Err(Error::Stack(e))
            }
        }
    }

    /// Returns a stack taken with `take_stack(size)`.
    pub(crate) fn put_stack(&self, s: GreenStack, size: usize) {
        let shared = self.shared();
        shared.stack_limits().give_back();
        if size != shared.stack_size() {
            return; // a mapping of its own: dropping it unmaps it
        }
        // SAFETY: owner-only pool.
        let pool = unsafe { &mut *self.pools().stacks.get() };
        put_pooled(pool, &shared.pools().stacks, STACK_LEVELS, s);
    }

    /// Gives up a stack that must not be reused (its thread overflowed it and was abandoned):
    /// a slab slot is leaked, a mapping of its own is unmapped.
    pub(crate) fn discard_stack(&self, s: GreenStack) {
        self.shared().stack_limits().give_back();
        drop(s);
    }
}

/// Returns a finished control block to the pool of the worker the caller runs on, when the
/// caller holds its last reference (besides its spare one); otherwise gives up the spare
/// reference and drops the caller's.
pub(crate) fn recycle(task: Arc<Task>) {
    // SAFETY: a worker read just now, on the calling OS thread.
    unsafe { recycle_on(task, crate::context::current_worker_ptr()) }
}

/// [`recycle`] with the calling OS thread's worker already read (null off a worker). In line:
/// a block without a name, scope, waiter, locals or hints goes to the pool with two loads and
/// a push.
///
/// # Safety
/// `w` is null or the calling OS thread's worker, read since the caller last yielded or parked.
#[inline]
pub(crate) unsafe fn recycle_on(task: Arc<Task>, w: *const WorkerLocal) {
    // SAFETY: per the contract `w` is null or our live worker, whose pools are touched only by
    // its OS thread. The caller of `recycle` is the block's recycler (the spare flag is its).
    unsafe {
        let mine = 1 + usize::from(*task.spare_flag());
        // Unique: no other Arc (we never make Weak ones), so nobody else can reach the block.
        if w.is_null() || Arc::strong_count(&task) != mine {
            release_spare(&task);
            return;
        }
        fence(Ordering::Acquire);
        if task.has_coroutine() {
            release_spare(&task);
            return;
        }
        // `Task::init` relies on these being `None` in a pooled block.
        if task.holds_leftovers() {
            task.clear_leftovers();
        }
        (*w).put_task(task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spare::{entry_ref, keep_entry_ref};

    #[test]
    fn recycling_off_a_worker_gives_the_spare_reference_up() {
        let t = Arc::new(Task::new());
        let weak = Arc::downgrade(&t);
        // SAFETY: the test owns the block exclusively, as spawner and joiner.
        unsafe { keep_entry_ref(entry_ref(&t)) };
        // Not on a worker: no pool to return to, so the block must be freed.
        recycle(t);
        assert!(weak.upgrade().is_none(), "the block was freed, not leaked");
    }
}
