//! Anderson's array-based queue lock.

use super::{impl_raw_mutex, queued_class, RawLock};
use crate::hook::PriorityClass;
use crate::stats::LockTimesSnapshot;
use crate::sync::{model_sc_fence, AtomicU64, Ordering};
use crate::wait::{
    wait_until, ClassScope, HeldToken, Informed, LockMeta, WaitFor, WaitMode, WaitPolicy,
};
use crossbeam_utils::CachePadded;
use std::marker::PhantomData;

/// The ticket counter and the last released ticket, on one cache line: the lock is free exactly
/// when they differ by one, so taking it from free (`try_lock`, the crowd door) and the crowd
/// door's "is anyone inside" read one line, and a release that finds nobody queued writes only
/// this line.
struct Tickets {
    /// The next ticket to hand out.
    next: AtomicU64,
    /// The ticket of the last holder that released (written by that holder only, when it
    /// releases). Starts at `u64::MAX`: ticket "-1" has come and gone. While the lock is held,
    /// the holder's ticket is `released + 1`.
    released: AtomicU64,
}

/// A slot's value before any release wrote it: below every ticket that can wait (ticket 0 is
/// the first arrival's, which finds `released` at "-1" and enters without waiting), and the
/// smallest value, since releases write slots as maxima (see `write_slot`). Tickets are 64-bit
/// and never wrap in practice.
const NO_TICKET: u64 = 0;

