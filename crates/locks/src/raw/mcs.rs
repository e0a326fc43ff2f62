//! MCS queue lock (Mellor-Crummey & Scott), in the form whose queue nodes live on the waiters'
//! stacks only while they wait: the lock itself stands in for the holder's node, so `unlock`
//! needs no node and `lock_api::RawMutex` can be implemented. The informing protocol is 002's
//! Figure 1.

use super::{impl_raw_mutex, RawLock};
use crate::hook::{ClassCell, PriorityClass};
use crate::stats::LockTimesSnapshot;
use crate::sync::{spin_hint, AtomicBool, AtomicPtr, Ordering};
use crate::wait::{
    wait_until, ClassScope, HeldToken, Informed, LockMeta, WaitFor, WaitMode, WaitPolicy,
};
use crossbeam_utils::CachePadded;
use std::marker::PhantomData;
use std::ptr;

/// A waiter's queue node (on its stack while it waits).
struct McsNode {
    next: AtomicPtr<McsNode>,
    waiting: AtomicBool,
    /// The waiter's class cell (null when not informing), for promotion by its predecessor.
    class: *const ClassCell,
}

/// `tail` value meaning "held, nobody queued": the lock itself acts as the holder's node.
fn held() -> *mut McsNode {
    ptr::without_provenance_mut(1)
}

/// MCS lock: FIFO; each waiter spins (or parks) on its own node, so a release touches one
/// waiter's cache line only.
///
/// Classes (002 Fig. 1): a waiter whose predecessor is the holder publishes `ImmediateWaiter`
/// itself; otherwise it links behind its predecessor first and then moves itself to `Waiter`
/// with one compare-and-swap that fails if its predecessor promoted it meanwhile. A thread that
/// becomes holder promotes its successor to `ImmediateWaiter`, and a releaser raises its successor
/// to `Holder` before handing over, each with `ClassCell::compare_exchange`.
pub struct RawMcsLock<W: WaitPolicy = Informed> {
    tail: CachePadded<AtomicPtr<McsNode>>,
    /// The holder's successor (the `next` field of the lock-as-node).
    next: AtomicPtr<McsNode>,
    meta: LockMeta,
    _policy: PhantomData<W>,
}

// SAFETY: the node pointers refer to nodes that their waiting owners keep alive until granted;
// all shared state is atomic.
unsafe impl<W: WaitPolicy> Send for RawMcsLock<W> {}
// SAFETY: as above.
unsafe impl<W: WaitPolicy> Sync for RawMcsLock<W> {}

/// Raises `cell` to `to` unless it is already at least that high; at most two compare-and-swaps
/// (the owner may move itself from its saved class to `Waiter` in between).
fn promote(cell: *const ClassCell, to: PriorityClass) {
    // SAFETY: the cell belongs to a thread that is inside this lock's `lock()` (it waits on its
    // node), so it is alive (hook contract).
    let Some(cell) = (unsafe { cell.as_ref() }) else {
        return;
    };
    for _ in 0..2 {
        let cur = cell.get();
        if cur >= to || cell.compare_exchange(cur, to).is_ok() {
            return;
        }
    }
}

