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
//! Where the program reports progress and a try's throughput gain lands within
//! [`Thresholds::recheck_band`] of [`Thresholds::throughput_gain`] (too close to call on one
//! measurement each), the best count is measured again before the judgement, which then uses
//! the mean of its two measurements: best–tried–best, so a load that drifts during the search
//! cancels out (reason `Recheck`).
//!
//! **Fourth round: large ranges and noise** (the rules in [`Thresholds`]' docs, "Noise" and
//! "Large ranges"; `search_end.rs`, `measured.rs`). Where the program reports progress, a
//! comparison within the measured noise of the threshold is measured longer (and
//! best–tried–best); on a large range (`T_step ≥ 4`) the climb at most doubles the count, and
//! after it stops the counts between the best and its measured neighbours are tried
//! (reason `Refine`); before settling, a count this search measured doing better than the
//! chosen one is measured again and the better kept (`Rival`, `BestMeasured`). Noiseless
//! profiles on ranges below 12 workers get Algorithm 1's decisions as before.
//!
//! Unlike 003 (which reran the program for each try), this runs online and keeps watching after
//! the search (`watch.rs`; the rule and its numbers are in [`Thresholds`]' docs): when the
//! settled intervals move away from their own running mean by more than a floor and
//! [`Thresholds::phase_spread_k`] times their running deviation for
//! [`Thresholds::phase_confirm`] intervals in a row, the phase has changed (003 §5.2.2). The
//! search then starts again **around the settled count**, not from `min`: the shifted intervals
//! but the first (which may straddle the change) are the settled count's profile in the new
//! phase; `T_step` fewer workers are tried first and
//! kept (and fewer still tried) while the count above does no better by Terminate's rules;
//! when the fewer do worse, the search goes back up and climbs by Algorithm 1 from the settled
//! count (at `min`, it climbs at once). A re-search thus costs one try at a neighbouring count
//! where the old choice still holds; and one that ends where it started doubles the shifted
//! intervals the next phase change needs (up to [`Thresholds::phase_backoff`] times), so a
//! noisy machine's false alarms grow rarer.
//!
//! # Sharing the machine
//!
//! Idle intervals (less than [`Thresholds::idle_cpu`] CPUs busy: the program waits for its
//! caller or for I/O; or, where the program reports progress, none reported in the interval:
//! the CPU time went to something else, e.g. its caller's own work) are skipped: they are
//! neither a measurement nor a phase change.
//!
//! Every interval the sharing rule (`sharing.rs`) may cap the count below what the search
//! wants; while capped, the search is paused (its measurements would be the other programs'),
//! and when the cap lifts the runtime returns to the count it wanted and re-measures it. Where
//! the program reports progress, the work done per second is the judge instead:
//!
//! - no cap while a search runs (its throughput comparisons are made on the shared machine);
//! - no cap at or below a count that this search measured doing less work than a higher one
//!   while the machine looked oversubscribed;
//! - any other cap is checked: if the throughput under it is lower than at the wanted count
//!   just before (by more than [`Thresholds::throughput_gain`]), the cap is lifted and no new one
//!   is set until the machine is seen free (or the phase changes).

use super::measured::Measured;
use super::rules::{close_call, full_step, terminate};
use super::sharing::sharing_cap;
use super::watch::Watch;

pub use super::decision::{Decision, Reason};
pub(crate) use super::sample::Acc;
pub use super::sample::Sample;
pub use super::thresholds::{Limits, Thresholds};

/// Which way a search goes.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Algorithm 1: `best` is the profile of the best count below `t` (none at the start).
    Climb { best: Option<Sample> },
    /// A re-search: `t` is `T_step` fewer than `upper`, the profile of the best so far.
    Fewer { upper: Sample },
    /// A close call between the best (`t`) and `tried` (more workers): the best is measured
    /// again so that the comparison is best–tried–best (a drifting load cancels out).
    Recheck { tried: Sample },
    /// The climb stopped at `best` (for `why`) on a large range: `t` lies between it and a
    /// measured neighbour.
    Refine { best: Sample, why: Reason },
    /// The search would end at `best` (for `why`), but `t` measured better: measured again.
    Rival { best: Sample, why: Reason },
}

// One per controller, replaced a few times a second: the size difference between the variants
// (a measurement carries up to two profiles) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Measuring `t` workers.
    Measuring {
        t: usize,
        mode: Mode,
        skip: u32,
        acc: Acc,
    },
    /// The search is over: `best.active` workers (the watch is in `Controller::watch`).
    Settled { best: Sample, skip: u32 },
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
    /// The phase-change watch while settled.
    watch: Option<Watch>,
    cap: Option<usize>,
    /// Intervals in a row the sharing rule disagreed with the cap in force.
    sharing_votes: u32,
    /// Recent throughput (a moving average) and the active count it was measured at.
    recent: Option<(usize, f64)>,
    /// A cap being checked against the throughput before it.
    cap_check: Option<CapCheck>,
    /// The last cap cost throughput: no cap until the machine is seen free.
    cap_refuted: bool,
    /// The highest count this search measured doing less work than a higher one while the
    /// machine looked oversubscribed: no sharing cap goes down to it.
    slower_when_shared: Option<usize>,
    /// Shifted intervals in a row that make a phase change now (see `settle`).
    confirm: u32,
    /// The settled count a running re-search started from.
    research_from: Option<usize>,
    /// What this search measured (where the program reports progress) and the noise.
    measured: Measured,
    /// Counts tried between the best and its neighbours in this search.
    refined: u32,
    /// Whether this search measured a rival of its best again.
    rival_checked: bool,
}

