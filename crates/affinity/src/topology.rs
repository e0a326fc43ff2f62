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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

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

/// A CPU list such as `0-3,8,10-11` that could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuListError {
    /// The text that was given.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bad CPU list {:?}: {} (expected comma-separated ids or ranges, e.g. \"0-3,8,10-11\")",
            self.text, self.reason
        )
    }
}

impl std::error::Error for CpuListError {}

/// The largest CPU id a list may name (Linux's `NR_CPUS` tops out at 8192; this leaves room and
/// keeps a corrupt range such as `0-4294967295` from allocating gigabytes).
pub const MAX_CPU_ID: usize = 1 << 16;

/// Parses a Linux CPU list (`0-3,8,10-11`; whitespace and a trailing newline are ignored, the
/// empty string is the empty set) into sorted, deduplicated ids.
///
/// ```
/// use footprint_affinity::topology::parse_cpu_list;
/// assert_eq!(parse_cpu_list("0-3,8,10-11\n").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
/// assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
/// assert!(parse_cpu_list("3-1").is_err());
/// ```
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, CpuListError> {
    let err = |reason: String| CpuListError {
        text: text.to_string(),
        reason,
    };
    let parse_id = |s: &str| -> Result<usize, CpuListError> {
        let s = s.trim();
        let id: usize = s
            .parse()
            .map_err(|_| err(format!("{s:?} is not a CPU id")))?;
        if id > MAX_CPU_ID {
            return Err(err(format!("CPU id {id} is above the limit {MAX_CPU_ID}")));
        }
        Ok(id)
    };
    let mut set = BTreeSet::new();
    for part in text.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (parse_id(lo)?, parse_id(hi)?);
                if lo > hi {
                    return Err(err(format!("range {part:?} runs backwards")));
                }
                set.extend(lo..=hi);
            }
            None => {
                set.insert(parse_id(part)?);
            }
        }
    }
    Ok(set.into_iter().collect())
}

/// Parses a Linux CPU mask (`shared_cpu_map` style: hex words separated by commas, most
/// significant first, e.g. `00000000,00000003`).
fn parse_cpu_mask(text: &str) -> Result<Vec<usize>, CpuListError> {
    let digits: Vec<char> = text.trim().chars().filter(|&c| c != ',').collect();
    if digits.is_empty() {
        return Err(CpuListError {
            text: text.to_string(),
            reason: "empty mask".into(),
        });
    }
    let mut cpus = Vec::new();
    for (nibble_index, c) in digits.iter().rev().enumerate() {
        let value = c.to_digit(16).ok_or_else(|| CpuListError {
            text: text.to_string(),
            reason: format!("{c:?} is not a hex digit"),
        })?;
        for bit in 0..4 {
            if value & (1 << bit) != 0 {
                let id = nibble_index * 4 + bit;
                if id > MAX_CPU_ID {
                    return Err(CpuListError {
                        text: text.to_string(),
                        reason: format!("CPU id {id} is above the limit {MAX_CPU_ID}"),
                    });
                }
                cpus.push(id);
            }
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// Parses a sysfs cache size: `48K`, `1024K`, `32M`, `1G` (binary units) or plain bytes.
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1u64 << 10),
        'M' | 'm' => (&t[..t.len() - 1], 1 << 20),
        'G' | 'g' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = digits.trim().parse().ok()?;
    n.checked_mul(mult).filter(|&b| b > 0)
}

/// Formats sorted ids compactly as a CPU list (`0-3,8`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

fn format_bytes(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

/// The machine's topology.
#[derive(Clone, Debug)]
pub struct Topology {
    cpus: Vec<usize>,
    caches: Vec<CacheDomain>,
    numa_nodes: Vec<NumaNode>,
    warnings: Vec<String>,
}

/// One data or unified cache entry as one CPU reports it.
struct RawCache {
    cpu: usize,
    index: String,
    size_bytes: Option<u64>,
    line_size: Option<u32>,
    shared: Option<Vec<usize>>,
}

struct Sysfs {
    root: PathBuf,
}

impl Sysfs {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }

    /// Sorted numeric suffixes of the entries of `dir` called `<prefix><number>`.
    fn numbered_entries(&self, dir: &Path, prefix: &str) -> Option<Vec<usize>> {
        let entries = std::fs::read_dir(dir).ok()?;
        let mut ids: Vec<usize> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_prefix(prefix)?.parse().ok()
            })
            .collect();
        ids.sort_unstable();
        Some(ids)
    }
}