impl<W: WaitPolicy> RawMcsLock<W> {
    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        RawMcsLock {
            tail: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
            next: AtomicPtr::new(ptr::null_mut()),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        RawMcsLock {
            tail: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
            next: AtomicPtr::new(ptr::null_mut()),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    #[cold]
    fn lock_slow(&self, scope: ClassScope) -> HeldToken {
        self.meta.history.start_sampling();
        let node = McsNode {
            next: AtomicPtr::new(ptr::null_mut()),
            waiting: AtomicBool::new(true),
            class: scope.cell,
        };
        let me = &node as *const McsNode as *mut McsNode;
        // Enqueue (or take the lock if it became free).
        let prev = loop {
            let prev = self.tail.load(Ordering::Relaxed);
            if prev.is_null() {
                if self
                    .tail
                    .compare_exchange(prev, held(), Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return scope.into_held(&self.meta);
                }
                continue;
            }
            if self
                .tail
                .compare_exchange(prev, me, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                break prev;
            }
            spin_hint();
        };
        let class = if prev == held() {
            // Our predecessor holds the lock: we are next. Publish first, then link (002 l. 10-13).
            scope.publish(PriorityClass::ImmediateWaiter);
            self.next.store(me, Ordering::Release);
            PriorityClass::ImmediateWaiter
        } else {
            // SAFETY: `prev` is a waiting node; its owner cannot leave `lock()` before it has seen
            // our link (it waits for `next` when the tail is not its own node any more).
            unsafe { (*prev).next.store(me, Ordering::Release) };
            // Link first, then lower ourselves unless promoted meanwhile (002 l. 14-16).
            match scope.cell() {
                Some(c) => match c.compare_exchange(scope.saved, PriorityClass::Waiter) {
                    Ok(_) => PriorityClass::Waiter,
                    Err(now) => now,
                },
                None => PriorityClass::Waiter,
            }
        };
        let w = WaitFor {
            queue: &self.meta.queue,
            key: me as usize,
            expected_ns: self.meta.history.mean_ns(),
            holder_tid: self.meta.holder_tid.load(Ordering::Relaxed),
            awaited: self.meta.awaited(),
            class,
            cell: scope.cell(),
            what: crate::hook::WaitOn::Lock(self as *const Self as usize),
        };
        let waited = wait_until::<W>(&w, &mut || !node.waiting.load(Ordering::Acquire));
        self.meta.times.add_wait(waited);
        // We hold the lock. Move our successor into the lock-as-node, or retire our node.
        let mut succ = node.next.load(Ordering::Acquire);
        if succ.is_null() {
            self.next.store(ptr::null_mut(), Ordering::Relaxed);
            if self
                .tail
                .compare_exchange(me, held(), Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                // A thread swapped itself in behind us and is about to link: wait for it.
                succ = wait_for_link(&node.next);
            }
        }
        if !succ.is_null() {
            self.next.store(succ, Ordering::Relaxed);
            if W::MODE == WaitMode::Informed {
                // SAFETY: the successor waits on its node until we release.
                promote(unsafe { (*succ).class }, PriorityClass::ImmediateWaiter);
            }
        }
        scope.into_held(&self.meta)
    }

    /// Takes the lock if it is free (empty queue): the tail's compare-and-swap from null.
    #[inline]
    fn take_if_free(&self) -> bool {
        self.tail
            .compare_exchange(
                ptr::null_mut(),
                held(),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
    }
}

/// Spins until `link` is set (the linking thread is between two of its instructions).
fn wait_for_link(link: &AtomicPtr<McsNode>) -> *mut McsNode {
    let mut i = 0u32;
    loop {
        let p = link.load(Ordering::Acquire);
        if !p.is_null() {
            return p;
        }
        i += 1;
        if i.is_multiple_of(128) {
            // The linker may have been preempted: give it the processor.
            crate::hook::current_hook().yield_now();
        } else {
            spin_hint();
        }
    }
}

impl<W: WaitPolicy> Default for RawMcsLock<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: ownership passes along the queue: a node's owner enters only after its predecessor
// cleared `waiting` (Release/SeqCst, read with Acquire); the tail CAS from null takes the lock.
unsafe impl<W: WaitPolicy> RawLock for RawMcsLock<W> {
    #[inline]
    fn lock(&self) -> HeldToken {
        let scope = ClassScope::enter::<W>();
        let door = self.meta.crowd_door::<W>(&|| self.take_if_free(), &|| {
            !self.tail.load(Ordering::SeqCst).is_null()
        });
        if let Some(waited) = door {
            if waited != 0 {
                self.meta.times.add_wait(waited);
            }
            return scope.into_held(&self.meta);
        }
        if self.take_if_free() {
            return scope.into_held(&self.meta);
        }
        self.lock_slow(scope)
    }

    #[inline]
    fn try_lock(&self) -> Option<HeldToken> {
        let scope = ClassScope::enter::<W>();
        self.take_if_free().then(|| scope.into_held(&self.meta))
    }

    #[inline]
    unsafe fn unlock(&self, token: HeldToken) {
        token.releasing(&self.meta);
        let mut succ = self.next.load(Ordering::Acquire);
        if succ.is_null() {
            if self
                .tail
                .compare_exchange(
                    held(),
                    ptr::null_mut(),
                    Ordering::Release,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                if W::MODE == WaitMode::Informed {
                    self.meta.admit_one();
                }
                token.released();
                return;
            }
            succ = wait_for_link(&self.next);
        }
        // SAFETY: `succ` waits on its node (alive) until `waiting` is cleared below; after that
        // store we use its address only as a wake-up key.
        unsafe {
            if W::MODE == WaitMode::Informed {
                promote((*succ).class, PriorityClass::Holder);
            }
            if W::MODE == WaitMode::Spin {
                (*succ).waiting.store(false, Ordering::Release);
            } else {
                // The successor's successor (alive: it waits) becomes next in line: wake it too,
                // so that it is running when its turn comes (002: the immediate waiter may spin).
                let after = if W::MODE == WaitMode::Informed {
                    (*succ).next.load(Ordering::Acquire)
                } else {
                    ptr::null_mut()
                };
                if !after.is_null() {
                    // Promote it while its node is certainly alive (it cannot be granted before
                    // `succ` is): it must not park again when woken.
                    promote((*after).class, PriorityClass::ImmediateWaiter);
                }
                (*succ).waiting.swap(false, Ordering::SeqCst);
                // One pass over the queue: the successor, the one after it (where there is one)
                // and, under informed waiting, one thread from the crowd door. The ticket and
                // array locks admit only when a release leaves the lock free; leaving the
                // admission out here measured no different, so MCS keeps
                // it as it was.
                let (succ_key, after_key) = (succ as usize, after as usize);
                self.meta.notify_released(
                    &|k| k == succ_key || (after_key != 0 && k == after_key),
                    || W::MODE == WaitMode::Informed,
                );
            }
        }
        token.released();
    }

    fn is_locked(&self) -> bool {
        !self.tail.load(Ordering::Relaxed).is_null()
    }

    fn times(&self) -> LockTimesSnapshot {
        self.meta.times.snapshot()
    }

    fn mean_hold_ns(&self) -> u64 {
        self.meta.history.mean_ns()
    }

    fn arrival_token(&self) -> usize {
        self.tail.load(Ordering::SeqCst) as usize
    }
}

impl_raw_mutex!(RawMcsLock);
