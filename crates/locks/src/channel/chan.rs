//! The state shared by the senders and receivers of one channel, and its two operations.
//!
//! One short spin lock guards the buffer and the two lists of parked threads (Go's design).
//! Invariants, under the lock: receivers wait only while the buffer is empty and no sender waits;
//! senders wait (each holding its message) only while the buffer is full — always, for a
//! zero-capacity channel — and no receiver waits. So a sender that finds a waiting receiver hands
//! its message straight into that receiver's node, and a receiver that frees a place pulls the
//! first waiting sender's message into the buffer: a woken thread never competes again.

use super::watch::{Token, Watch};
use crate::handoff::{wake_all, Handoff, CANCELLED, DISCONNECTED, DONE, WAITING};
use crate::hook::Unparker;
use crate::spin::SpinLock;
use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

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

    fn deadline(self) -> Option<Instant> {
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
}

impl<T> State<T> {
    fn recv_ready(&self) -> bool {
        !self.buf.is_empty() || !self.senders.is_empty() || self.no_senders
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

pub(crate) struct Chan<T> {
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
    }
}

impl<T> Chan<T> {
    /// A channel with `cap` buffer places (`None`: unbounded), the buffer allocated up front.
    pub(crate) fn new(cap: Option<usize>) -> Result<Chan<T>, std::collections::TryReserveError> {
        let mut buf = VecDeque::new();
        if let Some(c) = cap {
            buf.try_reserve_exact(c)?;
        }
        Ok(Chan {
            state: SpinLock::new(State {
                buf,
                receivers: VecDeque::new(),
                senders: VecDeque::new(),
                no_senders: false,
                no_receivers: false,
                recv_watchers: Vec::new(),
                send_watchers: Vec::new(),
            }),
            cap: cap.unwrap_or(usize::MAX),
            sender_count: AtomicUsize::new(1),
            receiver_count: AtomicUsize::new(1),
        })
    }

    pub(crate) fn capacity(&self) -> Option<usize> {
        (self.cap != usize::MAX).then_some(self.cap)
    }

    pub(crate) fn len(&self) -> usize {
        self.state.lock().buf.len()
    }

    pub(crate) fn send(&self, msg: T, block: Block) -> Result<(), SendFail<T>> {
        let mut st = self.state.lock();
        if st.no_receivers {
            return Err(SendFail::Disconnected(msg));
        }
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
        if st.buf.len() < self.cap {
            if self.cap == usize::MAX && st.buf.try_reserve(1).is_err() {
                let len = st.buf.len();
                drop(st);
                panic!(
                    "footprint::channel: out of memory growing an unbounded channel past {len} \
                     messages; use channel::bounded to apply back-pressure"
                );
            }
            st.buf.push_back(msg);
            let woken = fire(&mut st.recv_watchers);
            drop(st);
            wake_all(woken);
            return Ok(());
        }
        if let Block::Never = block {
            return Err(SendFail::Full(msg));
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
        let mut st = self.state.lock();
        if let Some(msg) = st.buf.pop_front() {
            // A place freed: the first waiting sender's message moves into the buffer.
            let wake = st.senders.pop_front().map(|s| {
                // SAFETY: a linked node is alive and ours to empty under the lock.
                unsafe {
                    let s = s.as_ref();
                    let m = s.take().expect("a waiting sender holds its message");
                    st.buf.push_back(m);
                    s.complete(DONE)
                }
            });
            // Still free (no sender took it): a watching select may send now.
            let woken = if wake.is_none() {
                fire(&mut st.send_watchers)
            } else {
                Vec::new()
            };
            drop(st);
            wake_all(wake);
            wake_all(woken);
            return Ok(msg);
        }
        if let Some(s) = st.senders.pop_front() {
            // Zero capacity: take the message straight from the sender.
            // SAFETY: as above.
            let (msg, u) = unsafe {
                let s = s.as_ref();
                let m = s.take().expect("a waiting sender holds its message");
                (m, s.complete(DONE))
            };
            drop(st);
            wake_all([u]);
            return Ok(msg);
        }
        if st.no_senders {
            return Err(RecvFail::Disconnected);
        }
        if let Block::Never = block {
            return Err(RecvFail::Empty);
        }
        let node = Handoff::new(None);
        st.receivers.push_back(NonNull::from(&node));
        let woken = fire(&mut st.send_watchers);
        drop(st);
        wake_all(woken);
        let linked = Linked {
            chan: self,
            node: &node,
            senders: false,
        };
        match linked.wait(block) {
            // SAFETY: completed: the slot is ours again.
            DONE => Ok(unsafe { node.take() }.expect("a completed receive holds its message")),
            DISCONNECTED => Err(RecvFail::Disconnected),
            outcome => {
                debug_assert!(outcome == WAITING || outcome == CANCELLED);
                Err(RecvFail::Timeout)
            }
        }
    }

    /// Whether a receive would not wait now (a message, a waiting sender, or disconnected).
    pub(crate) fn recv_ready(&self) -> bool {
        self.state.lock().recv_ready()
    }

    /// Whether a send would not wait now (a free place, a waiting receiver, or disconnected).
    /// With `selects`, a zero-capacity channel also counts a select blocked on receiving from
    /// it: the send then waits for that select to take the message.
    pub(crate) fn send_ready(&self, selects: bool) -> bool {
        let st = self.state.lock();
        Self::send_ready_in(&st, self.cap, selects.then_some(std::ptr::null()))
    }

    /// `selects`: count selects blocked on receiving, except the one owning `token` (a select
    /// that both sends and receives here must not pair with itself).
    fn send_ready_in(st: &State<T>, cap: usize, selects: Option<*const Token>) -> bool {
        st.no_receivers
            || st.buf.len() < cap
            || !st.receivers.is_empty()
            || selects.is_some_and(|mine| {
                cap == 0
                    && st.recv_watchers.iter().any(|w| {
                        // SAFETY: linked watches are alive under the lock.
                        unsafe { w.as_ref() }.token() != mine
                    })
            })
    }

    /// Links a select's watch of a receive, unless one is possible now (`true`: not linked).
    pub(crate) fn watch_recv(&self, w: &Watch) -> bool {
        let mut st = self.state.lock();
        if st.recv_ready() {
            return true;
        }
        st.recv_watchers.push(NonNull::from(w));
        // A select sending to this zero-capacity channel may now pair with this one.
        let woken = if self.cap == 0 {
            fire(&mut st.send_watchers)
        } else {
            Vec::new()
        };
        drop(st);
        wake_all(woken);
        false
    }

    /// Links a select's watch of a send, unless one is possible now (`true`: not linked).
    pub(crate) fn watch_send(&self, w: &Watch) -> bool {
        let mut st = self.state.lock();
        if Self::send_ready_in(&st, self.cap, Some(w.token())) {
            return true;
        }
        st.send_watchers.push(NonNull::from(w));
        false
    }

    /// Unlinks a select's watch if a channel has not already done so when firing it.
    pub(crate) fn unwatch(&self, w: &Watch) {
        let me = NonNull::from(w);
        let mut st = self.state.lock();
        st.recv_watchers.retain(|&p| p != me);
        st.send_watchers.retain(|&p| p != me);
    }

    /// The last sender is gone: parked receivers (the buffer is empty) learn it.
    pub(crate) fn disconnect_senders(&self) {
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
        let mut st = self.state.lock();
        st.no_receivers = true;
        let wake = complete_all(&mut st.senders);
        let woken = fire(&mut st.send_watchers);
        let buffered = std::mem::take(&mut st.buf);
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
