//! The simulator end to end: determinism, deadlock reports, the model check with fixed seeds,
//! and proptests on small machines that the scheduler loop keeps every thread's life cycle
//! (never runs a blocked or running thread, runs every woken one).

use footprint_affinity::PolicyKind;
use footprint_sim::model_check::{check_model, ModelCheckParams};
use footprint_sim::workload::locks::LockParams;
use footprint_sim::workload::regular::RegularParams;
use footprint_sim::workload::smoother::SmootherParams;
use footprint_sim::workload::{After, Segment, ThreadId, Workload, WorkloadSpec};
use footprint_sim::{
    simulate, CacheKind, Machine, PolicyChoice, SimConfig, SimError, SimReport, WakePlacement,
};
use proptest::prelude::*;

fn small_specs() -> Vec<WorkloadSpec> {
    vec![
        WorkloadSpec::Regular(RegularParams {
            threads: 64,
            working_set: 16 << 10,
            ..RegularParams::default()
        }),
        WorkloadSpec::Smoother(SmootherParams {
            side: 16,
            min_active: 12,
            ..SmootherParams::default()
        }),
        WorkloadSpec::parse("fragments").unwrap(),
        WorkloadSpec::Locks(LockParams {
            threads: 16,
            ..LockParams::default()
        }),
        WorkloadSpec::Locks(LockParams {
            threads: 16,
            locks: 4,
            ..LockParams::default()
        }),
    ]
}

fn without_wall(mut r: SimReport) -> SimReport {
    r.wall_secs = 0.0;
    r
}

#[test]
fn same_seed_same_report() {
    let m = Machine::preset("2x2").unwrap();
    for spec in small_specs() {
        for policy in PolicyChoice::ALL {
            let cfg = SimConfig {
                policy,
                max_syncs: 300,
                sample: 4,
                ..SimConfig::default()
            };
            let a = simulate(&m, spec.build(5).as_mut(), &cfg).unwrap();
            let b = simulate(&m, spec.build(5).as_mut(), &cfg).unwrap();
            assert_eq!(
                without_wall(a.clone()),
                without_wall(b),
                "{spec:?} {policy:?}"
            );
            assert_eq!(a.syncs, 300);
            assert!(a.cycles > 0 && a.refs > 0 && a.stops > 0);
        }
    }
    // Another seed gives another run (the regular workload's ring and jitter change).
    let spec = &small_specs()[0];
    let cfg = SimConfig {
        max_syncs: 300,
        ..SimConfig::default()
    };
    let a = simulate(&m, spec.build(5).as_mut(), &cfg).unwrap();
    let c = simulate(&m, spec.build(6).as_mut(), &cfg).unwrap();
    assert_ne!(a.cycles, c.cycles);
}

/// Every thread waits at one barrier that needs one more thread than there are.
struct Stuck {
    threads: usize,
    arrived: usize,
}

impl Workload for Stuck {
    fn name(&self) -> String {
        "stuck".into()
    }
    fn threads(&self) -> usize {
        self.threads
    }
    fn initial(&mut self) -> Vec<ThreadId> {
        (0..self.threads as u32).collect()
    }
    fn start(&mut self, _t: ThreadId, seg: &mut Segment) {
        seg.compute_cycles = 10;
    }
    fn finish(&mut self, _t: ThreadId, _wake: &mut Vec<ThreadId>) -> (After, u64) {
        self.arrived += 1;
        (After::Block, 1)
    }
    fn finished(&self) -> bool {
        false
    }
}

