//! The message buffer of a bounded channel with places: a ring of slots that senders and
//! receivers claim without a lock (the bounded MPMC queue of Vyukov and crossbeam-channel's
//! array flavour, written afresh here).
//!
//! Each side owns a counter on its own cache line: `tail`, the next position a send writes,
//! and `head`, the next position a receive reads. A position names a slot and a lap around the
//! ring; each slot's stamp says which position it is free for (`p`) or which position's
//! message it holds (`p | WRITTEN`). A send claims position `p` by moving `tail` past it when
//! the slot is free for `p`, writes the message, then stamps the slot written; a receive claims
//! `p` by moving `head` past it when the slot holds `p`'s message, reads it, then stamps the
//! slot free for `p` one lap on. So a message is read exactly once, in position order (FIFO),
//! and the two sides touch each other's counter only to tell full from busy and empty from
//! busy.
//!
//! The tail word carries two more things, so that one compare-and-swap decides them together
//! with a send's position:
//! - the disconnection mark (the last handle of either side is gone): no send claims a
//!   position after it, so a receive that finds the ring empty and marked is disconnected;
//! - the number of places reserved by selects' chosen sends (their messages come later, see
//!   `SendClaim::Place`): a send claims a position only while the occupied positions plus the
//!   reservations leave one free, and a reservation is taken only where one is free. A
//!   reservation holds no position, so no receive ever waits behind it.
//!
//! The channel's parked senders and receivers are outside this module (see `chan.rs`): a send
//! or receive that changed the ring then checks whether anyone waits (after a `SeqCst`
//! read-modify-write of its counter), and a waiter publishes itself before it looks at the ring
//! again.

