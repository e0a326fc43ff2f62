//! The state shared by the senders and receivers of one channel, and its two operations.
//!
//! A bounded channel with places (capacity 1 to `ring::MAX_CAP`) keeps its messages in a ring
//! that senders and receivers claim without a lock (`ring.rs`); the channel's spin lock guards
//! only the lists of parked threads and of blocked selects' watches. Zero-capacity and unbounded
//! channels keep every operation under the lock (Go's design, below).
//!
//! # The ring path
//! A send or receive that does not need to wait touches only the ring, then reads the other
//! side's waiting count (one load, on a cache line written only when threads park): when it is
//! not zero, it takes the lock, completes the first parked node of the other side as `NOTIFIED`
//! (unlinking it) and fires the watches of the selects waiting for that side. A woken thread
//! tries the ring again, like every other thread (crossbeam-channel does the same); if another
//! thread took the message or the place first, it links its node again at the front of the
//! list, so it keeps its turn.
//!
//! No wake-up is lost (the loom models `ring_*` check it): a thread that would wait adds itself
//! to its side's waiting count first (a `SeqCst` read-modify-write), links its node under the
//! lock, and then tries the ring once more before it parks; a completer changes the ring with a
//! `SeqCst` read-modify-write of its counter before it reads the waiting count. One of the two
//! sees the other: either the waiter's last try finds the change, or the completer finds the
//! waiter. The count is decremented by whoever unlinks a node or watch, so it never falls below
//! the number linked. A waiter that finds what it needs on that last try cancels its node (an
//! exchange racing the completer's); if a completer notified it first, the notification is
//! passed on to the next waiter when the ring could serve another one.
//!
//! A select's chosen send reserves a place in the ring's tail word (see `ring.rs`), never a
//! position, so no receiver waits for a message that may not come; a disconnection marks the
//! tail word, then completes the parked nodes of the other side as `DISCONNECTED`.
//!
//! # The locked path (zero capacity, unbounded)
//! One short spin lock guards the buffer and the two lists of parked threads (Go's design).
//! Invariants, under the lock: receivers wait only while the buffer is empty and no sender waits;
//! senders wait (each holding its message) only while the buffer is full — always, for a
//! zero-capacity channel — and no receiver waits. So a sender that finds a waiting receiver hands
//! its message straight into that receiver's node, and a receiver that frees a place pulls the
//! first waiting sender's message into the buffer: a woken thread never competes again.
//!
//! A select's send arm reserves what it was chosen for (a free place, a waiting receiver's
//! node, or a blocked select's receive: see `watch.rs` on claims) before its message exists
//! (`select!` evaluates it only once the arm is chosen), so a chosen send never waits. On a
//! zero-capacity channel a plain send or receive also claims a blocked select on the other
//! side, and a receive then waits for that select's message.
//!
//! Before a send or receive links its node, it may wait actively outside the lock and try again
//! from the start (`spin.rs`): on the ring path a green thread polls while the other side
//! moves, on the locked path the first waiter of its side spins while the other side runs.

use super::ring::{self, Reserve, Ring};
use super::spin;
use super::watch::{any_claimable, claim_first, Claimed, Payload, Token, Watch};
use crate::handoff::{
    wake_all, Handoff, CANCELLED, CLAIMED, DISCONNECTED, DONE, NOTIFIED, RETRY, WAITING,
};
use crate::hook::{current_hook, ThreadTag, Unparker};
use crate::spin::SpinLock;
use crossbeam_utils::CachePadded;
use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

mod ring_path;

/// How long an operation may wait.
#[derive(Clone, Copy)]
pub(crate) enum Block {
    Never,
    Forever,
    Until(Instant),
}

impl Block {
    /// `Until(now + timeout)`, or `Forever` when that instant is not representable.
    pub(crate) fn after(timeout: std::time::Duration) -> Block {
        Instant::now()
            .checked_add(timeout)
            .map_or(Block::Forever, Block::Until)
    }

    pub(super) fn deadline(self) -> Option<Instant> {
        match self {
            Block::Until(d) => Some(d),
            _ => None,
        }
    }
}

/// Why a send did not happen; the message comes back.
pub(crate) enum SendFail<T> {
    Full(T),
    Disconnected(T),
    Timeout(T),
}

/// Why a receive did not happen.
pub(crate) enum RecvFail {
    Empty,
    Disconnected,
    Timeout,
}

