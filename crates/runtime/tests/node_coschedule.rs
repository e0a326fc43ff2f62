//! ADAPT across processes: footprint programs (this test binary re-run as children) enter and
//! leave one node table; the table stays consistent, dead members are removed and their share
//! is handed back.

use footprint_runtime::node::{MemberView, NodeConfig, NodeTable};
use footprint_runtime::Runtime;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "FP_NODE_CHILD_TABLE";
const CHILD_SECS: &str = "FP_NODE_CHILD_SECS";
const CHILD_WORK: &str = "FP_NODE_CHILD_WORK";

/// The child: a co-scheduled runtime that works (busy or lock-bound) for the given seconds,
/// then drops its runtime (leaving the table), unless it is killed first.
#[test]
#[ignore = "run by node_table_stays_consistent_as_programs_enter_and_leave as a child process"]
fn node_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let secs: u64 = std::env::var(CHILD_SECS)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let lock_bound = std::env::var(CHILD_WORK).is_ok_and(|w| w == "lock");
    let rt = Runtime::builder()
        .workers(2)
        .pin(false)
        .co_schedule(
            NodeConfig::new("test")
                .path(path)
                .interval(Duration::from_millis(50)),
        )
        .build()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(secs);
    let m = footprint_locks::Mutex::new(0u64);
    while Instant::now() < until {
        rt.block_on(|| {
            footprint_runtime::scope(|s| {
                for w in 0..2 {
                    let m = &m;
                    s.spawn(move || {
                        // One thread per worker, so that the lock-bound ones contend.
                        footprint_runtime::migrate_to(w).unwrap();
                        for _ in 0..200 {
                            if lock_bound {
                                let mut g = m.lock();
                                for i in 0..2000u64 {
                                    *g = g.wrapping_add(std::hint::black_box(i));
                                }
                            } else {
                                std::hint::black_box((0..2000u64).sum::<u64>());
                            }
                            footprint_runtime::yield_now();
                        }
                    });
                }
            })
        });
    }
    drop(rt);
}

fn child(path: &Path, secs: u64, work: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "node_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, path)
        .env(CHILD_SECS, secs.to_string())
        .env(CHILD_WORK, work)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Polls the table until `ok` holds for its members (or fails after 60 s, saying what it saw).
fn wait_for(t: &NodeTable, what: &str, ok: impl Fn(&[MemberView]) -> bool) -> Vec<MemberView> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let m = t.members().unwrap();
        if ok(&m) {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: never happened; table: {m:#?}"
        );
        std::thread::sleep(Duration::from_millis(20)); // polling interval, not synchronisation
    }
}

/// Every member has a share; processor sets are disjoint, within the allowed CPUs, and
/// either all members have one or none does.
fn consistent(m: &[MemberView], pids: &[u32]) -> bool {
    let allowed = footprint_affinity::allowed_cpus().unwrap();
    let mut own: Vec<u32> = m.iter().map(|v| v.pid).collect();
    own.sort_unstable();
    let mut want = pids.to_vec();
    want.sort_unstable();
    if own != want || m.iter().any(|v| v.assigned.is_none() || v.heartbeat == 0) {
        return false;
    }
    let sets: Vec<&Vec<usize>> = m
        .iter()
        .filter_map(|v| v.assigned.as_ref().unwrap().as_ref())
        .collect();
    if sets.is_empty() {
        return true;
    }
    let mut seen = std::collections::HashSet::new();
    sets.len() == m.len()
        && sets
            .iter()
            .flat_map(|s| s.iter())
            .all(|c| allowed.contains(c) && seen.insert(*c))
}

fn table_file(tag: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("fp-node-it-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

#[test]
fn node_table_stays_consistent_as_programs_enter_and_leave() {
    let path = table_file("enter-leave");
    let t = NodeTable::open(&path).unwrap();

    // Two lock-bound programs enter.
    let mut a = child(&path, 120, "lock");
    let b = child(&path, 120, "lock");
    let two = [a.id(), b.id()];
    let m = wait_for(&t, "two members with consistent shares", |m| {
        consistent(m, &two)
    });
    eprintln!(
        "two programs: {:?}",
        m.iter()
            .map(|v| (&v.assigned, v.profile))
            .collect::<Vec<_>>()
    );

    // One is killed: its slot goes and the survivor gets all cores back.
    a.kill().unwrap();
    let m = wait_for(
        &t,
        "the killed member removed, all cores to the other",
        |m| m.len() == 1 && m[0].pid == b.id() && m[0].assigned == Some(None),
    );
    assert_eq!(m[0].pid, b.id());
    a.wait().unwrap();

    // Three more enter (four in all, two busy, one lock-bound), two of them leave by themselves.
    let c = child(&path, 120, "busy");
    let mut d = child(&path, 3, "busy");
    let mut e = child(&path, 3, "lock");
    let four = [b.id(), c.id(), d.id(), e.id()];
    wait_for(&t, "four members with consistent shares", |m| {
        consistent(m, &four)
    });
    assert!(d.wait().unwrap().success());
    assert!(e.wait().unwrap().success());
    let two = [b.id(), c.id()];
    wait_for(&t, "the two that left are gone, the rest consistent", |m| {
        consistent(m, &two)
    });

    // The rest are killed: the table ends empty.
    let mut rest = [b, c];
    for ch in &mut rest {
        ch.kill().unwrap();
    }
    wait_for(&t, "every killed member removed", |m| m.is_empty());
    for ch in &mut rest {
        ch.wait().unwrap();
    }
    let _ = std::fs::remove_file(&path);
}
