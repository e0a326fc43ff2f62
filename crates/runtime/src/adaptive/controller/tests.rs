//! Scripted profiles through the controller: Algorithm 1's cases, the phase-change watch and
//! the sharing overlay.

use super::*;
use crate::adaptive::sharing::SharingSignals;

/// Feeds the controller samples from `script` (what the program shows with `t` active
/// workers, at whatever count the controller runs) until it settles (at most `limit`
/// intervals); returns the decisions in order.
pub(super) fn run_until_settled(
    c: &mut Controller,
    script: &dyn Fn(usize) -> Sample,
    limit: usize,
) -> Vec<Decision> {
    let mut out = Vec::new();
    for _ in 0..limit {
        let s = Sample {
            active: c.active(),
            ..script(c.active())
        };
        if let Some(d) = c.observe(&s) {
            assert_eq!(d.active, c.active(), "a decision states the count in force");
            out.push(d);
        }
        if c.settled() {
            return out;
        }
    }
    panic!("no decision after {limit} intervals: {out:?}");
}

pub(super) fn quiet(cpu: f64) -> Sample {
    Sample {
        cpu,
        lock_time: Some(0.0),
        voluntary_per_s: 50.0,
        migrations_per_s: Some(0.0),
        ..Sample::default()
    }
}

pub(super) fn controller(min: usize, max: usize, cores: usize) -> Controller {
    Controller::new(Limits::new(min, max, cores), Thresholds::default())
}

pub(super) fn counts(ds: &[Decision]) -> Vec<(usize, Reason)> {
    ds.iter().map(|d| (d.active, d.reason)).collect()
}

#[test]
fn a_compute_bound_program_climbs_by_t_step_to_max() {
    let mut c = controller(1, 8, 8); // T_step = 8 / 3 = 2
    assert_eq!(c.start().active, 1);
    let ds = run_until_settled(&mut c, &|t| quiet(t as f64), 100);
    let full = Reason::Try { half: false };
    assert_eq!(
        counts(&ds),
        vec![
            (3, full),
            (5, full),
            (7, full),
            (8, full),
            (8, Reason::ReachedMax)
        ]
    );
}

#[test]
fn high_and_rising_lock_contention_stops_at_the_best() {
    // Lock time grows with the workers: 2 % at 1, 8 % at 3, 30 % at 5.
    let lock = |t: usize| match t {
        1 => 0.02,
        3 => 0.08,
        _ => 0.30,
    };
    let mut c = controller(1, 8, 8);
    let ds = run_until_settled(
        &mut c,
        &|t| Sample {
            lock_time: Some(lock(t)),
            ..quiet(t as f64 * 0.9)
        },
        100,
    );
    let last = *ds.last().unwrap();
    assert_eq!(
        last,
        Decision {
            active: 3,
            reason: Reason::LockContention
        },
        "{ds:?}"
    );
}

#[test]
fn high_lock_with_sharply_more_switches_stops_within_the_cores() {
    // Lock time high and flat (not rising), but voluntary switches jump from 3 to 5 workers.
    let mut c = controller(1, 8, 8);
    let ds = run_until_settled(
        &mut c,
        &|t| Sample {
            lock_time: Some(0.2),
            voluntary_per_s: if t >= 5 { 5000.0 } else { 100.0 },
            ..quiet(t as f64)
        },
        100,
    );
    assert_eq!(ds.last().unwrap().reason, Reason::LockContention, "{ds:?}");
    assert_eq!(c.active(), 3);
}

