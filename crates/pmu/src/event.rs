//! The events this crate counts, and how each maps to a perf event.

use std::fmt;

use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware, Software};

/// One countable quantity. Values read for an event are cumulative counts since its source was
/// opened (nanoseconds for [`Event::TaskClock`] and [`Event::RunDelay`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Event {
    /// CPU cycles (hardware).
    Cycles,
    /// Retired instructions (hardware).
    Instructions,
    /// Level-1 data cache read misses (hardware cache event `L1D/READ/MISS`).
    L1dReadMisses,
    /// Last-level cache misses (the generic `cache-misses` hardware event, which the kernel
    /// maps to the LLC on x86).
    LlcMisses,
    /// Last-level cache references (the generic `cache-references` hardware event).
    LlcReferences,
    /// CPU time of the observed thread in nanoseconds (software).
    TaskClock,
    /// Page faults, minor and major (software).
    PageFaults,
    /// Context switches, voluntary and involuntary (software; perf counts them in kernel mode
    /// only, see [`Capabilities`](crate::Capabilities)).
    ContextSwitches,
    /// Migrations of the thread between CPUs (software; kernel mode only in perf, and
    /// `se.nr_migrations` in `/proc/<pid>/task/<tid>/sched` otherwise).
    CpuMigrations,
    /// Voluntary context switches: the thread blocked (`getrusage` `ru_nvcsw`, `/proc`).
    VoluntaryContextSwitches,
    /// Involuntary context switches: the thread was preempted (`getrusage` `ru_nivcsw`, `/proc`).
    InvoluntaryContextSwitches,
    /// Nanoseconds the thread spent runnable but waiting for a CPU (`/proc/.../schedstat`);
    /// 003 calls this latency (LAT).
    RunDelay,
}

impl Event {
    /// Every event, in table order.
    pub const ALL: [Event; 12] = [
        Event::Cycles,
        Event::Instructions,
        Event::L1dReadMisses,
        Event::LlcMisses,
        Event::LlcReferences,
        Event::TaskClock,
        Event::PageFaults,
        Event::ContextSwitches,
        Event::CpuMigrations,
        Event::VoluntaryContextSwitches,
        Event::InvoluntaryContextSwitches,
        Event::RunDelay,
    ];

    /// The hardware group the scheduler wants: cycles, instructions, L1D read misses,
    /// LLC misses, LLC references.
    pub const HARDWARE_GROUP: [Event; 5] = [
        Event::Cycles,
        Event::Instructions,
        Event::L1dReadMisses,
        Event::LlcMisses,
        Event::LlcReferences,
    ];

    /// Short stable name, as `perf` spells it where perf has one.
    pub fn name(self) -> &'static str {
        match self {
            Event::Cycles => "cycles",
            Event::Instructions => "instructions",
            Event::L1dReadMisses => "L1-dcache-load-misses",
            Event::LlcMisses => "cache-misses",
            Event::LlcReferences => "cache-references",
            Event::TaskClock => "task-clock",
            Event::PageFaults => "page-faults",
            Event::ContextSwitches => "context-switches",
            Event::CpuMigrations => "cpu-migrations",
            Event::VoluntaryContextSwitches => "voluntary-switches",
            Event::InvoluntaryContextSwitches => "involuntary-switches",
            Event::RunDelay => "run-delay",
        }
    }

    /// `true` for events counted by the CPU's PMU.
    pub fn is_hardware(self) -> bool {
        matches!(
            self,
            Event::Cycles
                | Event::Instructions
                | Event::L1dReadMisses
                | Event::LlcMisses
                | Event::LlcReferences
        )
    }

    /// `true` for software events that perf counts only while the CPU is in kernel mode, so
    /// that a counter opened with kernel mode excluded (the default of perf-event crates, and
    /// the only choice at `perf_event_paranoid` 2) reads 0.
    pub fn perf_counts_in_kernel_only(self) -> bool {
        matches!(self, Event::ContextSwitches | Event::CpuMigrations)
    }

    /// `true` if perf has a counter for this event (the split switch counts and the run delay
    /// come only from `getrusage` and `/proc`).
    pub fn has_perf_event(self) -> bool {
        !matches!(
            self,
            Event::VoluntaryContextSwitches | Event::InvoluntaryContextSwitches | Event::RunDelay
        )
    }

    pub(crate) fn apply_to(self, builder: &mut perf_event::Builder<'_>) -> bool {
        match self {
            Event::Cycles => builder.event(Hardware::CPU_CYCLES),
            Event::Instructions => builder.event(Hardware::INSTRUCTIONS),
            Event::L1dReadMisses => builder.event(Cache {
                which: CacheId::L1D,
                operation: CacheOp::READ,
                result: CacheResult::MISS,
            }),
            Event::LlcMisses => builder.event(Hardware::CACHE_MISSES),
            Event::LlcReferences => builder.event(Hardware::CACHE_REFERENCES),
            Event::TaskClock => builder.event(Software::TASK_CLOCK),
            Event::PageFaults => builder.event(Software::PAGE_FAULTS),
            Event::ContextSwitches => builder.event(Software::CONTEXT_SWITCHES),
            Event::CpuMigrations => builder.event(Software::CPU_MIGRATIONS),
            Event::VoluntaryContextSwitches
            | Event::InvoluntaryContextSwitches
            | Event::RunDelay => return false,
        };
        true
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_all_is_complete() {
        let mut names: Vec<_> = Event::ALL.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Event::ALL.len());
        assert!(Event::HARDWARE_GROUP.iter().all(|e| e.is_hardware()));
        assert_eq!(Event::ALL.iter().filter(|e| e.is_hardware()).count(), 5);
    }

    #[test]
    fn perf_mapping_matches_has_perf_event() {
        for e in Event::ALL {
            let mut b = perf_event::Builder::new(Software::DUMMY);
            assert_eq!(e.apply_to(&mut b), e.has_perf_event(), "{e}");
        }
    }
}
