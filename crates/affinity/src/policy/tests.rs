//! The policies' keys and `auto_for` against hand-computed cases.

use super::*;
use crate::topology::{CacheDomain, Topology};
use proptest::prelude::*;

/// Two CPUs with private 64-line L2s.
fn setup() -> (Arc<Ledger>, WorkerAffinity, WorkerAffinity) {
    let l2 = |cpu| CacheDomain {
        level: 2,
        size_bytes: 64 * 64,
        line_size: 64,
        cpus: vec![cpu],
    };
    let topo = Topology::from_parts(vec![0, 1], vec![l2(0), l2(1)], vec![]);
    let ledger = Arc::new(Ledger::new(&topo, 2));
    let w0 = WorkerAffinity::new(0, Some(0), ledger.clone());
    let w1 = WorkerAffinity::new(1, Some(1), ledger.clone());
    (ledger, w0, w1)
}

#[test]
fn parse_and_display() {
    for kind in PolicyKind::ALL {
        assert_eq!(kind.name().parse::<PolicyKind>().unwrap(), kind);
        assert_eq!(Policy::new(kind).to_string(), kind.name());
    }
    assert_eq!(
        "reload-transient".parse::<PolicyKind>().unwrap(),
        PolicyKind::ReloadTransient
    );
    let e = "fastest".parse::<PolicyKind>().unwrap_err();
    assert!(e.to_string().contains("virtual-time"));
    let p = Policy::auto(true);
    assert_eq!(p.kind(), PolicyKind::ReloadTransient);
    assert_eq!(
        p.to_string(),
        "ReloadTransient (auto: cache-miss counts available)"
    );
    let p = Policy::auto(false);
    assert_eq!(p.kind(), PolicyKind::VirtualTime);
    assert_eq!(p.auto_reason(), Some("no cache-miss counts"));
    assert!(!PolicyKind::VirtualTime.needs_miss_counts());
    assert!(PolicyKind::MissSum.needs_miss_counts());
}

#[test]
fn auto_follows_the_topology_and_the_counters() {
    let l3 = CacheDomain {
        level: 3,
        size_bytes: 1 << 20,
        line_size: 64,
        cpus: vec![0, 1],
    };
    let cached = Topology::from_parts(vec![0, 1], vec![l3], vec![]);
    let flat = Topology::flat(vec![0, 1]);
    let p = Policy::auto_for(&cached, true);
    assert_eq!(p.kind(), PolicyKind::ReloadTransient);
    assert_eq!(p.auto_reason(), Some("cache-miss counts available"));
    assert_eq!(
        Policy::auto_for(&cached, false).kind(),
        PolicyKind::VirtualTime
    );
    let p = Policy::auto_for(&flat, true);
    assert_eq!(p.kind(), PolicyKind::VirtualTime);
    assert!(p.to_string().contains("no cache topology"), "{p}");
    assert_eq!(
        Policy::auto_for(&flat, false).kind(),
        PolicyKind::VirtualTime
    );
    // A VM that sees its host's 260 MiB L3 from 2 CPUs.
    let l3_of = |size_bytes| CacheDomain {
        level: 3,
        size_bytes,
        line_size: 64,
        cpus: vec![0, 1],
    };
    let vm = Topology::from_parts(vec![0, 1], vec![l3_of(260 << 20)], vec![]);
    let p = Policy::auto_for(&vm, true);
    assert_eq!(p.kind(), PolicyKind::VirtualTime);
    assert!(p.to_string().contains("too large per CPU"), "{p}");
    // Exactly the limit per CPU: still ReloadTransient.
    let edge = Topology::from_parts(
        vec![0, 1],
        vec![l3_of(2 * AUTO_MAX_LAST_LEVEL_PER_CPU)],
        vec![],
    );
    assert_eq!(
        Policy::auto_for(&edge, true).kind(),
        PolicyKind::ReloadTransient
    );
}