type Waiters<T> = VecDeque<NonNull<Handoff<T>>>;

struct State<T> {
    buf: VecDeque<T>,
    /// Parked receivers (the buffer is empty).
    receivers: Waiters<T>,
    /// Parked senders with their messages (the buffer is full).
    senders: Waiters<T>,
    /// Every `Sender` is gone.
    no_senders: bool,
    /// Every `Receiver` is gone.
    no_receivers: bool,
    /// Blocked selects waiting for a receive to become possible.
    recv_watchers: Vec<NonNull<Watch>>,
    /// Blocked selects waiting for a send to become possible.
    send_watchers: Vec<NonNull<Watch>>,
    /// Buffer places reserved by selects' chosen sends (their messages come later).
    reserved: usize,
    /// The thread of the last send and of the last receive: the thread a waiter of the other
    /// side waits for, asked about before it spins (see `spin.rs`).
    last_sender: ThreadTag,
    last_receiver: ThreadTag,
    /// A sender (a receiver) spins outside the lock before it would link its node: the next
    /// waiter of its side parks at once.
    sender_spinning: bool,
    receiver_spinning: bool,
}

impl<T> State<T> {
    /// Whether a receive would not wait (`not`: a select that must not pair with itself).
    fn recv_ready(&self, cap: usize, not: *const Token) -> bool {
        !self.buf.is_empty()
            || !self.senders.is_empty()
            || self.no_senders
            // SAFETY: the caller holds the channel's lock.
            || (cap == 0 && unsafe { any_claimable(&self.send_watchers, not) })
    }

    /// Whether a send would not wait (`not` as for `recv_ready`).
    fn send_ready(&self, cap: usize, not: *const Token) -> bool {
        self.no_receivers
            || self.buf.len() + self.reserved < cap
            || !self.receivers.is_empty()
            // SAFETY: the caller holds the channel's lock.
            || (cap == 0 && unsafe { any_claimable(&self.recv_watchers, not) })
    }

    /// A buffer place became free: the first waiting sender's message moves into it (that
    /// sender's unparker is returned), or else the selects watching for a place are fired.
    fn place_freed(&mut self, cap: usize) -> Vec<Unparker> {
        if self.buf.len() + self.reserved < cap {
            if let Some(s) = self.senders.pop_front() {
                // SAFETY: a linked node is alive and ours to empty under the lock.
                return unsafe {
                    let s = s.as_ref();
                    let m = s.take().expect("a waiting sender holds its message");
                    self.buf.push_back(m);
                    vec![s.complete(DONE)]
                };
            }
        }
        fire(&mut self.send_watchers)
    }
}

/// What a select's chosen send holds until it has its message: see [`Chan::claim_send`].
pub(crate) enum SendClaim {
    /// Every receiver is gone: the send fails with its message.
    Disconnected,
    /// A reserved buffer place; `release` gives it back (monomorphised for the channel).
    Place {
        chan: *const (),
        release: unsafe fn(*const ()),
    },
    /// A receiver's node (a `Handoff<T>`) waiting for this message; `retry` completes it
    /// without one.
    Receiver {
        node: *const (),
        retry: unsafe fn(*const ()),
    },
    /// A blocked select's receive, committed to this send.
    Select(Claimed),
}

impl SendClaim {
    /// A receiver's node of a `Chan<T>` claimed for a send.
    pub(crate) fn receiver<T>(node: *const ()) -> SendClaim {
        unsafe fn retry<T>(node: *const ()) {
            // SAFETY: `node` is a claimed `Handoff<T>` (see `SendClaim::receiver`'s callers),
            // alive until completed, and completed only here or in `Chan::send_claimed`.
            let u = unsafe { &*node.cast::<Handoff<T>>() }.complete(RETRY);
            wake_all([u]);
        }
        SendClaim::Receiver {
            node,
            retry: retry::<T>,
        }
    }

    /// Gives the claim up: what it reserved goes back, a claimed receiver tries again.
    pub(crate) fn release(self) {
        match self {
            SendClaim::Disconnected => {}
            // SAFETY: made by `Chan::claim_send` for this very channel, which the selected
            // operation's borrow of the sender keeps alive.
            SendClaim::Place { chan, release } => unsafe { release(chan) },
            // SAFETY: as in `receiver`.
            SendClaim::Receiver { node, retry } => unsafe { retry(node) },
            SendClaim::Select(c) => c.release(),
        }
    }
}

