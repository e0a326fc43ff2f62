//! Where a thread's memory traffic comes from ([`TrafficSource`]), and the one OS source that
//! counts it per group of threads: Linux `resctrl` memory-bandwidth monitoring ([`resctrl`]).

use std::fmt;
use std::path::PathBuf;

/// The best source of per-thread memory traffic a runtime found, in words a user can act on.
///
/// In order of preference: hardware cache-miss counters (misses × line size, per green thread
/// from the per-switch accounting), `resctrl` bandwidth monitoring (per worker), and traffic
/// the program declares (`GreenBuilder::traffic`, the bytes of `footprint::par` chunks,
/// `record_traffic`). `None` says why nothing is measured or declared.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum TrafficSource {
    /// Cache misses from hardware counters, times the line size.
    Hardware {
        /// The counted event, in words.
        event: String,
    },
    /// Linux resctrl memory-bandwidth monitoring, one monitoring group per worker.
    Resctrl {
        /// Where the resctrl file system is mounted.
        root: PathBuf,
    },
    /// Only what the program declares is counted.
    Declared {
        /// Why no source measures it.
        unmeasured: String,
    },
    /// Nothing is measured and nothing has been declared.
    None {
        /// Why no source measures traffic here.
        reason: String,
    },
}

impl TrafficSource {
    /// A short name: `hardware`, `resctrl`, `declared`, `none`.
    pub fn name(&self) -> &'static str {
        match self {
            TrafficSource::Hardware { .. } => "hardware",
            TrafficSource::Resctrl { .. } => "resctrl",
            TrafficSource::Declared { .. } => "declared",
            TrafficSource::None { .. } => "none",
        }
    }
}

impl fmt::Display for TrafficSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrafficSource::Hardware { event } => write!(f, "hardware ({event} × 64 B)"),
            TrafficSource::Resctrl { root } => {
                write!(f, "resctrl monitoring groups under {}", root.display())
            }
            TrafficSource::Declared { unmeasured } => {
                write!(f, "declared by the program ({unmeasured})")
            }
            TrafficSource::None { reason } => write!(f, "none ({reason})"),
        }
    }
}

/// Linux `resctrl` memory-bandwidth monitoring (MBM): per monitoring group, the bytes read
/// from memory by the group's threads, per L3 domain.
///
/// Every path is taken relative to a root given by the caller, so that tests run the same code
/// on a scripted directory tree.
pub mod resctrl {
    use std::fmt;
    use std::fs;
    use std::io;
    use std::path::{Path, PathBuf};

    /// Where the file system is normally mounted.
    pub const DEFAULT_ROOT: &str = "/sys/fs/resctrl";

    /// Why resctrl monitoring cannot be used.
    #[derive(Clone, Debug, PartialEq, Eq)]
    #[non_exhaustive]
    pub enum Unavailable {
        /// The kernel has no resctrl file system (not in `/proc/filesystems`).
        NotInKernel,
        /// The kernel has it, but it is not mounted at the root.
        NotMounted {
            /// Where it was looked for.
            root: PathBuf,
        },
        /// Mounted, but the CPU offers no memory-bandwidth monitoring (`mbm_total_bytes`).
        NoBandwidthMonitoring {
            /// Where it is mounted.
            root: PathBuf,
        },
        /// A monitoring group could not be made (usually: not root).
        NoPermission {
            /// The OS error, in words.
            error: String,
        },
    }

