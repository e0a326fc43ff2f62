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

/// The ticket counter and the holder's ticket, on one cache line: an acquisition takes a ticket
/// and then writes the holder ticket, so both writes hit the line the ticket's increment just
/// fetched, and the crowd door's "is anyone inside" reads one line.
struct Tickets {
    /// The next ticket to hand out.
    next: AtomicUsize,
    /// The ticket of the current holder, or of the last one after its release (written by the
    /// holder only, when it enters). Starts at `usize::MAX`: ticket "-1" has come and gone.
    holder: AtomicUsize,
}

/// Anderson's array-based queue lock with `N` slots (a power of two, default 32): an arriving
/// thread takes a ticket and spins on its own cache-line-padded slot `ticket % N`; the releaser
/// sets the next slot. FIFO.
///
/// **Capacity.** At most `N` tickets (holder included) have a slot at once. A thread whose ticket
/// is `N` or more places behind the holder waits at a door until the ticket `N` before its own
/// has entered (and so freed the slot they share), then takes its slot: correct and still FIFO,
/// but the door's waiters are woken at every release to look, so choose `N` at least the number
/// of threads that contend. `N` that is zero or not a power of two is rejected at compile time.
///
/// Lines touched by an uncontended acquisition and release: the ticket line (one increment, one
/// store of the holder ticket), the holder's slot and the next slot (issue 15: an earlier
/// version also counted the threads inside on a shared line, two more read-modify-writes per
/// acquisition, which made the lock's occupancy on 8 threads on 2 CPUs long enough that three
/// times as many arrivals parked at the crowd door as on the ticket lock).
///
/// Classes: the waiter in the slot after the holder's publishes `ImmediateWaiter`, the others
/// `Waiter` (each updates only its own class).
pub struct RawArrayLock<W: WaitPolicy = Informed, const N: usize = 32> {
    slots: [CachePadded<AtomicBool>; N],
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
        let mut slots = [const { CachePadded::new(AtomicBool::new(false)) }; N];
        slots[0] = CachePadded::new(AtomicBool::new(true));
        RawArrayLock {
            slots,
            tickets: CachePadded::new(Tickets {
                next: AtomicUsize::new(0),
                holder: AtomicUsize::new(usize::MAX),
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
            slots: std::array::from_fn(|i| CachePadded::new(AtomicBool::new(i == 0))),
            tickets: CachePadded::new(Tickets {
                next: AtomicUsize::new(0),
                holder: AtomicUsize::new(usize::MAX),
            }),
            meta: LockMeta::new(),
            _policy: PhantomData,
        }
    }

    /// Places between `ticket` and the current (or last) holder: 1 for the next in line.
    #[inline]
    fn ahead(&self, ticket: usize) -> usize {
        ticket.wrapping_sub(self.tickets.holder.load(Ordering::Acquire))
    }

    /// Whether the lock is held or has a thread between taking a ticket and entering.
    #[inline]
    fn crowded(&self) -> bool {
        let next = self.tickets.next.load(Ordering::SeqCst);
        // No ticket taken since the holder's: crowded while the holder has not released, i.e.
        // while the next ticket's slot is not set.
        self.ahead(next) != 1 || !self.slots[next % N].load(Ordering::SeqCst)
    }

    /// Waits until the ticket `N` before `ticket` has entered (its slot is then ours to spin on).
    ///
    /// A thread at the door is a lock waiter and publishes `Waiter` (002 rule b). It used to keep
    /// its `Running` class: on green threads, each door waiter then saw the others as "higher"
    /// ready threads and handed its worker to them on every poll, so that past the capacity the
    /// door waiters yielded to one another forever and the thread granted the lock (a `Waiter`)
    /// never ran again (issue 18).
    ///
    /// No lost wake-up: the ticket `ticket - N` stores itself as holder when it enters, before
    /// its release's `SeqCst` swap of the next slot, after which that release wakes the door
    /// ([`RawLock::unlock`]); a door waiter re-checks after linking into the queue (the queue's
    /// protocol, `wait::queue`).
    #[cold]
    fn wait_at_door(&self, ticket: usize, scope: &ClassScope) -> u64 {
        scope.publish(PriorityClass::Waiter);
        let w = WaitFor {
            queue: &self.meta.queue,
            key: DOOR_KEY,
            expected_ns: self.meta.history.mean_ns(),
            holder_tid: 0,
            class: PriorityClass::Waiter,
            cell: None,
        };
        wait_until::<W>(&w, &mut || self.ahead(ticket) <= N)
    }

    #[cold]
    fn lock_slow(&self, scope: ClassScope, ticket: usize, mut waited: u64) -> HeldToken {
        self.meta.history.start_sampling();
        if self.ahead(ticket) > N {
            waited += self.wait_at_door(ticket, &scope);
        }
        let slot = ticket % N;
        let ahead = self.ahead(ticket);
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
            if !promoted && self.ahead(ticket) == 1 {
                promoted = true;
                if let Some(c) = cell {
                    c.set(PriorityClass::ImmediateWaiter);
                }
            }
            false
        });
        self.meta.times.add_wait(waited);
        self.enter(ticket);
        scope.into_held(&self.meta)
    }

    /// Takes the next ticket and enters if the lock is free (the last ticket handed out has
    /// entered and released, setting the next slot): the lock's compare-and-swap from free.
    #[inline]
    fn take_if_free(&self) -> bool {
        let next = self.tickets.next.load(Ordering::Acquire);
        if self.ahead(next) != 1 || !self.slots[next % N].load(Ordering::Acquire) {
            return false;
        }
        if self
            .tickets
            .next
            .compare_exchange(
                next,
                next.wrapping_add(1),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return false;
        }
        self.enter(next);
        true
    }

    #[inline]
    fn enter(&self, ticket: usize) {
        // Reset our slot for the ticket N after ours, which waits at the door until it sees our
        // holder store (Release, after this reset).
        self.slots[ticket % N].store(false, Ordering::Relaxed);
        self.tickets.holder.store(ticket, Ordering::Release);
    }
}