/// Fires the watches of `list` (a change made their operation possible) and empties it;
/// returns the unparkers of the selects woken, to call once the lock is released.
fn fire(list: &mut Vec<NonNull<Watch>>) -> Vec<Unparker> {
    list.drain(..)
        // SAFETY: linked watches are alive, and we hold their channel's lock.
        .filter_map(|w| unsafe { w.as_ref().fire() })
        .collect()
}

/// Fires (and unlinks) only the watches of `ready`-style checks in `list`, leaving the
/// claimable watches of selects linked (on a zero-capacity channel they wait to be claimed).
fn fire_observers(list: &mut Vec<NonNull<Watch>>) -> Vec<Unparker> {
    let mut woken = Vec::new();
    list.retain(|w| {
        // SAFETY: as in `fire`.
        let w = unsafe { w.as_ref() };
        if w.claimable() {
            return true;
        }
        // SAFETY: as in `fire`.
        woken.extend(unsafe { w.fire() });
        false
    });
    woken
}

/// The tag of the calling thread (none on a plain OS thread).
fn current_tag() -> ThreadTag {
    ThreadTag::of(crate::hook::scheduler_class_cell())
}

/// The threads and watches of one side that wait on a ring channel: linked, or about to link
/// (counted before linking, uncounted by whoever unlinks; see the module doc). Model atomics
/// under loom: they are half of the store-load pairs that the models check.
struct Waiting {
    receivers: crate::sync::AtomicUsize,
    senders: crate::sync::AtomicUsize,
}

/// The green threads of each side that poll the ring now (`spin.rs`), on a cache line of its
/// own: advisory (std atomics under loom too), it only caps how many poll at once.
struct Pollers {
    receivers: AtomicUsize,
    senders: AtomicUsize,
}

pub(crate) struct Chan<T> {
    /// The buffer's length, published at every change under the lock, for a spinning waiter
    /// to read without taking the lock (see `spin.rs`); advisory only, locked path only. A std
    /// atomic under loom too: a model atomic would add a scheduling point inside the lock's
    /// critical section, where loom's `unpark` of a thread blocked on its mutex (a select's
    /// left-over wake-up) breaks loom's own bookkeeping ("expected to be able to acquire
    /// lock"). The ring path touches no model atomic while it holds the lock.
    len: AtomicUsize,
    /// The lock-free buffer of a bounded channel with places; `None`: the locked path.
    ring: Option<Ring<T>>,
    waiting: CachePadded<Waiting>,
    pollers: CachePadded<Pollers>,
    state: SpinLock<State<T>>,
    /// Buffer places; `usize::MAX` for an unbounded channel.
    cap: usize,
    pub(crate) sender_count: AtomicUsize,
    pub(crate) receiver_count: AtomicUsize,
}

// SAFETY: the raw node pointers are dereferenced only under the lock while the node is linked
// (its owner keeps it alive until it is unlinked, see `Linked`); messages cross threads, hence
// `T: Send`.
unsafe impl<T: Send> Send for Chan<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Chan<T> {}

/// A node linked into one of the lists; unlinks it if dropped uncompleted (a panic in a park,
/// or the timeout path), so that no list points into a dead stack frame.
struct Linked<'a, T> {
    chan: &'a Chan<T>,
    node: &'a Handoff<T>,
    senders: bool,
}

impl<T> Linked<'_, T> {
    /// Parks until completed or the deadline; returns the outcome, `WAITING` on timeout (after
    /// unlinking the node).
    fn wait(self, block: Block) -> usize {
        let what = crate::hook::WaitOn::Channel {
            addr: self.chan as *const Chan<T> as usize,
            send: self.senders,
        };
        let outcome = self.node.park(block.deadline(), what);
        if outcome != WAITING {
            return outcome;
        }
        let mut st = self.chan.state.lock();
        let outcome = self.node.outcome();
        if outcome == WAITING {
            self.unlink(&mut st);
        }
        drop(st);
        if outcome == CLAIMED {
            // A select chose to send to us just before the deadline: it completes us soon.
            return self.node.park(None, what);
        }
        outcome
    }

    fn unlink(&self, st: &mut State<T>) {
        let list = if self.senders {
            &mut st.senders
        } else {
            &mut st.receivers
        };
        let me = NonNull::from(self.node);
        if let Some(i) = list.iter().position(|&p| p == me) {
            list.remove(i);
        }
        self.node.cancel();
    }
}