#[test]
fn medium_lock_and_switch_growth_take_half_steps() {
    // LOCK between low (5 %) and high (10 %), voluntary switches rising moderately (+30 % from
    // each tried count to the next: neither low nor high): ComputeNextT takes T_step / 2.
    let mut c = controller(1, 9, 9); // T_step = 3, half = 1
    let ds = run_until_settled(
        &mut c,
        &|t| Sample {
            lock_time: Some(0.07),
            voluntary_per_s: 1000.0 * 1.3f64.powi(if t == 1 { 0 } else { t as i32 - 3 }),
            ..quiet(t as f64)
        },
        200,
    );
    let tries: Vec<usize> = ds.iter().map(|d| d.active).collect();
    assert_eq!(
        tries[0], 4,
        "the first step from min is a full T_step: {ds:?}"
    );
    assert_eq!(
        ds[1],
        Decision {
            active: 5,
            reason: Reason::Try { half: true }
        },
        "{ds:?}"
    );
    assert_eq!(c.active(), 9);
}

#[test]
fn no_more_parallelism_keeps_the_best() {
    // CPU utilisation flat beyond 2 workers.
    let mut c = controller(2, 8, 8);
    let ds = run_until_settled(&mut c, &|t| quiet(t.min(2) as f64), 100);
    assert_eq!(
        counts(&ds),
        vec![
            (4, Reason::Try { half: false }),
            (2, Reason::NoMoreParallelism)
        ]
    );
}

#[test]
fn throughput_decides_where_progress_is_reported() {
    // The last decision of a search on 1..=2 where `throughput(t)` units/s get done at `t`.
    let last = |throughput: fn(usize) -> f64| {
        let mut c = controller(1, 2, 2);
        let ds = run_until_settled(
            &mut c,
            &|t| Sample {
                throughput: Some(throughput(t)),
                ..quiet(t as f64)
            },
            100,
        );
        ds.last().copied()
    };
    // More CPU is used with 2 workers (spinning), but less work gets done: fewer workers win.
    assert_eq!(
        last(|t| if t == 1 { 1000.0 } else { 800.0 }),
        decided(1, Reason::NoMoreParallelism)
    );
    // And where it doubles, all workers win.
    assert_eq!(last(|t| 1000.0 * t as f64), decided(2, Reason::ReachedMax));
}

#[test]
fn throughput_overrides_lock_time_where_progress_is_reported() {
    // Lock time high and rising with the workers (it would stop the search without progress
    // figures), but the throughput keeps growing: the reported work decides, all workers win.
    let mut c = controller(1, 2, 2);
    let ds = run_until_settled(
        &mut c,
        &|t| Sample {
            lock_time: Some(if t == 1 { 0.12 } else { 0.40 }),
            throughput: Some(1000.0 * t as f64),
            ..quiet(t as f64 * 0.9)
        },
        100,
    );
    assert_eq!(ds.last().copied(), decided(2, Reason::ReachedMax), "{ds:?}");
    // The same profile without progress figures stops at 1 on the lock contention.
    let mut c = controller(1, 2, 2);
    let ds = run_until_settled(
        &mut c,
        &|t| Sample {
            lock_time: Some(if t == 1 { 0.12 } else { 0.40 }),
            ..quiet(t as f64 * 0.9)
        },
        100,
    );
    assert_eq!(
        ds.last().copied(),
        decided(1, Reason::LockContention),
        "{ds:?}"
    );
}

#[test]
fn a_phase_change_searches_again() {
    let mut c = controller(1, 2, 2);
    let compute = |t: usize| quiet(t as f64);
    run_until_settled(&mut c, &compute, 100);
    assert_eq!(c.active(), 2);
    // A few noisy intervals (below the shift thresholds) change nothing.
    for _ in 0..10 {
        let s = Sample {
            lock_time: Some(0.1),
            ..quiet(1.8)
        };
        assert_eq!(c.observe(&s), None);
    }
    // The program turns lock-bound: lock time 80 %, and a second worker adds nothing.
    let lock_bound = |t: usize| Sample {
        lock_time: Some(0.8),
        voluntary_per_s: 100.0 * t as f64,
        ..quiet(1.0)
    };
    let mut ds = Vec::new();
    for _ in 0..Thresholds::default().phase_confirm {
        if let Some(d) = c.observe(&Sample {
            active: 2,
            ..lock_bound(2)
        }) {
            ds.push(d);
        }
    }
    assert_eq!(
        ds,
        vec![Decision {
            active: 1,
            reason: Reason::PhaseChange
        }]
    );
    let ds = run_until_settled(&mut c, &lock_bound, 100);
    assert_eq!(
        ds.last().unwrap(),
        &Decision {
            active: 1,
            reason: Reason::NoMoreParallelism
        }
    );
}

