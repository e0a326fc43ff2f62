//! Workers, queues, stealing, the idle protocol, park/unpark and the pools.
//!
//! Per worker (ELiTE §3.2.2): a start deque for new work (Chase-Lev: owner LIFO, thieves FIFO),
//! a ready structure for resumed green threads (owner-only, ordered by the [`ReadyOrder`]), an
//! inbox (mutex) through which other threads hand it woken threads and through which it offers
//! surplus ready threads to idle workers, and pools of control blocks and stacks that overflow to
//! a shared level (ELiTE's processor / node pools).
//!
//! # Idle protocol (no lost wake-ups)
//! A worker that finds no work spins a little while stealing, then announces itself:
//! `sleep = SLEEPING`, `sleepers += 1`, a SeqCst fence, and one more full search. If that finds
//! nothing it waits on the futex `sleep` while it reads `SLEEPING`. A publisher of stealable work
//! pushes it, issues a SeqCst fence and reads `sleepers`; if non-zero it moves one `SLEEPING`
//! worker to `NOTIFIED` and wakes its futex. Each side does store → SeqCst fence → load, so at
//! least one of them sees the other: the final search finds the work, or the publisher finds the
//! sleeper. A worker woken this way that finds work wakes one more (a wake chain), so a burst of
//! pushes seen as "one sleeper" by several publishers still reaches every idle worker.
//!
//! # TLS discipline
//! A green thread may resume on another OS thread, and LLVM may keep a thread-local's address in
//! a register across the stack switch. Every thread-local access goes through the
//! `#[inline(never)]` function [`ctx_ptr`], and no reference derived from it is held across a
//! suspension point (yield, park).

use crate::sys;
use crate::task::{self, Co, Exit, Reason, Task, LIFE_RUNNING, P_EMPTY, P_NOTIFIED, P_PARKED};
use corosensei::stack::DefaultStack;
use corosensei::CoroutineResult;
use crossbeam_deque::{Injector, Steal, Stealer, Worker as Deque};
use crossbeam_utils::CachePadded;
use footprint_affinity::ready::ReadyHeap;
use footprint_affinity::{AffinityPolicy, Policy, WorkerAffinity};
use footprint_locks::Placement;
use std::cell::{Cell, UnsafeCell};
use std::collections::VecDeque;
use std::fmt;
use std::ptr;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A unit of work in a queue.
pub(crate) enum Job {
    /// A green thread: new (never ran, no stack yet) or ready to resume.
    Task(Arc<Task>),
    /// The stolen half of a `join`, living on its caller's stack; it gets a green thread (and a
    /// stack) only when it runs.
    Stack(StackJobRef),
}

/// A pointer to a `join` half on its caller's stack plus the function that runs it.
#[derive(Clone, Copy)]
pub(crate) struct StackJobRef {
    pub(crate) data: *const (),
    pub(crate) exec: unsafe fn(*const ()),
}

/// The first field of every `join` half (`#[repr(C)]`), so that a joiner can read the push order
/// of any half it pops from its own deque.
#[repr(C)]
pub(crate) struct StackJobHeader {
    /// Push order on its worker (stamped by `push_stack_job`): entries of one deque are ordered
    /// by it, which lets a joiner tell "mine was stolen" from "newer work sits on top of mine".
    pub(crate) seq: Cell<u64>,
}

/// A [`Job`] as stored in the start deques and the injector: two plain words (like rayon's
/// `JobRef`), which the compiler moves through the deque's volatile slot writes straight from
/// registers. (The two-variant enum went through a stack temporary and a 16-byte reload, a
/// store-forwarding stall on every `join`.) `exec == 0` marks a green thread (`data` is then an
/// `Arc<Task>` turned into a raw pointer). No `Drop`: every `RawJob` is turned back into a `Job`
/// exactly once (deques are drained when a worker stops).
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct RawJob {
    data: *const (),
    exec: usize,
}

// SAFETY: a RawJob is a Job (Send) in another representation.
unsafe impl Send for RawJob {}

impl RawJob {
    #[inline]
    pub(crate) fn task(t: Arc<Task>) -> RawJob {
        RawJob {
            data: Arc::into_raw(t).cast(),
            exec: 0,
        }
    }

    #[inline]
    pub(crate) fn stack(r: StackJobRef) -> RawJob {
        RawJob {
            data: r.data,
            exec: r.exec as usize,
        }
    }

    /// The job, taking back ownership of its task reference.
    #[inline]
    pub(crate) fn into_job(self) -> Job {
        if self.exec == 0 {
            // SAFETY: made by RawJob::task from Arc::into_raw; converted back exactly once.
            Job::Task(unsafe { Arc::from_raw(self.data.cast::<Task>()) })
        } else {
            Job::Stack(StackJobRef {
                data: self.data,
                // SAFETY: made by RawJob::stack from a fn pointer of this exact type.
                exec: unsafe { std::mem::transmute::<usize, unsafe fn(*const ())>(self.exec) },
            })
        }
    }
}

// SAFETY: the referenced job is Send (join requires it) and stays alive until it reports done.
unsafe impl Send for StackJobRef {}

/// How a worker orders the green threads it resumes (the ready structure), chosen with
/// [`Builder::ready_order`](crate::Builder::ready_order).
///
/// Threads reach a worker's ready structure when they are woken on that worker (or woken
/// elsewhere and handed to its inbox), when a park finds its permit already there, and when they
/// yield. [`ReadyOrder::Lifo`] and [`ReadyOrder::Fifo`] are a double-ended queue;
/// [`ReadyOrder::Policy`] orders by an affinity policy's key (smaller first, first in first out
/// on ties, `footprint_affinity::ready::ReadyHeap`).
///
/// ```
/// use footprint_affinity::{AffinityPolicy, Policy, PolicyKind};
/// use footprint_runtime::{ReadyOrder, Runtime};
///
/// let rt = Runtime::builder()
///     .workers(1)
///     .ready_order(ReadyOrder::Policy(Policy::new(PolicyKind::VirtualTime)))
///     .build()
///     .unwrap();
/// assert_eq!(rt.ready_order().policy().map(|p| p.kind()), Some(PolicyKind::VirtualTime));
/// ```
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub enum ReadyOrder {
    /// Most recently woken first (cache-warm first; VirtualTime-like); a yielding thread goes
    /// behind every ready one. The default, and the fastest.
    #[default]
    Lifo,
    /// Oldest woken first (fair).
    Fifo,
    /// By an affinity policy (`footprint_affinity`, 004 Table 3.3). Each worker keeps a
    /// `WorkerAffinity` and each green thread a `ThreadAffinity`; when a thread stops (yields or
    /// parks) on a worker the runtime calls `policy.on_stop(thread, None, worker)` (no cache-miss
    /// counts: the runtime has no per-run PMU sample, so the miss-based policies order like
    /// `VirtualTime`), and when it becomes ready for a worker it is pushed with
    /// `policy.key(thread, worker)`, computed for the worker that will run it: by the waker when
    /// that is the same worker, otherwise by the target worker when it takes the thread from its
    /// inbox. Smaller keys run first, FIFO on ties.
    ///
    /// A *yielding* thread is recorded (`on_stop`) but queued with the largest key, behind every
    /// thread ready at that moment: every policy ranks the thread that just stopped first (it is
    /// the most recent, the last enqueued, the one with an intact footprint), which would turn
    /// [`yield_now`] into a no-op and let a yield-spin loop starve the thread it waits for.
    Policy(Policy),
    /// [`ReadyOrder::Policy`] with `Policy::auto(cache-miss counts available)` (the PMU crate's
    /// capability probe), resolved when the runtime is built:
    /// [`Runtime::ready_order`](crate::Runtime::ready_order) reports the policy in force and its
    /// `Display` says why it was picked.
    Auto,
}