use crate::sync::{fence, spin_hint, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;

/// Bits of the tail word that count the reserved places.
const RESERVED_BITS: u32 = 16;
/// The reserved places in a tail word.
const RESERVED: u64 = (1 << RESERVED_BITS) - 1;
/// The disconnection mark in a tail word.
const MARK: u64 = 1 << RESERVED_BITS;
/// Positions are counted from this bit up (in tail, head and stamps alike).
const SHIFT: u32 = RESERVED_BITS + 1;
/// A stamp's bit for "holds the message of this position" (the bits below `SHIFT` of a
/// position are zero, so it never looks like one).
const WRITTEN: u64 = 1;

/// The largest capacity a ring serves: a position needs the slot index and at least a few bits
/// of lap above `SHIFT`. Larger channels (which no machine can allocate) take the locked path.
pub(super) const MAX_CAP: usize = 1 << 32;

/// Spins before a busy counterpart (a send or receive between claiming a position and
/// stamping its slot) is waited for with OS yields.
#[cfg(not(loom))]
const SPINS_BEFORE_YIELD: u32 = 6;

struct Slot<T> {
    stamp: AtomicU64,
    msg: UnsafeCell<MaybeUninit<T>>,
}

pub(super) struct Ring<T> {
    /// The next position a receive reads.
    head: CachePadded<AtomicU64>,
    /// The next position a send writes, the disconnection mark and the reserved places.
    tail: CachePadded<AtomicU64>,
    slots: Box<[Slot<T>]>,
    cap: u64,
    /// One lap in position units: the slot index's power of two at or above `cap`, shifted.
    lap: u64,
}

// SAFETY: a slot's message is written by the one send that claimed its position and read by
// the one receive that claimed it, ordered by the slot's stamp (Release/Acquire); messages
// cross threads, hence `T: Send`.
unsafe impl<T: Send> Send for Ring<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Ring<T> {}

/// Why a push did not happen; the message comes back.
pub(super) enum PushFail<T> {
    Full(T),
    Disconnected(T),
}

/// Why a pop found nothing.
pub(super) enum PopFail {
    Empty,
    Disconnected,
}

/// What a reservation attempt found.
pub(super) enum Reserve {
    Reserved,
    Full,
    Disconnected,
}

/// The wait between two tries of a ring operation that found a counterpart busy (a send or
/// receive between claiming a position and stamping its slot, or a counter that moved under
/// the look): exponential spinning, then OS yields. The counterpart finishes within a few
/// instructions unless its thread was preempted; nothing can stop it there (no lock, no park,
/// and a green thread is not switched out between the two), so the wait ends as soon as the
/// kernel runs that thread again.
struct Backoff {
    round: u32,
    /// Under loom: what the last retry read (see [`Backoff::wait`]).
    #[cfg(loom)]
    seen: Option<[u64; 3]>,
}

impl Backoff {
    fn new() -> Backoff {
        Backoff {
            round: 0,
            #[cfg(loom)]
            seen: None,
        }
    }

    /// Whether this is a retry (the first try of an operation is not).
    #[inline(always)]
    fn retry(&self) -> bool {
        self.round > 0
    }

    /// Waits before the next try; `seen`: the counters and the stamp this try read (zero
    /// where it read none).
    ///
    /// Under loom, one model yield; and a retry that read exactly what the previous retry of
    /// the same operation read ends the exploration of this execution's alternatives
    /// (`loom::skip_branch`: the execution itself runs on, with loom's default schedule, and is
    /// checked). Such a retry is a stutter step: it read the latest values (see [`relook`]),
    /// wrote none that differ and left this thread where it was, so every state after it is
    /// also reached by the execution without it, which the model explores (dropping a retry
    /// between two switches adds no preemption). Without this a model with three threads and
    /// two preemptions does not end. Loom's scheduler is not fair: a switch away from a thread
    /// that yields costs no preemption, and the model adds a branch at each such switch. So
    /// when one thread is preempted between its claim and its stamp and two others wait for it
    /// here (a receive and a second send behind a send that claimed the one place of a
    /// capacity-1 channel; two receives behind it), loom explores the two waiters taking turns
    /// for every number of turns without running the thread they wait for: the green channel
    /// models of `loom_informed.rs` ran past loom's 1,000 branches in one execution, and with
    /// 20,000 one ran for more than ten minutes. Outside the model that thread runs again when
    /// the kernel schedules its worker, and the waiters' OS yields let it. A wait that never
    /// ends (a counterpart that never stamps) still fails the model: that execution runs on
    /// past loom's branch limit.
    #[inline(always)]
    fn wait(&mut self, seen: [u64; 3]) {
        #[cfg(loom)]
        {
            if self.retry() {
                if self.seen == Some(seen) {
                    loom::skip_branch();
                }
                self.seen = Some(seen);
            }
            self.round = 1;
            spin_hint();
        }
        #[cfg(not(loom))]
        {
            let _ = seen;
            if self.round < SPINS_BEFORE_YIELD {
                for _ in 0..(1u32 << self.round) {
                    spin_hint();
                }
                self.round += 1;
            } else {
                crate::sync::os_yield();
            }
        }
    }
}

/// Reads `a` for a retry after a backoff. Under loom a load may return any value not older than
/// what the thread has seen, at every iteration, so a loop that waits for a counterpart's store
/// would explore ever longer stale paths; there the retry reads with a read-modify-write, which
/// returns the latest value (the first try of each operation still explores stale reads).
#[inline(always)]
fn relook(a: &AtomicU64, retry: bool) -> u64 {
    if cfg!(loom) && retry {
        a.fetch_add(0, Ordering::AcqRel)
    } else {
        a.load(Ordering::Acquire)
    }
}

/// Stores a stamp. Under loom a swap: loom orders plain stores only by causality, so a
/// retry's read-modify-write (see [`relook`]) could be placed after a store it did not read and
/// bring an older stamp back; with every write a read-modify-write the order is total.
#[inline(always)]
fn set_stamp(a: &AtomicU64, v: u64) {
    if cfg!(loom) {
        a.swap(v, Ordering::AcqRel);
    } else {
        a.store(v, Ordering::Release);
    }
}

impl<T> Ring<T> {
    /// A ring of `cap` slots (`0 < cap <= MAX_CAP`), allocated up front.
    pub(super) fn new(cap: usize) -> Result<Ring<T>, std::collections::TryReserveError> {
        assert!(cap > 0 && cap <= MAX_CAP, "a ring has 1 to MAX_CAP slots");
        let mut slots = Vec::new();
        slots.try_reserve_exact(cap)?;
        for i in 0..cap as u64 {
            slots.push(Slot {
                stamp: AtomicU64::new(i << SHIFT),
                msg: UnsafeCell::new(MaybeUninit::uninit()),
            });
        }
        Ok(Ring {
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
            slots: slots.into_boxed_slice(),
            cap: cap as u64,
            lap: (cap as u64).next_power_of_two() << SHIFT,
        })
    }

    /// The slot index of position `p`.
    #[inline]
    fn index(&self, p: u64) -> usize {
        ((p & (self.lap - 1)) >> SHIFT) as usize
    }

    /// The lap part of position `p`.
    #[inline]
    fn lap_of(&self, p: u64) -> u64 {
        p & !(self.lap - 1)
    }

    /// The position after `p`: the next slot, or the first slot of the next lap (wrapping).
    #[inline]
    fn next(&self, p: u64) -> u64 {
        if (self.index(p) as u64) + 1 < self.cap {
            p + (1 << SHIFT)
        } else {
            self.lap_of(p).wrapping_add(self.lap)
        }
    }

    /// Positions claimed from `h` (a head) up to `t` (a tail position, at most one lap on).
    #[inline]
    fn occupied(&self, h: u64, t: u64) -> u64 {
        let (hi, ti) = (self.index(h) as u64, self.index(t) as u64);
        if self.lap_of(h) == self.lap_of(t) {
            ti.wrapping_sub(hi)
        } else {
            self.cap - hi + ti
        }
    }

    /// Whether the positions claimed up to `t` plus its reservations plus `more` fit, reading
    /// the head after a fence (the store-load pair with a receive that moves the head and then
    /// looks for parked senders). `None`: the tail moved meanwhile, look again.
    fn fits(&self, t: u64, more: u64, retry: bool) -> Option<bool> {
        fence(Ordering::SeqCst);
        let h = relook(&self.head, retry);
        if relook(&self.tail, retry) != t {
            return None;
        }
        Some(self.occupied(h, t & !(MARK | RESERVED)) + (t & RESERVED) + more <= self.cap)
    }

    /// Claims the next position and writes `msg` into it, or says why not (full: every place
    /// is taken or reserved).
    pub(super) fn push(&self, msg: T) -> Result<(), PushFail<T>> {
        let mut backoff = Backoff::new();
        loop {
            let t = relook(&self.tail, backoff.retry());
            if t & MARK != 0 {
                return Err(PushFail::Disconnected(msg));
            }
            let (p, reserved) = (t & !RESERVED, t & RESERVED);
            let slot = &self.slots[self.index(p)];
            let stamp = relook(&slot.stamp, backoff.retry());
            let mut h = 0;
            if stamp == p {
                if reserved != 0 {
                    match self.fits(t, 1, backoff.retry()) {
                        None => {
                            backoff.wait([t, stamp, 0]);
                            continue;
                        }
                        Some(false) => return Err(PushFail::Full(msg)),
                        Some(true) => {}
                    }
                }
                if self
                    .tail
                    .compare_exchange_weak(
                        t,
                        self.next(p) | reserved,
                        Ordering::SeqCst,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    // SAFETY: the exchange made position `p` ours, and its slot is free for
                    // it (the stamp, read with Acquire, says its last message was read).
                    unsafe { self.write(p, msg) };
                    return Ok(());
                }
            } else if stamp.wrapping_add(self.lap) == p | WRITTEN {
                // The slot still holds the message of one lap before: full, unless a receive
                // has claimed it and is reading it.
                fence(Ordering::SeqCst);
                h = relook(&self.head, backoff.retry());
                if h.wrapping_add(self.lap) == p {
                    return Err(PushFail::Full(msg));
                }
            }
            // Another send claimed `p`, or a receive is between claiming and freeing it.
            backoff.wait([t, stamp, h]);
        }
    }

    /// Writes the message of claimed position `p` and stamps its slot written.
    ///
    /// # Safety
    /// The caller claimed `p` (moved the tail past it) and saw its slot free for it.
    unsafe fn write(&self, p: u64, msg: T) {
        let slot = &self.slots[self.index(p)];
        // SAFETY: position `p` is the caller's alone until the stamp below publishes it.
        unsafe { (*slot.msg.get()).write(msg) };
        set_stamp(&slot.stamp, p | WRITTEN);
    }

    /// Takes the oldest message, or says why not.
    ///
    /// The counters are read with Acquire: a head that moved past position `p` was moved by a
    /// receive that saw `p`'s message, written after the tail moved past `p`, so the tail read
    /// next is at least past `p` (with Relaxed it could be older, and "a send is writing" would
    /// be waited for on a stale value).
    pub(super) fn pop(&self) -> Result<T, PopFail> {
        let mut backoff = Backoff::new();
        loop {
            let h = relook(&self.head, backoff.retry());
            let slot = &self.slots[self.index(h)];
            let stamp = relook(&slot.stamp, backoff.retry());
            let mut t = 0;
            if stamp == h | WRITTEN {
                if self
                    .head
                    .compare_exchange_weak(h, self.next(h), Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
                {
                    // SAFETY: the exchange made position `h` ours, and the stamp (Acquire)
                    // says its message is written; it is read once, here.
                    let msg = unsafe { (*slot.msg.get()).assume_init_read() };
                    set_stamp(&slot.stamp, h.wrapping_add(self.lap));
                    return Ok(msg);
                }
            } else if stamp == h {
                // Nothing written at `h`: empty, unless a send claimed it and is writing.
                fence(Ordering::SeqCst);
                t = relook(&self.tail, backoff.retry());
                if t & !(MARK | RESERVED) == h {
                    return Err(if t & MARK != 0 {
                        PopFail::Disconnected
                    } else {
                        PopFail::Empty
                    });
                }
            }
            // Another receive claimed `h`, or a send is between claiming and writing it, or a
            // receive of the lap before is still reading this slot.
            backoff.wait([h, stamp, t]);
        }
    }

    /// Reserves a place for a send whose message comes later
    /// ([`push_reserved`](Self::push_reserved) or [`unreserve`](Self::unreserve)).
    pub(super) fn reserve(&self) -> Reserve {
        let mut backoff = Backoff::new();
        loop {
            let t = relook(&self.tail, backoff.retry());
            if t & MARK != 0 {
                return Reserve::Disconnected;
            }
            if t & RESERVED == RESERVED {
                // As many chosen sends outstanding as the word counts: wait like a full channel.
                return Reserve::Full;
            }
            match self.fits(t, 1, backoff.retry()) {
                None => {}
                Some(false) => return Reserve::Full,
                Some(true)
                    if self
                        .tail
                        .compare_exchange(t, t + 1, Ordering::SeqCst, Ordering::Relaxed)
                        .is_ok() =>
                {
                    return Reserve::Reserved;
                }
                // The tail moved under the look, or another send took the place first.
                Some(true) => {}
            }
            backoff.wait([t, 0, 0]);
        }
    }

    /// Gives a reservation back (the chosen send was dropped).
    pub(super) fn unreserve(&self) {
        let old = self.tail.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(old & RESERVED != 0, "a reservation is given back once");
    }

    /// Writes a reserved send's message into the next position (a place is there: the
    /// reservation kept one); gives it back when the channel is disconnected.
    pub(super) fn push_reserved(&self, msg: T) -> Result<(), T> {
        let mut backoff = Backoff::new();
        loop {
            let t = relook(&self.tail, backoff.retry());
            debug_assert!(t & RESERVED != 0, "a reserved push holds a reservation");
            if t & MARK != 0 {
                self.unreserve();
                return Err(msg);
            }
            let p = t & !RESERVED;
            let slot = &self.slots[self.index(p)];
            let stamp = relook(&slot.stamp, backoff.retry());
            if stamp == p
                && self
                    .tail
                    .compare_exchange_weak(
                        t,
                        self.next(p) | ((t & RESERVED) - 1),
                        Ordering::SeqCst,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                // SAFETY: as in `push`.
                unsafe { self.write(p, msg) };
                return Ok(());
            }
            // Another send claimed `p`, or a receive is still reading its slot's last message.
            backoff.wait([t, stamp, 0]);
        }
    }

    /// Sets the disconnection mark: no send claims a position after it.
    pub(super) fn disconnect(&self) {
        self.tail.fetch_or(MARK, Ordering::SeqCst);
    }

    /// Messages in the ring now (claimed positions not yet read, a consistent snapshot).
    pub(super) fn len(&self) -> usize {
        let mut backoff = Backoff::new();
        loop {
            let t = relook(&self.tail, backoff.retry());
            let h = relook(&self.head, backoff.retry());
            if relook(&self.tail, backoff.retry()) == t {
                return self.occupied(h, t & !(MARK | RESERVED)) as usize;
            }
            backoff.wait([t, h, 0]);
        }
    }

    /// Whether a receive would find a message or the disconnection now.
    pub(super) fn recv_ready(&self) -> bool {
        // The head first: it never passes the tail read after it.
        let h = self.head.load(Ordering::SeqCst);
        let t = self.tail.load(Ordering::SeqCst);
        t & MARK != 0 || t & !(MARK | RESERVED) != h
    }

    /// A value that changes whenever a message goes in (`false`) or out (`true`): what a waiter
    /// of the other side watches for progress.
    pub(super) fn moves(&self, receives: bool) -> u64 {
        if receives {
            self.head.load(Ordering::Relaxed)
        } else {
            self.tail.load(Ordering::Relaxed)
        }
    }

    /// Whether a send would find a place (one neither occupied nor reserved) or the
    /// disconnection now.
    pub(super) fn send_ready(&self) -> bool {
        let mut backoff = Backoff::new();
        loop {
            let t = relook(&self.tail, backoff.retry());
            if t & MARK != 0 {
                return true;
            }
            if let Some(fits) = self.fits(t, 1, backoff.retry()) {
                return fits;
            }
            backoff.wait([t, 0, 0]);
        }
    }

    /// Drops the messages left, oldest first, each at most once. If a destructor panics, the
    /// messages after it are leaked (taken out and forgotten) and the panic goes on: dropping
    /// them while it unwinds would abort the process if one panicked too.
    pub(super) fn drop_all(&self) {
        /// Forgets what is left in the ring if a destructor unwinds past it.
        struct LeakRest<'a, T>(&'a Ring<T>);
        impl<T> Drop for LeakRest<'_, T> {
            fn drop(&mut self) {
                while let Ok(m) = self.0.pop() {
                    std::mem::forget(m);
                }
            }
        }
        let rest = LeakRest(self);
        while let Ok(m) = rest.0.pop() {
            drop(m);
        }
        std::mem::forget(rest);
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        self.drop_all();
    }
}
