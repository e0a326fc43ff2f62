//! Prints the capability table of this machine, a few live readings of the software sources,
//! and a short run of the profile sampler with its measured overhead.
//!
//! `cargo run -p footprint-hpc-pmu --example pmu_probe`

use std::time::Duration;

use footprint_pmu::{
    Capabilities, CounterSource, Event, PerfGroup, ProcTaskSource, ProfileSampler, RusageSource,
    SamplerConfig, Target, ThreadSelection,
};

fn spin(ms: u64) -> u64 {
    let start = footprint_pmu::thread_cpu_time_ns();
    let mut x = 0u64;
    while footprint_pmu::thread_cpu_time_ns() - start < ms * 1_000_000 {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    x
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let caps = Capabilities::probe();
    println!("{caps}");
    println!("summary: {}\n", caps.summary());

    println!("live readings of the software sources (deltas over 20 ms of CPU work + a yield):");
    let mut rusage = RusageSource::new();
    let mut procfs = ProcTaskSource::open(Target::CallingThread)?;
    for round in 0..3 {
        let (r0, p0) = (rusage.read()?, procfs.read()?);
        spin(20);
        std::thread::sleep(Duration::from_millis(1)); // one voluntary switch, on purpose
        let (r1, p1) = (rusage.read()?, procfs.read()?);
        let (dr, dp) = (r1.delta_since(&r0), p1.delta_since(&p0));
        let show = |src: &dyn CounterSource, d: &footprint_pmu::Reading| {
            src.events()
                .iter()
                .zip(d.values())
                .map(|(e, v)| format!("{e}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!("  round {round} getrusage: {}", show(&rusage, &dr));
        println!("  round {round} /proc    : {}", show(&procfs, &dp));
    }

    match PerfGroup::open(
        &[Event::TaskClock, Event::PageFaults],
        Target::CallingThread,
        Default::default(),
    ) {
        Ok(mut g) => {
            let a = g.read()?;
            let v: Vec<u8> = vec![1; 8 << 20]; // touch 8 MiB: page faults
            std::hint::black_box(&v);
            let d = g.read()?.delta_since(&a);
            println!(
                "  perf software group via {}: task-clock={} ns page-faults={}",
                g.read_path(),
                d.values()[0],
                d.values()[1]
            );
        }
        Err(e) => println!("  perf software group: {e}"),
    }
    match PerfGroup::hardware(Target::CallingThread) {
        Ok(mut g) => {
            let a = g.read()?;
            spin(10);
            let d = g.read()?.delta_since(&a);
            println!("  hardware group via {}: {:?}", g.read_path(), d.values());
        }
        Err(e) => println!("  hardware group: {e}"),
    }

    println!("\nprofile sampler, 20 intervals of 50 ms, one busy helper thread:");
    let config = SamplerConfig {
        interval: Duration::from_millis(50),
        window: 10,
        history: 20,
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = std::sync::Arc::clone(&stop);
    let busy = std::thread::spawn(move || {
        while !s2.load(std::sync::atomic::Ordering::Relaxed) {
            spin(5);
            std::thread::yield_now();
        }
    });
    let sampler = ProfileSampler::procfs(config, ThreadSelection::All)?.start()?;
    sampler.wait_for_intervals(20, Duration::from_secs(30));
    if let Some(w) = sampler.window_summary() {
        println!("  window: {w}");
    }
    if let Some(p) = sampler.latest() {
        for t in &p.threads {
            println!(
                "  thread {:>7}: cpu {:.2} vcs/s {:.0} ics/s {:.0} migr/s {} run-delay {}",
                t.tid,
                t.rates.cpu_utilisation,
                t.rates.voluntary_switches_per_s,
                t.rates.involuntary_switches_per_s,
                t.rates
                    .migrations_per_s
                    .map_or("n/a".into(), |m| format!("{m:.0}")),
                t.rates
                    .run_delay_share
                    .map_or("n/a".into(), |m| format!("{m:.3}")),
            );
        }
    }
    println!(
        "  LLC counting: {}",
        sampler.with_sampler(|s| s.llc_status())
    );
    let o = sampler.overhead();
    println!(
        "  sampler overhead: {:.3} % of one core ({:?} CPU per snapshot, {} snapshots)",
        o.fraction_of_one_core() * 100.0,
        o.per_snapshot(),
        o.snapshots
    );
    drop(sampler);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    busy.join().expect("busy thread panicked");
    Ok(())
}
