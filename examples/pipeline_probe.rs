//! The channel pipeline and the SPMD stencil of the many-core suite, alone in their process, with
//! what the workers did per message (per barrier phase): for finding why a run is slow, and
//! for process-to-process comparisons on a loaded machine (the process CPU time does not grow
//! when other processes take the CPU away).
//!
//! ```text
//! cargo run --release --example pipeline_probe -- pipeline 2 2 4 200000 5
//! cargo run --release --example pipeline_probe -- crossbeam 2 2 4 200000 5
//! cargo run --release --example pipeline_probe -- bottleneck 2 1 2 50000 5
//! cargo run --release --example pipeline_probe -- crossbeam_bottleneck 2 1 2 50000 5
//! cargo run --release --example pipeline_probe -- stencil 2 4 0 300 5
//! cargo run --release --example pipeline_probe -- std_stencil 2 4 0 300 5
//! ```
//!
//! `bottleneck` is the pipeline with work at each stage (`StageWork::SUMMER_BOUND`: the summer's
//! 0.5 µs per message sets the pace, the other stages wait on full channels).
//!
//! Arguments: workload, workers W, producers (stencil: ranks per worker), squarers (stencil:
//! ignored), messages (stencil: sweeps), runs. Prints each run's wall-clock and process CPU
//! time, and for footprint the workers' runs, parks, steals, sleeps and inbox wake-ups per
//! message (per rank and sweep), and the sleeps that ran out (the idle safety net).
//!
//! `FOOTPRINT_PROBE_DUMP_MS=<ms>`: when one run has lasted that long, the runtime's state
//! (`Runtime::debug_state`: each worker's doing, every parked thread's wait) is printed, and again
//! each further such interval (at most 3 times per run): for a run that stalls. With it, each
//! dump also samples every thread of the process 200 times (a signal that records the
//! interrupted instruction address) and prints the most frequent addresses per thread as
//! offsets into this executable, for `addr2line -f -i -C -e <this binary> <offset>` on the build
//! machine.

use footprint_workloads::many_core::{self as bodies, RuntimeCounts, StageWork};
use footprint_workloads::micro::process_cpu;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const STENCIL_SIDE: usize = 258;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: pipeline_probe \
                 <pipeline|crossbeam|bottleneck|crossbeam_bottleneck|stencil|std_stencil> <workers> \
                 <producers|ranks per worker> <squarers> <messages|sweeps> <runs>";
    if args.len() != 6 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let num = |i: usize| -> u64 {
        args[i].parse().unwrap_or_else(|_| {
            eprintln!("{usage}: `{}` is not a number", args[i]);
            std::process::exit(2)
        })
    };
    let (w, p, q, m, runs) = (
        num(1) as usize,
        num(2) as usize,
        num(3) as usize,
        num(4),
        num(5),
    );
    // FOOTPRINT_PROBE_OVERSUBSCRIBED=0/1 fixes the kernel's oversubscription signal (the
    // machine this runs on is shared: a loaded machine makes informed waiters park).
    match std::env::var("FOOTPRINT_PROBE_OVERSUBSCRIBED").as_deref() {
        Ok("0") => footprint::locks::os::force_oversubscribed(Some(false)),
        Ok("1") => footprint::locks::os::force_oversubscribed(Some(true)),
        _ => {}
    }
    // Both sides on the same CPUs: the first W when there are more.
    footprint_workloads::scaling::cpus::keep_first(w);
    let rt = footprint::Runtime::builder()
        .workers(w)
        .oversubscribe(true)
        .build()
        .expect("a runtime");
    let expected = if args[0].contains("stencil") {
        bodies::stencil_expected(STENCIL_SIDE, m as usize)
    } else {
        0.0
    };
    let units = if args[0].contains("stencil") {
        (w * p) as u64 * m
    } else {
        m
    };
    let dump_after = std::env::var("FOOTPRINT_PROBE_DUMP_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis);
    for _ in 0..runs {
        let before = RuntimeCounts::of(&rt);
        let cpu = process_cpu();
        let t = Instant::now();
        let (done, finished) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            if let Some(after) = dump_after {
                let rt = &rt;
                s.spawn(move || {
                    for _ in 0..3 {
                        if finished.recv_timeout(after).is_ok() {
                            return;
                        }
                        eprintln!(
                            "-- {:.0} ms into the run:\n{}",
                            t.elapsed().as_secs_f64() * 1e3,
                            rt.debug_state()
                        );
                        sampler::print_samples(200);
                    }
                });
            }
            run_once(&rt, &args[0], usage, w, p, q, m, expected);
            // The watcher may have returned already: nothing to tell it then.
            let _ = done.send(());
        });
        let wall = t.elapsed();
        let cpu = process_cpu() - cpu;
        let after = RuntimeCounts::of(&rt);
        let per = |a: u64, b: u64| (a - b) as f64 / units as f64;
        println!(
            "{}: wall {:.2} ms, cpu {:.2} ms; per unit: runs {:.3}, parks {:.3}, steals {:.3}, \
             sleeps {:.4}, inbox wake-ups {:.3}; sleeps that ran out: {}",
            args[0],
            wall.as_secs_f64() * 1e3,
            cpu.as_secs_f64() * 1e3,
            per(after.runs, before.runs),
            per(after.parks, before.parks),
            per(after.steals, before.steals),
            per(after.sleeps, before.sleeps),
            per(after.inbox_wakeups, before.inbox_wakeups),
            after.expired_sleeps - before.expired_sleeps,
        );
    }
}

