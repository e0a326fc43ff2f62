//! One call that says what this machine can count, and why not where it cannot.

use std::fmt;
use std::sync::OnceLock;

use crate::error::{hardware_pmu_devices, perf_event_paranoid, PmuError, CPU_PMU_PATH};
use crate::event::Event;
use crate::perf::{kernel_counting_allowed, PerfGroup, PerfOptions, RdpmcMode};
use crate::source::Target;
use crate::sys;

/// Whether something can be used here, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// It works.
    Available,
    /// This kernel or CPU does not have it.
    NotSupported {
        /// Why, in words.
        reason: String,
    },
    /// It exists but this process may not use it.
    PermissionDenied {
        /// Why, naming the knob to change and its value.
        reason: String,
    },
    /// Trying it failed for another reason.
    Failed {
        /// The error.
        reason: String,
    },
}

impl Availability {
    /// `true` for [`Availability::Available`].
    pub fn is_available(&self) -> bool {
        matches!(self, Availability::Available)
    }

    /// The reason it is not available (`None` if it is).
    pub fn reason(&self) -> Option<&str> {
        match self {
            Availability::Available => None,
            Availability::NotSupported { reason }
            | Availability::PermissionDenied { reason }
            | Availability::Failed { reason } => Some(reason),
        }
    }

    fn label(&self) -> &'static str {
        match self {
            Availability::Available => "available",
            Availability::NotSupported { .. } => "not supported",
            Availability::PermissionDenied { .. } => "permission denied",
            Availability::Failed { .. } => "failed",
        }
    }

    fn from_result<T>(r: Result<T, PmuError>) -> Availability {
        match r {
            Ok(_) => Availability::Available,
            Err(PmuError::NotSupported { reason, .. }) => Availability::NotSupported { reason },
            Err(PmuError::PermissionDenied { reason, .. }) => {
                Availability::PermissionDenied { reason }
            }
            Err(e) => Availability::Failed {
                reason: e.to_string(),
            },
        }
    }
}

impl fmt::Display for Availability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason() {
            None => f.write_str(self.label()),
            Some(r) => write!(f, "{}: {r}", self.label()),
        }
    }
}

/// One row of the capability table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventCapability {
    /// The event.
    pub event: Event,
    /// Through `perf_event_open` on the calling thread, opened the way [`PerfGroup`] opens it;
    /// `None` where perf has no such event.
    pub perf: Option<Availability>,
    /// A source that needs no permission and gives the same count, where one exists and works
    /// here (for example `getrusage(RUSAGE_THREAD)` for context switches).
    pub fallback: Option<&'static str>,
}

impl EventCapability {
    /// `true` if some source can count this event here.
    pub fn countable(&self) -> bool {
        self.fallback.is_some() || self.perf.as_ref().is_some_and(Availability::is_available)
    }
}

/// What this machine can count. [`Capabilities::probe`] tries every event once; print it
/// (`Display`) for a table.
///
/// ```
/// let caps = footprint_pmu::Capabilities::probe();
/// // Software counts never need permission.
/// assert!(caps.event(footprint_pmu::Event::TaskClock).unwrap().countable());
/// println!("{caps}");
/// ```
#[derive(Clone, Debug)]
pub struct Capabilities {
    /// One row per event of [`Event::ALL`].
    pub events: Vec<EventCapability>,
    /// The whole [`Event::HARDWARE_GROUP`] opened as one group on the calling thread.
    pub hardware_group: Availability,
    /// User-space `rdpmc` reads of that group.
    pub rdpmc: Availability,
    /// CPU PMUs under `/sys/bus/event_source/devices` (empty: no hardware PMU).
    pub pmu_devices: Vec<String>,
    /// `/proc/sys/kernel/perf_event_paranoid`.
    pub paranoid: Option<i32>,
    /// Kernel-mode counting allowed (paranoid ≤ 1 or root).
    pub kernel_counting: bool,
    /// The CPU says it runs under a hypervisor (`hypervisor` flag in `/proc/cpuinfo`).
    pub hypervisor: bool,
    /// `/proc/self/task/<tid>/sched` exists (migration counts without perf).
    pub sched_debug: bool,
    /// `/proc/self/task/<tid>/schedstat` exists (run-queue delay).
    pub schedstat: bool,
}

impl Capabilities {
    /// Probes every event on the calling thread (opens and closes one counter per event; a
    /// millisecond or so). Use [`Capabilities::get`] for a cached copy.
    pub fn probe() -> Capabilities {
        let tid = sys::current_tid();
        let sched_debug = std::path::Path::new(&format!("/proc/self/task/{tid}/sched")).exists();
        let schedstat = std::path::Path::new(&format!("/proc/self/task/{tid}/schedstat")).exists();
        let events = Event::ALL
            .iter()
            .map(|&event| {
                let perf = event.has_perf_event().then(|| {
                    Availability::from_result(PerfGroup::open(
                        &[event],
                        Target::CallingThread,
                        PerfOptions {
                            rdpmc: RdpmcMode::Off,
                        },
                    ))
                });
                EventCapability {
                    event,
                    perf,
                    fallback: fallback_for(event, sched_debug, schedstat),
                }
            })
            .collect();
        let (hardware_group, rdpmc) = probe_group();
        Capabilities {
            events,
            hardware_group,
            rdpmc,
            pmu_devices: hardware_pmu_devices(),
            paranoid: perf_event_paranoid(),
            kernel_counting: kernel_counting_allowed(),
            hypervisor: cpu_has_hypervisor_flag(),
            sched_debug,
            schedstat,
        }
    }

