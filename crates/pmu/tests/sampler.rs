//! The profile sampler, driven deterministically through scripted snapshots and `sample_now`,
//! plus real-thread tests that wait on conditions (never on sleeps).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use footprint_pmu::{
    current_tid, PmuError, ProfileSampler, SamplerConfig, ScriptedProfile, Snapshot, TaskCounts,
    ThreadRegistry, ThreadSelection,
};

mod common;
use common::spin_cpu;

const MS: u64 = 1_000_000;

fn task(tid: i32, cpu_ms: u64, vol: u64, invol: u64) -> TaskCounts {
    TaskCounts {
        tid,
        cpu_ns: cpu_ms * MS,
        voluntary_switches: vol,
        involuntary_switches: invol,
        ..TaskCounts::default()
    }
}

fn snap(t_ms: u64, process: TaskCounts, threads: Vec<TaskCounts>) -> Snapshot {
    Snapshot {
        at_ns: t_ms * MS,
        cpus: 2,
        process,
        threads,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn first_snapshot_is_the_baseline_then_process_rates_are_exact() {
    let source = ScriptedProfile::new([
        snap(1000, task(1, 100, 10, 2), vec![]),
        snap(1200, task(1, 400, 30, 6), vec![]),
    ]);
    let mut s = ProfileSampler::new(SamplerConfig::default(), source).unwrap();
    assert!(s.sample_now().unwrap().is_none());
    assert!(s.latest().is_none());
    let p = s.sample_now().unwrap().unwrap();
    assert_eq!(p.seq, 0);
    assert_eq!(p.duration(), Duration::from_millis(200));
    assert!(close(p.process.cpu_utilisation, 1.5), "{p:?}");
    assert!(close(p.cpu_fraction(), 0.75));
    assert!(close(p.process.voluntary_switches_per_s, 100.0));
    assert!(close(p.process.involuntary_switches_per_s, 20.0));
    assert_eq!(p.process.migrations_per_s, None);
    assert_eq!(p.process.llc_miss_ratio, None);
    assert_eq!(p.lock_waiting, None);
    assert_eq!(p.lock_time_fraction, None);
    assert_eq!(s.latest(), Some(&p));
    assert_eq!(s.intervals(), 1);
    assert!(matches!(
        s.sample_now(),
        Err(PmuError::ScriptExhausted { served: 2 })
    ));
}

#[test]
fn thread_rates_and_process_sums_from_thread_deltas() {
    let a0 = TaskCounts {
        migrations: Some(5),
        run_delay_ns: Some(10 * MS),
        llc_misses: Some(100),
        llc_references: Some(1000),
        ..task(11, 50, 1, 1)
    };
    let a1 = TaskCounts {
        migrations: Some(7),
        run_delay_ns: Some(30 * MS),
        llc_misses: Some(110),
        llc_references: Some(1100),
        ..task(11, 150, 3, 1)
    };
    let b0 = TaskCounts {
        migrations: Some(0),
        run_delay_ns: Some(0),
        llc_misses: Some(0),
        llc_references: Some(0),
        ..task(12, 0, 0, 0)
    };
    let b1 = TaskCounts {
        migrations: Some(1),
        run_delay_ns: Some(20 * MS),
        llc_misses: Some(30),
        llc_references: Some(100),
        ..task(12, 200, 0, 4)
    };
    // Thread 13 appears only at the end: no rates for it in this interval.
    let c1 = task(13, 5, 0, 0);
    let source = ScriptedProfile::new([
        // Threads given out of order: the sampler sorts them.
        snap(0, task(1, 0, 0, 0), vec![b0, a0]),
        snap(200, task(1, 300, 2, 4), vec![c1, a1, b1]),
    ]);
    let mut s = ProfileSampler::new(SamplerConfig::default(), source).unwrap();
    s.sample_now().unwrap();
    let p = s.sample_now().unwrap().unwrap();
    assert_eq!(p.live_threads, 3);
    assert_eq!(
        p.threads.iter().map(|t| t.tid).collect::<Vec<_>>(),
        vec![11, 12]
    );
    let a = p.thread(11).unwrap();
    assert!(close(a.cpu_utilisation, 0.5));
    assert!(close(a.voluntary_switches_per_s, 10.0));
    assert!(close(a.migrations_per_s.unwrap(), 10.0));
    assert!(close(a.run_delay_share.unwrap(), 0.1));
    assert!(close(a.llc_miss_ratio.unwrap(), 0.1));
    let b = p.thread(12).unwrap();
    assert!(close(b.cpu_utilisation, 1.0));
    assert!(close(b.involuntary_switches_per_s, 20.0));
    assert!(close(b.llc_miss_ratio.unwrap(), 0.3));
    assert!(p.thread(13).is_none());
    // Process: migrations (2 + 1) / 0.2 s, run delay (20 + 20 ms) / 200 ms,
    // LLC (10 + 30) / (100 + 100).
    assert!(close(p.process.migrations_per_s.unwrap(), 15.0));
    assert!(close(p.process.run_delay_share.unwrap(), 0.2));
    assert!(close(p.process.llc_miss_ratio.unwrap(), 0.2));
}

#[test]
fn a_reused_tid_whose_counts_went_backwards_is_left_out() {
    let source = ScriptedProfile::new([
        snap(0, task(1, 0, 0, 0), vec![task(20, 500, 9, 9)]),
        snap(200, task(1, 100, 0, 0), vec![task(20, 10, 0, 0)]),
        snap(400, task(1, 200, 0, 0), vec![task(20, 110, 1, 0)]),
    ]);
    let mut s = ProfileSampler::new(SamplerConfig::default(), source).unwrap();
    s.sample_now().unwrap();
    let p = s.sample_now().unwrap().unwrap();
    assert!(p.threads.is_empty(), "{p:?}");
    // The new thread's counts become the baseline for the next interval.
    let p = s.sample_now().unwrap().unwrap();
    assert!(close(p.thread(20).unwrap().cpu_utilisation, 0.5));
}

#[test]
fn lock_time_channel() {
    let waited = Arc::new(AtomicU64::new(0));
    let w = Arc::clone(&waited);
    let threads = || vec![task(5, 0, 0, 0), task(6, 0, 0, 0)];
    let source = ScriptedProfile::new([
        snap(0, task(1, 0, 0, 0), threads()),
        snap(200, task(1, 0, 0, 0), threads()),
        snap(400, task(1, 0, 0, 0), vec![]),
    ]);
    let mut s = ProfileSampler::new(SamplerConfig::default(), source)
        .unwrap()
        .with_lock_time(move || w.load(Ordering::Relaxed));
    waited.store(1_000 * MS, Ordering::Relaxed);
    s.sample_now().unwrap();
    waited.store(1_100 * MS, Ordering::Relaxed);
    let p = s.sample_now().unwrap().unwrap();
    // 100 ms of lock waits in 200 ms: half a thread waiting; two threads: 25 % lock time.
    assert!(close(p.lock_waiting.unwrap(), 0.5), "{p:?}");
    assert!(close(p.lock_time_fraction.unwrap(), 0.25));
    // No threads sampled: the fraction has no denominator.
    let p = s.sample_now().unwrap().unwrap();
    assert!(close(p.lock_waiting.unwrap(), 0.0));
    assert_eq!(p.lock_time_fraction, None);
}

#[test]
fn window_summary_and_callback_every_window() {
    let config = SamplerConfig {
        interval: Duration::from_millis(200),
        window: 3,
        history: 5,
    };
    // CPU utilisation of interval i is i + 1 (cumulative CPU grows by (i + 1) × 200 ms).
    let mut cpu_ms = 0;
    let mut snaps = vec![snap(0, task(1, 0, 0, 0), vec![])];
    for i in 0..7u64 {
        cpu_ms += (i + 1) * 200;
        snaps.push(snap((i + 1) * 200, task(1, cpu_ms, i, 0), vec![]));
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let mut s = ProfileSampler::new(config, ScriptedProfile::new(snaps))
        .unwrap()
        .on_window(move |w| seen2.lock().unwrap().push(w.clone()));
    s.sample_now().unwrap();
    s.sample_now().unwrap();
    s.sample_now().unwrap();
    assert!(
        s.window_summary().is_none(),
        "two intervals are not a window of three"
    );
    for _ in 0..5 {
        s.sample_now().unwrap();
    }
    assert_eq!(s.intervals(), 7);
    assert_eq!(s.history().len(), 5);
    assert_eq!(s.history().next().unwrap().seq, 2);
    let w = s.window_summary().unwrap();
    assert_eq!(w.intervals, 3);
    assert_eq!(w.last_seq, 6);
    assert_eq!(w.span, Duration::from_millis(600));
    // Last three utilisations: 5, 6, 7.
    assert!(close(w.cpu_utilisation.mean, 6.0));
    assert!(close(w.cpu_utilisation.std_dev, (2.0f64 / 3.0).sqrt()));
    assert!(close(w.cpu_utilisation.min, 5.0) && close(w.cpu_utilisation.max, 7.0));
    assert_eq!(w.llc_miss_ratio, None);
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.iter().map(|w| w.last_seq).collect::<Vec<_>>(),
        vec![2, 5],
        "the callback runs once per completed window"
    );
    assert!(close(seen[0].cpu_utilisation.mean, 2.0));
    assert!(w.to_string().contains("3 intervals"));
}

#[test]
fn a_snapshot_that_does_not_advance_is_ignored() {
    let source = ScriptedProfile::new([
        snap(100, task(1, 0, 0, 0), vec![]),
        snap(100, task(1, 50, 0, 0), vec![]),
        snap(300, task(1, 100, 0, 0), vec![]),
    ]);
    let mut s = ProfileSampler::new(SamplerConfig::default(), source).unwrap();
    assert!(s.sample_now().unwrap().is_none());
    assert!(s.sample_now().unwrap().is_none());
    let p = s.sample_now().unwrap().unwrap();
    assert!(close(p.process.cpu_utilisation, 0.5));
}

#[test]
fn nonsensical_configs_are_typed_errors() {
    let bad = [
        SamplerConfig {
            interval: Duration::ZERO,
            ..SamplerConfig::default()
        },
        SamplerConfig {
            window: 0,
            ..SamplerConfig::default()
        },
        SamplerConfig {
            window: 10,
            history: 9,
            ..SamplerConfig::default()
        },
    ];
    for config in bad {
        match ProfileSampler::new(config.clone(), ScriptedProfile::default()) {
            Err(PmuError::InvalidConfig(msg)) => assert!(!msg.is_empty()),
            other => panic!("{config:?} gave {other:?}"),
        }
    }
    let d = SamplerConfig::default();
    assert_eq!((d.interval, d.window), (Duration::from_millis(200), 10));
}

#[test]
fn background_sampler_replays_a_script_and_hands_it_back() {
    let source = ScriptedProfile::default();
    let feeder = source.feeder();
    for i in 0..6u64 {
        feeder.push(snap(i * 200, task(1, i * 100, 0, 0), vec![]));
    }
    let config = SamplerConfig {
        interval: Duration::from_millis(1),
        window: 5,
        history: 10,
    };
    let bg = ProfileSampler::new(config, source)
        .unwrap()
        .start()
        .unwrap();
    assert!(bg.wait_for_intervals(5, Duration::from_secs(60)));
    let w = bg.window_summary().unwrap();
    assert!(close(w.cpu_utilisation.mean, 0.5));
    assert!(close(w.cpu_utilisation.std_dev, 0.0));
    let s = bg.stop();
    assert_eq!(s.intervals(), 5);
    assert_eq!(s.history().len(), 5);
}

#[test]
fn background_errors_are_counted_not_fatal() {
    let source = ScriptedProfile::default();
    let feeder = source.feeder();
    let config = SamplerConfig {
        interval: Duration::from_millis(1),
        ..SamplerConfig::default()
    };
    let bg = ProfileSampler::new(config, source)
        .unwrap()
        .start()
        .unwrap();
    // The script is empty: every tick fails until snapshots arrive.
    let deadline = Instant::now() + Duration::from_secs(60);
    while bg.errors().0 == 0 {
        assert!(Instant::now() < deadline, "no error recorded");
        std::thread::yield_now();
    }
    assert!(bg.errors().1.unwrap().contains("no more readings"));
    feeder.push(snap(0, task(1, 0, 0, 0), vec![]));
    feeder.push(snap(200, task(1, 100, 0, 0), vec![]));
    assert!(bg.wait_for_intervals(1, Duration::from_secs(60)));
}

#[test]
fn background_sampler_on_real_threads() {
    let registry = ThreadRegistry::new();
    let stop = Arc::new(AtomicBool::new(false));
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let worker = {
        let registry = registry.clone();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            tid_tx.send(registry.register_current()).unwrap();
            while !stop.load(Ordering::Relaxed) {
                spin_cpu(2);
            }
        })
    };
    let worker_tid = tid_rx.recv().unwrap();
    let config = SamplerConfig {
        interval: Duration::from_millis(10),
        window: 3,
        history: 20,
    };
    let bg = ProfileSampler::procfs(config, ThreadSelection::Registry(registry.clone()))
        .unwrap()
        .start()
        .unwrap();
    assert!(bg.wait_for_intervals(5, Duration::from_secs(60)));
    let history = bg.history();
    assert!(history.len() >= 5);
    let worker_cpu: f64 = history
        .iter()
        .filter_map(|p| p.thread(worker_tid))
        .map(|r| r.cpu_utilisation)
        .sum();
    assert!(
        worker_cpu > 0.0,
        "the spinning worker used no CPU: {history:?}"
    );
    for p in &history {
        assert!(p.threads.iter().all(|t| t.tid == worker_tid), "{p:?}");
        assert!(p.process.cpu_utilisation >= 0.0);
        assert!(
            p.process.migrations_per_s.is_some()
                == p.thread(worker_tid)
                    .is_some_and(|t| t.migrations_per_s.is_some())
        );
    }
    assert!(bg.window_summary().is_some());
    let o = bg.overhead();
    assert!(o.snapshots >= 6 && o.wall_ns > 0, "{o:?}");
    assert_eq!(bg.errors().0, 0, "{:?}", bg.errors().1);
    stop.store(true, Ordering::Relaxed);
    worker.join().unwrap();
    registry.unregister(worker_tid);
    drop(bg);
}

