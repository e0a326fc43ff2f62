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

use footprint_locks::WaitOn;
use std::panic::Location;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

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
    /// Where the wait was called, when the waiting call tracks its caller.
    pub(crate) at: Option<&'static Location<'static>>,
}

/// The last wait a green thread noted (written by the thread itself, read by reports).
#[derive(Debug, Default)]
pub(crate) struct WaitRecord {
    kind: AtomicU8,
    addr: AtomicUsize,
    a: AtomicUsize,
    b: AtomicUsize,
    runtime: AtomicUsize,
    at: AtomicPtr<Location<'static>>,
}

impl WaitRecord {
    /// Notes a wait of the calling green thread (on its runtime `runtime`).
    #[inline]
    pub(crate) fn note(&self, w: Wait) {
        let Wait {
            kind,
            addr,
            a,
            b,
            runtime,
            at,
        } = w;
        let at = at.map_or(std::ptr::null_mut(), |l| std::ptr::from_ref(l).cast_mut());
        self.at.store(at, Ordering::Relaxed);
        self.kind.store(kind as u8, Ordering::Relaxed);
        self.addr.store(addr, Ordering::Relaxed);
        self.a.store(a, Ordering::Relaxed);
        self.b.store(b, Ordering::Relaxed);
        self.runtime.store(runtime, Ordering::Relaxed);
    }

    /// Notes a wait a lock told through the scheduler hook.
    pub(crate) fn note_lock(&self, what: WaitOn, runtime: usize) {
        let mut at = None;
        let (kind, addr, a, b) = match what {
            WaitOn::Lock(p) => (WaitKind::Lock, p, 0, 0),
            WaitOn::RwLock(p) => (WaitKind::RwLock, p, 0, 0),
            WaitOn::Barrier {
                addr,
                arrived,
                expected,
                at: called,
            } => {
                at = Some(called);
                (WaitKind::Barrier, addr, arrived, expected)
            }
            WaitOn::Condvar(p) => (WaitKind::Condvar, p, 0, 0),
            WaitOn::Channel { addr, send: true } => (WaitKind::ChannelSend, addr, 0, 0),
            WaitOn::Channel { addr, send: false } => (WaitKind::ChannelRecv, addr, 0, 0),
            WaitOn::Semaphore(p) => (WaitKind::Semaphore, p, 0, 0),
            WaitOn::Once(p) => (WaitKind::Once, p, 0, 0),
            _ => (WaitKind::Unknown, 0, 0, 0),
        };
        self.note(Wait {
            kind,
            addr,
            a,
            b,
            runtime,
            at,
        });
    }

    pub(crate) fn read(&self) -> Wait {
        Wait {
            kind: WaitKind::from_u8(self.kind.load(Ordering::Relaxed)),
            addr: self.addr.load(Ordering::Relaxed),
            a: self.a.load(Ordering::Relaxed),
            b: self.b.load(Ordering::Relaxed),
            runtime: self.runtime.load(Ordering::Relaxed),
            // SAFETY: only `&'static Location`s (or null) are stored.
            at: unsafe { self.at.load(Ordering::Relaxed).cast_const().as_ref() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noted_wait_reads_back() {
        let r = WaitRecord::default();
        let here = Location::caller();
        r.note_lock(
            WaitOn::Barrier {
                addr: 0x1000,
                arrived: 3,
                expected: 4,
                at: here,
            },
            7,
        );
        let w = r.read();
        assert_eq!(
            (w.kind, w.addr, w.a, w.b, w.runtime),
            (WaitKind::Barrier, 0x1000, 3, 4, 7)
        );
        assert_eq!(w.at, Some(here));
        r.note_lock(WaitOn::Lock(0x2000), 7);
        let w = r.read();
        assert_eq!((w.kind, w.addr, w.at), (WaitKind::Lock, 0x2000, None));
    }
}
