//! Waiting for a condition under a [`WaitPolicy`]: the quick spin that every contended
//! acquisition tries first (no clock, no class, no hook), and the informed spin-or-park decision
//! behind it.

use super::{WaitMode, WaitPolicy, WaitQueue};
use crate::hook::{
    current_hook, scheduler_class_cell, ClassCell, PriorityClass, RunState, SchedulerHook,
    ThreadTag, WaitOn,
};
use crate::stats;
use crate::sync::{spin_hint, SpinBackoff};
use std::sync::atomic::{AtomicU32 as StdAtomicU32, Ordering as StdOrdering};

/// The threads a waiter waits for, as far as it can name them: what the scheduler is asked
/// about before the waiter spins (002: spin only while they run).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Awaited {
    /// A lock's last recorded holder ([`ThreadTag::NONE`]: not recorded).
    Holder(ThreadTag),
    /// This many other threads that are still to arrive (a barrier's missing arrivals).
    Arrivals(usize),
}

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
    /// What the waiter parks on, told to the scheduler before it parks.
    pub(crate) what: WaitOn,
    /// Who the waiter waits for (asked about before and while a green thread spins).
    pub(crate) awaited: Awaited,
}

/// Whether a green waiter may spin now: only while the threads it waits for may be running on
/// other workers, and never while one of them may be queued behind it on its own worker (green
/// threads are not preempted: a thread queued here runs only once this one gives the worker
/// up). What the runtime knows decides, not the machine's CPU count:
/// - a lock's holder: spin while it runs on another worker; when it does not run (queued, on
///   this worker or another, or parked) it needs a processor before it can release, and this
///   waiter's may be the one. A holder the lock did not record (an OS thread's, or none yet):
///   spin unless threads are queued here.
/// - a barrier's `k` missing arrivals: spin only while nothing is queued on this worker and at
///   least `k` other workers run a thread (otherwise some arrival is not running, so the wait
///   lasts at least until it gets a processor).
///
/// Where the scheduler cannot tell (`RunState::Unknown`, no runtime), the waiter spins.
///
/// A thread the runtime sees running runs only while its worker's OS thread has a CPU: where
/// the kernel last reported more runnable threads than CPUs, workers are being preempted, and a
/// spinner may be burning the CPU that the awaited thread's worker waits for (16 workers on 2
/// CPUs: every worker "runs" a thread, so the runtime's answer alone allowed the 64 ranks of a
/// barrier to spin there; timings on the shared development VM did not separate the two
/// choices). The waiter parks then, as the barrier's CPU-count rule had it park before.
pub(crate) fn green_may_spin(hook: &dyn SchedulerHook, awaited: Awaited) -> bool {
    if crate::os::oversubscribed_hint() {
        return false;
    }
    match awaited {
        // A tag naming the caller is stale (the caller waits, so it does not hold the lock):
        // the thread that last stored its tag released, and the holder that followed did not
        // store its own yet (it does so just after its compare-and-swap, which is what the
        // caller's own compare-and-swap lost to). It says nothing about the holder.
        Awaited::Holder(holder) if holder == ThreadTag::of(scheduler_class_cell()) => {
            !hook.queued_here()
        }
        Awaited::Holder(holder) if !holder.is_none() => match hook.run_state(holder) {
            RunState::RunningElsewhere => true,
            RunState::NotRunning => false,
            RunState::Unknown => !hook.queued_here(),
        },
        Awaited::Holder(_) => !hook.queued_here(),
        Awaited::Arrivals(k) => {
            !hook.queued_here() && hook.running_elsewhere().is_none_or(|running| running >= k)
        }
    }
}

/// Spin iterations between looks at the scheduler's signals (each iteration is at most
/// 2^SPIN_BACKOFF_SHIFT pauses).
const CHECK_EVERY: u32 = if cfg!(loom) { 1 } else { 4 };
/// Backoff cap (pause instructions per iteration) = 2^MAX_BACKOFF_SHIFT.
pub(crate) const MAX_BACKOFF_SHIFT: u32 = 6;

/// Rounds of the quick spin: round `r` (from 1) waits 2^r pause instructions and then tries,
/// so the whole spin is 2^(QUICK_ROUNDS+1) - 2 pauses (14: about 0.5 µs where a pause takes
/// 33 ns, as on this project's Xeon; a fraction of that on older cores; parking_lot's
/// `SpinWait` spins the same three rounds). Under loom: one round.
const QUICK_ROUNDS: u32 = if cfg!(loom) { 1 } else { 3 };

