//! The hwloc backend (feature `hwloc`): the same facts as the sysfs reader, through the system
//! libhwloc via `hwlocality`.

use crate::topology::{CacheDomain, NumaNode, Topology, TopologyError};
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{CacheType, ObjectType};
use hwlocality::topology::builder::BuildFlags;

const DATA_CACHE_TYPES: [ObjectType; 5] = [
    ObjectType::L1Cache,
    ObjectType::L2Cache,
    ObjectType::L3Cache,
    ObjectType::L4Cache,
    ObjectType::L5Cache,
];

impl Topology {
    /// Reads the topology through the system libhwloc (feature `hwloc`). Data and unified
    /// caches become [`CacheDomain`]s, NUMA nodes with CPUs become [`NumaNode`]s; CPU ids are
    /// the OS indices that sysfs uses too, and CPUs outside the process's mask are included (as
    /// in sysfs's `online`), so both backends describe a machine identically.
    ///
    /// # Errors
    /// [`TopologyError::Hwloc`] when libhwloc cannot load the topology (its message names the
    /// cause); [`Topology::detect`] is the fallback that needs no library.
    pub fn detect_hwloc() -> Result<Topology, TopologyError> {
        // Include PUs outside this process's CPU mask, as sysfs's `online` list does.
        let hw = hwlocality::Topology::builder()
            .with_flags(BuildFlags::INCLUDE_DISALLOWED)
            .map_err(|e| TopologyError::Hwloc(format!("hwloc_topology_set_flags: {e}")))?
            .build()
            .map_err(|e| TopologyError::Hwloc(format!("hwloc_topology_load: {e}")))?;
        let mut cpus: Vec<usize> = hw
            .objects_with_type(ObjectType::PU)
            .filter_map(|pu| pu.os_index())
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.is_empty() {
            return Err(TopologyError::Hwloc(
                "hwloc reported no processing units".to_string(),
            ));
        }
        let in_topology = |set: Vec<usize>| -> Vec<usize> {
            set.into_iter()
                .filter(|c| cpus.binary_search(c).is_ok())
                .collect()
        };
        let mut warnings = Vec::new();
        let mut caches = Vec::new();
        for ty in DATA_CACHE_TYPES {
            for obj in hw.objects_with_type(ty) {
                let Some(ObjectAttributes::Cache(attr)) = obj.attributes() else {
                    continue;
                };
                if attr.cache_type() == CacheType::Instruction {
                    continue;
                }
                let Some(set) = obj.cpuset() else { continue };
                let members = in_topology(set.iter_set().map(usize::from).collect());
                if members.is_empty() {
                    continue;
                }
                let Some(size) = attr.size() else {
                    warnings.push(format!("hwloc: {ty} without a size, skipped"));
                    continue;
                };
                let line_size = attr.line_size().map_or_else(
                    || {
                        warnings.push(format!("hwloc: {ty} without a line size, assumed 64"));
                        64
                    },
                    |l| u32::try_from(l.get()).unwrap_or(64),
                );
                let Ok(level) = u8::try_from(attr.depth()) else {
                    continue;
                };
                caches.push(CacheDomain {
                    level,
                    size_bytes: size.get(),
                    line_size,
                    cpus: members,
                });
            }
        }
        let mut numa_nodes = Vec::new();
        for node in hw.objects_with_type(ObjectType::NUMANode) {
            let Some(set) = node.cpuset() else { continue };
            let members = in_topology(set.iter_set().map(usize::from).collect());
            if !members.is_empty() {
                numa_nodes.push(NumaNode {
                    id: node.os_index().unwrap_or(numa_nodes.len()),
                    cpus: members,
                });
            }
        }
        let mut topo = Topology::from_parts(cpus, caches, numa_nodes);
        topo.add_warnings(warnings);
        Ok(topo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hwloc_and_sysfs_agree_on_this_machine() {
        let sysfs = Topology::detect();
        let hw = Topology::detect_hwloc().expect("libhwloc loads the topology");
        assert_eq!(hw.cpus(), sysfs.cpus());
        assert_eq!(
            hw.caches(),
            sysfs.caches(),
            "\nhwloc:\n{hw}\nsysfs:\n{sysfs}"
        );
        assert_eq!(hw.numa_nodes(), sysfs.numa_nodes());
        let among = sysfs.cpus().to_vec();
        for &cpu in sysfs.cpus() {
            assert_eq!(hw.steal_order(cpu, &among), sysfs.steal_order(cpu, &among));
        }
    }
}