impl<T> Drop for Linked<'_, T> {
    fn drop(&mut self) {
        if self.node.outcome() == WAITING {
            let mut st = self.chan.state.lock();
            if self.node.outcome() == WAITING {
                self.unlink(&mut st);
            }
        }
        // Claimed by a select (unwinding out of a park): its completion still writes the node.
        while self.node.outcome() == CLAIMED {
            current_hook().park();
        }
    }
}

impl<T> Chan<T> {
    /// A channel with `cap` buffer places (`None`: unbounded), the buffer allocated up front.
    pub(crate) fn new(cap: Option<usize>) -> Result<Chan<T>, std::collections::TryReserveError> {
        let mut buf = VecDeque::new();
        let mut ring = None;
        match cap {
            Some(c) if c > 0 && c <= ring::MAX_CAP => ring = Some(Ring::new(c)?),
            Some(c) => buf.try_reserve_exact(c)?,
            None => {}
        }
        Ok(Chan {
            ring,
            waiting: CachePadded::new(Waiting {
                receivers: crate::sync::AtomicUsize::new(0),
                senders: crate::sync::AtomicUsize::new(0),
            }),
            pollers: CachePadded::new(Pollers {
                receivers: AtomicUsize::new(0),
                senders: AtomicUsize::new(0),
            }),
            state: SpinLock::new(State {
                buf,
                receivers: VecDeque::new(),
                senders: VecDeque::new(),
                no_senders: false,
                no_receivers: false,
                recv_watchers: Vec::new(),
                send_watchers: Vec::new(),
                reserved: 0,
                last_sender: ThreadTag::NONE,
                last_receiver: ThreadTag::NONE,
                sender_spinning: false,
                receiver_spinning: false,
            }),
            len: AtomicUsize::new(0),
            cap: cap.unwrap_or(usize::MAX),
            sender_count: AtomicUsize::new(1),
            receiver_count: AtomicUsize::new(1),
        })
    }

    /// Publishes the buffer's length for spinning waiters (under the lock, after a change).
    #[inline]
    fn publish_len(&self, st: &State<T>) {
        self.len.store(st.buf.len(), Ordering::Relaxed);
    }

    pub(crate) fn capacity(&self) -> Option<usize> {
        (self.cap != usize::MAX).then_some(self.cap)
    }

    pub(crate) fn len(&self) -> usize {
        if let Some(ring) = &self.ring {
            return ring.len();
        }
        self.state.lock().buf.len()
    }

    pub(crate) fn send(&self, msg: T, block: Block) -> Result<(), SendFail<T>> {
        if let Some(ring) = &self.ring {
            return self.ring_send(ring, msg, block);
        }
        let me = current_tag();
        let mut spun = false;
        let mut st = self.state.lock();
        loop {
            if st.no_receivers {
                return Err(SendFail::Disconnected(msg));
            }
            st.last_sender = me;
            if let Some(r) = st.receivers.pop_front() {
                // SAFETY: a linked node is alive and ours to fill under the lock.
                let u = unsafe {
                    let r = r.as_ref();
                    r.put(msg);
                    r.complete(DONE)
                };
                drop(st);
                wake_all([u]);
                return Ok(());
            }
            if self.cap == 0 {
                // SAFETY: we hold the lock.
                if let Some(claim) = unsafe { claim_first(&mut st.recv_watchers, std::ptr::null()) }
                {
                    drop(st);
                    claim.deliver(Payload::new::<T>(Ok(msg)));
                    return Ok(());
                }
            }
            if st.buf.len() + st.reserved < self.cap {
                if self.cap == usize::MAX && st.buf.try_reserve(1).is_err() {
                    let len = st.buf.len();
                    drop(st);
                    panic!(
                        "footprint::channel: out of memory growing an unbounded channel past \
                         {len} messages; use channel::bounded to apply back-pressure"
                    );
                }
                st.buf.push_back(msg);
                self.publish_len(&st);
                let woken = fire(&mut st.recv_watchers);
                drop(st);
                wake_all(woken);
                return Ok(());
            }
            if let Block::Never = block {
                return Err(SendFail::Full(msg));
            }
            // Full. The first waiting sender spins while the last receiver runs elsewhere, then
            // tries again from the start (once).
            if !spun && self.cap != 0 && st.senders.is_empty() && !st.sender_spinning {
                let peer = st.last_receiver;
                if spin::may_spin(peer) {
                    spun = true;
                    st.sender_spinning = true;
                    drop(st);
                    spin::spin_for(peer, || self.len.load(Ordering::Relaxed) < self.cap);
                    st = self.state.lock();
                    st.sender_spinning = false;
                    continue;
                }
            }
            break;
        }
        let node = Handoff::new(Some(msg));
        st.senders.push_back(NonNull::from(&node));
        let woken = fire(&mut st.recv_watchers);
        drop(st);
        wake_all(woken);
        let linked = Linked {
            chan: self,
            node: &node,
            senders: true,
        };
        match linked.wait(block) {
            DONE => Ok(()),
            // SAFETY: the node is completed or unlinked: the slot is ours again.
            outcome => {
                let msg = unsafe { node.take() }.expect("an undelivered message stays in its node");
                if outcome == DISCONNECTED {
                    Err(SendFail::Disconnected(msg))
                } else {
                    Err(SendFail::Timeout(msg))
                }
            }
        }
    }