impl PartialEq for ReadyOrder {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ReadyOrder::Lifo, ReadyOrder::Lifo)
            | (ReadyOrder::Fifo, ReadyOrder::Fifo)
            | (ReadyOrder::Auto, ReadyOrder::Auto) => true,
            (ReadyOrder::Policy(a), ReadyOrder::Policy(b)) => {
                a.kind() == b.kind() && a.auto_reason() == b.auto_reason()
            }
            _ => false,
        }
    }
}

impl Eq for ReadyOrder {}

impl fmt::Display for ReadyOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadyOrder::Lifo => f.write_str("LIFO"),
            ReadyOrder::Fifo => f.write_str("FIFO"),
            ReadyOrder::Policy(p) => write!(f, "affinity policy {p}"),
            ReadyOrder::Auto => f.write_str("affinity policy auto (not resolved yet)"),
        }
    }
}

impl ReadyOrder {
    /// The affinity policy, if this order is one ([`ReadyOrder::Auto`] only once resolved).
    pub fn policy(&self) -> Option<Policy> {
        match self {
            ReadyOrder::Policy(p) => Some(*p),
            _ => None,
        }
    }

    /// `Auto` made concrete with the PMU crate's capability probe; other orders unchanged.
    pub(crate) fn resolve(self) -> ReadyOrder {
        match self {
            ReadyOrder::Auto => ReadyOrder::Policy(Policy::auto(
                footprint_pmu::Capabilities::get().cache_misses_available(),
            )),
            other => other,
        }
    }
}

/// The runtime-wide state of a [`ReadyOrder::Policy`]: the policy and one `WorkerAffinity` per
/// worker (all on one ledger of the last-level caches).
pub(crate) struct RuntimeAffinity {
    pub(crate) policy: Policy,
    pub(crate) workers: Box<[Arc<WorkerAffinity>]>,
}

/// A worker's ready structure (owner-only). The two queue orders are plain deques, so the
/// default path pays one enum match and no key; the heap lives only in the policy variant.
pub(crate) enum ReadyQueue {
    Lifo(VecDeque<Job>),
    Fifo(VecDeque<Job>),
    Policy(Box<PolicyReady>),
}

/// The policy variant: a heap by key, plus one slot for a thread the priority-class hook made
/// next.
pub(crate) struct PolicyReady {
    heap: ReadyHeap<Job>,
    next: Option<(u64, Job)>,
    policy: Policy,
    worker: Arc<WorkerAffinity>,
    /// The owning worker's shared part (its inbox), in the runtime's `Shared`, which outlives
    /// the worker loop that owns this structure.
    inbox: *const WorkerShared,
}

impl PolicyReady {
    /// Pops the best thread, after moving what the inbox holds into the heap: threads woken
    /// from other workers or OS threads are keyed for this worker (the one that will run them)
    /// and ordered with the local ones.
    // Out of line (as are the other entry points below): the default orders' code around the
    // ready structure stays as small as before.
    #[inline(never)]
    fn pop(&mut self) -> Option<Job> {
        // SAFETY: see the field.
        if unsafe { &*self.inbox }.inbox_len.load(Ordering::Acquire) != 0 {
            self.absorb_inbox();
        }
        match self.next.take() {
            Some((_, j)) => Some(j),
            None => self.heap.pop().map(|(_, j)| j),
        }
    }

    /// Moves everything in the inbox into the heap. (New threads and `join` halves too: they
    /// get the largest key, and reach idle workers through `spill` like every ready thread.)
    #[cold]
    fn absorb_inbox(&mut self) {
        // SAFETY: see the field.
        let me = unsafe { &*self.inbox };
        let mut q = me.inbox.lock().unwrap_or_else(|e| e.into_inner());
        for j in q.drain(..) {
            self.push_keyed(j);
        }
        me.inbox_len.store(0, Ordering::Release);
    }

    /// The key of `j` for this worker. A `join` half has no history: largest key.
    #[inline]
    fn key(&self, j: &Job) -> u64 {
        match j {
            // SAFETY: a thread being pushed on a ready structure is not running on a worker;
            // its last stop (or its `init`, for a new one) wrote `affinity` before the hand-over
            // to the pusher (park CAS, queue push, inbox mutex), and nobody writes it until it
            // runs again on a worker (a joiner running a new thread inline never touches it).
            Job::Task(t) => self.policy.key(unsafe { t.affinity() }, &self.worker),
            Job::Stack(_) => u64::MAX,
        }
    }

    /// Records that `t` stopped on this worker.
    ///
    /// # Safety
    /// The caller holds `t`'s run reference (it just ran on this worker).
    #[inline(never)]
    unsafe fn on_stop(&self, t: &Task) {
        // SAFETY: per the contract the affinity record is ours to write.
        self.policy
            .on_stop(unsafe { t.affinity_mut() }, None, &self.worker);
    }

    /// A thread that yielded here: recorded, then behind every ready thread.
    ///
    /// # Safety
    /// As for [`PolicyReady::on_stop`].
    #[inline(never)]
    unsafe fn push_yielded(&mut self, t: Arc<Task>) {
        // SAFETY: per the contract.
        unsafe { self.on_stop(&t) };
        self.heap.push(u64::MAX, Job::Task(t));
    }

    #[inline(never)]
    fn push_keyed(&mut self, j: Job) {
        let k = self.key(&j);
        self.heap.push(k, j);
    }
}