impl Topology {
    /// Reads the topology of this machine from Linux sysfs (`/sys`). Never fails: odd or missing
    /// entries degrade to a flat topology and a warning (see [`Topology::warnings`]).
    pub fn detect() -> Topology {
        Topology::from_sysfs("/sys")
    }

    /// Reads the topology from a sysfs tree mounted at `root` (normally `/sys`; tests pass fake
    /// trees). Reads `devices/system/cpu/online`, `devices/system/cpu/cpu*/cache/index*/{level,
    /// type,size,coherency_line_size,shared_cpu_list}` and `devices/system/node/node*/cpulist`.
    /// Instruction caches are skipped; data and unified caches become [`CacheDomain`]s.
    pub fn from_sysfs(root: impl AsRef<Path>) -> Topology {
        let fs = Sysfs {
            root: root.as_ref().to_path_buf(),
        };
        let mut warnings = Vec::new();
        let cpus = read_online_cpus(&fs, &mut warnings);
        let caches = read_caches(&fs, &cpus, &mut warnings);
        let numa_nodes = read_numa_nodes(&fs, &cpus, &mut warnings);
        Topology {
            cpus,
            caches,
            numa_nodes,
            warnings,
        }
    }

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

fn read_online_cpus(fs: &Sysfs, warnings: &mut Vec<String>) -> Vec<usize> {
    let online_path = fs.path("devices/system/cpu/online");
    if let Some(text) = fs.read(&online_path) {
        match parse_cpu_list(&text) {
            Ok(cpus) if !cpus.is_empty() => return cpus,
            Ok(_) => warnings.push(format!("{} is empty", online_path.display())),
            Err(e) => warnings.push(format!("{}: {e}", online_path.display())),
        }
    } else {
        warnings.push(format!("{} is missing", online_path.display()));
    }
    // Fall back to the cpuN directories: a CPU without an `online` file (often cpu0) is online.
    let cpu_dir = fs.path("devices/system/cpu");
    if let Some(ids) = fs.numbered_entries(&cpu_dir, "cpu") {
        let online: Vec<usize> = ids
            .into_iter()
            .filter(|id| {
                fs.read(&cpu_dir.join(format!("cpu{id}/online")))
                    .is_none_or(|s| s.trim() != "0")
            })
            .collect();
        if !online.is_empty() {
            warnings.push(format!(
                "took the online CPUs ({}) from the cpuN directories",
                format_cpu_list(&online)
            ));
            return online;
        }
    }
    let fallback = allowed_cpus()
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        });
    warnings.push(format!(
        "no CPU information under {}: flat topology over the allowed CPUs ({})",
        cpu_dir.display(),
        format_cpu_list(&fallback)
    ));
    fallback
}

fn read_raw_caches(
    fs: &Sysfs,
    cpus: &[usize],
    warnings: &mut Vec<String>,
) -> (BTreeMap<u8, Vec<RawCache>>, Vec<usize>) {
    let mut by_level: BTreeMap<u8, Vec<RawCache>> = BTreeMap::new();
    let mut without_cache_dir = Vec::new();
    for &cpu in cpus {
        let dir = fs.path(&format!("devices/system/cpu/cpu{cpu}/cache"));
        let Some(indices) = fs.numbered_entries(&dir, "index") else {
            without_cache_dir.push(cpu);
            continue;
        };
        for index in indices {
            let idir = dir.join(format!("index{index}"));
            let name = format!("cpu{cpu}/cache/index{index}");
            let kind = fs.read(&idir.join("type")).map(|s| s.trim().to_string());
            match kind.as_deref() {
                Some("Instruction") => continue,
                Some("Data") | Some("Unified") => {}
                Some(other) => {
                    warnings.push(format!("{name}: unknown cache type {other:?}, skipped"));
                    continue;
                }
                None => {
                    warnings.push(format!("{name}: no type, skipped"));
                    continue;
                }
            }
            let level = fs
                .read(&idir.join("level"))
                .and_then(|s| s.trim().parse::<u8>().ok());
            let Some(level) = level.filter(|&l| l > 0) else {
                warnings.push(format!("{name}: missing or bad level, skipped"));
                continue;
            };
            let size_bytes = fs.read(&idir.join("size")).and_then(|s| parse_size(&s));
            let line_size = fs
                .read(&idir.join("coherency_line_size"))
                .and_then(|s| s.trim().parse::<u32>().ok())
                .filter(|&l| l > 0);
            let shared = match fs.read(&idir.join("shared_cpu_list")) {
                Some(text) => parse_cpu_list(&text).ok(),
                None => fs
                    .read(&idir.join("shared_cpu_map"))
                    .and_then(|t| parse_cpu_mask(&t).ok()),
            };
            by_level.entry(level).or_default().push(RawCache {
                cpu,
                index: name,
                size_bytes,
                line_size,
                shared,
            });
        }
    }
    (by_level, without_cache_dir)
}