/// One run of `workload`.
#[allow(clippy::too_many_arguments)]
fn run_once(
    rt: &footprint::Runtime,
    workload: &str,
    usage: &str,
    w: usize,
    p: usize,
    q: usize,
    m: u64,
    expected: f64,
) {
    match workload {
        "pipeline" => {
            bodies::pipeline_green(rt, p, q, m);
        }
        "crossbeam" => {
            bodies::pipeline_crossbeam(p, q, m);
        }
        "bottleneck" => {
            bodies::pipeline_green_with(rt, p, q, m, StageWork::SUMMER_BOUND);
        }
        "crossbeam_bottleneck" => {
            bodies::pipeline_crossbeam_with(p, q, m, StageWork::SUMMER_BOUND);
        }
        "stencil" => {
            bodies::stencil_green(rt, STENCIL_SIDE, m as usize, w * p, expected);
        }
        "std_stencil" => {
            bodies::stencil_os(STENCIL_SIDE, m as usize, w * p, expected);
        }
        other => {
            eprintln!("{usage}: unknown workload `{other}`");
            std::process::exit(2);
        }
    }
}

/// Where each thread of the process is: a signal handler that stores the interrupted
/// instruction address, sent to every thread in turn.
mod sampler {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    static PC: AtomicU64 = AtomicU64::new(0);

    extern "C" fn record(_: libc::c_int, _: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid `ucontext_t` to an SA_SIGINFO handler; reading one
        // register of it and storing an atomic are async-signal-safe.
        let pc = unsafe {
            (*(ctx as *const libc::ucontext_t)).uc_mcontext.gregs[libc::REG_RIP as usize]
        };
        PC.store(pc as u64, Ordering::SeqCst);
    }

    /// The start of this executable's mapping (a position-independent executable).
    fn base() -> u64 {
        let exe = std::fs::read_link("/proc/self/exe").unwrap_or_default();
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        maps.lines()
            .find(|l| l.ends_with(exe.to_string_lossy().as_ref()))
            .and_then(|l| l.split('-').next())
            .and_then(|a| u64::from_str_radix(a, 16).ok())
            .unwrap_or(0)
    }

    pub fn print_samples(rounds: usize) {
        // SAFETY: installs a handler that only touches an atomic (see `record`); the action
        // struct is zeroed and then filled as sigaction(2) asks.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = record as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigaction(libc::SIGPROF, &act, std::ptr::null_mut());
        }
        let me = std::process::id() as libc::pid_t;
        // SAFETY: gettid has no preconditions.
        let self_tid = unsafe { libc::gettid() };
        let base = base();
        let mut per: HashMap<(i32, String), HashMap<u64, u32>> = HashMap::new();
        for _ in 0..rounds {
            let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
                return;
            };
            for e in dir.flatten() {
                let Ok(tid) = e.file_name().to_string_lossy().parse::<i32>() else {
                    continue;
                };
                if tid == self_tid {
                    continue;
                }
                PC.store(0, Ordering::SeqCst);
                // SAFETY: a signal to a thread of this process, whose handler is installed.
                if unsafe { libc::syscall(libc::SYS_tgkill, me, tid, libc::SIGPROF) } != 0 {
                    continue;
                }
                let mut pc = 0;
                for _ in 0..1000 {
                    pc = PC.load(Ordering::SeqCst);
                    if pc != 0 {
                        break;
                    }
                    std::hint::spin_loop();
                }
                if pc == 0 {
                    continue;
                }
                let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                    .unwrap_or_default()
                    .trim()
                    .to_string();
                *per.entry((tid, comm)).or_default().entry(pc).or_default() += 1;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let mut threads: Vec<_> = per.into_iter().collect();
        threads.sort_by_key(|((tid, _), _)| *tid);
        for ((tid, comm), pcs) in threads {
            let mut pcs: Vec<_> = pcs.into_iter().collect();
            pcs.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
            let top: Vec<String> = pcs
                .iter()
                .take(4)
                .map(|&(pc, n)| format!("{:#x}x{n}", pc.wrapping_sub(base)))
                .collect();
            eprintln!("  sample {tid} {comm}: {}", top.join(" "));
        }
    }
}
