//! The memory system of a simulated machine: every cache of every level, NUMA homes, and a
//! version-based coherence model for data that threads share and write.
//!
//! A reference walks the levels nearest first and stops at the first hit; a miss in the last
//! level costs the memory latency of the data's home node (local or remote). Private data of a
//! thread is homed where the thread first ran (first touch). Lines flagged *shared* carry a
//! version: a write bumps it, and a CPU that last saw an older version misses in its caches (a
//! coherence miss, served by the writer's node) whatever its caches hold. Lines never written by
//! another CPU are not invalidated (private data migrates with its thread: its old copies are
//! left behind, unused, as on a real machine after a migration).
//!
//! ```
//! use footprint_sim::machine::Machine;
//! use footprint_sim::memory::{CacheKind, Memory, Ref, RunCost};
//!
//! let m = Machine::preset("1x2").unwrap();
//! let mut mem = Memory::new(&m, CacheKind::Lru, 1, 3, 1).unwrap();
//! let r = Ref { start: 0, bytes: 4096, write: false, shared: false, home: None };
//! let mut cold = RunCost::default();
//! mem.access(0, 0, &r, &mut cold);
//! let mut warm = RunCost::default();
//! mem.access(0, 0, &r, &mut warm);
//! assert_eq!(cold.refs, 64);
//! assert_eq!((cold.counted_misses, warm.counted_misses), (64, 0));
//! assert!(warm.cycles < cold.cycles);
//! ```

use crate::cache::Cache;
use crate::machine::Machine;
use std::collections::HashMap;
use std::fmt;

/// Which replacement model every cache uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheKind {
    /// Set-associative LRU with the machine's associativity.
    Lru,
    /// Fully associative random replacement (004's model assumption).
    Random,
}

/// A run of consecutive bytes a thread references once each line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ref {
    /// First byte address.
    pub start: u64,
    /// Length in bytes.
    pub bytes: u64,
    /// Whether the run writes the lines.
    pub write: bool,
    /// Whether other threads share (and may write) these lines: coherence is tracked and set
    /// sampling is bypassed for them.
    pub shared: bool,
    /// The NUMA node holding the data; `None`: the thread's first-touch node.
    pub home: Option<usize>,
}

/// What a run cost, summed over its references.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunCost {
    /// Cycles spent on references.
    pub cycles: u64,
    /// Misses at the counted level (the ledger's level), scaled by the sampling factor.
    pub counted_misses: u64,
    /// Misses in the last level (memory references), scaled.
    pub llc_misses: u64,
    /// Line references represented (sampled or not).
    pub refs: u64,
    /// Line references actually simulated.
    pub simulated: u64,
}

/// The simulator cannot run this machine with these settings.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryError {
    /// The machine has no cache at all.
    NoCaches,
    /// Levels use different line sizes (the simulator needs one line size).
    MixedLineSizes,
    /// `sample` is not a power of two, or larger than some level's set count (or line count).
    BadSample {
        /// The sampling factor asked for.
        sample: u64,
        /// The largest usable.
        max: u64,
    },
    /// The counted level is not a level of the machine.
    NoSuchLevel(u8),
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryError::NoCaches => write!(f, "the machine has no cache: add one to `private`"),
            MemoryError::MixedLineSizes => {
                write!(f, "cache levels use different `line_size`s: give them one")
            }
            MemoryError::BadSample { sample, max } => write!(
                f,
                "set sampling 1 in {sample}: use a power of two from 1 to {max}"
            ),
            MemoryError::NoSuchLevel(l) => {
                write!(f, "count level L{l} is not a cache level of the machine")
            }
        }
    }
}

impl std::error::Error for MemoryError {}

struct Level {
    caches: Vec<Cache>,
    cpus_per_instance: usize,
    hit_cycles: u64,
}

#[derive(Clone, Copy)]
struct SharedLine {
    version: u32,
    writer_node: usize,
}

/// Remapped address space for shared lines: always sampled, never colliding with data lines.
const SHARED_TAG: u64 = 1 << 60;

/// The caches and memory of one machine.
pub struct Memory {
    levels: Vec<Level>,
    line_shift: u32,
    sample: u64,
    counted: usize,
    cpus_per_node: usize,
    local: u64,
    remote: u64,
    shared_lines: HashMap<u64, SharedLine>,
    seen: Vec<HashMap<u64, u32>>,
}

