//! Scripted profiles for the re-search around the settled count, the noise-tolerant phase
//! watch, and the sharing cap where the program reports progress.

use super::tests::{
    controller, counts, decided, quiet, run_until_settled, settled_with_progress, shared_machine,
    under,
};
use super::*;

/// A program that does `thr(t)` units/s at `t` workers, busy on `t` CPUs.
fn doing(thr: impl Fn(usize) -> f64) -> impl Fn(usize) -> Sample {
    move |t| Sample {
        throughput: Some(thr(t)),
        ..quiet(t as f64)
    }
}

/// Feeds `n` intervals of `script` at the count in force; returns the decisions.
fn feed(c: &mut Controller, script: &dyn Fn(usize) -> Sample, n: usize) -> Vec<Decision> {
    let mut out = Vec::new();
    for _ in 0..n {
        let s = Sample {
            active: c.active(),
            ..script(c.active())
        };
        out.extend(c.observe(&s));
    }
    out
}

/// Feeds a settled controller the new phase `now` through the phase change and the
/// re-search until it settles; returns the decisions.
fn through_a_phase_change(c: &mut Controller, now: &dyn Fn(usize) -> Sample) -> Vec<Decision> {
    let mut ds = feed(c, now, Thresholds::default().phase_confirm as usize);
    ds.extend(run_until_settled(c, now, 100));
    ds
}

/// Settled at 5 of 1..=8 (`T_step` 2) on a program that scales to 5 workers.
fn settled_at_5() -> Controller {
    let mut c = controller(1, 8, 8);
    let ds = run_until_settled(&mut c, &doing(|t| 1000.0 * t.min(5) as f64), 100);
    assert_eq!(ds.last().copied(), decided(5, Reason::NoMoreParallelism));
    c
}

#[test]
fn a_phase_change_searches_around_the_settled_count_not_from_min() {
    let mut c = settled_at_5();
    // The program now scales to 7 workers, at 600 units/s each: 3000/s at the settled 5.
    let now = doing(|t| 600.0 * t.min(7) as f64);
    let ds = through_a_phase_change(&mut c, &now);
    assert_eq!(
        counts(&ds),
        vec![
            (3, Reason::PhaseChange),         // one T_step fewer than 5, not min
            (7, Reason::Try { half: false }), // 3 did less than 5: climb from 5
            (8, Reason::Try { half: false }),
            (7, Reason::Recheck), // 8 did exactly as much as 7: too close to call at once
            (7, Reason::NoMoreParallelism),
        ]
    );
}

#[test]
fn a_re_search_keeps_fewer_while_the_count_above_does_no_better() {
    let mut c = settled_at_5();
    // The program turns lock-bound: 1000 units/s whatever the count.
    let now = doing(|_| 1000.0);
    let ds = through_a_phase_change(&mut c, &now);
    assert_eq!(
        counts(&ds),
        vec![
            (3, Reason::PhaseChange),
            (1, Reason::TryFewer),
            (1, Reason::NoMoreParallelism),
        ]
    );
}

#[test]
fn at_max_a_re_search_tries_one_step_fewer_and_comes_back() {
    // 1..=2 (this machine's case): settled at 2; the phase changes, 2 still does more.
    let mut c = settled_with_progress(2000.0);
    let now = doing(|t| 700.0 * t as f64);
    let ds = through_a_phase_change(&mut c, &now);
    assert_eq!(
        counts(&ds),
        vec![(1, Reason::PhaseChange), (2, Reason::FewerWereSlower)]
    );
}

#[test]
fn background_load_with_unchanged_throughput_is_no_phase_change() {
    let mut c = settled_with_progress(2000.0);
    // Other programs take half our CPU time; our lock holders get preempted, so lock time and
    // involuntary switches rise; the work done per second stays (within 3 %).
    let mut sharing = shared_machine(0.0, 2.0);
    sharing.involuntary_per_s = 500.0;
    for i in 0..40 {
        let s = Sample {
            active: 2,
            lock_time: Some(0.5),
            throughput: Some(if i % 2 == 0 { 1940.0 } else { 2060.0 }),
            ..under(2, sharing, 0.9)
        };
        assert_eq!(c.observe(&s), None, "interval {i}");
    }
    assert!(c.settled() && c.active() == 2);
}

