//! Per-thread performance counters with honest fallbacks, and the run-time profile sampler.
//!
//! - [`CounterSource`]: the one trait for cumulative per-thread counts, with a fixed-size,
//!   allocation-free [`Reading`]. Implementations: [`PerfGroup`] (hardware counter groups
//!   through `perf_event_open`, read with `rdpmc` where allowed, else `read()`),
//!   [`RusageSource`] (calling thread, `getrusage` + thread CPU clock, no permission),
//!   [`ProcTaskSource`] (any thread, `/proc/self/task/<tid>`), [`ScriptedSource`] (replays
//!   given counts for tests).
//! - [`Capabilities::probe`]: what this machine can count, and why not (typed errors in
//!   [`PmuError`]).
//! - [`ProfileSampler`] / [`BackgroundSampler`]: 003's run-time profile (CPU utilisation,
//!   context-switch and migration rates, run delay, LLC miss ratio, lock time) per interval,
//!   and its statistics over a decision window.
//!
//! Kernel-mode counting: perf-event crates open counters with kernel mode excluded, and at
//! `perf_event_paranoid` 2 nothing else is allowed. Context switches and migrations happen in
//! kernel mode, so such counters would read 0. [`PerfGroup`] refuses to open them that way
//! (a typed [`PmuError::PermissionDenied`]); the software sources read them from `getrusage`
//! and `/proc` instead.
//!
//! ```
//! use footprint_pmu::{Capabilities, CounterSource, Event, RusageSource};
//! let caps = Capabilities::get();
//! println!("{}", caps.summary());
//! let mut src = RusageSource::new();
//! let r = src.read()?;
//! println!("cpu so far: {} ns", src.value(&r, Event::TaskClock).unwrap());
//! # Ok::<(), footprint_pmu::PmuError>(())
//! ```
#![warn(missing_docs)]

mod caps;
mod error;
mod event;
mod perf;
mod profile;
mod sampler;
mod scripted;
mod software;
mod source;
mod sys;
mod ticker;

pub use caps::{Availability, Capabilities, EventCapability};
pub use error::{hardware_pmu_devices, perf_event_paranoid, PmuError, CPU_PMU_PATH, PARANOID_PATH};
pub use event::Event;
pub use perf::{kernel_counting_allowed, PerfGroup, PerfOptions, RdpmcMode};
pub use profile::{
    LlcCounting, ProcProfileSource, ProfileSource, ScriptedProfile, ScriptedProfileFeeder,
    Snapshot, TaskCounts, ThreadRegistry, ThreadSelection,
};
pub use sampler::{
    BackgroundSampler, IntervalProfile, LockTimeSource, ProfileSampler, Rates, SamplerConfig, Stat,
    ThreadRates, WindowSummary,
};
pub use scripted::{ScriptEnd, ScriptFeeder, ScriptedSource};
pub use software::{ProcTaskSource, RusageSource};
pub use source::{CounterSource, ReadPath, Reading, Target, MAX_EVENTS};
pub use sys::{
    current_tid, getrusage, monotonic_ns, process_threads, thread_cpu_time_ns, Rusage, RusageWho,
    Tid,
};
pub use ticker::SamplerOverhead;
