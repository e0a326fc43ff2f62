//! Machine topology: cache domains, NUMA nodes and a stealing order per CPU.
//!
//! (Placeholder with the frozen API: the affinity work replaces the body with the sysfs reader.)

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
pub enum TopologyError {
    /// A system call failed.
    Io(std::io::Error),
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::Io(e) => write!(f, "reading the CPU topology failed: {e}"),
        }
    }
}

impl std::error::Error for TopologyError {}

/// The machine's topology.
#[derive(Clone, Debug)]
pub struct Topology {
    cpus: Vec<usize>,
    caches: Vec<CacheDomain>,
    numa_nodes: Vec<NumaNode>,
    warnings: Vec<String>,
}

impl Topology {
    /// Reads the topology of this machine (sysfs by default). Never fails: odd or missing entries
    /// degrade to a flat topology and a warning.
    pub fn detect() -> Topology {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut t = Topology::flat((0..n).collect());
        t.warnings.push("placeholder topology: flat".into());
        t
    }

    /// A topology with the given CPUs, no caches and one NUMA node.
    pub fn flat(cpus: Vec<usize>) -> Topology {
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

    /// Online CPUs, sorted.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// Every cache domain, all levels.
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

    /// Victims for a thief on `cpu`, restricted to `among` (the CPUs of the runtime's workers),
    /// nearest tier first: same L2, then same L3 / NUMA node, then the rest. `cpu` itself is not
    /// listed; empty tiers are dropped.
    pub fn steal_order(&self, cpu: usize, among: &[usize]) -> Vec<Vec<usize>> {
        let rest: Vec<usize> = among.iter().copied().filter(|&c| c != cpu).collect();
        if rest.is_empty() {
            Vec::new()
        } else {
            vec![rest]
        }
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} CPUs {:?}", self.cpus.len(), self.cpus)
    }
}

/// The CPUs this process may run on (`sched_getaffinity`), sorted.
pub fn allowed_cpus() -> Result<Vec<usize>, TopologyError> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set, and we pass its exact size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the pointer and size describe `set`.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(TopologyError::Io(std::io::Error::last_os_error()));
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: i < CPU_SETSIZE, the size of the set.
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .collect())
}
