//! The runtime's watcher: one background thread per runtime that notices, without any cost on
//! the switch path, a worker stuck in one green thread (the blocking detector) and a runtime in
//! which nothing runs any more while green threads wait (the hang watchdog), and says so.
//!
//! What it reads, every tick: each worker's run counter (`WorkerAccount::runs`, bumped at every
//! resumption already) and the green thread it runs now (`ThreadCtx::current`, stored at every
//! resumption already; atomic so that this thread may read it). A worker whose counter and
//! thread stay the same across ticks is in one run; when that run has lasted
//! `Builder::blocking_warning` and the worker's OS thread is blocked in the kernel
//! (`/proc/self/task/<tid>/syscall`, `stat`), the run is reported once with the thread's name
//! and the system call. When no worker has resumed anything for `Builder::watchdog` while green
//! threads are live, no timer is due later, no blocking-pool job (`spawn_blocking`,
//! `block_in_place`) is in flight and no worker is computing, the runtime is hung: the report of
//! [`report`] (every parked thread and what it waits on, every worker's state) is printed once,
//! until something runs again.
//!
//! The thread holds the runtime only weakly and sleeps on its own condition variable, which
//! `Runtime::drop` signals: it neither keeps the runtime alive nor delays its shutdown, and as
//! an ordinary detached thread it does not keep the process alive.

pub(crate) mod note;
pub(crate) mod proc;
pub(crate) mod record;
pub(crate) mod report;
pub(crate) mod state;

pub(crate) use state::{Seen, Stop, WatchConfig, IDLE_TICK};
pub use state::{DEFAULT_BLOCKING_WARNING, DEFAULT_WATCHDOG};

use crate::registry::Shared;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Instant;

/// Starts the watcher of `shared` if it watches for anything.
pub(crate) fn start(shared: &Arc<Shared>) -> std::io::Result<()> {
    if !shared.watch().config.any() {
        return Ok(());
    }
    let weak = Arc::downgrade(shared);
    let stop = shared.watch().stop.clone();
    let config = shared.watch().config;
    std::thread::Builder::new()
        .name("footprint-watch".into())
        .spawn(move || run(weak, stop, config))?;
    Ok(())
}

fn run(weak: Weak<Shared>, stop: Arc<Stop>, config: WatchConfig) {
    let mut hang = HangState {
        runs: u64::MAX,
        since: Instant::now(),
        said: false,
    };
    let mut tick = config.busy_tick();
    loop {
        {
            let g = stop.stopped.lock().unwrap_or_else(|e| e.into_inner());
            let (g, _) = stop
                .cv
                .wait_timeout_while(g, tick, |s| !*s)
                .unwrap_or_else(|e| e.into_inner());
            if *g {
                return;
            }
        }
        let Some(shared) = weak.upgrade() else {
            return;
        };
        if shared.is_shutting_down() {
            return;
        }
        let busy = observe(&shared, &mut hang, Instant::now());
        tick = if busy {
            config.busy_tick()
        } else {
            config.busy_tick().max(IDLE_TICK)
        };
    }
}

/// The watchdog's memory between ticks.
struct HangState {
    /// All workers' runs together at the last change, and when that was.
    runs: u64,
    since: Instant,
    /// The hang was reported (until something runs again).
    said: bool,
}