impl Memory {
    /// The memory system of `machine`: every cache of `kind`, simulating one line in `sample`,
    /// counting misses at cache level `count_level` (as the ledger does), random caches seeded
    /// from `seed`.
    pub fn new(
        machine: &Machine,
        kind: CacheKind,
        sample: u64,
        count_level: u8,
        seed: u64,
    ) -> Result<Memory, MemoryError> {
        let specs = machine.levels();
        let Some((first, _)) = specs.first() else {
            return Err(MemoryError::NoCaches);
        };
        let line = first.line_size;
        if specs.iter().any(|(s, _)| s.line_size != line) {
            return Err(MemoryError::MixedLineSizes);
        }
        let max = specs
            .iter()
            .map(|(s, _)| match kind {
                CacheKind::Lru => s.sets(),
                CacheKind::Random => s.lines(),
            })
            .min()
            .unwrap_or(1);
        if !sample.is_power_of_two() || sample > max {
            return Err(MemoryError::BadSample { sample, max });
        }
        let counted = specs
            .iter()
            .position(|(s, _)| s.level == count_level)
            .ok_or(MemoryError::NoSuchLevel(count_level))?;
        let mut n = 0u64;
        let levels = specs
            .iter()
            .map(|(s, per)| {
                let instances = machine.cpus.div_ceil(*per);
                let caches = (0..instances)
                    .map(|_| {
                        n += 1;
                        match kind {
                            CacheKind::Lru => Cache::lru(s.lines(), s.effective_ways(), sample),
                            CacheKind::Random => Cache::random(
                                s.lines(),
                                sample,
                                seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                            ),
                        }
                    })
                    .collect();
                Level {
                    caches,
                    cpus_per_instance: *per,
                    hit_cycles: u64::from(s.hit_cycles),
                }
            })
            .collect();
        Ok(Memory {
            levels,
            line_shift: line.trailing_zeros(),
            sample,
            counted,
            cpus_per_node: machine.cpus_per_node.max(1),
            local: u64::from(machine.latencies.local_memory),
            remote: u64::from(machine.latencies.remote_memory),
            shared_lines: HashMap::new(),
            seen: (0..machine.cpus).map(|_| HashMap::new()).collect(),
        })
    }

    /// The set-sampling factor.
    pub fn sample(&self) -> u64 {
        self.sample
    }

    /// References every line of `r` once from `cpu`, for a thread whose data lives on
    /// `thread_home`; adds the cost to `cost`.
    pub fn access(&mut self, cpu: usize, thread_home: usize, r: &Ref, cost: &mut RunCost) {
        if r.bytes == 0 {
            return;
        }
        let home = r.home.unwrap_or(thread_home);
        let first = r.start >> self.line_shift;
        let last = (r.start + r.bytes - 1) >> self.line_shift;
        cost.refs += last - first + 1;
        if r.shared {
            for line in first..=last {
                self.access_shared(cpu, home, line, r.write, cost);
            }
            return;
        }
        let s = self.sample;
        let mut line = first.div_ceil(s) * s;
        while line <= last {
            let (cycles, counted, llc) = self.walk(cpu, home, line, false);
            cost.cycles += cycles * s;
            cost.counted_misses += u64::from(counted) * s;
            cost.llc_misses += u64::from(llc) * s;
            cost.simulated += 1;
            line += s;
        }
    }

    fn node_of(&self, cpu: usize) -> usize {
        cpu / self.cpus_per_node
    }

    /// One line through the levels. `stale`: a coherence miss in every level private to the
    /// CPU (and in shared levels outside the writer's node). Returns cycles and whether the
    /// counted level and the last level missed.
    #[inline]
    fn walk(&mut self, cpu: usize, home: usize, line: u64, stale: bool) -> (u64, bool, bool) {
        let mut counted_miss = false;
        for (i, level) in self.levels.iter_mut().enumerate() {
            let cache = &mut level.caches[cpu / level.cpus_per_instance];
            let hit = cache.access(line) && !stale;
            if hit {
                return (level.hit_cycles, counted_miss, false);
            }
            if i == self.counted {
                counted_miss = true;
            }
        }
        let node = cpu / self.cpus_per_node;
        let mem = if node == home {
            self.local
        } else {
            self.remote
        };
        (mem, counted_miss, true)
    }

