//! The crate used the way the runtime uses it, through the public API only: a 4-CPU machine with
//! two L2 pairs and one L3, a ledger on the L2 level, one `WorkerAffinity` per worker, green
//! threads that stop and become ready again, and placement advice on wake-ups.

use footprint_affinity::placement::fragments::FragmentBatcher;
use footprint_affinity::placement::lock_hot::{LockHotPlacement, LockHotReason};
use footprint_affinity::{
    AffinityPolicy, CacheDomain, Ledger, Policy, PolicyKind, ThreadAffinity, Topology,
    WorkerAffinity,
};
use std::sync::Arc;

fn machine() -> Topology {
    let cache = |level, size_bytes, cpus: Vec<usize>| CacheDomain {
        level,
        size_bytes,
        line_size: 64,
        cpus,
    };
    Topology::from_parts(
        vec![0, 1, 2, 3],
        vec![
            cache(2, 64 << 10, vec![0, 1]),
            cache(2, 64 << 10, vec![2, 3]),
            cache(3, 1 << 20, vec![0, 1, 2, 3]),
        ],
        vec![],
    )
}

/// Replays a scripted history and returns every key each policy gives, for every thread on
/// every worker.
fn replay(kind: PolicyKind) -> Vec<u64> {
    let topo = machine();
    let ledger = Arc::new(Ledger::new(&topo, 2));
    let workers: Vec<WorkerAffinity> = topo
        .cpus()
        .iter()
        .enumerate()
        .map(|(i, &cpu)| WorkerAffinity::new(i, Some(cpu), ledger.clone()))
        .collect();
    let policy = Policy::new(kind);
    let mut threads = vec![ThreadAffinity::new(); 8];
    let mut x: u64 = 12345;
    for step in 0..200u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let t = (x >> 33) as usize % threads.len();
        let w = (x >> 40) as usize % workers.len();
        let misses = (step % 7 != 0).then_some((x >> 50) % 900);
        policy.on_stop(&mut threads[t], misses, &workers[w]);
    }
    let mut keys = Vec::new();
    for t in &threads {
        for w in &workers {
            keys.push(policy.key(t, w));
        }
    }
    keys
}

#[test]
fn decisions_are_deterministic() {
    for kind in PolicyKind::ALL {
        assert_eq!(replay(kind), replay(kind), "{kind}");
    }
}

#[test]
fn workers_sharing_an_l2_share_footprints() {
    let topo = machine();
    let ledger = Arc::new(Ledger::new(&topo, 2));
    let w: Vec<WorkerAffinity> = (0..4)
        .map(|i| WorkerAffinity::new(i, Some(i), ledger.clone()))
        .collect();
    assert_eq!(w[0].domain(), w[1].domain());
    assert_ne!(w[0].domain(), w[2].domain());
    let policy = Policy::new(PolicyKind::ReloadTransient);
    let mut t = ThreadAffinity::new();
    policy.on_stop(&mut t, Some(300), &w[0]);
    // Its footprint is in the L2 of CPUs 0-1: nothing to reload there, everything on 2-3.
    assert_eq!(policy.key(&t, &w[0]), 0);
    assert_eq!(policy.key(&t, &w[1]), 0);
    assert!(policy.key(&t, &w[2]) > 0);
    assert_eq!(policy.key(&t, &w[2]), policy.key(&t, &w[3]));
    // Misses of a thread running on CPU 1 displace it.
    let mut other = ThreadAffinity::new();
    policy.on_stop(&mut other, Some(2000), &w[1]);
    assert!(policy.key(&t, &w[0]) > 0);
}

#[test]
fn auto_without_counters_is_virtual_time_everywhere() {
    let topo = machine();
    let ledger = Arc::new(Ledger::for_last_level(&topo));
    assert_eq!(ledger.level(), 3);
    let policy = Policy::auto(false);
    assert_eq!(policy.kind(), PolicyKind::VirtualTime);
    assert!(policy.to_string().contains("auto"));
    let workers: Vec<WorkerAffinity> = (0..4)
        .map(|i| WorkerAffinity::new(i, Some(i), ledger.clone()))
        .collect();
    let mut threads = [ThreadAffinity::new(); 3];
    for t in &mut threads {
        policy.on_stop(t, None, &workers[2]);
    }
    // Most recent first on the worker they ran on; all equal (last) elsewhere.
    let keys: Vec<u64> = threads.iter().map(|t| policy.key(t, &workers[2])).collect();
    assert!(keys[2] < keys[1] && keys[1] < keys[0]);
    assert!(threads
        .iter()
        .all(|t| policy.key(t, &workers[0]) == u64::MAX));
}

#[test]
fn wake_up_advice_composes() {
    // A lock waiter woken by a releaser on worker 1 goes there; a DF-hinted thread joins its batch.
    let lock_hot = LockHotPlacement::default();
    let advice = lock_hot.place_waiter(1, Some(3), &[2, 2, 1, 2]);
    assert_eq!((advice.worker, advice.reason), (1, LockHotReason::LockHot));
    let mut batcher = FragmentBatcher::new(4);
    let first = batcher.place(10, 0xdf);
    let second = batcher.place(11, 0xdf);
    assert_eq!(first.worker, second.worker);
    assert_eq!(first.order, second.order);
    assert!(batcher.remove(10) && batcher.remove(11));
    assert!(batcher.is_empty());
}