/// Builds the domains of one level, or says why the level must be dropped.
fn domains_of_level(
    level: u8,
    raws: &[RawCache],
    cpus: &[usize],
    warnings: &mut Vec<String>,
) -> Result<Vec<CacheDomain>, String> {
    let mut per_cpu: BTreeMap<usize, &RawCache> = BTreeMap::new();
    for raw in raws {
        if per_cpu.insert(raw.cpu, raw).is_some() {
            return Err(format!(
                "CPU {} reports two data/unified L{level} caches",
                raw.cpu
            ));
        }
    }
    let missing: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !per_cpu.contains_key(c))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "CPUs {} report no L{level} cache while others do",
            format_cpu_list(&missing)
        ));
    }
    let mut domains: BTreeMap<Vec<usize>, CacheDomain> = BTreeMap::new();
    let mut assumed_line = false;
    for (&cpu, raw) in &per_cpu {
        let Some(shared) = &raw.shared else {
            return Err(format!(
                "{} has no readable shared_cpu_list or shared_cpu_map",
                raw.index
            ));
        };
        // Offline CPUs may appear in the list: keep the online ones.
        let shared: Vec<usize> = shared
            .iter()
            .copied()
            .filter(|c| cpus.binary_search(c).is_ok())
            .collect();
        if shared.binary_search(&cpu).is_err() {
            return Err(format!(
                "{}: shared_cpu_list does not contain CPU {cpu} itself",
                raw.index
            ));
        }
        let Some(size_bytes) = raw.size_bytes else {
            return Err(format!("{} has no readable size", raw.index));
        };
        let line_size = raw.line_size.unwrap_or_else(|| {
            assumed_line = true;
            64
        });
        match domains.get(&shared) {
            Some(d) if d.size_bytes != size_bytes || d.line_size != line_size => {
                return Err(format!(
                    "{} disagrees with its sharers about size or line size",
                    raw.index
                ));
            }
            Some(_) => {}
            None => {
                domains.insert(
                    shared.clone(),
                    CacheDomain {
                        level,
                        size_bytes,
                        line_size,
                        cpus: shared,
                    },
                );
            }
        }
    }
    if assumed_line {
        warnings.push(format!(
            "L{level}: coherency_line_size missing, assumed 64 bytes"
        ));
    }
    // The domains must partition the online CPUs: every CPU in exactly one domain.
    let mut seen = BTreeSet::new();
    for d in domains.keys() {
        for &c in d {
            if !seen.insert(c) {
                return Err(format!(
                    "CPU {c} appears in two different L{level} sharing sets"
                ));
            }
        }
    }
    let mut out: Vec<CacheDomain> = domains.into_values().collect();
    out.sort_by_key(|d| d.cpus[0]);
    Ok(out)
}

fn read_caches(fs: &Sysfs, cpus: &[usize], warnings: &mut Vec<String>) -> Vec<CacheDomain> {
    let (by_level, without_cache_dir) = read_raw_caches(fs, cpus, warnings);
    if by_level.is_empty() {
        warnings.push(
            "no data or unified cache information in sysfs: no cache domains (flat topology)"
                .to_string(),
        );
        return Vec::new();
    }
    if !without_cache_dir.is_empty() {
        warnings.push(format!(
            "CPUs {} have no cache directory",
            format_cpu_list(&without_cache_dir)
        ));
    }
    let mut caches = Vec::new();
    for (level, raws) in &by_level {
        match domains_of_level(*level, raws, cpus, warnings) {
            Ok(domains) => caches.extend(domains),
            Err(why) => warnings.push(format!("L{level} dropped: {why}")),
        }
    }
    caches
}