    pub(crate) fn recv(&self, block: Block) -> Result<T, RecvFail> {
        if let Some(ring) = &self.ring {
            return self.ring_recv(ring, block);
        }
        let me = current_tag();
        let mut spun = false;
        loop {
            if let Some(done) = self.recv_once(block, me, &mut spun) {
                return done;
            }
            // A select that had claimed us, or that we had claimed, dropped its chosen send; or
            // the spin before parking ended.
        }
    }

    /// One receive attempt; `None`: a claim was given up, or this receiver spun (`spun` set)
    /// and tries again.
    fn recv_once(
        &self,
        block: Block,
        me: ThreadTag,
        spun: &mut bool,
    ) -> Option<Result<T, RecvFail>> {
        let mut st = self.state.lock();
        st.last_receiver = me;
        if let Some(msg) = st.buf.pop_front() {
            // A place freed: the first waiting sender's message moves into the buffer, or a
            // watching select may send now.
            let woken = st.place_freed(self.cap);
            self.publish_len(&st);
            drop(st);
            wake_all(woken);
            return Some(Ok(msg));
        }
        if let Some(s) = st.senders.pop_front() {
            // Zero capacity: take the message straight from the sender.
            // SAFETY: a linked node is alive and ours to empty under the lock.
            let (msg, u) = unsafe {
                let s = s.as_ref();
                let m = s.take().expect("a waiting sender holds its message");
                (m, s.complete(DONE))
            };
            drop(st);
            wake_all([u]);
            return Some(Ok(msg));
        }
        if st.no_senders {
            return Some(Err(RecvFail::Disconnected));
        }
        let what = crate::hook::WaitOn::Channel {
            addr: self as *const Chan<T> as usize,
            send: false,
        };
        if self.cap == 0 && !st.send_watchers.is_empty() {
            // A blocked select offering a send: commit it to us and wait for its message (it
            // evaluates the message once woken), past any deadline: it is on its way.
            let node = Handoff::new(None);
            // SAFETY: we hold the lock.
            if let Some(claim) = unsafe { claim_first(&mut st.send_watchers, std::ptr::null()) } {
                drop(st);
                claim.deliver_partner((&node as *const Handoff<T>).cast());
                return match node.park(None, what) {
                    // SAFETY: completed: the slot is ours again.
                    DONE => Some(Ok(
                        unsafe { node.take() }.expect("a completed receive holds its message")
                    )),
                    outcome => {
                        debug_assert_eq!(outcome, RETRY);
                        None
                    }
                };
            }
        }
        if let Block::Never = block {
            return Some(Err(RecvFail::Empty));
        }
        // Empty. The first waiting receiver spins while the last sender runs elsewhere, then
        // tries again from the start (once). Not on a zero-capacity channel: there a send
        // waits for a linked receiver.
        if !*spun && self.cap != 0 && st.receivers.is_empty() && !st.receiver_spinning {
            let peer = st.last_sender;
            if spin::may_spin(peer) {
                *spun = true;
                st.receiver_spinning = true;
                drop(st);
                spin::spin_for(peer, || self.len.load(Ordering::Relaxed) > 0);
                self.state.lock().receiver_spinning = false;
                return None;
            }
        }
        let node = Handoff::new(None);
        st.receivers.push_back(NonNull::from(&node));
        // Selects watching for a send may send to us now. On a zero-capacity channel only those
        // that merely check (`ready`): the claimable ones were claimed above if they could be.
        let woken = if self.cap == 0 {
            fire_observers(&mut st.send_watchers)
        } else {
            fire(&mut st.send_watchers)
        };
        drop(st);
        wake_all(woken);
        let linked = Linked {
            chan: self,
            node: &node,
            senders: false,
        };
        Some(match linked.wait(block) {
            // SAFETY: completed: the slot is ours again.
            DONE => Ok(unsafe { node.take() }.expect("a completed receive holds its message")),
            DISCONNECTED => Err(RecvFail::Disconnected),
            RETRY => return None,
            outcome => {
                debug_assert!(outcome == WAITING || outcome == CANCELLED);
                Err(RecvFail::Timeout)
            }
        })
    }

