//! What `Runtime::stats()` reads at well-defined moments: complete right after `block_on`
//! returns, deltas between two snapshots, and (feature `serde`) the export.

use footprint_runtime::{spawn, Runtime, RuntimeStats};

/// Right after `block_on` returned, every green thread of the closure, and `block_on`'s own,
/// has been counted as finished: the worker counts a thread before it wakes the thread's
/// joiner. (Counted after the wake-up, a snapshot taken at once read one short.)
#[test]
fn stats_after_block_on_count_every_thread_finished() {
    for workers in [1, 2] {
        let rt = Runtime::builder().workers(workers).build().unwrap();
        for round in 0..300u64 {
            let v = rt.block_on(|| {
                let hs: Vec<_> = (0..3u64).map(|i| spawn(move || i)).collect();
                hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
            });
            assert_eq!(v, 3);
            let s = rt.stats();
            assert_eq!(
                s.finished, s.spawned,
                "{workers} workers, round {round}: a finished thread not counted yet\n{s}"
            );
            // Four per round: three spawned, plus `block_on`'s own.
            assert_eq!(s.spawned, 4 * (round + 1), "{s}");
        }
    }
}

/// Also for a thread spawned with `Runtime::spawn` and joined from outside the runtime.
#[test]
fn stats_after_an_outside_join_count_the_thread_finished() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    for round in 1..=300u64 {
        assert_eq!(rt.spawn(move || round).join().unwrap(), round);
        let s = rt.stats();
        assert_eq!((s.spawned, s.finished), (round, round), "{s}");
    }
}

#[test]
fn since_subtracts_every_count_and_keeps_the_shape() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    rt.block_on(|| spawn(|| ()).join().unwrap());
    let before = rt.stats();
    rt.block_on(|| {
        let hs: Vec<_> = (0..20).map(|i| spawn(move || i)).collect();
        hs.into_iter().for_each(|h| drop(h.join()));
    });
    let after = rt.stats();
    let d = after.since(&before);
    assert_eq!(d.spawned, after.spawned - before.spawned);
    assert_eq!(d.spawned, 21);
    assert_eq!(d.finished, 21);
    assert_eq!(d.steals(), after.steals() - before.steals());
    assert_eq!(d.steals, d.steals());
    assert_eq!(d.workers.len(), 2);
    for (i, w) in d.workers.iter().enumerate() {
        assert_eq!(w.runs, after.workers[i].runs - before.workers[i].runs);
        assert_eq!(w.parks, after.workers[i].parks - before.workers[i].parks);
        assert_eq!(w.cpu, after.workers[i].cpu);
    }
    // Nothing happened between two snapshots with no work: all zero.
    let idle = rt.stats();
    let z = idle.since(&idle);
    assert_eq!((z.spawned, z.finished, z.steals()), (0, 0, 0));
    assert!(z.workers.iter().all(|w| w.runs == 0 && w.parks == 0));
    assert_eq!(z.counters, idle.counters);
    // A later snapshot given as the earlier one saturates at zero rather than wrapping.
    assert_eq!(before.since(&after).spawned, 0);
    assert_eq!(RuntimeStats::default().since(&after).workers.len(), 0);
}

#[cfg(feature = "serde")]
#[test]
fn stats_serialize_with_every_field() {
    use footprint_runtime::Counters;
    let rt = Runtime::builder()
        .workers(2)
        .counters(Counters::Time)
        .build()
        .unwrap();
    let h = rt.spawn(|| {
        footprint_runtime::yield_now();
        7
    });
    let thread = h.stats();
    assert_eq!(h.join().unwrap(), 7);
    let s = rt.stats();
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["spawned"], s.spawned);
    assert_eq!(json["finished"], s.finished);
    assert_eq!(json["counters"], "time only");
    assert_eq!(json["workers"].as_array().unwrap().len(), 2);
    assert_eq!(json["workers"][0]["runs"], s.workers[0].runs);
    assert!(json["workers"][0]["idle_time"]["secs"].is_u64());
    assert_eq!(json["loops"]["affinity_runs"], 0);
    assert!(json["adaptive"].is_null());
    let t = serde_json::to_value(thread).unwrap();
    assert!(
        t["runs"].is_u64() && t["lock_wait"]["nanos"].is_u64(),
        "{t}"
    );
}
