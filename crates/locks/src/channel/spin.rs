//! The informed spin of a channel operation that would wait, before it links its node and parks.
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

use crate::hook::{current_hook, ThreadTag};
use crate::stats;
use crate::sync::{spin_hint, SpinBackoff};
use crate::wait::{green_may_spin, spin_budget_ns, Awaited};

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
