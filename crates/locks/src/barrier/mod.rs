//! Barriers: central sense-reversing ("incremental"), MCS tree, dissemination.
//!
//! All three have std's shape — `new(n)`, `wait() -> BarrierWaitResult` with exactly one leader
//! per phase — and are reusable across phases.
//!
//! **Participant index.** Tree and dissemination barriers need a distinct index per thread in
//! each phase. Instead of asking the caller for one, every arrival takes a ticket from one counter:
//! `phase = ticket / n`, `index = ticket % n`. The ticket costs one atomic increment per arrival;
//! all waiting is on per-index flags as the algorithms prescribe.
//!
//! **Wrong use.** `n = 0` is a [`BarrierError`] from `try_new`; `new(0)` builds a barrier for
//! one thread, as `std::sync::Barrier::new(0)` does. A thread that arrives while the previous phase has not released its threads
//! yet is an (n+1)-th arrival of that phase: it panics with a message saying so, and the barrier
//! is poisoned so that the other waiters panic too instead of hanging. An extra thread that
//! arrives after a phase ended counts for the next phase, as with `std::sync::Barrier`.
//!
//! Waiters publish `BarrierWaiter` and wait under the barrier's [`WaitPolicy`]; the informed
//! expected wait is the mean of the last 8 phase lengths scaled by the arrivals still missing.
//! A waiter parks at once while the missing arrivals cannot all be running, since spinning
//! would only take a processor from one of them: on OS threads, while more are missing than
//! there are CPUs; on green threads, while fewer other workers run a thread than arrivals are
//! missing, or any thread waits in the waiter's own worker's queues (the runtime says, through
//! the scheduler hook). The last arrival wakes the parked waiters to their own workers
//! ([`Placement::LastWorker`](crate::Placement)), not to its own: a barrier has no critical
//! section whose data they would share, and the last arrival goes on running.

use crate::hook::{current_hook, PriorityClass};
use crate::stats;
use crate::sync::{AtomicBool, AtomicUsize, Ordering};
use crate::wait::{wait_until, Awaited, ClassScope, HoldHistory, WaitFor, WaitPolicy, WaitQueue};
use crossbeam_utils::CachePadded;
use std::fmt;
use std::sync::atomic::{AtomicBool as StdAtomicBool, AtomicU64 as StdAtomicU64};

/// The items every barrier type shares, for a type `$ty<W: WaitPolicy>` with a
/// `core: BarrierCore` field and a `try_new(n)`: `new(n)` (which panics where `try_new` errs),
/// `participants()`, and a `Debug` that shows the core.
macro_rules! barrier_common {
    ($ty:ident) => {
        impl<W: WaitPolicy> $ty<W> {
            /// A barrier for `n` threads per phase. `n = 0` behaves as 1, as with
            /// `std::sync::Barrier` (every `wait` returns at once, as the leader);
            /// [`try_new`](Self::try_new) reports 0 as an error instead.
            pub fn new(n: usize) -> Self {
                Self::try_new(n.max(1)).unwrap_or_else(|e| panic!("{e}"))
            }

            /// Participants per phase.
            pub fn participants(&self) -> usize {
                self.core.n
            }
        }

        impl<W: WaitPolicy> std::fmt::Debug for $ty<W> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.core.fmt(f)
            }
        }
    };
}

mod central;
mod dissemination;
mod tree;

pub use central::CentralBarrier;
pub use dissemination::DisseminationBarrier;
pub use tree::TreeBarrier;

/// The default barrier (central sense-reversing, informed waiting): see the README for why.
pub type Barrier = CentralBarrier<crate::Informed>;

/// A barrier could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BarrierError {
    /// `n` was 0.
    ZeroParticipants,
}

impl fmt::Display for BarrierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BarrierError::ZeroParticipants => write!(
                f,
                "a barrier needs at least 1 participant, got n = 0: pass the number of threads that \
                 call wait() in each phase"
            ),
        }
    }
}

impl std::error::Error for BarrierError {}

/// What [`wait`](CentralBarrier::wait) returns: one thread per phase is the leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierWaitResult {
    leader: bool,
}

impl BarrierWaitResult {
    /// Whether this thread is the phase's leader (exactly one per phase).
    pub fn is_leader(&self) -> bool {
        self.leader
    }
}

/// State shared by the three algorithms: the arrival ticket, the phases released, poisoning,
/// the parking queue and the phase-length history.
pub(crate) struct BarrierCore {
    pub(crate) n: usize,
    arrivals: CachePadded<AtomicUsize>,
    /// Phases whose threads have been (or are being) released.
    pub(crate) released: CachePadded<AtomicUsize>,
    poisoned: AtomicBool,
    pub(crate) queue: WaitQueue,
    history: HoldHistory,
    phase_start_ns: StdAtomicU64,
    /// Whether threads were parked when the last phase completed: the phase after it is not
    /// recorded in `history` (see [`complete`](Self::complete)).
    parked_last_phase: StdAtomicBool,
}

/// One arrival.
pub(crate) struct Arrival {
    pub(crate) phase: usize,
    pub(crate) index: usize,
    scope: ClassScope,
    start_ns: u64,
}