#[test]
fn the_phase_watch_scales_with_the_programs_own_spread() {
    let thr = |v: f64| Sample {
        active: 2,
        throughput: Some(v),
        ..quiet(2.0)
    };
    // A steady program (±1 %): a lasting 30 % drop is a phase change.
    let mut c = settled_with_progress(2000.0);
    for i in 0..10 {
        let v = if i % 2 == 0 { 1980.0 } else { 2020.0 };
        assert_eq!(c.observe(&thr(v)), None);
    }
    let ds: Vec<Decision> = (0..5).filter_map(|_| c.observe(&thr(1400.0))).collect();
    assert_eq!(counts(&ds), vec![(1, Reason::PhaseChange)]);

    // A noisy one (±25 % every other interval): the same drop is within its spread...
    let mut c = settled_with_progress(2000.0);
    for i in 0..20 {
        let v = if i % 2 == 0 { 1500.0 } else { 2500.0 };
        assert_eq!(c.observe(&thr(v)), None, "noise, interval {i}");
    }
    for i in 0..10 {
        assert_eq!(
            c.observe(&thr(1400.0)),
            None,
            "within the spread, interval {i}"
        );
    }
    // ...and a collapse beyond it is still seen.
    let ds: Vec<Decision> = (0..5).filter_map(|_| c.observe(&thr(100.0))).collect();
    assert_eq!(counts(&ds), vec![(1, Reason::PhaseChange)]);
}

#[test]
fn a_search_on_a_shared_machine_is_judged_by_throughput_not_capped() {
    // Two other busy threads on 2 CPUs and a lock-bound profile: the sharing rule alone would
    // cap the runtime at 1. But with 2 workers the program does 30 % more.
    let mut c = controller(1, 2, 2);
    let shared = |t: usize| Sample {
        throughput: Some(if t == 1 { 1000.0 } else { 1300.0 }),
        ..under(t, shared_machine(0.9, 2.0), t as f64)
    };
    assert!(sharing_cap(&shared(2).sharing, 1, 2, 2) == Some(1));
    let ds = run_until_settled(&mut c, &shared, 100);
    assert_eq!(
        counts(&ds),
        vec![(2, Reason::Try { half: false }), (2, Reason::ReachedMax)]
    );
    // Settled: 1 measured slower on this shared machine, so no cap goes down to it.
    assert_eq!(feed(&mut c, &shared, 30), vec![]);
    assert_eq!(c.active(), 2);
}

#[test]
fn a_cap_still_applies_where_fewer_did_not_measure_slower() {
    // The same shared machine, but 1 worker does as much as 2: the search keeps 1 (no cap
    // needed); a program settled at 2 before the machine was shared gets the cap and its check.
    let mut c = controller(1, 2, 2);
    let shared = |t: usize| Sample {
        throughput: Some(1000.0),
        ..under(t, shared_machine(0.9, 2.0), t as f64)
    };
    let ds = run_until_settled(&mut c, &shared, 100);
    assert_eq!(ds.last().copied(), decided(1, Reason::NoMoreParallelism));
    let mut c = settled_with_progress(2000.0);
    let busy = Sample {
        throughput: Some(2000.0),
        ..under(2, shared_machine(0.9, 2.0), 2.0)
    };
    assert_eq!(c.observe(&busy), None);
    assert_eq!(c.observe(&busy), decided(1, Reason::Shared));
}

#[test]
fn busy_intervals_without_progress_are_idle_where_progress_is_reported() {
    // The caller's own work (a bench harness's analysis, say) keeps a CPU busy while the
    // runtime's green threads report nothing: no phase change, no measurement.
    let mut c = settled_with_progress(2000.0);
    for _ in 0..20 {
        let s = Sample {
            active: 2,
            throughput: Some(0.0),
            ..quiet(1.0)
        };
        assert_eq!(c.observe(&s), None);
    }
    assert!(c.settled() && c.active() == 2);
}

#[test]
fn at_min_a_re_search_climbs_at_once() {
    // Settled at 1 of 1..=2 on a lock-bound program (2 workers do no more)...
    let mut c = controller(1, 2, 2);
    let ds = run_until_settled(&mut c, &doing(|_| 1000.0), 100);
    assert_eq!(ds.last().copied(), decided(1, Reason::NoMoreParallelism));
    // ...which turns scalable, with more work per second at the same count.
    let now = doing(|t| 1600.0 * t as f64);
    let ds = through_a_phase_change(&mut c, &now);
    assert_eq!(
        counts(&ds),
        vec![(2, Reason::PhaseChange), (2, Reason::ReachedMax)]
    );
}

/// Feeds `n` intervals at the count in force (2 in the tests) doing `thr(i)` units/s in the
/// `i`-th; returns the decisions.
fn at_2(c: &mut Controller, thr: impl Fn(usize) -> f64, n: usize) -> Vec<Decision> {
    let interval = std::cell::Cell::new(0);
    let script = |t: usize| {
        let i = interval.replace(interval.get() + 1);
        Sample {
            throughput: Some(thr(i)),
            ..quiet(t as f64)
        }
    };
    feed(c, &script, n)
}

#[test]
fn shifts_that_swap_sides_are_noise_not_a_phase_change() {
    // Right after settling (no spread known yet): ±40 % in turn, every interval past the floor.
    let mut c = settled_with_progress(2000.0);
    let swinging = |i: usize| if i.is_multiple_of(2) { 1200.0 } else { 2800.0 };
    assert_eq!(at_2(&mut c, swinging, 40), vec![]);
    assert!(c.settled() && c.active() == 2);
}

