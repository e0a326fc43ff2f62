//! The search on a model : the pure controller fed synthetic intervals
//! generated from a throughput curve over active workers, with seeded multiplicative noise per
//! interval, on ranges from 1..=2 (this machine) to 1..=64. There is no machine with more than
//! 2 CPUs to measure on; this is where large ranges are shown.
//!
//! Oracle: once the search has settled, the model throughput at the chosen count is at least
//! [`GOOD`] × the curve's best, and the search took at most [`interval_bound`] intervals
//! (100 ms each). With noise up to ±5 % every search meets it (on `1..=64`, where a sharp peak
//! can be missed by a few workers, [`GOOD_64`]); with ±8 % a small share of the searches on
//! the larger ranges misses [`GOOD`] by a little (`noisier_searches_rarely_miss`); the
//! lent machine's lock-bound case holds at ±10 %.

use super::*;
use crate::adaptive::sharing::SharingSignals;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

/// The share of the curve's best throughput the chosen count must reach (the issue's "within
/// 5 % of the best fixed count").
const GOOD: f64 = 0.95;
/// The same on `1..=64`.
const GOOD_64: f64 = 0.90;

/// The share for a range of `n` workers.
fn good(n: usize) -> f64 {
    if n > 16 {
        GOOD_64
    } else {
        GOOD
    }
}

/// Most intervals a search from `min` may take on a range of `n` workers before it settles:
/// 1..=2 in 1.5 s, 1..=4 in 3.5 s, 1..=16 in 5.5 s, 1..=64 in 8 s. Each count costs a
/// settling interval and two measured ones (close calls up to 4); on 1..=16 a climb of 1, 2,
/// 4, 8, 13, 16 is 6 counts (18 intervals), and a peak between the tries takes a recheck, up
/// to 3 counts between them and a rival measured again.
fn interval_bound(n: usize) -> usize {
    match n {
        0..=2 => 15,
        3..=4 => 35,
        5..=16 => 55,
        _ => 80,
    }
}

/// A program's throughput over active workers (and the profile a real run of it shows).
#[derive(Clone, Copy, Debug)]
enum Curve {
    /// All threads on one lock, the best at 1 worker and falling slowly:
    /// `1 / (1 + a·(t − 1))` with `a ≤ 1/45`, so 6 workers do at least 0.9 of what 1 does and
    /// a noisy interval can hide the loss (the 16-CPU `lock_bound` case).
    LockBound { a: f64 },
    /// Rises linearly to the range's top.
    Compute,
    /// Rises linearly to `k` workers, then flat.
    Saturating { k: usize },
    /// Peaked at `k` workers: `2x / (1 + x²)` with `x = t / k`.
    Peaked { k: f64 },
    /// Shares `n` CPUs with `b·n` busy threads of other programs (`b` below 1): our CPU share
    /// `n·t / max(n, t + b·n)` times the efficiency `1 / (1 + q·max(0, t + b·n − n))` lost
    /// to preempted workers.
    Multiprog { b: f64, q: f64 },
}

impl Curve {
    /// Throughput (units per second, the best near 1000) at `t` workers on `n` CPUs.
    fn throughput(self, t: usize, n: usize) -> f64 {
        let tf = t as f64;
        1000.0
            * match self {
                Curve::LockBound { a } => 1.0 / (1.0 + a * (tf - 1.0)),
                Curve::Compute => tf / n as f64,
                Curve::Saturating { k } => t.min(k) as f64 / k as f64,
                Curve::Peaked { k } => {
                    let x = tf / k;
                    2.0 * x / (1.0 + x * x)
                }
                Curve::Multiprog { b, q } => {
                    let (n, others) = (n as f64, b * n as f64);
                    let over = (tf + others - n).max(0.0);
                    (n * tf / n.max(tf + others)) / (1.0 + q * over) / n
                }
            }
    }

    /// The busy CPUs at `t` workers on `n` CPUs.
    fn cpu(self, t: usize, n: usize) -> f64 {
        let tf = t as f64;
        match self {
            // One holder runs; the waiters spin a little before they park.
            Curve::LockBound { .. } => (1.0 + 0.2 * (tf - 1.0)).min(tf),
            Curve::Compute => tf,
            Curve::Saturating { k } => t.min(k) as f64 + 0.1 * t.saturating_sub(k) as f64,
            Curve::Peaked { .. } => tf,
            Curve::Multiprog { b, .. } => {
                let n = n as f64;
                n * tf / n.max(tf + b * n)
            }
        }
    }

