//! Typed errors: every failure says what happened and what to do about it.

use std::fmt;
use std::io;

use crate::event::Event;

/// Path of the kernel knob that decides who may count what.
pub const PARANOID_PATH: &str = "/proc/sys/kernel/perf_event_paranoid";

/// Path whose absence means the kernel exposes no CPU performance-monitoring unit.
pub const CPU_PMU_PATH: &str = "/sys/bus/event_source/devices/cpu";

/// Everything that can go wrong in this crate.
#[derive(Debug)]
#[non_exhaustive]
pub enum PmuError {
    /// The kernel or the CPU cannot count this event here
    /// (`ENOENT`, `ENODEV`, `ENXIO`, `EOPNOTSUPP`, `EINVAL` from `perf_event_open`).
    NotSupported {
        /// The event that could not be opened.
        event: Event,
        /// Why, in words (for example "no hardware PMU: virtual machine?").
        reason: String,
    },
    /// The kernel refuses to let this process count the event (`EACCES`, `EPERM`).
    PermissionDenied {
        /// The event that could not be opened.
        event: Event,
        /// Value of `/proc/sys/kernel/perf_event_paranoid`, if readable.
        paranoid: Option<i32>,
        /// Why, in words, and what to change.
        reason: String,
    },
    /// The thread does not exist (any more) in this process (`ESRCH`, or its `/proc` entry is gone).
    NoSuchThread {
        /// The kernel thread id that was asked for.
        tid: i32,
    },
    /// A source that must be read on the thread it observes was read from another thread.
    WrongThread {
        /// The thread the source observes.
        owner: i32,
        /// The thread that tried to read it.
        caller: i32,
    },
    /// More events were requested than a [`Reading`](crate::Reading) can hold.
    TooManyEvents {
        /// How many were asked for.
        requested: usize,
        /// The limit, [`MAX_EVENTS`](crate::MAX_EVENTS).
        max: usize,
    },
    /// A configuration value makes no sense (zero interval, empty event list, ...).
    InvalidConfig(String),
    /// A scripted source has replayed all its readings.
    ScriptExhausted {
        /// How many readings it served.
        served: usize,
    },
    /// Any other operating-system error, with what was being done.
    Io {
        /// What was being done, e.g. "reading /proc/self/task/42/schedstat".
        context: String,
        /// The underlying error.
        source: io::Error,
    },
}

