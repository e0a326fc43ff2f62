//! A reader-writer lock whose waiters park green threads, informing like the mutexes.
//!
//! One state word: bit 0 is the writer, the rest counts readers. A separate count of waiting
//! writers gives writers priority: while a writer waits, arriving readers wait too, so a stream
//! of readers cannot starve a writer. (A stream of writers can delay readers; readers that were
//! waiting all enter together as soon as no writer holds or waits.)
//!
//! Waiting follows the lock's [`WaitPolicy`] (informed by default: hand-off to higher classes,
//! spin while the expected wait is short, park otherwise), with readers and writers parked under
//! two keys of one queue. Protocol (no lost wake-up): every change that can let a waiter in (a
//! release, a writer giving up) is a `SeqCst` read-modify-write followed by a check for parked
//! threads; a waiter re-checks its condition after linking itself (see `WaitQueue`).

use crate::hook::PriorityClass;
use crate::stats::LockTimesSnapshot;
use crate::sync::{AtomicUsize, Ordering};
use crate::wait::{wait_until, ClassScope, HeldToken, Informed, LockMeta, WaitFor, WaitPolicy};
use std::marker::PhantomData;

const WRITER: usize = 1;
const READER: usize = 2;
const READ_KEY: usize = 0;
const WRITE_KEY: usize = 1;

