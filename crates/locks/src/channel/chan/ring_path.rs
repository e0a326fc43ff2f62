//! The ring path of a bounded channel with places (see the parent module's doc): waiting
//! counts, waking the other side, the poll, linking a node, and the ring's send,
//! receive and select watch. The locked path stays in the parent module.

use super::super::ring::{PopFail, PushFail, Ring};
use super::super::spin;
use super::super::watch::Watch;
use super::{fire, notify_first, Block, Chan, RecvFail, SendFail};
use crate::handoff::{wake_all, Handoff, DISCONNECTED, NOTIFIED, WAITING};
use crate::sync::model_sc_fence;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The ring path (see the module doc).
impl<T> Chan<T> {
    /// The waiting count of one side.
    fn waiting(&self, senders: bool) -> &crate::sync::AtomicUsize {
        if senders {
            &self.waiting.senders
        } else {
            &self.waiting.receivers
        }
    }

    /// Takes `n` unlinked nodes or watches off one side's waiting count (after the lock).
    pub(super) fn uncount(&self, n: usize, senders: bool) {
        if n != 0 && self.ring.is_some() {
            self.waiting(senders).fetch_sub(n, Ordering::SeqCst);
        }
    }

    /// A message went into the ring: wakes the first parked receiver and fires the selects
    /// watching for a receive, if any wait.
    pub(super) fn wake_receivers(&self) {
        self.wake_side(false);
    }

    /// A place in the ring freed: wakes the first parked sender and fires the selects watching
    /// for a send, if any wait.
    pub(super) fn wake_senders(&self) {
        self.wake_side(true);
    }

    fn wake_side(&self, senders: bool) {
        // The ring's change was a `SeqCst` read-modify-write; the model build needs the fence
        // (see `model_sc_fence`).
        model_sc_fence();
        if self.waiting(senders).load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let (list, watchers) = if senders {
            (&mut st.senders, &mut st.send_watchers)
        } else {
            (&mut st.receivers, &mut st.recv_watchers)
        };
        let (first, mut removed) = notify_first(list);
        removed += watchers.len();
        let woken = fire(watchers);
        drop(guard);
        self.uncount(removed, senders);
        wake_all(first);
        wake_all(woken);
    }