impl ReadyQueue {
    /// `inbox`: the owning worker's shared part (read only with a policy order).
    fn new(
        order: ReadyOrder,
        affinity: Option<(Policy, Arc<WorkerAffinity>)>,
        inbox: *const WorkerShared,
    ) -> ReadyQueue {
        let q = || VecDeque::with_capacity(64);
        match (order, affinity) {
            (ReadyOrder::Fifo, _) => ReadyQueue::Fifo(q()),
            (ReadyOrder::Policy(_), Some((policy, worker))) => {
                ReadyQueue::Policy(Box::new(PolicyReady {
                    heap: ReadyHeap::with_capacity(64),
                    next: None,
                    policy,
                    worker,
                    inbox,
                }))
            }
            _ => ReadyQueue::Lifo(q()),
        }
    }
    /// A thread woken for this worker (or whose park found its permit).
    #[inline]
    fn push_woken(&mut self, j: Job) {
        match self {
            ReadyQueue::Lifo(q) | ReadyQueue::Fifo(q) => q.push_back(j),
            ReadyQueue::Policy(p) => p.push_keyed(j),
        }
    }
    /// A thread that yielded on this worker: behind every ready thread.
    ///
    /// # Safety
    /// The caller holds `t`'s run reference (it just yielded on this worker).
    #[inline]
    unsafe fn push_yielded(&mut self, t: Arc<Task>) {
        match self {
            ReadyQueue::Lifo(q) => q.push_front(Job::Task(t)),
            ReadyQueue::Fifo(q) => q.push_back(Job::Task(t)),
            // SAFETY: per the contract.
            ReadyQueue::Policy(p) => unsafe { p.push_yielded(t) },
        }
    }
    /// A thread that parks on this worker (before its park state is published).
    ///
    /// # Safety
    /// The caller holds `t`'s run reference.
    #[inline]
    unsafe fn on_park(&self, t: &Task) {
        if let ReadyQueue::Policy(p) = self {
            // SAFETY: per the contract.
            unsafe { p.on_stop(t) }
        }
    }
    #[inline]
    fn pop(&mut self) -> Option<Job> {
        match self {
            ReadyQueue::Lifo(q) => q.pop_back(),
            ReadyQueue::Fifo(q) => q.pop_front(),
            ReadyQueue::Policy(p) => p.pop(),
        }
    }
    /// Makes the first of the next `scan` jobs to be popped that satisfies `pred` the next to
    /// run; returns whether one did. (Policy order: the whole heap is searched, in key order.)
    fn promote_first(&mut self, scan: usize, pred: impl Fn(&Job) -> bool) -> bool {
        let i = match self {
            ReadyQueue::Policy(p) => {
                if p.next.as_ref().is_some_and(|(_, j)| pred(j)) {
                    return true;
                }
                let Some(found) = p.heap.take_first(&pred) else {
                    return false;
                };
                if let Some((k, old)) = p.next.replace(found) {
                    p.heap.push(k, old);
                }
                return true;
            }
            _ => match self.find_recent(scan, &pred) {
                Some(i) => i,
                None => return false,
            },
        };
        match self {
            ReadyQueue::Lifo(q) => {
                if let Some(j) = q.remove(i) {
                    q.push_back(j)
                }
            }
            ReadyQueue::Fifo(q) => {
                if let Some(j) = q.remove(i) {
                    q.push_front(j)
                }
            }
            ReadyQueue::Policy(_) => {}
        }
        true
    }
    /// Removes up to `n` jobs from the end popped last (the coldest).
    fn take_cold(&mut self, n: usize) -> Vec<Job> {
        let mut out = Vec::with_capacity(n);
        match self {
            ReadyQueue::Lifo(q) => out.extend((0..n).map_while(|_| q.pop_front())),
            ReadyQueue::Fifo(q) => out.extend((0..n).map_while(|_| q.pop_back())),
            ReadyQueue::Policy(p) => {
                let mut all = Vec::with_capacity(p.heap.len());
                while let Some(e) = p.heap.pop() {
                    all.push(e);
                }
                let cold = all.split_off(all.len().saturating_sub(n));
                // Re-pushed in pop order with their keys: the relative order is unchanged.
                for (k, j) in all {
                    p.heap.push(k, j);
                }
                out.extend(cold.into_iter().map(|(_, j)| j));
            }
        }
        out
    }
    #[inline]
    fn len(&self) -> usize {
        match self {
            ReadyQueue::Lifo(q) | ReadyQueue::Fifo(q) => q.len(),
            ReadyQueue::Policy(p) => p.heap.len() + usize::from(p.next.is_some()),
        }
    }
    /// The index of the first of the next `scan` jobs to be popped that satisfies `pred`
    /// (queue orders), or `Some(0)` if any of the first `scan` entries does (policy order, where
    /// indices mean nothing: use [`ReadyQueue::promote_first`]).
    pub(crate) fn find_recent(&self, scan: usize, pred: impl Fn(&Job) -> bool) -> Option<usize> {
        match self {
            ReadyQueue::Lifo(q) => {
                let n = q.len();
                (0..scan.min(n)).map(|i| n - 1 - i).find(|&i| pred(&q[i]))
            }
            ReadyQueue::Fifo(q) => (0..scan.min(q.len())).find(|&i| pred(&q[i])),
            ReadyQueue::Policy(p) => p
                .next
                .iter()
                .map(|(_, j)| j)
                .chain(p.heap.iter().map(|(_, j)| j))
                .take(scan)
                .any(pred)
                .then_some(0),
        }
    }
}

/// Makes the first of the calling worker's next `scan` ready jobs that satisfies `pred` the next
/// to run; returns whether one did.
pub(crate) fn promote_ready(scan: usize, pred: impl Fn(&Job) -> bool) -> bool {
    let c = ctx_ptr();
    if c.is_null() {
        return false;
    }
    // SAFETY: owner-only ready structure of the calling worker; no other borrow is live.
    unsafe {
        let w = (*c).worker;
        !w.is_null() && (*(*w).ready.get()).promote_first(scan, pred)
    }
}

pub(crate) const AWAKE: u32 = 0;
pub(crate) const SLEEPING: u32 = 1;
pub(crate) const NOTIFIED: u32 = 2;

const LOCAL_TASKS: usize = 256;
const SHARED_TASKS: usize = 4096;
const LOCAL_STACKS: usize = 16;
const SHARED_STACKS: usize = 64;
const SPIN_ROUNDS: u32 = 64;
const FAIR_TICK: u32 = 61;

/// The part of a worker others may touch.
pub(crate) struct WorkerShared {
    pub(crate) stealer: Stealer<RawJob>,
    pub(crate) inbox: Mutex<VecDeque<Job>>,
    pub(crate) inbox_len: AtomicUsize,
    pub(crate) sleep: CachePadded<AtomicU32>,
    pub(crate) cpu: Option<usize>,
    /// Victim worker indices, nearest tier first.
    pub(crate) steal_tiers: Vec<Vec<usize>>,
    /// Green threads created / finished by this worker (written by the owner only).
    pub(crate) spawned: CachePadded<AtomicU64>,
    pub(crate) finished: AtomicU64,
    pub(crate) steals: AtomicU64,
}

impl WorkerShared {
    pub(crate) fn new(
        stealer: Stealer<RawJob>,
        cpu: Option<usize>,
        steal_tiers: Vec<Vec<usize>>,
    ) -> Self {
        WorkerShared {
            stealer,
            inbox: Mutex::new(VecDeque::new()),
            inbox_len: AtomicUsize::new(0),
            sleep: CachePadded::new(AtomicU32::new(AWAKE)),
            cpu,
            steal_tiers,
            spawned: CachePadded::new(AtomicU64::new(0)),
            finished: AtomicU64::new(0),
            steals: AtomicU64::new(0),
        }
    }

    fn push_inbox(&self, j: Job) {
        let mut q = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        q.push_back(j);
        self.inbox_len.store(q.len(), Ordering::Release);
    }

    fn push_inbox_many(&self, js: Vec<Job>) {
        let mut q = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        q.extend(js);
        self.inbox_len.store(q.len(), Ordering::Release);
    }

    fn pop_inbox(&self) -> Option<Job> {
        if self.inbox_len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut q = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        let j = q.pop_front();
        self.inbox_len.store(q.len(), Ordering::Release);
        j
    }
}