    /// Reserves what a select's chosen send needs: the disconnection, a waiting receiver, a
    /// blocked select's receive (zero capacity), or a buffer place; `None` when the send would
    /// wait. The message follows with [`send_claimed`](Self::send_claimed), or the claim is
    /// given up with [`SendClaim::release`].
    pub(crate) fn claim_send(&self) -> Option<SendClaim> {
        if let Some(ring) = &self.ring {
            return match ring.reserve() {
                Reserve::Disconnected => Some(SendClaim::Disconnected),
                Reserve::Full => None,
                Reserve::Reserved => Some(self.place_claim()),
            };
        }
        let mut st = self.state.lock();
        if st.no_receivers {
            return Some(SendClaim::Disconnected);
        }
        if let Some(r) = st.receivers.pop_front() {
            // SAFETY: a linked node is alive under the lock; claimed, it waits for us.
            unsafe { r.as_ref() }.claim();
            return Some(SendClaim::receiver::<T>(r.as_ptr().cast_const().cast()));
        }
        if self.cap == 0 {
            // SAFETY: we hold the lock.
            return unsafe { claim_first(&mut st.recv_watchers, std::ptr::null()) }
                .map(SendClaim::Select);
        }
        if st.buf.len() + st.reserved < self.cap {
            st.reserved += 1;
            return Some(self.place_claim());
        }
        None
    }

    /// The claim of a place this channel reserved.
    fn place_claim(&self) -> SendClaim {
        unsafe fn release<T>(chan: *const ()) {
            // SAFETY: see `SendClaim::release`.
            unsafe { &*chan.cast::<Chan<T>>() }.release_place();
        }
        SendClaim::Place {
            chan: (self as *const Chan<T>).cast(),
            release: release::<T>,
        }
    }

    /// Completes a claimed send with `msg`; gives `msg` back when every receiver is gone.
    pub(crate) fn send_claimed(&self, claim: SendClaim, msg: T) -> Result<(), T> {
        match claim {
            SendClaim::Disconnected => Err(msg),
            SendClaim::Place { .. } => {
                if let Some(ring) = &self.ring {
                    ring.push_reserved(msg)?;
                    self.wake_receivers();
                    return Ok(());
                }
                let mut st = self.state.lock();
                st.reserved -= 1;
                if st.no_receivers {
                    return Err(msg);
                }
                if let Some(r) = st.receivers.pop_front() {
                    // The buffer emptied and a receiver parked since the reservation: the
                    // message goes to it, and the reserved place is free for a watching select.
                    // SAFETY: a linked node is alive and ours to fill under the lock.
                    let u = unsafe {
                        let r = r.as_ref();
                        r.put(msg);
                        r.complete(DONE)
                    };
                    let woken = fire(&mut st.send_watchers);
                    drop(st);
                    wake_all([u]);
                    wake_all(woken);
                    return Ok(());
                }
                st.buf.push_back(msg);
                self.publish_len(&st);
                let woken = fire(&mut st.recv_watchers);
                drop(st);
                wake_all(woken);
                Ok(())
            }
            SendClaim::Receiver { node, .. } => {
                // SAFETY: claimed from this channel (a `Handoff<T>`), alive until completed,
                // and ours alone since the claim.
                let node = unsafe { &*node.cast::<Handoff<T>>() };
                // SAFETY: as above.
                unsafe { node.put(msg) };
                wake_all([node.complete(DONE)]);
                Ok(())
            }
            SendClaim::Select(c) => {
                c.deliver(Payload::new::<T>(Ok(msg)));
                Ok(())
            }
        }
    }

