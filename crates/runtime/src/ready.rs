//! Ready structures: the order in which a worker resumes the green threads it holds.
//!
//! [`ReadyOrder`] is the public choice (LIFO, FIFO or an affinity policy's key);
//! [`ReadyQueue`] is one worker's owner-only structure, [`PolicyReady`] its policy variant (a
//! heap by key plus a "next" slot for the priority-class hook), and [`RuntimeAffinity`] the
//! runtime-wide policy state. With a policy order the worker also takes the resumptions others
//! handed to its [`Inbox`] back into its heap, keyed for this worker.

use crate::inbox::Inbox;
use crate::job::Job;
use crate::task::Task;
use footprint_affinity::ready::ReadyHeap;
use footprint_affinity::{AffinityPolicy, Ledger, Policy, Topology, WorkerAffinity};
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
/// use footprint::runtime::{ReadyOrder, Runtime};
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
    /// parks) on a worker the runtime calls `policy.on_stop(thread, misses, worker)` with the
    /// cache misses of that run when a counter source counts them
    /// ([`Builder::counters`](crate::Builder::counters); `None` otherwise, and then the
    /// miss-based policies order like `VirtualTime`), and when it becomes ready for a worker it is pushed with
    /// `policy.key(thread, worker)`, computed for the worker that will run it: by the waker when
    /// that is the same worker, otherwise by the target worker when it takes the thread from its
    /// inbox. Smaller keys run first, FIFO on ties.
    ///
    /// A *yielding* thread is recorded (`on_stop`) but queued with the largest key, behind every
    /// thread ready at that moment: every policy ranks the thread that just stopped first (it is
    /// the most recent, the last enqueued, the one with an intact footprint), which would turn
    /// [`yield_now`](crate::yield_now) into a no-op and let a yield-spin loop starve the thread it waits for.
    Policy(Policy),
    /// [`ReadyOrder::Policy`] with `Policy::auto_for(topology, misses counted)`: the policy the
    /// scheduling simulator found best for this machine's caches, given whether the runtime's
    /// [`Counters`](crate::Counters) count misses (VirtualTime without them), resolved when the
    /// runtime is built:
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

    /// `Auto` made concrete for this machine (`Policy::auto_for`: the simulator's decision table
    /// over the topology) and for whether the runtime will count misses per run (its
    /// [`Counters`](crate::Counters) have a miss source); other orders unchanged.
    pub(crate) fn resolve(self, topology: &Topology, misses_counted: bool) -> ReadyOrder {
        match self {
            ReadyOrder::Auto => ReadyOrder::Policy(Policy::auto_for(topology, misses_counted)),
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

impl RuntimeAffinity {
    /// The records of `policy` for workers on `cpus` (`None`: not pinned), one per worker,
    /// sharing one ledger of the last-level caches of `topology`.
    pub(crate) fn new(
        policy: Policy,
        topology: &Topology,
        cpus: impl Iterator<Item = Option<usize>>,
    ) -> RuntimeAffinity {
        let ledger = Arc::new(Ledger::for_last_level(topology));
        RuntimeAffinity {
            policy,
            workers: cpus
                .enumerate()
                .map(|(i, cpu)| Arc::new(WorkerAffinity::new(i, cpu, ledger.clone())))
                .collect(),
        }
    }
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
    inbox: *const Inbox,
}

impl PolicyReady {
    /// Pops the best thread, after moving what the inbox holds into the heap: threads woken
    /// from other workers or OS threads are keyed for this worker (the one that will run them)
    /// and ordered with the local ones.
    // Out of line (as are the other entry points below): the default orders' code around the
    // ready structure stays as small as before.
    #[inline(never)]
    pub(crate) fn pop(&mut self) -> Option<Job> {
        // SAFETY: see the field.
        if unsafe { &*self.inbox }.len.load(Ordering::Acquire) != 0 {
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
        let mut q = me.queue.lock().unwrap_or_else(|e| e.into_inner());
        for j in q.drain(..) {
            self.push_keyed(j);
        }
        me.len.store(0, Ordering::Release);
    }

    /// The key of `j` for this worker. A `join` half has no history: largest key.
    #[inline]
    fn key(&self, j: &Job) -> u64 {
        match j {
            // SAFETY: a thread being pushed on a ready structure is not running on a worker;
            // its last stop (or its `init`, for a new one) wrote `affinity` before the hand-over
            // to the pusher (park CAS, queue push, inbox mutex), and nobody writes it until it
            // runs again on a worker (a joiner running a new thread inline never touches it).
            Job::Task(t) => self
                .policy
                .key(unsafe { t.extras().affinity() }, &self.worker),
            Job::Stack(_) => u64::MAX,
        }
    }

    /// Records that `t` stopped on this worker after a run with `misses` cache misses (`None`:
    /// not counted; see [`Counters`](crate::Counters)).
    ///
    /// # Safety
    /// The caller holds `t`'s run reference (it just ran on this worker).
    #[inline(never)]
    unsafe fn on_stop(&self, t: &Task, misses: Option<u64>) {
        // SAFETY: per the contract the affinity record is ours to write.
        self.policy
            .on_stop(unsafe { t.extras().affinity_mut() }, misses, &self.worker);
    }

    /// A thread that yielded here: recorded, then behind every ready thread.
    ///
    /// # Safety
    /// As for [`PolicyReady::on_stop`].
    #[inline(never)]
    unsafe fn push_yielded(&mut self, t: Arc<Task>, misses: Option<u64>) {
        // SAFETY: per the contract.
        unsafe { self.on_stop(&t, misses) };
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
    pub(crate) fn new(
        order: ReadyOrder,
        affinity: Option<(Policy, Arc<WorkerAffinity>)>,
        inbox: *const Inbox,
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
    pub(crate) fn push_woken(&mut self, j: Job) {
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
    pub(crate) unsafe fn push_yielded(&mut self, t: Arc<Task>, misses: Option<u64>) {
        match self {
            ReadyQueue::Lifo(q) => q.push_front(Job::Task(t)),
            ReadyQueue::Fifo(q) => q.push_back(Job::Task(t)),
            // SAFETY: per the contract.
            ReadyQueue::Policy(p) => unsafe { p.push_yielded(t, misses) },
        }
    }
    /// A yield's hand-off between two threads: when a queue order holds exactly one thread,
    /// `t` (which just yielded) takes its place and that thread is returned; otherwise `t` comes
    /// back. The same order as [`push_yielded`](Self::push_yielded) then [`pop`](Self::pop)
    /// (with one entry both put `t` behind the other), with one swap for the push and the pop.
    #[inline]
    pub(crate) fn swap_lone(&mut self, t: Arc<Task>) -> Result<Job, Arc<Task>> {
        match self {
            ReadyQueue::Lifo(q) | ReadyQueue::Fifo(q) if q.len() == 1 => match q.front_mut() {
                Some(slot) => Ok(std::mem::replace(slot, Job::Task(t))),
                None => Err(t),
            },
            _ => Err(t),
        }
    }
    /// A thread that parks on this worker (before its park state is published).
    ///
    /// # Safety
    /// The caller holds `t`'s run reference.
    #[inline]
    pub(crate) unsafe fn on_park(&self, t: &Task, misses: Option<u64>) {
        if let ReadyQueue::Policy(p) = self {
            // SAFETY: per the contract.
            unsafe { p.on_stop(t, misses) }
        }
    }
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Job> {
        match self {
            ReadyQueue::Lifo(q) => q.pop_back(),
            ReadyQueue::Fifo(q) => q.pop_front(),
            ReadyQueue::Policy(p) => p.pop(),
        }
    }
    /// Makes the first of the next `scan` jobs to be popped that satisfies `pred` the next to
    /// run; returns whether one did. (Policy order: the whole heap is searched, in key order.)
    pub(crate) fn promote_first(&mut self, scan: usize, pred: impl Fn(&Job) -> bool) -> bool {
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
    pub(crate) fn take_cold(&mut self, n: usize) -> Vec<Job> {
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
    pub(crate) fn len(&self) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;
    use footprint_affinity::{Ledger, PolicyKind, Topology};

    /// A policy-ordered ready structure and its worker's inbox.
    fn policy_queue(kind: PolicyKind) -> (ReadyQueue, Box<Inbox>) {
        let ledger = Arc::new(Ledger::for_last_level(&Topology::detect()));
        let worker = Arc::new(WorkerAffinity::new(0, None, ledger));
        let me = Box::new(Inbox::new());
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

    /// A yield's hand-off (`swap_lone`) picks what queueing the yielder and popping picks,
    /// and leaves the same queue behind, for both queue orders and every length; it hands off
    /// only with exactly one thread ready and never under a policy order.
    #[test]
    fn swap_lone_matches_push_yielded_then_pop() {
        let no_inbox = Box::new(Inbox::new());
        for order in [ReadyOrder::Lifo, ReadyOrder::Fifo] {
            for n in 0..4 {
                let tasks: Vec<Arc<Task>> = (0..=n).map(|_| Arc::new(Task::new())).collect();
                let fill = || {
                    let mut q = ReadyQueue::new(order, None, &*no_inbox);
                    for t in &tasks[1..] {
                        q.push_woken(Job::Task(t.clone()));
                    }
                    q
                };
                // The oracle: queue the yielder (tasks[0]) behind the others, then pop.
                let mut oracle = fill();
                // SAFETY: the tasks are not running; this test is their only user.
                unsafe { oracle.push_yielded(tasks[0].clone(), None) };
                let want = oracle.pop().map(|j| id_of(&j, &tasks));
                let mut q = fill();
                match q.swap_lone(tasks[0].clone()) {
                    Ok(j) => {
                        assert_eq!(n, 1, "{order}: hand-off with {n} ready");
                        assert_eq!(Some(id_of(&j, &tasks)), want, "{order}");
                    }
                    Err(t) => {
                        assert_ne!(n, 1, "{order}: no hand-off with one ready");
                        assert!(Arc::ptr_eq(&t, &tasks[0]));
                        continue;
                    }
                }
                let rest = |q: &mut ReadyQueue| -> Vec<usize> {
                    std::iter::from_fn(|| q.pop())
                        .map(|j| id_of(&j, &tasks))
                        .collect()
                };
                assert_eq!(rest(&mut q), rest(&mut oracle), "{order}");
            }
        }
        let (mut p, _me) = policy_queue(PolicyKind::VirtualTime);
        p.push_woken(Job::Task(Arc::new(Task::new())));
        assert!(p.swap_lone(Arc::new(Task::new())).is_err());
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
                q.on_park(t, None);
            }
            q.push_yielded(tasks[4].clone(), None);
        }
        q.push_woken(Job::Task(tasks[0].clone()));
        q.push_woken(Job::Task(tasks[1].clone()));
        // Woken elsewhere: through the inbox, keyed when the owner next pops.
        me.push(Job::Task(tasks[2].clone()));
        me.push(Job::Task(tasks[3].clone()));
        let order: Vec<usize> = std::iter::from_fn(|| q.pop())
            .map(|j| id_of(&j, &tasks))
            .collect();
        assert_eq!(order, vec![3, 2, 1, 0, 4]);
        assert_eq!(me.len.load(Ordering::Relaxed), 0);
    }
}
