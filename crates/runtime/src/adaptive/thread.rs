//! The controller thread of an adaptive runtime: every interval it reads the process profile
//! (`footprint-pmu`'s sampler over the workers' kernel threads, the locks' wait time, the
//! program's progress, `/proc/loadavg`), feeds it to the [`Controller`] and applies what it
//! decides with `Shared::set_active`.

use super::controller::{Controller, Decision, Limits, Sample, Thresholds};
use super::sharing::SharingSignals;
use super::state::{AdaptiveState, INTERVAL};
use super::stats::{AdaptiveDecision, AdaptiveSample};
use super::trace;
use crate::registry::Shared;
use footprint_pmu::{IntervalProfile, ProfileSampler, SamplerConfig, ThreadSelection};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Reads of `/proc/loadavg` per interval (its runnable count is an instant's; these are
/// averaged).
const LOAD_READS: u32 = 4;

/// Starts the controller thread.
pub(crate) fn start(shared: Arc<Shared>) -> std::io::Result<()> {
    let a = shared.adaptive().expect("an adaptive runtime");
    let ctl = Controller::new(Limits::new(a.min, a.max, a.cpus), Thresholds::default());
    // Built on the caller's thread: no controller CPU time to record yet (the caller's own
    // CPU time is not the controller's).
    record(a, &ctl, Some(ctl.start()), None, None);
    let weak = Arc::downgrade(&shared);
    let handle = std::thread::Builder::new()
        .name("footprint-adaptive".into())
        .spawn(move || run(weak, ctl))?;
    *a.controller.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle.thread().clone());
    Ok(())
}

/// Whether the controller should stop (the runtime is gone or going).
fn stopping(shared: &Shared) -> bool {
    shared.is_shutting_down()
        || shared
            .adaptive()
            .is_none_or(|a| a.stop.load(Ordering::Relaxed))
}

fn run(weak: std::sync::Weak<Shared>, mut ctl: Controller) {
    let Some(shared) = weak.upgrade() else {
        return;
    };
    let a = shared.adaptive().expect("an adaptive runtime");
    let config = SamplerConfig {
        interval: INTERVAL,
        window: 1,
        history: 1,
    };
    let sampler = ProfileSampler::procfs(config, ThreadSelection::Registry(a.threads.clone()));
    let mut sampler = match sampler {
        Ok(s) => s.with_lock_time(footprint_locks::stats::process_lock_wait_ns),
        Err(_) => return, // the config above is valid; nothing to sample with otherwise
    };
    drop(shared); // hold the runtime only while working on it
    let mut last_progress = 0u64;
    loop {
        let mut load = (0.0, 0u32);
        for _ in 0..LOAD_READS {
            std::thread::park_timeout(INTERVAL / LOAD_READS);
            match weak.upgrade() {
                Some(s) if !stopping(&s) => {}
                _ => return,
            }
            if let Some(r) = footprint_locks::os::runnable_threads() {
                load = (load.0 + r as f64, load.1 + 1);
            }
        }
        let Some(shared) = weak.upgrade() else {
            return;
        };
        let a = shared.adaptive().expect("an adaptive runtime");
        // The progress of this interval only, whether or not it yields a sample.
        let progress = a.progress_total();
        let progressed = progress - std::mem::replace(&mut last_progress, progress);
        let profile = match sampler.sample_now() {
            Ok(Some(p)) => p,
            Ok(None) => continue, // the baseline
            Err(_) => {
                a.log
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .sample_errors += 1;
                continue;
            }
        };
        let runnable = (load.1 > 0).then(|| load.0 / f64::from(load.1));
        let s = sample(&shared, a, &profile, progressed, progress > 0, runnable);
        let d = ctl.observe(&s);
        if let Some(d) = d {
            shared.set_active(d.active);
        }
        let seen = AdaptiveSample {
            at: a.started.elapsed(),
            active: s.active,
            cpu: s.cpu,
            lock_time: s.lock_time,
            voluntary_per_s: s.voluntary_per_s,
            involuntary_per_s: s.sharing.involuntary_per_s,
            migrations_per_s: s.migrations_per_s,
            throughput: s.throughput,
            others: runnable.map(|_| s.sharing.others()),
        };
        record(a, &ctl, d, Some(seen), Some(thread_cpu_time()));
    }
}

/// The controller's view of one sampled interval.
fn sample(
    shared: &Shared,
    a: &AdaptiveState,
    p: &IntervalProfile,
    progressed: u64,
    reports_progress: bool,
    runnable: Option<f64>,
) -> Sample {
    let secs = p.duration().as_secs_f64().max(1e-9);
    // 003's lock time: the share of the (green) threads' time spent waiting for locks.
    let live = shared.live().max(1) as f64;
    let lock_time = p.lock_waiting.map(|w| (w / live).clamp(0.0, 1.0));
    let cpu = p.process.cpu_utilisation;
    Sample {
        active: shared.active_limit(),
        cpu,
        lock_time,
        voluntary_per_s: p.process.voluntary_switches_per_s,
        migrations_per_s: p.process.migrations_per_s,
        throughput: reports_progress.then(|| progressed as f64 / secs),
        sharing: SharingSignals {
            cpus: a.cpus,
            runnable,
            own_cpu: cpu,
            run_delay: p.process.run_delay_share,
            involuntary_per_s: p.process.involuntary_switches_per_s,
            miss_ratio: p.process.llc_miss_ratio,
            lock_time,
        },
    }
}

/// Writes the controller's state (and a decision, a sample, the controller thread's CPU time)
/// into the log `Runtime::stats` reads.
fn record(
    a: &AdaptiveState,
    ctl: &Controller,
    d: Option<Decision>,
    s: Option<AdaptiveSample>,
    controller_cpu: Option<Duration>,
) {
    let mut log = a.log.lock().unwrap_or_else(|e| e.into_inner());
    let from = log.active; // 0 before the first decision
    log.active = ctl.active();
    log.wanted = ctl.wanted();
    log.settled = ctl.settled();
    if let Some(cpu) = controller_cpu {
        log.controller_cpu = cpu;
    }
    if let Some(d) = d {
        log.decide(AdaptiveDecision {
            at: a.started.elapsed(),
            active: d.active,
            reason: d.reason,
        });
    }
    if let Some(s) = s {
        log.sampled(s);
    }
    drop(log); // a subscriber may read the runtime's stats
    if let Some(d) = d {
        trace::decision(from, &d, s.as_ref());
    }
}

/// CPU time of the calling thread.
fn thread_cpu_time() -> Duration {
    // SAFETY: timespec is plain data filled by clock_gettime.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and out-pointer.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