pub(super) fn shared_machine(lock: f64, others: f64) -> SharingSignals {
    SharingSignals {
        cpus: 2,
        runnable: Some(1.0 + 2.0 + others),
        own_cpu: 2.0,
        run_delay: Some(0.0),
        lock_time: Some(lock),
        ..SharingSignals::default()
    }
}

/// An interval at `active` workers with `cpu` CPUs busy, on a machine that looks like `sharing`.
pub(super) fn under(active: usize, sharing: SharingSignals, cpu: f64) -> Sample {
    Sample {
        active,
        sharing,
        ..quiet(cpu)
    }
}

pub(super) fn decided(active: usize, reason: Reason) -> Option<Decision> {
    Some(Decision { active, reason })
}

#[test]
fn sharing_caps_a_lock_bound_program_and_lifts_when_free() {
    let mut c = controller(1, 2, 2);
    run_until_settled(&mut c, &|t| quiet(t as f64), 100);
    assert_eq!(c.active(), 2);
    let busy = under(2, shared_machine(0.9, 2.0), 2.0);
    // One interval is not enough (hysteresis), the second caps.
    assert_eq!(c.observe(&busy), None);
    assert_eq!(c.observe(&busy), decided(1, Reason::Shared));
    assert_eq!(c.wanted(), 2, "the search's choice is kept");
    // Capped: no phase-change watch (the profile is the other programs').
    for _ in 0..10 {
        assert_eq!(c.observe(&under(1, shared_machine(0.9, 2.0), 0.3)), None);
    }
    let free = under(1, shared_machine(0.9, 0.0), 1.0);
    assert_eq!(c.observe(&free), None);
    assert_eq!(c.observe(&free), decided(2, Reason::Freed));
}

#[test]
fn sharing_leaves_a_scalable_program_alone() {
    let mut c = controller(1, 2, 2);
    run_until_settled(&mut c, &|t| quiet(t as f64), 100);
    for _ in 0..5 {
        assert_eq!(c.observe(&under(2, shared_machine(0.0, 2.0), 2.0)), None);
    }
    assert_eq!(c.active(), 2);
}

#[test]
fn sharing_pauses_a_search_and_resumes_it() {
    let mut c = controller(1, 4, 4); // T_step 1
    let mut ds = Vec::new();
    for _ in 0..3 {
        ds.extend(c.observe(&Sample {
            active: 1,
            ..quiet(1.0)
        }));
    }
    assert_eq!(
        ds,
        vec![Decision {
            active: 2,
            reason: Reason::Try { half: false }
        }]
    );
    let mut busy = under(2, shared_machine(0.9, 3.0), 2.0);
    busy.sharing.cpus = 4;
    assert_eq!(c.observe(&busy), None);
    assert_eq!(c.observe(&busy), decided(1, Reason::Shared));
    for _ in 0..10 {
        assert_eq!(
            c.observe(&Sample { active: 1, ..busy }),
            None,
            "the search waits"
        );
    }
    assert!(!c.settled());
    let ds = run_until_settled(&mut c, &|t| quiet(t as f64), 100);
    assert_eq!(
        ds.first().unwrap(),
        &Decision {
            active: 2,
            reason: Reason::Freed
        },
        "{ds:?}"
    );
    assert_eq!(
        ds.last().unwrap(),
        &Decision {
            active: 4,
            reason: Reason::ReachedMax
        }
    );
}

#[test]
fn min_equal_max_settles_at_once() {
    let mut c = controller(2, 2, 2);
    let ds = run_until_settled(&mut c, &|t| quiet(t as f64), 100);
    assert_eq!(counts(&ds), vec![(2, Reason::ReachedMax)]);
}

