//! The adaptive controller as a pure state machine: fed one [`Sample`] per interval, it returns
//! the number of active workers to run and why ([`Decision`]). No clock, no threads, no I/O:
//! the controller thread (`thread.rs`) measures and applies, the tests script the samples.
//!
//! # Thread Reinforcer, online (003 ch. 2, Algorithm 1)
//!
//! The search starts at `min` workers. Each configuration is measured over a few intervals
//! (the first after a change is skipped: the queues are still moving) and its profile (a
//! [`Sample`], the mean of the measured intervals) kept. It then tries `T_try = T_best + ΔT`
//! workers and compares:
//!
//! - **Terminate** (keep `T_best`) when the try found no more parallelism — the CPU
//!   utilisation grew by less than [`Thresholds::cpu_gain_low`] CPUs per added worker, or,
//!   where the program reports progress (`progress(n)`), the throughput grew by less than
//!   [`Thresholds::throughput_gain`] — or when lock contention is high ([`Thresholds::lock_high`])
//!   and rising fast (ΔLOCK ≥ [`Thresholds::lock_delta_high`]), or voluntary switches rose
//!   sharply (`T_try ≤ cores`), or migrations rose sharply (`T_try > cores`).
//! - **Accept and stop** when `T_try` reached `max`.
//! - **Accept and go on** otherwise, with `ΔT = T_step` when lock contention is low, or voluntary
//!   switches (migrations above the core count) grow slowly, or contention is high but not
//!   rising; `ΔT = T_step / 2` (at least 1) otherwise.
//!
//! Unlike 003 (which reran the program for each try), this runs online and keeps watching after
//! the search: when the profile moves away from the one the choice was made on (lock time by
//! [`Thresholds::phase_lock_shift`], throughput or CPU utilisation by
//! [`Thresholds::phase_rel_shift`]) for [`Thresholds::phase_confirm`] intervals in a row, it
//! searches again from `min` (a phase change, 003 §5.2.2).
//!
//! # Sharing the machine
//!
//! Idle intervals (less than [`Thresholds::idle_cpu`] CPUs busy: the program waits for its
//! caller or for I/O) are skipped: they are neither a measurement nor a phase change.
//!
//! Every interval the sharing rule (`sharing.rs`) may cap the count below what the search
//! wants; while capped, the search is paused (its measurements would be the other programs'),
//! and when the cap lifts the runtime returns to the count it wanted and re-measures it. Where
//! the program reports progress, a cap is checked: if the throughput under it is lower than at
//! the wanted count just before (by more than [`Thresholds::throughput_gain`]), the cap is
//! lifted and no new one is set until the machine is seen free (or the phase changes).

use super::sharing::{sharing_cap, SharingSignals};

/// One interval as the controller sees it; also a configuration's profile (the mean of its
/// measured intervals, with no sharing signals).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Workers that were active during the interval.
    pub active: usize,
    /// CPU utilisation of the process, in CPUs' worth.
    pub cpu: f64,
    /// Lock time: share of the green threads' time spent waiting for locks, if known.
    pub lock_time: Option<f64>,
    /// Voluntary context switches of the process per second.
    pub voluntary_per_s: f64,
    /// Migrations of the workers between CPUs per second, if known.
    pub migrations_per_s: Option<f64>,
    /// Progress units per second (`progress(n)`), if the program reported any.
    pub throughput: Option<f64>,
    /// What the sharing rule reads.
    pub sharing: SharingSignals,
}

