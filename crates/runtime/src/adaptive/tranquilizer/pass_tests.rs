//! Every branch of Fig. 3.7 on scripted profiles.

use super::*;
use proptest::prelude::*;

fn cfg() -> TranquilizerConfig {
    TranquilizerConfig::new()
}

fn spread(mean: f64, std_dev: f64) -> Spread {
    Spread { mean, std_dev }
}

fn profile(miss: Option<(f64, f64)>, icx: (f64, f64)) -> PassProfile {
    PassProfile {
        miss_ratio: miss.map(|(m, s)| spread(m, s)),
        icx_per_s: spread(icx.0, icx.1),
    }
}

const DEFAULTS: Setting = Setting {
    memory: None,
    class: SchedClass::Other,
};

fn interleaved_fixed() -> Setting {
    Setting {
        memory: Some(MemPolicy::Interleave),
        class: SchedClass::Batch,
    }
}

fn local(class: SchedClass) -> Setting {
    Setting {
        memory: Some(MemPolicy::Local),
        class,
    }
}

/// Runs a pass from `current`: `first` measured under it, `second` under the plan's other
/// setting.
fn pass(current: Setting, first: PassProfile, second: PassProfile) -> (Plan, Verdict) {
    let c = cfg();
    let p = plan(&c, current, &first);
    let v = judge(&c, &p, &first, &second);
    (p, v)
}

#[test]
fn memory_intensive_misses_fell_keeps_interleave_and_fixed() {
    let first = profile(Some((0.6, 0.10)), (500.0, 80.0));
    let second = profile(Some((0.4, 0.05)), (900.0, 200.0)); // ICX is not this branch's test
    let (p, v) = pass(DEFAULTS, first, second);
    assert_eq!(p.workload, Workload::MemoryIntensive);
    assert_eq!(p.second, interleaved_fixed());
    assert!(p.tranquil_second);
    assert_eq!(v.keep, interleaved_fixed());
    assert_eq!(v.reason, TranquilReason::MissesFellInterleaved);
}

#[test]
fn memory_intensive_mean_fell_but_not_spread_goes_local_and_keeps_fixed() {
    let first = profile(Some((0.6, 0.10)), (500.0, 80.0));
    let second = profile(Some((0.4, 0.12)), (500.0, 80.0));
    let (_, v) = pass(DEFAULTS, first, second);
    assert_eq!(v.keep, local(SchedClass::Batch));
    assert_eq!(v.reason, TranquilReason::MissesDidNotFall);
}

#[test]
fn memory_intensive_spread_fell_but_not_mean_goes_local_and_keeps_fixed() {
    let first = profile(Some((0.6, 0.10)), (500.0, 80.0));
    let second = profile(Some((0.6, 0.01)), (500.0, 80.0));
    let (_, v) = pass(DEFAULTS, first, second);
    assert_eq!(v.keep, local(SchedClass::Batch));
    assert_eq!(v.reason, TranquilReason::MissesDidNotFall);
}

#[test]
fn a_miss_counter_lost_between_the_profiles_shows_no_fall() {
    let first = profile(Some((0.6, 0.10)), (500.0, 80.0));
    let second = profile(None, (500.0, 80.0));
    let (_, v) = pass(DEFAULTS, first, second);
    assert_eq!(v.reason, TranquilReason::MissesDidNotFall);
}

#[test]
fn cpu_intensive_icx_fell_keeps_the_fixed_class() {
    let first = profile(Some((0.05, 0.01)), (500.0, 80.0));
    let second = profile(Some((0.05, 0.01)), (300.0, 20.0));
    let (p, v) = pass(DEFAULTS, first, second);
    assert_eq!(p.workload, Workload::CpuIntensive);
    assert_eq!(p.second, local(SchedClass::Batch));
    assert_eq!(v.keep, local(SchedClass::Batch));
    assert_eq!(v.reason, TranquilReason::IcxFellFixed);
}

#[test]
fn cpu_intensive_icx_mean_fell_but_not_spread_restores_the_default_class() {
    let first = profile(Some((0.05, 0.01)), (500.0, 80.0));
    let second = profile(Some((0.05, 0.01)), (300.0, 90.0));
    let (_, v) = pass(DEFAULTS, first, second);
    assert_eq!(v.keep, local(SchedClass::Other));
    assert_eq!(v.reason, TranquilReason::IcxDidNotFall);
}

#[test]
fn cpu_intensive_icx_spread_fell_but_not_mean_restores_the_default_class() {
    let first = profile(Some((0.05, 0.01)), (500.0, 80.0));
    let second = profile(Some((0.05, 0.01)), (520.0, 10.0));
    let (_, v) = pass(DEFAULTS, first, second);
    assert_eq!(v.keep, local(SchedClass::Other));
    assert_eq!(v.reason, TranquilReason::IcxDidNotFall);
}

#[test]
fn the_threshold_itself_is_cpu_intensive() {
    let at = profile(Some((0.25, 0.0)), (1.0, 1.0));
    assert_eq!(plan(&cfg(), DEFAULTS, &at).workload, Workload::CpuIntensive);
    let above = profile(Some((0.2501, 0.0)), (1.0, 1.0));
    assert_eq!(
        plan(&cfg(), DEFAULTS, &above).workload,
        Workload::MemoryIntensive
    );
}