impl BarrierCore {
    pub(crate) fn new(n: usize) -> Result<BarrierCore, BarrierError> {
        if n == 0 {
            return Err(BarrierError::ZeroParticipants);
        }
        Ok(BarrierCore {
            n,
            arrivals: CachePadded::new(AtomicUsize::new(0)),
            released: CachePadded::new(AtomicUsize::new(0)),
            poisoned: AtomicBool::new(false),
            queue: WaitQueue::new(),
            history: HoldHistory::default(),
            phase_start_ns: StdAtomicU64::new(0),
            parked_last_phase: StdAtomicBool::new(false),
        })
    }

    /// Takes a ticket; panics on an extra arrival (see the module docs).
    pub(crate) fn arrive<W: WaitPolicy>(&self, kind: &str) -> Arrival {
        let scope = ClassScope::enter::<W>();
        let ticket = self.arrivals.fetch_add(1, Ordering::AcqRel);
        let phase = ticket / self.n;
        let index = ticket % self.n;
        self.check_poison(kind);
        if self.released.load(Ordering::Acquire) < phase {
            self.poisoned.store(true, Ordering::SeqCst);
            self.queue.notify_all();
            panic!(
                "{kind}: more than n = {} threads arrived in one phase (this arrival would start \
                 phase {phase} before phase {} released its threads); the barrier is now poisoned. \
                 Build it with the number of threads that call wait() in each phase",
                self.n,
                phase - 1
            );
        }
        let start_ns = stats::now_ns();
        if index == 0 {
            self.phase_start_ns.store(start_ns, Ordering::Relaxed);
        }
        scope.publish(PriorityClass::BarrierWaiter);
        Arrival {
            phase,
            index,
            scope,
            start_ns,
        }
    }

    fn check_poison(&self, kind: &str) {
        if self.poisoned.load(Ordering::Acquire) {
            panic!(
                "{kind} is poisoned: a thread arrived beyond its n = {} participants in one phase",
                self.n
            );
        }
    }

    /// Waits until `ready()` (or poisoning) under policy `W`, parked under `key`. (Tracks its
    /// caller: the barrier's `wait` passes its own caller on, which a report names.)
    #[track_caller]
    pub(crate) fn wait_for<W: WaitPolicy>(
        &self,
        a: &Arrival,
        key: usize,
        kind: &str,
        ready: &mut dyn FnMut() -> bool,
    ) {
        let missing = self.n - a.index;
        // 002 rule c: a barrier waiter is below every other thread. When more arrivals are
        // missing than can be running, some of them need a processor, so the wait is long
        // however short the last phases were: park at once, never spin. On a plain OS thread
        // the kernel schedules and the machine's CPUs bound who runs; on a green thread the
        // runtime's workers do, and the informed wait asks the runtime whether the missing
        // arrivals may all be running elsewhere and none is queued behind this waiter on its
        // own worker (`Awaited::Arrivals`, `green_may_spin`): with threads outnumbering
        // workers, an arrival queued behind a spinner could not arrive until it gave the
        // worker up.
        //
        // An OS thread whose missing arrivals may all be running does not park at once on the
        // phase history (Bellosa's rule): it spins for half a switch, and the spin itself parks
        // as soon as the kernel reports more runnable threads than CPUs. The history made the
        // rule bistable: phases with a parked waiter are long by the wake-up latency, so the
        // next waiters expected a long wait and parked at once, and so on; 002's loop (2 OS
        // threads on 2 idle vCPUs) settled in one state or the other per build of the same
        // code (informed 1.04-1.14 µs per iteration in some builds, 1.42-1.48 in others,
        // alternating processes), and 1.13-1.28 µs without the rule. Spinning half a switch
        // and then parking costs at most twice the best choice made in hindsight, whatever
        // the phases' lengths.
        let others = missing - 1;
        let expected_ns = if current_hook().is_green() {
            self.history.mean_ns() * missing as u64 / self.n as u64
        } else if others > crate::os::cpus() {
            u64::MAX
        } else {
            0
        };
        let w = WaitFor {
            queue: &self.queue,
            key,
            expected_ns,
            holder_tid: 0,
            class: PriorityClass::BarrierWaiter,
            cell: None,
            what: crate::hook::WaitOn::Barrier {
                addr: self as *const Self as usize,
                arrived: a.index + 1,
                expected: self.n,
                at: std::panic::Location::caller(),
            },
            awaited: Awaited::Arrivals(others),
        };
        wait_until::<W>(&w, &mut || ready() || self.poisoned.load(Ordering::Relaxed));
        self.check_poison(kind);
    }

    /// Records that `a.phase` is complete (before releasing anyone), and its length (first
    /// arrival to last) in the history that the informed expected wait is drawn from, as
    /// [`history_length`] corrects it.
    pub(crate) fn complete(&self, a: &Arrival) {
        let start = self.phase_start_ns.load(Ordering::Relaxed);
        let after_parking = self
            .parked_last_phase
            .swap(self.queue.has_waiters(), Ordering::Relaxed);
        if start != 0 {
            let length = stats::now_ns().saturating_sub(start);
            self.history.record(history_length(
                length,
                after_parking,
                current_hook().switch_cost_ns(),
                self.n,
            ));
        }
        self.released.fetch_max(a.phase + 1, Ordering::SeqCst);
    }