/// The first thing a contended acquisition does: up to [`QUICK_ROUNDS`] rounds of exponential
/// backoff, calling `try_acquire()` after each. Nothing else: no clock read, no class
/// published, no hook call, no shared counter — a critical section of a few hundred
/// nanoseconds held by a running thread ends within it, and then the waiter paid only for its
/// pauses (002: the informing bookkeeping is for waits that may need a scheduling decision).
///
/// The first try comes after two pauses, not at once: the caller's compare-and-swap has just
/// failed, and every look at the lock word takes its cache line from the holder.
///
/// Returns `Some(pauses)` when `try_acquire()` succeeded (`pauses` pause instructions spent),
/// `None` when the spin ran out.
#[inline]
pub(crate) fn quick_spin(mut try_acquire: impl FnMut() -> bool) -> Option<u32> {
    let mut pauses = 0;
    for round in 1..=QUICK_ROUNDS {
        for _ in 0..(1u32 << round) {
            spin_hint();
        }
        pauses += 1 << round;
        if try_acquire() {
            return Some(pauses);
        }
    }
    None
}

/// Yields of the yield phase, as many as parking_lot's `SpinWait` makes (under loom: one).
const YIELD_ROUNDS: u32 = if cfg!(loom) { 1 } else { 7 };

/// What a waiter under informed waiting does when the quick spin ran out, before it parks,
/// where the kernel does not report the machine oversubscribed (there the caller parks at
/// once, 002). An OS thread gives up the CPU (`sched_yield`) up to [`YIELD_ROUNDS`] times,
/// calling `try_acquire()` after each. A green thread:
/// - where green threads wait in its worker's queues and no other waiter of this lock yields
///   now (`yielder`, see [`SoleYielder`]), yields the worker to them up to [`YIELD_ROUNDS`]
///   times (002: a waiter does not run at the expense of a thread that is not synchronising;
///   the holder may be one of them, and the others do their own work meanwhile);
/// - otherwise returns `None` at once.
///
/// Returns the nanoseconds it took when `try_acquire()` succeeded, `None` when the phase ran
/// out or was skipped. A green thread's caller then parks without spinning, whether the holder
/// runs on another worker or not (`RawTtasLock::lock_slow`). (Before, where the holder ran on
/// another worker, a green waiter paused 7 × 500 ns between looks here and then spun for half
/// a switch in the informed wait.)
///
/// Why a green waiter does not spin on a holder that runs on another worker: every look takes
/// the lock's cache line to the waiter's core during the hold, and the holder's release then
/// pays for taking it back (95 % of the release's samples were its swap, with 4 green threads
/// per worker on 2 workers; the lock was found held at 20–36 % of acquisitions against 0.3–0.8 %
/// for parking_lot's OS threads). A parked waiter is woken by a release onto the releaser's
/// worker (lock-hot placement, 000), where the critical section's data is cached, and the
/// releaser's thread meanwhile takes the lock again from its own cache. Measured on the 2-core
/// VM (2 workers, alternating processes, medians of 5): that loop (`many_core_mutex`) 21.7 →
/// 14.1 ms on the idle VM (parking_lot's OS threads 18.0 ms in the same runs, std's 25–27;
/// `BlockTtasMutex`, which parks at once, 11.7 ms); 000's seven as fast or faster (green ÷ std threads,
/// medians of 3 processes: `single_ctr` 1.06 → 1.01, `multiple_ctr` 0.91 → 0.85, `doubly_list`
/// 0.85 → 0.76, the others within 0.02); the TSP branch and bound unchanged (73–75 against
/// 75–77 ms, run-to-run spread ±8 ms).
///
/// Why an OS thread yields (after parking_lot's `SpinWait`): two threads that take a lock every
/// few tens of nanoseconds move its cache line between the cores at every acquisition when the
/// waiter keeps polling; a round off the CPU lets the holder's thread run several acquisitions
/// in a row with the line in its cache, and the waiter pays no park and the releaser no
/// wake-up.
pub(crate) fn yield_phase(
    mut try_acquire: impl FnMut() -> bool,
    yielder: &StdAtomicU32,
) -> Option<u64> {
    let hook = current_hook();
    if hook.is_green() {
        if !hook.queued_here() {
            return None;
        }
        let _sole = SoleYielder::claim(yielder)?;
        // Threads wait in this worker's own queues, perhaps the holder: let them run, and try
        // when the worker comes back.
        let start = stats::now_ns();
        for _ in 0..YIELD_ROUNDS {
            hook.yield_now();
            if try_acquire() {
                return Some(stats::now_ns().saturating_sub(start));
            }
        }
        return None;
    }
    let start = stats::now_ns();
    for _ in 0..YIELD_ROUNDS {
        crate::sync::os_yield();
        if try_acquire() {
            // One clock read per phase that succeeds, none per yield: a phase that runs out
            // (and parks) reads the clock once (the per-yield reads
            // were 2 % of a two-thread loop's samples).
            return Some(stats::now_ns().saturating_sub(start));
        }
    }
    None
}

