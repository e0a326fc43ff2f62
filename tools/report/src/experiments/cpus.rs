//! The peers of the papers' experiments run on the CPUs of the footprint runtime they are
//! compared with: with fewer workers than CPUs (`--workers 1` on a 2-CPU machine), OS threads
//! and rayon threads left to the OS would use CPUs the runtime does not have.

pub use footprint_workloads::scaling::cpus::on_cpus;
use footprint_workloads::scaling::cpus::restrict_current;

use crate::experiments::all_cpus;

/// The CPUs `rt`'s workers are pinned to, when they are fewer than the process's allowed CPUs.
/// Empty (the peers run where the OS puts them) when the workers cover every allowed CPU,
/// oversubscribe them, or are not pinned.
pub fn peer_cpus(rt: &footprint::Runtime) -> Vec<usize> {
    let Some(mut cpus) = rt.worker_cpus().into_iter().collect::<Option<Vec<usize>>>() else {
        return Vec::new();
    };
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.len() >= all_cpus() {
        Vec::new()
    } else {
        cpus
    }
}

/// A rayon pool of `threads` threads, each restricted to `cpus` (unrestricted when empty).
pub fn rayon_pool(threads: usize, cpus: &[usize]) -> Result<rayon::ThreadPool, String> {
    let cpus = cpus.to_vec();
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(move |_| restrict_current(&cpus))
        .build()
        .map_err(|e| format!("a {threads}-thread rayon pool: {e}"))
}

/// Where the peers ran, for a section's notes.
pub fn peer_note(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "The peers' threads run on every CPU the process may use, as the runtime's workers do."
            .into()
    } else {
        format!(
            "The peers' threads are restricted to the CPUs of the runtime's workers ({cpus:?}), \
             so that both sides have the same CPUs."
        )
    }
}