/// The raw reader-writer lock behind [`RwLock`](crate::RwLock) (implements `lock_api::RawRwLock` and
/// `RawRwLockDowngrade`).
pub struct RawRwLock<W: WaitPolicy = Informed> {
    state: AtomicUsize,
    writers_waiting: AtomicUsize,
    meta: LockMeta,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> RawRwLock<W> {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawRwLock {
            state: AtomicUsize::new(0),
            writers_waiting: AtomicUsize::new(0),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        RawRwLock {
            state: AtomicUsize::new(0),
            writers_waiting: AtomicUsize::new(0),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    fn try_read(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & WRITER == 0
            && self.writers_waiting.load(Ordering::Relaxed) == 0
            && s.checked_add(READER).is_some()
            && self
                .state
                .compare_exchange_weak(s, s + READER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    fn try_write(&self) -> bool {
        self.state
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    fn waiting<'a>(&'a self, key: usize, scope: &'a ClassScope) -> WaitFor<'a> {
        WaitFor {
            queue: &self.meta.queue,
            key,
            expected_ns: self.meta.history.mean_ns(),
            holder_tid: self.meta.holder_tid.load(Ordering::Relaxed),
            awaited: self.meta.awaited(),
            class: PriorityClass::Waiter,
            cell: scope.cell(),
            what: crate::hook::WaitOn::RwLock(self as *const Self as usize),
        }
    }

    /// Acquires shared access, waiting as the policy says.
    pub fn read(&self) -> HeldToken {
        let scope = ClassScope::enter::<W>();
        if self.try_read() {
            return scope.into_held(&self.meta);
        }
        self.read_slow(scope)
    }

    #[cold]
    fn read_slow(&self, scope: ClassScope) -> HeldToken {
        scope.publish(PriorityClass::Waiter);
        self.meta.history.start_sampling();
        let w = self.waiting(READ_KEY, &scope);
        let mut waited = 0;
        loop {
            waited += wait_until::<W>(&w, &mut || {
                self.state.load(Ordering::SeqCst) & WRITER == 0
                    && self.writers_waiting.load(Ordering::SeqCst) == 0
            });
            if self.try_read() {
                break;
            }
        }
        self.meta.times.add_wait(waited);
        scope.into_held(&self.meta)
    }

    /// Acquires shared access if that needs no waiting.
    pub fn try_read_token(&self) -> Option<HeldToken> {
        let scope = ClassScope::enter::<W>();
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & WRITER != 0 || self.writers_waiting.load(Ordering::Relaxed) != 0 {
                return None;
            }
            if self
                .state
                .compare_exchange_weak(s, s + READER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Some(scope.into_held(&self.meta));
            }
        }
    }

    /// Acquires exclusive access, waiting as the policy says.
    pub fn write(&self) -> HeldToken {
        let scope = ClassScope::enter::<W>();
        if self.try_write() {
            return scope.into_held(&self.meta);
        }
        self.write_slow(scope)
    }

    #[cold]
    fn write_slow(&self, scope: ClassScope) -> HeldToken {
        scope.publish(PriorityClass::Waiter);
        self.meta.history.start_sampling();
        self.writers_waiting.fetch_add(1, Ordering::SeqCst);
        let w = self.waiting(WRITE_KEY, &scope);
        let mut waited = 0;
        loop {
            waited += wait_until::<W>(&w, &mut || self.state.load(Ordering::SeqCst) == 0);
            if self.try_write() {
                break;
            }
        }
        // Readers blocked on us stay blocked: we hold the lock now.
        self.writers_waiting.fetch_sub(1, Ordering::SeqCst);
        self.meta.times.add_wait(waited);
        scope.into_held(&self.meta)
    }

    /// Releases shared access.
    ///
    /// # Safety
    /// The caller holds shared access through `token`.
    pub unsafe fn unlock_read(&self, token: HeldToken) {
        token.releasing(&self.meta);
        let prev = self.state.fetch_sub(READER, Ordering::SeqCst);
        if prev == READER && self.meta.queue.has_waiters() {
            // The last reader left: a waiting writer may enter.
            self.meta.queue.notify(1, &|k| k == WRITE_KEY);
        }
        token.released();
    }

    /// Releases exclusive access.
    ///
    /// # Safety
    /// The caller holds exclusive access through `token`.
    pub unsafe fn unlock_write(&self, token: HeldToken) {
        token.releasing(&self.meta);
        self.state.fetch_and(!WRITER, Ordering::SeqCst);
        self.wake_after_writer();
        token.released();
    }

    /// After a writer left (or turned reader): the next writer if one waits, else every reader.
    fn wake_after_writer(&self) {
        if !self.meta.queue.has_waiters() {
            return;
        }
        if self.writers_waiting.load(Ordering::SeqCst) != 0
            && self.meta.queue.notify(1, &|k| k == WRITE_KEY) == 1
        {
            return;
        }
        self.meta.queue.notify(usize::MAX, &|k| k == READ_KEY);
    }

    /// Turns exclusive access into shared access without letting a writer in between.
    ///
    /// # Safety
    /// The caller holds exclusive access through `token`; it then holds shared access.
    pub unsafe fn downgrade_token(&self, token: HeldToken) -> HeldToken {
        self.state.fetch_add(READER - WRITER, Ordering::SeqCst);
        if self.meta.queue.has_waiters() {
            self.meta.queue.notify(usize::MAX, &|k| k == READ_KEY);
        }
        token
    }

    /// This lock's wait and hold times (see [`crate::stats`]).
    pub fn times(&self) -> LockTimesSnapshot {
        self.meta.times.snapshot()
    }
}

impl<W: WaitPolicy> Default for RawRwLock<W> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(not(loom))]
// SAFETY: shared access only while the writer bit is clear (Acquire CAS), exclusive access only
// from 0 (Acquire CAS); releases are SeqCst read-modify-writes.
unsafe impl<W: WaitPolicy> lock_api::RawRwLock for RawRwLock<W> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self::new();
    type SharedGuard = HeldToken;
    type ExclusiveGuard = HeldToken;

    #[inline]
    fn lock_shared(&self) -> HeldToken {
        self.read()
    }
    #[inline]
    fn try_lock_shared(&self) -> Option<HeldToken> {
        self.try_read_token()
    }
    #[inline]
    unsafe fn unlock_shared(&self, guard: HeldToken) {
        // SAFETY: lock_api passes the token of the shared acquisition being released.
        unsafe { self.unlock_read(guard) }
    }
    #[inline]
    fn lock_exclusive(&self) -> HeldToken {
        self.write()
    }
    #[inline]
    fn try_lock_exclusive(&self) -> Option<HeldToken> {
        let scope = ClassScope::enter::<W>();
        self.try_write().then(|| scope.into_held(&self.meta))
    }
    #[inline]
    unsafe fn unlock_exclusive(&self, guard: HeldToken) {
        // SAFETY: lock_api passes the token of the exclusive acquisition being released.
        unsafe { self.unlock_write(guard) }
    }
    fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) != 0
    }
    fn is_locked_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) & WRITER != 0
    }
}

#[cfg(not(loom))]
// SAFETY: the writer bit becomes one reader in one atomic step.
unsafe impl<W: WaitPolicy> lock_api::RawRwLockDowngrade for RawRwLock<W> {
    unsafe fn downgrade(&self, guard: HeldToken) -> HeldToken {
        // SAFETY: lock_api passes the token of the exclusive acquisition.
        unsafe { self.downgrade_token(guard) }
    }
}
