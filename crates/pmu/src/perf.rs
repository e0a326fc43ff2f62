//! Counter groups through `perf_event_open` (crate `perf-event2`), read by `rdpmc` where the
//! kernel allows it and by `read(2)` otherwise.

use std::fmt;

use perf_event::events::Software;
use perf_event::{Builder, Counter, Group};

use crate::error::{classify_open_error, perf_event_paranoid, PmuError};
use crate::event::Event;
use crate::source::{check_event_count, CounterSource, ReadPath, Reading, Target};
use crate::sys::{self, Tid};

/// Whether a [`PerfGroup`] maps its counters' `perf_event_mmap_page`s for user-space reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RdpmcMode {
    /// Never map: every read is a `read()` system call.
    Off,
    /// Map when every event is a hardware event and the group observes the calling thread on
    /// x86_64: the only case where `rdpmc` can work (the default).
    #[default]
    HardwareOnly,
    /// Map every counter of a calling-thread group on x86_64, software events included. Their
    /// pages carry no PMU index, so reads fall back to `read()`: this exists to exercise the
    /// user-space read path and its fallback on machines without a PMU.
    Always,
}

/// How a [`PerfGroup`] is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PerfOptions {
    /// User-space reads through `rdpmc` (default [`RdpmcMode::HardwareOnly`]).
    pub rdpmc: RdpmcMode,
}

enum Member {
    Plain(Counter),
    Mapped(perf_event::Sampler),
}

impl Member {
    fn counter(&self) -> &Counter {
        match self {
            Member::Plain(c) => c,
            Member::Mapped(s) => s,
        }
    }
}

/// A group of perf counters on one thread, enabled together and read together.
///
/// Counting is user-mode only for hardware events (what `perf_event_paranoid` 2 allows).
/// [`Event::ContextSwitches`] and [`Event::CpuMigrations`] happen in kernel mode, so they are
/// opened with kernel counting, which needs `perf_event_paranoid` ≤ 1 or `CAP_PERFMON`; where
/// that is refused the open fails with [`PmuError::PermissionDenied`] instead of handing back a
/// counter that silently reads 0. Use [`RusageSource`](crate::RusageSource) or
/// [`ProcTaskSource`](crate::ProcTaskSource) for those counts without permission.
///
/// ```no_run
/// use footprint_pmu::{CounterSource, PerfGroup, Target};
/// let mut group = PerfGroup::hardware(Target::CallingThread)?;
/// let before = group.read()?;
/// // ... work ...
/// let delta = group.read()?.delta_since(&before);
/// println!("{:?} via {}", delta.values(), group.read_path());
/// # Ok::<(), footprint_pmu::PmuError>(())
/// ```
pub struct PerfGroup {
    events: Vec<Event>,
    leader: Group,
    members: Vec<Member>,
    tid: Tid,
    rdpmc_mapped: bool,
    all_hardware: bool,
}

impl fmt::Debug for PerfGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerfGroup")
            .field("events", &self.events)
            .field("tid", &self.tid)
            .field("rdpmc_mapped", &self.rdpmc_mapped)
            .finish()
    }
}

impl PerfGroup {
    /// Opens [`Event::HARDWARE_GROUP`] (cycles, instructions, L1D read misses, LLC misses,
    /// LLC references) on `target`, with `rdpmc` where possible.
    pub fn hardware(target: Target) -> Result<PerfGroup, PmuError> {
        PerfGroup::open(&Event::HARDWARE_GROUP, target, PerfOptions::default())
    }

    /// Opens `events` as one group on `target`, enabled. Errors are typed: see
    /// [`PmuError::NotSupported`], [`PmuError::PermissionDenied`], [`PmuError::NoSuchThread`].
    pub fn open(
        events: &[Event],
        target: Target,
        options: PerfOptions,
    ) -> Result<PerfGroup, PmuError> {
        check_event_count(events)?;
        if let Some(e) = events.iter().find(|e| !e.has_perf_event()) {
            return Err(PmuError::InvalidConfig(format!(
                "{e} has no perf counter; read it from RusageSource or ProcTaskSource"
            )));
        }
        let tid = target.tid();
        if let Target::Thread(t) = target {
            // perf_event_open would accept a thread of another process (permissions allowing);
            // this crate observes its own process only.
            if !std::path::Path::new(&format!("/proc/self/task/{t}")).exists() {
                return Err(PmuError::NoSuchThread { tid: t });
            }
        }
        let observe = |b: &mut Builder<'_>| match target {
            Target::CallingThread => {
                b.observe_self();
            }
            Target::Thread(t) => {
                b.observe_pid(t);
            }
        };
        let tid_for_err = Some(tid);

        let mut leader_builder = Group::builder();
        observe(&mut leader_builder);
        let mut leader = leader_builder
            .build_group()
            .map_err(|e| classify_open_error(events[0], e, tid_for_err))?;

