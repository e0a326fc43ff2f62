//! How a channel operation that would wait waits actively before it links its node and parks:
//! the informed spin of the locked path, and the ring's poll (below).
//!
//! 002's rule for a waiter: spin only while the thread it waits for runs. A receiver on an
//! empty channel waits for a sender, a sender on a full channel for a receiver; the channel
//! records the last thread of each side (a [`ThreadTag`]), and a green waiter spins while the
//! last thread of the other side runs on another worker and nothing waits in its own worker's
//! queues ([`green_may_spin`]: the same answer a lock waiter gets about its holder). Where the
//! other side does not run (parked, queued behind this waiter, or the machine oversubscribed),
//! the waiter parks at once: its worker may be the processor that side needs.
//!
//! Why spin at all: a parked green thread whose worker then has nothing to run costs a switch,
//! an idle worker, and on the completer's side a wake-up (a worker woken from its sleep on
//! another core): the receiver at the end of a pipeline, alone on its worker, paid that for
//! most messages while the senders on the other workers were about to send. The spin lasts at
//! most half a switch (Bellosa's two-phase rule, as the informed locks use, at least 1 µs) and
//! stops as soon as the other side stops running, so it costs nothing where waits are long.
//!
//! Only the first waiter of a side spins (no node of its side linked, no other spinner): the
//! others would wait behind it anyway, and a crowd of spinners would take the channel's cache
//! line from the thread they wait for. The spin only reads the channel's occupancy (a ring's
//! counters, or the length the locked path publishes); the operation is then tried again from
//! the start, so the blocking path and its hand-offs are the same with or without the spin.
//!
//! # The ring's poll
//! A bounded channel with places (the lock-free ring) waits differently: a green waiter polls
//! for as long as the other side keeps moving ([`poll_while_moving`]: the ring's counter of
//! the other side changes), yielding its worker to the threads queued there between looks and
//! pausing where none are, and links its node only after half a park's cost without a move (or
//! at its deadline). The default `Mutex` polls the same way on many workers, and for the same
//! reason: in a pipeline whose last stage is the bottleneck, its senders find the ring full at
//! almost every send, and with parking each receive of the bottleneck then woke a parked
//! sender (the channel's lock, the node, the sender's worker's inbox, and on many cores a
//! sleeping worker's futex), all on the one thread that sets the pipeline's pace. Polling
//! senders take the place the receive frees without anyone waking them. At most
//! [`POLLERS_PER_WORKER`] per worker poll one side at once; the others link and park. The
//! first-waiter spin above stays for the locked path. A machine the kernel reports
//! oversubscribed polls nothing: the waiters' workers would burn the CPUs the other side's
//! worker waits for.
//!
//! The poll is not the `Mutex`'s `poll_while_changing_hands` (`wait/informed.rs`) reused: a
//! channel waiter yields at every look where threads are queued (a stage it waits for is often
//! one of them; the lock poll yields every 16 rounds, its holder runs elsewhere), it honours a
//! timed operation's deadline, and it measures its budget with the clock (time spent yielded
//! counts; the lock poll counts its pauses).

use crate::hook::{current_hook, ThreadTag};
use crate::stats;
use crate::sync::{spin_hint, SpinBackoff};
use crate::wait::{green_may_spin, spin_budget_ns, Awaited};
use std::time::{Duration, Instant};

/// Backoff cap between looks at the channel: 2^SHIFT_CAP pauses (16, about 0.5 µs where a pause
/// takes 33 ns), as the informed locks' spin.
const SHIFT_CAP: u32 = 4;

/// Looks between two questions to the scheduler (each scans the workers).
const ASK_EVERY: u32 = 4;

/// Whether the calling thread may spin now, waiting for `peer` (the last thread of the other
/// side): a green thread, the other side running elsewhere, nothing queued here.
pub(super) fn may_spin(peer: ThreadTag) -> bool {
    let hook = current_hook();
    // Last, where the cheap answers say spin: `oversubscribed()` re-samples the kernel's run
    // queue when the last sample is stale (at most every few milliseconds; a clock read
    // otherwise), so that a program whose only waits are on channels does not spin on a
    // stale "not oversubscribed" (`green_may_spin` reads the last sample only).
    hook.is_green() && green_may_spin(hook, Awaited::Holder(peer)) && !crate::os::oversubscribed()
}

/// Spins until `ready()` (returns `true`), or until the budget runs out or `peer` stops running
/// elsewhere (returns `false`). The caller checked [`may_spin`] first.
pub(super) fn spin_for(peer: ThreadTag, ready: impl Fn() -> bool) -> bool {
    if cfg!(loom) {
        // One look: the models explore what the retry after a spin meets.
        spin_hint();
        return ready();
    }
    let hook = current_hook();
    let budget = spin_budget_ns(hook) * 1000 / stats::pauses_to_ns(1000).max(1);
    let (mut spent, mut looks) = (0u64, 0u32);
    let mut backoff = SpinBackoff::new(SHIFT_CAP);
    loop {
        spent += backoff.pause();
        if ready() {
            return true;
        }
        looks += 1;
        if spent >= budget {
            return false;
        }
        if looks.is_multiple_of(ASK_EVERY) && !green_may_spin(hook, Awaited::Holder(peer)) {
            return false;
        }
    }
}

/// Pollers of one side of a ring at once, per worker of the runtime: enough that every
/// partner of a bottleneck stage polls in the shapes of four threads per worker (the many-core
/// pipeline: 32 senders on 16 workers), few enough that a worker's round of yields between
/// two looks stays a few switches long. Beyond it a waiter links and parks at once: a farm of
/// thousands of receivers on one channel, all polling, made each worker cycle through
/// thousands of yields per look (10,000 receivers on 2 workers: 8.5 thread runs per message
/// against 1.25 parking, 1.6× the time).
pub(super) const POLLERS_PER_WORKER: usize = 4;

/// How many threads of one side may poll a ring at once where the calling thread may poll
/// (a green thread on a machine the kernel does not report oversubscribed), `None` where it
/// may not.
pub(super) fn pollers_cap() -> Option<usize> {
    let hook = current_hook();
    (hook.is_green() && !crate::os::oversubscribed())
        .then(|| POLLERS_PER_WORKER * hook.workers().unwrap_or(1).max(1))
}

/// Polls until `ready()` (returns `true`: try the operation again), or until `mark()` (the
/// ring's counter of the other side) has not changed for half a park's cost (at least 1 µs),
/// or `deadline` passes (returns `false`: link and park, or time out). Between looks the worker
/// goes to the threads queued on it, if any (one of them may be the other side, and green
/// threads are not preempted), or the thread pauses with backoff. The caller checked
/// [`pollers_cap`].
pub(super) fn poll_while_moving(
    ready: impl Fn() -> bool,
    mark: impl Fn() -> u64,
    deadline: Option<Instant>,
) -> bool {
    if cfg!(loom) {
        // One look: the models explore what the retry after a poll meets.
        spin_hint();
        return ready();
    }
    let hook = current_hook();
    let budget = Duration::from_nanos(spin_budget_ns(hook));
    let mut last = mark();
    let mut moved_at = Instant::now();
    let mut backoff = SpinBackoff::new(SHIFT_CAP);
    loop {
        if hook.queued_here() {
            hook.yield_now();
        } else {
            backoff.pause();
        }
        if ready() {
            return true;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return false;
        }
        let m = mark();
        if m != last {
            last = m;
            moved_at = now;
        } else if now.duration_since(moved_at) >= budget {
            return false;
        }
    }
}
