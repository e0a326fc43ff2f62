//! Memory bandwidth as a scheduled resource for green threads: 004's *Process Cruise Control*
//! (Bellosa, ch. 4.2).
//!
//! - [`calibrate`] measures the machine's copy bandwidth with 1..N threads once and caches it
//!   (under the user's cache directory, measured again when the CPU model or count changes);
//! - [`Runtime::reserve_bandwidth`] reserves a rate for the calling green thread, admitted
//!   against the calibrated capacity by the paper's rules (a typed refusal says what is left);
//! - [`GreenBuilder::traffic`](crate::GreenBuilder::traffic), [`record_traffic`] and the chunks
//!   of `footprint::par` loops declare traffic where no counter measures it; hardware cache
//!   misses (`Counters::Hardware`/`Auto`) or Linux resctrl monitoring measure it where present.
//!   [`RuntimeStats::bandwidth`](crate::RuntimeStats::bandwidth) says which source is in force;
//! - while a reserved thread moves fewer bytes per second of its running time than it reserved,
//!   threads without a reservation are slowed at their switch points: each pays its traffic
//!   from a token bucket, and a thread in debt sleeps until it is paid (its worker runs other
//!   work meanwhile). Reserved threads are never delayed.
//!
//! Nothing here costs anything until a program first uses it: the switch points test one
//! process-wide flag.
//!
//! ```
//! use footprint_runtime::bandwidth::{self, Capacity};
//! use footprint_runtime::{GreenBuilder, Runtime};
//! let rt = Runtime::builder().workers(2).build()?;
//! // Normally calibrated (bandwidth::calibrate()); set here so the example runs in no time.
//! rt.set_bandwidth_capacity(Capacity::new(10e9, 2).unwrap())?;
//! rt.block_on(|| {
//!     let streamer = GreenBuilder::new()
//!         .traffic(1 << 20) // each run touches about 1 MiB
//!         .spawn(|| for _ in 0..10 { footprint_runtime::yield_now() })
//!         .unwrap();
//!     let r = rt.reserve_bandwidth(1e9).expect("admitted");
//!     assert_eq!(r.rate(), 1e9);
//!     streamer.join().unwrap();
//! });
//! let s = rt.stats().bandwidth;
//! assert_eq!(s.source.name(), "declared"); // no PMU and no resctrl here: what was declared
//! assert_eq!(s.reservations, 0);           // the reservation was dropped
//! # Ok::<(), footprint_runtime::Error>(())
//! ```

// Below the rest of the runtime (registry, stats, error and parking name these modules, never
// this one): the state and its figures, the error, and the green thread's side.
pub(crate) mod error;
pub(crate) mod state;
pub(crate) mod stats;
pub(crate) mod thread;

pub use error::BandwidthError;
pub use stats::BandwidthStats;

pub use footprint_bandwidth::{
    calibrate, calibrate_with, default_array_bytes, default_cache_file, resctrl, AdmissionError,
    CacheState, CalibrateError, CalibrateOptions, Calibration, Capacity, MachineId, ThrottleConfig,
    TrafficSource, STALE_FACTOR,
};

use crate::context;
use crate::error::Error;
use crate::runtime::Runtime;
use state::BandwidthState;
use state::{now_ns, ReservedMeter};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use thread::{engage, engaged, THREAD_BW};

/// A granted bandwidth reservation of one green thread; dropping it gives the bandwidth back.
///
/// While it lives, its thread is never throttled, and whenever the thread moves fewer bytes
/// per second of its running time than it reserved, the runtime slows the unreserved threads.
pub struct Reservation {
    state: Arc<BandwidthState>,
    grant: footprint_bandwidth::GrantId,
    meter: Arc<ReservedMeter>,
}

impl Reservation {
    /// The reserved rate, bytes per second.
    pub fn rate(&self) -> f64 {
        self.meter.rate
    }
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("rate", &self.meter.rate)
            .finish_non_exhaustive()
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.state.release(self.grant, &self.meter);
    }
}

/// Admits `bytes_per_sec` against `state`'s capacity (calibrated on first use); the
/// reservation is not yet any thread's.
pub(crate) fn admit(state: Arc<BandwidthState>, bytes_per_sec: f64) -> Result<Reservation, Error> {
    engage();
    let workers = state.workers();
    let grant = state
        .with_admission(
            || {
                let c = calibrate().map_err(BandwidthError::Calibration)?;
                let n = workers.min(c.total_rates.len()).max(1);
                Capacity::new(c.total_rates[n - 1], workers).map_err(BandwidthError::Refused)
            },
            |a| a.admit(bytes_per_sec),
        )
        .map_err(Error::Bandwidth)?
        .map_err(|e| Error::Bandwidth(BandwidthError::Refused(e)))?;
    let meter = Arc::new(ReservedMeter {
        rate: bytes_per_sec,
        bytes: AtomicU64::new(0),
        run_ns: AtomicU64::new(0),
        released: AtomicBool::new(false),
    });
    state.add_meter(meter.clone());
    Ok(Reservation {
        state,
        grant,
        meter,
    })
}

impl Reservation {
    /// Makes it the calling green thread's: its runs are metered and never delayed.
    pub(crate) fn bind_to_current(&self) {
        THREAD_BW.with(|c| {
            let mut bw = c.borrow_mut();
            bw.reserved = Some(self.meter.clone());
            bw.run_started_ns = now_ns();
        });
    }
}

