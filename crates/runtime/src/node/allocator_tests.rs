//! The Cores Allocator on the paper's two published examples.

use super::*;

/// Table 6.6 as a model: the published predictions for fluidanimate (FA, 49 threads) and swim
/// (SM, 32 threads) on all cores and on the (40, 24) processor sets.
struct Table66 {
    actual: bool,
}

const FA_THREADS: usize = 49;
const SM_THREADS: usize = 32;

impl Model for Table66 {
    fn paap(&self, a: &ProgramProfile, _b: &ProgramProfile, _cores: usize) -> f64 {
        match (a.threads, self.actual) {
            (FA_THREADS, false) => 56.4,
            (FA_THREADS, true) => 52.3,
            (_, false) => 45.2,
            (_, true) => 49.4,
        }
    }

    fn pacc(&self, a: &ProgramProfile, cores: usize) -> f64 {
        match (a.threads, cores, self.actual) {
            (FA_THREADS, 40, false) => 44.5,
            (FA_THREADS, 40, true) => 41.2,
            (SM_THREADS, 24, false) => 41.6,
            (SM_THREADS, 24, true) => 46.8,
            _ => panic!(
                "Table 6.6 has no figure for {} threads on {cores} cores",
                a.threads
            ),
        }
    }
}

/// FA and SM: memory-intensive, low lock contention.
fn fa_sm() -> [ProgramProfile; 2] {
    let p = |threads| ProgramProfile {
        mpa: 0.5,
        lock: 1.0,
        threads,
        ..Default::default()
    };
    [p(FA_THREADS), p(SM_THREADS)]
}

#[test]
fn fa_and_sm_get_all_cores_from_table_6_6_predictions_and_actuals() {
    let candidates = [CoresConfig::AllCores, CoresConfig::Sets(vec![40, 24])];
    for actual in [false, true] {
        let a = best_of(&Table66 { actual }, &fa_sm(), 64, &candidates).unwrap();
        assert_eq!(a.config, CoresConfig::AllCores, "actual figures: {actual}");
        let (all, sets) = if actual {
            ((52.3 + 49.4) / 2.0, (41.2 + 46.8) / 2.0)
        } else {
            ((56.4 + 45.2) / 2.0, (44.5 + 41.6) / 2.0)
        };
        assert!((a.mean - all).abs() < 1e-9 && all > sets);
    }
    // They are not CPU-bound: the models were asked (no short cut).
    let c = AllocatorConfig::default();
    assert!(!cpu_bound_uncontended(&fa_sm()[0], &c));
}

/// apsi (16 threads) and fma3d (56 threads) on 64 cores (Fig. 6.4): both very highly lock
/// contended during fma3d's first 11 s, fma3d hardly at all afterwards.
fn apsi_fma(fma_lock: f64) -> [ProgramProfile; 2] {
    let p = |lock, threads| ProgramProfile {
        lock,
        mpa: 0.05,
        threads,
        ..Default::default()
    };
    [p(40.0, 16), p(fma_lock, 56)]
}

#[test]
fn apsi_and_fma3d_get_16_48_sets_then_all_cores_with_the_papers_linear_models() {
    let c = AllocatorConfig::default();
    let m = LinearModel::paper();
    let first = allocate(&m, &apsi_fma(40.0), 64, &c);
    assert_eq!(first.config, CoresConfig::Sets(vec![16, 48]), "{first:?}");
    assert_eq!(first.reason, AllocReason::BestPredicted);
    let later = allocate(&m, &apsi_fma(5.0), 64, &c);
    assert_eq!(later.config, CoresConfig::AllCores, "{later:?}");
}

#[test]
fn the_allocator_follows_fma3ds_phase_change_after_two_intervals() {
    let mut a = CoresAllocator::new(LinearModel::paper(), AllocatorConfig::default());
    let d = a.observe(&apsi_fma(40.0), 64, None).unwrap();
    assert_eq!(d.config, CoresConfig::Sets(vec![16, 48]));
    for _ in 0..5 {
        assert_eq!(
            a.observe(&apsi_fma(40.0), 64, None),
            None,
            "steady: no change"
        );
    }
    // The phase change: the gain (about 11 points) exceeds gamma (8), for two intervals.
    assert_eq!(a.observe(&apsi_fma(5.0), 64, None), None);
    let d = a.observe(&apsi_fma(5.0), 64, None).unwrap();
    assert_eq!(d.config, CoresConfig::AllCores);
    assert_eq!(a.current().unwrap().config, CoresConfig::AllCores);
}

#[test]
fn a_gain_below_gamma_keeps_the_configuration() {
    // With gamma 30 the phase change's gain is not enough.
    let mut a = CoresAllocator::new(LinearModel::paper(), AllocatorConfig::default().gamma(30.0));
    a.observe(&apsi_fma(40.0), 64, None).unwrap();
    for _ in 0..4 {
        assert_eq!(a.observe(&apsi_fma(5.0), 64, None), None);
    }
    // Measured shares far below the prediction of the configuration in force do count.
    assert_eq!(a.observe(&apsi_fma(5.0), 64, Some(&[10.0, 10.0])), None);
    let d = a.observe(&apsi_fma(5.0), 64, Some(&[10.0, 10.0])).unwrap();
    assert_eq!(d.config, CoresConfig::AllCores);
}

#[test]
fn cpu_bound_uncontended_programs_get_all_cores_without_prediction() {
    let p = ProgramProfile {
        mpa: 0.01,
        lock: 0.5,
        threads: 8,
        ..Default::default()
    };
    let a = allocate(
        &LinearModel::paper(),
        &[p, p, p],
        16,
        &AllocatorConfig::default(),
    );
    assert_eq!(a.config, CoresConfig::AllCores);
    assert_eq!(a.reason, AllocReason::AllCpuBoundUncontended);
    let alone = allocate(&LinearModel::paper(), &[p], 16, &AllocatorConfig::default());
    assert_eq!(alone.reason, AllocReason::Alone);
}

#[test]
fn programs_entering_or_leaving_are_decided_at_once() {
    let mut a = CoresAllocator::new(LinearModel::paper(), AllocatorConfig::default());
    a.observe(&apsi_fma(40.0), 64, None).unwrap();
    let three = [apsi_fma(40.0)[0], apsi_fma(40.0)[1], apsi_fma(40.0)[0]];
    let d = a.observe(&three, 64, None).unwrap();
    if let CoresConfig::Sets(s) = &d.config {
        assert_eq!(s.len(), 3);
        assert_eq!(s.iter().sum::<usize>(), 64);
    }
    assert!(a.observe(&apsi_fma(40.0), 64, None).is_some());
}

#[test]
fn splits_cover_the_cores_and_shrink_to_small_machines() {
    let c = AllocatorConfig::default();
    assert_eq!(splits(2, 2, &c), vec![vec![1, 1]]);
    assert_eq!(splits(4, 2, &c), vec![vec![1, 3], vec![2, 2], vec![3, 1]]);
    assert!(splits(2, 3, &c).is_empty());
    for programs in 2..=4 {
        for s in splits(16, programs, &c) {
            assert_eq!(s.len(), programs);
            assert_eq!(s.iter().sum::<usize>(), 16);
            assert!(s.iter().all(|&x| x >= 2));
        }
    }
}
