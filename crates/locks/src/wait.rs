//! How a thread waits: the three waiting policies, the per-object queue of parked threads, the
//! hold-time history of Bellosa's two-phase rule, and the informed spin-or-park decision.

use crate::hook::{current_hook, ClassCell, PriorityClass, SchedulerHook, Unparker};
use crate::stats::{self, LockTimes};
use crate::sync::{fence, spin_hint, AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::ptr;
use std::sync::atomic::AtomicU32 as StdAtomicU32;
use std::time::Instant;

mod sealed {
    pub trait Sealed {}
}

/// How a waiting thread waits. Chosen by type: every lock and barrier takes one as a type
/// parameter (default [`Informed`]).
pub trait WaitPolicy: sealed::Sealed + Send + Sync + 'static {
    /// The mode.
    const MODE: WaitMode;
}

/// The waiting mode of a [`WaitPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Publishes priority classes and decides between handing off, spinning and parking from
    /// what the scheduler (the hook) and the kernel tell.
    Informed,
    /// Spins with exponential backoff; never parks, publishes nothing (the "active spinning"
    /// baseline of 002).
    Spin,
    /// Parks as soon as it cannot proceed; publishes nothing (the "immediate blocking" baseline).
    Block,
}

/// Informed waiting (the default): see the crate docs, "How waiting decides".
#[derive(Clone, Copy, Debug, Default)]
pub struct Informed;
/// Always spin (scheduler-oblivious baseline).
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysSpin;
/// Block at once (scheduler-oblivious baseline).
#[derive(Clone, Copy, Debug, Default)]
pub struct ImmediateBlock;

impl sealed::Sealed for Informed {}
impl sealed::Sealed for AlwaysSpin {}
impl sealed::Sealed for ImmediateBlock {}
impl WaitPolicy for Informed {
    const MODE: WaitMode = WaitMode::Informed;
}
impl WaitPolicy for AlwaysSpin {
    const MODE: WaitMode = WaitMode::Spin;
}
impl WaitPolicy for ImmediateBlock {
    const MODE: WaitMode = WaitMode::Block;
}

// ---------------------------------------------------------------------------------------------
// The queue of parked threads.

const WAITING: usize = 0;
const NOTIFIED: usize = 1;
/// Unlinked by its owner (timeout, condition already false) without a notification.
const CANCELLED: usize = 2;

/// One parked thread; lives on its stack for as long as it is linked.
pub(crate) struct WaitNode {
    key: usize,
    state: AtomicUsize,
    unparker: Unparker,
    next: AtomicPtr<WaitNode>,
}

impl WaitNode {
    /// A node for the current thread of `hook`, waiting under `key`.
    pub(crate) fn new(hook: &dyn SchedulerHook, key: usize) -> WaitNode {
        WaitNode {
            key,
            state: AtomicUsize::new(WAITING),
            unparker: hook.current_unparker(),
            next: AtomicPtr::new(ptr::null_mut()),
        }
    }
}

/// A node linked into a [`WaitQueue`] (see [`WaitQueue::enqueue`]). Dropping it unnotified
/// unlinks the node, so that the queue never points into a dead stack frame.
pub(crate) struct Enqueued<'a> {
    queue: &'a WaitQueue,
    node: &'a WaitNode,
}

impl Enqueued<'_> {
    /// Parks until notified, unless `blocked()` is false after the node was linked. Returns
    /// `false` only when `deadline` passed before a notification.
    pub(crate) fn park(
        self,
        hook: &dyn SchedulerHook,
        blocked: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        fence(Ordering::SeqCst);
        if !blocked() {
            return true; // `drop` unlinks the node
        }
        while self.node.state.load(Ordering::Acquire) == WAITING {
            match deadline {
                None => hook.park(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d || !hook.park_timeout(d - now) && Instant::now() >= d {
                        // Timed out, unless a notifier got there first.
                        return !self.queue.cancel(self.node);
                    }
                }
            }
        }
        true
    }
}

