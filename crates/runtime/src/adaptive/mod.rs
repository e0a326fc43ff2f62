//! Adaptive control of the worker count: 003's Thread Reinforcer run online, 003's
//! FaithFul scaling factor and 004 §3.3.2's advice for a shared machine.
//!
//! - `controller.rs`: the decisions, a pure state machine fed one profile per interval, with
//!   its vocabulary (`sample.rs`: what it reads; `thresholds.rs`: the numbers it decides by;
//!   `decision.rs`: what it decides), Algorithm 1's judgements (`rules.rs`) and the
//!   phase-change watch (`watch.rs`);
//! - `sharing.rs`: the sharing rule (how far to back off when other programs want the CPUs);
//! - `limit.rs`: the mechanism: workers above the active count hand their queued threads to
//!   the injector and rest on their futex (no CPU) until the count rises again;
//! - `thread.rs`: the controller thread (sampling `/proc`, lock time and progress, applying);
//!   `trace.rs`: its decisions as `tracing` events (feature `tracing`);
//! - `state.rs`: the state in the runtime's `Shared` (progress counters, the controller's log)
//!   and the range check; `stats.rs`: its public view.
//!
//! Turned on with [`Builder::adaptive_workers`]; what it decided is in
//! [`RuntimeStats::adaptive`](crate::RuntimeStats::adaptive).

pub(crate) mod controller;
mod decision;
mod limit;
mod measured;
mod rules;
mod sample;
pub(crate) mod sharing;
pub(crate) mod state;
pub(crate) mod stats;
pub(crate) mod thread;
mod thresholds;
mod trace;
pub mod tranquilizer;
mod watch;

pub use controller::Reason as AdaptiveReason;
pub use stats::{AdaptiveDecision, AdaptiveSample, AdaptiveStats};

use crate::builder::Builder;
use crate::error::Error;
use crate::registry::Shared;
use crate::runtime::Runtime;
use state::EXTERNAL_PROGRESS;
use std::ops::RangeInclusive;
use std::sync::atomic::Ordering;

impl Builder {
    /// Lets the runtime choose how many of its workers run (003's Thread Reinforcer, online):
    /// it starts `min..=max` workers with `min` of them active, and a controller thread tries
    /// more every 100 ms interval while the profile (CPU utilisation, lock time, voluntary
    /// switch and migration rates, and throughput where the program calls [`progress`]) says
    /// they help, stops at the best count, and searches again when the profile shifts (a phase
    /// change). When other programs want the CPUs it lowers the count by FaithFul's scaling
    /// factor (see the README's adaptive section) and raises it again when they leave. The
    /// workers above the count rest on their futex (no CPU); their queued threads go to the
    /// active ones. Decisions are in [`RuntimeStats::adaptive`](crate::RuntimeStats::adaptive).
    ///
    /// Overrides [`workers`](Builder::workers) (the runtime has `max` workers). Errors from
    /// [`build`](Builder::build): [`Error::AdaptiveRange`] for `min` = 0, `min > max`, or `max`
    /// above the CPUs the runtime may use.
    ///
    /// ```
    /// let rt = footprint::Runtime::builder().adaptive_workers(1..=2).build()?;
    /// let v = rt.block_on(|| {
    ///     footprint::progress(1); // one unit of work done
    ///     6 * 7
    /// });
    /// assert_eq!(v, 42);
    /// let a = rt.stats().adaptive.expect("adaptive runtime");
    /// assert!((1..=2).contains(&a.active));
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn adaptive_workers(mut self, range: RangeInclusive<usize>) -> Builder {
        self.adaptive = Some(range);
        self
    }
}

/// Says that the calling program finished `n` units of work (items, iterations, cells: any
/// unit, as long as it stays the same within a phase). An adaptive runtime
/// ([`Builder::adaptive_workers`]) then judges worker counts by throughput (units per second)
/// rather than by CPU utilisation alone. Cheap (a per-worker counter); a no-op for runtimes
/// that are not adaptive. A program that never calls it still works: the controller uses the
/// profile alone.
///
/// ```
/// let rt = footprint::Runtime::builder().adaptive_workers(1..=1).build()?;
/// rt.block_on(|| {
///     for _ in 0..10 {
///         // ... one unit of work ...
///         footprint::progress(1);
///     }
/// });
/// # Ok::<(), footprint::Error>(())
/// ```
pub fn progress(n: u64) {
    let c = crate::context::ctx_ptr();
    // SAFETY: a non-null context is the calling thread's own and alive; its runtime outlives
    // its workers; a non-null worker pointer is the calling OS thread's worker.
    unsafe {
        if !c.is_null() && !(*c).worker().is_null() {
            let shared: &Shared = &*(*c).shared();
            if let Some(a) = shared.adaptive() {
                // Written only by this worker's OS thread (green threads on one worker never
                // interleave within this call).
                crate::accounting::bump(&a.progress[(*(*c).worker()).index()], n);
            }
            return;
        }
    }
    EXTERNAL_PROGRESS.fetch_add(n, Ordering::Relaxed);
}

impl Runtime {
    /// Workers active now: all of them, unless built with [`Builder::adaptive_workers`], whose
    /// controller moves this between `min` and `max` (the others rest, using no CPU).
    ///
    /// ```
    /// let rt = footprint::Runtime::builder().workers(2).build()?;
    /// assert_eq!(rt.active_workers(), 2);
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn active_workers(&self) -> usize {
        self.shared.active_limit()
    }

    /// Sets the number of active workers by hand: workers `n..` hand their queued threads to
    /// the first `n` and rest (no CPU) until it is raised again. An adaptive runtime's
    /// controller sets it again at its next decision. Errors: [`Error::ZeroActiveWorkers`] for 0,
    /// [`Error::NoSuchWorker`] above [`workers`](crate::Runtime::workers).
    ///
    /// ```
    /// let rt = footprint::Runtime::builder().workers(2).pin(false).build()?;
    /// rt.set_active_workers(1)?;
    /// assert_eq!(rt.block_on(|| 6 * 7), 42); // runs on worker 0 only
    /// rt.set_active_workers(2)?;
    /// assert!(rt.set_active_workers(3).is_err());
    /// let zero = rt.set_active_workers(0).unwrap_err();
    /// assert!(zero.to_string().contains("set_active_workers(0)"), "{zero}");
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn set_active_workers(&self, n: usize) -> Result<(), Error> {
        let workers = self.shared.workers().len();
        if n == 0 {
            return Err(Error::ZeroActiveWorkers { workers });
        }
        if n > workers {
            return Err(Error::NoSuchWorker {
                worker: n - 1,
                workers,
            });
        }
        self.shared.set_active(n);
        Ok(())
    }

    /// The intervals the adaptive controller sampled, oldest first (the last 512, about 50 s;
    /// empty unless built with [`Builder::adaptive_workers`]): the profile its decisions in
    /// [`RuntimeStats::adaptive`](crate::RuntimeStats::adaptive) were made on.
    ///
    /// ```
    /// let rt = footprint::Runtime::builder().workers(1).build()?;
    /// assert!(rt.adaptive_samples().is_empty());
    /// # Ok::<(), footprint::Error>(())
    /// ```
    pub fn adaptive_samples(&self) -> Vec<AdaptiveSample> {
        self.shared.adaptive().map_or_else(Vec::new, |a| {
            let log = a.log.lock().unwrap_or_else(|e| e.into_inner());
            log.samples.iter().copied().collect()
        })
    }
}
