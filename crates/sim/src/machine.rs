//! Machine descriptions: CPUs, private cache levels, caches shared by groups of CPUs, NUMA nodes
//! and latencies in cycles; presets; validation with typed errors that name the bad field.
//!
//! CPUs are numbered `0..cpus`. A shared cache serves the groups `c / cpus_per_group`, a NUMA
//! node the CPUs `c / cpus_per_node` (a last group or node may be partial, as on a machine with
//! some cores switched off: its caches keep their full size).
//!
//! ```
//! use footprint_sim::machine::{Machine, MachineError};
//!
//! let m = Machine::preset("4x16").unwrap();
//! assert_eq!((m.cpus, m.numa_nodes()), (64, 4));
//! let topo = m.topology();                     // the footprint-affinity view of it
//! assert_eq!(topo.numa_nodes().len(), 4);
//! let small = m.with_cpus(8).unwrap();         // the first 8 CPUs: one node
//! assert_eq!(small.numa_nodes(), 1);
//!
//! let mut bad = Machine::preset("2x16").unwrap();
//! bad.cpus = 0;
//! assert!(matches!(bad.validate(), Err(MachineError::NoCpus)));
//! ```

use footprint_affinity::{CacheDomain, NumaNode, Topology};
use std::fmt;

/// One cache (of one CPU or of one group of CPUs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheSpec {
    /// 1 for L1, 2 for L2, ...
    pub level: u8,
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Line size in bytes (a power of two).
    pub line_size: u32,
    /// Associativity; 0 means fully associative (one set).
    pub ways: u32,
    /// Cycles for a reference that hits here.
    pub hit_cycles: u32,
}

impl CacheSpec {
    /// Number of lines.
    pub fn lines(&self) -> u64 {
        self.size_bytes / u64::from(self.line_size.max(1))
    }

    /// Ways per set (the line count for a fully associative cache).
    pub fn effective_ways(&self) -> u64 {
        if self.ways == 0 {
            self.lines()
        } else {
            u64::from(self.ways)
        }
    }

    /// Number of sets.
    pub fn sets(&self) -> u64 {
        self.lines() / self.effective_ways().max(1)
    }
}

/// A cache shared by every group of `cpus_per_group` consecutive CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedCacheSpec {
    /// The cache of one group.
    pub cache: CacheSpec,
    /// CPUs per group (≥ 1).
    pub cpus_per_group: usize,
}

/// Latencies and costs in cycles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Latencies {
    /// A miss in every cache served by the CPU's own NUMA node.
    pub local_memory: u32,
    /// A miss served by another node's memory (or a line last written on another node).
    pub remote_memory: u32,
    /// A context switch between green threads (save, restore, queue operations).
    pub switch: u32,
    /// Reading the cache-miss counter around a run (policies that need miss counts).
    pub pmu_read: u32,
    /// Computing a reload-transient key (one `exp`, one table lookup).
    pub reload_key: u32,
    /// Taking a thread from another CPU of the same node.
    pub steal_local: u32,
    /// Taking a thread from a CPU of another node.
    pub steal_remote: u32,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            local_memory: 200,
            remote_memory: 350,
            switch: 150,
            pmu_read: 60,
            reload_key: 40,
            steal_local: 300,
            steal_remote: 900,
        }
    }
}

/// A simulated machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// Name for reports.
    pub name: String,
    /// Number of CPUs (≥ 1).
    pub cpus: usize,
    /// Caches private to each CPU, nearest first.
    pub private: Vec<CacheSpec>,
    /// Caches shared by groups of CPUs, nearest first (after every private level).
    pub shared: Vec<SharedCacheSpec>,
    /// CPUs per NUMA node (≥ 1).
    pub cpus_per_node: usize,
    /// Clock rate, for simulated seconds.
    pub clock_ghz: f64,
    /// Latencies in cycles.
    pub latencies: Latencies,
}

/// Why a machine description is impossible. Each variant names the field.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MachineError {
    /// `cpus` is 0.
    NoCpus,
    /// `field` (`cpus_per_node`, `shared[i].cpus_per_group`) is 0.
    ZeroGroup {
        /// The field.
        field: String,
    },
    /// A cache's `line_size` is 0 or not a power of two.
    BadLineSize {
        /// The field, e.g. `private[0].line_size`.
        field: String,
        /// Its value.
        line_size: u32,
    },
    /// A cache's size is not a whole number of sets of `ways` lines, or its set count is not a
    /// power of two.
    BadSets {
        /// The field, e.g. `shared[0].cache.size_bytes`.
        field: String,
        /// Lines in the cache.
        lines: u64,
        /// Ways per set.
        ways: u64,
    },
    /// A cache is larger than the next level out.
    LargerThanNextLevel {
        /// The field of the larger cache.
        field: String,
        /// Its size.
        size_bytes: u64,
        /// The field of the next level.
        next_field: String,
        /// The next level's size.
        next_size_bytes: u64,
    },
    /// `clock_ghz` is not a positive finite number.
    BadClock {
        /// Its value (as text, so the error stays `Eq`).
        value: String,
    },
    /// A preset name the simulator does not know.
    UnknownPreset(String),
}

