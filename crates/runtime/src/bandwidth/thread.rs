//! One green thread's side of bandwidth control: the traffic it declared or was measured at,
//! its reservation's meter or its token bucket, and what happens at its switch points.
//!
//! A *switch point* is where the thread gives its worker back or says it may: `yield_now`,
//! a park (locks, `sleep`, `join`), and [`checkpoint`](super::checkpoint) (each chunk of a
//! `footprint::par` loop). There the run that just ended is charged: its declared bytes
//! (`GreenBuilder::traffic`), the bytes recorded with [`record_traffic`](super::record_traffic),
//! and the measured ones (misses × 64 B of the runs the worker has accounted, or the worker's
//! resctrl group's bytes since the last switch point on it). A reserved thread adds them to its
//! meter, never waits. An unreserved thread, while a limit is in force, pays them from its token
//! bucket and, if in debt, sleeps on the runtime's timer until the debt is paid: its worker
//! runs other work meanwhile (never spinning), or sleeps if there is none. At a park nobody
//! waits (the thread is about to wait anyway); the debt is paid at its next yield or checkpoint.

use super::state::{now_ns, BandwidthState, Measure, ReservedMeter};
use crate::context;
use crate::local::GreenLocal;
use crate::registry::Shared;
use footprint_bandwidth::{TokenBucket, LINE_BYTES};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The kind of switch point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Switch {
    /// `yield_now` or a checkpoint: the thread may be delayed here.
    MayDelay,
    /// A park: charged, never delayed.
    Park,
}

#[derive(Default)]
pub(crate) struct ThreadBw {
    /// Bytes charged per run (`GreenBuilder::traffic`).
    pub(crate) declared_per_run: u64,
    /// Bytes recorded since the last switch point.
    pub(crate) pending: u64,
    /// The thread's counted misses at its last switch point.
    misses_seen: u64,
    /// When the current run began.
    pub(crate) run_started_ns: u64,
    pub(crate) reserved: Option<Arc<ReservedMeter>>,
    bucket: Option<TokenBucket>,
    /// The interval in which it last counted itself as an active unreserved thread (+1).
    counted_in: u64,
    /// Inside its own throttling sleep (whose park must not charge again).
    sleeping: bool,
    /// Throttling delays it served, and their total.
    pub(crate) delays: u64,
    pub(crate) delay_ns: u64,
}

pub(crate) static THREAD_BW: GreenLocal<RefCell<ThreadBw>> = GreenLocal::new(|| {
    RefCell::new(ThreadBw {
        run_started_ns: now_ns(),
        ..ThreadBw::default()
    })
});

/// The bandwidth state of the calling green thread's runtime, if the caller is one.
fn current_state() -> Option<&'static BandwidthState> {
    let s: *const Shared = context::current_shared();
    if s.is_null() || context::current_task_ptr().is_null() {
        return None;
    }
    // SAFETY: the runtime outlives its running green threads (Runtime::drop waits for them),
    // and the reference is used only until this switch point returns, on the green thread.
    Some(unsafe { (*s).bandwidth() })
}

/// Bytes measured for the calling thread since its last switch point.
fn measured(state: &BandwidthState, bw: &mut ThreadBw) -> u64 {
    match &state.measure {
        Measure::Misses => {
            let t = context::current_task_ptr();
            // SAFETY: the running task is alive; its miss count is an atomic the worker writes.
            let m = unsafe { (*t).account().misses.load(Ordering::Relaxed) };
            let d = m.wrapping_sub(bw.misses_seen);
            bw.misses_seen = m;
            d.saturating_mul(LINE_BYTES)
        }
        Measure::Resctrl(_) => context::current_worker_index()
            .and_then(|w| state.resctrl_delta(w))
            .unwrap_or(0),
        Measure::Declared(_) => 0,
    }
}

/// The run that just ended is charged; returns how long the thread must wait before its next
/// run (zero for reserved threads, at parks, and while no limit is in force).
///
/// The clock is read only when needed (a reserved thread's run, an unreserved thread's bucket):
/// `now` is filled then, and the caller lets the controller decide with it.
fn charge(
    state: &BandwidthState,
    bw: &mut ThreadBw,
    kind: Switch,
    now: &mut Option<u64>,
) -> Duration {
    let mut clock = || *now.get_or_insert_with(now_ns);
    let declared = std::mem::take(&mut bw.pending) + bw.declared_per_run;
    let measured = measured(state, bw);
    // Shared counters: touched only when there is something to add (a yield of a thread
    // that declares nothing writes no shared line).
    if declared > 0 {
        state.declared_bytes.fetch_add(declared, Ordering::Relaxed);
    }
    if measured > 0 {
        state.measured_bytes.fetch_add(measured, Ordering::Relaxed);
    }
    let bytes = declared + measured;
    if let Some(m) = &bw.reserved {
        if !m.released.load(Ordering::Acquire) {
            let run_ns = clock().saturating_sub(bw.run_started_ns);
            m.bytes.fetch_add(bytes, Ordering::Relaxed);
            m.run_ns.fetch_add(run_ns, Ordering::Relaxed);
            return Duration::ZERO;
        }
        bw.reserved = None;
    }
    if bytes > 0 {
        state.unreserved_bytes.fetch_add(bytes, Ordering::Relaxed);
        let interval = state.interval.load(Ordering::Relaxed) + 1;
        if bw.counted_in != interval {
            bw.counted_in = interval;
            state.active_unreserved.fetch_add(1, Ordering::Relaxed);
        }
    }
    let Some(rate) = state.limit() else {
        bw.bucket = None;
        return Duration::ZERO;
    };
    if bytes == 0 && bw.bucket.is_none() {
        return Duration::ZERO;
    }
    let now = clock();
    // A burst of one controller interval at the rate: fine-grained delays.
    let burst = rate * 5e-3;
    let bucket = bw
        .bucket
        .get_or_insert_with(|| TokenBucket::new(rate, burst, now));
    if bucket.rate() != rate {
        bucket.set_rate(rate, burst, now);
    }
    let delay = bucket.charge(bytes, now);
    if kind == Switch::Park {
        Duration::ZERO
    } else {
        delay
    }
}