    fn access_shared(
        &mut self,
        cpu: usize,
        home: usize,
        line: u64,
        write: bool,
        cost: &mut RunCost,
    ) {
        let node = self.node_of(cpu);
        let state = *self.shared_lines.entry(line).or_insert(SharedLine {
            version: 0,
            writer_node: home,
        });
        let seen = self.seen[cpu].get(&line).copied();
        let fresh = seen == Some(state.version);
        let tagged = SHARED_TAG + line * self.sample;
        // A line another CPU wrote since this one last saw it is served by the writer's node.
        let (cycles, counted, llc) =
            self.walk(cpu, state.writer_node, tagged, !fresh && seen.is_some());
        cost.cycles += cycles;
        cost.counted_misses += u64::from(counted);
        cost.llc_misses += u64::from(llc);
        cost.simulated += 1;
        let version = if write {
            let v = state.version.wrapping_add(1);
            self.shared_lines.insert(
                line,
                SharedLine {
                    version: v,
                    writer_node: node,
                },
            );
            v
        } else {
            state.version
        };
        self.seen[cpu].insert(line, version);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_node() -> Machine {
        Machine::preset("2x2").unwrap()
    }

    #[test]
    fn remote_misses_cost_more_and_levels_count_separately() {
        let m = two_node();
        let mut mem = Memory::new(&m, CacheKind::Lru, 1, 2, 0).unwrap();
        let r = Ref {
            start: 1 << 20,
            bytes: 64 * 100,
            write: false,
            shared: false,
            home: Some(0),
        };
        let (mut local, mut remote) = (RunCost::default(), RunCost::default());
        mem.access(0, 0, &r, &mut local);
        let r2 = Ref {
            start: 2 << 20,
            ..r
        };
        mem.access(2, 0, &r2, &mut remote);
        assert_eq!(local.llc_misses, 100);
        assert_eq!(remote.llc_misses, 100);
        assert_eq!(local.cycles, 100 * 200);
        assert_eq!(remote.cycles, 100 * 350);
        // CPU 1 shares CPU 0's L3 (one node): L2 misses, L3 hits.
        let mut l3 = RunCost::default();
        mem.access(1, 0, &r, &mut l3);
        assert_eq!((l3.counted_misses, l3.llc_misses), (100, 0));
        assert_eq!(l3.cycles, 100 * 50);
    }

    #[test]
    fn writes_to_shared_lines_invalidate_other_copies() {
        let m = two_node();
        let mut mem = Memory::new(&m, CacheKind::Lru, 4, 3, 0).unwrap();
        let counter = Ref {
            start: 4096,
            bytes: 8,
            write: true,
            shared: true,
            home: Some(0),
        };
        let read = Ref {
            write: false,
            ..counter
        };
        let mut c = RunCost::default();
        mem.access(0, 0, &counter, &mut c); // cold
        assert_eq!(c.llc_misses, 1);
        let mut c = RunCost::default();
        mem.access(0, 0, &counter, &mut c); // still ours
        assert_eq!((c.llc_misses, c.cycles), (0, 4));
        let mut c = RunCost::default();
        mem.access(2, 0, &read, &mut c); // other node: cold there
        assert_eq!(c.llc_misses, 1);
        let mut c = RunCost::default();
        mem.access(2, 0, &read, &mut c); // no write since: hit
        assert_eq!(c.llc_misses, 0);
        let mut c = RunCost::default();
        mem.access(0, 0, &counter, &mut c); // CPU 0 writes again: it saw the newest: hit
        assert_eq!(c.llc_misses, 0);
        let mut c = RunCost::default();
        mem.access(2, 0, &read, &mut c); // stale on CPU 2: coherence miss from node 0
        assert_eq!((c.llc_misses, c.cycles), (1, 350));
    }

    #[test]
    fn bad_settings_are_typed_errors() {
        let m = two_node();
        assert!(matches!(
            Memory::new(&m, CacheKind::Lru, 3, 3, 0).map(|_| ()),
            Err(MemoryError::BadSample { .. })
        ));
        assert!(matches!(
            Memory::new(&m, CacheKind::Lru, 1, 4, 0).map(|_| ()),
            Err(MemoryError::NoSuchLevel(4))
        ));
        let mut mixed = m.clone();
        mixed.private[0].line_size = 128;
        mixed.private[0].size_bytes = 64 << 10;
        assert!(matches!(
            Memory::new(&mixed, CacheKind::Lru, 1, 3, 0).map(|_| ()),
            Err(MemoryError::MixedLineSizes)
        ));
        let Err(e) = Memory::new(&m, CacheKind::Lru, 1 << 20, 3, 0) else {
            panic!("sampling beyond the set count must fail");
        };
        assert!(e.to_string().contains("power of two"), "{e}");
    }
}