impl fmt::Display for MachineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MachineError::NoCpus => write!(f, "machine field `cpus` is 0: give at least 1 CPU"),
            MachineError::ZeroGroup { field } => {
                write!(f, "machine field `{field}` is 0: give at least 1 CPU per group")
            }
            MachineError::BadLineSize { field, line_size } => write!(
                f,
                "machine field `{field}` is {line_size}: a cache line is a power of two bytes (e.g. 64)"
            ),
            MachineError::BadSets { field, lines, ways } => write!(
                f,
                "machine field `{field}`: {lines} lines in sets of {ways} ways is not a \
                 power-of-two number of sets; change the size or the associativity"
            ),
            MachineError::LargerThanNextLevel {
                field,
                size_bytes,
                next_field,
                next_size_bytes,
            } => write!(
                f,
                "machine field `{field}` ({size_bytes} B) is larger than the next level \
                 `{next_field}` ({next_size_bytes} B): order the caches nearest first"
            ),
            MachineError::BadClock { value } => {
                write!(f, "machine field `clock_ghz` is {value}: give a positive rate")
            }
            MachineError::UnknownPreset(name) => write!(
                f,
                "unknown machine {name:?}: use `this`, `2x16`, `4x16`, or `NxM` \
                 (N NUMA nodes of M CPUs)"
            ),
        }
    }
}

impl std::error::Error for MachineError {}

fn check_cache(field: &str, c: &CacheSpec) -> Result<(), MachineError> {
    if c.line_size == 0 || !c.line_size.is_power_of_two() {
        return Err(MachineError::BadLineSize {
            field: format!("{field}.line_size"),
            line_size: c.line_size,
        });
    }
    let lines = c.lines();
    let ways = c.effective_ways();
    let sets = c.sets();
    if lines == 0
        || !c.size_bytes.is_multiple_of(u64::from(c.line_size))
        || sets == 0
        || sets * ways != lines
        || !sets.is_power_of_two()
    {
        return Err(MachineError::BadSets {
            field: format!("{field}.size_bytes"),
            lines,
            ways,
        });
    }
    Ok(())
}

impl Machine {
    /// A server-like socket layout: `nodes` NUMA nodes of `per_node` CPUs; per CPU a 32 KiB
    /// 8-way L1 and a 1 MiB 16-way L2; per node a 16-way L3 of 1 MiB per CPU (at least 4 MiB).
    /// The L2 is the size of 004's Convex SPP cache (a 64 KiB working set is about 6 % of it).
    pub fn sockets(nodes: usize, per_node: usize) -> Machine {
        let l3_bytes = (per_node.next_power_of_two() as u64).max(4) << 20;
        Machine {
            name: format!("{nodes}x{per_node}"),
            cpus: nodes * per_node,
            private: vec![
                CacheSpec {
                    level: 1,
                    size_bytes: 32 << 10,
                    line_size: 64,
                    ways: 8,
                    hit_cycles: 4,
                },
                CacheSpec {
                    level: 2,
                    size_bytes: 1 << 20,
                    line_size: 64,
                    ways: 16,
                    hit_cycles: 14,
                },
            ],
            shared: vec![SharedCacheSpec {
                cache: CacheSpec {
                    level: 3,
                    size_bytes: l3_bytes,
                    line_size: 64,
                    ways: 16,
                    hit_cycles: 50,
                },
                cpus_per_group: per_node,
            }],
            cpus_per_node: per_node,
            clock_ghz: 2.0,
            latencies: Latencies::default(),
        }
    }

    /// A preset by name: `this` (this machine, [`Machine::from_topology`] of
    /// `Topology::detect()`), `2x16` (2 sockets of 16 CPUs), `4x16` (4 nodes of 16 CPUs), or any
    /// `NxM` ([`Machine::sockets`]).
    pub fn preset(name: &str) -> Result<Machine, MachineError> {
        if name == "this" {
            return Machine::from_topology(&Topology::detect());
        }
        let parsed = name
            .split_once('x')
            .and_then(|(n, m)| Some((n.parse::<usize>().ok()?, m.parse::<usize>().ok()?)));
        match parsed {
            Some((n, m)) if n > 0 && m > 0 && n * m <= 4096 => {
                let machine = Machine::sockets(n, m);
                machine.validate()?;
                Ok(machine)
            }
            _ => Err(MachineError::UnknownPreset(name.to_string())),
        }
    }