/// Runtime-wide state.
pub(crate) struct Shared {
    pub(crate) workers: Box<[WorkerShared]>,
    pub(crate) injector: Injector<RawJob>,
    pub(crate) sleepers: CachePadded<AtomicUsize>,
    pub(crate) idle: CachePadded<AtomicUsize>,
    pub(crate) shutdown: AtomicBool,
    pub(crate) ext_spawned: AtomicU64,
    pub(crate) ext_finished: AtomicU64,
    pub(crate) stack_pool: Mutex<Vec<DefaultStack>>,
    pub(crate) task_pool: Mutex<Vec<Arc<Task>>>,
    pub(crate) stack_size: usize,
    /// The order in force (never `Auto`: resolved at build).
    pub(crate) ready_order: ReadyOrder,
    /// Present exactly when `ready_order` is a policy.
    pub(crate) affinity: Option<RuntimeAffinity>,
    pub(crate) switch_cost_ns: u64,
    /// Stack overflows caught and turned into errors.
    pub(crate) overflows: AtomicU64,
    /// Stacks mapped (fresh) so far.
    pub(crate) stacks_mapped: AtomicU64,
}

impl Shared {
    /// Green threads created and not finished. Exact once no new ones can be created.
    pub(crate) fn live(&self) -> u64 {
        let mut fin = self.ext_finished.load(Ordering::SeqCst);
        for w in self.workers.iter() {
            fin += w.finished.load(Ordering::SeqCst);
        }
        fence(Ordering::SeqCst);
        let mut sp = self.ext_spawned.load(Ordering::SeqCst);
        for w in self.workers.iter() {
            sp += w.spawned.load(Ordering::SeqCst);
        }
        sp.saturating_sub(fin)
    }

    /// Wakes one sleeping worker if any (after publishing stealable work).
    #[inline]
    pub(crate) fn notify_one(&self, from: usize) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Acquire) == 0 {
            return;
        }
        self.wake_one_slow(from);
    }

    #[cold]
    fn wake_one_slow(&self, from: usize) {
        let n = self.workers.len();
        for i in 1..=n {
            let w = &self.workers[(from + i) % n];
            if w.sleep.load(Ordering::Relaxed) == SLEEPING
                && w.sleep
                    .compare_exchange(SLEEPING, NOTIFIED, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                sys::futex_wake(&w.sleep, 1);
                return;
            }
        }
    }

    /// Wakes one sleeping worker after a push to the calling worker's *own* start deque.
    ///
    /// No fence here: such a push cannot be lost, because the pushing worker drains its own deque
    /// before it ever goes idle (a `join` takes its half back or waits while its worker runs
    /// other work). If the load below misses a worker that is just falling asleep, the cost is
    /// parallelism, not progress, and the next push (or the sleeper's own final search, which
    /// follows a fence) repairs it.
    #[inline]
    pub(crate) fn notify_one_local_push(&self, from: usize) {
        if self.sleepers.load(Ordering::SeqCst) == 0 {
            return;
        }
        self.wake_one_slow(from);
    }

    /// Wakes worker `w` if it sleeps (after putting work in its inbox).
    pub(crate) fn notify_worker(&self, w: usize) {
        fence(Ordering::SeqCst);
        let ws = &self.workers[w];
        if ws.sleep.load(Ordering::Relaxed) == SLEEPING
            && ws
                .sleep
                .compare_exchange(SLEEPING, NOTIFIED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            sys::futex_wake(&ws.sleep, 1);
        } else if ws.inbox_len.load(Ordering::Relaxed) > 1 {
            // The target is busy and work piles up: let an idle worker take some (load balance
            // wins over placement).
            self.notify_one(w);
        }
    }

    pub(crate) fn notify_all(&self) {
        fence(Ordering::SeqCst);
        for w in self.workers.iter() {
            if w.sleep.swap(NOTIFIED, Ordering::AcqRel) == SLEEPING {
                sys::futex_wake(&w.sleep, 1);
            }
        }
    }

    /// Workers currently asleep on their futex (or about to be).
    pub(crate) fn sleeping_workers(&self) -> usize {
        self.workers
            .iter()
            .filter(|w| w.sleep.load(Ordering::Acquire) == SLEEPING)
            .count()
    }

    fn take_stack_shared(&self) -> Option<DefaultStack> {
        self.stack_pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        loop {
            match self.injector.steal() {
                Steal::Success(j) => drop(j.into_job()),
                Steal::Retry => continue,
                Steal::Empty => break,
            }
        }
    }
}

/// What a thread knows about where it runs: set on workers (and blocking-pool threads).
pub(crate) struct ThreadCtx {
    pub(crate) shared: *const Shared,
    pub(crate) worker: *const WorkerLocal,
    /// The green thread running now on this worker (null in the scheduler loop).
    pub(crate) current: Cell<*const Task>,
}

std::thread_local! {
    static CTX: Cell<*const ThreadCtx> = const { Cell::new(ptr::null()) };
}

/// The calling OS thread's context (null outside runtimes). Never inlined: see the module docs.
#[inline(never)]
pub(crate) fn ctx_ptr() -> *const ThreadCtx {
    CTX.with(|c| c.get())
}

#[inline(never)]
pub(crate) fn set_ctx(p: *const ThreadCtx) {
    CTX.with(|c| c.set(p))
}

/// The green thread running on the calling OS thread, or null.
#[inline]
pub(crate) fn current_task_ptr() -> *const Task {
    let c = ctx_ptr();
    if c.is_null() {
        ptr::null()
    } else {
        // SAFETY: a non-null context lives as long as its OS thread's worker loop.
        unsafe { (*c).current.get() }
    }
}

/// A strong reference to the running green thread.
pub(crate) fn current_task_arc() -> Option<Arc<Task>> {
    let t = current_task_ptr();
    if t.is_null() {
        None
    } else {
        // SAFETY: the running task is kept alive by its worker's run reference (an Arc).
        unsafe {
            Arc::increment_strong_count(t);
            Some(Arc::from_raw(t))
        }
    }
}

/// The runtime the calling thread belongs to, if any.
pub(crate) fn current_shared() -> *const Shared {
    let c = ctx_ptr();
    if c.is_null() {
        ptr::null()
    } else {
        // SAFETY: as in current_task_ptr.
        unsafe { (*c).shared }
    }
}

/// The index of the worker running the calling code, if it is a worker of some runtime.
pub(crate) fn current_worker_index() -> Option<usize> {
    let c = ctx_ptr();
    if c.is_null() {
        return None;
    }
    // SAFETY: as in current_task_ptr.
    unsafe {
        let w = (*c).worker;
        if w.is_null() {
            None
        } else {
            Some((*w).index)
        }
    }
}

/// Whether the caller is a green thread of the runtime `shared`.
pub(crate) fn same_runtime_green(shared: *const Shared) -> bool {
    let c = ctx_ptr();
    // SAFETY: as in current_task_ptr.
    !c.is_null()
        && unsafe {
            (*c).shared == shared && !(*c).worker.is_null() && !(*c).current.get().is_null()
        }
}

/// Gives the worker back from the running green thread.
///
/// # Safety
/// `task` must be the running green thread of the calling OS thread.
#[inline]
unsafe fn suspend(task: *const Task, r: Reason) {
    // SAFETY: the yielder pointer was set when the coroutine started and stays valid while it
    // runs; we are inside that coroutine.
    unsafe {
        let y = *(*task).yielder.get();
        (*y).suspend(r);
    }
}