impl Controller {
    /// A controller that starts its search at `limits.min`.
    pub fn new(limits: Limits, th: Thresholds) -> Controller {
        Controller {
            limits,
            th,
            phase: Phase::Measuring {
                t: limits.min,
                mode: Mode::Climb { best: None },
                skip: th.settle,
                acc: Acc::default(),
            },
            watch: None,
            cap: None,
            sharing_votes: 0,
            recent: None,
            cap_check: None,
            cap_refuted: false,
            slower_when_shared: None,
            confirm: th.phase_confirm,
            research_from: None,
            measured: Measured::default(),
            refined: 0,
            rival_checked: false,
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
        if let Some(d) = self.sharing(s) {
            return Some(d);
        }
        if s.cpu < self.th.idle_cpu || s.throughput == Some(0.0) {
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
        let shared = s.sharing.oversubscribed(self.wanted(), s.active);
        match &mut self.phase {
            Phase::Measuring { skip, acc, .. } => {
                if *skip > 0 {
                    *skip -= 1;
                    return None;
                }
                acc.add(s, shared);
                if acc.n < self.th.measure || self.measure_longer() {
                    return None;
                }
                self.measured()
            }
            Phase::Settled { skip, .. } => {
                if *skip > 0 {
                    *skip -= 1;
                    return None;
                }
                let watch = self.watch.as_mut()?;
                let now = watch.observe(&self.th, s, self.confirm)?;
                self.phase_changed(now)
            }
        }
    }

    /// A phase change: search again around the settled count, whose profile in the new phase
    /// is `now` — first `T_step` fewer (unless at `min`), then more.
    fn phase_changed(&mut self, now: Sample) -> Option<Decision> {
        self.cap_refuted = false;
        self.slower_when_shared = None;
        self.watch = None;
        self.research_from = Some(now.active);
        self.new_search();
        let mut shifted = Acc::default();
        shifted.add(&now, false);
        self.measured.add(now.active, &shifted);
        let l = self.limits;
        let (t, mode) = if now.active > l.min {
            let t = now.active.saturating_sub(l.step).max(l.min);
            (t, Mode::Fewer { upper: now })
        } else if now.active < l.max {
            let t = l.next_try(now.active, false);
            (t, Mode::Climb { best: Some(now) })
        } else {
            // min == max: nothing to search.
            self.watch = Some(Watch::new(&self.th, &now));
            return None;
        };
        self.phase = self.measuring(t, mode);
        Some(Decision {
            active: self.active(),
            reason: Reason::PhaseChange,
        })
    }

    fn measuring(&self, t: usize, mode: Mode) -> Phase {
        Phase::Measuring {
            t,
            mode,
            skip: self.th.settle,
            acc: Acc::default(),
        }
    }

    /// Ends a search at `best`. A re-search that ended where it started was a false alarm
    /// (or a change that needs no other count): the next phase change needs twice as many
    /// shifted intervals, up to [`Thresholds::phase_backoff`] times `phase_confirm`; one that
    /// moved the count resets that.
    fn settle(&mut self, best: Sample, reason: Reason) -> Option<Decision> {
        if let Some(from) = self.research_from.take() {
            let most = self.th.phase_confirm * self.th.phase_backoff.max(1);
            self.confirm = if best.active == from {
                (self.confirm * 2).min(most)
            } else {
                self.th.phase_confirm
            };
        }
        self.phase = Phase::Settled {
            best,
            skip: self.th.settle,
        };
        self.watch = Some(Watch::new(&self.th, &best));
        Some(Decision {
            active: self.active(),
            reason,
        })
    }

    /// Notes that `slower` did less work than a higher count, if the machine looked shared.
    fn note_slower(&mut self, slower: &Sample, shared: bool) {
        if shared && slower.throughput.is_some() {
            self.slower_when_shared = self.slower_when_shared.max(Some(slower.active));
        }
    }

    /// Starts a new search's records.
    fn new_search(&mut self) {
        self.measured.new_search();
        self.refined = 0;
        self.rival_checked = false;
    }

    /// The profile of everything measured at `t` workers in this search (`fallback` where
    /// nothing was).
    fn profile(&self, t: usize, fallback: Sample) -> Sample {
        let a = self.measured.at(t, None);
        if a.n == 0 {
            fallback
        } else {
            a.profile(t)
        }
    }

    /// A configuration's measurement is complete: Algorithm 1's Terminate / ComputeNextT, the
    /// re-search's step down, or the checks at the end of a search.
    fn measured(&mut self) -> Option<Decision> {
        let Phase::Measuring { t, mode, acc, .. } = self.phase else {
            return None;
        };
        self.measured.add(t, &acc);
        let tried = self.profile(t, acc.profile(t));
        let l = self.limits;
        match mode {
            Mode::Climb { best: None } => {
                // The first run (T_min): its profile is the first best.
                if t >= l.max {
                    return self.conclude(tried, Reason::ReachedMax, false);
                }
                self.try_next(tried, tried, t)
            }
            Mode::Climb { best: Some(best) } => {
                let best = self.profile(best.active, best);
                if close_call(&self.th, &best, &tried) || self.within_noise(&best, &tried) {
                    self.phase = self.measuring(best.active, Mode::Recheck { tried });
                    return Some(Decision {
                        active: self.active(),
                        reason: Reason::Recheck,
                    });
                }
                self.climbed(best, tried, acc.mostly_shared())
            }
            Mode::Recheck { tried } => {
                // The best's two measurements, merged.
                let tried = self.profile(tried.active, tried);
                self.climbed(self.profile(t, tried), tried, acc.mostly_shared())
            }
            Mode::Fewer { upper } => {
                let upper = self.profile(upper.active, upper);
                if let Some(reason) = terminate(&self.th, &l, &tried, &upper) {
                    // The count above did no better: the fewer are kept, and fewer still tried.
                    if t > l.min {
                        let next = t.saturating_sub(l.step).max(l.min);
                        self.phase = self.measuring(next, Mode::Fewer { upper: tried });
                        return Some(Decision {
                            active: self.active(),
                            reason: Reason::TryFewer,
                        });
                    }
                    return self.conclude(tried, reason, false);
                }
                // The fewer did less: back to the count above, then Algorithm 1 from there.
                self.note_slower(&tried, acc.mostly_shared());
                if upper.active >= l.max {
                    return self.conclude(upper, Reason::FewerWereSlower, false);
                }
                self.try_next(upper, upper, upper.active)
            }
            Mode::Refine { best, why } => {
                let (best, why) = self.better_of(best, tried, why, true);
                self.conclude(best, why, true)
            }
            Mode::Rival { best, why } => {
                let (best, why) = self.better_of(best, tried, why, false);
                self.settle(best, why)
            }
        }
    }

    /// Algorithm 1's judgement of `tried` (more workers) against `best`: settle at `best`, or
    /// accept `tried` and stop at `max` or go on.
    fn climbed(&mut self, best: Sample, tried: Sample, shared: bool) -> Option<Decision> {
        if let Some(reason) = terminate(&self.th, &self.limits, &best, &tried) {
            return self.conclude(best, reason, true);
        }
        self.note_slower(&best, shared);
        if tried.active >= self.limits.max {
            return self.conclude(tried, Reason::ReachedMax, false);
        }
        self.try_next(best, tried, tried.active)
    }

    /// Accepts `tried` as the best and moves on by `T_step` or `T_step / 2`.
    fn try_next(&mut self, prev: Sample, tried: Sample, t: usize) -> Option<Decision> {
        let half = !full_step(&self.th, &self.limits, &prev, &tried);
        let next = self.limits.next_try(t, half);
        let best = Some(tried);
        self.phase = self.measuring(next, Mode::Climb { best });
        Some(Decision {
            active: self.active(),
            reason: Reason::Try { half },
        })
    }

    /// The cap the sharing rule proposes for interval `s`. Where the program reports progress,
    /// none while a search runs (its throughput comparison is made on the shared machine and
    /// judges it), and none at or below a count this search measured doing less work on the
    /// shared machine.
    fn proposed_cap(&self, s: &Sample, wanted: usize) -> Option<usize> {
        let proposed = sharing_cap(&s.sharing, self.limits.min, wanted, self.active())?;
        if s.throughput.is_some() && !self.settled() {
            return None;
        }
        let floor = self.slower_when_shared.map_or(0, |c| c + 1);
        Some(proposed.max(floor)).filter(|&c| c < wanted)
    }

    /// Applies the sharing rule; a decision when the cap in force moves.
    fn sharing(&mut self, s: &Sample) -> Option<Decision> {
        let wanted = self.wanted();
        let before = self.active();
        let mut proposed = self.proposed_cap(s, wanted);
        if self.cap_refuted {
            if proposed.is_none() {
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
            match self.phase {
                Phase::Measuring { t, mode, .. } => self.phase = self.measuring(t, mode),
                Phase::Settled { ref mut skip, .. } => {
                    *skip = self.th.settle;
                    if let Some(w) = &mut self.watch {
                        w.restart();
                    }
                }
            }
        }
        Some(Decision {
            active: after,
            reason,
        })
    }

    /// While capped: measures the throughput under the cap; lifts the cap when it is lower than
    /// before it by more than [`Thresholds::throughput_gain`].
    fn check_cap(&mut self, s: &Sample) -> Option<Decision> {
        let ck = self.cap_check.as_mut()?;
        if ck.skip > 0 {
            ck.skip -= 1;
            return None;
        }
        ck.acc.add(s, true);
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

mod search_end;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod research_tests;

#[cfg(test)]
mod search_model_tests;