    /// The machine of a [`Topology`]: its CPUs (renumbered `0..n` in order), its private and
    /// shared cache levels and its NUMA nodes (node size: the first node's). A topology does not
    /// record associativity: the simulator takes 8 ways for L1 and 16 beyond, widened until the
    /// set count is a power of two. Hit latencies are typical (4, 14, 50 cycles by level). A
    /// topology without caches gets [`Machine::sockets`]'s caches.
    pub fn from_topology(topo: &Topology) -> Result<Machine, MachineError> {
        let cpus = topo.cpus().len();
        let mut m = Machine::sockets(1, cpus.max(1));
        m.name = format!("this ({cpus} CPUs)");
        m.cpus = cpus;
        let Some(&first) = topo.cpus().first() else {
            return Err(MachineError::NoCpus);
        };
        let mut levels: Vec<&CacheDomain> = topo
            .caches()
            .iter()
            .filter(|c| c.cpus.contains(&first))
            .collect();
        levels.sort_by_key(|c| c.level);
        if !levels.is_empty() {
            m.private.clear();
            m.shared.clear();
            for c in levels {
                let spec = spec_from_domain(c);
                if c.is_private() {
                    m.private.push(spec);
                } else {
                    m.shared.push(SharedCacheSpec {
                        cache: spec,
                        cpus_per_group: c.cpus.len(),
                    });
                }
            }
        }
        m.cpus_per_node = topo
            .numa_node_of(first)
            .map_or(cpus, |n| n.cpus.len())
            .max(1);
        m.validate()?;
        Ok(m)
    }

    /// The first `n` CPUs of this machine (groups and nodes filled in order; a partial group
    /// keeps its full cache).
    pub fn with_cpus(&self, n: usize) -> Result<Machine, MachineError> {
        let mut m = self.clone();
        m.cpus = n;
        m.name = format!("{} ({n} CPUs)", self.name);
        m.validate()?;
        Ok(m)
    }

    /// Checks that the machine can exist; the error names the first bad field.
    pub fn validate(&self) -> Result<(), MachineError> {
        if self.cpus == 0 {
            return Err(MachineError::NoCpus);
        }
        if self.cpus_per_node == 0 {
            return Err(MachineError::ZeroGroup {
                field: "cpus_per_node".into(),
            });
        }
        if !(self.clock_ghz.is_finite() && self.clock_ghz > 0.0) {
            return Err(MachineError::BadClock {
                value: self.clock_ghz.to_string(),
            });
        }
        let mut fields: Vec<(String, &CacheSpec, u64)> = Vec::new();
        for (i, c) in self.private.iter().enumerate() {
            let field = format!("private[{i}]");
            check_cache(&field, c)?;
            fields.push((field, c, c.size_bytes));
        }
        for (i, s) in self.shared.iter().enumerate() {
            if s.cpus_per_group == 0 {
                return Err(MachineError::ZeroGroup {
                    field: format!("shared[{i}].cpus_per_group"),
                });
            }
            let field = format!("shared[{i}].cache");
            check_cache(&field, &s.cache)?;
            fields.push((field, &s.cache, s.cache.size_bytes));
        }
        for pair in fields.windows(2) {
            let ((f, _, size), (nf, _, next)) = (&pair[0], &pair[1]);
            if size > next {
                return Err(MachineError::LargerThanNextLevel {
                    field: format!("{f}.size_bytes"),
                    size_bytes: *size,
                    next_field: format!("{nf}.size_bytes"),
                    next_size_bytes: *next,
                });
            }
        }
        Ok(())
    }

    /// Number of NUMA nodes among the CPUs.
    pub fn numa_nodes(&self) -> usize {
        self.cpus.div_ceil(self.cpus_per_node.max(1))
    }

    /// The NUMA node of `cpu`.
    pub fn node_of(&self, cpu: usize) -> usize {
        cpu / self.cpus_per_node.max(1)
    }

    /// Every cache level, nearest first: `(spec, cpus per instance)`.
    pub fn levels(&self) -> Vec<(&CacheSpec, usize)> {
        self.private
            .iter()
            .map(|c| (c, 1))
            .chain(self.shared.iter().map(|s| (&s.cache, s.cpus_per_group)))
            .collect()
    }