impl fmt::Display for PmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PmuError::NotSupported { event, reason } => {
                write!(f, "{event} is not supported here: {reason}")
            }
            PmuError::PermissionDenied { event, reason, .. } => {
                write!(f, "{event}: permission denied: {reason}")
            }
            PmuError::NoSuchThread { tid } => write!(
                f,
                "thread {tid} does not exist in this process (it may have exited); \
                 pass a tid from gettid() of a live thread of this process"
            ),
            PmuError::WrongThread { owner, caller } => write!(
                f,
                "this source observes thread {owner} and can only be read on it, but thread \
                 {caller} read it; open a source per thread, or use a by-tid source \
                 (ProcTaskSource, PerfGroup::open with Target::Thread) to read from elsewhere"
            ),
            PmuError::TooManyEvents { requested, max } => write!(
                f,
                "{requested} events requested but a reading holds at most {max}; split them \
                 into several sources"
            ),
            PmuError::InvalidConfig(msg) => write!(f, "invalid configuration: {msg}"),
            PmuError::ScriptExhausted { served } => write!(
                f,
                "scripted source has no more readings after serving {served}; give it more \
                 readings, push them through its ScriptFeeder, or use ScriptEnd::RepeatLast"
            ),
            PmuError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for PmuError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PmuError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl PmuError {
    /// `true` for [`PmuError::NotSupported`].
    pub fn is_not_supported(&self) -> bool {
        matches!(self, PmuError::NotSupported { .. })
    }

    /// `true` for [`PmuError::PermissionDenied`].
    pub fn is_permission_denied(&self) -> bool {
        matches!(self, PmuError::PermissionDenied { .. })
    }

    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        PmuError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Reads `/proc/sys/kernel/perf_event_paranoid`; `None` if it is missing or unreadable.
pub fn perf_event_paranoid() -> Option<i32> {
    std::fs::read_to_string(PARANOID_PATH)
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Names of the CPU PMUs the kernel exposes under `/sys/bus/event_source/devices`
/// (`cpu` on x86, `cpu_core`/`cpu_atom` on hybrid Intel, `armv8_*` on Arm). Empty on a machine
/// without a usable hardware PMU, which is what most virtual machines look like.
pub fn hardware_pmu_devices() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/sys/bus/event_source/devices") else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_cpu_pmu_name(n))
        .collect();
    names.sort();
    names
}

pub(crate) fn is_cpu_pmu_name(name: &str) -> bool {
    matches!(name, "cpu" | "cpu_core" | "cpu_atom")
        || name.starts_with("armv8")
        || name.starts_with("armv7")
        || name.starts_with("arm_")
}

/// Turns a failed `perf_event_open` into a typed error that names the cause and the remedy.
pub(crate) fn classify_open_error(event: Event, err: io::Error, tid: Option<i32>) -> PmuError {
    if err.raw_os_error() == Some(libc::ESRCH) {
        return PmuError::NoSuchThread {
            tid: tid.unwrap_or(0),
        };
    }
    classify_open_error_with(event, err, perf_event_paranoid(), &hardware_pmu_devices())
}

/// Pure part of [`classify_open_error`], testable with any paranoid value and PMU list.
pub(crate) fn classify_open_error_with(
    event: Event,
    err: io::Error,
    paranoid: Option<i32>,
    pmu_devices: &[String],
) -> PmuError {
    let errno = err.raw_os_error();
    match errno {
        Some(libc::ENOENT | libc::ENODEV | libc::ENXIO | libc::EOPNOTSUPP | libc::EINVAL) => {
            let name = errno_name(errno.unwrap_or(0));
            let reason = if event.is_hardware() && pmu_devices.is_empty() {
                format!(
                    "no hardware PMU: virtual machine? ({CPU_PMU_PATH} is missing; \
                     perf_event_open said {name}); use the software sources instead"
                )
            } else if event.is_hardware() {
                format!(
                    "the CPU's PMU ({}) has no counter for it (perf_event_open said {name})",
                    pmu_devices.join(", ")
                )
            } else {
                format!("the kernel does not provide it (perf_event_open said {name})")
            };
            PmuError::NotSupported { event, reason }
        }
        Some(libc::EACCES | libc::EPERM) => {
            let name = errno_name(errno.unwrap_or(0));
            PmuError::PermissionDenied {
                event,
                paranoid,
                reason: permission_reason(name, paranoid),
            }
        }
        Some(libc::EMFILE | libc::ENFILE) => PmuError::io(
            format!(
                "opening a perf counter for {event}: out of file descriptors (each counter \
                 uses one); raise `ulimit -n` or open fewer per-thread groups"
            ),
            err,
        ),
        _ => PmuError::io(format!("opening a perf counter for {event}"), err),
    }
}

pub(crate) fn permission_reason(what: &str, paranoid: Option<i32>) -> String {
    match paranoid {
        Some(p) => format!(
            "perf_event_open said {what}; {PARANOID_PATH} is {p} (2 allows user-space counting \
             of your own threads, 1 adds kernel mode, 0 and -1 more); lower it with `sudo \
             sysctl kernel.perf_event_paranoid=1`, or give the program CAP_PERFMON"
        ),
        None => format!(
            "perf_event_open said {what}; {PARANOID_PATH} could not be read (a container or \
             seccomp filter may block perf_event_open entirely)"
        ),
    }
}

/// Symbolic name of an errno value, for messages.
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::ENOENT => "ENOENT",
        libc::ENODEV => "ENODEV",
        libc::ENXIO => "ENXIO",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EINVAL => "EINVAL",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ESRCH => "ESRCH",
        libc::EBUSY => "EBUSY",
        libc::EMFILE => "EMFILE",
        _ => "an error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(errno: i32) -> io::Error {
        io::Error::from_raw_os_error(errno)
    }

    #[test]
    fn not_supported_errnos_name_the_missing_pmu() {
        for errno in [libc::ENOENT, libc::ENODEV, libc::ENXIO, libc::EOPNOTSUPP] {
            let e = classify_open_error_with(Event::Cycles, err(errno), Some(2), &[]);
            match &e {
                PmuError::NotSupported { event, reason } => {
                    assert_eq!(*event, Event::Cycles);
                    assert!(
                        reason.contains("no hardware PMU: virtual machine?"),
                        "{reason}"
                    );
                    assert!(reason.contains(CPU_PMU_PATH), "{reason}");
                }
                other => panic!("errno {errno} gave {other:?}"),
            }
            assert!(e.is_not_supported());
        }
    }

    #[test]
    fn not_supported_with_a_pmu_names_the_pmu_instead() {
        let e = classify_open_error_with(
            Event::L1dReadMisses,
            err(libc::ENOENT),
            Some(2),
            &["cpu".to_string()],
        );
        let msg = e.to_string();
        assert!(!msg.contains("virtual machine"), "{msg}");
        assert!(msg.contains("(cpu)"), "{msg}");
        assert!(msg.contains("ENOENT"), "{msg}");
    }

    #[test]
    fn software_events_never_blame_a_missing_pmu() {
        let e = classify_open_error_with(Event::TaskClock, err(libc::ENODEV), Some(2), &[]);
        assert!(e.is_not_supported());
        assert!(!e.to_string().contains("virtual machine"));
    }

    #[test]
    fn permission_errnos_name_the_paranoid_knob_and_its_value() {
        for errno in [libc::EACCES, libc::EPERM] {
            let e = classify_open_error_with(Event::ContextSwitches, err(errno), Some(3), &[]);
            match &e {
                PmuError::PermissionDenied {
                    event,
                    paranoid,
                    reason,
                } => {
                    assert_eq!(*event, Event::ContextSwitches);
                    assert_eq!(*paranoid, Some(3));
                    assert!(reason.contains(PARANOID_PATH), "{reason}");
                    assert!(reason.contains("is 3"), "{reason}");
                    assert!(reason.contains("CAP_PERFMON"), "{reason}");
                }
                other => panic!("errno {errno} gave {other:?}"),
            }
        }
    }

    #[test]
    fn other_errnos_stay_io_errors_with_context() {
        let e = classify_open_error_with(Event::Cycles, err(libc::EBUSY), Some(2), &[]);
        match e {
            PmuError::Io { context, source } => {
                assert!(context.contains("cycles"), "{context}");
                assert_eq!(source.raw_os_error(), Some(libc::EBUSY));
            }
            other => panic!("{other:?}"),
        }
        let e = classify_open_error_with(Event::Cycles, err(libc::EMFILE), Some(2), &[]);
        assert!(e.to_string().contains("ulimit -n"), "{e}");
    }

    #[test]
    fn cpu_pmu_names() {
        for n in [
            "cpu",
            "cpu_core",
            "cpu_atom",
            "armv8_pmuv3_0",
            "armv8_cortex_a72",
        ] {
            assert!(is_cpu_pmu_name(n), "{n}");
        }
        for n in [
            "software",
            "tracepoint",
            "msr",
            "uprobe",
            "breakpoint",
            "kprobe",
        ] {
            assert!(!is_cpu_pmu_name(n), "{n}");
        }
    }
}