#[test]
fn all_threads_selection_leaves_the_sampler_thread_out() {
    let config = SamplerConfig {
        interval: Duration::from_millis(5),
        ..SamplerConfig::default()
    };
    let bg = ProfileSampler::procfs(config, ThreadSelection::All)
        .unwrap()
        .start()
        .unwrap();
    assert!(bg.wait_for_intervals(2, Duration::from_secs(60)));
    let sampler_tid = bg.sampler_tid().unwrap();
    let p = bg.latest().unwrap();
    assert!(p.thread(current_tid()).is_some(), "{p:?}");
    assert!(p.thread(sampler_tid).is_none(), "{p:?}");
}

#[test]
fn drop_is_prompt_even_with_a_long_interval() {
    let config = SamplerConfig {
        interval: Duration::from_secs(3600),
        ..SamplerConfig::default()
    };
    let bg = ProfileSampler::procfs(config, ThreadSelection::ProcessOnly)
        .unwrap()
        .start()
        .unwrap();
    // The baseline snapshot is taken at once; then the thread waits an hour unless woken.
    let deadline = Instant::now() + Duration::from_secs(60);
    while bg.overhead().snapshots == 0 {
        assert!(Instant::now() < deadline);
        std::thread::yield_now();
    }
    let t = Instant::now();
    drop(bg);
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "drop waited out the interval"
    );
}

