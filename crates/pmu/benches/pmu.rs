//! Cost of one read of each counter source, and of one sampler snapshot.
//!
//! `cargo bench -p footprint-hpc-pmu --bench pmu -- --warm-up-time 1 --measurement-time 3`
//!
//! Where a path does not exist here (no hardware PMU, no rdpmc, perf blocked) the bench says
//! so on stderr and measures nothing for it, rather than measuring something else under its
//! name.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use footprint_pmu::{
    getrusage, thread_cpu_time_ns, Capabilities, CounterSource, Event, PerfGroup, PerfOptions,
    ProcProfileSource, ProcTaskSource, ProfileSampler, ProfileSource, RusageSource, RusageWho,
    SamplerConfig, ScriptedSource, Snapshot, Target, ThreadSelection,
};

fn group_reads(c: &mut Criterion) {
    let mut g = c.benchmark_group("group_read");
    match PerfGroup::hardware(Target::CallingThread) {
        Ok(mut hw) => {
            if hw.rdpmc_usable() {
                g.bench_function("hardware_5_events_rdpmc", |b| {
                    b.iter(|| black_box(hw.read_rdpmc()))
                });
            } else {
                eprintln!(
                    "skipped group_read/hardware_5_events_rdpmc: {}",
                    Capabilities::probe().rdpmc
                );
            }
            g.bench_function("hardware_5_events_read_syscall", |b| {
                b.iter(|| black_box(hw.read_syscall().unwrap()))
            });
        }
        Err(e) => {
            eprintln!("skipped group_read/hardware_5_events_rdpmc and _read_syscall: {e}");
        }
    }
    match PerfGroup::open(
        &[Event::TaskClock, Event::PageFaults],
        Target::CallingThread,
        PerfOptions::default(),
    ) {
        Ok(mut sw) => {
            g.bench_function("perf_software_2_events_read_syscall", |b| {
                b.iter(|| black_box(sw.read_syscall().unwrap()))
            });
        }
        Err(e) => eprintln!("skipped group_read/perf_software_2_events_read_syscall: {e}"),
    }
    // Peer: the same two-event group built and read with perf-event2 directly, to show what
    // our wrapper adds to a read() (a fixed-size Reading instead of GroupData lookups).
    let raw = (|| -> std::io::Result<_> {
        use perf_event::events::Software;
        let mut group = perf_event::Group::new()?;
        let a = group.add(&perf_event::Builder::new(Software::TASK_CLOCK))?;
        let b = group.add(&perf_event::Builder::new(Software::PAGE_FAULTS))?;
        group.enable()?;
        Ok((group, a, b))
    })();
    match raw {
        Ok((mut group, a, b_counter)) => {
            g.bench_function("peer_perf_event2_group_read", |b| {
                b.iter(|| {
                    let data = group.read().unwrap();
                    black_box((data[&a], data[&b_counter]))
                })
            });
        }
        Err(e) => eprintln!("skipped group_read/peer_perf_event2_group_read: {e}"),
    }
    g.finish();
}

fn software_reads(c: &mut Criterion) {
    let mut g = c.benchmark_group("software_read");
    g.bench_function("getrusage_thread", |b| {
        b.iter(|| black_box(getrusage(RusageWho::Thread).unwrap()))
    });
    g.bench_function("clock_thread_cputime", |b| {
        b.iter(|| black_box(thread_cpu_time_ns()))
    });
    let mut rusage = RusageSource::new();
    g.bench_function("rusage_source_5_events", |b| {
        b.iter(|| black_box(rusage.read().unwrap()))
    });
    let mut proc_all = ProcTaskSource::open(Target::CallingThread).unwrap();
    g.bench_function("proc_task_source_all_files", |b| {
        b.iter(|| black_box(proc_all.read().unwrap()))
    });
    let mut proc_schedstat =
        ProcTaskSource::with_events(Target::CallingThread, &[Event::TaskClock, Event::RunDelay])
            .unwrap();
    g.bench_function("proc_task_source_schedstat_only", |b| {
        b.iter(|| black_box(proc_schedstat.read().unwrap()))
    });
    // Peer: open + read + close of the same file each time (what a naive sampler does),
    // against the kept-open pread above.
    let path = format!("/proc/self/task/{}/schedstat", footprint_pmu::current_tid());
    g.bench_function("peer_read_to_string_schedstat", |b| {
        b.iter(|| black_box(std::fs::read_to_string(&path).unwrap()))
    });
    let mut scripted = ScriptedSource::new(&[Event::LlcMisses], [[1u64]])
        .unwrap()
        .on_end(footprint_pmu::ScriptEnd::RepeatLast);
    g.bench_function("scripted_source", |b| {
        b.iter(|| black_box(scripted.read().unwrap()))
    });
    g.finish();
}

fn sampler(c: &mut Criterion) {
    // Eight idle OS threads besides this one, like a runtime with a few workers.
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let stop_rx = std::sync::Arc::new(std::sync::Mutex::new(stop_rx));
    let idle: Vec<_> = (0..8)
        .map(|_| {
            let rx = std::sync::Arc::clone(&stop_rx);
            std::thread::spawn(move || {
                let _ = rx.lock().unwrap().recv();
            })
        })
        .collect();
    let mut g = c.benchmark_group("sampler");
    let mut source = ProcProfileSource::new(ThreadSelection::All);
    let mut snap = Snapshot::default();
    g.bench_function("snapshot_all_threads", |b| {
        b.iter(|| {
            source.snapshot(&mut snap).unwrap();
            black_box(snap.threads.len())
        })
    });
    let mut process_only = ProcProfileSource::new(ThreadSelection::ProcessOnly);
    g.bench_function("snapshot_process_only", |b| {
        b.iter(|| {
            process_only.snapshot(&mut snap).unwrap();
            black_box(snap.process.cpu_ns)
        })
    });
    let mut s = ProfileSampler::procfs(SamplerConfig::default(), ThreadSelection::All).unwrap();
    g.bench_function("sample_now_all_threads", |b| {
        b.iter(|| black_box(s.sample_now().unwrap().is_some()))
    });
    g.finish();

    drop(stop_tx);
    for h in idle {
        h.join().unwrap();
    }
    // The background sampler at its default interval: CPU time of its thread against wall
    // time, over 3 s (printed, not a criterion measurement), with 8 and 64 idle threads.
    background_overhead(8);
    background_overhead(64);
}

fn background_overhead(idle_threads: usize) {
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let stop_rx = std::sync::Arc::new(std::sync::Mutex::new(stop_rx));
    let idle: Vec<_> = (0..idle_threads)
        .map(|_| {
            let rx = std::sync::Arc::clone(&stop_rx);
            std::thread::spawn(move || {
                let _ = rx.lock().unwrap().recv();
            })
        })
        .collect();
    let config = SamplerConfig {
        interval: Duration::from_millis(200),
        ..SamplerConfig::default()
    };
    let bg = ProfileSampler::procfs(config, ThreadSelection::All)
        .unwrap()
        .start()
        .unwrap();
    bg.wait_for_intervals(15, Duration::from_secs(60));
    let o = bg.overhead();
    eprintln!(
        "sampler/background_200ms/{} threads sampled: {:.4} % of one core ({} snapshots, {:?} \
         CPU per snapshot)",
        bg.latest().map_or(0, |p| p.threads.len()),
        o.fraction_of_one_core() * 100.0,
        o.snapshots,
        o.per_snapshot(),
    );
    drop(bg);
    drop(stop_tx);
    for h in idle {
        h.join().unwrap();
    }
}

criterion_group!(benches, group_reads, software_reads, sampler);
criterion_main!(benches);
