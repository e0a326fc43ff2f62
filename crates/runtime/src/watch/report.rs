//! The text of the watcher's reports and of `Runtime::debug_state`: every worker's state and
//! every parked green thread with what it waits on, in the manner of Go's deadlock report.

use super::record::{Wait, WaitKind};
use crate::registry::Shared;
use crate::task::blocks::for_each_block;
use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// `'name'` of the live green thread whose control block is at `addr`, or `<unnamed> (0x..)`.
pub(crate) fn thread_name(shared: &Shared, addr: usize) -> String {
    match shared.named_live(|m| m.get(&addr).cloned()) {
        Some(n) => format!("'{n}'"),
        None => format!("<unnamed {addr:#x}>"),
    }
}

/// The blocking detector's message for worker `index` stuck in the run of `name`.
pub(crate) fn blocking_message(
    index: usize,
    name: &str,
    ran: Duration,
    state: &super::proc::ThreadState,
) -> String {
    format!(
        "footprint: worker {index} has run green thread {name} for {} ms without a switch, {}. \
         Every green thread queued on this worker waits meanwhile: on green threads use \
         footprint::sleep and footprint's locks and channels, and block_in_place or \
         spawn_blocking for blocking calls (Builder::blocking_warning sets the threshold; said \
         once per run; RuntimeStats::blocking_warnings counts them).",
        ran.as_millis(),
        state.describe()
    )
}

fn describe_wait(shared: &Shared, w: &Wait) -> String {
    match w.kind {
        WaitKind::Lock => format!("a lock at {:#x}", w.addr),
        WaitKind::RwLock => format!("a reader-writer lock at {:#x}", w.addr),
        WaitKind::Barrier => format!("a barrier at {:#x} (it arrived {} of {})", w.addr, w.a, w.b),
        WaitKind::Condvar => format!("a condition variable at {:#x}", w.addr),
        WaitKind::ChannelSend => format!("sending on a channel at {:#x}", w.addr),
        WaitKind::ChannelRecv => format!("receiving on a channel at {:#x}", w.addr),
        WaitKind::Semaphore => format!("a semaphore at {:#x}", w.addr),
        WaitKind::Once => format!("a Once/OnceLock/LazyLock at {:#x}", w.addr),
        WaitKind::Join => format!("joining green thread {}", thread_name(shared, w.addr)),
        WaitKind::JoinHalf => "the stolen half of a join".into(),
        WaitKind::Scope => "the green threads of its scope".into(),
        WaitKind::Sleep => "footprint::sleep (a timer wakes it)".into(),
        WaitKind::Park => "footprint::park::park".into(),
        WaitKind::Unknown => "an unrecorded wait".into(),
    }
}

/// The runtime's state: each worker (what it runs and for how long, or asleep), then each
/// parked green thread and what it waits on.
pub(crate) fn state(shared: &Shared) -> String {
    let me = shared as *const Shared as usize;
    let now = Instant::now();
    let mut out = String::new();
    let live = shared.live();
    let _ = writeln!(
        out,
        "runtime {}: {} workers ({} asleep), {live} green threads live",
        shared.id(),
        shared.workers().len(),
        shared.sleepers().get(Ordering::Relaxed)
    );
    let seen = shared
        .watch()
        .seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let mut running = 0usize;
    for (i, w) in shared.workers().iter().enumerate() {
        let current = shared.watch().current_of(i);
        let cpu = w.cpu().map_or("unpinned".into(), |c| format!("cpu {c}"));
        let _ = write!(out, "  worker {i} ({cpu}): ");
        if current == 0 {
            let asleep = w.sleep().state(Ordering::Relaxed) == crate::sleep::word::SLEEPING;
            let _ = writeln!(
                out,
                "{}",
                if asleep {
                    "asleep (no work)"
                } else {
                    "looking for work"
                }
            );
            continue;
        }
        running += 1;
        let name = thread_name(shared, current);
        let since = seen
            .get(i)
            .copied()
            .flatten()
            .filter(|s| s.current == current && s.runs == w.account().runs.load(Ordering::Relaxed))
            .map(|s| format!(" for {} ms", now.duration_since(s.since).as_millis()))
            .unwrap_or_default();
        let st = super::proc::thread_state(shared.watch().workers[i].tid.load(Ordering::Relaxed));
        let doing = if st.blocked() {
            st.describe()
        } else {
            "on the CPU".into()
        };
        let _ = writeln!(out, "running green thread {name}{since}, {doing}");
    }
    let mut parked: Vec<(usize, Wait)> = Vec::new();
    for_each_block(|t| {
        if t.park_state().is_parked() {
            let w = t.extras().wait.read();
            if w.runtime == me {
                parked.push((t as *const crate::task::Task as usize, w));
            }
        }
    });
    parked.sort_by_key(|&(a, w)| (w.kind as u8, w.addr, a));
    let _ = writeln!(
        out,
        "  {} parked green threads, {} ready or not started{}",
        parked.len(),
        (live as usize).saturating_sub(parked.len() + running),
        if parked.is_empty() { "" } else { ":" }
    );
    for (addr, w) in &parked {
        let at = w.at.map(|l| format!(", called at {l}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "    {} waits on {}{at}",
            thread_name(shared, *addr),
            describe_wait(shared, w)
        );
    }
    out
}