/// Before the calling green thread switches (or at a checkpoint): charges its run and returns
/// the delay it owes.
pub(crate) fn before_switch(kind: Switch) -> Charged {
    let none = Charged {
        delay: Duration::ZERO,
        reserved: false,
    };
    let Some(state) = current_state() else {
        return none;
    };
    let mut now = None;
    let charged = THREAD_BW.with(|c| {
        let Ok(mut bw) = c.try_borrow_mut() else {
            return none;
        };
        if bw.sleeping {
            return none;
        }
        let delay = charge(state, &mut bw, kind, &mut now);
        Charged {
            delay,
            reserved: bw.reserved.is_some(),
        }
    });
    if let Some(now) = now {
        state.maybe_update(now);
    }
    charged
}

/// What a switch point charged: the delay the thread owes, and whether it is reserved (then
/// its next run is timed: [`after_switch`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Charged {
    pub(crate) delay: Duration,
    pub(crate) reserved: bool,
}

/// After the calling green thread resumed: its next run starts now (timed for reserved
/// threads only: nobody else's run length is used).
pub(crate) fn after_switch() {
    THREAD_BW.with(|c| {
        if let Ok(mut bw) = c.try_borrow_mut() {
            if !bw.sleeping && bw.reserved.is_some() {
                bw.run_started_ns = now_ns();
            }
        }
    });
}

/// The calling green thread starts serving a throttle delay: counted, and its own park must
/// not charge again. The sleep itself is the caller's (`parking.rs`).
pub(crate) fn begin_delay(delay: Duration) {
    if let Some(state) = current_state() {
        state.delays.fetch_add(1, Ordering::Relaxed);
        state
            .delay_ns
            .fetch_add(delay.as_nanos() as u64, Ordering::Relaxed);
    }
    THREAD_BW.with(|c| {
        let mut bw = c.borrow_mut();
        bw.sleeping = true;
        bw.delays += 1;
        bw.delay_ns += delay.as_nanos() as u64;
    });
}

/// The throttle delay is served: the next run starts now.
pub(crate) fn end_delay() {
    THREAD_BW.with(|c| {
        let mut bw = c.borrow_mut();
        bw.sleeping = false;
        bw.run_started_ns = now_ns();
    });
}

/// Set once any program in the process uses bandwidth control; until then the switch points
/// skip it.
static ENGAGED: AtomicBool = AtomicBool::new(false);

/// Whether the switch points must run the bandwidth hooks.
#[inline(always)]
pub(crate) fn engaged() -> bool {
    ENGAGED.load(Ordering::Relaxed)
}

pub(crate) fn engage() {
    if !ENGAGED.load(Ordering::Relaxed) {
        ENGAGED.store(true, Ordering::Relaxed);
    }
}

/// The hook before a yield or a checkpoint: charges the run; returns the throttle delay the
/// thread owes (the caller sleeps it: `parking::serve_throttle`) and whether the thread is
/// reserved (then the caller calls [`after_resume`] when it runs again).
#[cold]
pub(crate) fn before_yield() -> Charged {
    before_switch(Switch::MayDelay)
}

/// The hook before a park: charges the run (no delay at a park); returns whether the thread is
/// reserved.
#[cold]
pub(crate) fn before_park() -> bool {
    before_switch(Switch::Park).reserved
}

/// The hook after a reserved thread resumed from a yield or a park.
#[cold]
pub(crate) fn after_resume() {
    after_switch();
}

/// Wraps a green thread's closure so that each of its runs is charged `bytes_per_run`
/// (`GreenBuilder::traffic`).
pub(crate) fn with_declared_traffic<F, T>(bytes_per_run: u64, f: F) -> impl FnOnce() -> T
where
    F: FnOnce() -> T,
{
    engage();
    move || {
        THREAD_BW.with(|c| {
            let mut bw = c.borrow_mut();
            bw.declared_per_run = bytes_per_run;
            bw.run_started_ns = now_ns();
        });
        let r = f();
        // The last run ends here.
        before_switch(Switch::Park);
        r
    }
}
