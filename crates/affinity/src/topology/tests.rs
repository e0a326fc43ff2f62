//! Topology tests on fake sysfs trees.

use super::cpu_list::{parse_cpu_mask, parse_size};
use super::*;
use std::path::PathBuf;
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