#[test]
fn lock_time_wired_later_starts_after_two_readings() {
    let source = ScriptedProfile::new(
        (0..4).map(|i| snap(i * 200, task(1, 0, 0, 0), vec![task(7, 0, 0, 0)])),
    );
    let mut s = ProfileSampler::new(SamplerConfig::default(), source).unwrap();
    s.sample_now().unwrap();
    s.set_lock_time(Box::new(|| 500 * MS));
    let p = s.sample_now().unwrap().unwrap();
    assert_eq!(p.lock_waiting, None, "one reading is not a rate");
    s.set_lock_time(Box::new(|| 600 * MS));
    assert_eq!(
        s.sample_now().unwrap().unwrap().lock_waiting,
        None,
        "replaced: starts over"
    );
    // The counter stays at 600 ms: no waiting in the last interval.
    assert_eq!(s.sample_now().unwrap().unwrap().lock_waiting, Some(0.0));
}

#[test]
fn stress_concurrent_waiters_see_the_exact_interval_count() {
    let n: u64 = if cfg!(debug_assertions) { 200 } else { 2_000 };
    let source =
        ScriptedProfile::new((0..=n).map(|i| snap(i * 200, task(1, i * 100, i, 0), vec![])));
    let config = SamplerConfig {
        interval: Duration::from_millis(1),
        window: 10,
        history: 10,
    };
    let bg = ProfileSampler::new(config, source)
        .unwrap()
        .start()
        .unwrap();
    std::thread::scope(|s| {
        for k in 1..=4u64 {
            let bg = &bg;
            s.spawn(move || assert!(bg.wait_for_intervals(n * k / 4, Duration::from_secs(120))));
        }
    });
    // The script is exhausted after n + 1 snapshots: exactly n intervals, then only errors.
    let deadline = Instant::now() + Duration::from_secs(60);
    while bg.errors().0 == 0 {
        assert!(Instant::now() < deadline);
        std::thread::yield_now();
    }
    let s = bg.stop();
    assert_eq!(s.intervals(), n);
    assert_eq!(s.latest().unwrap().seq, n - 1);
    assert!(close(s.window_summary().unwrap().cpu_utilisation.mean, 0.5));
}