#[test]
fn deadlock_stops_with_a_report() {
    let m = Machine::preset("1x4").unwrap();
    let mut w = Stuck {
        threads: 10,
        arrived: 0,
    };
    let e = simulate(&m, &mut w, &SimConfig::default()).unwrap_err();
    match &e {
        SimError::Deadlock { blocked, syncs, .. } => {
            assert_eq!((*blocked, *syncs), (10, 10));
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
    assert!(e.to_string().contains("deadlock in workload stuck"), "{e}");
    // A regular workload whose group is larger than the thread count cannot deadlock: the
    // group is clamped to the threads.
    let spec = WorkloadSpec::Regular(RegularParams {
        threads: 3,
        group: 8,
        ..RegularParams::default()
    });
    let cfg = SimConfig {
        max_syncs: 30,
        ..SimConfig::default()
    };
    assert_eq!(
        simulate(&m, spec.build(1).as_mut(), &cfg).unwrap().syncs,
        30
    );
}

#[test]
fn bad_settings_are_typed_errors() {
    let m = Machine::preset("1x2").unwrap();
    let spec = &small_specs()[0];
    let cfg = SimConfig {
        sample: 3,
        ..SimConfig::default()
    };
    let e = simulate(&m, spec.build(1).as_mut(), &cfg).unwrap_err();
    assert!(matches!(e, SimError::Memory(_)), "{e}");
    let mut bad = m.clone();
    bad.private[0].line_size = 0;
    let e = simulate(&bad, spec.build(1).as_mut(), &SimConfig::default()).unwrap_err();
    assert!(e.to_string().contains("private[0].line_size"), "{e}");
}

#[test]
fn model_check_passes_with_fixed_seeds() {
    let check = check_model(&ModelCheckParams {
        lines: 512,
        seeds: 48,
        seed: 11,
        ..ModelCheckParams::default()
    });
    assert!(check.passed(), "{}", check.table());
    // LRU departs from the random-replacement model: the deviation is real and reported.
    assert!(
        check.lru.iter().any(|p| p.relative_error().abs() > 0.05),
        "{}",
        check.table()
    );
}

/// Wraps a workload and checks the simulator's side of the protocol.
struct Checked {
    inner: Box<dyn Workload>,
    state: Vec<u8>, // 0 blocked, 1 ready, 2 running
    starts: u64,
}

impl Workload for Checked {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn threads(&self) -> usize {
        self.inner.threads()
    }
    fn initial(&mut self) -> Vec<ThreadId> {
        let v = self.inner.initial();
        for &t in &v {
            self.state[t as usize] = 1;
        }
        v
    }
    fn start(&mut self, t: ThreadId, seg: &mut Segment) {
        assert_eq!(
            self.state[t as usize], 1,
            "thread {t} started while not ready"
        );
        self.state[t as usize] = 2;
        self.starts += 1;
        self.inner.start(t, seg)
    }
    fn finish(&mut self, t: ThreadId, wake: &mut Vec<ThreadId>) -> (After, u64) {
        assert_eq!(
            self.state[t as usize], 2,
            "thread {t} finished while not running"
        );
        let before = wake.len();
        let r = self.inner.finish(t, wake);
        for &w in &wake[before..] {
            assert_eq!(self.state[w as usize], 0, "woke {w}, which was not blocked");
            self.state[w as usize] = 1;
        }
        self.state[t as usize] = match r.0 {
            After::Block | After::Exit => 0,
            // Continue starts the next segment at once: ready for the start check.
            After::Yield | After::Continue => 1,
        };
        r
    }
    fn finished(&self) -> bool {
        self.inner.finished()
    }
}

fn policy_strategy() -> impl Strategy<Value = PolicyChoice> {
    (0..PolicyChoice::ALL.len()).prop_map(|i| PolicyChoice::ALL[i])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// On any small machine, policy, cache model and wake placement, every workload reaches
    /// its synchronisation count without the simulator breaking a thread's life cycle, and the
    /// counts add up.
    #[test]
    fn small_machines_keep_the_protocol(
        nodes in 1usize..4,
        per_node in 1usize..5,
        policy in policy_strategy(),
        random_cache in any::<bool>(),
        last_cpu in any::<bool>(),
        pmu in any::<bool>(),
        which in 0usize..5,
        seed in 0u64..1000,
    ) {
        let m = Machine::preset(&format!("{nodes}x{per_node}")).unwrap();
        let spec = small_specs()[which].clone();
        let inner = spec.build(seed);
        let threads = inner.threads();
        let mut w = Checked { inner, state: vec![0; threads], starts: 0 };
        let cfg = SimConfig {
            policy,
            cache: if random_cache { CacheKind::Random } else { CacheKind::Lru },
            wake: if last_cpu { WakePlacement::LastCpu } else { WakePlacement::Waker },
            miss_counts: pmu,
            sample: 4,
            max_syncs: 200,
            seed,
            ..SimConfig::default()
        };
        let r = simulate(&m, &mut w, &cfg).unwrap();
        prop_assert_eq!(r.syncs, 200);
        prop_assert_eq!(r.runs, w.starts);
        prop_assert!(r.stops <= r.runs);
        prop_assert!(r.llc_misses <= r.refs);
        prop_assert!(r.simulated_refs <= r.refs);
        if policy != PolicyChoice::Auto {
            prop_assert_eq!(PolicyChoice::Fixed(r.resolved), policy);
        } else if !pmu {
            prop_assert_eq!(r.resolved, PolicyKind::VirtualTime);
        }
    }
}

/// 004 §4.2.3 on the simulated bus: a thread that reserved 92 % of its rate alone keeps at
/// least 90 % of it while 3 streamers run on the other CPUs of its node when the streamers are
/// throttled, and less than 60 % when they are not.
#[test]
fn cruise_control_keeps_the_reserved_rate() {
    use footprint_sim::membus::{cruise_control, BusModel, CruiseParams};
    let bus = BusModel::e3000_two_banks();
    let p = CruiseParams {
        sim_ms: 60.0,
        ..CruiseParams::default()
    };
    let on = cruise_control(&bus, &p);
    let off = cruise_control(
        &bus,
        &CruiseParams {
            throttle: false,
            ..p.clone()
        },
    );
    assert!(on.fraction_kept() >= 0.90, "{on}");
    assert!(off.fraction_kept() < 0.60, "{off}");
    // Throttling slowed the streamers, and only them.
    assert_eq!(on.run.delayed_ns[0], 0.0);
    assert!(on.run.delayed_ns[1..].iter().all(|&d| d > 0.0), "{on:?}");
    assert!(off.run.delayed_ns.iter().all(|&d| d == 0.0));
    // They still ran: throttled, not stopped.
    assert!(on.streamer_rates.iter().all(|&r| r > 0.0), "{on}");
}
