//! The queue of parked threads of one lock, barrier or condition variable.

use crate::hook::{Placement, SchedulerHook, Unparker};
use crate::sync::{
    fence, model_sc_fence, spin_hint, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
};
use std::ptr;
use std::time::Instant;

/// How one park ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Parked {
    /// A notifier popped the node.
    Notified,
    /// The condition was already false after linking.
    NotBlocked,
    /// The deadline passed first.
    TimedOut,
}

const WAITING: usize = 0;
const NOTIFIED: usize = 1;
/// Unlinked by its owner (timeout, condition already false) without a notification.
const CANCELLED: usize = 2;

/// Threads a notification pops per hold of the list's guard (it unparks them after releasing
/// it). One under loom, so that models with two waiters reach a second batch.
const NOTIFY_BATCH: usize = if cfg!(loom) { 1 } else { 8 };

/// One parked thread; lives on its stack for as long as it is linked.
pub(crate) struct WaitNode {
    key: usize,
    state: AtomicUsize,
    unparker: Unparker,
    next: AtomicPtr<WaitNode>,
    /// When the notifier popped the node (`stats::now_ns`), for an OS thread's node only (0
    /// otherwise): the woken thread measures its wake-up latency from it, which is what a park
    /// costs on this machine ([`crate::os::record_wake_latency`]).
    notified_at_ns: AtomicU64,
    /// Whether the notifier stamps `notified_at_ns` (a plain OS thread's park whose wake-up
    /// latency would be kept, [`crate::os::wants_wake_latency`]: a green thread's runtime
    /// knows its own switch cost, and its unpark is too cheap for a clock read).
    stamped: bool,
}

impl WaitNode {
    /// A node for the current thread of `hook`, waiting under `key`.
    pub(crate) fn new(hook: &dyn SchedulerHook, key: usize) -> WaitNode {
        WaitNode {
            key,
            state: AtomicUsize::new(WAITING),
            unparker: hook.current_unparker(),
            next: AtomicPtr::new(ptr::null_mut()),
            notified_at_ns: AtomicU64::new(0),
            stamped: !hook.is_green() && crate::os::wants_wake_latency(),
        }
    }

    /// Pops the node for a notifier: stamps the time for an OS thread's node, then marks it
    /// notified. After this the owner may return and free the node: the caller must not touch
    /// it again.
    fn mark_notified(&self) {
        if self.stamped {
            self.notified_at_ns
                .store(crate::stats::now_ns(), Ordering::Relaxed);
        }
        self.state.store(NOTIFIED, Ordering::Release);
    }
}

/// A node linked into a [`WaitQueue`] (see [`WaitQueue::enqueue`]). Dropping it unnotified
/// unlinks the node, so that the queue never points into a dead stack frame.
pub(crate) struct Enqueued<'a> {
    queue: &'a WaitQueue,
    node: &'a WaitNode,
}

