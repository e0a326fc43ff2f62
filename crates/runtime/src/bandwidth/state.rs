//! A runtime's bandwidth state: the admission of reservations, the reserved threads' meters,
//! the throttle controller and the per-thread limit it sets, the traffic source and its
//! per-worker resctrl groups, and the counters `RuntimeStats` shows.

use super::stats::BandwidthStats;
use footprint_bandwidth::resctrl::{self, MonGroup, Unavailable};
use footprint_bandwidth::{
    Admission, Capacity, ReservedSample, Throttle, ThrottleConfig, ThrottleController,
    TrafficSource,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Nanoseconds on the switch clock (the time-stamp counter, calibrated against `Instant`: a
/// switch point reads it twice, and `Instant::now` costs ten times as much on a VM).
pub(crate) fn now_ns() -> u64 {
    crate::clock::to_duration(crate::clock::ticks()).as_nanos() as u64
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one reservation moved and how long its thread ran, since the controller last looked.
#[derive(Debug)]
pub(crate) struct ReservedMeter {
    pub(crate) rate: f64,
    pub(crate) bytes: AtomicU64,
    pub(crate) run_ns: AtomicU64,
    /// Set when its `Reservation` is dropped: the thread is unreserved from then on.
    pub(crate) released: AtomicBool,
}

/// The limit per unreserved thread when none is in force.
const UNLIMITED: u64 = u64::MAX;

/// Where the traffic of a switch comes from, as resolved when the state was made.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Measure {
    /// The task's counted misses × line size.
    Misses,
    /// The worker's resctrl monitoring group.
    Resctrl(PathBuf),
    /// Only declared traffic.
    Declared(String),
}

/// Picks the best source: hardware misses where the runtime counts them, else resctrl where
/// usable, else declared traffic with the reasons neither measures.
pub(crate) fn resolve(
    misses_counted: bool,
    counters: &str,
    resctrl: Result<PathBuf, Unavailable>,
) -> Measure {
    if misses_counted {
        return Measure::Misses;
    }
    match resctrl {
        Ok(root) => Measure::Resctrl(root),
        Err(why) => Measure::Declared(format!(
            "no cache-miss counts (counters: {counters}); {why}"
        )),
    }
}

/// The calling OS thread's id (what a resctrl `tasks` file takes).
fn gettid() -> u64 {
    // SAFETY: gettid has no preconditions and cannot fail.
    (unsafe { libc::gettid() }) as u64
}

/// One worker's resctrl group and its last reading.
type WorkerGroup = Mutex<Option<(MonGroup, u64)>>;

pub(crate) struct BandwidthState {
    workers: usize,
    runtime_id: u64,
    admission: Mutex<Option<Admission>>,
    meters: Mutex<Vec<Arc<ReservedMeter>>>,
    controller: Mutex<ThrottleController>,
    next_update_ns: AtomicU64,
    /// Per-thread limit in bytes per second (`f64` bits), `UNLIMITED` when released.
    limit_bits: AtomicU64,
    /// The interval's number, and the unreserved threads that moved bytes in it.
    pub(crate) interval: AtomicU64,
    pub(crate) active_unreserved: AtomicUsize,
    last_active_unreserved: AtomicUsize,
    /// Bytes the unreserved threads moved since the last decision, and when that was.
    pub(crate) unreserved_bytes: AtomicU64,
    last_update_ns: AtomicU64,
    pub(crate) measure: Measure,
    resctrl_groups: Vec<WorkerGroup>,
    resctrl_error: Mutex<Option<String>>,
    pub(crate) declared_bytes: AtomicU64,
    pub(crate) measured_bytes: AtomicU64,
    pub(crate) delays: AtomicU64,
    pub(crate) delay_ns: AtomicU64,
}

impl BandwidthState {
    /// The state of a runtime of `workers` workers whose counters are described by `counters`.
    pub(crate) fn new(workers: usize, misses_counted: bool, counters: &str) -> BandwidthState {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let resctrl = resctrl::probe().map(|()| PathBuf::from(resctrl::DEFAULT_ROOT));
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        Self::with_measure(workers, id, resolve(misses_counted, counters, resctrl))
    }

    pub(crate) fn with_measure(
        workers: usize,
        runtime_id: u64,
        measure: Measure,
    ) -> BandwidthState {
        let cfg = ThrottleConfig::default();
        BandwidthState {
            workers,
            runtime_id,
            admission: Mutex::new(None),
            meters: Mutex::new(Vec::new()),
            next_update_ns: AtomicU64::new(cfg.interval.as_nanos() as u64),
            controller: Mutex::new(ThrottleController::new(cfg)),
            limit_bits: AtomicU64::new(UNLIMITED),
            interval: AtomicU64::new(0),
            active_unreserved: AtomicUsize::new(0),
            last_active_unreserved: AtomicUsize::new(0),
            unreserved_bytes: AtomicU64::new(0),
            last_update_ns: AtomicU64::new(0),
            resctrl_groups: (0..workers).map(|_| Mutex::new(None)).collect(),
            measure,
            resctrl_error: Mutex::new(None),
            declared_bytes: AtomicU64::new(0),
            measured_bytes: AtomicU64::new(0),
            delays: AtomicU64::new(0),
            delay_ns: AtomicU64::new(0),
        }
    }

    pub(crate) fn workers(&self) -> usize {
        self.workers
    }

    /// Sets the capacity admitted against; refused while reservations are granted.
    pub(crate) fn set_capacity(&self, cap: Capacity) -> Result<(), usize> {
        let mut a = lock(&self.admission);
        if let Some(old) = a.as_ref() {
            if old.guarantees() > 0 {
                return Err(old.guarantees());
            }
        }
        *a = Some(Admission::new(cap));
        Ok(())
    }

    /// Runs `f` on the admission, made from `make_capacity` first if there is none yet.
    pub(crate) fn with_admission<R, E>(
        &self,
        make_capacity: impl FnOnce() -> Result<Capacity, E>,
        f: impl FnOnce(&mut Admission) -> R,
    ) -> Result<R, E> {
        let mut a = lock(&self.admission);
        if a.is_none() {
            *a = Some(Admission::new(make_capacity()?));
        }
        Ok(f(a.as_mut().expect("made above")))
    }

    pub(crate) fn add_meter(&self, m: Arc<ReservedMeter>) {
        lock(&self.meters).push(m);
    }

    pub(crate) fn release(&self, grant: footprint_bandwidth::GrantId, m: &Arc<ReservedMeter>) {
        m.released.store(true, Ordering::Release);
        let mut meters = lock(&self.meters);
        meters.retain(|x| !Arc::ptr_eq(x, m));
        if meters.is_empty() {
            // Nothing left to protect: unthrottled at once, not at the next decision.
            self.limit_bits.store(UNLIMITED, Ordering::Relaxed);
        }
        drop(meters);
        if let Some(a) = lock(&self.admission).as_mut() {
            a.release(grant);
        }
    }

    /// The limit per unreserved thread now (`None`: unthrottled).
    pub(crate) fn limit(&self) -> Option<f64> {
        match self.limit_bits.load(Ordering::Relaxed) {
            UNLIMITED => None,
            b => Some(f64::from_bits(b)),
        }
    }

    /// Decides the next interval when one has ended (whoever passes a switch point first).
    pub(crate) fn maybe_update(&self, now: u64) {
        let due = self.next_update_ns.load(Ordering::Relaxed);
        if now < due {
            return;
        }
        let Ok(mut ctl) = self.controller.try_lock() else {
            return;
        };
        // Another updater may have finished this interval between the load and the lock.
        if now < self.next_update_ns.load(Ordering::Relaxed) {
            return;
        }
        let interval = ctl.config().interval.as_nanos() as u64;
        self.next_update_ns.store(now + interval, Ordering::Relaxed);
        let elapsed = now.saturating_sub(self.last_update_ns.swap(now, Ordering::Relaxed));
        let moved = self.unreserved_bytes.swap(0, Ordering::Relaxed) as f64;
        let unreserved_rate = moved / (elapsed.max(1) as f64 * 1e-9);
        let samples: Vec<ReservedSample> = lock(&self.meters)
            .iter()
            .map(|m| ReservedSample {
                reserved: m.rate,
                bytes: m.bytes.swap(0, Ordering::Relaxed),
                run_time: Duration::from_nanos(m.run_ns.swap(0, Ordering::Relaxed)),
            })
            .collect();
        let free = lock(&self.admission)
            .as_ref()
            .map_or(f64::INFINITY, Admission::free_bandwidth);
        let active = self.active_unreserved.swap(0, Ordering::Relaxed);
        self.last_active_unreserved.store(active, Ordering::Relaxed);
        self.interval.fetch_add(1, Ordering::Relaxed);
        let decision = if samples.is_empty() {
            // No reservation: nothing to protect.
            ctl.update(now, free, unreserved_rate, &[]);
            Throttle::Released
        } else {
            ctl.update(now, free, unreserved_rate, &samples)
        };
        let bits = decision
            .per_thread(active)
            .filter(|r| r.is_finite())
            .map_or(UNLIMITED, f64::to_bits);
        self.limit_bits.store(bits, Ordering::Relaxed);
    }

    /// The bytes worker `worker`'s resctrl group moved since the last call (on that worker);
    /// `None` when resctrl is not the source or failed (the failure is kept for stats).
    pub(crate) fn resctrl_delta(&self, worker: usize) -> Option<u64> {
        let Measure::Resctrl(root) = &self.measure else {
            return None;
        };
        if lock(&self.resctrl_error).is_some() {
            return None;
        }
        let mut g = lock(self.resctrl_groups.get(worker)?);
        let r = (|| -> Result<u64, String> {
            if g.is_none() {
                let name = format!(
                    "footprint-{}-{}-w{worker}",
                    std::process::id(),
                    self.runtime_id
                );
                let group = MonGroup::create(root, &name).map_err(|e| e.to_string())?;
                group
                    .add_thread(gettid())
                    .map_err(|e| format!("adding worker {worker} to {name}: {e}"))?;
                let first = group.total_bytes().map_err(|e| e.to_string())?;
                *g = Some((group, first));
                return Ok(0);
            }
            let (group, last) = g.as_mut().expect("checked");
            let now = group.total_bytes().map_err(|e| e.to_string())?;
            let d = now.wrapping_sub(*last);
            *last = now;
            Ok(d)
        })();
        match r {
            Ok(d) => Some(d),
            Err(e) => {
                lock(&self.resctrl_error).get_or_insert(e);
                None
            }
        }
    }

    /// The source in force, in words (resctrl that failed falls back to declared).
    pub(crate) fn source(&self, counters: &str) -> TrafficSource {
        let declared = self.declared_bytes.load(Ordering::Relaxed) > 0;
        let unmeasured = match &self.measure {
            Measure::Misses => {
                return TrafficSource::Hardware {
                    event: counters.to_string(),
                }
            }
            Measure::Resctrl(root) => match lock(&self.resctrl_error).clone() {
                None => return TrafficSource::Resctrl { root: root.clone() },
                Some(e) => format!("resctrl failed: {e}"),
            },
            Measure::Declared(why) => why.clone(),
        };
        if declared {
            TrafficSource::Declared { unmeasured }
        } else {
            TrafficSource::None { reason: unmeasured }
        }
    }

    pub(crate) fn stats(&self, counters: &str) -> BandwidthStats {
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (capacity, reserved, reservations, free) = match lock(&self.admission).as_ref() {
            None => (None, 0, 0, None),
            Some(a) => (
                Some(a.capacity().copy_rate as u64),
                a.reserved() as u64,
                a.guarantees(),
                Some(a.free_bandwidth() as u64),
            ),
        };
        let (intervals, behind_intervals) = lock(&self.controller).counts();
        BandwidthStats {
            source: self.source(counters),
            capacity,
            reserved,
            reservations,
            free,
            limit_per_thread: self.limit().map(|l| l as u64),
            throttled_threads: self.last_active_unreserved.load(Ordering::Relaxed),
            declared_bytes: ld(&self.declared_bytes),
            measured_bytes: ld(&self.measured_bytes),
            delays: ld(&self.delays),
            delay_time: Duration::from_nanos(ld(&self.delay_ns)),
            intervals,
            behind_intervals,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_source_wins_and_none_says_why() {
        assert_eq!(
            resolve(true, "hw", Err(Unavailable::NotInKernel)),
            Measure::Misses
        );
        assert_eq!(
            resolve(false, "time only", Ok(PathBuf::from("/r"))),
            Measure::Resctrl(PathBuf::from("/r"))
        );
        let s = BandwidthState::with_measure(
            2,
            1,
            resolve(false, "time only", Err(Unavailable::NotInKernel)),
        );
        match s.source("time only") {
            TrafficSource::None { reason } => {
                assert!(
                    reason.contains("time only") && reason.contains("resctrl"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        s.declared_bytes.store(1, Ordering::Relaxed);
        assert_eq!(s.source("time only").name(), "declared");
    }

    fn meter(rate: f64) -> Arc<ReservedMeter> {
        Arc::new(ReservedMeter {
            rate,
            bytes: AtomicU64::new(0),
            run_ns: AtomicU64::new(0),
            released: AtomicBool::new(false),
        })
    }

    /// Scripted traffic through the runtime's state: a reserved thread behind its rate engages
    /// the limit, split over the unreserved threads that moved bytes; releasing the
    /// reservation releases the limit at the next decision.
    #[test]
    fn a_reserved_thread_behind_limits_the_others() {
        let s = BandwidthState::with_measure(4, 1, Measure::Declared("scripted".into()));
        s.set_capacity(Capacity::new(400e6, 4).unwrap()).unwrap();
        let grant = s
            .with_admission(
                || -> Result<Capacity, ()> { unreachable!() },
                |a| a.admit(100e6),
            )
            .unwrap()
            .unwrap();
        let m = meter(100e6);
        s.add_meter(m.clone());
        let free = 300e6 * (1.0 - 0.25);
        let ms = 1_000_000u64;
        // Interval 1: on rate (1 MB in 5 ms = 200 MB/s).
        m.bytes.store(1_000_000, Ordering::Relaxed);
        m.run_ns.store(5 * ms, Ordering::Relaxed);
        s.active_unreserved.store(3, Ordering::Relaxed);
        s.maybe_update(5 * ms);
        assert_eq!(s.limit(), None);
        // Too early for the next decision: nothing changes.
        m.bytes.store(1, Ordering::Relaxed);
        m.run_ns.store(5 * ms, Ordering::Relaxed);
        s.maybe_update(6 * ms);
        assert_eq!(s.limit(), None);
        // Interval 2: behind (1 byte in 5 ms); 3 unreserved threads moved 3 MB in the 5 ms
        // since the last decision (600 MB/s, above the free bandwidth): the limit closes to
        // half the free bandwidth, split three ways.
        s.active_unreserved.store(3, Ordering::Relaxed);
        s.unreserved_bytes.store(3_000_000, Ordering::Relaxed);
        s.maybe_update(10 * ms);
        let l = s.limit().expect("engaged");
        assert!((l - free / 2.0 / 3.0).abs() < 1.0, "{l} vs {}", free / 6.0);
        // Interval 3: still behind, and they moved only 30 MB/s: closes from that.
        m.run_ns.store(5 * ms, Ordering::Relaxed);
        s.active_unreserved.store(1, Ordering::Relaxed);
        s.unreserved_bytes.store(150_000, Ordering::Relaxed);
        s.maybe_update(15 * ms);
        let l = s.limit().expect("engaged");
        assert!((l - 15e6).abs() < 1.0, "{l}");
        // Released reservation: no meter left, so unthrottled at once.
        s.release(grant, &m);
        assert!(m.released.load(Ordering::Relaxed));
        assert_eq!(s.limit(), None);
        s.maybe_update(20 * ms);
        assert_eq!(s.limit(), None);
        let st = s.stats("time only");
        assert_eq!(
            (st.reservations, st.intervals, st.behind_intervals),
            (0, 4, 2)
        );
    }

    /// The per-worker resctrl path on a scripted tree: the first reading is the baseline, the
    /// next ones the bytes since; a counter the kernel lost makes the source fall back, saying
    /// why.
    #[test]
    fn resctrl_groups_read_per_worker_and_fall_back_on_failure() {
        let root =
            std::env::temp_dir().join(format!("footprint-rt-resctrl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let s = BandwidthState::with_measure(1, 7, Measure::Resctrl(root.clone()));
        let group = root.join(format!("mon_groups/footprint-{}-7-w0", std::process::id()));
        let counter = group.join("mon_data/mon_L3_00/mbm_total_bytes");
        std::fs::create_dir_all(counter.parent().unwrap()).unwrap();
        std::fs::write(&counter, "1000\n").unwrap();
        assert_eq!(s.resctrl_delta(0), Some(0));
        let tasks = std::fs::read_to_string(group.join("tasks")).unwrap();
        assert_eq!(tasks.trim().parse::<u64>().unwrap(), gettid());
        std::fs::write(&counter, "6000\n").unwrap();
        assert_eq!(s.resctrl_delta(0), Some(5000));
        assert_eq!(s.resctrl_delta(1), None, "no such worker");
        assert_eq!(s.source("time only").name(), "resctrl");
        std::fs::write(&counter, "Unavailable\n").unwrap();
        assert_eq!(s.resctrl_delta(0), None);
        match s.source("time only") {
            TrafficSource::None { reason } => {
                assert!(reason.contains("resctrl failed"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        drop(s);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn capacity_cannot_change_under_a_grant() {
        let s = BandwidthState::with_measure(2, 1, Measure::Declared(String::new()));
        s.set_capacity(Capacity::new(1e9, 2).unwrap()).unwrap();
        s.with_admission(
            || -> Result<Capacity, ()> { unreachable!() },
            |a| a.admit(1e6).unwrap(),
        )
        .unwrap();
        assert_eq!(s.set_capacity(Capacity::new(2e9, 2).unwrap()), Err(1));
    }
}