impl Drop for Enqueued<'_> {
    fn drop(&mut self) {
        // NOTIFIED is final and the notifier no longer touches the node after storing it.
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
    /// follow it at once). loom models `SeqCst` accesses as acquire/release only and supports
    /// `SeqCst` fences, so the model build adds the equivalent fence here.
    #[inline]
    pub(crate) fn has_waiters(&self) -> bool {
        #[cfg(loom)]
        fence(Ordering::SeqCst);
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
        let node = WaitNode::new(hook, key);
        self.enqueue(&node).park(hook, blocked, deadline)
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

    /// Wakes up to `max` threads whose key satisfies `matches`; returns how many.
    pub(crate) fn notify(&self, max: usize, matches: &dyn Fn(usize) -> bool) -> usize {
        let mut woken = 0;
        while woken < max {
            // Pop a batch under the guard, unpark outside it.
            let mut batch: [Option<Unparker>; 8] = Default::default();
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
                    // After this store the owner may return and free the node.
                    node.state.store(NOTIFIED, Ordering::Release);
                } else {
                    link = &node.next;
                }
            }
            let more = !self.head.load(Ordering::Relaxed).is_null();
            self.unlock_list();
            let placement = crate::placement::wake_placement();
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

    /// Wakes every thread parked under `key`.
    #[inline]
    pub(crate) fn notify_key(&self, key: usize) {
        if self.has_waiters() {
            self.notify(usize::MAX, &|k| k == key);
        }
    }

    /// Wakes every thread parked under `key` or `also` (the new holder and the new next-in-line
    /// of a FIFO lock, in one pass).
    #[inline]
    pub(crate) fn notify_keys(&self, key: usize, also: usize) {
        if self.has_waiters() {
            self.notify(usize::MAX, &|k| k == key || k == also);
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

// ---------------------------------------------------------------------------------------------
// Bellosa's hold-time history and the per-lock metadata.

/// The last 8 hold times of one lock (nanoseconds, saturated to u32), for the two-phase rule.
#[derive(Default)]
pub(crate) struct HoldHistory {
    slots: [StdAtomicU32; 8],
    next: StdAtomicU32,
    /// Set by the first waiter: from then on the holder samples its hold times.
    sampling: std::sync::atomic::AtomicBool,
    /// Acquisitions since sampling started (written by holders only).
    acquisitions: StdAtomicU32,
}

impl HoldHistory {
    pub(crate) fn mean_ns(&self) -> u64 {
        let sum: u64 = self
            .slots
            .iter()
            .map(|s| s.load(Ordering::Relaxed) as u64)
            .sum();
        sum / 8
    }

    /// Records one hold (called by the holder only).
    pub(crate) fn record(&self, ns: u64) {
        let i = self.next.load(Ordering::Relaxed);
        self.next.store(i.wrapping_add(1), Ordering::Relaxed);
        self.slots[(i & 7) as usize].store(ns.min(u32::MAX as u64) as u32, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn sampling(&self) -> bool {
        self.sampling.load(Ordering::Relaxed)
    }

    pub(crate) fn start_sampling(&self) {
        if !self.sampling.load(Ordering::Relaxed) {
            self.sampling.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the holder should time this acquisition: every 4th once sampling.
    #[inline]
    pub(crate) fn sample_this(&self) -> bool {
        if !self.sampling() {
            return false;
        }
        // Holder-only counter: time one acquisition in four (two clock reads cost ≈40 ns).
        let n = self.acquisitions.load(Ordering::Relaxed);
        self.acquisitions
            .store(n.wrapping_add(1), Ordering::Relaxed);
        n & 3 == 0
    }
}

/// What every lock carries besides its algorithm's words.
pub(crate) struct LockMeta {
    pub(crate) queue: WaitQueue,
    pub(crate) history: HoldHistory,
    pub(crate) times: LockTimes,
    /// OS thread id of the holder (informing locks only; 0 when unknown).
    pub(crate) holder_tid: std::sync::atomic::AtomicI32,
}

impl LockMeta {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> LockMeta {
        LockMeta {
            queue: WaitQueue::new(),
            history: HoldHistory {
                slots: [const { StdAtomicU32::new(0) }; 8],
                next: StdAtomicU32::new(0),
                sampling: std::sync::atomic::AtomicBool::new(false),
                acquisitions: StdAtomicU32::new(0),
            },
            times: LockTimes::new(),
            holder_tid: std::sync::atomic::AtomicI32::new(0),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> LockMeta {
        LockMeta {
            queue: WaitQueue::new(),
            history: HoldHistory::default(),
            times: LockTimes::new(),
            holder_tid: std::sync::atomic::AtomicI32::new(0),
        }
    }
}

/// Key under which threads wait at a FIFO lock's door while the machine is oversubscribed.
pub(crate) const CROWD_KEY: usize = usize::MAX - 1;

impl LockMeta {
    /// The door in front of an informing FIFO lock (a Malthusian cull, after Dice 2017): while
    /// the kernel reports more runnable threads than CPUs and the lock is held (`crowded()`), an
    /// arriving OS thread parks here instead of queueing; each release lets one in, and a thread
    /// that finds the lock free walks through. Without the kernel support of 002, a FIFO queue
    /// on an oversubscribed machine hands the lock from one preempted waiter to the next (each
    /// hand-off waits for a time slice: measured here, ≈10⁻⁴ of a pthread mutex's throughput);
    /// with the door the queue stays empty and the lock behaves like a parking mutex that lets
    /// running threads in first. FIFO order holds again as soon as the machine is not
    /// oversubscribed. Returns the nanoseconds spent at the door.
    #[inline]
    pub(crate) fn crowd_door<W: WaitPolicy>(&self, crowded: &dyn Fn() -> bool) -> u64 {
        if W::MODE == WaitMode::Informed && crate::os::oversubscribed_hint() && crowded() {
            self.crowd_wait(crowded)
        } else {
            0
        }
    }

    #[cold]
    fn crowd_wait(&self, crowded: &dyn Fn() -> bool) -> u64 {
        let hook = current_hook();
        if hook.is_green() {
            // Green threads park off their worker anyway; the runtime schedules them.
            return 0;
        }
        let start = stats::now_ns();
        // A short critical section ends while we look: poll a little (backoff, ≈1 µs) before
        // paying a park and a wake-up, as a futex mutex does.
        for shift in 0..10u32 {
            for _ in 0..(1u32 << shift.min(MAX_BACKOFF_SHIFT)) {
                spin_hint();
            }
            if !crowded() {
                return stats::now_ns().saturating_sub(start);
            }
        }
        while crowded() && crate::os::oversubscribed() {
            self.queue.park_once(
                hook,
                CROWD_KEY,
                &mut || crowded() && crate::os::oversubscribed_hint(),
                None,
            );
        }
        stats::now_ns().saturating_sub(start)
    }

    /// After a release: lets one thread in from the door (each release admits one, and a thread
    /// parks at the door only while at least two releases are still to come).
    #[inline]
    pub(crate) fn admit_one(&self) {
        if self.queue.has_waiters() {
            self.queue.notify(1, &|k| k == CROWD_KEY);
        }
    }
}

/// What a lock acquisition remembers until its release (the `lock_api` guard state): the class
/// to restore, the class cell to restore it in, and when the hold started.
pub struct HeldToken {
    cell: *const ClassCell,
    saved: PriorityClass,
    since_ns: u64,
}

// SAFETY: a shared reference to a token gives no access to anything (its fields are private and
// only read by `releasing`/`released`, which take it by value or from its owner). It is
// deliberately not `Send`: the class it restores belongs to the thread that locked.
unsafe impl Sync for HeldToken {}

impl std::fmt::Debug for HeldToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldToken")
            .field("saved", &self.saved)
            .finish_non_exhaustive()
    }
}

/// The class bookkeeping of one synchronisation operation (save, publish, restore).
pub(crate) struct ClassScope {
    pub(crate) cell: *const ClassCell,
    pub(crate) saved: PriorityClass,
}

impl ClassScope {
    /// Saves the current class (informing mode only; a no-op scope otherwise).
    #[inline]
    pub(crate) fn enter<W: WaitPolicy>() -> ClassScope {
        if W::MODE == WaitMode::Informed {
            let cell: *const ClassCell = current_hook().class_cell();
            // SAFETY: the hook contract keeps the cell valid while this thread lives.
            let saved = unsafe { (*cell).get() };
            ClassScope { cell, saved }
        } else {
            ClassScope {
                cell: ptr::null(),
                saved: PriorityClass::Running,
            }
        }
    }

    #[inline]
    pub(crate) fn cell(&self) -> Option<&ClassCell> {
        // SAFETY: the cell outlives the operation (hook contract); null when not informing.
        unsafe { self.cell.as_ref() }
    }

    /// Publishes `class` (informing mode only).
    #[inline]
    pub(crate) fn publish(&self, class: PriorityClass) {
        if let Some(c) = self.cell() {
            c.set(class);
        }
    }

    /// Publishes `Holder` and turns the scope into the guard state of the acquisition.
    #[inline]
    pub(crate) fn into_held(self, meta: &LockMeta) -> HeldToken {
        self.publish(PriorityClass::Holder);
        let since_ns = if stats::enabled() || meta.history.sample_this() {
            stats::now_ns()
        } else {
            0
        };
        if since_ns != 0 && !self.cell.is_null() {
            // Only once the lock has been contended: waiters look at the holder then.
            meta.holder_tid
                .store(crate::os::current_tid(), Ordering::Relaxed);
        }
        HeldToken {
            cell: self.cell,
            saved: self.saved,
            since_ns,
        }
    }

    /// Restores the saved class.
    #[inline]
    pub(crate) fn restore(self) {
        self.publish(self.saved);
    }
}

impl HeldToken {
    /// Bookkeeping of a release, before the algorithm hands the lock on: records the hold time.
    #[inline]
    pub(crate) fn releasing(&self, meta: &LockMeta) {
        if self.since_ns != 0 {
            let held = stats::now_ns().saturating_sub(self.since_ns);
            meta.history.record(held);
            if stats::enabled() {
                meta.times.add_hold(held);
            }
        }
    }

    /// After the hand-off: restores the class saved at acquisition.
    #[inline]
    pub(crate) fn released(self) {
        // SAFETY: the cell outlives the thread's operations (hook contract); null when not informing.
        if let Some(c) = unsafe { self.cell.as_ref() } {
            c.set(self.saved);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Waiting.

/// What a waiter knows about its wait.
pub(crate) struct WaitFor<'a> {
    pub(crate) queue: &'a WaitQueue,
    pub(crate) key: usize,
    /// Expected wait (Bellosa: mean of the last 8 holds), 0 when unknown.
    pub(crate) expected_ns: u64,
    /// OS thread id of the thread being waited for, 0 when unknown.
    pub(crate) holder_tid: i32,
    /// Class this waiter publishes while waiting (for hand-off decisions).
    pub(crate) class: PriorityClass,
    /// The waiter's class cell (informing mode), read again after each wake-up.
    pub(crate) cell: Option<&'a ClassCell>,
}

/// Spin iterations between looks at the scheduler's signals.
const CHECK_EVERY: u32 = if cfg!(loom) { 1 } else { 64 };
/// Backoff cap (pause instructions per iteration) = 2^MAX_BACKOFF_SHIFT.
const MAX_BACKOFF_SHIFT: u32 = 6;

/// Waits until `ready()` under policy `W`; returns the nanoseconds waited (0 when not timed).
pub(crate) fn wait_until<W: WaitPolicy>(w: &WaitFor<'_>, ready: &mut dyn FnMut() -> bool) -> u64 {
    if ready() {
        return 0;
    }
    let start = stats::now_ns();
    match W::MODE {
        WaitMode::Spin => {
            let mut shift = 0;
            while !ready() {
                for _ in 0..(1u32 << shift) {
                    spin_hint();
                }
                shift = (shift + 1).min(MAX_BACKOFF_SHIFT);
            }
        }
        WaitMode::Block => {
            let hook = current_hook();
            while !ready() {
                w.queue.park_once(hook, w.key, &mut || !ready(), None);
            }
        }
        WaitMode::Informed => informed_wait(w, ready),
    }
    stats::now_ns().saturating_sub(start)
}

fn informed_wait(w: &WaitFor<'_>, ready: &mut dyn FnMut() -> bool) {
    let hook = current_hook();
    // Rule: hand the processor to a ready thread of a higher class first.
    if hook.yield_to_higher(w.class) && ready() {
        return;
    }
    let green = hook.is_green();
    let half_switch = hook.switch_cost_ns() / 2;
    // Bellosa's two-phase rule: block at once when the expected wait exceeds half a switch.
    let long = w.expected_ns > half_switch;
    loop {
        // Our class may have changed while we waited (a FIFO lock's next in line is promoted).
        let next_in_line = w.cell.map_or(w.class, |c| c.get()) == PriorityClass::ImmediateWaiter;
        let mut park = long;
        if !park && !green && crate::os::oversubscribed() {
            if next_in_line {
                // 002's exception: the thread granted the lock next may use a processor to be
                // ready for the hand-off. On an oversubscribed machine it stays runnable but
                // yields the CPU on every poll, so that the holder (or anyone) can run.
                while !ready() {
                    crate::sync::os_yield();
                }
                return;
            }
            // The kernel is the scheduler: more runnable threads than CPUs means a spinner
            // steals the processor from the holder (or from the thread that arrives next).
            park = true;
        }
        if !park {
            park = spin_phase(w, hook, green, half_switch.max(1_000), ready);
            if !park {
                return;
            }
        }
        if ready() {
            return;
        }
        w.queue.park_once(hook, w.key, &mut || !ready(), None);
        if ready() {
            return;
        }
        if hook.yield_to_higher(w.class) && ready() {
            return;
        }
    }
}

/// Spins with exponential backoff; returns whether the waiter should park instead.
fn spin_phase(
    w: &WaitFor<'_>,
    hook: &dyn SchedulerHook,
    green: bool,
    budget_ns: u64,
    ready: &mut dyn FnMut() -> bool,
) -> bool {
    let mut start = stats::now_ns();
    let my_ivcsw = if green {
        0
    } else {
        crate::os::my_involuntary_switches()
    };
    let mut holder_mark: Option<u64> = None;
    let mut extensions = 0u32;
    let mut shift = 0u32;
    let mut iter = 0u32;
    loop {
        if ready() {
            return false;
        }
        for _ in 0..(1u32 << shift) {
            spin_hint();
        }
        shift = (shift + 1).min(MAX_BACKOFF_SHIFT);
        iter += 1;
        if cfg!(loom) {
            // Deterministic under the model: a short spin, then park.
            if iter >= 2 {
                return true;
            }
            continue;
        }
        if !iter.is_multiple_of(CHECK_EVERY) {
            continue;
        }
        if hook.higher_class_ready(w.class) && hook.yield_to_higher(w.class) {
            continue;
        }
        let waited = stats::now_ns().saturating_sub(start);
        if green {
            if waited > budget_ns {
                return true;
            }
            continue;
        }
        // OS thread: preempted while spinning, or the machine became oversubscribed → park.
        if crate::os::oversubscribed() {
            return true;
        }
        if iter.is_multiple_of(CHECK_EVERY * 16) && crate::os::my_involuntary_switches() != my_ivcsw
        {
            return true;
        }
        if waited > budget_ns {
            // Is the thread we wait for running? Ask the kernel (rarely: once per budget).
            if w.holder_tid == 0 || extensions >= 8 {
                return true;
            }
            match crate::os::thread_sched_state(w.holder_tid) {
                Some(s) if s.running => {
                    if holder_mark.is_some_and(|m| m != s.involuntary_switches) {
                        return true; // preempted meanwhile
                    }
                    // Running and not preempted: a long critical section; spin another budget.
                    holder_mark = Some(s.involuntary_switches);
                    extensions += 1;
                    start = stats::now_ns();
                }
                _ => return true,
            }
        }
    }
}