/// The one green waiter of a lock that yields its worker to the threads queued there
/// ([`yield_phase`]); gives the lock's flag back when dropped.
///
/// Why only one: the threads a yield runs are often the lock's other waiters (a hot lock with 4
/// green threads per worker: each thread of the worker arrives at the lock in turn). Each would
/// fail its try and yield on, polling the lock's line once per round. A second waiter parks
/// instead; a waiter of another lock is not held back (the flag is per lock: 000's `affinity`,
/// whose threads alternate between two locks, took 1.2× as long when every waiter with threads
/// queued on its worker parked, since the queued threads were often the other lock's).
struct SoleYielder<'a>(&'a StdAtomicU32);

impl<'a> SoleYielder<'a> {
    /// The flag, if no other waiter of the lock yields now (read first: no write to the line
    /// while another waiter holds it).
    fn claim(flag: &'a StdAtomicU32) -> Option<SoleYielder<'a>> {
        let free = flag.load(StdOrdering::Relaxed) == 0
            && flag
                .compare_exchange(0, 1, StdOrdering::Relaxed, StdOrdering::Relaxed)
                .is_ok();
        free.then_some(SoleYielder(flag))
    }
}

impl Drop for SoleYielder<'_> {
    fn drop(&mut self) {
        self.0.store(0, StdOrdering::Relaxed);
    }
}

/// A green thread under [`WaitMode::Spin`] yields its worker once per this many backoff rounds
/// (a few microseconds of spinning once the backoff is at its cap).
const GREEN_SPIN_YIELD_EVERY: u32 = 16;

/// Waits until `ready()` under policy `W`; returns the nanoseconds waited (0 when not timed).
pub(crate) fn wait_until<W: WaitPolicy>(w: &WaitFor<'_>, ready: &mut dyn FnMut() -> bool) -> u64 {
    wait_inner::<W>(w, ready, None, &|| {})
}

/// [`wait_until`] for a lock that keeps a "threads are parked" bit in its word: after linking
/// itself into `w.queue`, the thread parks only if `park_if()` returns `true` (the lock sets its
/// bit there, so that the bit is set by every thread that parks and only by threads that are
/// linked or about to look again), and `on_woken()` runs each time a notifier popped this
/// thread (before it looks at `ready()` again): a lock that marks a wake-up as in flight clears
/// the mark there.
pub(crate) fn wait_until_woken<W: WaitPolicy>(
    w: &WaitFor<'_>,
    ready: &mut dyn FnMut() -> bool,
    park_if: &mut dyn FnMut() -> bool,
    on_woken: &dyn Fn(),
) -> u64 {
    wait_inner::<W>(w, ready, Some(park_if), on_woken)
}

/// Parks the current thread on `w.queue` unless, once linked, `park_if` (or, without one,
/// `!ready()`) says not to; returns whether a notifier popped it.
fn park_linked(
    w: &WaitFor<'_>,
    hook: &dyn SchedulerHook,
    ready: &mut dyn FnMut() -> bool,
    park_if: &mut Option<&mut dyn FnMut() -> bool>,
) -> bool {
    hook.note_wait(w.what);
    match park_if {
        Some(p) => w.queue.park_notified(hook, w.key, *p),
        None => w.queue.park_notified(hook, w.key, &mut || !ready()),
    }
}

fn wait_inner<W: WaitPolicy>(
    w: &WaitFor<'_>,
    ready: &mut dyn FnMut() -> bool,
    mut park_if: Option<&mut dyn FnMut() -> bool>,
    on_woken: &dyn Fn(),
) -> u64 {
    if ready() {
        return 0;
    }
    let start = stats::now_ns();
    match W::MODE {
        WaitMode::Spin => {
            // A green thread spins too, but hands its worker to the other green threads now and
            // then: they are not preempted, so the thread it waits for (a holder that yielded,
            // an MCS predecessor, the next ticket) may sit in this worker's own ready queue and
            // would never run while we spin. It stays runnable: it never parks.
            let hook = current_hook();
            let green = hook.is_green();
            let mut backoff = SpinBackoff::new(MAX_BACKOFF_SHIFT);
            let mut rounds = 0u32;
            while !ready() {
                backoff.pause();
                rounds += 1;
                if green && rounds.is_multiple_of(GREEN_SPIN_YIELD_EVERY) {
                    hook.yield_now();
                }
            }
        }
        WaitMode::Block => {
            let hook = current_hook();
            while !ready() {
                if park_linked(w, hook, ready, &mut park_if) {
                    on_woken();
                }
            }
        }
        WaitMode::Informed => informed_wait(w, ready, &mut park_if, on_woken),
    }
    stats::now_ns().saturating_sub(start)
}