fn read_numa_nodes(fs: &Sysfs, cpus: &[usize], warnings: &mut Vec<String>) -> Vec<NumaNode> {
    let one_node = || {
        vec![NumaNode {
            id: 0,
            cpus: cpus.to_vec(),
        }]
    };
    let dir = fs.path("devices/system/node");
    let Some(ids) = fs
        .numbered_entries(&dir, "node")
        .filter(|ids| !ids.is_empty())
    else {
        warnings.push("no NUMA nodes in sysfs: assuming one node with every CPU".to_string());
        return one_node();
    };
    let mut nodes = Vec::new();
    for id in ids {
        let path = dir.join(format!("node{id}/cpulist"));
        let Some(text) = fs.read(&path) else {
            warnings.push(format!(
                "{} is missing: one NUMA node assumed",
                path.display()
            ));
            return one_node();
        };
        match parse_cpu_list(&text) {
            Ok(list) => {
                let list: Vec<usize> = list
                    .into_iter()
                    .filter(|c| cpus.binary_search(c).is_ok())
                    .collect();
                // Memory-only nodes (and nodes whose CPUs are all offline) hold no CPU.
                if !list.is_empty() {
                    nodes.push(NumaNode { id, cpus: list });
                }
            }
            Err(e) => {
                warnings.push(format!("{}: {e}: one NUMA node assumed", path.display()));
                return one_node();
            }
        }
    }
    let mut seen = BTreeSet::new();
    for n in &nodes {
        for &c in &n.cpus {
            if !seen.insert(c) {
                warnings.push(format!(
                    "CPU {c} is listed in two NUMA nodes: one NUMA node assumed"
                ));
                return one_node();
            }
        }
    }
    let uncovered: Vec<usize> = cpus.iter().copied().filter(|c| !seen.contains(c)).collect();
    if !uncovered.is_empty() {
        warnings.push(format!(
            "CPUs {} are in no NUMA node: one NUMA node assumed",
            format_cpu_list(&uncovered)
        ));
        return one_node();
    }
    nodes
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fake sysfs tree in a fresh directory under the system temp dir, removed on drop.
    struct FakeSysfs {
        root: PathBuf,
    }

    impl FakeSysfs {
        fn new() -> FakeSysfs {
            static COUNTER: AtomicUsize = AtomicUsize::new(0);
            let root = std::env::temp_dir().join(format!(
                "footprint-affinity-sysfs-{}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(&root).unwrap();
            FakeSysfs { root }
        }

        fn write(&self, rel: &str, content: &str) -> &Self {
            let p = self.root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
            self
        }

        fn cache(&self, cpu: usize, index: usize, level: u8, kind: &str, size: &str, shared: &str) {
            let base = format!("devices/system/cpu/cpu{cpu}/cache/index{index}");
            self.write(&format!("{base}/level"), &format!("{level}\n"));
            self.write(&format!("{base}/type"), &format!("{kind}\n"));
            self.write(&format!("{base}/size"), &format!("{size}\n"));
            self.write(&format!("{base}/coherency_line_size"), "64\n");
            self.write(&format!("{base}/shared_cpu_list"), &format!("{shared}\n"));
        }

        /// `n` CPUs, 2 per L2 (SMT pairs), `per_l3` per L3, `per_node` per NUMA node.
        fn machine(n: usize, per_l3: usize, per_node: usize) -> FakeSysfs {
            let fs = FakeSysfs::new();
            fs.write(
                "devices/system/cpu/online",
                &format!("{}\n", format_cpu_list(&(0..n).collect::<Vec<_>>())),
            );
            for cpu in 0..n {
                let pair = cpu / 2 * 2;
                let l3 = cpu / per_l3 * per_l3;
                fs.cache(cpu, 0, 1, "Data", "32K", &format!("{pair}-{}", pair + 1));
                fs.cache(
                    cpu,
                    1,
                    1,
                    "Instruction",
                    "32K",
                    &format!("{pair}-{}", pair + 1),
                );
                fs.cache(
                    cpu,
                    2,
                    2,
                    "Unified",
                    "1024K",
                    &format!("{pair}-{}", pair + 1),
                );
                fs.cache(
                    cpu,
                    3,
                    3,
                    "Unified",
                    "32M",
                    &format!("{l3}-{}", l3 + per_l3 - 1),
                );
            }
            for node in 0..n / per_node {
                fs.write(
                    &format!("devices/system/node/node{node}/cpulist"),
                    &format!("{}-{}\n", node * per_node, node * per_node + per_node - 1),
                );
            }
            fs
        }
    }

    impl Drop for FakeSysfs {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    #[test]
    fn cpu_lists_parse_and_reject() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list(" 5 , 1-2 ,1\n").unwrap(), vec![1, 2, 5]);
        assert_eq!(parse_cpu_list("\n").unwrap(), Vec::<usize>::new());
        assert!(parse_cpu_list("a-b").is_err());
        assert!(parse_cpu_list("4-2").is_err());
        assert!(parse_cpu_list("0-4294967295").is_err());
        assert!(parse_cpu_list("1-2-3").is_err());
        let e = parse_cpu_list("x").unwrap_err();
        assert!(e.to_string().contains("0-3,8,10-11"), "{e}");
    }

    #[test]
    fn cpu_masks_parse() {
        assert_eq!(parse_cpu_mask("00000000,00000003\n").unwrap(), vec![0, 1]);
        assert_eq!(parse_cpu_mask("1,00000001").unwrap(), vec![0, 32]);
        assert!(parse_cpu_mask("zz").is_err());
    }

    #[test]
    fn cpu_list_format_roundtrips() {
        for list in [vec![], vec![0], vec![0, 1, 2, 3, 8, 10, 11], vec![1, 3, 5]] {
            assert_eq!(parse_cpu_list(&format_cpu_list(&list)).unwrap(), list);
        }
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("48K\n"), Some(48 << 10));
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("0K"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn reads_a_two_socket_machine() {
        let fs = FakeSysfs::machine(8, 4, 4);
        let t = Topology::from_sysfs(&fs.root);
        assert_eq!(t.cpus(), &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(t.warnings().is_empty(), "{:?}", t.warnings());
        let l1: Vec<_> = t.caches().iter().filter(|c| c.level == 1).collect();
        assert_eq!(l1.len(), 4, "instruction caches must be skipped");
        assert_eq!(t.caches().iter().filter(|c| c.level == 2).count(), 4);
        assert_eq!(t.caches().iter().filter(|c| c.level == 3).count(), 2);
        assert_eq!(t.cache_of(5, 2).unwrap().cpus, vec![4, 5]);
        assert_eq!(t.cache_of(5, 3).unwrap().cpus, vec![4, 5, 6, 7]);
        assert_eq!(t.cache_of(5, 3).unwrap().size_bytes, 32 << 20);
        assert_eq!(t.cache_of(5, 2).unwrap().lines(), 16384);
        assert_eq!(t.numa_nodes().len(), 2);
        assert_eq!(t.numa_node_of(6).unwrap().id, 1);
        assert_eq!(
            t.steal_order(5, &[0, 1, 2, 3, 4, 5, 6, 7]),
            vec![vec![4], vec![6, 7], vec![0, 1, 2, 3]]
        );
        // Restricted to `among`; empty tiers dropped.
        assert_eq!(t.steal_order(5, &[5, 1, 0]), vec![vec![0, 1]]);
        assert_eq!(t.steal_order(5, &[5]), Vec::<Vec<usize>>::new());
        // Rotation inside a tier starts after the thief.
        assert_eq!(
            t.steal_order(2, &[0, 1, 2, 3, 4, 5, 6, 7])[2],
            vec![4, 5, 6, 7]
        );
        assert_eq!(t.steal_order(6, &[0, 1, 2, 3, 4, 5, 6, 7])[1], vec![4, 5]);
        let shown = t.to_string();
        assert!(shown.contains("8 CPUs (0-7), 2 NUMA nodes"), "{shown}");
        assert!(shown.contains("L3: 2 x 32 MiB"), "{shown}");
    }

    #[test]
    fn numa_node_without_l3_sharing_is_middle_tier() {
        // L3 per pair, nodes of 4: the node is the middle tier.
        let fs = FakeSysfs::machine(8, 2, 4);
        let t = Topology::from_sysfs(&fs.root);
        assert_eq!(
            t.steal_order(0, &[0, 1, 2, 3, 4, 5, 6, 7]),
            vec![vec![1], vec![2, 3], vec![4, 5, 6, 7]]
        );
    }

    #[test]
    fn offline_cpus_are_left_out() {
        let fs = FakeSysfs::machine(4, 4, 4);
        fs.write("devices/system/cpu/online", "0-1,3\n");
        let t = Topology::from_sysfs(&fs.root);
        assert_eq!(t.cpus(), &[0, 1, 3]);
        assert_eq!(t.cache_of(3, 3).unwrap().cpus, vec![0, 1, 3]);
        assert_eq!(t.cache_of(3, 2).unwrap().cpus, vec![3]);
        assert_eq!(t.numa_nodes()[0].cpus, vec![0, 1, 3]);
        assert!(t.warnings().is_empty(), "{:?}", t.warnings());
    }

    #[test]
    fn missing_shared_cpu_list_falls_back_to_map_then_drops_level() {
        let fs = FakeSysfs::machine(2, 2, 2);
        let l3 = |cpu: usize| {
            fs.root
                .join(format!("devices/system/cpu/cpu{cpu}/cache/index3"))
        };
        std::fs::remove_file(l3(0).join("shared_cpu_list")).unwrap();
        std::fs::write(l3(0).join("shared_cpu_map"), "00000003\n").unwrap();
        let t = Topology::from_sysfs(&fs.root);
        assert_eq!(t.cache_of(0, 3).unwrap().cpus, vec![0, 1]);
        assert!(t.warnings().is_empty(), "{:?}", t.warnings());

        std::fs::remove_file(l3(0).join("shared_cpu_map")).unwrap();
        let t = Topology::from_sysfs(&fs.root);
        assert!(t.cache_of(0, 3).is_none());
        assert!(t.cache_of(0, 2).is_some(), "other levels stay");
        assert!(
            t.warnings().iter().any(|w| w.contains("L3 dropped")),
            "{:?}",
            t.warnings()
        );
    }

    #[test]
    fn inconsistent_sharing_drops_the_level() {
        let fs = FakeSysfs::machine(4, 4, 4);
        // CPU 1 claims to share L3 with 0 only, the others with all four.
        fs.write(
            "devices/system/cpu/cpu1/cache/index3/shared_cpu_list",
            "0-1\n",
        );
        let t = Topology::from_sysfs(&fs.root);
        assert!(t.cache_of(0, 3).is_none());
        assert!(t.warnings().iter().any(|w| w.contains("L3 dropped")));
        // A list that does not contain the CPU itself.
        let fs = FakeSysfs::machine(4, 4, 4);
        fs.write(
            "devices/system/cpu/cpu2/cache/index2/shared_cpu_list",
            "0\n",
        );
        let t = Topology::from_sysfs(&fs.root);
        assert!(t.cache_of(2, 2).is_none());
        assert!(t.warnings().iter().any(|w| w.contains("L2 dropped")));
        // Garbage in a list.
        let fs = FakeSysfs::machine(2, 2, 2);
        fs.write(
            "devices/system/cpu/cpu0/cache/index2/shared_cpu_list",
            "zz\n",
        );
        let t = Topology::from_sysfs(&fs.root);
        assert!(t.cache_of(0, 2).is_none());
        assert!(t.cache_of(0, 3).is_some());
    }

    #[test]
    fn odd_cache_entries_are_skipped_with_warnings() {
        let fs = FakeSysfs::machine(2, 2, 2);
        fs.write("devices/system/cpu/cpu0/cache/index0/type", "Weird\n");
        fs.write("devices/system/cpu/cpu1/cache/index2/size", "lots\n");
        std::fs::remove_file(
            fs.root
                .join("devices/system/cpu/cpu0/cache/index3/coherency_line_size"),
        )
        .unwrap();
        let t = Topology::from_sysfs(&fs.root);
        assert!(t.cache_of(0, 1).is_none(), "L1 incomplete: dropped");
        assert!(t.cache_of(1, 2).is_none(), "L2 size unreadable: dropped");
        assert_eq!(t.cache_of(1, 3).unwrap().line_size, 64);
        let w = t.warnings().join("\n");
        assert!(w.contains("unknown cache type"), "{w}");
        assert!(w.contains("L2 dropped"), "{w}");
        assert!(w.contains("assumed 64 bytes"), "{w}");
    }

    #[test]
    fn container_without_cache_or_node_info_is_flat() {
        let fs = FakeSysfs::new();
        fs.write("devices/system/cpu/online", "0-3\n");
        let t = Topology::from_sysfs(&fs.root);
        assert_eq!(t.cpus(), &[0, 1, 2, 3]);
        assert!(t.caches().is_empty());
        assert_eq!(t.numa_nodes().len(), 1);
        assert_eq!(t.numa_nodes()[0].cpus, vec![0, 1, 2, 3]);
        assert_eq!(t.warnings().len(), 2, "{:?}", t.warnings());
        assert_eq!(t.steal_order(1, &[0, 1, 2, 3]), vec![vec![2, 3, 0]]);
        assert!(t.to_string().contains("caches: unknown"));
    }

    #[test]
    fn missing_online_file_uses_cpu_directories() {
        let fs = FakeSysfs::machine(4, 4, 4);
        std::fs::remove_file(fs.root.join("devices/system/cpu/online")).unwrap();
        fs.write("devices/system/cpu/cpu2/online", "0\n");
        let t = Topology::from_sysfs(&fs.root);
        assert_eq!(t.cpus(), &[0, 1, 3]);
        assert!(t.warnings().iter().any(|w| w.contains("cpuN directories")));
    }

    #[test]
    fn empty_root_is_flat_over_allowed_cpus() {
        let fs = FakeSysfs::new();
        let t = Topology::from_sysfs(&fs.root);
        assert!(!t.cpus().is_empty());
        assert!(t.caches().is_empty());
        assert_eq!(t.numa_nodes().len(), 1);
        assert!(t.warnings().iter().any(|w| w.contains("flat topology")));
        let t = Topology::from_sysfs("/nonexistent/footprint/sysfs");
        assert!(!t.cpus().is_empty());
    }

    #[test]
    fn bad_numa_info_degrades_to_one_node() {
        let fs = FakeSysfs::machine(4, 4, 2);
        fs.write("devices/system/node/node1/cpulist", "1-3\n");
        let t = Topology::from_sysfs(&fs.root);
        assert_eq!(t.numa_nodes().len(), 1);
        assert!(t.warnings().iter().any(|w| w.contains("two NUMA nodes")));

        let fs = FakeSysfs::machine(4, 4, 2);
        fs.write("devices/system/node/node1/cpulist", "2\n");
        let t = Topology::from_sysfs(&fs.root);
        assert_eq!(t.numa_nodes().len(), 1);
        assert!(t.warnings().iter().any(|w| w.contains("in no NUMA node")));

        // A memory-only node is fine and left out.
        let fs = FakeSysfs::machine(4, 4, 4);
        fs.write("devices/system/node/node1/cpulist", "\n");
        let t = Topology::from_sysfs(&fs.root);
        assert_eq!(t.numa_nodes().len(), 1);
        assert!(t.warnings().is_empty(), "{:?}", t.warnings());
    }

    #[test]
    fn steal_order_lists_every_other_cpu_once() {
        let fs = FakeSysfs::machine(8, 4, 8);
        let t = Topology::from_sysfs(&fs.root);
        let among: Vec<usize> = (0..8).collect();
        for cpu in 0..8 {
            let mut all: Vec<usize> = t.steal_order(cpu, &among).concat();
            all.sort_unstable();
            let expected: Vec<usize> = among.iter().copied().filter(|&c| c != cpu).collect();
            assert_eq!(all, expected);
        }
        // A thief outside the topology gets one tier.
        assert_eq!(t.steal_order(99, &[0, 1]), vec![vec![0, 1]]);
    }

    #[test]
    fn this_machine_reads_without_panicking() {
        let t = Topology::detect();
        println!("{t}");
        assert!(!t.cpus().is_empty());
        for c in t.caches() {
            assert!(!c.cpus.is_empty());
            assert!(c.size_bytes > 0 && c.line_size > 0);
        }
        let among = t.cpus().to_vec();
        for &cpu in t.cpus() {
            assert_eq!(t.steal_order(cpu, &among).concat().len(), among.len() - 1);
        }
    }
}