/// One tick: updates what each worker runs, reports blocking runs and a hang. Returns whether
/// some worker runs a green thread.
fn observe(shared: &Shared, hang: &mut HangState, now: Instant) -> bool {
    let watch = &shared.watch();
    let mut busy = false;
    let mut total_runs = 0u64;
    let mut to_warn = Vec::new();
    {
        let mut seen = watch.seen.lock().unwrap_or_else(|e| e.into_inner());
        for (i, w) in shared.workers().iter().enumerate() {
            let runs = w.account().runs.load(Ordering::Relaxed);
            total_runs = total_runs.wrapping_add(runs);
            let current = watch.current_of(i);
            busy |= current != 0;
            let s = match seen[i] {
                Some(s) if s.current == current && s.runs == runs => s,
                _ => Seen {
                    current,
                    runs,
                    since: now,
                    warned: false,
                    cpu_mark: None,
                },
            };
            let mut s = s;
            let tid = watch.workers[i].tid.load(Ordering::Relaxed);
            let ran = now.duration_since(s.since);
            let limit = watch
                .config
                .blocking_after
                .unwrap_or(DEFAULT_BLOCKING_WARNING);
            if current != 0 && s.cpu_mark.is_none() && ran >= limit / 2 {
                s.cpu_mark = proc::cpu_ns(tid).map(|c| (c, now));
            }
            if watch.config.blocking_after.is_some() && current != 0 && !s.warned && ran >= limit {
                if let Some(state) = blocked_since_mark(&s, tid, now) {
                    s.warned = true;
                    to_warn.push((i, current, ran, state));
                }
            }
            seen[i] = Some(s);
        }
    }
    for (i, current, ran, state) in to_warn {
        // The thread may have moved on since the tick's look: re-check before naming it.
        let name = report::thread_name(shared, current);
        if watch.current_of(i) != current {
            continue;
        }
        watch.blocking_warnings.fetch_add(1, Ordering::Relaxed);
        let msg = report::blocking_message(i, &name, ran, &state);
        eprintln!("{msg}");
        #[cfg(feature = "tracing")]
        tracing::warn!(target: "footprint::blocking", "{msg}");
    }
    let live = shared.live();
    if total_runs != hang.runs || live == 0 {
        hang.runs = total_runs;
        hang.since = now;
        hang.said = false;
        return busy;
    }
    if let Some(period) = watch.config.hang_after {
        if !hang.said && now.duration_since(hang.since) >= period && hung(shared, now) {
            hang.said = true;
            watch.hang_reports.fetch_add(1, Ordering::Relaxed);
            let msg = format!(
                "footprint: no green thread of runtime {} has run for {:.1} s while {live} are live, \
                 and nothing in the runtime can wake them (no timer due, no blocking-pool job in \
                 flight): a deadlock or a blocked worker, unless another OS thread or process is \
                 to wake them. Said once until something runs again \
                 (Builder::watchdog sets the period; Runtime::debug_state gives this report \
                 any time).\n{}",
                shared.id(),
                now.duration_since(hang.since).as_secs_f64(),
                report::state(shared)
            );
            eprintln!("{msg}");
            #[cfg(feature = "tracing")]
            tracing::error!(target: "footprint::watchdog", "{msg}");
        }
    }
    busy
}

/// The worker's OS thread state if it is blocked: sleeping in the kernel now, and (where the
/// CPU time is readable) next to no CPU used since the run's mark; `None` if it computes, or if
/// the mark is too recent to tell.
fn blocked_since_mark(s: &Seen, tid: i32, now: Instant) -> Option<proc::ThreadState> {
    let state = proc::thread_state(tid);
    if !state.blocked() {
        return None;
    }
    match (s.cpu_mark, proc::cpu_ns(tid)) {
        (Some((c0, t0)), Some(c1)) => {
            let wall = now.duration_since(t0);
            (!wall.is_zero() && proc::mostly_waiting(c1.saturating_sub(c0), wall)).then_some(state)
        }
        // The CPU time is not readable here: the state letter is all there is.
        (_, None) => Some(state),
        (None, Some(_)) => None,
    }
}

/// Whether nothing can make progress by itself: no timer due later, no blocking-pool job in
/// flight, and no worker computing (a worker in one long run that is not blocked in the
/// kernel is working, not hung).
fn hung(shared: &Shared, now: Instant) -> bool {
    if crate::in_flight::in_flight() > 0 {
        return false;
    }
    if crate::timer::next_deadline().is_some_and(|d| d > now) {
        return false;
    }
    let seen = shared
        .watch()
        .seen
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    (0..shared.workers().len()).all(|i| {
        let current = shared.watch().current_of(i);
        let tid = shared.watch().workers[i].tid.load(Ordering::Relaxed);
        current == 0
            || seen[i]
                .filter(|s| s.current == current)
                .is_some_and(|s| blocked_since_mark(&s, tid, now).is_some())
    })
}