/// Yields the worker to other ready green threads (an OS-thread yield outside the runtime).
#[inline]
pub fn yield_now() {
    let t = current_task_ptr();
    if t.is_null() {
        std::thread::yield_now();
    } else {
        // SAFETY: t is the running green thread of this OS thread.
        unsafe { suspend(t, Reason::Yield) }
    }
}

/// Blocks the calling thread until a permit from its unparker is available (green or OS).
pub(crate) fn park_current() {
    let t = current_task_ptr();
    if t.is_null() {
        std::thread::park();
        return;
    }
    // SAFETY: t is the running green thread, alive while it runs.
    unsafe {
        if (*t)
            .park
            .compare_exchange(P_NOTIFIED, P_EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        suspend(t, Reason::Park);
    }
}

/// Puts a woken green thread on a run queue (called by `Task::unpark_task`).
pub(crate) fn schedule_woken(task: Arc<Task>, hint: Placement) {
    // SAFETY: a parked task is unfinished, so its runtime is alive (Runtime::drop waits for
    // every unfinished green thread).
    let shared = unsafe { &**task.shared.get() };
    let n = shared.workers.len();
    let target = match hint {
        Placement::Worker(w) if w < n => Some(w),
        _ => None,
    };
    let c = ctx_ptr();
    // SAFETY: a non-null context is alive; its worker (if any) is the calling OS thread's.
    unsafe {
        if !c.is_null() && ptr::eq((*c).shared, shared) && !(*c).worker.is_null() {
            let w = &*(*c).worker;
            if target.is_none() || target == Some(w.index) {
                (*w.ready.get()).push_woken(Job::Task(task));
                return;
            }
        }
    }
    let w = target.unwrap_or_else(|| task.last_worker.load(Ordering::Relaxed) % n);
    shared.workers[w].push_inbox(Job::Task(task));
    shared.notify_worker(w);
}

/// Counts a green thread as finished (for `Runtime::drop`'s wait).
pub(crate) fn count_finished(t: &Task) {
    // SAFETY: the task is unfinished until this call, so its runtime is alive.
    let shared = unsafe { &**t.shared.get() };
    let c = ctx_ptr();
    // SAFETY: as above for the context.
    unsafe {
        if !c.is_null() && ptr::eq((*c).shared, shared) && !(*c).worker.is_null() {
            let w = &*(*c).worker;
            let f = &shared.workers[w.index].finished;
            f.store(f.load(Ordering::Relaxed) + 1, Ordering::Release);
        } else {
            shared.ext_finished.fetch_add(1, Ordering::Release);
        }
    }
    if shared.shutdown.load(Ordering::Relaxed) && shared.live() == 0 {
        shared.notify_all();
    }
}

/// Returns a finished control block to the pool of the worker the caller runs on.
pub(crate) fn recycle(task: Arc<Task>) {
    let c = ctx_ptr();
    if c.is_null() {
        return;
    }
    // SAFETY: a non-null context is alive; the worker's pools are touched only by its OS thread.
    unsafe {
        let w = (*c).worker;
        if w.is_null() {
            return;
        }
        let w = &*w;
        // Unique: no other Arc (we never make Weak ones), so nobody else can reach the block.
        if Arc::strong_count(&task) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        if (*task.co.get()).is_some() {
            return;
        }
        *task.waiter.get() = None;
        *task.name.get() = None;
        *task.scope.get() = None;
        *task.locals.get() = None;
        w.put_task(task);
    }
}

/// Creates a green thread for `f` on runtime `shared` and queues it.
///
/// # Safety
/// `f` (and its result, if `with_handle`) must stay valid until the task completes; callers
/// with non-`'static` closures wait for completion before their borrows end.
pub(crate) unsafe fn spawn_raw<F, T>(
    shared: &Shared,
    f: F,
    with_handle: bool,
    name: Option<Arc<str>>,
    stack_size: Option<usize>,
    scope: Option<Arc<task::ScopeShared>>,
) -> Arc<Task>
where
    F: FnOnce() -> T,
{
    let c = ctx_ptr();
    let stack_size = stack_size.unwrap_or(shared.stack_size);
    // SAFETY: context pointers are alive while non-null; the worker's pools and deque are used
    // only from its own OS thread, which is the caller.
    unsafe {
        if !c.is_null() && ptr::eq((*c).shared, shared) && !(*c).worker.is_null() {
            let w = &*(*c).worker;
            let t = w.take_task();
            t.init(f, shared, with_handle, stack_size, name, scope, w.index);
            let s = &shared.workers[w.index].spawned;
            s.store(s.load(Ordering::Relaxed) + 1, Ordering::Release);
            w.deque.push(RawJob::task(t.clone()));
            shared.notify_one_local_push(w.index);
            t
        } else {
            let t = shared
                .task_pool
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop()
                .unwrap_or_else(|| Arc::new(Task::new()));
            t.init(f, shared, with_handle, stack_size, name, scope, 0);
            shared.ext_spawned.fetch_add(1, Ordering::Release);
            shared.injector.push(RawJob::task(t.clone()));
            shared.notify_one(0);
            t
        }
    }
}

/// The running green thread and its worker, if the caller is a green thread on a worker.
/// The worker pointer is valid only until the green thread next yields or parks.
#[inline]
pub(crate) fn current_green_on_worker() -> Option<(*const Task, *const WorkerLocal)> {
    let c = ctx_ptr();
    if c.is_null() {
        return None;
    }
    // SAFETY: a non-null context is alive while its OS thread runs the worker loop.
    unsafe {
        let t = (*c).current.get();
        let w = (*c).worker;
        if t.is_null() || w.is_null() {
            None
        } else {
            Some((t, w))
        }
    }
}

/// Pushes the stealable half of a `join` on worker `w`'s start deque; returns `w`'s index.
///
/// # Safety
/// `w` must be the calling green thread's worker, obtained since its last yield or park.
#[inline]
pub(crate) unsafe fn push_stack_job(w: *const WorkerLocal, r: StackJobRef) -> (usize, u64) {
    // SAFETY: per the contract `w` is the calling OS thread's live worker.
    unsafe {
        let w = &*w;
        let seq = w.push_seq.get() + 1;
        w.push_seq.set(seq);
        (*(r.data as *const StackJobHeader)).seq.set(seq);
        w.deque.push(RawJob::stack(r));
        (*w.shared).notify_one_local_push(w.index);
        (w.index, seq)
    }
}

/// Tries to take back the `join` half `r` from the calling worker's deque. Other jobs found above
/// it (pushed meanwhile by other green threads) go to this worker's inbox, where the worker or a
/// thief runs them. Returns whether `r` was taken back (the caller then runs it inline).
///
/// # Safety
/// `owner` must be the calling green thread and `w` the worker it ran on when it pushed the half
/// (`pushed_on`). The worker is only touched if the green thread still runs there, which its
/// `last_worker` (stamped by every resumption) tells without a thread-local read.
#[inline]
pub(crate) unsafe fn take_back_stack_job(
    owner: *const Task,
    w: *const WorkerLocal,
    data: *const (),
    seq: u64,
    pushed_on: usize,
) -> bool {
    // SAFETY: per the contract; a green thread that still runs on `pushed_on` runs on `w`'s OS
    // thread, so the owner-only deque is ours to pop.
    unsafe {
        if (*owner).last_worker.load(Ordering::Relaxed) != pushed_on {
            return false;
        }
        let w = &*w;
        let mut others = Vec::new();
        let mut found = false;
        while let Some(j) = w.deque.pop() {
            match j.into_job() {
                Job::Stack(s) if s.data == data => {
                    found = true;
                    break;
                }
                // SAFETY: a half still in the deque is unexecuted, so its owner is still inside
                // `join` and the half (with its header) is alive.
                Job::Stack(s) if (*(s.data as *const StackJobHeader)).seq.get() < seq => {
                    // Older than ours: ours was stolen. Put it back where it was (the top).
                    w.deque.push(RawJob::stack(s));
                    break;
                }
                // A spawned thread its joiner already ran inline: drop the stale entry.
                Job::Task(t) if t.life.load(Ordering::Acquire) != task::LIFE_NEW => drop(t),
                // Newer than ours (spawned threads, other green threads' join halves): hand
                // them to this worker's inbox, where it or a thief runs them.
                other => others.push(other),
            }
        }
        if !others.is_empty() {
            let shared = &*w.shared;
            shared.workers[w.index].push_inbox_many(others);
            shared.notify_one(w.index);
        }
        found
    }
}

/// Pops the top of the calling worker's deque if it is `t`'s entry (spawn, then join): the caller
/// then owns `t` exclusively. Stale entries found on top (threads their joiners already ran
/// inline) are dropped on the way, so joining in spawn order does not pile them up; anything else
/// is put back where it was.
pub(crate) fn take_own_top(t: &Task) -> bool {
    let c = ctx_ptr();
    // SAFETY: as in spawn_raw.
    unsafe {
        if c.is_null() || (*c).worker.is_null() {
            return false;
        }
        let w = &*(*c).worker;
        loop {
            match w.deque.pop().map(RawJob::into_job) {
                Some(Job::Task(top)) if ptr::eq(Arc::as_ptr(&top), t) => return true,
                Some(Job::Task(top)) if top.life.load(Ordering::Acquire) != task::LIFE_NEW => {
                    drop(top)
                }
                // Not ours: put it back on top of the LIFO deque, where it was.
                Some(other) => {
                    w.deque.push(match other {
                        Job::Task(t) => RawJob::task(t),
                        Job::Stack(r) => RawJob::stack(r),
                    });
                    return false;
                }
                None => return false,
            }
        }
    }
}

/// The owner-only part of a worker; lives on the worker OS thread's stack.
pub(crate) struct WorkerLocal {
    pub(crate) index: usize,
    pub(crate) shared: *const Shared,
    pub(crate) deque: Deque<RawJob>,
    pub(crate) ready: UnsafeCell<ReadyQueue>,
    stacks: UnsafeCell<Vec<DefaultStack>>,
    tasks: UnsafeCell<Vec<Arc<Task>>>,
    pub(crate) ctx: ThreadCtx,
    tick: Cell<u32>,
    rng: Cell<u64>,
    push_seq: Cell<u64>,
    /// The last switch was a yield: let queued new work go before the ready threads.
    yielded: Cell<bool>,
}

impl WorkerLocal {
    pub(crate) fn new(index: usize, shared: &Arc<Shared>, deque: Deque<RawJob>) -> WorkerLocal {
        WorkerLocal {
            index,
            shared: Arc::as_ptr(shared),
            deque,
            ready: UnsafeCell::new(ReadyQueue::new(
                shared.ready_order,
                shared
                    .affinity
                    .as_ref()
                    .map(|a| (a.policy, a.workers[index].clone())),
                &shared.workers[index],
            )),
            stacks: UnsafeCell::new(Vec::new()),
            tasks: UnsafeCell::new(Vec::new()),
            ctx: ThreadCtx {
                shared: Arc::as_ptr(shared),
                worker: ptr::null(),
                current: Cell::new(ptr::null()),
            },
            tick: Cell::new(0),
            push_seq: Cell::new(0),
            yielded: Cell::new(false),
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1)),
        }
    }

    #[inline]
    fn shared(&self) -> &Shared {
        // SAFETY: the worker holds an Arc<Shared> for as long as its loop runs.
        unsafe { &*self.shared }
    }

    fn take_task(&self) -> Arc<Task> {
        // SAFETY: owner-only pool, no borrow escapes this block.
        let pool = unsafe { &mut *self.tasks.get() };
        if let Some(t) = pool.pop() {
            return t;
        }
        {
            let mut g = self
                .shared()
                .task_pool
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let k = g.len().min(32);
            let at = g.len() - k;
            pool.extend(g.drain(at..));
        }
        pool.pop().unwrap_or_else(|| Arc::new(Task::new()))
    }

    fn put_task(&self, t: Arc<Task>) {
        // SAFETY: owner-only pool.
        let pool = unsafe { &mut *self.tasks.get() };
        if pool.len() < LOCAL_TASKS {
            pool.push(t);
            return;
        }
        let mut g = self
            .shared()
            .task_pool
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let k = LOCAL_TASKS / 2;
        if g.len() + k <= SHARED_TASKS {
            let at = pool.len() - k;
            g.extend(pool.drain(at..));
        }
        drop(g);
        pool.push(t);
        pool.truncate(LOCAL_TASKS);
    }

    fn take_stack(&self, size: usize) -> Result<DefaultStack, std::io::Error> {
        let shared = self.shared();
        if size == shared.stack_size {
            // SAFETY: owner-only pool.
            let pool = unsafe { &mut *self.stacks.get() };
            if let Some(s) = pool.pop() {
                return Ok(s);
            }
            if let Some(s) = shared.take_stack_shared() {
                return Ok(s);
            }
        }
        shared.stacks_mapped.fetch_add(1, Ordering::Relaxed);
        DefaultStack::new(size)
    }

    fn put_stack(&self, s: DefaultStack, size: usize) {
        let shared = self.shared();
        if size != shared.stack_size {
            return;
        }
        // SAFETY: owner-only pool.
        let pool = unsafe { &mut *self.stacks.get() };
        if pool.len() < LOCAL_STACKS {
            pool.push(s);
            return;
        }
        let mut g = shared.stack_pool.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() < SHARED_STACKS {
            g.push(s);
        }
    }

    #[inline]
    #[allow(clippy::mut_from_ref)]
    fn ready(&self) -> &mut ReadyQueue {
        // SAFETY: owner-only; callers never hold the borrow across a resume.
        unsafe { &mut *self.ready.get() }
    }

    fn next_rand(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }

    /// Local work, in order: (fairness tick: inbox, injector, start deque), ready structure,
    /// inbox, start deque.
    #[inline]
    fn next_local(&self) -> Option<Job> {
        let shared = self.shared();
        let me = &shared.workers[self.index];
        let tick = self.tick.get().wrapping_add(1);
        self.tick.set(tick);
        if tick.is_multiple_of(FAIR_TICK) {
            if let Some(j) = self.pop_own_inbox(me) {
                return Some(j);
            }
            if let Steal::Success(j) = shared.injector.steal() {
                return Some(j.into_job());
            }
            if let Some(j) = self.deque.pop() {
                return Some(j.into_job());
            }
        }
        if self.yielded.replace(false) {
            if let Some(j) = self.pop_own_inbox(me) {
                return Some(j);
            }
            if let Some(j) = self.deque.pop() {
                return Some(j.into_job());
            }
        }
        let ready = self.ready();
        if let Some(j) = ready.pop() {
            if ready.len() > 1 && shared.idle.load(Ordering::Relaxed) > 0 {
                self.spill();
            }
            return Some(j);
        }
        if let Some(j) = self.pop_own_inbox(me) {
            return Some(j);
        }
        self.deque.pop().map(RawJob::into_job)
    }

    /// The next job from this worker's own inbox. With a policy order the inbox is first moved
    /// into the ready heap (keyed for this worker) and the heap's best runs. The emptiness check
    /// comes first, so the default orders pay nothing more than before.
    #[inline]
    fn pop_own_inbox(&self, me: &WorkerShared) -> Option<Job> {
        if me.inbox_len.load(Ordering::Acquire) == 0 {
            return None;
        }
        match self.ready() {
            ReadyQueue::Policy(p) => p.pop(),
            _ => me.pop_inbox(),
        }
    }

    /// Offers half of the ready threads to idle workers: through this worker's inbox, or with a
    /// policy order (whose worker takes its inbox's resumptions back into its heap) through the
    /// injector.
    #[cold]
    fn spill(&self) {
        let ready = self.ready();
        let k = ready.len() / 2;
        if k == 0 {
            return;
        }
        let policy = matches!(ready, ReadyQueue::Policy(_));
        let cold = ready.take_cold(k);
        let shared = self.shared();
        if policy {
            for j in cold {
                shared.injector.push(match j {
                    Job::Task(t) => RawJob::task(t),
                    Job::Stack(r) => RawJob::stack(r),
                });
            }
        } else {
            shared.workers[self.index].push_inbox_many(cold);
        }
        shared.notify_one(self.index);
    }

    /// Steals: own inbox, then victims tier by tier (their start deques, then inboxes), then the
    /// injector.
    fn steal(&self) -> Option<Job> {
        let shared = self.shared();
        let me = &shared.workers[self.index];
        if let Some(j) = self.pop_own_inbox(me) {
            return Some(j);
        }
        for tier in &me.steal_tiers {
            let n = tier.len();
            let start = (self.next_rand() as usize) % n;
            for i in 0..n {
                let v = &shared.workers[tier[(start + i) % n]];
                loop {
                    match v.stealer.steal() {
                        Steal::Success(j) => {
                            me.steals.fetch_add(1, Ordering::Relaxed);
                            return Some(j.into_job());
                        }
                        Steal::Retry => continue,
                        Steal::Empty => break,
                    }
                }
                if let Some(j) = v.pop_inbox() {
                    me.steals.fetch_add(1, Ordering::Relaxed);
                    return Some(j);
                }
            }
        }
        loop {
            match shared.injector.steal() {
                Steal::Success(j) => return Some(j.into_job()),
                Steal::Retry => continue,
                Steal::Empty => return None,
            }
        }
    }

    /// The scheduler loop. Returns when the runtime shuts down and no green thread is left.
    pub(crate) fn run_loop(&self) {
        let shared = self.shared();
        let mut woke = false;
        loop {
            if let Some(j) = self.next_local() {
                self.run(j);
                continue;
            }
            if let Some(j) = self.steal() {
                if woke {
                    // Wake chain: there may be more work than the publishers' wakes covered.
                    shared.notify_one(self.index);
                    woke = false;
                }
                self.run(j);
                continue;
            }
            match self.idle() {
                Idle::Found(j) => {
                    if woke {
                        shared.notify_one(self.index);
                    }
                    woke = false;
                    self.run(j)
                }
                Idle::Woke => woke = true,
                Idle::Exit => return,
            }
        }
    }

    fn idle(&self) -> Idle {
        let shared = self.shared();
        shared.idle.fetch_add(1, Ordering::SeqCst);
        let r = self.idle_inner(shared);
        shared.idle.fetch_sub(1, Ordering::SeqCst);
        r
    }

    fn idle_inner(&self, shared: &Shared) -> Idle {
        for round in 0..SPIN_ROUNDS {
            if let Some(j) = self.steal() {
                return Idle::Found(j);
            }
            if shared.shutdown.load(Ordering::Acquire) && shared.live() == 0 {
                return Idle::Exit;
            }
            for _ in 0..(1u32 << (round / 8).min(6)) {
                std::hint::spin_loop();
            }
        }
        let me = &shared.workers[self.index];
        // Never sleep on local work (defensive: the loop only gets here with both empty).
        if self.ready().len() > 0 || !self.deque.is_empty() {
            return Idle::Woke;
        }
        me.sleep.store(SLEEPING, Ordering::SeqCst);
        shared.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let found = self.steal();
        let exit = found.is_none() && shared.shutdown.load(Ordering::SeqCst) && shared.live() == 0;
        if found.is_none() && !exit {
            while me.sleep.load(Ordering::Acquire) == SLEEPING {
                sys::futex_wait(&me.sleep, SLEEPING);
            }
        }
        me.sleep.store(AWAKE, Ordering::SeqCst);
        shared.sleepers.fetch_sub(1, Ordering::SeqCst);
        match found {
            Some(j) => Idle::Found(j),
            None if exit => Idle::Exit,
            None => Idle::Woke,
        }
    }

    /// Runs one job until it finishes, yields or parks.
    fn run(&self, job: Job) {
        let task = match job {
            Job::Task(t) => t,
            Job::Stack(r) => {
                let run = StackRun(r);
                // SAFETY: the stack job stays alive until it reports done (its owner waits).
                unsafe { spawn_job_local(self, move || run.run()) }
            }
        };
        self.run_task(task);
    }

    fn run_task(&self, task: Arc<Task>) {
        let t: &Task = &task;
        // SAFETY: we hold the task's run reference, so its plain fields are ours.
        unsafe {
            let co = &mut *t.co.get();
            if co.is_none() {
                if !t.claim() {
                    // Its joiner ran it inline already; this queue entry is stale.
                    return;
                }
                let size = *t.stack_size.get();
                match self.take_stack(size) {
                    Ok(stack) => {
                        let tp = t as *const Task as usize;
                        *t.stack_limit.get() = corosensei::stack::Stack::limit(&stack).get();
                        let c = Co::with_stack(stack, move |y, ()| green_entry(tp, y));
                        *t.trap.get() = Some(c.trap_handler());
                        *co = Some(c);
                    }
                    Err(e) => {
                        let msg = format!(
                            "footprint: could not map a {size}-byte stack for green thread {}: {e}",
                            describe(t)
                        );
                        crate::task::fail_unrun(t, Box::new(msg));
                        t.complete();
                        count_finished(t);
                        recycle(task);
                        return;
                    }
                }
            }
            debug_assert_eq!(t.life.load(Ordering::Relaxed), LIFE_RUNNING);
            t.last_worker.store(self.index, Ordering::Relaxed);
            self.ctx.current.set(t);
            let r = co.as_mut().expect("coroutine present").resume(());
            self.ctx.current.set(ptr::null());
            match r {
                CoroutineResult::Yield(Reason::Yield) => {
                    self.ready().push_yielded(task);
                    self.yielded.set(true);
                }
                CoroutineResult::Yield(Reason::Park) => self.finish_park(task),
                CoroutineResult::Return(exit) => {
                    *t.trap.get() = None;
                    let co = (*t.co.get()).take().expect("coroutine present");
                    let size = *t.stack_size.get();
                    if exit == Exit::Overflow {
                        let msg = format!(
                            "footprint: green thread {} overflowed its stack of {size} bytes; give it a larger one with Builder::stack_size",
                            describe(t)
                        );
                        crate::task::fail_running(t, Box::new(msg));
                        self.shared().overflows.fetch_add(1, Ordering::Relaxed);
                        // The stack was abandoned mid-call; do not reuse it.
                        drop(co.into_stack());
                    } else {
                        self.put_stack(co.into_stack(), size);
                    }
                    t.complete();
                    count_finished(t);
                    recycle(task);
                }
            }
        }
    }

    fn finish_park(&self, task: Arc<Task>) {
        // SAFETY: we hold the run reference (it just parked here); the record is written before
        // the park state publishes the thread to unparkers.
        unsafe { self.ready().on_park(&task) };
        let raw = Arc::into_raw(task);
        // SAFETY: raw came from into_raw just now; the task stays alive through the reference we
        // leaked until an unparker takes it back.
        unsafe {
            if (*raw)
                .park
                .compare_exchange(P_EMPTY, P_PARKED, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // A permit arrived between the park request and now: consume it and run again.
                // Consume it with an RMW (Acquire), which reads the latest permit write: the
                // thread then sees what every unparker published, including one that refreshed
                // the permit after our failed CAS (a plain store would not synchronise with it).
                let task = Arc::from_raw(raw);
                task.park.swap(P_EMPTY, Ordering::Acquire);
                self.ready().push_woken(Job::Task(task));
            }
        }
    }
}