    /// Gives a reserved place back.
    fn release_place(&self) {
        if let Some(ring) = &self.ring {
            ring.unreserve();
            self.wake_senders();
            return;
        }
        let mut st = self.state.lock();
        st.reserved -= 1;
        let woken = st.place_freed(self.cap);
        self.publish_len(&st);
        drop(st);
        wake_all(woken);
    }

    /// Whether a receive would not wait now (a message, a waiting sender, a blocked select
    /// offering a send on a zero-capacity channel, or disconnected).
    pub(crate) fn recv_ready(&self) -> bool {
        if let Some(ring) = &self.ring {
            return ring.recv_ready();
        }
        self.state.lock().recv_ready(self.cap, std::ptr::null())
    }

    /// Whether a send would not wait now (a free place, a waiting receiver, a blocked select
    /// offering a receive on a zero-capacity channel, or disconnected).
    pub(crate) fn send_ready(&self) -> bool {
        if let Some(ring) = &self.ring {
            return ring.send_ready();
        }
        self.state.lock().send_ready(self.cap, std::ptr::null())
    }

    /// Links a select's watch of a receive, unless one is possible now (`true`: not linked).
    pub(crate) fn watch_recv(&self, w: &Watch) -> bool {
        if let Some(ring) = &self.ring {
            return self.ring_watch(w, false, || ring.recv_ready());
        }
        let mut st = self.state.lock();
        if st.recv_ready(self.cap, w.token()) {
            return true;
        }
        st.recv_watchers.push(NonNull::from(w));
        // Selects only watching (`ready`) for a send to this zero-capacity channel may send
        // now, to this select (claimable ones made `recv_ready` true above).
        let woken = if self.cap == 0 && w.claimable() {
            fire_observers(&mut st.send_watchers)
        } else {
            Vec::new()
        };
        drop(st);
        wake_all(woken);
        false
    }

    /// Links a select's watch of a send, unless one is possible now (`true`: not linked).
    pub(crate) fn watch_send(&self, w: &Watch) -> bool {
        if let Some(ring) = &self.ring {
            return self.ring_watch(w, true, || ring.send_ready());
        }
        let mut st = self.state.lock();
        if st.send_ready(self.cap, w.token()) {
            return true;
        }
        st.send_watchers.push(NonNull::from(w));
        let woken = if self.cap == 0 && w.claimable() {
            fire_observers(&mut st.recv_watchers)
        } else {
            Vec::new()
        };
        drop(st);
        wake_all(woken);
        false
    }

    /// Unlinks a select's watch if a channel has not already done so when firing it.
    pub(crate) fn unwatch(&self, w: &Watch) {
        let me = NonNull::from(w);
        let mut st = self.state.lock();
        let (r, s) = (st.recv_watchers.len(), st.send_watchers.len());
        st.recv_watchers.retain(|&p| p != me);
        st.send_watchers.retain(|&p| p != me);
        let removed = (r - st.recv_watchers.len(), s - st.send_watchers.len());
        drop(st);
        self.uncount(removed.0, false);
        self.uncount(removed.1, true);
    }

    /// The last sender is gone: parked receivers (the buffer is empty) learn it.
    pub(crate) fn disconnect_senders(&self) {
        if let Some(ring) = &self.ring {
            ring.disconnect();
            let mut guard = self.state.lock();
            let st = &mut *guard;
            st.no_senders = true;
            let (wake, removed) = complete_linked(&mut st.receivers, &mut st.recv_watchers);
            drop(guard);
            self.uncount(removed, false);
            wake_all(wake);
            return;
        }
        let mut st = self.state.lock();
        st.no_senders = true;
        let wake = complete_all(&mut st.receivers);
        let woken = fire(&mut st.recv_watchers);
        drop(st);
        wake_all(wake);
        wake_all(woken);
    }