fn informed_wait(
    w: &WaitFor<'_>,
    ready: &mut dyn FnMut() -> bool,
    park_if: &mut Option<&mut dyn FnMut() -> bool>,
    on_woken: &dyn Fn(),
) {
    let hook = current_hook();
    let green = hook.is_green();
    // Rule: hand the processor to a ready thread of a higher class first — where the scheduler
    // knows the classes (a green thread's runtime). An OS thread's kernel does not: its hook
    // answers "oversubscribed" and `sched_yield`s, which on a machine loaded by other programs
    // hands the time slice to them and puts this waiter at the back of the run queue, where the
    // release finds it later than a parked waiter, whom the kernel's wake-up brings back at once
    // (002's multiprogramming loop, 2 threads on 2 CPUs under degree 1–4: informed took 2–4×
    // block's time per iteration with the yield). Such a waiter parks instead (rule 2 below).
    if green && hook.yield_to_higher(w.class) && ready() {
        return;
    }
    let half_switch = hook.switch_cost_ns() / 2;
    // Bellosa's two-phase rule: block at once when the expected wait exceeds half a switch.
    let long = w.expected_ns > half_switch;
    loop {
        // Our class may have changed while we waited (a FIFO lock's next in line is promoted).
        let next_in_line = w.cell.map_or(w.class, |c| c.get()) == PriorityClass::ImmediateWaiter;
        let mut park = long;
        if !park && green && !green_may_spin(hook, w.awaited) {
            // The threads it waits for need a processor (perhaps this worker's): park, and the
            // worker runs them or whatever else is ready.
            park = true;
        }
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
            // Half a park's cost (the hook's estimate; for an OS thread, measured wake-ups):
            // spinning a whole one took the CPU from other programs' threads at
            // multiprogramming degrees 2–4 (002's loop: informed at 1.2–1.3× block's time
            // per iteration) for no gain on an idle machine.
            park = spin_phase(w, hook, green, spin_budget_ns(hook), ready);
            if !park {
                return;
            }
        }
        if ready() {
            return;
        }
        if park_linked(w, hook, ready, park_if) {
            on_woken();
        }
        if ready() {
            return;
        }
        if green && hook.yield_to_higher(w.class) && ready() {
            return;
        }
    }
}

/// The least an informed spin or a polling green waiter waits for a change before it parks.
const MIN_SPIN_BUDGET_NS: u64 = 1_000;

/// How long a waiter that may spin spins before it parks: half a park's cost as the hook
/// estimates it (for an OS thread, measured wake-ups), at least [`MIN_SPIN_BUDGET_NS`].
pub(crate) fn spin_budget_ns(hook: &dyn SchedulerHook) -> u64 {
    (hook.switch_cost_ns() / 2).max(MIN_SPIN_BUDGET_NS)
}

/// A green waiter's wait under [`GreenLockWait::Poll`](crate::green_wait::GreenLockWait::Poll):
/// polls with exponential backoff up to [`MAX_BACKOFF_SHIFT`] (the always-spin policy's
/// rounds, which took 0.35–0.9× std's time on 16 cores), tries whenever the lock looks free,
/// and yields its worker every [`GREEN_SPIN_YIELD_EVERY`] rounds where threads are queued
/// there (the holder may be one of them: green threads are not preempted). `look()` says
/// whether the lock is free and gives a mark that changes when a new hold begins (the
/// holder's tag). Returns the nanoseconds it polled (counted in pauses) when `try_acquire()`
/// succeeded, `None` when the caller should park: for `budget_ns` the lock neither looked free
/// nor got a new holder (a long hold, or a holder that does not run).
pub(crate) fn poll_while_changing_hands(
    hook: &dyn SchedulerHook,
    mut try_acquire: impl FnMut() -> bool,
    mut look: impl FnMut() -> (bool, u32),
    budget_ns: u64,
) -> Option<u64> {
    let pause_ps = stats::pauses_to_ns(1000).max(1);
    let budget = budget_ns.saturating_mul(1000) / pause_ps;
    let (_, mut last) = look();
    let (mut spent, mut unchanged) = (0u64, 0u64);
    let mut backoff = SpinBackoff::new(MAX_BACKOFF_SHIFT);
    let mut rounds = 0u32;
    loop {
        let pauses = backoff.pause();
        spent += pauses;
        unchanged += pauses;
        rounds += 1;
        let (free, mark) = look();
        if free {
            if try_acquire() {
                return Some(spent.saturating_mul(pause_ps) / 1000);
            }
            // Taken by another thread between the look and the try: the lock changed hands.
            unchanged = 0;
        } else if mark != last {
            last = mark;
            unchanged = 0;
        }
        if unchanged >= budget || cfg!(loom) && rounds >= 2 {
            return None;
        }
        if rounds.is_multiple_of(GREEN_SPIN_YIELD_EVERY) && hook.queued_here() {
            hook.yield_now();
        }
    }
}