    /// Departure bookkeeping: wait time, class restore.
    pub(crate) fn depart(&self, a: Arrival, leader: bool) -> BarrierWaitResult {
        let waited = stats::now_ns().saturating_sub(a.start_ns);
        if waited > 0 {
            stats::add_barrier_wait(waited);
        }
        a.scope.restore();
        BarrierWaitResult { leader }
    }
}

/// (Read by green threads' waits only: an OS thread spins first whatever the history says, see
/// `wait_for`.) What the history keeps of a phase `length` ns long (first arrival to last) of a barrier for
/// `n` threads, given whether threads were parked when the phase before it completed and what
/// the scheduler hook says a park and wake-up cost (`switch_ns`):
/// - after a phase with parked threads, one switch cost less: a thread woken from a park
///   arrives late in the next phase by its wake-up latency, so that phase is long because
///   somebody parked, not because the work was unbalanced. Recorded whole, it made the next
///   waiters expect a long wait and park at once, which made the phase after theirs long again:
///   002's lock + barrier loop (2 OS threads on 2 idle vCPUs, 35 µs wake-ups) parked at one
///   phase in six, and at every phase once its first phases (before the switch cost was
///   measured) had parked;
/// - at most `n` switch costs: a waiter expects the mean phase times the share of arrivals
///   still missing (at least `1/n`) and parks at once when that exceeds half a switch, so the
///   cap changes no decision that one long phase alone would make, while one preemption of a
///   few hundred microseconds (in a virtual machine, some 40 in 12,500 phases of that loop)
///   otherwise kept the mean of 8 above it for the next 8 phases.
pub(crate) fn history_length(length: u64, after_parking: bool, switch_ns: u64, n: usize) -> u64 {
    let length = if after_parking {
        length.saturating_sub(switch_ns)
    } else {
        length
    };
    length.min(switch_ns.saturating_mul(n as u64))
}

impl fmt::Debug for BarrierCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("n", &self.n)
            .field("phases_released", &self.released.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::ImmediateBlock;

    #[test]
    fn arrival_before_previous_phase_released_panics_and_poisons() {
        let core = BarrierCore::new(2).unwrap();
        // Phase 0 has had its 2 arrivals but has not been released yet.
        core.arrivals.store(2, Ordering::SeqCst);
        let extra = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            core.arrive::<ImmediateBlock>("TestBarrier");
        }));
        let msg = *extra.unwrap_err().downcast::<String>().unwrap();
        assert!(
            msg.contains("more than n = 2 threads arrived in one phase"),
            "{msg}"
        );
        // Everyone else now panics instead of hanging.
        let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            core.arrive::<ImmediateBlock>("TestBarrier");
        }));
        let msg = *next.unwrap_err().downcast::<String>().unwrap();
        assert!(msg.contains("poisoned"), "{msg}");
    }

    #[test]
    fn poisoning_wakes_parked_waiters() {
        let b = std::sync::Arc::new(CentralBarrier::<ImmediateBlock>::new(3));
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b2.wait())).is_err()
        });
        // Wait until the waiter took its ticket, then fake the rest of phase 0 without release.
        while b.core.arrivals.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        b.core.arrivals.fetch_add(2, Ordering::SeqCst);
        let extra = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.wait()));
        assert!(extra.is_err());
        assert!(
            waiter.join().unwrap(),
            "the parked waiter panicked instead of hanging"
        );
    }

    #[test]
    fn phase_history_discounts_wake_ups_and_caps_outliers() {
        // An ordinary phase is kept as it was.
        assert_eq!(history_length(4_000, false, 30_000, 2), 4_000);
        // The phase after a parked one loses one switch cost (not below 0).
        assert_eq!(history_length(34_000, true, 30_000, 2), 4_000);
        assert_eq!(history_length(10_000, true, 30_000, 2), 0);
        // A preemption counts as n switch costs at most, before or after a parked phase.
        assert_eq!(history_length(900_000, false, 30_000, 2), 60_000);
        assert_eq!(history_length(900_000, true, 30_000, 2), 60_000);
        assert_eq!(history_length(900_000, false, 300, 64), 19_200);
        // One capped outlier among seven ordinary phases keeps the mean under half a switch.
        let mean = (history_length(900_000, false, 30_000, 2) + 7 * 4_000) / 8;
        assert!(mean < 15_000, "{mean}");
        // A long phase, capped, still makes the last waiter of 64 (1 arrival missing) expect
        // more than half a switch: the cap keeps that decision.
        let capped = history_length(900_000, false, 300, 64);
        assert!(capped / 64 > 150, "{capped}");
    }

    #[test]
    fn one_participant_is_always_leader() {
        let b = TreeBarrier::<crate::Informed>::new(1);
        for _ in 0..3 {
            assert!(b.wait().is_leader());
        }
        let d = DisseminationBarrier::<crate::Informed>::new(1);
        assert!(d.wait().is_leader());
    }
}
