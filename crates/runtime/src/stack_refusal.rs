//! Saying at once that a green thread could not get a stack.
//!
//! A spawned green thread gets its stack only when it first runs; when none can be had (the
//! live-stack cap, memory, the process's memory mappings) the thread fails its `JoinHandle` with
//! the typed error. A program that joins nothing yet (threads gathering on a barrier) would then
//! wait forever in silence, so the first refusal of each runtime is also said on stderr (and as
//! a `tracing` error with the `tracing` feature) with what was live, which limit was hit and the
//! remedies; every refusal is counted (`RuntimeStats::stack_failures`).

use crate::error::Error;
use crate::registry::Shared;
use crate::stack::{guard_kind, GuardKind};
use std::sync::atomic::Ordering;

/// Counts a refusal and, the first time in this runtime, says it.
#[cold]
pub(crate) fn stack_refused(shared: &Shared, err: &Error) {
    let limits = &shared.stack_limits();
    limits.failures.fetch_add(1, Ordering::Relaxed);
    if limits.said.swap(true, Ordering::Relaxed) {
        return;
    }
    let msg = describe(shared, err);
    eprintln!("{msg}");
    #[cfg(feature = "tracing")]
    tracing::error!(target: "footprint::stacks", "{msg}");
}

/// The process's memory mappings now and `vm.max_map_count` (Linux; `None` where unreadable).
fn mappings() -> Option<(usize, usize)> {
    let now = std::fs::read_to_string("/proc/self/maps")
        .ok()?
        .lines()
        .count();
    let max = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some((now, max))
}

/// The report: what failed, what was live, the limit hit, the remedies.
pub(crate) fn describe(shared: &Shared, err: &Error) -> String {
    let guards = if shared.guard_pages() {
        guard_kind().describe()
    } else {
        "no guard pages"
    };
    let maps = mappings();
    let limit = match (err, maps) {
        (Error::StackLimit { limit }, _) => {
            format!("the live-stack cap Builder::max_stacks({limit})")
        }
        (_, Some((now, max))) if now + 64 >= max => {
            format!("the process's memory mappings: {now} of vm.max_map_count = {max}")
        }
        (_, Some((now, max))) => {
            format!("memory or address space ({now} memory mappings of vm.max_map_count = {max})")
        }
        (_, None) => "memory, address space or memory mappings".to_string(),
    };
    let mprotect = shared.guard_pages() && guard_kind() == GuardKind::Mprotect;
    format!(
        "footprint: a green thread could not get a stack when it first ran ({err}). It fails its \
         JoinHandle with that error, and so does every green thread that starts before a stack \
         is freed; threads waiting for them (a barrier, a join) may wait forever. Live green \
         threads: {live}; stacks mapped so far: {mapped} of {size} bytes each, {guards}. Limit \
         hit: {limit}. Remedies: {first}raise vm.max_map_count (sysctl -w vm.max_map_count=N), \
         a smaller Builder::stack_size, fewer green threads alive at once{cap}. (Said once per \
         runtime; RuntimeStats::stack_failures counts them.)",
        live = shared.live(),
        mapped = shared.stacks_mapped(),
        size = shared.stack_size(),
        first = if mprotect {
            "Builder::guard_pages(false) (each guarded stack costs two mappings with mprotect \
             guards: the kernel lacks MADV_GUARD_INSTALL, Linux 6.13+, or \
             FOOTPRINT_GUARDS_MPROTECT is set), "
        } else {
            "Builder::guard_pages(false), "
        },
        cap = if matches!(err, Error::StackLimit { .. }) {
            ", or a larger Builder::max_stacks"
        } else {
            ""
        },
    )
}