    /// One interval at `t` workers on `n` CPUs, the throughput scaled by `1 + noise`.
    fn sample(self, t: usize, n: usize, noise: f64) -> Sample {
        let cpu = self.cpu(t, n);
        let others = match self {
            Curve::Multiprog { b, .. } => b * n as f64,
            _ => 0.0,
        };
        let lock_time = match self {
            Curve::LockBound { .. } => 1.0 - 1.0 / t as f64,
            _ => 0.0,
        };
        Sample {
            active: t,
            cpu,
            lock_time: Some(lock_time),
            voluntary_per_s: 200.0 * t as f64,
            migrations_per_s: Some(5.0),
            throughput: Some(self.throughput(t, n) * (1.0 + noise)),
            sharing: SharingSignals {
                cpus: n,
                runnable: Some(1.0 + cpu + others),
                own_cpu: cpu,
                run_delay: Some(0.0),
                involuntary_per_s: 0.0,
                miss_ratio: None,
                lock_time: Some(lock_time),
            },
        }
    }

    /// The best throughput over `min..=max` on `max` CPUs.
    fn best(self, min: usize, max: usize) -> f64 {
        (min..=max)
            .map(|t| self.throughput(t, max))
            .fold(0.0, f64::max)
    }
}

/// A small seeded generator (SplitMix64) for the noise: the same seed, the same run.
struct Noise(u64);

impl Noise {
    /// Uniform in `-amp..amp`.
    fn next(&mut self, amp: f64) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let u = (z >> 11) as f64 / (1u64 << 53) as f64; // 0..1
        amp * (2.0 * u - 1.0)
    }
}

/// What a search on the model did.
#[derive(Debug)]
struct Run {
    /// The count it settled at (`None`: not within the limit).
    settled: Option<usize>,
    /// Intervals fed until it settled.
    intervals: usize,
    /// The counts it ran, in order (one entry per change).
    path: Vec<usize>,
    /// Its decisions.
    decisions: Vec<Decision>,
}

/// Runs a search on `min..=max` (as many cores) on `curve` with per-interval noise `±amp`.
fn search(curve: Curve, min: usize, max: usize, amp: f64, seed: u64) -> Run {
    let mut c = Controller::new(Limits::new(min, max, max), Thresholds::default());
    let mut noise = Noise(seed);
    let mut path = vec![c.start().active];
    let mut decisions = Vec::new();
    for i in 1..=400 {
        let t = c.active();
        if let Some(d) = c.observe(&curve.sample(t, max, noise.next(amp))) {
            if path.last() != Some(&d.active) {
                path.push(d.active);
            }
            decisions.push(d);
        }
        if c.settled() {
            return Run {
                settled: Some(c.active()),
                intervals: i,
                path,
                decisions,
            };
        }
    }
    Run {
        settled: None,
        intervals: 400,
        path,
        decisions,
    }
}

/// Checks the oracle for one search (`good`: the share of the best to reach); `Err` says what
/// failed.
fn check(
    curve: Curve,
    (min, max): (usize, usize),
    amp: f64,
    seed: u64,
    good: f64,
) -> Result<(), String> {
    let run = search(curve, min, max, amp, seed);
    let best = curve.best(min, max);
    let Some(at) = run.settled else {
        return Err(format!(
            "{curve:?} {min}..={max} ±{amp:.2}: never settled: {run:?}"
        ));
    };
    let got = curve.throughput(at, max);
    if got < good * best {
        return Err(format!(
            "{curve:?} {min}..={max} ±{amp:.2} seed {seed}: settled at {at} doing {:.3} of the best: {run:?}",
            got / best
        ));
    }
    if run.intervals > interval_bound(max - min + 1) {
        return Err(format!(
            "{curve:?} {min}..={max} ±{amp:.2} seed {seed}: {} intervals (bound {}): {run:?}",
            run.intervals,
            interval_bound(max - min + 1)
        ));
    }
    Ok(())
}

/// The ranges searched: this machine's, a small one, the lent 16-CPU machine's, a large one.
const RANGES: [usize; 4] = [2, 4, 16, 64];

fn curves() -> impl Strategy<Value = Curve> {
    prop_oneof![
        (0.005f64..=1.0 / 45.0).prop_map(|a| Curve::LockBound { a }),
        Just(Curve::Compute),
        (2usize..=64).prop_map(|k| Curve::Saturating { k }),
        (1.5f64..=40.0).prop_map(|k| Curve::Peaked { k }),
        ((0.1f64..=0.9), (0.02f64..=0.2)).prop_map(|(b, q)| Curve::Multiprog { b, q }),
    ]
}