impl Runtime {
    /// Reserves `bytes_per_sec` of memory bandwidth for the calling green thread (of this
    /// runtime).
    ///
    /// Admission (004 §4.2.2) works against the machine's copy rate with all workers copying,
    /// from [`set_bandwidth_capacity`](Self::set_bandwidth_capacity) or, the first time, from
    /// [`calibrate`] (cached per machine; the first calibration on a machine takes about a
    /// second). It refuses a request above 90 % of that rate, one that would leave no
    /// bandwidth to unreserved threads, and one more guarantee than workers minus one.
    ///
    /// Errors: [`Error::NotGreen`] outside a green thread, [`Error::Bandwidth`] with
    /// [`BandwidthError::Refused`] (saying what is left), `Calibration` or `OtherRuntime`.
    ///
    /// ```
    /// use footprint_runtime::bandwidth::{BandwidthError, Capacity};
    /// use footprint_runtime::{Error, Runtime};
    /// let rt = Runtime::builder().workers(2).build()?;
    /// rt.set_bandwidth_capacity(Capacity::new(1e9, 2).unwrap())?;
    /// rt.block_on(|| {
    ///     let held = rt.reserve_bandwidth(400e6).expect("admitted");
    ///     // Two workers: one guarantee, and one worker stays free for the rest.
    ///     let refused = rt.reserve_bandwidth(1e6).unwrap_err();
    ///     assert!(matches!(refused, Error::Bandwidth(BandwidthError::Refused(_))), "{refused}");
    ///     drop(held);
    ///     assert!(rt.reserve_bandwidth(2e9).is_err()); // above 90 % of the capacity
    /// });
    /// assert!(matches!(rt.reserve_bandwidth(1e6), Err(Error::NotGreen { .. })));
    /// # Ok::<(), footprint_runtime::Error>(())
    /// ```
    pub fn reserve_bandwidth(&self, bytes_per_sec: f64) -> Result<Reservation, Error> {
        if context::current_task_ptr().is_null() {
            return Err(Error::NotGreen {
                what: "Runtime::reserve_bandwidth",
            });
        }
        if !context::same_runtime_green(self.shared_ptr()) {
            return Err(Error::Bandwidth(BandwidthError::OtherRuntime));
        }
        let r = admit(self.bandwidth_state(), bytes_per_sec)?;
        r.bind_to_current();
        Ok(r)
    }

    /// Sets the copy rate reservations are admitted against (instead of [`calibrate`]);
    /// refused with [`BandwidthError::CapacityInUse`] while reservations are granted.
    pub fn set_bandwidth_capacity(&self, capacity: Capacity) -> Result<(), Error> {
        self.bandwidth_state()
            .set_capacity(capacity)
            .map_err(|reservations| {
                Error::Bandwidth(BandwidthError::CapacityInUse { reservations })
            })
    }

    pub(crate) fn bandwidth_state(&self) -> Arc<BandwidthState> {
        // SAFETY: the runtime's state lives as long as `self`.
        unsafe { (*self.shared_ptr()).bandwidth().clone() }
    }
}

/// Adds `bytes` to the traffic of the calling green thread's current run (for code that knows
/// what it touched: a loop over slices). Charged at its next switch point.
///
/// ```
/// let rt = footprint_runtime::Runtime::builder().workers(1).build()?;
/// rt.block_on(|| {
///     let v = vec![1u64; 1 << 16];
///     let s: u64 = v.iter().sum();
///     footprint_runtime::bandwidth::record_traffic(std::mem::size_of_val(&v[..]) as u64);
///     footprint_runtime::bandwidth::checkpoint();
///     assert_eq!(s, 1 << 16);
/// });
/// assert_eq!(rt.stats().bandwidth.declared_bytes, 8 << 16);
/// # Ok::<(), footprint_runtime::Error>(())
/// ```
pub fn record_traffic(bytes: u64) {
    if context::current_task_ptr().is_null() {
        return;
    }
    engage();
    THREAD_BW.with(|c| {
        if let Ok(mut bw) = c.try_borrow_mut() {
            bw.pending = bw.pending.saturating_add(bytes);
        }
    });
}

/// A switch point without a switch: charges the calling green thread's run so far and, if it
/// is unreserved and owes its token bucket, sleeps until the debt is paid. `footprint::par`
/// loops call it after every chunk; long loops of a streaming thread may call it too. Does
/// nothing until bandwidth control is used in the process, or outside a green thread.
pub fn checkpoint() {
    if !engaged() || context::current_task_ptr().is_null() {
        return;
    }
    let c = thread::before_yield();
    if !crate::parking::serve_throttle(c.delay) && c.reserved {
        thread::after_switch();
    }
}

/// The throttling delays the calling green thread has served so far, and their total
/// (`(0, ZERO)` outside a green thread). A reserved thread's stay at zero.
pub fn current_delays() -> (u64, std::time::Duration) {
    if context::current_task_ptr().is_null() || !engaged() {
        return (0, std::time::Duration::ZERO);
    }
    THREAD_BW.with(|c| {
        let bw = c.borrow();
        (bw.delays, std::time::Duration::from_nanos(bw.delay_ns))
    })
}