        let all_hardware = events.iter().all(|e| e.is_hardware());
        let want_rdpmc = cfg!(target_arch = "x86_64")
            && tid == sys::current_tid()
            && match options.rdpmc {
                RdpmcMode::Off => false,
                RdpmcMode::HardwareOnly => all_hardware,
                RdpmcMode::Always => true,
            };
        let mut members = Vec::with_capacity(events.len());
        for &event in events {
            let mut b = Builder::new(Software::DUMMY);
            event.apply_to(&mut b);
            observe(&mut b);
            if event.perf_counts_in_kernel_only() {
                b.include_kernel();
            }
            let counter = leader.add(&b).map_err(|e| {
                let err = classify_open_error(event, e, tid_for_err);
                kernel_only_hint(event, err)
            })?;
            let member = if want_rdpmc {
                match counter.sampled(0) {
                    Ok(s) => Member::Mapped(s),
                    Err(e) => {
                        return Err(PmuError::io(
                            format!("mapping the perf_event_mmap_page of {event} for rdpmc"),
                            e,
                        ))
                    }
                }
            } else {
                Member::Plain(counter)
            };
            members.push(member);
        }
        leader
            .enable()
            .map_err(|e| PmuError::io("enabling the perf counter group", e))?;
        Ok(PerfGroup {
            events: events.to_vec(),
            leader,
            members,
            tid,
            rdpmc_mapped: want_rdpmc,
            all_hardware,
        })
    }

    /// `true` if the counters' pages are mapped for user-space reads.
    pub fn rdpmc_mapped(&self) -> bool {
        self.rdpmc_mapped
    }

    /// `true` if the counters are mapped for `rdpmc` and the kernel currently allows user-space
    /// reads (`cap_user_rdpmc`) — tried once on the observed thread.
    pub fn rdpmc_usable(&self) -> bool {
        self.rdpmc_mapped && sys::current_tid() == self.tid && self.read_rdpmc().is_some()
    }

    /// One group read through `read(2)`: all counters at one instant.
    pub fn read_syscall(&mut self) -> Result<Reading, PmuError> {
        let data = self
            .leader
            .read()
            .map_err(|e| PmuError::io("reading the perf counter group", e))?;
        let mut r = Reading::with_len(self.events.len());
        for (i, m) in self.members.iter().enumerate() {
            let entry = data.get(m.counter()).ok_or_else(|| {
                PmuError::io(
                    "reading the perf counter group",
                    std::io::Error::other(format!(
                        "the kernel returned no value for {}",
                        self.events[i]
                    )),
                )
            })?;
            r.set(i, entry.value());
        }
        r.time_enabled_ns = data.time_enabled().map_or(0, |d| d.as_nanos() as u64);
        r.time_running_ns = data.time_running().map_or(0, |d| d.as_nanos() as u64);
        Ok(r)
    }

    /// One group read through user-space `rdpmc`, member by member (each under the kernel's
    /// seqlock on its mmap page, so the values are consistent per counter, taken a few
    /// nanoseconds apart). `None` where it is not possible right now: not mapped, not on the
    /// observed thread, `cap_user_rdpmc` clear, or a counter not scheduled on the PMU.
    pub fn read_rdpmc(&self) -> Option<Reading> {
        if !self.rdpmc_mapped || sys::current_tid() != self.tid {
            return None;
        }
        let mut r = Reading::with_len(self.events.len());
        for (i, m) in self.members.iter().enumerate() {
            let Member::Mapped(s) = m else { return None };
            let data = s.read_user();
            r.set(i, data.count()?);
            if i == 0 {
                r.time_enabled_ns = data.time_enabled().as_nanos() as u64;
                r.time_running_ns = data.time_running().as_nanos() as u64;
            }
        }
        Some(r)
    }
}

impl CounterSource for PerfGroup {
    fn events(&self) -> &[Event] {
        &self.events
    }

    fn read(&mut self) -> Result<Reading, PmuError> {
        if let Some(r) = self.read_rdpmc() {
            return Ok(r);
        }
        self.read_syscall()
    }

    fn read_path(&self) -> ReadPath {
        if self.rdpmc_mapped && self.all_hardware && sys::current_tid() == self.tid {
            ReadPath::Rdpmc
        } else {
            ReadPath::ReadSyscall
        }
    }

    fn target_tid(&self) -> Option<Tid> {
        Some(self.tid)
    }
}

/// Adds the kernel-mode explanation to a refusal of a kernel-only software event.
fn kernel_only_hint(event: Event, err: PmuError) -> PmuError {
    match err {
        PmuError::PermissionDenied {
            event: ev,
            paranoid,
            reason,
        } if event.perf_counts_in_kernel_only() => PmuError::PermissionDenied {
            event: ev,
            paranoid,
            reason: format!(
                "perf counts {event} only in kernel mode, and kernel-mode counting is refused \
                 ({reason}); a user-mode-only counter would read 0. Without permission, take \
                 switches from RusageSource (getrusage) and migrations from ProcTaskSource \
                 (se.nr_migrations in /proc/self/task/<tid>/sched)"
            ),
        },
        other => other,
    }
}

/// Whether kernel-mode counting looks allowed (`perf_event_paranoid` ≤ 1, or root).
pub fn kernel_counting_allowed() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    root || perf_event_paranoid().is_some_and(|p| p <= 1)
}