#[test]
fn proc_profile_source_selections() {
    use footprint_pmu::{ProcProfileSource, ProfileSource};
    let me = current_tid();
    let mut snap = Snapshot::default();
    let mut only = ProcProfileSource::new(ThreadSelection::Only(vec![me, i32::MAX]));
    only.snapshot(&mut snap).unwrap();
    assert_eq!(
        snap.threads.iter().map(|t| t.tid).collect::<Vec<_>>(),
        vec![me]
    );
    assert_eq!(snap.process.tid, std::process::id() as i32);
    assert!(snap.process.cpu_ns >= snap.threads[0].cpu_ns);
    assert!(snap.cpus >= 1 && snap.at_ns > 0);

    let mut none = ProcProfileSource::new(ThreadSelection::ProcessOnly);
    none.snapshot(&mut snap).unwrap();
    assert!(snap.threads.is_empty());

    let registry = ThreadRegistry::new();
    let mut reg = ProcProfileSource::new(ThreadSelection::Registry(registry.clone()));
    reg.snapshot(&mut snap).unwrap();
    assert!(snap.threads.is_empty());
    assert_eq!(registry.register_current(), me);
    reg.snapshot(&mut snap).unwrap();
    assert_eq!(snap.threads.len(), 1);
    reg.exclude_thread(me);
    reg.snapshot(&mut snap).unwrap();
    assert!(snap.threads.is_empty(), "excluded threads stay out");

    let mut all = ProcProfileSource::new(ThreadSelection::All).llc(footprint_pmu::LlcCounting::Off);
    all.snapshot(&mut snap).unwrap();
    assert!(snap.threads.iter().any(|t| t.tid == me));
    assert!(snap.threads.windows(2).all(|w| w[0].tid < w[1].tid));
    assert!(!all.llc_status().is_available());
}