#[test]
fn shared_across_worker_threads() {
    fn sync<T: Send + Sync>() {}
    sync::<WorkerAffinity>();
    sync::<ThreadAffinity>();
    sync::<Policy>();
    sync::<Ledger>();
    // Wakers on several OS threads stamp LIFO keys for one worker: every key distinct, and
    // stops from several threads advance the worker's clock by exactly their number.
    let (_, w0, _) = setup();
    let per_thread = if cfg!(debug_assertions) {
        5_000
    } else {
        50_000
    };
    let keys: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    let mut t = ThreadAffinity::new();
                    (0..per_thread)
                        .map(|_| {
                            t.record_stop(Some(1), &w0);
                            NoAffinity.key(&t, &w0)
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<u64> = keys.concat();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 3 * per_thread);
    assert_eq!(w0.operations(), 3 * per_thread as u64);
    assert_eq!(
        w0.ledger().clock(w0.domain().unwrap()),
        3 * per_thread as u64
    );
}

#[test]
fn thread_state_stays_small() {
    assert!(std::mem::size_of::<ThreadAffinity>() <= 80);
}

#[test]
fn lifo_runs_the_last_enqueued_first() {
    let (_, w0, _) = setup();
    let t = ThreadAffinity::new();
    let p = Policy::new(PolicyKind::NoAffinity);
    let k1 = p.key(&t, &w0);
    let k2 = p.key(&t, &w0);
    assert!(k2 < k1);
}

#[test]
fn virtual_time_prefers_recent_local_threads() {
    let (_, w0, w1) = setup();
    let p = Policy::new(PolicyKind::VirtualTime);
    let (mut a, mut b, c) = (
        ThreadAffinity::new(),
        ThreadAffinity::new(),
        ThreadAffinity::new(),
    );
    p.on_stop(&mut a, None, &w0);
    p.on_stop(&mut b, None, &w1);
    // On w0: a (ran here) before b (ran on w1) and c (never ran), which tie.
    assert!(p.key(&a, &w0) < p.key(&b, &w0));
    assert_eq!(p.key(&b, &w0), p.key(&c, &w0));
    assert!(p.key(&b, &w1) < p.key(&a, &w1));
}

#[test]
fn min_misses_and_miss_sum() {
    let (_, w0, _) = setup();
    let (mut a, mut b) = (ThreadAffinity::new(), ThreadAffinity::new());
    MinMisses.on_stop(&mut a, Some(100), &w0);
    MinMisses.on_stop(&mut b, Some(10), &w0);
    assert!(MinMisses.key(&b, &w0) < MinMisses.key(&a, &w0));
    // b misses a lot twice more: its sum passes a's.
    MissSum.on_stop(&mut b, Some(60), &w0);
    MissSum.on_stop(&mut b, Some(60), &w0);
    assert_eq!(MissSum.key(&b, &w0), 130);
    assert!(MissSum.key(&a, &w0) < MissSum.key(&b, &w0));
    // Aging: after HALF_LIFE more scheduling operations on w0, sums halve.
    let mut other = ThreadAffinity::new();
    for _ in 0..MISS_SUM_HALF_LIFE {
        other.record_stop(Some(0), &w0);
    }
    assert_eq!(MissSum.key(&b, &w0), 65);
    // And the aged value is what the next stop builds on.
    MissSum.on_stop(&mut b, Some(1), &w0);
    assert_eq!(b.miss_sum(), 66);
}

/// 004 §3.3.1: MinMisses ranks a thread with many start-up misses last; MissSum, whose
/// history starts at zero while long-running threads accumulate theirs, does not. (Four
/// threads on a worker with a half-life of 32 stops settle at 8–16 runs' worth of misses.)
#[test]
fn miss_sum_avoids_the_start_up_anomaly() {
    let (_, w0, _) = setup();
    let mut old = [ThreadAffinity::new(); 4];
    for _round in 0..20 {
        for t in &mut old {
            MissSum.on_stop(t, Some(200), &w0);
        }
    }
    let mut newcomer = ThreadAffinity::new();
    MissSum.on_stop(&mut newcomer, Some(1000), &w0);
    for t in &old {
        assert!(MinMisses.key(&newcomer, &w0) > MinMisses.key(t, &w0));
        assert!(
            MissSum.key(&newcomer, &w0) < MissSum.key(t, &w0),
            "newcomer {} vs old {}",
            MissSum.key(&newcomer, &w0),
            MissSum.key(t, &w0)
        );
    }
}

#[test]
fn miss_policies_fall_back_to_virtual_time_without_counts() {
    let (_, w0, _) = setup();
    for kind in [
        PolicyKind::MinMisses,
        PolicyKind::MissSum,
        PolicyKind::ReloadTransient,
    ] {
        let p = Policy::new(kind);
        let (mut a, mut b) = (ThreadAffinity::new(), ThreadAffinity::new());
        p.on_stop(&mut a, None, &w0);
        p.on_stop(&mut b, None, &w0);
        assert_eq!(p.key(&a, &w0), VirtualTime.key(&a, &w0), "{kind}");
        assert!(p.key(&b, &w0) < p.key(&a, &w0), "{kind}");
        assert_eq!(p.expected_reload(&a, &w0), None);
    }
}

#[test]
fn reload_transient_prefers_small_or_fresh_footprints() {
    let (ledger, w0, w1) = setup();
    let p = Policy::new(PolicyKind::ReloadTransient);
    let (mut small, mut big) = (ThreadAffinity::new(), ThreadAffinity::new());
    p.on_stop(&mut small, Some(4), &w0);
    p.on_stop(&mut big, Some(40), &w0);
    // `big` stopped last: its footprint is intact, small's has lost lines to big's misses.
    assert!(p.key(&big, &w0) < p.key(&small, &w0));
    // After a long time both are displaced: the small footprint reloads faster (004 Fig 3.10).
    let d0 = w0.domain().unwrap();
    ledger.advance(d0, 10_000);
    assert!(p.key(&small, &w0) < p.key(&big, &w0));
    // On the other worker's cache nothing is valid: RT(f, 0), footprint size decides.
    assert!(p.key(&small, &w1) < p.key(&big, &w1));
    let rt = p.expected_reload(&big, &w1).unwrap();
    let exact = crate::reload::reload_transient(64, big.footprint().lines(), 0.0);
    assert!(
        (rt - exact).abs() <= crate::reload::ReloadTable::max_error_in_cache_sizes() * 64.0 + 1e-9
    );
}

#[test]
fn working_set_hints_drive_the_model_without_a_pmu() {
    let (ledger, w0, _) = setup();
    let d0 = w0.domain().unwrap();
    let (mut small, mut big) = (ThreadAffinity::new(), ThreadAffinity::new());
    for _ in 0..5 {
        for (t, ws) in [(&mut small, 6u64), (&mut big, 40)] {
            let misses = t.estimated_misses(ws, &w0).unwrap();
            ReloadTransient.on_stop(t, Some(misses), &w0);
        }
    }
    // Footprints settle at about the working sets (within the rounding of one miss).
    assert!(
        (small.footprint().lines() - 6.0).abs() < 1.0,
        "{}",
        small.footprint().lines()
    );
    assert!(
        (big.footprint().lines() - 40.0).abs() < 1.0,
        "{}",
        big.footprint().lines()
    );
    // After a long wait the small working set reloads faster.
    ledger.advance(d0, 1000);
    assert!(ReloadTransient.key(&small, &w0) < ReloadTransient.key(&big, &w0));
    let unpinned = WorkerAffinity::new(5, None, ledger.clone());
    assert_eq!(small.estimated_misses(6, &unpinned), None);
}

#[test]
fn unpinned_worker_has_no_domain() {
    let (ledger, _, _) = setup();
    let w = WorkerAffinity::new(3, None, ledger.clone());
    assert_eq!(w.domain(), None);
    let mut t = ThreadAffinity::new();
    ReloadTransient.on_stop(&mut t, Some(5), &w);
    assert_eq!(t.footprint().domain(), None);
    assert_eq!(ReloadTransient.key(&t, &w), VirtualTime.key(&t, &w));
}

proptest! {
    /// Keys are a deterministic function of the history: replaying the same stops in two
    /// fresh worlds gives the same keys, and VirtualTime orders by recency on the worker.
    #[test]
    fn virtual_time_orders_by_last_stop(order in proptest::collection::vec(0usize..6, 1..60)) {
        let (_, w0, _) = setup();
        let mut threads = [ThreadAffinity::new(); 6];
        let mut last_seen = [None; 6];
        for (step, &t) in order.iter().enumerate() {
            VirtualTime.on_stop(&mut threads[t], None, &w0);
            last_seen[t] = Some(step);
        }
        for a in 0..6 {
            for b in 0..6 {
                let (ka, kb) = (VirtualTime.key(&threads[a], &w0), VirtualTime.key(&threads[b], &w0));
                match (last_seen[a], last_seen[b]) {
                    (Some(x), Some(y)) => prop_assert_eq!(ka.cmp(&kb), y.cmp(&x)),
                    (Some(_), None) => prop_assert!(ka < kb),
                    (None, None) => prop_assert_eq!(ka, kb),
                    (None, Some(_)) => prop_assert!(ka > kb),
                }
            }
        }
    }

    /// `Policy` dispatches to the five strategies: same keys for the same history, and the
    /// miss-based ones order like VirtualTime when nothing is counted.
    #[test]
    fn policy_dispatch_matches_strategies(history in proptest::collection::vec((0usize..4, 0usize..2, proptest::option::of(0u64..5000)), 1..40)) {
        let (ledger, w0, w1) = setup();
        let workers = [&w0, &w1];
        let mut threads = [ThreadAffinity::new(); 4];
        for (t, w, misses) in history {
            Policy::default().on_stop(&mut threads[t], misses, workers[w]);
            ledger.advance(workers[w].domain().unwrap(), misses.unwrap_or(0) / 2);
        }
        for t in &threads {
            for w in workers {
                prop_assert_eq!(Policy::new(PolicyKind::VirtualTime).key(t, w), VirtualTime.key(t, w));
                prop_assert_eq!(Policy::new(PolicyKind::MinMisses).key(t, w), MinMisses.key(t, w));
                prop_assert_eq!(Policy::new(PolicyKind::MissSum).key(t, w), MissSum.key(t, w));
                prop_assert_eq!(Policy::new(PolicyKind::ReloadTransient).key(t, w), ReloadTransient.key(t, w));
                if t.last_misses().is_none() {
                    prop_assert_eq!(MissSum.key(t, w), VirtualTime.key(t, w));
                    prop_assert_eq!(ReloadTransient.key(t, w), VirtualTime.key(t, w));
                }
                if let Some(rt) = ReloadTransient.expected_misses(t, w) {
                    prop_assert!(rt >= 0.0 && rt.is_finite());
                }
            }
        }
    }

    /// Reload-transient keys grow as a waiting thread's domain sees more misses.
    #[test]
    fn reload_key_grows_while_waiting(misses in 1u64..200, waits in proptest::collection::vec(0u64..500, 1..10)) {
        let (ledger, w0, _) = setup();
        let p = ReloadTransient;
        let mut t = ThreadAffinity::new();
        p.on_stop(&mut t, Some(misses), &w0);
        let mut last = p.key(&t, &w0);
        for w in waits {
            ledger.advance(w0.domain().unwrap(), w);
            let k = p.key(&t, &w0);
            prop_assert!(k >= last);
            last = k;
        }
    }
}
