//! The list of live control blocks, read by the watcher's hang report (`watch/report.rs`):
//! every block is listed when the pools allocate it and unlisted when it is dropped.

use super::Task;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Every control block the runtime allocated and has not dropped (addresses).
static BLOCKS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

fn blocks() -> std::sync::MutexGuard<'static, Vec<usize>> {
    BLOCKS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new control block, listed in the registry. Out of line: the pools' miss path, kept out
/// of the worker loop's code.
#[cold]
#[inline(never)]
pub(crate) fn new_task() -> Arc<Task> {
    let t = Arc::new(Task::new());
    let mut b = blocks();
    t.registry_slot.store(b.len(), Ordering::Relaxed);
    b.push(Arc::as_ptr(&t) as usize);
    t
}

/// Removes a dropped control block from the registry (called by `Task::drop`; listed for the watcher's hang report).
pub(crate) fn forget_block(t: &Task) {
    // Listed or not is fixed at allocation; the slot itself moves (under the lock) when
    // another block's removal swaps this one into its place, so it is read under the lock.
    if t.registry_slot.load(Ordering::Relaxed) == usize::MAX {
        return;
    }
    let mut b = blocks();
    let slot = t.registry_slot.load(Ordering::Relaxed);
    debug_assert_eq!(b[slot], t as *const Task as usize);
    b.swap_remove(slot);
    if let Some(&moved) = b.get(slot) {
        // SAFETY: a listed block is alive until its own `forget_block`, which needs the lock we hold.
        unsafe {
            (*(moved as *const Task))
                .registry_slot
                .store(slot, Ordering::Relaxed)
        };
    }
}

/// Calls `f` with every listed control block (under the registry's lock: `f` must not drop a
/// control block).
pub(crate) fn for_each_block(mut f: impl FnMut(&Task)) {
    let b = blocks();
    for &p in b.iter() {
        // SAFETY: as in `forget_block`.
        f(unsafe { &*(p as *const Task) });
    }
}

#[cfg(test)]
mod block_list_tests {
    use super::*;

    /// Four threads allocate and drop listed control blocks at once (removals swap blocks
    /// into freed slots): every block ends unlisted, and every listed block's slot is its
    /// index.
    #[test]
    fn registry_stays_consistent_under_concurrent_churn() {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let mut held = Vec::new();
                    let mut mine = Vec::new();
                    for i in 0..5_000 {
                        let t = new_task();
                        mine.push(Arc::as_ptr(&t) as usize);
                        held.push(t);
                        if i % 3 == 0 {
                            held.swap_remove(i % held.len());
                        }
                    }
                    drop(held);
                    mine
                })
            })
            .collect();
        let mut addrs = Vec::new();
        for t in threads {
            addrs.extend(t.join().unwrap());
        }
        let b = blocks();
        for (i, &p) in b.iter().enumerate() {
            // SAFETY: listed blocks are alive while the lock is held.
            let slot = unsafe { (*(p as *const Task)).registry_slot.load(Ordering::Relaxed) };
            assert_eq!(slot, i);
        }
        // Other tests of this binary may list blocks meanwhile, at addresses freed here; so
        // this checks the count of ours only loosely: none of the 20,000 is left in bulk.
        let left = addrs.iter().filter(|a| b.contains(a)).count();
        assert!(left < 100, "{left} dropped blocks still listed");
    }
}