enum Idle {
    Found(Job),
    Woke,
    Exit,
}

struct StackRun(StackJobRef);

impl StackRun {
    fn run(self) {
        // SAFETY: the job's owner keeps it alive until exec reports completion.
        unsafe { (self.0.exec)(self.0.data) }
    }
}

/// Creates a detached green thread on worker `w` (not queued) for a stolen join half.
///
/// # Safety
/// As for [`spawn_raw`].
unsafe fn spawn_job_local<F: FnOnce()>(w: &WorkerLocal, f: F) -> Arc<Task> {
    let shared = w.shared();
    let t = w.take_task();
    // SAFETY: pooled blocks are unique.
    unsafe { t.init(f, shared, false, shared.stack_size, None, None, w.index) };
    let s = &shared.workers[w.index].spawned;
    s.store(s.load(Ordering::Relaxed) + 1, Ordering::Release);
    t
}

/// The first frame on every green-thread stack.
fn green_entry(tp: usize, y: &crate::task::GreenYielder) -> Exit {
    let t = tp as *const Task;
    // SAFETY: the worker holds the run reference while the coroutine runs; the yielder lives on
    // this stack for the coroutine's whole life.
    unsafe {
        *(*t).yielder.get() = y;
        (*t).run_job_in_place();
        crate::local::clear_task_locals(&*t);
    }
    Exit::Finished
}

