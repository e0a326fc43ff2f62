//! Anderson's array-based queue lock.

use super::{impl_raw_mutex, queued_class, RawLock};
use crate::hook::PriorityClass;
use crate::stats::LockTimesSnapshot;
use crate::sync::{AtomicBool, AtomicUsize, Ordering};
use crate::wait::{
    wait_until, ClassScope, HeldToken, Informed, LockMeta, WaitFor, WaitMode, WaitPolicy,
};
use crossbeam_utils::CachePadded;
use std::marker::PhantomData;

/// Key under which threads beyond the capacity wait at the door.
const DOOR_KEY: usize = usize::MAX;

/// Anderson's array-based queue lock with `N` slots (a power of two, default 32): an arriving
/// thread takes a ticket and spins on its own cache-line-padded slot `ticket % N`; the releaser
/// sets the next slot. FIFO among the threads inside.
///
/// **Capacity.** At most `N` threads (holder included) can be inside at once. Past that, arriving
/// threads wait at a door (a counter in front of the array) until a place frees: correct, no
/// undefined behaviour, but the order among the threads at the door is not FIFO. Choose `N` at
/// least the number of threads that contend. `N` that is zero or not a power of two is rejected at
/// compile time.
///
/// Classes: the waiter in the slot after the holder's publishes `ImmediateWaiter`, the others
/// `Waiter` (each updates only its own class).
pub struct RawArrayLock<W: WaitPolicy = Informed, const N: usize = 32> {
    slots: [CachePadded<AtomicBool>; N],
    next_ticket: CachePadded<AtomicUsize>,
    /// Threads inside (holder and waiters with a slot), for the door.
    inside: AtomicUsize,
    /// Slot of the current holder (written by the holder only).
    holder_slot: AtomicUsize,
    meta: LockMeta,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy, const N: usize> RawArrayLock<W, N> {
    const VALID: () = assert!(
        N > 0 && N.is_power_of_two(),
        "RawArrayLock capacity N must be a power of two and at least 1"
    );

    /// The number of slots.
    pub const CAPACITY: usize = N;

    /// An unlocked lock.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::VALID;
        let mut slots = [const { CachePadded::new(AtomicBool::new(false)) }; N];
        slots[0] = CachePadded::new(AtomicBool::new(true));
        RawArrayLock {
            slots,
            next_ticket: CachePadded::new(AtomicUsize::new(0)),
            inside: AtomicUsize::new(0),
            holder_slot: AtomicUsize::new(0),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// An unlocked lock.
    #[cfg(loom)]
    pub fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::VALID;
        RawArrayLock {
            slots: std::array::from_fn(|i| CachePadded::new(AtomicBool::new(i == 0))),
            next_ticket: CachePadded::new(AtomicUsize::new(0)),
            inside: AtomicUsize::new(0),
            holder_slot: AtomicUsize::new(0),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// Waits at the door until fewer than `N` threads are inside, then enters.
    ///
    /// A thread at the door is a lock waiter and publishes `Waiter` (002 rule b). It used to keep
    /// its `Running` class: on green threads, each door waiter then saw the others as "higher"
    /// ready threads and handed its worker to them on every poll, so that past the capacity the
    /// door waiters yielded to one another forever and the thread granted the lock (a `Waiter`)
    /// never ran again (issue 18).
    #[cold]
    fn wait_at_door(&self, scope: &ClassScope) -> u64 {
        scope.publish(PriorityClass::Waiter);
        let mut waited = 0;
        loop {
            self.inside.fetch_sub(1, Ordering::SeqCst);
            // We may have kept someone else out while we were counted: let it retry.
            self.meta.queue.notify_key(DOOR_KEY);
            let w = WaitFor {
                queue: &self.meta.queue,
                key: DOOR_KEY,
                expected_ns: self.meta.history.mean_ns(),
                holder_tid: 0,
                class: PriorityClass::Waiter,
                cell: None,
            };
            waited += wait_until::<W>(&w, &mut || self.inside.load(Ordering::SeqCst) < N);
            if self.inside.fetch_add(1, Ordering::SeqCst) < N {
                return waited;
            }
        }
    }

    #[cold]
    fn lock_slow(&self, scope: ClassScope, slot: usize, mut waited: u64) -> HeldToken {
        self.meta.history.start_sampling();
        let ahead = slot.wrapping_sub(self.holder_slot.load(Ordering::Relaxed)) % N;
        let class = queued_class(ahead);
        scope.publish(class);
        let cell = scope.cell();
        let mut promoted = ahead == 1;
        let w = WaitFor {
            queue: &self.meta.queue,
            key: slot,
            expected_ns: self.meta.history.mean_ns() * ahead.max(1) as u64,
            holder_tid: self.meta.holder_tid.load(Ordering::Relaxed),
            class,
            cell,
        };
        waited += wait_until::<W>(&w, &mut || {
            if self.slots[slot].load(Ordering::Acquire) {
                return true;
            }
            if !promoted && self.holder_slot.load(Ordering::Relaxed).wrapping_add(1) % N == slot {
                promoted = true;
                if let Some(c) = cell {
                    c.set(PriorityClass::ImmediateWaiter);
                }
            }
            false
        });
        self.meta.times.add_wait(waited);
        self.enter(slot);
        scope.into_held(&self.meta)
    }

    #[inline]
    fn enter(&self, slot: usize) {
        // Reset our slot for the thread that will get it N tickets later.
        self.slots[slot].store(false, Ordering::Relaxed);
        self.holder_slot.store(slot, Ordering::Relaxed);
    }
}

impl<W: WaitPolicy, const N: usize> Default for RawArrayLock<W, N> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: at most N threads hold tickets at once (the door), so tickets in flight map to distinct
// slots; a thread enters only when its slot is set (Acquire), and the holder sets the next slot
// with Release (or SeqCst) when it leaves.
unsafe impl<W: WaitPolicy, const N: usize> RawLock for RawArrayLock<W, N> {
    #[inline]
    fn lock(&self) -> HeldToken {
        let scope = ClassScope::enter::<W>();
        let mut waited = self
            .meta
            .crowd_door::<W>(&|| self.inside.load(Ordering::SeqCst) >= 1);
        if self.inside.fetch_add(1, Ordering::SeqCst) >= N {
            waited += self.wait_at_door(&scope);
        }
        let slot = self.next_ticket.fetch_add(1, Ordering::Relaxed) % N;
        if self.slots[slot].load(Ordering::Acquire) {
            self.enter(slot);
            if waited != 0 {
                self.meta.times.add_wait(waited);
            }
            return scope.into_held(&self.meta);
        }
        self.lock_slow(scope, slot, waited)
    }

    #[inline]
    fn try_lock(&self) -> Option<HeldToken> {
        let scope = ClassScope::enter::<W>();
        if self
            .inside
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // Nobody else is inside, so the next ticket's slot is set.
        let slot = self.next_ticket.fetch_add(1, Ordering::Relaxed) % N;
        let free = self.slots[slot].load(Ordering::Acquire);
        debug_assert!(free, "the only thread inside owns the lock");
        self.enter(slot);
        Some(scope.into_held(&self.meta))
    }

    #[inline]
    unsafe fn unlock(&self, token: HeldToken) {
        token.releasing(&self.meta);
        let next = (self.holder_slot.load(Ordering::Relaxed) + 1) % N;
        if W::MODE == WaitMode::Spin {
            self.slots[next].store(true, Ordering::Release);
            // Spinners at the door re-check `inside` themselves.
            self.inside.fetch_sub(1, Ordering::Release);
        } else {
            self.slots[next].swap(true, Ordering::SeqCst);
            self.inside.fetch_sub(1, Ordering::SeqCst);
            // One pass over the queue, after both stores: the new holder, under informed waiting
            // also the new next-in-line (see the ticket lock) and one thread from the crowd door,
            // and the threads at the capacity door (waiting for the decrement).
            if W::MODE == WaitMode::Informed {
                let after = (next + 1) % N;
                self.meta
                    .notify_released(&|k| k == next || k == after || k == DOOR_KEY, true);
            } else {
                self.meta
                    .notify_released(&|k| k == next || k == DOOR_KEY, false);
            }
        }
        token.released();
    }

    fn is_locked(&self) -> bool {
        self.inside.load(Ordering::Relaxed) != 0
    }

    fn times(&self) -> LockTimesSnapshot {
        self.meta.times.snapshot()
    }

    fn mean_hold_ns(&self) -> u64 {
        self.meta.history.mean_ns()
    }

    fn arrival_token(&self) -> usize {
        self.next_ticket.load(Ordering::SeqCst)
    }
}

impl_raw_mutex!(RawArrayLock, const N: usize);