    /// The poll of a thread about to wait on the ring (`spin.rs`): `true` when the ring
    /// looked ready (try again), `false` when the thread should link its node and park.
    fn ring_poll(&self, ring: &Ring<T>, senders: bool, block: Block) -> bool {
        let Some(cap) = spin::pollers_cap() else {
            return false;
        };
        let pollers = if senders {
            &self.pollers.senders
        } else {
            &self.pollers.receivers
        };
        if pollers.fetch_add(1, Ordering::Relaxed) >= cap {
            pollers.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        let ready = if senders {
            spin::poll_while_moving(|| ring.send_ready(), || ring.moves(true), block.deadline())
        } else {
            spin::poll_while_moving(|| ring.recv_ready(), || ring.moves(false), block.deadline())
        };
        pollers.fetch_sub(1, Ordering::Relaxed);
        ready
    }

    /// Counts, links (at the front for a thread woken before, which keeps its turn) and
    /// returns the node of a thread about to wait on the ring.
    fn ring_link<'a>(
        &'a self,
        node: &'a Handoff<T>,
        senders: bool,
        front: bool,
    ) -> RingLinked<'a, T> {
        self.waiting(senders).fetch_add(1, Ordering::SeqCst);
        let mut st = self.state.lock();
        let list = if senders {
            &mut st.senders
        } else {
            &mut st.receivers
        };
        if front {
            list.push_front(NonNull::from(node));
        } else {
            list.push_back(NonNull::from(node));
        }
        drop(st);
        // The waiter's half of the store-load pair: its next look at the ring follows.
        model_sc_fence();
        RingLinked {
            chan: self,
            node,
            senders,
        }
    }

    pub(super) fn ring_send(
        &self,
        ring: &Ring<T>,
        mut msg: T,
        block: Block,
    ) -> Result<(), SendFail<T>> {
        let mut front = false;
        loop {
            match ring.push(msg) {
                Ok(()) => {
                    self.wake_receivers();
                    return Ok(());
                }
                Err(PushFail::Disconnected(m)) => return Err(SendFail::Disconnected(m)),
                Err(PushFail::Full(m)) => msg = m,
            }
            match block {
                Block::Never => return Err(SendFail::Full(msg)),
                Block::Until(d) if Instant::now() >= d => return Err(SendFail::Timeout(msg)),
                _ => {}
            }
            if self.ring_poll(ring, true, block) {
                continue;
            }
            let node = Handoff::new(None);
            let linked = self.ring_link(&node, true, front);
            match ring.push(msg) {
                Ok(()) => {
                    if linked.leave() == Some(NOTIFIED) && ring.send_ready() {
                        // Notified of a place it did not need: the next sender may use one.
                        self.wake_senders();
                    }
                    self.wake_receivers();
                    return Ok(());
                }
                Err(PushFail::Disconnected(m)) => return Err(SendFail::Disconnected(m)),
                Err(PushFail::Full(m)) => msg = m,
            }
            match linked.wait(block) {
                NOTIFIED => {
                    linked.completed();
                    front = true;
                }
                DISCONNECTED => return Err(SendFail::Disconnected(msg)),
                _ => {
                    // The deadline passed.
                    return match linked.leave() {
                        None => Err(SendFail::Timeout(msg)),
                        Some(DISCONNECTED) => Err(SendFail::Disconnected(msg)),
                        // Notified just before the deadline: the place is taken at once or the
                        // send times out (no other sender needs the notification then).
                        Some(_) => match ring.push(msg) {
                            Ok(()) => {
                                self.wake_receivers();
                                Ok(())
                            }
                            Err(PushFail::Disconnected(m)) => Err(SendFail::Disconnected(m)),
                            Err(PushFail::Full(m)) => Err(SendFail::Timeout(m)),
                        },
                    };
                }
            }
        }
    }

    pub(super) fn ring_recv(&self, ring: &Ring<T>, block: Block) -> Result<T, RecvFail> {
        let mut front = false;
        loop {
            match ring.pop() {
                Ok(m) => {
                    self.wake_senders();
                    return Ok(m);
                }
                Err(PopFail::Disconnected) => return Err(RecvFail::Disconnected),
                Err(PopFail::Empty) => {}
            }
            match block {
                Block::Never => return Err(RecvFail::Empty),
                Block::Until(d) if Instant::now() >= d => return Err(RecvFail::Timeout),
                _ => {}
            }
            if self.ring_poll(ring, false, block) {
                continue;
            }
            let node = Handoff::new(None);
            let linked = self.ring_link(&node, false, front);
            match ring.pop() {
                Ok(m) => {
                    if linked.leave() == Some(NOTIFIED) && ring.recv_ready() {
                        // Notified of a message it did not need: the next receiver may take one.
                        self.wake_receivers();
                    }
                    self.wake_senders();
                    return Ok(m);
                }
                Err(PopFail::Disconnected) => return Err(RecvFail::Disconnected),
                Err(PopFail::Empty) => {}
            }
            match linked.wait(block) {
                // Disconnected: the messages sent before are still delivered, then the ring
                // says so.
                NOTIFIED | DISCONNECTED => {
                    linked.completed();
                    front = true;
                }
                _ => {
                    // The deadline passed.
                    if linked.leave().is_none() {
                        return Err(RecvFail::Timeout);
                    }
                    // Notified (or disconnected) just before the deadline: one more try.
                    return match ring.pop() {
                        Ok(m) => {
                            self.wake_senders();
                            Ok(m)
                        }
                        Err(PopFail::Disconnected) => Err(RecvFail::Disconnected),
                        Err(PopFail::Empty) => Err(RecvFail::Timeout),
                    };
                }
            }
        }
    }

    /// Links a select's watch of a receive (`send`: of a send) on a ring channel, unless the
    /// operation is possible (`true`: not linked). Linked and counted first, then `ready` is
    /// asked, as a parking thread does (see the module doc).
    pub(super) fn ring_watch(&self, w: &Watch, send: bool, ready: impl Fn() -> bool) -> bool {
        self.waiting(send).fetch_add(1, Ordering::SeqCst);
        {
            let mut st = self.state.lock();
            if send {
                st.send_watchers.push(NonNull::from(w));
            } else {
                st.recv_watchers.push(NonNull::from(w));
            }
        }
        model_sc_fence();
        if ready() {
            // Unlinked again (a channel may have fired it meanwhile: then the select's token
            // is set and it retries anyway).
            self.unwatch(w);
            return true;
        }
        false
    }
}

/// A node linked into a ring channel's list; unlinks it if dropped before it was completed (a
/// panic in a park), so that no list points into a dead stack frame.
struct RingLinked<'a, T> {
    chan: &'a Chan<T>,
    node: &'a Handoff<T>,
    senders: bool,
}

impl<T> RingLinked<'_, T> {
    /// Parks until completed or the deadline; the outcome, `WAITING` at the deadline.
    fn wait(&self, block: Block) -> usize {
        let what = crate::hook::WaitOn::Channel {
            addr: self.chan as *const Chan<T> as usize,
            send: self.senders,
        };
        self.node.park(block.deadline(), what)
    }

    /// Gives the node up: `None` when this thread cancelled it (and unlinked it), else the
    /// outcome a completer set first (the completer unlinked it).
    fn leave(self) -> Option<usize> {
        let me = std::mem::ManuallyDrop::new(self);
        me.cancel()
    }

    /// Drops the node's link after a completer set its outcome (and unlinked it): the owner
    /// acts on the outcome itself.
    fn completed(self) {
        debug_assert_ne!(self.node.outcome(), WAITING);
        std::mem::forget(self);
    }

    fn cancel(&self) -> Option<usize> {
        if !self.node.try_cancel() {
            return Some(self.node.outcome());
        }
        let mut st = self.chan.state.lock();
        let list = if self.senders {
            &mut st.senders
        } else {
            &mut st.receivers
        };
        let me = NonNull::from(self.node);
        // A completer that lost the race to our cancel may have unlinked it already.
        let found = list.iter().position(|&p| p == me).map(|i| list.remove(i));
        drop(st);
        if found.is_some() {
            self.chan.uncount(1, self.senders);
        }
        None
    }
}

impl<T> Drop for RingLinked<'_, T> {
    fn drop(&mut self) {
        if self.cancel() == Some(NOTIFIED) {
            // Left early (a disconnection, or a panic out of the park) holding a notification:
            // the next waiter of this side gets it.
            self.chan.wake_side(self.senders);
        }
    }
}