    /// The `footprint-affinity` topology of this machine: what the runtime would read on it
    /// (the ledger, the steal order and `Policy::auto_for` take it).
    pub fn topology(&self) -> Topology {
        let cpus: Vec<usize> = (0..self.cpus).collect();
        let mut caches = Vec::new();
        for (spec, per) in self.levels() {
            for group in cpus.chunks(per.max(1)) {
                caches.push(CacheDomain {
                    level: spec.level,
                    size_bytes: spec.size_bytes,
                    line_size: spec.line_size,
                    cpus: group.to_vec(),
                });
            }
        }
        let nodes = cpus
            .chunks(self.cpus_per_node.max(1))
            .enumerate()
            .map(|(id, c)| NumaNode {
                id,
                cpus: c.to_vec(),
            })
            .collect();
        Topology::from_parts(cpus, caches, nodes)
    }
}

fn spec_from_domain(c: &CacheDomain) -> CacheSpec {
    let lines = c.lines();
    let mut ways: u64 = if c.level <= 1 { 8 } else { 16 };
    let mut sets = (lines / ways).max(1);
    if !sets.is_power_of_two() {
        sets = 1u64 << (63 - sets.leading_zeros());
        ways = lines / sets;
    }
    CacheSpec {
        level: c.level,
        size_bytes: sets * ways * u64::from(c.line_size),
        line_size: c.line_size,
        ways: ways as u32,
        hit_cycles: match c.level {
            0 | 1 => 4,
            2 => 14,
            _ => 50,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_validate_and_map_to_topologies() {
        for name in ["2x16", "4x16", "1x2", "8x32"] {
            let m = Machine::preset(name).unwrap();
            m.validate().unwrap();
            let t = m.topology();
            assert_eq!(t.cpus().len(), m.cpus);
            assert_eq!(t.numa_nodes().len(), m.numa_nodes());
            assert_eq!(t.last_level(), Some(3));
        }
        let m = Machine::preset("2x16").unwrap();
        assert_eq!(m.cpus, 32);
        assert_eq!(m.topology().cache_of(17, 3).unwrap().cpus.len(), 16);
        assert_eq!(m.node_of(17), 1);
        let m = Machine::preset("this").unwrap();
        assert_eq!(m.cpus, Topology::detect().cpus().len());
        assert!(matches!(
            Machine::preset("huge"),
            Err(MachineError::UnknownPreset(_))
        ));
    }

    #[test]
    fn partial_machines_keep_whole_caches() {
        let m = Machine::preset("4x16").unwrap().with_cpus(20).unwrap();
        assert_eq!(m.numa_nodes(), 2);
        let t = m.topology();
        assert_eq!(t.cache_of(19, 3).unwrap().cpus, vec![16, 17, 18, 19]);
        assert_eq!(t.cache_of(19, 3).unwrap().size_bytes, 16 << 20);
    }

    #[test]
    fn impossible_machines_name_the_field() {
        let base = Machine::preset("2x16").unwrap();
        let mut m = base.clone();
        m.cpus = 0;
        assert_eq!(m.validate(), Err(MachineError::NoCpus));
        assert!(m.validate().unwrap_err().to_string().contains("`cpus`"));

        let mut m = base.clone();
        m.private[1].line_size = 0;
        let e = m.validate().unwrap_err();
        assert!(e.to_string().contains("private[1].line_size"), "{e}");

        let mut m = base.clone();
        m.private[1].size_bytes = 2 << 20;
        m.shared[0].cache.size_bytes = 1 << 20;
        let e = m.validate().unwrap_err();
        assert!(
            matches!(&e, MachineError::LargerThanNextLevel { field, .. } if field == "private[1].size_bytes"),
            "{e}"
        );

        let mut m = base.clone();
        m.shared[0].cache.size_bytes = 24 << 20; // 24 MiB / 64 / 16 = 24576 sets
        let e = m.validate().unwrap_err();
        assert!(e.to_string().contains("shared[0].cache.size_bytes"), "{e}");
        assert!(matches!(e, MachineError::BadSets { .. }));

        let mut m = base.clone();
        m.cpus_per_node = 0;
        assert!(m
            .validate()
            .unwrap_err()
            .to_string()
            .contains("cpus_per_node"));
        let mut m = base;
        m.shared[0].cpus_per_group = 0;
        assert!(m
            .validate()
            .unwrap_err()
            .to_string()
            .contains("shared[0].cpus_per_group"));
    }

    #[test]
    fn topology_caches_get_power_of_two_sets() {
        let c = CacheDomain {
            level: 3,
            size_bytes: 30 << 20,
            line_size: 64,
            cpus: vec![0, 1],
        };
        let s = spec_from_domain(&c);
        assert!(s.sets().is_power_of_two());
        assert_eq!(s.sets() * s.effective_ways(), s.lines());
        let t = Topology::from_parts(vec![0, 1], vec![c], vec![]);
        let m = Machine::from_topology(&t).unwrap();
        assert_eq!(m.shared.len(), 1);
        assert_eq!(m.shared[0].cpus_per_group, 2);
        assert!(m.private.is_empty());
    }
}