/// Anderson's array-based queue lock with `N` slots (a power of two, default 32): an arriving
/// thread takes a ticket and, unless the lock was free, waits on its own cache-line-padded slot
/// `ticket % N` until the holder before it writes its ticket there. FIFO.
///
/// **Slots hold tickets** (as in Dice's partitioned ticket lock), not flags: the releaser of
/// ticket `t` writes `t + 1` into slot `(t + 1) % N`, so an entering thread never resets its
/// slot, and more than `N` waiters are still correct and FIFO (the waiters for `t` and `t + N`
/// share a slot's line, and each waits for its own value). Choose `N` at least the number of
/// threads that contend, so that each spins on a line of its own. `N` that is zero or not a
/// power of two is rejected at compile time. A release writes its slot as a maximum, so that a
/// releaser preempted before its write cannot later replace a newer ticket's value there.
///
/// **A release writes a slot only when a ticket was taken behind it**: the holder stores its
/// ticket as `released`, then looks at `next`; an arrival takes its ticket and then looks at
/// `released`. Both are sequentially consistent, so either the arrival sees the release (and
/// enters without waiting) or the releaser sees the arrival (and writes its slot). So an
/// acquisition from free and its release touch one cache line, the ticket line, as the TTAS
/// lock's do (the flag version read the next slot's line at every
/// acquisition and swapped it at every release; on 8 OS threads on 2 CPUs those two misses were
/// 98 % of its lock samples and the lock 27 % of the loop's CPU, std's mutex 11 %).
///
/// Classes: the waiter whose ticket is next after the holder's publishes `ImmediateWaiter`, the
/// others `Waiter` (each updates only its own class).
pub struct RawArrayLock<W: WaitPolicy = Informed, const N: usize = 32> {
    slots: [CachePadded<AtomicU64>; N],
    tickets: CachePadded<Tickets>,
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
        RawArrayLock {
            slots: [const { CachePadded::new(AtomicU64::new(NO_TICKET)) }; N],
            tickets: CachePadded::new(Tickets {
                next: AtomicU64::new(0),
                released: AtomicU64::new(u64::MAX),
            }),
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
            slots: std::array::from_fn(|_| CachePadded::new(AtomicU64::new(NO_TICKET))),
            tickets: CachePadded::new(Tickets {
                next: AtomicU64::new(0),
                released: AtomicU64::new(u64::MAX),
            }),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// The slot ticket `ticket` waits on.
    #[inline]
    fn slot(&self, ticket: u64) -> &AtomicU64 {
        // The remainder is below N, a usize.
        &self.slots[(ticket % N as u64) as usize]
    }

    /// Tells ticket `next` that its turn has come, in its slot. A maximum, not a store: between
    /// publishing its ticket as released and this write a releaser may be preempted, and the
    /// next ticket enter meanwhile through `released`; the lock can then move on until a later
    /// release writes this slot for ticket `next + N`, whose waiter must not see that value
    /// replaced by the late, older one (it would wait for ever: a stress run hung so with
    /// capacity 2, and loom finds it with three threads and capacity 1). Slot values only grow,
    /// so a late write is a no-op.
    #[inline]
    fn write_slot(&self, next: u64, order: Ordering) {
        self.slot(next).fetch_max(next, order);
    }

    /// Places between `ticket` and the current holder: 1 for the next in line (0 once the lock
    /// is free for it).
    #[inline]
    fn ahead(&self, ticket: u64) -> u64 {
        ticket
            .wrapping_sub(self.tickets.released.load(Ordering::Acquire))
            .wrapping_sub(1)
    }

    /// Whether the lock is held or has a thread between taking a ticket and entering.
    #[inline]
    fn crowded(&self) -> bool {
        let next = self.tickets.next.load(Ordering::SeqCst);
        next.wrapping_sub(self.tickets.released.load(Ordering::SeqCst)) != 1
    }

    #[cold]
    fn lock_slow(&self, scope: ClassScope, ticket: u64) -> HeldToken {
        self.meta.history.start_sampling();
        let ahead = self.ahead(ticket).max(1);
        let class = queued_class(ahead as usize);
        scope.publish(class);
        let cell = scope.cell();
        let mut promoted = ahead == 1;
        let slot = self.slot(ticket);
        let w = WaitFor {
            queue: &self.meta.queue,
            key: ticket as usize,
            expected_ns: self.meta.history.mean_ns() * ahead,
            holder_tid: self.meta.holder_tid.load(Ordering::Relaxed),
            awaited: self.meta.awaited(),
            class,
            cell,
            what: crate::hook::WaitOn::Lock(self as *const Self as usize),
        };
        // Our initial look at `released` missed the release of the ticket before ours, so that
        // release saw our ticket taken and writes our slot (see the type's docs).
        let waited = wait_until::<W>(&w, &mut || {
            if slot.load(Ordering::Acquire) == ticket {
                return true;
            }
            if !promoted && self.ahead(ticket) == 1 {
                promoted = true;
                if let Some(c) = cell {
                    c.set(PriorityClass::ImmediateWaiter);
                }
            }
            false
        });
        self.meta.times.add_wait(waited);
        scope.into_held(&self.meta)
    }

    /// Takes the next ticket if the lock is free (every ticket handed out has released): the
    /// lock's compare-and-swap from free.
    #[inline]
    fn take_if_free(&self) -> bool {
        let next = self.tickets.next.load(Ordering::Relaxed);
        // Acquire: pairs with the last holder's release of `released`. The value cannot move
        // past `next - 1` before ticket `next` is handed out, which only the exchange below does.
        if self.tickets.released.load(Ordering::Acquire) != next.wrapping_sub(1) {
            return false;
        }
        self.tickets
            .next
            .compare_exchange(
                next,
                next.wrapping_add(1),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
    }
}

impl<W: WaitPolicy, const N: usize> Default for RawArrayLock<W, N> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: tickets are unique (one counter); ticket `t` enters only when `released` is `t - 1`
// (Acquire), i.e. every earlier ticket has released, or when its slot holds `t` (Acquire), which
// only the release of `t - 1` writes (Release or SeqCst, after its critical section). Neither can
// be seen by another ticket: `released` moves past `t - 1` only when `t` itself releases, and a
// slot holds `t` only for ticket `t`.
unsafe impl<W: WaitPolicy, const N: usize> RawLock for RawArrayLock<W, N> {
    #[inline]
    fn lock(&self) -> HeldToken {
        let scope = ClassScope::enter::<W>();
        let door = self
            .meta
            .crowd_door::<W>(&|| self.take_if_free(), &|| self.crowded());
        if let Some(waited) = door {
            if waited != 0 {
                self.meta.times.add_wait(waited);
            }
            return scope.into_held(&self.meta);
        }
        // SeqCst with the release's store of `released` and its look at `next` (type docs).
        let ticket = self.tickets.next.fetch_add(1, Ordering::SeqCst);
        model_sc_fence();
        if self.tickets.released.load(Ordering::SeqCst) == ticket.wrapping_sub(1) {
            return scope.into_held(&self.meta);
        }
        self.lock_slow(scope, ticket)
    }

    #[inline]
    fn try_lock(&self) -> Option<HeldToken> {
        let scope = ClassScope::enter::<W>();
        self.take_if_free().then(|| scope.into_held(&self.meta))
    }

    #[inline]
    unsafe fn unlock(&self, token: HeldToken) {
        token.releasing(&self.meta);
        // Only the holder writes `released`: ours is the ticket after it.
        let mine = self
            .tickets
            .released
            .load(Ordering::Relaxed)
            .wrapping_add(1);
        let next = mine.wrapping_add(1);
        if W::MODE == WaitMode::Spin {
            // Spinners never park, so the slot is always written: no store-load race to close.
            self.tickets.released.store(mine, Ordering::Release);
            self.write_slot(next, Ordering::Release);
        } else {
            // A swap, not a store: a read-modify-write, as the queue's waiter check asks.
            self.tickets.released.swap(mine, Ordering::SeqCst);
            model_sc_fence();
            if self.tickets.next.load(Ordering::SeqCst) != next {
                // A ticket was taken behind ours; its owner may be waiting on its slot. SeqCst:
                // with the queue's count read below, a waiter that linked itself into the queue
                // and then saw no ticket in its slot is woken.
                self.write_slot(next, Ordering::SeqCst);
            }
            // One pass over the queue: the new holder, under informed waiting also the new
            // next-in-line (see the ticket lock), and one thread from the crowd door where the
            // release left the lock free.
            let (holder, after) = (next as usize, next.wrapping_add(1) as usize);
            if W::MODE == WaitMode::Informed {
                self.meta
                    .notify_released(&|k| k == holder || k == after, || !self.crowded());
            } else {
                self.meta.notify_released(&|k| k == holder, || false);
            }
        }
        token.released();
    }

    fn is_locked(&self) -> bool {
        self.crowded()
    }

    fn times(&self) -> LockTimesSnapshot {
        self.meta.times.snapshot()
    }

    fn mean_hold_ns(&self) -> u64 {
        self.meta.history.mean_ns()
    }

    fn arrival_token(&self) -> usize {
        self.tickets.next.load(Ordering::SeqCst) as usize
    }
}

impl_raw_mutex!(RawArrayLock, const N: usize);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::ImmediateBlock;

    /// The late write of a preempted releaser (ticket 0 telling ticket 1) after the lock moved on
    /// and ticket 1's release told ticket 2 in the same slot: ticket 2's value stays.
    #[test]
    fn a_late_slot_write_leaves_a_newer_tickets_value() {
        let lock = RawArrayLock::<ImmediateBlock, 1>::new();
        lock.write_slot(2, Ordering::SeqCst);
        lock.write_slot(1, Ordering::SeqCst);
        assert_eq!(lock.slot(2).load(Ordering::Relaxed), 2);
    }
}
