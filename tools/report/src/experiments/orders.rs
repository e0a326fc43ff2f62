//! What the 004 experiments share: a runtime per ready order, and the verdict "does an affinity
//! order beat the order without affinity (oldest woken first)".

use footprint::affinity::topology::Topology;
use footprint::runtime::ReadyOrder;

use crate::model::format_ratio;

/// A runtime with `workers` workers and ready `order`, or why not.
pub fn runtime(workers: usize, order: ReadyOrder) -> Result<footprint::Runtime, String> {
    footprint::Runtime::builder()
        .workers(workers)
        .ready_order(order)
        .build()
        .map_err(|e| format!("a {workers}-worker runtime ({order}): {e}"))
}

/// The best of some footprint ready orders against oldest-first (`footprint_fifo`).
pub struct Comparison {
    pub best: String,
    pub best_value: f64,
    pub fifo: f64,
}

impl Comparison {
    /// `results`: (ready order name, figure where lower is better).
    pub fn of<'a>(results: impl IntoIterator<Item = (&'a str, f64)>) -> Option<Comparison> {
        let results: Vec<(&str, f64)> = results.into_iter().collect();
        let fifo = results
            .iter()
            .find(|r| r.0 == "footprint_fifo")
            .map_or(f64::NAN, |r| r.1);
        let best = results.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
        Some(Comparison {
            best: best.0.to_string(),
            best_value: best.1,
            fifo,
        })
    }

    /// The best order ÷ oldest-first.
    pub fn ratio(&self) -> f64 {
        self.best_value / self.fifo
    }

    /// Met when an affinity order is at least 5 % faster than oldest-first.
    pub fn verdict(&self) -> String {
        if self.best != "footprint_fifo" && self.ratio() < 0.95 {
            format!(
                "an affinity order beats the no-affinity order: met ({}, {} of oldest-first)",
                self.best,
                format_ratio(self.ratio())
            )
        } else {
            "no affinity order beats oldest-first by 5 % here: not shown on this machine".into()
        }
    }
}

/// Where `bytes` of working sets stand against this machine's caches: the affinity orders can only
/// win where the whole does not fit the last-level cache but a group's share fits the private one.
pub fn cache_note(bytes: usize) -> String {
    let topology = Topology::detect();
    let size_of = |level: Option<u8>| {
        level
            .and_then(|l| topology.caches().iter().find(|c| c.level == l))
            .map(|c| c.size_bytes)
    };
    let last = topology.last_level();
    match (size_of(last), last) {
        (Some(llc), Some(level)) => format!(
            "All working sets together: {} MiB; this machine's L{level} (last level): {} MiB, \
             so they {} it{}",
            bytes >> 20,
            llc >> 20,
            if bytes as u64 > llc {
                "do not fit"
            } else {
                "fit in"
            },
            if bytes as u64 > llc {
                "."
            } else {
                " — the reloads an order saves come from L3, not memory, and the orders differ \
                 less than on a machine with a smaller last-level cache."
            }
        ),
        _ => format!(
            "All working sets together: {} MiB; cache sizes unknown here.",
            bytes >> 20
        ),
    }
}