/// The thresholds of Algorithm 1 and of the phase-change watch. 003 does not print its values;
/// these are chosen for this runtime (documented in the README's adaptive section).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// LOCK is low below this lock time (003's shuffling triggers at 5 %).
    pub lock_low: f64,
    /// LOCK is high from this lock time on (between the two it is neither).
    pub lock_high: f64,
    /// ΔLOCK is low below this absolute rise.
    pub lock_delta_low: f64,
    /// ΔLOCK is high from this absolute rise on.
    pub lock_delta_high: f64,
    /// ΔVCX and ΔMIGR are low when the rate grows by less than this factor of the old one (or
    /// less than `rate_delta_low_abs` per second)...
    pub rate_delta_low_rel: f64,
    /// ...(the absolute floor of a rise that is not low)...
    pub rate_delta_low_abs: f64,
    /// ...and high when it grows by this factor of the old one...
    pub rate_delta_rel: f64,
    /// ...and by at least this many per second.
    pub rate_delta_abs: f64,
    /// ΔCPU_UTIL is low below this many CPUs gained per added worker.
    pub cpu_gain_low: f64,
    /// With progress reported: the try is an improvement only with this relative throughput gain.
    pub throughput_gain: f64,
    /// A lock time this far from the chosen profile's is a phase change...
    pub phase_lock_shift: f64,
    /// ...as is a throughput (or CPU utilisation) this far, relatively...
    pub phase_rel_shift: f64,
    /// ...for this many intervals in a row.
    pub phase_confirm: u32,
    /// Intervals skipped after each change of the active count.
    pub settle: u32,
    /// Intervals averaged into a configuration's profile.
    pub measure: u32,
    /// Intervals in a row the machine must look shared (or free) before the cap moves.
    pub sharing_confirm: u32,
    /// An interval with less CPU use than this (CPUs' worth) is idle: the program waits for
    /// something else (I/O, its caller), so it says nothing about worker counts and is skipped.
    pub idle_cpu: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            lock_low: 0.05,
            lock_high: 0.10,
            lock_delta_low: 0.02,
            lock_delta_high: 0.05,
            rate_delta_low_rel: 0.2,
            rate_delta_low_abs: 20.0,
            rate_delta_rel: 0.5,
            rate_delta_abs: 100.0,
            cpu_gain_low: 0.3,
            throughput_gain: 0.05,
            phase_lock_shift: 0.2,
            phase_rel_shift: 0.5,
            phase_confirm: 5,
            settle: 1,
            measure: 2,
            sharing_confirm: 2,
            idle_cpu: 0.1,
        }
    }
}

/// Why the active count is what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The search starts (at `min`).
    Start,
    /// The search tries more workers: `T_step` (`half == false`) or `T_step / 2` more.
    Try {
        /// Whether the smaller step was taken.
        half: bool,
    },
    /// The last try found no more parallelism (CPU utilisation or throughput did not grow):
    /// back to the best.
    NoMoreParallelism,
    /// The last try ran into lock contention (high and rising, or with sharply more switches
    /// or migrations): back to the best.
    LockContention,
    /// The search reached `max` and kept it.
    ReachedMax,
    /// The profile moved away from the one the choice was made on: search again from `min`.
    PhaseChange,
    /// The machine is shared: capped by the sharing rule.
    Shared,
    /// The machine freed up: back to the count the search wants.
    Freed,
    /// Under the sharing cap the program did less work per second than before it (it reports
    /// progress): back to the count the search wants, and no cap until the machine is free.
    CapRefuted,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reason::Start => "search starts at min",
            Reason::Try { half: false } => "try T_step more",
            Reason::Try { half: true } => "try T_step/2 more",
            Reason::NoMoreParallelism => "no more parallelism: keep best",
            Reason::LockContention => "lock contention: keep best",
            Reason::ReachedMax => "reached max: keep it",
            Reason::PhaseChange => "phase change: search again",
            Reason::Shared => "machine shared: capped",
            Reason::Freed => "machine free: cap lifted",
            Reason::CapRefuted => "cap cost throughput: lifted",
        })
    }
}

/// A change of the active worker count (or the end of a search), and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Active workers from now on.
    pub active: usize,
    /// Why.
    pub reason: Reason,
}

/// The limits of the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Fewest active workers.
    pub min: usize,
    /// Most active workers.
    pub max: usize,
    /// Cores the runtime may use (Algorithm 1's `NumCores`).
    pub cores: usize,
    /// Algorithm 1's `T_step` (at least 1).
    pub step: usize,
}