    /// The capabilities of this machine, probed once per process.
    pub fn get() -> &'static Capabilities {
        static CAPS: OnceLock<Capabilities> = OnceLock::new();
        CAPS.get_or_init(Capabilities::probe)
    }

    /// The row of `event`.
    pub fn event(&self, event: Event) -> Option<&EventCapability> {
        self.events.iter().find(|c| c.event == event)
    }

    /// `true` if perf can count `event` here.
    pub fn perf_available(&self, event: Event) -> bool {
        self.event(event)
            .and_then(|c| c.perf.as_ref())
            .is_some_and(Availability::is_available)
    }

    /// `true` if LLC misses and references can be counted: what the miss-driven affinity
    /// policies need (`Auto` picks them only then).
    pub fn cache_misses_available(&self) -> bool {
        self.perf_available(Event::LlcMisses) && self.perf_available(Event::LlcReferences)
    }

    /// One line: the hardware verdict and its reason.
    pub fn summary(&self) -> String {
        match &self.hardware_group {
            Availability::Available => format!(
                "hardware counters available ({}), rdpmc {}",
                self.pmu_devices.join(", "),
                self.rdpmc.label()
            ),
            other => format!(
                "hardware counters {}: {}; software sources available",
                other.label(),
                other.reason().unwrap_or("")
            ),
        }
    }
}

fn fallback_for(event: Event, sched_debug: bool, schedstat: bool) -> Option<&'static str> {
    match event {
        Event::TaskClock => Some("CLOCK_THREAD_CPUTIME_ID; /proc/self/task/<tid>/schedstat"),
        Event::PageFaults => Some("getrusage(RUSAGE_THREAD); /proc/self/task/<tid>/stat"),
        Event::ContextSwitches
        | Event::VoluntaryContextSwitches
        | Event::InvoluntaryContextSwitches => Some(if sched_debug {
            "getrusage(RUSAGE_THREAD); /proc/self/task/<tid>/sched"
        } else {
            "getrusage(RUSAGE_THREAD); /proc/self/task/<tid>/status"
        }),
        Event::CpuMigrations if sched_debug => Some("/proc/self/task/<tid>/sched se.nr_migrations"),
        Event::RunDelay if schedstat => Some("/proc/self/task/<tid>/schedstat"),
        _ => None,
    }
}

fn probe_group() -> (Availability, Availability) {
    match PerfGroup::open(
        &Event::HARDWARE_GROUP,
        Target::CallingThread,
        PerfOptions::default(),
    ) {
        Ok(group) => {
            let rdpmc = if !cfg!(target_arch = "x86_64") {
                Availability::NotSupported {
                    reason: "user-space rdpmc reads are implemented for x86_64 only".into(),
                }
            } else if group.rdpmc_usable() {
                Availability::Available
            } else {
                let sysfs = std::fs::read_to_string(format!("{CPU_PMU_PATH}/rdpmc"))
                    .ok()
                    .map(|s| s.trim().to_string());
                match sysfs.as_deref() {
                    Some("0") => Availability::PermissionDenied {
                        reason: format!(
                            "{CPU_PMU_PATH}/rdpmc is 0 (user-space rdpmc disabled); write 1 \
                             to it as root to allow it; read() is used instead"
                        ),
                    },
                    _ => Availability::NotSupported {
                        reason: "the kernel cleared cap_user_rdpmc on the counter page; \
                                 read() is used instead"
                            .into(),
                    },
                }
            };
            (Availability::Available, rdpmc)
        }
        Err(e) => {
            let group = Availability::from_result::<()>(Err(e));
            let rdpmc = Availability::NotSupported {
                reason: format!("needs the hardware group, which is {}", group.label()),
            };
            (group, rdpmc)
        }
    }
}

