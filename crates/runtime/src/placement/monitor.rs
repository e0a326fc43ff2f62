//! The shuffling monitor (003 ch. 4): the thread that samples and decides, and the lock hook's
//! timed park that feeds it. The data and the decision rule are in `shuffle.rs`.

use crate::registry::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Starts the monitor thread of a runtime with shuffling on.
pub(crate) fn start_monitor(shared: Arc<Shared>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("footprint-shuffle".into())
        .spawn(move || {
            let Some(s) = shared.placement().shuffle.as_ref() else {
                return;
            };
            let mut start = Instant::now();
            let mut taken = 0u32;
            while !s.stop.load(Ordering::Relaxed) && !shared.is_shutting_down() {
                std::thread::park_timeout(s.config.sample_period);
                taken += 1;
                if taken >= s.config.samples {
                    let now = Instant::now();
                    let c = &shared.placement().counters;
                    c.shuffle_rounds.fetch_add(1, Ordering::Relaxed);
                    if let Some(swaps) = s.decide(shared.workers().len(), now - start) {
                        c.shuffle_decisions.fetch_add(1, Ordering::Relaxed);
                        c.shuffle_swaps.fetch_add(swaps as u64, Ordering::Relaxed);
                    }
                    start = now;
                    taken = 0;
                }
            }
        })
        .map(|_| ())
}

/// The lock hook's park: timed and counted for the calling green thread when its runtime
/// shuffles, a plain park otherwise.
pub(crate) fn timed_lock_park() {
    let s = crate::context::current_shared();
    // SAFETY: a non-null current runtime is alive while its thread runs.
    let shuffle = (!s.is_null())
        .then(|| unsafe { (*s).placement().shuffle.as_ref() })
        .flatten();
    let Some(state) = shuffle else {
        crate::parking::park_current();
        return;
    };
    let Some(t) = crate::context::current_task_arc() else {
        crate::parking::park_current();
        return;
    };
    state.register(&t);
    let start = Instant::now();
    crate::parking::park_current();
    let waited = start.elapsed().as_nanos() as u64;
    // Written only by the thread itself.
    let w = &t.extras().lock_wait_ns;
    w.store(w.load(Ordering::Relaxed) + waited, Ordering::Relaxed);
}

/// Adds `ns` to the calling green thread's lock-wait total, as if it had waited that long in a
/// lock (for blocking primitives built on [`park`](crate::park::park), which the runtime cannot
/// see as locks). Registers it for shuffling; a no-op outside green threads or when the runtime
/// does not shuffle.
///
/// ```
/// use footprint::runtime::{park, Runtime, ShuffleConfig};
/// let rt = Runtime::builder().workers(1).shuffling(ShuffleConfig::new()).build().unwrap();
/// rt.block_on(|| park::record_lock_wait(1_000)); // a thread of this runtime waited 1 µs
/// park::record_lock_wait(1_000); // outside a green thread: nothing happens
/// ```
pub fn record_lock_wait(ns: u64) {
    let s = crate::context::current_shared();
    if s.is_null() {
        return;
    }
    // SAFETY: as in timed_lock_park.
    let Some(state) = (unsafe { (*s).placement().shuffle.as_ref() }) else {
        return;
    };
    if let Some(t) = crate::context::current_task_arc() {
        state.register(&t);
        let w = &t.extras().lock_wait_ns;
        w.store(w.load(Ordering::Relaxed) + ns, Ordering::Relaxed);
    }
}