#[test]
fn idle_intervals_are_neither_measurements_nor_phase_changes() {
    let mut c = controller(1, 2, 2);
    run_until_settled(&mut c, &|t| quiet(t as f64), 100);
    assert_eq!(c.active(), 2);
    // The program waits for its caller between runs: CPU near 0, no throughput.
    for _ in 0..20 {
        let idle = Sample {
            active: 2,
            throughput: Some(0.0),
            ..quiet(0.02)
        };
        assert_eq!(c.observe(&idle), None);
    }
    assert!(
        c.settled() && c.active() == 2,
        "no re-search on idle intervals"
    );
    // During a search, idle intervals do not enter the profile: the try still shows its gain.
    let mut c = controller(1, 2, 2);
    let mut ds = Vec::new();
    for i in 0..40 {
        let t = c.active();
        // Busy throughout at 1 worker; idle every other interval at 2 (averaged in, the try
        // would look like no gain at all).
        let s = if t == 2 && i % 2 == 0 {
            quiet(0.0)
        } else {
            quiet(t as f64)
        };
        ds.extend(c.observe(&Sample { active: t, ..s }));
    }
    assert_eq!(
        ds.last(),
        Some(&Decision {
            active: 2,
            reason: Reason::ReachedMax
        }),
        "{ds:?}"
    );
}

/// A controller settled at 2 of 1..=2 on a program doing `thr` units/s at 2 workers.
pub(super) fn settled_with_progress(thr: f64) -> Controller {
    let mut c = controller(1, 2, 2);
    run_until_settled(
        &mut c,
        &|t| Sample {
            throughput: Some(thr * t as f64 / 2.0),
            ..quiet(t as f64)
        },
        100,
    );
    assert_eq!(c.active(), 2);
    for _ in 0..3 {
        c.observe(&Sample {
            active: 2,
            throughput: Some(thr),
            ..quiet(2.0)
        });
    }
    c
}

#[test]
fn a_cap_that_costs_throughput_is_lifted_until_the_machine_is_free() {
    let mut c = settled_with_progress(2000.0);
    let busy = |active, thr| Sample {
        throughput: Some(thr),
        ..under(active, shared_machine(0.9, 2.0), active as f64)
    };
    assert_eq!(c.observe(&busy(2, 2000.0)), None);
    assert_eq!(c.observe(&busy(2, 2000.0)), decided(1, Reason::Shared));
    // Under the cap: one settling interval, then two measured at 700/s (< 95 % of 2000).
    assert_eq!(c.observe(&busy(1, 500.0)), None);
    assert_eq!(c.observe(&busy(1, 700.0)), None);
    assert_eq!(c.observe(&busy(1, 700.0)), decided(2, Reason::CapRefuted));
    // Still shared: no new cap.
    for _ in 0..10 {
        assert_eq!(c.observe(&busy(2, 1500.0)), None);
    }
    assert_eq!(c.active(), 2);
    // Free once, then shared again: a cap again.
    let free = Sample {
        throughput: Some(2000.0),
        ..under(2, shared_machine(0.9, 0.0), 2.0)
    };
    assert_eq!(c.observe(&free), None);
    assert_eq!(c.observe(&busy(2, 2000.0)), None);
    assert_eq!(c.observe(&busy(2, 2000.0)), decided(1, Reason::Shared));
}

#[test]
fn a_cap_that_keeps_throughput_stays() {
    let mut c = settled_with_progress(2000.0);
    let busy = |active, thr| Sample {
        throughput: Some(thr),
        ..under(active, shared_machine(0.9, 2.0), active as f64)
    };
    c.observe(&busy(2, 2000.0));
    assert_eq!(c.observe(&busy(2, 2000.0)), decided(1, Reason::Shared));
    // 1990/s under the cap: within `throughput_gain` (2 %) of the 2000/s before it.
    for _ in 0..20 {
        assert_eq!(c.observe(&busy(1, 1990.0)), None);
    }
    assert_eq!(c.active(), 1);
}