fn cpu_has_hypervisor_flag() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|l| l.split_ascii_whitespace().any(|f| f == "hypervisor"))
    })
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "footprint-pmu capabilities")?;
        if self.pmu_devices.is_empty() {
            writeln!(
                f,
                "  hardware PMU        : none ({CPU_PMU_PATH} is missing){}",
                if self.hypervisor {
                    "; the CPU reports a hypervisor: virtual machine"
                } else {
                    ""
                }
            )?;
        } else {
            writeln!(
                f,
                "  hardware PMU        : {}{}",
                self.pmu_devices.join(", "),
                if self.hypervisor {
                    " (under a hypervisor)"
                } else {
                    ""
                }
            )?;
        }
        match self.paranoid {
            Some(p) => writeln!(f, "  perf_event_paranoid : {p}")?,
            None => writeln!(f, "  perf_event_paranoid : unreadable")?,
        }
        writeln!(
            f,
            "  kernel-mode counting: {}",
            if self.kernel_counting && self.paranoid.is_some_and(|p| p <= 1) {
                "allowed (perf_event_paranoid <= 1)"
            } else if self.kernel_counting {
                "allowed (running as root; an unprivileged user would be refused)"
            } else {
                "refused (perf context-switch and migration counters would read 0)"
            }
        )?;
        writeln!(f, "  hardware group      : {}", self.hardware_group)?;
        writeln!(f, "  rdpmc               : {}", self.rdpmc)?;
        writeln!(
            f,
            "  /proc sched, schedstat: {}, {}",
            if self.sched_debug { "yes" } else { "no" },
            if self.schedstat { "yes" } else { "no" }
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "  {:<22} {:<18} {:<10} detail",
            "event", "perf", "countable"
        )?;
        for row in &self.events {
            let (perf, detail) = match &row.perf {
                None => ("no perf event", None),
                Some(a) => (a.label(), a.reason()),
            };
            writeln!(
                f,
                "  {:<22} {:<18} {:<10} {}",
                row.event.name(),
                perf,
                if row.countable() { "yes" } else { "no" },
                row.fallback
                    .map(|fb| format!("via {fb}"))
                    .unwrap_or_default()
            )?;
            if let Some(d) = detail {
                if row.event.is_hardware() && Some(d) == self.hardware_group.reason() {
                    writeln!(f, "  {:<22} └ as the hardware group above", "")?;
                } else {
                    writeln!(f, "  {:<22} └ {d}", "")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synthetic(hw: Availability, cs: Availability) -> Capabilities {
        let events = Event::ALL
            .iter()
            .map(|&event| EventCapability {
                event,
                perf: event.has_perf_event().then(|| {
                    if event.is_hardware() {
                        hw.clone()
                    } else if event.perf_counts_in_kernel_only() {
                        cs.clone()
                    } else {
                        Availability::Available
                    }
                }),
                fallback: fallback_for(event, true, true),
            })
            .collect();
        Capabilities {
            events,
            hardware_group: hw,
            rdpmc: Availability::NotSupported {
                reason: "needs the hardware group".into(),
            },
            pmu_devices: vec![],
            paranoid: Some(2),
            kernel_counting: false,
            hypervisor: true,
            sched_debug: true,
            schedstat: true,
        }
    }

    #[test]
    fn table_names_every_refusal_once_and_every_fallback() {
        let hw = Availability::NotSupported {
            reason: "no hardware PMU: virtual machine? (test)".into(),
        };
        let cs = Availability::PermissionDenied {
            reason: "perf_event_paranoid is 2 (test)".into(),
        };
        let caps = synthetic(hw, cs);
        let table = caps.to_string();
        assert_eq!(
            table
                .matches("no hardware PMU: virtual machine? (test)")
                .count(),
            1,
            "the hardware reason is printed once, rows refer to it:\n{table}"
        );
        assert_eq!(
            table.matches("as the hardware group above").count(),
            5,
            "{table}"
        );
        assert_eq!(
            table.matches("perf_event_paranoid is 2 (test)").count(),
            2,
            "{table}"
        );
        assert!(table.contains("refused (perf context-switch and migration counters would read 0)"));
        assert!(table.contains("virtual machine"));
        assert!(table.contains("se.nr_migrations"));
        assert!(!caps.cache_misses_available());
        assert!(!caps.perf_available(Event::ContextSwitches));
        assert!(caps.perf_available(Event::TaskClock));
        // Refused in perf, still countable through the fallback.
        assert!(caps.event(Event::ContextSwitches).unwrap().countable());
        assert!(caps.event(Event::CpuMigrations).unwrap().countable());
        assert!(!caps.event(Event::Cycles).unwrap().countable());
        assert!(caps
            .summary()
            .starts_with("hardware counters not supported"));
    }

    #[test]
    fn without_sched_debug_migrations_have_no_fallback() {
        assert_eq!(fallback_for(Event::CpuMigrations, false, true), None);
        assert_eq!(fallback_for(Event::RunDelay, true, false), None);
        assert!(fallback_for(Event::ContextSwitches, false, true)
            .unwrap()
            .contains("status"));
        assert_eq!(fallback_for(Event::LlcMisses, true, true), None);
    }

    #[test]
    fn availability_labels_and_reasons() {
        assert!(Availability::Available.is_available());
        assert_eq!(Availability::Available.reason(), None);
        assert_eq!(Availability::Available.to_string(), "available");
        let a = Availability::from_result::<()>(Err(PmuError::NoSuchThread { tid: 3 }));
        assert!(matches!(a, Availability::Failed { .. }));
        assert!(a.to_string().starts_with("failed: thread 3"));
    }
}