    impl fmt::Display for Unavailable {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Unavailable::NotInKernel => {
                    f.write_str("resctrl: the kernel has no resctrl file system")
                }
                Unavailable::NotMounted { root } => write!(
                    f,
                    "resctrl: not mounted at {} (mount -t resctrl resctrl {})",
                    root.display(),
                    root.display()
                ),
                Unavailable::NoBandwidthMonitoring { root } => write!(
                    f,
                    "resctrl: mounted at {} but this CPU has no memory-bandwidth monitoring",
                    root.display()
                ),
                Unavailable::NoPermission { error } => {
                    write!(f, "resctrl: cannot make a monitoring group ({error})")
                }
            }
        }
    }

    /// Checks that resctrl bandwidth monitoring is usable at `root`; `proc_filesystems` is the
    /// text of `/proc/filesystems`.
    ///
    /// ```
    /// use footprint_bandwidth::resctrl::{probe_at, Unavailable};
    /// let r = probe_at(std::path::Path::new("/nonexistent"), "nodev\tproc\n");
    /// assert_eq!(r, Err(Unavailable::NotInKernel));
    /// ```
    pub fn probe_at(root: &Path, proc_filesystems: &str) -> Result<(), Unavailable> {
        let in_kernel = proc_filesystems
            .lines()
            .any(|l| l.split_whitespace().last() == Some("resctrl"));
        if !in_kernel {
            return Err(Unavailable::NotInKernel);
        }
        if !root.join("info").is_dir() {
            return Err(Unavailable::NotMounted {
                root: root.to_path_buf(),
            });
        }
        let features =
            fs::read_to_string(root.join("info/L3_MON/mon_features")).unwrap_or_default();
        if !features.lines().any(|l| l.trim() == "mbm_total_bytes") {
            return Err(Unavailable::NoBandwidthMonitoring {
                root: root.to_path_buf(),
            });
        }
        Ok(())
    }

    /// [`probe_at`] on this machine's default mount point.
    pub fn probe() -> Result<(), Unavailable> {
        let fs = fs::read_to_string("/proc/filesystems").unwrap_or_default();
        probe_at(Path::new(DEFAULT_ROOT), &fs)
    }

    /// One monitoring group (a directory under `mon_groups`), removed when dropped.
    #[derive(Debug)]
    pub struct MonGroup {
        dir: PathBuf,
    }

    impl MonGroup {
        /// Makes group `name` under `root` (probe first).
        pub fn create(root: &Path, name: &str) -> Result<MonGroup, Unavailable> {
            let dir = root.join("mon_groups").join(name);
            match fs::create_dir(&dir) {
                Ok(()) => Ok(MonGroup { dir }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(MonGroup { dir }),
                Err(e) => Err(Unavailable::NoPermission {
                    error: format!("mkdir {}: {e}", dir.display()),
                }),
            }
        }

        /// Moves OS thread `tid` into the group.
        pub fn add_thread(&self, tid: u64) -> io::Result<()> {
            fs::write(self.dir.join("tasks"), format!("{tid}\n"))
        }

        /// Bytes the group's threads have moved so far, summed over the L3 domains (a domain
        /// that reads `Unavailable` counts as an error: the kernel lost the counter).
        pub fn total_bytes(&self) -> io::Result<u64> {
            let mut sum = 0u64;
            let mut domains = 0;
            for e in fs::read_dir(self.dir.join("mon_data"))? {
                let e = e?;
                if !e.file_name().to_string_lossy().starts_with("mon_L3_") {
                    continue;
                }
                let text = fs::read_to_string(e.path().join("mbm_total_bytes"))?;
                let v: u64 = text.trim().parse().map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}: {:?}", e.path().display(), text.trim()),
                    )
                })?;
                sum = sum.wrapping_add(v);
                domains += 1;
            }
            if domains == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{}: no mon_L3_* domain", self.dir.display()),
                ));
            }
            Ok(sum)
        }
    }

    impl Drop for MonGroup {
        fn drop(&mut self) {
            // Its threads go back to the default group with it; a failure leaves an empty group.
            let _ = fs::remove_dir(&self.dir);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// A scripted resctrl tree in a temporary directory.
        fn tree(features: &str) -> PathBuf {
            let root = std::env::temp_dir().join(format!(
                "footprint-resctrl-{}-{}",
                std::process::id(),
                features.len()
            ));
            let _ = fs::remove_dir_all(&root);
            fs::create_dir_all(root.join("info/L3_MON")).unwrap();
            fs::create_dir_all(root.join("mon_groups")).unwrap();
            fs::write(root.join("info/L3_MON/mon_features"), features).unwrap();
            root
        }

        #[test]
        fn each_missing_piece_is_named() {
            let fs_line = "nodev\tresctrl\n";
            let missing = std::env::temp_dir().join("footprint-resctrl-none");
            assert_eq!(
                probe_at(&missing, fs_line),
                Err(Unavailable::NotMounted {
                    root: missing.clone()
                })
            );
            let no_mbm = tree("llc_occupancy\n");
            assert!(matches!(
                probe_at(&no_mbm, fs_line),
                Err(Unavailable::NoBandwidthMonitoring { .. })
            ));
            let msg = probe_at(&missing, fs_line).unwrap_err().to_string();
            assert!(msg.contains("mount -t resctrl"), "{msg}");
            fs::remove_dir_all(no_mbm).unwrap();
        }

        #[test]
        fn a_group_sums_its_domains() {
            let root = tree("llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n");
            assert_eq!(probe_at(&root, "nodev\tresctrl"), Ok(()));
            let g = MonGroup::create(&root, "w0").unwrap();
            g.add_thread(42).unwrap();
            assert_eq!(
                fs::read_to_string(root.join("mon_groups/w0/tasks")).unwrap(),
                "42\n"
            );
            assert!(g.total_bytes().is_err(), "no domain yet");
            for (d, v) in [("mon_L3_00", "1000\n"), ("mon_L3_01", "234\n")] {
                let p = root.join("mon_groups/w0/mon_data").join(d);
                fs::create_dir_all(&p).unwrap();
                fs::write(p.join("mbm_total_bytes"), v).unwrap();
            }
            assert_eq!(g.total_bytes().unwrap(), 1234);
            fs::write(
                root.join("mon_groups/w0/mon_data/mon_L3_01/mbm_total_bytes"),
                "Unavailable\n",
            )
            .unwrap();
            assert_eq!(
                g.total_bytes().unwrap_err().kind(),
                io::ErrorKind::InvalidData
            );
            drop(g);
            fs::remove_dir_all(root).unwrap();
        }
    }
}