#[test]
fn without_a_miss_counter_memory_is_left_as_it_is_and_icx_decides() {
    let first = profile(None, (500.0, 80.0));
    // Whatever memory policy is in force (none set, or interleaved by an earlier phase).
    for memory in [None, Some(MemPolicy::Interleave)] {
        let current = Setting {
            memory,
            class: SchedClass::Other,
        };
        let (p, v) = pass(current, first, profile(None, (300.0, 20.0)));
        assert_eq!(p.workload, Workload::Unclassified);
        assert_eq!(p.second.memory, memory, "memory left as it is");
        assert_eq!(
            v.keep,
            Setting {
                memory,
                class: SchedClass::Batch
            }
        );
        assert_eq!(v.reason, TranquilReason::NoMissCounterIcxFell);
        assert!(v
            .reason
            .to_string()
            .starts_with("no miss counter: memory policy left as it is"));
        let (_, v) = pass(current, first, profile(None, (300.0, 200.0)));
        assert_eq!(v.keep.memory, memory);
        assert_eq!(v.keep.class, SchedClass::Other);
        assert_eq!(v.reason, TranquilReason::NoMissCounterIcxDidNotFall);
    }
}

#[test]
fn with_the_fixed_class_in_force_the_default_is_measured_second_and_judged_by_role() {
    let fixed = local(SchedClass::Batch);
    // Fixed (first) calmer than default (second): stays.
    let calm = profile(Some((0.05, 0.01)), (300.0, 20.0));
    let noisy = profile(Some((0.05, 0.01)), (500.0, 80.0));
    let (p, v) = pass(fixed, calm, noisy);
    assert!(!p.tranquil_second);
    assert_eq!(p.second, local(SchedClass::Other));
    assert_eq!(v.keep, fixed);
    assert_eq!(v.reason, TranquilReason::IcxFellFixed);
    // The same two profiles measured the other way round: the default comes back.
    let (_, v) = pass(fixed, noisy, calm);
    assert_eq!(v.keep, local(SchedClass::Other));
    assert_eq!(v.reason, TranquilReason::IcxDidNotFall);
}

#[test]
fn with_interleave_in_force_local_is_measured_second() {
    let calm = profile(Some((0.4, 0.05)), (1.0, 1.0));
    let noisy = profile(Some((0.6, 0.10)), (1.0, 1.0));
    let (p, v) = pass(interleaved_fixed(), calm, noisy);
    assert_eq!(p.second, local(SchedClass::Batch));
    assert_eq!(v.keep, interleaved_fixed());
    let (_, v) = pass(interleaved_fixed(), noisy, calm);
    assert_eq!(v.keep, local(SchedClass::Batch));
}

#[test]
fn a_cpu_phase_after_a_memory_phase_returns_to_local_memory() {
    let first = profile(Some((0.05, 0.01)), (500.0, 80.0));
    let (p, v) = pass(
        interleaved_fixed(),
        first,
        profile(Some((0.05, 0.01)), (600.0, 90.0)),
    );
    assert_eq!(p.workload, Workload::CpuIntensive);
    assert_eq!(v.keep.memory, Some(MemPolicy::Local));
}

#[test]
fn min_fall_is_the_hysteresis() {
    let c = cfg().min_fall(0.10);
    let first = profile(Some((0.05, 0.01)), (500.0, 80.0));
    let p = plan(&c, DEFAULTS, &first);
    // 5 % lower in both: enough for the paper's strict rule, not for a 10 % hysteresis.
    let second = profile(Some((0.05, 0.01)), (475.0, 76.0));
    assert_eq!(
        judge(&cfg(), &p, &first, &second).keep.class,
        SchedClass::Batch
    );
    assert_eq!(judge(&c, &p, &first, &second).keep.class, SchedClass::Other);
}

#[test]
fn bad_configs_are_refused_with_what_to_change() {
    assert!(cfg().check().is_ok());
    let e = cfg()
        .sampling(std::time::Duration::from_millis(100), 1)
        .check();
    assert!(e.unwrap_err().contains("at least 2"));
    let e = cfg().pass(std::time::Duration::from_millis(500)).check();
    assert!(e.unwrap_err().contains("shorter than its two profiles"));
    let e = cfg().fixed_class(SchedClass::Fifo { priority: 0 }).check();
    assert!(e.unwrap_err().contains("1..=99"));
    assert!(cfg().min_fall(1.0).check().is_err());
}

proptest! {
    /// Measuring the tranquil setting first or second changes nothing about what is kept
    /// (the judge compares by role) — the oracle is the paper's rule written out.
    #[test]
    fn the_verdict_follows_the_papers_rule_in_either_order(
        dm in 0.0f64..1000.0, ds in 0.0f64..200.0, tm in 0.0f64..1000.0, ts in 0.0f64..200.0,
    ) {
        let default_p = profile(Some((0.05, 0.0)), (dm, ds));
        let tranquil_p = profile(Some((0.05, 0.0)), (tm, ts));
        let oracle = if tm < dm && ts < ds { SchedClass::Batch } else { SchedClass::Other };
        let (_, v) = pass(local(SchedClass::Other), default_p, tranquil_p);
        prop_assert_eq!(v.keep.class, oracle);
        let (_, v) = pass(local(SchedClass::Batch), tranquil_p, default_p);
        prop_assert_eq!(v.keep.class, oracle);
    }

    /// Spread::of against the textbook two-pass formula.
    #[test]
    fn spread_matches_the_two_pass_formula(v in proptest::collection::vec(-1e6f64..1e6, 1..40)) {
        let s = Spread::of(v.iter().copied()).unwrap();
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = if v.len() > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else { 0.0 };
        prop_assert!((s.mean - mean).abs() <= 1e-9 * mean.abs().max(1.0));
        prop_assert!((s.std_dev - var.sqrt()).abs() <= 1e-6 * var.sqrt().max(1.0));
    }
}