/// A fixed seed: the same cases every run (no flaky tests, no persistence files).
fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x1a2b_3c4d),
        failure_persistence: None,
        ..Config::default()
    }
}

#[test]
fn the_16_cpu_lock_bound_case_settles_near_1() {
    // The lent machine's case: 6 workers do 0.9 to 0.98 of 1 worker's work, every interval
    // ±10 %. Many seeds: a search that climbs on lucky intervals is caught.
    let mut failed = Vec::new();
    let mut rivals = 0;
    for a in [1.0 / 45.0, 0.015, 0.01, 0.005] {
        let curve = Curve::LockBound { a };
        failed.extend((0..100).filter_map(|seed| check(curve, (1, 16), 0.10, seed, GOOD).err()));
        rivals += (0..100)
            .filter(|&seed| {
                let run = search(curve, 1, 16, 0.10, seed);
                run.decisions.iter().any(|d| d.reason == Reason::Rival)
            })
            .count();
    }
    assert!(
        failed.is_empty(),
        "{} of 400 failed: {failed:#?}",
        failed.len()
    );
    // Some searches climbed on lucky intervals and were brought back by the rival check.
    assert!(rivals > 0, "the rival check never ran");
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn the_search_settles_near_the_best_in_bounded_time(
        curve in curves(),
        r in 0usize..RANGES.len(),
        amp in 0.0f64..=0.05,
        seed in any::<u64>(),
    ) {
        let max = RANGES[r];
        check(curve, (1, max), amp, seed, good(max)).map_err(TestCaseError::fail)?;
    }
}

/// A grid of each curve's parameters on `n` workers.
fn grid(n: usize) -> Vec<Curve> {
    let mut v = vec![Curve::Compute];
    v.extend((0..8).map(|i| Curve::LockBound {
        a: 0.005 + 0.0025 * f64::from(i),
    }));
    v.extend((2..=n.min(40)).step_by(3).map(|k| Curve::Saturating { k }));
    v.extend((0..12).map(|i| Curve::Peaked {
        k: 1.5 + 3.3 * f64::from(i),
    }));
    v.extend((1..=9).map(|i| Curve::Multiprog {
        b: 0.1 * f64::from(i),
        q: 0.02 + 0.03 * f64::from(i % 6),
    }));
    v
}

#[test]
fn noisier_searches_rarely_miss() {
    // ±8 % every interval, 40 seeds of each curve of the grid: on 1..=16 at most 2 % of the
    // searches settle below 0.95 of the best and none below 0.90; on 1..=64 at most 3 % and
    // none below 0.88. Every one within the time bound plus a tenth.
    for (n, share, floor) in [(4, 0.02, 0.90), (16, 0.02, 0.90), (64, 0.03, 0.88)] {
        let (mut runs, mut below, mut worst) = (0u32, 0u32, 1.0f64);
        for curve in grid(n) {
            for seed in 0..40 {
                let run = search(curve, 1, n, 0.08, seed);
                let at = run.settled.expect("settles");
                assert!(
                    run.intervals <= interval_bound(n) * 11 / 10,
                    "{curve:?} 1..={n}: {run:?}"
                );
                let q = curve.throughput(at, n) / curve.best(1, n);
                runs += 1;
                below += u32::from(q < GOOD);
                worst = worst.min(q);
            }
        }
        let missed = f64::from(below) / f64::from(runs);
        assert!(
            missed <= share && worst >= floor,
            "1..={n}: {below} of {runs} below {GOOD} (at most {share}), worst {worst:.3}"
        );
    }
}

#[test]
fn on_1_to_2_noiseless_searches_decide_as_before() {
    // This machine's range, without noise: the same decisions as the controller before the
    // fourth round (a climb 1 → 2 judged by throughput; a close call measured best–tried–best;
    // no refinement, no rival).
    let path = |curve| search(curve, 1, 2, 0.0, 0).path;
    assert_eq!(path(Curve::Compute), vec![1, 2]);
    assert_eq!(path(Curve::LockBound { a: 0.02 }), vec![1, 2, 1]);
    assert_eq!(path(Curve::Saturating { k: 1 }), vec![1, 2, 1]);
}

