//! Real software-event tests: they need no permission and run everywhere.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use footprint_pmu::{
    current_tid, CounterSource, Event, PmuError, ProcTaskSource, ReadPath, RusageSource, Target,
};

mod common;
use common::{spin_cpu, CpuBurner};

/// Blocks this thread once, for real: waits for a message another thread sends after it has
/// seen us waiting. Makes at least one voluntary context switch.
fn block_once() {
    let (tx, rx) = mpsc::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        ready_rx.recv().unwrap();
        tx.send(()).unwrap();
    });
    ready_tx.send(()).unwrap();
    rx.recv().unwrap();
    h.join().unwrap();
}

#[test]
fn rusage_source_counts_cpu_time_and_voluntary_switches() {
    let mut src = RusageSource::new();
    assert_eq!(src.read_path(), ReadPath::Rusage);
    assert_eq!(src.target_tid(), Some(current_tid()));
    let a = src.read().unwrap();
    spin_cpu(20);
    // A recv that finds the channel empty parks on a futex: a voluntary switch.
    let mut blocked = 0;
    for _ in 0..5 {
        block_once();
        blocked += 1;
    }
    let d = src.read().unwrap().delta_since(&a);
    let cpu = src.value(&d, Event::TaskClock).unwrap();
    assert!(cpu >= 20_000_000, "task-clock advanced only {cpu} ns");
    let vol = src.value(&d, Event::VoluntaryContextSwitches).unwrap();
    let invol = src.value(&d, Event::InvoluntaryContextSwitches).unwrap();
    assert!(
        vol >= 1,
        "{blocked} blocking receives gave {vol} voluntary switches"
    );
    assert_eq!(src.value(&d, Event::ContextSwitches), Some(vol + invol));
}

#[test]
fn rusage_source_counts_page_faults() {
    let mut src = RusageSource::new();
    let a = src.read().unwrap();
    let pages = 256;
    let mut v = vec![0u8; pages * 4096];
    for i in (0..v.len()).step_by(4096) {
        v[i] = 1;
    }
    std::hint::black_box(&v);
    let d = src.read().unwrap().delta_since(&a);
    let faults = src.value(&d, Event::PageFaults).unwrap();
    // Transparent huge pages can map the whole range with a handful of faults.
    assert!(
        faults >= 1,
        "touching {pages} fresh pages made {faults} faults"
    );
}

#[test]
fn rusage_source_refuses_to_be_read_on_another_thread() {
    let mut src = RusageSource::new();
    let owner = current_tid();
    let err = std::thread::spawn(move || src.read().unwrap_err())
        .join()
        .unwrap();
    match err {
        PmuError::WrongThread { owner: o, caller } => {
            assert_eq!(o, owner);
            assert_ne!(caller, owner);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn proc_source_reads_another_thread_by_tid() {
    let worker = CpuBurner::spawn(30);
    let tid = worker.tid();
    let mut src = ProcTaskSource::open(Target::Thread(tid)).unwrap();
    assert_eq!(src.read_path(), ReadPath::Procfs);
    assert_eq!(src.target_tid(), Some(tid));
    let a = src.read().unwrap();
    worker.burn();
    let d = src.read().unwrap().delta_since(&a);
    let cpu = src.value(&d, Event::TaskClock).unwrap();
    assert!(cpu >= 30_000_000, "worker used 30 ms, /proc says {cpu} ns");
    let run_delay = src.value(&d, Event::RunDelay).unwrap();
    assert!(
        run_delay < 60_000_000_000,
        "implausible run delay {run_delay}"
    );
    worker.join();

    // Once the kernel has reaped the thread, reads say so. Reaping finishes shortly after the
    // join returns, so wait for that condition (bounded), yielding meanwhile.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match src.read() {
            Err(PmuError::NoSuchThread { tid: t }) => {
                assert_eq!(t, tid);
                break;
            }
            Ok(_) if Instant::now() < deadline => std::thread::yield_now(),
            other => panic!("reading an exited thread gave {other:?}"),
        }
    }
    assert!(matches!(
        ProcTaskSource::open(Target::Thread(tid)),
        Err(PmuError::NoSuchThread { .. })
    ));
}

#[test]
fn proc_and_rusage_agree_on_the_calling_thread() {
    let mut proc = ProcTaskSource::with_events(
        Target::CallingThread,
        &[
            Event::VoluntaryContextSwitches,
            Event::InvoluntaryContextSwitches,
        ],
    )
    .unwrap();
    let mut rusage = RusageSource::new();
    // Read both back to back, twice; between the reads of one pair the thread does not block,
    // so the voluntary counts must match exactly.
    let p = proc.read().unwrap();
    let r = rusage.read().unwrap();
    assert_eq!(
        proc.value(&p, Event::VoluntaryContextSwitches),
        rusage.value(&r, Event::VoluntaryContextSwitches)
    );
}

#[test]
fn proc_source_rejects_what_proc_cannot_give() {
    let err = ProcTaskSource::with_events(Target::CallingThread, &[Event::Cycles]).unwrap_err();
    assert!(err.is_not_supported(), "{err}");
    let err = ProcTaskSource::with_events(Target::Thread(i32::MAX), &[Event::TaskClock]);
    assert!(matches!(err, Err(PmuError::NoSuchThread { tid: i32::MAX })));
    assert!(ProcTaskSource::with_events(Target::CallingThread, &[]).is_err());
}

#[test]
fn proc_source_counts_migrations_where_the_kernel_has_sched() {
    let has_sched =
        std::path::Path::new(&format!("/proc/self/task/{}/sched", current_tid())).exists();
    let src = ProcTaskSource::open(Target::CallingThread).unwrap();
    assert_eq!(src.events().contains(&Event::CpuMigrations), has_sched);
    let r = ProcTaskSource::with_events(Target::CallingThread, &[Event::CpuMigrations]);
    assert_eq!(r.is_ok(), has_sched);
}