impl<W: WaitPolicy, const N: usize> Default for RawArrayLock<W, N> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: a ticket spins on its slot only once the ticket N before it has entered (the door), so
// the tickets waiting on slots map to distinct slots; a thread enters only when its slot is set
// (Acquire), and the holder sets the next slot with Release (or SeqCst) when it leaves.
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
        let ticket = self.tickets.next.fetch_add(1, Ordering::Relaxed);
        // Our slot is ours once the ticket N before ours has entered; its being set then means
        // the previous ticket has released.
        if self.ahead(ticket) <= N && self.slots[ticket % N].load(Ordering::Acquire) {
            self.enter(ticket);
            return scope.into_held(&self.meta);
        }
        self.lock_slow(scope, ticket, 0)
    }

    #[inline]
    fn try_lock(&self) -> Option<HeldToken> {
        let scope = ClassScope::enter::<W>();
        self.take_if_free().then(|| scope.into_held(&self.meta))
    }

    #[inline]
    unsafe fn unlock(&self, token: HeldToken) {
        token.releasing(&self.meta);
        // Only the holder writes the holder ticket.
        let next = self.tickets.holder.load(Ordering::Relaxed).wrapping_add(1) % N;
        if W::MODE == WaitMode::Spin {
            self.slots[next].store(true, Ordering::Release);
        } else {
            self.slots[next].swap(true, Ordering::SeqCst);
            // One pass over the queue, after the swap: the new holder, under informed waiting
            // also the new next-in-line (see the ticket lock) and one thread from the crowd door,
            // and the threads at the capacity door (waiting for our entry, which came before).
            if W::MODE == WaitMode::Informed {
                let after = (next + 1) % N;
                self.meta
                    .notify_released(&|k| k == next || k == after || k == DOOR_KEY, || {
                        !self.crowded()
                    });
            } else {
                self.meta
                    .notify_released(&|k| k == next || k == DOOR_KEY, || false);
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
        self.tickets.next.load(Ordering::SeqCst)
    }
}

impl_raw_mutex!(RawArrayLock, const N: usize);
