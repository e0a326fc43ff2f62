//! The default backend: the topology read from a Linux sysfs tree (`/sys`, or a fake one in
//! tests). Every missing or inconsistent entry is dropped with a warning (see the module docs of
//! [`crate::topology`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::cpu_list::{format_cpu_list, parse_cpu_list, parse_cpu_mask, parse_size};
use super::{allowed_cpus, CacheDomain, NumaNode, Topology};

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