/// The decisions of a noiseless search on `1..=16` of a program doing `thr(t)` units/s.
fn decisions_16(thr: fn(usize) -> f64) -> Vec<(usize, Reason)> {
    let mut c = Controller::new(Limits::new(1, 16, 16), Thresholds::default());
    let mut out = Vec::new();
    for _ in 0..200 {
        let t = c.active();
        let s = Sample {
            throughput: Some(thr(t)),
            ..Curve::Compute.sample(t, 16, 0.0)
        };
        out.extend(c.observe(&s).map(|d| (d.active, d.reason)));
        if c.settled() {
            return out;
        }
    }
    panic!("unsettled: {out:?}");
}

#[test]
fn a_large_range_climbs_by_doubling_up_to_t_step() {
    // T_step on 1..=16 is 5: 1, 2, 4, 8, then 5 at a time.
    let full = Reason::Try { half: false };
    assert_eq!(
        decisions_16(|t| 1000.0 * t as f64),
        vec![
            (2, full),
            (4, full),
            (8, full),
            (13, full),
            (16, full),
            (16, Reason::ReachedMax)
        ]
    );
}

#[test]
fn a_peak_between_the_tries_is_found_by_refining() {
    // Best at 6 workers; the doubling climb tries 4 and 8, and stops at 13.
    let peaked = |t: usize| {
        let t = t as f64;
        if t <= 6.0 {
            1000.0 * t
        } else {
            6000.0 - 500.0 * (t - 6.0)
        }
    };
    let full = Reason::Try { half: false };
    assert_eq!(
        decisions_16(peaked),
        vec![
            (2, full),
            (4, full),
            (8, full),
            (13, full),
            // 13 did less than 8: halfway into the wider gap (8..13), then (4..8).
            (10, Reason::Refine),
            (6, Reason::Refine),
            // Between 6 and its neighbours 4 and 8 (a tie): towards the one that did more.
            (7, Reason::Refine),
            (6, Reason::BestMeasured),
        ]
    );
}

#[test]
fn a_settled_search_stays_settled_under_noise() {
    // 60 s more of the same program at ±8 % after each search on 1..=16: noise is no phase
    // change.
    for curve in grid(16) {
        for seed in 0..5 {
            let mut c = Controller::new(Limits::new(1, 16, 16), Thresholds::default());
            let mut noise = Noise(seed);
            let run = |c: &mut Controller, noise: &mut Noise, n: usize| {
                (0..n)
                    .filter_map(|_| c.observe(&curve.sample(c.active(), 16, noise.next(0.08))))
                    .collect::<Vec<_>>()
            };
            run(&mut c, &mut noise, interval_bound(16));
            assert!(c.settled(), "{curve:?}");
            let ds = run(&mut c, &mut noise, 600);
            assert!(ds.is_empty(), "{curve:?} seed {seed}: {ds:?}");
        }
    }
}

#[test]
fn a_phase_change_on_16_cpus_finds_the_new_best() {
    // Lock-bound, then compute-bound, then lock-bound again, then peaked at 6, ±5 % every
    // interval, each phase in its own units per second: each phase change is seen and its
    // re-search ends within 0.95 of the new curve's best, within the time bound.
    let phases = [
        (Curve::LockBound { a: 0.02 }, 1.0),
        (Curve::Compute, 3.0),
        (Curve::LockBound { a: 0.02 }, 0.5),
        (Curve::Peaked { k: 6.0 }, 4.0),
    ];
    for seed in 0..20 {
        let mut c = Controller::new(Limits::new(1, 16, 16), Thresholds::default());
        let mut noise = Noise(seed);
        for (i, &(curve, units)) in phases.iter().enumerate() {
            // One interval; the decision and whether the search is over.
            let mut step = || {
                let mut s = curve.sample(c.active(), 16, noise.next(0.05));
                s.throughput = s.throughput.map(|x| x * units);
                (c.observe(&s), c.settled())
            };
            if i > 0 {
                let seen =
                    (0..50).any(|_| step().0.is_some_and(|d| d.reason == Reason::PhaseChange));
                assert!(seen, "phase {i} {curve:?} seed {seed}: no phase change");
            }
            let settled = (0..interval_bound(16)).any(|_| step().1);
            assert!(settled, "phase {i} {curve:?} seed {seed}: unsettled");
            let q = curve.throughput(c.active(), 16) / curve.best(1, 16);
            assert!(
                q >= GOOD,
                "phase {i} {curve:?} seed {seed}: {} does {q:.3}",
                c.active()
            );
        }
    }
}
