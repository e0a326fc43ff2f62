//! The scheduler's counters for each run, as a table. The one place that knows which fields of
//! `Runtime::stats()` the report shows: when the runtime's stats grow (per-green-thread
//! accounting, parks, migrations, misses), add their columns to `COLUMNS` and `cells` here and
//! every section's table follows.

use footprint::runtime::RuntimeStats;
use footprint::Runtime;

use crate::model::Table;

/// The columns after the run's label.
const COLUMNS: [&str; 5] = [
    "spawned",
    "finished",
    "steals",
    "stacks mapped",
    "overflows",
];

/// The counters a run added (`after.since(before)`), as table cells in `COLUMNS` order.
fn cells(before: &RuntimeStats, after: &RuntimeStats) -> Vec<String> {
    let d = after.since(before);
    [
        d.spawned,
        d.finished,
        d.steals(),
        d.stacks_mapped,
        d.overflows,
    ]
    .iter()
    .map(u64::to_string)
    .collect()
}

/// The scheduler-stats table of one section.
pub struct StatsTable(Table);

impl StatsTable {
    pub fn new() -> StatsTable {
        let mut header = vec!["run"];
        header.extend(COLUMNS);
        StatsTable(Table::new(
            "Scheduler stats per run (Runtime::stats(), counted over all repetitions)",
            &header,
        ))
    }

    /// Runs `f` and records what it added to `rt`'s counters under `label`.
    pub fn record<R>(&mut self, label: &str, rt: &Runtime, f: impl FnOnce() -> R) -> R {
        let before = rt.stats();
        let r = f();
        let after = rt.stats();
        let mut row = vec![label.to_string()];
        row.extend(cells(&before, &after));
        self.0.row(row);
        r
    }

    pub fn into_table(self) -> Table {
        self.0
    }
}
