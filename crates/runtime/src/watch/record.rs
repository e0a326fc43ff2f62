//! What each parked green thread waits on, and the registry of control blocks through which the
//! watcher finds them.
//!
//! A green thread notes what it is about to park on (a lock, barrier, condition variable,
//! channel, join, sleep) in its control block's [`WaitRecord`] just before it parks: the locks
//! through `SchedulerHook::note_wait`, the runtime's own waits directly. The record is a handful
//! of relaxed stores on the park path only (never on a yield, spawn or resume); a reader may
//! see a torn record while the thread re-parks, which a diagnostic report tolerates.
//!
//! Every control block the runtime allocates is listed in one process-wide registry (added when
//! allocated, removed when dropped; blocks are pooled, so this is rare), so a report can visit
//! every block and pick those parked on its runtime.

use crate::task::Task;
use footprint_locks::WaitOn;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What a parked thread waits on (the record's `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum WaitKind {
    /// Parked through `footprint::park::park` or without a note.
    Unknown = 0,
    Lock,
    RwLock,
    /// `a` = arrived, `b` = expected.
    Barrier,
    Condvar,
    ChannelSend,
    ChannelRecv,
    Semaphore,
    Once,
    /// `addr` = the joined thread's control block.
    Join,
    /// The stolen half of a `join`, or the threads of a `scope`.
    JoinHalf,
    Scope,
    /// `footprint::sleep` (a timer entry wakes it).
    Sleep,
    Park,
}

impl WaitKind {
    fn from_u8(v: u8) -> WaitKind {
        use WaitKind::*;
        [
            Unknown,
            Lock,
            RwLock,
            Barrier,
            Condvar,
            ChannelSend,
            ChannelRecv,
            Semaphore,
            Once,
            Join,
            JoinHalf,
            Scope,
            Sleep,
            Park,
        ]
        .get(v as usize)
        .copied()
        .unwrap_or(Unknown)
    }
}

/// A copy of a [`WaitRecord`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wait {
    pub(crate) kind: WaitKind,
    pub(crate) addr: usize,
    pub(crate) a: usize,
    pub(crate) b: usize,
    /// The runtime (`Shared` address) of the thread when it noted the wait.
    pub(crate) runtime: usize,
}

/// The last wait a green thread noted (written by the thread itself, read by reports).
#[derive(Debug, Default)]
pub(crate) struct WaitRecord {
    kind: AtomicU8,
    addr: AtomicUsize,
    a: AtomicUsize,
    b: AtomicUsize,
    runtime: AtomicUsize,
}

impl WaitRecord {
    /// Notes a wait of the calling green thread (on its runtime `runtime`).
    #[inline]
    pub(crate) fn note(&self, kind: WaitKind, addr: usize, a: usize, b: usize, runtime: usize) {
        self.kind.store(kind as u8, Ordering::Relaxed);
        self.addr.store(addr, Ordering::Relaxed);
        self.a.store(a, Ordering::Relaxed);
        self.b.store(b, Ordering::Relaxed);
        self.runtime.store(runtime, Ordering::Relaxed);
    }

    /// Notes a wait a lock told through the scheduler hook.
    pub(crate) fn note_lock(&self, what: WaitOn, runtime: usize) {
        let (kind, addr, a, b) = match what {
            WaitOn::Lock(p) => (WaitKind::Lock, p, 0, 0),
            WaitOn::RwLock(p) => (WaitKind::RwLock, p, 0, 0),
            WaitOn::Barrier {
                addr,
                arrived,
                expected,
            } => (WaitKind::Barrier, addr, arrived, expected),
            WaitOn::Condvar(p) => (WaitKind::Condvar, p, 0, 0),
            WaitOn::Channel { addr, send: true } => (WaitKind::ChannelSend, addr, 0, 0),
            WaitOn::Channel { addr, send: false } => (WaitKind::ChannelRecv, addr, 0, 0),
            WaitOn::Semaphore(p) => (WaitKind::Semaphore, p, 0, 0),
            WaitOn::Once(p) => (WaitKind::Once, p, 0, 0),
            _ => (WaitKind::Unknown, 0, 0, 0),
        };
        self.note(kind, addr, a, b, runtime);
    }

    pub(crate) fn read(&self) -> Wait {
        Wait {
            kind: WaitKind::from_u8(self.kind.load(Ordering::Relaxed)),
            addr: self.addr.load(Ordering::Relaxed),
            a: self.a.load(Ordering::Relaxed),
            b: self.b.load(Ordering::Relaxed),
            runtime: self.runtime.load(Ordering::Relaxed),
        }
    }
}

/// Notes a wait of the calling green thread, if the caller is one (the runtime's own waits).
#[inline]
pub(crate) fn note_current(kind: WaitKind, addr: usize, a: usize, b: usize) {
    let t = crate::context::current_task_ptr();
    if !t.is_null() {
        let rt = crate::context::current_shared() as usize;
        // SAFETY: the running green thread's control block is alive while it runs.
        unsafe { (*t).wait.note(kind, addr, a, b, rt) };
    }
}

/// Every control block the runtime allocated and has not dropped (addresses).
static BLOCKS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn blocks() -> std::sync::MutexGuard<'static, Vec<usize>> {
    BLOCKS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new control block, listed in the registry.
pub(crate) fn new_task() -> Arc<Task> {
    let t = Arc::new(Task::new());
    let mut b = blocks();
    t.registry_slot.store(b.len(), Ordering::Relaxed);
    b.push(Arc::as_ptr(&t) as usize);
    t
}

/// Removes a dropped control block from the registry (called by `Task::drop`).
pub(crate) fn forget(t: &Task) {
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
        // SAFETY: a listed block is alive until its own `forget`, which needs the lock we hold.
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
        // SAFETY: as in `forget`.
        f(unsafe { &*(p as *const Task) });
    }
}