impl Enqueued<'_> {
    /// The address of the queue the node is linked into (identifies its owner in reports).
    pub(crate) fn queue_addr(&self) -> usize {
        self.queue as *const WaitQueue as usize
    }

    /// Parks until notified, unless `blocked()` is false after the node was linked. Returns
    /// `false` only when `deadline` passed before a notification.
    pub(crate) fn park(
        self,
        hook: &dyn SchedulerHook,
        blocked: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        self.wait(hook, blocked, deadline) != Parked::TimedOut
    }

    /// Parks until notified, the condition is false after linking, or the deadline passed.
    fn wait(
        self,
        hook: &dyn SchedulerHook,
        blocked: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> Parked {
        fence(Ordering::SeqCst);
        if !blocked() {
            // A notifier may have popped us meanwhile: then this is its wake-up.
            return if self.queue.cancel(self.node) {
                Parked::NotBlocked
            } else {
                Parked::Notified
            };
        }
        // An OS thread's voluntary context switches before its first park: its wake-up
        // latency is a sample of a park's cost only if it really went to sleep (a park that
        // found the unpark already there returns at once).
        let mut switches_before = None;
        while self.node.state.load(Ordering::Acquire) == WAITING {
            if self.node.stamped && switches_before.is_none() {
                switches_before = Some(crate::os::my_voluntary_switches());
            }
            match deadline {
                None => hook.park(),
                Some(d) => {
                    let now = Instant::now();
                    // Under loom a timed park returns at once without a permit (loom has no
                    // clock): that is the model of a timeout.
                    if now >= d
                        || !hook.park_timeout(d - now) && (cfg!(loom) || Instant::now() >= d)
                    {
                        // Timed out, unless a notifier got there first.
                        return if self.queue.cancel(self.node) {
                            Parked::TimedOut
                        } else {
                            Parked::Notified
                        };
                    }
                }
            }
        }
        if let Some(before) = switches_before {
            // The Acquire load that saw NOTIFIED orders the stamp before it.
            let at = self.node.notified_at_ns.load(Ordering::Relaxed);
            if at != 0 && crate::os::my_voluntary_switches() != before {
                crate::os::record_wake_latency(crate::stats::now_ns().saturating_sub(at));
            }
        }
        Parked::Notified
    }
}

impl Drop for Enqueued<'_> {
    fn drop(&mut self) {
        // NOTIFIED is final and the notifier no longer touches the node after storing it;
        // CANCELLED means `wait` unlinked it already.
        if self.node.state.load(Ordering::Acquire) == WAITING {
            self.queue.cancel(self.node);
        }
    }
}

/// The threads parked on one lock, barrier or condition variable, each with a key saying what it
/// waits for (a ticket, a queue-node address, a barrier flag). A tiny internal spin lock guards
/// the list; it is held only to link, unlink or pop nodes, never across a park or an unpark.
///
/// Protocol (no lost wake-up): a waiter links its node and increments `count` with `SeqCst`,
/// issues a `SeqCst` fence and re-checks its condition before parking; a notifier changes the
/// condition with a `SeqCst` read-modify-write and then reads `count` with `SeqCst`. Either the
/// waiter sees the new condition or the notifier sees the waiter.
#[repr(C)]
pub(crate) struct WaitQueue {
    guard: AtomicBool,
    head: AtomicPtr<WaitNode>,
    count: AtomicUsize,
}

// SAFETY: the raw node pointers are only dereferenced under `guard`, and a node stays alive
// until its owner has unlinked it or observed NOTIFIED (after which nobody touches it).
unsafe impl Send for WaitQueue {}
// SAFETY: as above.
unsafe impl Sync for WaitQueue {}

impl WaitQueue {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> WaitQueue {
        WaitQueue {
            guard: AtomicBool::new(false),
            head: AtomicPtr::new(ptr::null_mut()),
            count: AtomicUsize::new(0),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> WaitQueue {
        WaitQueue {
            guard: AtomicBool::new(false),
            head: AtomicPtr::new(ptr::null_mut()),
            count: AtomicUsize::new(0),
        }
    }

    /// Whether any thread is (about to be) parked. Call after changing the condition with a
    /// `SeqCst` read-modify-write.
    ///
    /// A `SeqCst` RMW followed by a `SeqCst` load cannot both miss a waiter that increments
    /// `count` (`SeqCst`) and then reads the condition after a `SeqCst` fence (C++20
    /// [atomics.order]: the fence would have to precede the RMW in the single total order and
    /// follow it at once). The model build adds the equivalent fence ([`model_sc_fence`](crate::sync::model_sc_fence)).
    #[inline]
    pub(crate) fn has_waiters(&self) -> bool {
        model_sc_fence();
        self.count.load(Ordering::SeqCst) != 0
    }

    fn lock_list(&self) {
        while self
            .guard
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.guard.load(Ordering::Relaxed) {
                spin_hint();
            }
        }
    }

    fn unlock_list(&self) {
        self.guard.store(false, Ordering::Release);
    }