/// "'name'" or "<unnamed>" for messages.
pub(crate) fn describe(t: &Task) -> String {
    match t.name() {
        Some(n) => format!("'{n}'"),
        None => "<unnamed>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use footprint_affinity::{Ledger, PolicyKind, Topology};

    /// A policy-ordered ready structure and the worker part holding its inbox.
    fn policy_queue(kind: PolicyKind) -> (ReadyQueue, Box<WorkerShared>) {
        let ledger = Arc::new(Ledger::for_last_level(&Topology::detect()));
        let worker = Arc::new(WorkerAffinity::new(0, None, ledger));
        let me = Box::new(WorkerShared::new(
            Deque::<RawJob>::new_lifo().stealer(),
            None,
            Vec::new(),
        ));
        let q = ReadyQueue::new(
            ReadyOrder::Policy(Policy::new(kind)),
            Some((Policy::new(kind), worker)),
            &*me,
        );
        (q, me)
    }

    fn id_of(j: &Job, tasks: &[Arc<Task>]) -> usize {
        match j {
            Job::Task(t) => tasks.iter().position(|x| Arc::ptr_eq(x, t)).unwrap(),
            Job::Stack(_) => unreachable!("only tasks pushed"),
        }
    }

    /// Spill takes the largest keys, the rest keep their order (FIFO on ties); the hook's
    /// promotion runs the chosen thread next; `len` counts the "next" slot.
    #[test]
    fn policy_queue_take_cold_and_promote() {
        let (mut q, _me) = policy_queue(PolicyKind::VirtualTime);
        let keys = [5u64, 1, 9, 1, 7, 3];
        let tasks: Vec<Arc<Task>> = keys.iter().map(|_| Arc::new(Task::new())).collect();
        let ReadyQueue::Policy(p) = &mut q else {
            panic!("policy variant")
        };
        for (k, t) in keys.iter().zip(&tasks) {
            p.heap.push(*k, Job::Task(t.clone()));
        }
        assert_eq!(q.len(), 6);
        let cold: Vec<usize> = q.take_cold(2).iter().map(|j| id_of(j, &tasks)).collect();
        assert_eq!(cold, vec![4, 2]); // keys 7 and 9
        assert!(q.promote_first(32, |j| id_of(j, &tasks) == 0));
        assert_eq!(q.len(), 4);
        assert_eq!(q.find_recent(32, |j| id_of(j, &tasks) == 0), Some(0));
        assert_eq!(q.find_recent(32, |j| id_of(j, &tasks) == 2), None);
        let rest: Vec<usize> = std::iter::from_fn(|| q.pop())
            .map(|j| id_of(&j, &tasks))
            .collect();
        assert_eq!(rest, vec![0, 1, 3, 5]); // promoted, then keys 1, 1 (FIFO), 3
        assert!(!q.promote_first(32, |_| true));
    }

    /// A woken thread's key comes from its record: under VirtualTime the one that parked on this
    /// worker most recently pops first, whether woken locally or through the inbox; a yielded
    /// one goes behind them all.
    #[test]
    fn policy_queue_keys_from_the_thread_record() {
        let (mut q, me) = policy_queue(PolicyKind::VirtualTime);
        let tasks: Vec<Arc<Task>> = (0..5).map(|_| Arc::new(Task::new())).collect();
        // SAFETY: the tasks are not running; this test is their only user.
        unsafe {
            for t in &tasks[..4] {
                q.on_park(t);
            }
            q.push_yielded(tasks[4].clone());
        }
        q.push_woken(Job::Task(tasks[0].clone()));
        q.push_woken(Job::Task(tasks[1].clone()));
        // Woken elsewhere: through the inbox, keyed when the owner next pops.
        me.push_inbox(Job::Task(tasks[2].clone()));
        me.push_inbox(Job::Task(tasks[3].clone()));
        let order: Vec<usize> = std::iter::from_fn(|| q.pop())
            .map(|j| id_of(&j, &tasks))
            .collect();
        assert_eq!(order, vec![3, 2, 1, 0, 4]);
        assert_eq!(me.inbox_len.load(Ordering::Relaxed), 0);
    }
}
