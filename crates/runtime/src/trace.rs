//! The runtime's life as `tracing` events (cargo feature `tracing`; without it every function
//! here is an empty inline function, so the calls cost nothing):
//!
//! - target `footprint::runtime`, `INFO`: `runtime built` (fields `id`, `workers`, `cpus`) and
//!   `runtime shutdown` (`id`, `workers`, `spawned`, `finished`); `WARN`: the global runtime
//!   starts beside a runtime the program built (the message says what to do; on stderr
//!   instead when no subscriber is installed);
//! - target `footprint::sched`, `TRACE`: `steal` (`worker`, `tier`: 0 = nearest) and `park`
//!   (`worker`). Off unless a subscriber enables `TRACE` for that target; `tracing`'s
//!   per-call-site interest cache then makes each call a load and a branch.
//!
//! The adaptive controller's decisions are `footprint::adaptive` events (see `adaptive/trace.rs`).

#[cfg(feature = "tracing")]
pub(crate) fn built(id: u64, cpus: &[Option<usize>]) {
    tracing::info!(
        target: "footprint::runtime",
        id,
        workers = cpus.len(),
        cpus = ?cpus,
        "runtime built"
    );
}

#[cfg(feature = "tracing")]
pub(crate) fn shutdown(id: u64, workers: usize, spawned: u64, finished: u64) {
    tracing::info!(
        target: "footprint::runtime",
        id,
        workers,
        spawned,
        finished,
        "runtime shutdown"
    );
}

/// The global runtime started beside a runtime the program built: a warning event where a
/// `tracing` subscriber is installed (feature `tracing`), else a line on stderr, so that the
/// message is never lost.
pub(crate) fn second_pool(message: &str) {
    #[cfg(feature = "tracing")]
    if tracing::dispatcher::has_been_set() {
        tracing::warn!(target: "footprint::runtime", "{message}");
        return;
    }
    eprintln!("{message}");
}

#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn steal(worker: usize, tier: usize) {
    tracing::trace!(target: "footprint::sched", worker, tier, "steal");
}

#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn park(worker: usize) {
    tracing::trace!(target: "footprint::sched", worker, "park");
}

#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn built(_id: u64, _cpus: &[Option<usize>]) {}

#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn shutdown(_id: u64, _workers: usize, _spawned: u64, _finished: u64) {}

#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn steal(_worker: usize, _tier: usize) {}

#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn park(_worker: usize) {}