    /// Parks the current thread under `key` until notified, unless `blocked()` turns false
    /// first. Returns `false` only when `deadline` passed before a notification.
    pub(crate) fn park_once(
        &self,
        hook: &dyn SchedulerHook,
        key: usize,
        blocked: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        self.park(hook, key, blocked, deadline) != Parked::TimedOut
    }

    /// Like [`park_once`](Self::park_once), telling a pop from a look that found `blocked()`
    /// already false: `Some(true)` when a notifier popped this thread (also when the deadline
    /// passed as it did), `Some(false)` when it did not park, `None` when the deadline passed.
    pub(crate) fn park_timed(
        &self,
        hook: &dyn SchedulerHook,
        key: usize,
        blocked: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> Option<bool> {
        match self.park(hook, key, blocked, deadline) {
            Parked::Notified => Some(true),
            Parked::NotBlocked => Some(false),
            Parked::TimedOut => None,
        }
    }

    /// Like [`park_once`](Self::park_once) without a deadline; returns whether a notifier
    /// popped this thread (`false`: `blocked()` was already false after linking). A lock whose
    /// notifiers mark a wake-up as "in flight" needs to know.
    pub(crate) fn park_notified(
        &self,
        hook: &dyn SchedulerHook,
        key: usize,
        blocked: &mut dyn FnMut() -> bool,
    ) -> bool {
        self.park(hook, key, blocked, None) == Parked::Notified
    }

    fn park(
        &self,
        hook: &dyn SchedulerHook,
        key: usize,
        blocked: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> Parked {
        let node = WaitNode::new(hook, key);
        self.enqueue(&node).wait(hook, blocked, deadline)
    }

    /// Links `node`: from now on a notifier sees it (and counts it). Used directly by waiters
    /// that must be queued before they release something (a condition variable's mutex);
    /// the returned handle parks, and unlinks the node if it is dropped unnotified.
    pub(crate) fn enqueue<'a>(&'a self, node: &'a WaitNode) -> Enqueued<'a> {
        let me = node as *const WaitNode as *mut WaitNode;
        self.lock_list();
        node.next
            .store(self.head.load(Ordering::Relaxed), Ordering::Relaxed);
        self.head.store(me, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::SeqCst);
        self.unlock_list();
        Enqueued { queue: self, node }
    }

    /// Unlinks `node` if it is still linked; returns whether it was (i.e. not notified).
    fn cancel(&self, node: &WaitNode) -> bool {
        self.lock_list();
        let linked = node.state.load(Ordering::Relaxed) == WAITING;
        if linked {
            let target = node as *const WaitNode as *mut WaitNode;
            let mut link: &AtomicPtr<WaitNode> = &self.head;
            loop {
                let cur = link.load(Ordering::Relaxed);
                debug_assert!(!cur.is_null(), "a WAITING node is linked");
                if cur.is_null() {
                    break;
                }
                if cur == target {
                    link.store(node.next.load(Ordering::Relaxed), Ordering::Relaxed);
                    node.state.store(CANCELLED, Ordering::Relaxed);
                    self.count.fetch_sub(1, Ordering::SeqCst);
                    break;
                }
                // SAFETY: linked nodes are alive while the list guard is held.
                link = unsafe { &(*cur).next };
            }
        }
        self.unlock_list();
        linked
    }

    /// Wakes up to `max` threads whose key satisfies `matches`, with the releaser's placement
    /// hint (lock-hot placement, [`crate::placement::wake_placement`]); returns how many.
    pub(crate) fn notify(&self, max: usize, matches: &dyn Fn(usize) -> bool) -> usize {
        self.notify_placed(max, matches, crate::placement::wake_placement())
    }

    /// [`notify`](Self::notify) with the placement hint `placement` for every thread woken.
    pub(crate) fn notify_placed(
        &self,
        max: usize,
        matches: &dyn Fn(usize) -> bool,
        placement: Placement,
    ) -> usize {
        let mut woken = 0;
        while woken < max {
            // Pop a batch under the guard, unpark outside it.
            let mut batch: [Option<Unparker>; NOTIFY_BATCH] = Default::default();
            let mut n = 0;
            self.lock_list();
            let mut link: &AtomicPtr<WaitNode> = &self.head;
            loop {
                let cur = link.load(Ordering::Relaxed);
                if cur.is_null() || n == batch.len() || woken + n == max {
                    break;
                }
                // SAFETY: linked nodes are alive while the list guard is held.
                let node = unsafe { &*cur };
                if matches(node.key) {
                    link.store(node.next.load(Ordering::Relaxed), Ordering::Relaxed);
                    self.count.fetch_sub(1, Ordering::SeqCst);
                    batch[n] = Some(node.unparker.clone());
                    n += 1;
                    node.mark_notified();
                } else {
                    link = &node.next;
                }
            }
            let more = !self.head.load(Ordering::Relaxed).is_null();
            self.unlock_list();
            for u in batch.iter().take(n).flatten() {
                u.unpark(placement);
            }
            woken += n;
            if n < batch.len() || !more {
                break;
            }
        }
        woken
    }

    /// Wakes the thread at the head of the queue, deciding under the list guard, so that a lock
    /// can keep a "threads are parked" bit in its own word in step with the list (waiters link
    /// under the same guard): `decide(linked)` is told whether any thread is linked and returns
    /// whether to pop one; after a pop, `popped(more)` runs, still under the guard, told whether
    /// threads remain linked. The unpark happens after the guard is released. Returns whether a
    /// thread was woken.
    pub(crate) fn notify_one_deciding(
        &self,
        decide: impl FnOnce(bool) -> bool,
        popped: impl FnOnce(bool),
    ) -> bool {
        self.lock_list();
        let head = self.head.load(Ordering::Relaxed);
        if !decide(!head.is_null()) || head.is_null() {
            self.unlock_list();
            return false;
        }
        // SAFETY: linked nodes are alive while the list guard is held.
        let node = unsafe { &*head };
        self.head
            .store(node.next.load(Ordering::Relaxed), Ordering::Relaxed);
        self.count.fetch_sub(1, Ordering::SeqCst);
        let unparker = node.unparker.clone();
        node.mark_notified();
        popped(!self.head.load(Ordering::Relaxed).is_null());
        self.unlock_list();
        unparker.unpark(crate::placement::wake_placement());
        true
    }

    /// Wakes every thread parked under `key`.
    #[inline]
    pub(crate) fn notify_key(&self, key: usize) {
        if self.has_waiters() {
            self.notify(usize::MAX, &|k| k == key);
        }
    }

    /// Wakes every thread parked under `key`, each to run on its last worker (whose cache holds
    /// its data; [`Placement::LastWorker`], which wakes that worker where it sleeps), not on the
    /// waker's worker: a barrier's waiters have no critical section's data to share with the
    /// thread that released them, and lock-hot placement would stack all of them on one worker,
    /// from which the others must steal them back one by one (and lose their caches). Not
    /// `Anywhere` either: the waker goes on running, and a runtime may queue a thread whose
    /// worker sleeps behind the waker (two ranks of a stencil on two workers then ran one
    /// after the other on one worker, sweep after sweep, while the other slept).
    #[inline]
    pub(crate) fn notify_key_home(&self, key: usize) {
        if self.has_waiters() {
            self.notify_placed(usize::MAX, &|k| k == key, Placement::LastWorker);
        }
    }

    /// Wakes every parked thread.
    #[inline]
    pub(crate) fn notify_all(&self) {
        if self.has_waiters() {
            self.notify(usize::MAX, &|_| true);
        }
    }

    /// Wakes one parked thread, if any.
    #[inline]
    pub(crate) fn notify_one(&self) -> bool {
        self.has_waiters() && self.notify(1, &|_| true) == 1
    }
}