    /// The last receiver is gone: parked senders get their messages back, and the buffered
    /// messages are dropped (outside the lock: their `Drop` may use this channel), in order,
    /// each at most once: if one's destructor panics, the panic propagates and the messages
    /// after it are leaked (see [`drop_in_order`]).
    pub(crate) fn disconnect_receivers(&self) {
        if let Some(ring) = &self.ring {
            ring.disconnect();
            let mut guard = self.state.lock();
            let st = &mut *guard;
            st.no_receivers = true;
            let (wake, removed) = complete_linked(&mut st.senders, &mut st.send_watchers);
            drop(guard);
            self.uncount(removed, true);
            wake_all(wake);
            ring.drop_all();
            return;
        }
        let mut st = self.state.lock();
        st.no_receivers = true;
        let wake = complete_all(&mut st.senders);
        let woken = fire(&mut st.send_watchers);
        let buffered = std::mem::take(&mut st.buf);
        self.publish_len(&st);
        drop(st);
        wake_all(wake);
        wake_all(woken);
        drop_in_order(buffered);
    }
}

/// Drops the messages of `buf` front to back, each at most once. If a destructor panics, the
/// messages after it are leaked (forgotten, their buffer freed) and the panic goes on: dropping
/// them while it unwinds would abort the process if one panicked too (crossbeam-channel leaks
/// them the same way). `VecDeque`'s own drop goes on dropping the other elements during the
/// unwind, and a second panicking message aborted the process.
pub(crate) fn drop_in_order<T>(mut buf: VecDeque<T>) {
    /// Forgets what is left of the buffer if a destructor unwinds past it.
    struct LeakRest<'a, T>(&'a mut VecDeque<T>);
    impl<T> Drop for LeakRest<'_, T> {
        fn drop(&mut self) {
            while let Some(m) = self.0.pop_front() {
                std::mem::forget(m);
            }
        }
    }
    let rest = LeakRest(&mut buf);
    while let Some(m) = rest.0.pop_front() {
        drop(m);
    }
}

/// Completes every node of `list` as disconnected; returns their unparkers.
fn complete_all<T>(list: &mut Waiters<T>) -> Vec<Unparker> {
    list.drain(..)
        // SAFETY: linked nodes are alive under the lock.
        .map(|n| unsafe { n.as_ref() }.complete(DISCONNECTED))
        .collect()
}

/// Completes every node of `list` as disconnected (those not cancelled by their owners) and
/// fires every watch of `watchers`, unlinking all; returns the unparkers and how many were
/// unlinked (for the side's waiting count).
fn complete_linked<T>(
    list: &mut Waiters<T>,
    watchers: &mut Vec<NonNull<Watch>>,
) -> (Vec<Unparker>, usize) {
    let removed = list.len() + watchers.len();
    let mut wake: Vec<Unparker> = list
        .drain(..)
        // SAFETY: linked nodes are alive under the lock.
        .filter_map(|n| unsafe { n.as_ref() }.try_complete(DISCONNECTED))
        .collect();
    wake.extend(fire(watchers));
    (wake, removed)
}

/// Completes the first node of `list` whose owner has not cancelled it as `NOTIFIED`,
/// unlinking it and the cancelled ones before it; returns its unparker and how many nodes were
/// unlinked.
fn notify_first<T>(list: &mut Waiters<T>) -> (Option<Unparker>, usize) {
    let mut removed = 0;
    while let Some(n) = list.pop_front() {
        removed += 1;
        // SAFETY: a linked node is alive under the lock.
        if let Some(u) = unsafe { n.as_ref() }.try_complete(NOTIFIED) {
            return (Some(u), removed);
        }
    }
    (None, removed)
}

impl<T> Drop for Chan<T> {
    fn drop(&mut self) {
        let mut st = self.state.lock();
        debug_assert!(st.receivers.is_empty() && st.senders.is_empty());
        debug_assert!(st.recv_watchers.is_empty() && st.send_watchers.is_empty());
        // Empty unless the drain of the last receiver panicked part-way (then it leaked the
        // rest); dropped the same panic-safe way in any case.
        let buffered = std::mem::take(&mut st.buf);
        drop(st);
        drop_in_order(buffered);
    }
}

/// Increments a handle count (clone of a `Sender` or `Receiver`).
pub(crate) fn acquire(count: &AtomicUsize) {
    count.fetch_add(1, Ordering::Relaxed);
}

/// Decrements a handle count; returns whether it was the last handle of its side.
pub(crate) fn release(count: &AtomicUsize) -> bool {
    count.fetch_sub(1, Ordering::AcqRel) == 1
}