/// Yields to a higher-class thread an informed spin makes before they stop keeping it from its
/// budget check (as many as the yield phase's rounds, after parking_lot's `SpinWait`).
const FREE_YIELDS_TO_HIGHER: u32 = YIELD_ROUNDS;

/// Backoff cap of the informed spin (pause instructions per look at the condition): 16, about
/// 0.5 µs where a pause takes 33 ns, so that a waiter notices a release within that.
const SPIN_BACKOFF_SHIFT: u32 = 4;

/// Spins with exponential backoff for about `budget_ns` (counted in pause instructions, not
/// with the clock: a clock read costs as much as a short critical section on some machines);
/// returns whether the waiter should park instead.
fn spin_phase(
    w: &WaitFor<'_>,
    hook: &dyn SchedulerHook,
    green: bool,
    budget_ns: u64,
    ready: &mut dyn FnMut() -> bool,
) -> bool {
    let pause_ps = stats::pauses_to_ns(1000).max(1);
    let budget = budget_ns * 1000 / pause_ps;
    let my_ivcsw = if green {
        0
    } else {
        crate::os::my_involuntary_switches()
    };
    let mut holder_mark: Option<u64> = None;
    let mut extensions = 0u32;
    let mut backoff = SpinBackoff::new(SPIN_BACKOFF_SHIFT);
    let mut iter = 0u32;
    let mut spent = 0u64;
    let mut yields = 0u32;
    loop {
        if ready() {
            return false;
        }
        spent += backoff.pause();
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
        if !green
            && spent >= budget / 4
            && crate::os::oversubscribed_within(crate::os::SPIN_SAMPLE_INTERVAL_NS)
        {
            // Runnable threads wait for a CPU now (other programs started, or the ones awaited
            // were preempted): this spin would take one from them, so park (not
            // `sched_yield`, as `informed_wait` explains). Checked during the spin, not only
            // when the budget is spent: the budget is half a park's cost, which in a virtual
            // machine is tens of microseconds.
            //
            // Not before a quarter of the budget is spent: a sample is a read of
            // `/proc/loadavg` (0.9 µs on this project's VM), and on an idle machine most waits
            // end before then. 002's loop (2 threads on 2 vCPUs) read it in 70 % of its barrier
            // phases when every spin sampled, and the reader saw the release up to a read
            // late; spins that end this early take little from a preempted thread anyway.
            return true;
        }
        // Yields to a higher class (the holder, mostly) skip the budget check only
        // `FREE_YIELDS_TO_HIGHER` times: a holder that takes the lock again before it yields back
        // (`MutexGuard::bump`, or any loop that unlocks and locks on a green thread) would
        // otherwise meet a waiter that never parks, and so never gets a fair unlock's
        // hand-over, for ever (parking_lot's condvar requeue test hung that way on one worker
        // and on two).
        if hook.higher_class_ready(w.class) && hook.yield_to_higher(w.class) {
            if ready() {
                return false;
            }
            yields += 1;
            if yields <= FREE_YIELDS_TO_HIGHER {
                continue;
            }
        }
        if green && !green_may_spin(hook, w.awaited) {
            // The holder stopped running (it parked or yielded), or a thread was queued here.
            return true;
        }
        if spent < budget {
            continue;
        }
        if green {
            return true;
        }
        // OS thread, budget spent: preempted while spinning, or the machine became
        // oversubscribed → park.
        if crate::os::oversubscribed() || crate::os::my_involuntary_switches() != my_ivcsw {
            return true;
        }
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
                spent = 0;
            }
            _ => return true,
        }
    }
}
