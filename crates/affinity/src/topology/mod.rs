//! Machine topology: cache domains, NUMA nodes and a stealing order per CPU.
//!
//! The default backend reads Linux sysfs ([`Topology::detect`], or [`Topology::from_sysfs`] with
//! another root so that tests can feed fake trees). With the `hwloc` feature,
//! `Topology::detect_hwloc` reads the same facts through the system libhwloc.
//!
//! Reading never panics and never fails: entries that are missing or inconsistent (containers
//! that hide `/sys`, offline CPUs, caches without `shared_cpu_list`, NUMA nodes that do not cover
//! the online CPUs) are dropped, the topology degrades towards a flat one, and every such decision
//! is recorded as a human-readable line in [`Topology::warnings`].
//!
//! ```
//! use footprint_affinity::Topology;
//! let topo = Topology::detect();
//! println!("{topo}");
//! assert!(!topo.cpus().is_empty());
//! for warning in topo.warnings() {
//!     eprintln!("topology: {warning}");
//! }
//! ```

use std::fmt;

/// One cache shared by a set of CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheDomain {
    /// 1 for L1, 2 for L2, ...
    pub level: u8,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Line size in bytes.
    pub line_size: u32,
    /// The logical CPUs that share this cache, sorted.
    pub cpus: Vec<usize>,
}

impl CacheDomain {
    /// Number of lines, `size_bytes / line_size` (at least 1): the `N` of the reload-transient
    /// model in `crate::reload`.
    pub fn lines(&self) -> u64 {
        (self.size_bytes / u64::from(self.line_size.max(1))).max(1)
    }

    /// True when only one CPU uses this cache.
    pub fn is_private(&self) -> bool {
        self.cpus.len() <= 1
    }
}

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaNode {
    /// The node's id.
    pub id: usize,
    /// Its CPUs, sorted.
    pub cpus: Vec<usize>,
}

/// Errors from reading the topology or the process's CPU mask.
#[derive(Debug)]
#[non_exhaustive]
pub enum TopologyError {
    /// A system call failed.
    Io(std::io::Error),
    /// The hwloc backend (feature `hwloc`) failed; the message says what to check.
    Hwloc(String),
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::Io(e) => write!(f, "reading the CPU topology failed: {e}"),
            TopologyError::Hwloc(msg) => write!(
                f,
                "reading the topology through hwloc failed: {msg} (the sysfs backend, \
                 Topology::detect, needs no system library)"
            ),
        }
    }
}

impl std::error::Error for TopologyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TopologyError::Io(e) => Some(e),
            TopologyError::Hwloc(_) => None,
        }
    }
}

mod cpu_list;
mod sysfs;
#[cfg(test)]
mod tests;

use cpu_list::format_bytes;
pub use cpu_list::{format_cpu_list, parse_cpu_list, CpuListError, MAX_CPU_ID};

/// The machine's topology.
#[derive(Clone, Debug)]
pub struct Topology {
    cpus: Vec<usize>,
    caches: Vec<CacheDomain>,
    numa_nodes: Vec<NumaNode>,
    warnings: Vec<String>,
}