#[test]
fn a_re_search_that_changed_nothing_makes_the_next_phase_change_wait_longer() {
    let confirm = Thresholds::default().phase_confirm as usize;
    let mut c = settled_with_progress(2000.0);
    // A false alarm: a dip (the machine got busy for a while); 1 worker still does less.
    let dip = |t: usize| 500.0 * t as f64;
    let mut ds = feed(&mut c, &doing(dip), confirm);
    ds.extend(run_until_settled(&mut c, &doing(dip), 100));
    assert_eq!(
        counts(&ds),
        vec![(1, Reason::PhaseChange), (2, Reason::FewerWereSlower)]
    );
    // Steady at that level (the re-search's profile seeds the watch) while the baseline forms...
    assert_eq!(at_2(&mut c, |_| 1000.0, 10), vec![]);
    // ...the same dip now needs twice the intervals.
    assert_eq!(at_2(&mut c, |_| 400.0, 2 * confirm - 1), vec![]);
    assert_eq!(
        counts(&at_2(&mut c, |_| 400.0, 1)),
        vec![(1, Reason::PhaseChange)]
    );
}

#[test]
fn a_close_gain_is_measured_best_tried_best_before_it_is_judged() {
    // 4 % more with 2 workers: within the recheck band of the 2 % threshold. Measured again
    // at 1, still 4 %: 2 is kept.
    let mut c = controller(1, 2, 2);
    let ds = run_until_settled(
        &mut c,
        &doing(|t| if t == 1 { 1000.0 } else { 1040.0 }),
        100,
    );
    assert_eq!(
        counts(&ds),
        vec![
            (2, Reason::Try { half: false }),
            (1, Reason::Recheck),
            (2, Reason::ReachedMax)
        ]
    );
    // A clear gain or loss is judged at once.
    let mut c = controller(1, 2, 2);
    let ds = run_until_settled(
        &mut c,
        &doing(|t| if t == 1 { 1000.0 } else { 1200.0 }),
        100,
    );
    assert_eq!(counts(&ds).last(), Some(&(2, Reason::ReachedMax)));
    assert_eq!(ds.len(), 2, "{ds:?}");
}

#[test]
fn a_load_drifting_during_the_search_cancels_out() {
    // 1 and 2 workers do the same, but the work per second rises 1.5 % an interval (other
    // programs leaving, say): measured once each, 2 looks 4.4 % faster (above the threshold).
    let interval = std::cell::Cell::new(0u32);
    let drifting = |_t: usize| {
        let i = interval.get();
        interval.set(i + 1);
        Sample {
            throughput: Some(1000.0 * (1.0 + 0.015 * f64::from(i))),
            ..quiet(1.5)
        }
    };
    let mut c = controller(1, 2, 2);
    let ds = run_until_settled(&mut c, &drifting, 100);
    assert_eq!(
        counts(&ds),
        vec![
            (2, Reason::Try { half: false }),
            (1, Reason::Recheck),
            (1, Reason::NoMoreParallelism)
        ]
    );
}

/// The report's sequence (`tools/report`, `threads_003`): a lock-bound program settled at
/// 1 of 1..=2 turns into a fork-join one that does twice the work at 2. The first interval
/// that shifts holds the end of the old phase too (here 7.5 times the new phase's rate); were it
/// part of the new phase's profile, the try at 2 would read as no gain and the search would keep
/// 1 (it did, in 4 of 6 report runs). It is left out.
#[test]
fn the_interval_that_straddles_a_phase_change_is_not_the_new_phase_profile() {
    let mut c = controller(1, 2, 2);
    c.start();
    let mut after = Vec::new();
    for k in 0..40usize {
        let a = c.active();
        let s = if k < 9 {
            // Lock-bound: one worker does a little more than two.
            Sample {
                throughput: Some(if a == 1 { 970_000.0 } else { 940_000.0 }),
                ..quiet(1.0)
            }
        } else if k == 9 {
            // Part lock-bound, part fork-join (measured: 123,824 units/s).
            Sample {
                throughput: Some(123_824.0),
                ..quiet(1.0)
            }
        } else {
            // Fork-join: 16,500 units/s a worker, 4 % lost at 2.
            Sample {
                throughput: Some(16_500.0 * a as f64 * if a == 2 { 0.96 } else { 1.0 }),
                ..quiet(if a == 1 { 1.0 } else { 1.85 })
            }
        };
        if let Some(d) = c.observe(&Sample { active: a, ..s }) {
            if k >= 9 {
                after.push((d.active, d.reason));
            }
        }
    }
    assert_eq!(
        after,
        vec![(2, Reason::PhaseChange), (2, Reason::ReachedMax)],
        "the re-search keeps 2 workers for the fork-join phase"
    );
}