impl Limits {
    /// Limits for `min..=max` on `cores` cores with 003's proportion of `T_step` (8 of 24
    /// cores): a third of the range, at least 1.
    pub fn new(min: usize, max: usize, cores: usize) -> Limits {
        Limits {
            min,
            max,
            cores,
            step: ((max - min + 1) / 3).max(1),
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    n: u32,
    cpu: f64,
    lock: Option<f64>,
    vcx: f64,
    migr: Option<f64>,
    thr: Option<f64>,
}

fn add_opt(acc: &mut Option<f64>, v: Option<f64>, first: bool) {
    *acc = match (first, *acc, v) {
        (true, _, v) => v,
        (false, Some(a), Some(v)) => Some(a + v),
        _ => None,
    };
}

impl Acc {
    fn add(&mut self, s: &Sample) {
        let first = self.n == 0;
        self.n += 1;
        self.cpu += s.cpu;
        self.vcx += s.voluntary_per_s;
        add_opt(&mut self.lock, s.lock_time, first);
        add_opt(&mut self.migr, s.migrations_per_s, first);
        add_opt(&mut self.thr, s.throughput, first);
    }

    fn profile(&self, active: usize) -> Sample {
        let n = f64::from(self.n.max(1));
        Sample {
            active,
            cpu: self.cpu / n,
            lock_time: self.lock.map(|v| v / n),
            voluntary_per_s: self.vcx / n,
            migrations_per_s: self.migr.map(|v| v / n),
            throughput: self.thr.map(|v| v / n),
            sharing: SharingSignals::default(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Measuring `t` workers; `best` is the profile of the current best (none yet at the start).
    Measuring {
        t: usize,
        best: Option<Sample>,
        skip: u32,
        acc: Acc,
    },
    /// The search is over: `best.active` workers; `drift` intervals in a row looked different.
    Settled { best: Sample, skip: u32, drift: u32 },
}

/// The check of a sharing cap against the throughput before it.
#[derive(Clone, Copy, Debug)]
struct CapCheck {
    before: f64,
    skip: u32,
    acc: Acc,
}

/// The controller (see the module docs).
#[derive(Clone, Debug)]
pub struct Controller {
    limits: Limits,
    th: Thresholds,
    phase: Phase,
    cap: Option<usize>,
    /// Intervals in a row the sharing rule disagreed with the cap in force.
    sharing_votes: u32,
    /// Recent throughput (a moving average) and the active count it was measured at.
    recent: Option<(usize, f64)>,
    /// A cap being checked against the throughput before it.
    cap_check: Option<CapCheck>,
    /// The last cap cost throughput: no cap until the machine is seen free.
    cap_refuted: bool,
}

impl Controller {
    /// A controller that starts its search at `limits.min`.
    pub fn new(limits: Limits, th: Thresholds) -> Controller {
        Controller {
            limits,
            th,
            phase: Phase::Measuring {
                t: limits.min,
                best: None,
                skip: th.settle,
                acc: Acc::default(),
            },
            cap: None,
            sharing_votes: 0,
            recent: None,
            cap_check: None,
            cap_refuted: false,
        }
    }

    /// The first decision (the count to start with).
    pub fn start(&self) -> Decision {
        Decision {
            active: self.limits.min,
            reason: Reason::Start,
        }
    }

    /// The count the search wants now (before the sharing cap).
    pub fn wanted(&self) -> usize {
        match self.phase {
            Phase::Measuring { t, .. } => t,
            Phase::Settled { best, .. } => best.active,
        }
    }

    /// The active count in force (the wanted count under the sharing cap).
    pub fn active(&self) -> usize {
        let w = self.wanted();
        self.cap.map_or(w, |c| c.min(w))
    }

    /// Whether the search is over.
    pub fn settled(&self) -> bool {
        matches!(self.phase, Phase::Settled { .. })
    }

    /// Feeds one interval; returns a decision when the active count changes or a search ends.
    pub fn observe(&mut self, s: &Sample) -> Option<Decision> {
        if let Some(d) = self.sharing(&s.sharing) {
            return Some(d);
        }
        if s.cpu < self.th.idle_cpu {
            return None; // idle: neither a measurement nor a phase change
        }
        if self.cap.is_some_and(|c| c < self.wanted()) {
            return self.check_cap(s); // capped: the search waits for the machine
        }
        if let Some(t) = s.throughput {
            self.recent = Some(match self.recent {
                Some((n, r)) if n == s.active => (n, 0.7 * r + 0.3 * t),
                _ => (s.active, t),
            });
        }
        match &mut self.phase {
            Phase::Measuring { skip, acc, .. } => {
                if *skip > 0 {
                    *skip -= 1;
                    return None;
                }
                acc.add(s);
                if acc.n < self.th.measure {
                    return None;
                }
                self.measured()
            }
            Phase::Settled { best, skip, drift } => {
                if *skip > 0 {
                    *skip -= 1;
                    return None;
                }
                if shifted(&self.th, best, s) {
                    *drift += 1;
                } else {
                    *drift = 0;
                }
                if *drift < self.th.phase_confirm {
                    return None;
                }
                self.phase = self.measuring(self.limits.min, None);
                self.cap_refuted = false;
                Some(Decision {
                    active: self.active(),
                    reason: Reason::PhaseChange,
                })
            }
        }
    }

    fn measuring(&self, t: usize, best: Option<Sample>) -> Phase {
        Phase::Measuring {
            t,
            best,
            skip: self.th.settle,
            acc: Acc::default(),
        }
    }

    fn settle(&mut self, best: Sample, reason: Reason) -> Option<Decision> {
        self.phase = Phase::Settled {
            best,
            skip: self.th.settle,
            drift: 0,
        };
        Some(Decision {
            active: self.active(),
            reason,
        })
    }

    /// A configuration's measurement is complete: Algorithm 1's Terminate / ComputeNextT.
    fn measured(&mut self) -> Option<Decision> {
        let Phase::Measuring { t, best, acc, .. } = self.phase else {
            return None;
        };
        let tried = acc.profile(t);
        let l = self.limits;
        let Some(best) = best else {
            // The first run (T_min): its profile is the first best.
            if t >= l.max {
                return self.settle(tried, Reason::ReachedMax);
            }
            return self.try_next(tried, tried, t);
        };
        if let Some(reason) = terminate(&self.th, &l, &best, &tried) {
            return self.settle(best, reason);
        }
        if t >= l.max {
            return self.settle(tried, Reason::ReachedMax);
        }
        self.try_next(best, tried, t)
    }

    /// Accepts `tried` as the best and moves on by `T_step` or `T_step / 2`.
    fn try_next(&mut self, prev: Sample, tried: Sample, t: usize) -> Option<Decision> {
        let half = !full_step(&self.th, &self.limits, &prev, &tried);
        let dt = if half {
            (self.limits.step / 2).max(1)
        } else {
            self.limits.step
        };
        let next = (t + dt).min(self.limits.max);
        self.phase = self.measuring(next, Some(tried));
        Some(Decision {
            active: self.active(),
            reason: Reason::Try { half },
        })
    }

    /// Applies the sharing rule; a decision when the cap in force moves.
    fn sharing(&mut self, s: &SharingSignals) -> Option<Decision> {
        let wanted = self.wanted();
        let before = self.active();
        let mut proposed = sharing_cap(s, self.limits.min, wanted, before);
        if self.cap_refuted {
            if proposed.is_none_or(|c| c >= wanted) {
                self.cap_refuted = false; // the machine is free again
            } else {
                proposed = None; // the last cap cost throughput: none until then
            }
        }
        if proposed == self.cap {
            self.sharing_votes = 0;
            return None;
        }
        self.sharing_votes += 1;
        if self.sharing_votes < self.th.sharing_confirm {
            return None;
        }
        self.sharing_votes = 0;
        let was_capped = self.cap.is_some_and(|c| c < wanted);
        self.cap = proposed;
        let after = self.active();
        if after == before {
            return None;
        }
        let reason = if self.cap.is_some_and(|c| c < wanted) {
            Reason::Shared
        } else {
            Reason::Freed
        };
        // A cap is checked against the throughput measured at the wanted count just before.
        self.cap_check = match (reason, self.recent) {
            (Reason::Shared, Some((n, t))) if n == wanted && t > 0.0 => Some(CapCheck {
                before: t,
                skip: self.th.settle,
                acc: Acc::default(),
            }),
            _ => None,
        };
        if was_capped && reason == Reason::Freed {
            // Back to the wanted count: measure it afresh.
            self.phase = match self.phase {
                Phase::Measuring { t, best, .. } => self.measuring(t, best),
                Phase::Settled { best, .. } => Phase::Settled {
                    best,
                    skip: self.th.settle,
                    drift: 0,
                },
            };
        }
        Some(Decision {
            active: after,
            reason,
        })
    }
}

impl Controller {
    /// While capped: measures the throughput under the cap; lifts the cap when it is lower than
    /// before it by more than [`Thresholds::throughput_gain`].
    fn check_cap(&mut self, s: &Sample) -> Option<Decision> {
        let ck = self.cap_check.as_mut()?;
        if ck.skip > 0 {
            ck.skip -= 1;
            return None;
        }
        ck.acc.add(s);
        if ck.acc.n < self.th.measure {
            return None;
        }
        let before = ck.before;
        let under = ck.acc.profile(s.active).throughput;
        self.cap_check = None;
        if under.is_some_and(|u| u >= before * (1.0 - self.th.throughput_gain)) {
            return None; // the cap costs nothing measurable: keep it
        }
        self.cap = None;
        self.cap_refuted = true;
        self.recent = None;
        Some(Decision {
            active: self.active(),
            reason: Reason::CapRefuted,
        })
    }
}

/// `new` rose sharply over `old` (high ΔVCX, ΔMIGR).
fn rose_sharply(th: &Thresholds, old: f64, new: f64) -> bool {
    new - old >= (th.rate_delta_rel * old).max(th.rate_delta_abs)
}

/// `new` rose slowly over `old`, or fell (low ΔVCX, ΔMIGR).
fn rose_slowly(th: &Thresholds, old: f64, new: f64) -> bool {
    new - old < (th.rate_delta_low_rel * old).max(th.rate_delta_low_abs)
}

/// LOCK is low (unknown counts as low: no lock contention seen).
fn lock_low(th: &Thresholds, p: &Sample) -> bool {
    p.lock_time.is_none_or(|l| l < th.lock_low)
}

fn lock_high(th: &Thresholds, p: &Sample) -> bool {
    p.lock_time.is_some_and(|l| l >= th.lock_high)
}

fn lock_rising(th: &Thresholds, best: &Sample, tried: &Sample) -> bool {
    match (best.lock_time, tried.lock_time) {
        (Some(b), Some(t)) => t - b >= th.lock_delta_high,
        _ => false,
    }
}

fn migrations_rising(th: &Thresholds, best: &Sample, tried: &Sample) -> bool {
    match (best.migrations_per_s, tried.migrations_per_s) {
        (Some(b), Some(t)) => rose_sharply(th, b, t),
        _ => false,
    }
}

/// Algorithm 1's Terminate: `Some(why)` to stop at `best`.
///
/// Where the program reports progress, throughput alone decides: lock time and switch rates are
/// 003's stand-ins for a throughput it cannot see, and they mislead where the program's phases
/// are shorter than a measurement (a lock-bound burst inside a fork-join run read as contention
/// and kept a 2-worker-friendly program at 1 worker: the bench's `phases`, 2.01× the best fixed
/// count).
fn terminate(th: &Thresholds, l: &Limits, best: &Sample, tried: &Sample) -> Option<Reason> {
    let added = tried.active.saturating_sub(best.active).max(1) as f64;
    if let (Some(b), Some(t)) = (best.throughput, tried.throughput) {
        if b > 0.0 {
            return (t < b * (1.0 + th.throughput_gain)).then_some(Reason::NoMoreParallelism);
        }
    }
    if tried.cpu - best.cpu < th.cpu_gain_low * added {
        return Some(Reason::NoMoreParallelism);
    }
    if lock_high(th, tried) {
        let vcx = rose_sharply(th, best.voluntary_per_s, tried.voluntary_per_s);
        if lock_rising(th, best, tried)
            || (tried.active <= l.cores && vcx)
            || (tried.active > l.cores && migrations_rising(th, best, tried))
        {
            return Some(Reason::LockContention);
        }
    }
    None
}

/// Algorithm 1's ComputeNextT: whether the next step is a full `T_step` (low LOCK, or low
/// ΔVCX — ΔMIGR above the core count — or high LOCK with low ΔLOCK).
fn full_step(th: &Thresholds, l: &Limits, best: &Sample, tried: &Sample) -> bool {
    let slow = if tried.active <= l.cores {
        rose_slowly(th, best.voluntary_per_s, tried.voluntary_per_s)
    } else {
        match (best.migrations_per_s, tried.migrations_per_s) {
            (Some(b), Some(t)) => rose_slowly(th, b, t),
            _ => true,
        }
    };
    let lock_delta_low = match (best.lock_time, tried.lock_time) {
        (Some(b), Some(t)) => t - b < th.lock_delta_low,
        _ => true,
    };
    lock_low(th, tried) || slow || (lock_high(th, tried) && lock_delta_low)
}

/// Whether interval `s` differs from the chosen profile enough to count towards a phase change.
fn shifted(th: &Thresholds, best: &Sample, s: &Sample) -> bool {
    let rel = |a: f64, b: f64| (a - b).abs() > th.phase_rel_shift * a.abs().max(b.abs());
    let lock = matches!((best.lock_time, s.lock_time), (Some(a), Some(b)) if (a - b).abs() >= th.phase_lock_shift);
    let thr = matches!((best.throughput, s.throughput), (Some(a), Some(b)) if rel(a, b));
    let cpu = rel(best.cpu, s.cpu) && (best.cpu - s.cpu).abs() >= 0.5;
    lock || thr || cpu
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