impl Topology {
    /// A topology with the given CPUs, no caches and one NUMA node.
    pub fn flat(cpus: Vec<usize>) -> Topology {
        let mut cpus = cpus;
        cpus.sort_unstable();
        cpus.dedup();
        Topology {
            numa_nodes: vec![NumaNode {
                id: 0,
                cpus: cpus.clone(),
            }],
            cpus,
            caches: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Builds a topology from parts (for tests of code that takes a topology, and for backends).
    /// CPU lists are sorted; caches are ordered by level, then first CPU. No validation beyond
    /// that: use [`Topology::from_sysfs`] for checked input.
    pub fn from_parts(
        cpus: Vec<usize>,
        caches: Vec<CacheDomain>,
        numa_nodes: Vec<NumaNode>,
    ) -> Topology {
        let mut t = Topology::flat(cpus);
        let mut caches = caches;
        for c in &mut caches {
            c.cpus.sort_unstable();
            c.cpus.dedup();
        }
        caches.sort_by(|a, b| (a.level, a.cpus.first()).cmp(&(b.level, b.cpus.first())));
        t.caches = caches;
        if !numa_nodes.is_empty() {
            let mut nodes = numa_nodes;
            for n in &mut nodes {
                n.cpus.sort_unstable();
                n.cpus.dedup();
            }
            nodes.sort_by_key(|n| n.id);
            t.numa_nodes = nodes;
        }
        t
    }

    #[cfg(feature = "hwloc")]
    pub(crate) fn add_warnings(&mut self, warnings: Vec<String>) {
        self.warnings.extend(warnings);
    }

    /// Online CPUs, sorted.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// Every cache domain, all levels, ordered by level and then by first CPU.
    pub fn caches(&self) -> &[CacheDomain] {
        &self.caches
    }

    /// NUMA nodes.
    pub fn numa_nodes(&self) -> &[NumaNode] {
        &self.numa_nodes
    }

    /// What was odd while reading it.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The cache of `level` (data or unified) that `cpu` uses.
    pub fn cache_of(&self, cpu: usize, level: u8) -> Option<&CacheDomain> {
        self.caches
            .iter()
            .find(|c| c.level == level && c.cpus.contains(&cpu))
    }

    /// The highest cache level known (the last-level cache), if any.
    pub fn last_level(&self) -> Option<u8> {
        self.caches.iter().map(|c| c.level).max()
    }

    /// The NUMA node that holds `cpu`.
    pub fn numa_node_of(&self, cpu: usize) -> Option<&NumaNode> {
        self.numa_nodes.iter().find(|n| n.cpus.contains(&cpu))
    }

    /// Victims for a thief on `cpu`, restricted to `among` (the CPUs of the runtime's workers),
    /// nearest tier first: same L2, then same L3 / NUMA node, then the rest. `cpu` itself is not
    /// listed; empty tiers are dropped.
    ///
    /// Within a tier the CPUs start after `cpu` and wrap around (for a thief on 5 among 0..8 in
    /// one tier: 6, 7, 0, 1, ...), so that thieves of one tier do not all start on one victim.
    /// Duplicates in `among` are ignored. A `cpu` the topology does not know gets one tier.
    pub fn steal_order(&self, cpu: usize, among: &[usize]) -> Vec<Vec<usize>> {
        let mut candidates: Vec<usize> = among.iter().copied().filter(|&c| c != cpu).collect();
        candidates.sort_unstable();
        candidates.dedup();
        // Rotate so the list starts after `cpu`.
        let split = candidates.partition_point(|&c| c < cpu);
        candidates.rotate_left(split);

        let l2: &[usize] = self.cache_of(cpu, 2).map_or(&[], |c| &c.cpus);
        let l3: &[usize] = self.cache_of(cpu, 3).map_or(&[], |c| &c.cpus);
        let node: &[usize] = self.numa_node_of(cpu).map_or(&[], |n| &n.cpus);
        let tier_of = |c: usize| -> usize {
            if l2.binary_search(&c).is_ok() {
                0
            } else if l3.binary_search(&c).is_ok() || node.binary_search(&c).is_ok() {
                1
            } else {
                2
            }
        };
        let mut tiers = vec![Vec::new(), Vec::new(), Vec::new()];
        for c in candidates {
            tiers[tier_of(c)].push(c);
        }
        tiers.retain(|t| !t.is_empty());
        tiers
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} CPU{} ({}), {} NUMA node{}",
            self.cpus.len(),
            if self.cpus.len() == 1 { "" } else { "s" },
            format_cpu_list(&self.cpus),
            self.numa_nodes.len(),
            if self.numa_nodes.len() == 1 { "" } else { "s" },
        )?;
        let mut levels: Vec<u8> = self.caches.iter().map(|c| c.level).collect();
        levels.dedup();
        if levels.is_empty() {
            writeln!(f, "  caches: unknown")?;
        }
        for level in levels {
            let domains: Vec<&CacheDomain> =
                self.caches.iter().filter(|c| c.level == level).collect();
            let first = domains[0];
            let uniform = domains
                .iter()
                .all(|d| d.size_bytes == first.size_bytes && d.line_size == first.line_size);
            let sharing = if domains.iter().all(|d| d.is_private()) {
                "private".to_string()
            } else {
                let sets: Vec<String> = domains
                    .iter()
                    .map(|d| format!("{{{}}}", format_cpu_list(&d.cpus)))
                    .collect();
                format!("shared by CPUs {}", sets.join(" "))
            };
            if uniform {
                writeln!(
                    f,
                    "  L{level}: {} x {} ({} B lines, {} lines each), {sharing}",
                    domains.len(),
                    format_bytes(first.size_bytes),
                    first.line_size,
                    first.lines(),
                )?;
            } else {
                for d in domains {
                    writeln!(
                        f,
                        "  L{level}: {} ({} B lines) on CPUs {}",
                        format_bytes(d.size_bytes),
                        d.line_size,
                        format_cpu_list(&d.cpus)
                    )?;
                }
            }
        }
        for n in &self.numa_nodes {
            writeln!(f, "  NUMA node {}: CPUs {}", n.id, format_cpu_list(&n.cpus))?;
        }
        for w in &self.warnings {
            writeln!(f, "  warning: {w}")?;
        }
        Ok(())
    }
}

/// The CPUs this process may run on (`sched_getaffinity`), sorted.
pub fn allowed_cpus() -> Result<Vec<usize>, TopologyError> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set, and we pass its exact size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the pointer and size describe `set`.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(TopologyError::Io(std::io::Error::last_os_error()));
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: i < CPU_SETSIZE, the size of the set.
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .collect())
}
