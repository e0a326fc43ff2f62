//! Software sources that need no permission: `getrusage(RUSAGE_THREAD)` + the thread CPU clock
//! for the calling thread, and `/proc/self/task/<tid>/…` for any thread of the process.

use crate::error::PmuError;
use crate::event::Event;
use crate::source::{check_event_count, CounterSource, ReadPath, Reading, Target};
use crate::sys::{self, ProcFile, RusageWho, Tid};

/// Software counts of the calling thread from `getrusage(RUSAGE_THREAD)` and
/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`: no permission needed, well under a microsecond
/// per read. It must be read on the thread that created it (the kernel only reports the
/// caller), otherwise [`PmuError::WrongThread`].
///
/// Events: [`Event::TaskClock`] (ns), [`Event::PageFaults`], [`Event::VoluntaryContextSwitches`],
/// [`Event::InvoluntaryContextSwitches`], [`Event::ContextSwitches`] (their sum).
///
/// ```
/// use footprint_pmu::{CounterSource, Event, RusageSource};
/// let mut src = RusageSource::new();
/// let r = src.read().unwrap();
/// assert!(src.value(&r, Event::TaskClock).unwrap() > 0);
/// ```
#[derive(Debug)]
pub struct RusageSource {
    tid: Tid,
}

impl RusageSource {
    /// The events, in reading order.
    pub const EVENTS: [Event; 5] = [
        Event::TaskClock,
        Event::PageFaults,
        Event::VoluntaryContextSwitches,
        Event::InvoluntaryContextSwitches,
        Event::ContextSwitches,
    ];

    /// A source for the calling thread.
    pub fn new() -> RusageSource {
        RusageSource {
            tid: sys::current_tid(),
        }
    }
}

impl Default for RusageSource {
    fn default() -> Self {
        RusageSource::new()
    }
}

impl CounterSource for RusageSource {
    fn events(&self) -> &[Event] {
        &Self::EVENTS
    }

    fn read(&mut self) -> Result<Reading, PmuError> {
        let caller = sys::current_tid();
        if caller != self.tid {
            return Err(PmuError::WrongThread {
                owner: self.tid,
                caller,
            });
        }
        let ru = sys::getrusage(RusageWho::Thread)?;
        let cpu = sys::thread_cpu_time_ns();
        let mut r = Reading::with_len(Self::EVENTS.len());
        r.set(0, cpu);
        r.set(1, ru.minor_faults + ru.major_faults);
        r.set(2, ru.voluntary_switches);
        r.set(3, ru.involuntary_switches);
        r.set(4, ru.voluntary_switches + ru.involuntary_switches);
        Ok(r)
    }

    fn read_path(&self) -> ReadPath {
        ReadPath::Rusage
    }

    fn target_tid(&self) -> Option<Tid> {
        Some(self.tid)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    CpuNs,
    RunDelayNs,
    Voluntary,
    Involuntary,
    Switches,
    Migrations,
    Faults,
}

/// Software counts of any thread of this process, read from `/proc/self/task/<tid>/`:
/// `schedstat` (CPU time and run-queue delay in ns), `sched` (voluntary and involuntary
/// switches, `se.nr_migrations`; present with `CONFIG_SCHED_DEBUG`, else `status` supplies the
/// switches and migrations are unavailable) and `stat` (page faults). The files stay open and
/// are re-read with `pread`. No permission needed; a few microseconds per read.
///
/// ```
/// use footprint_pmu::{CounterSource, Event, ProcTaskSource, Target};
/// let mut src = ProcTaskSource::open(Target::CallingThread).unwrap();
/// let r = src.read().unwrap();
/// assert!(src.value(&r, Event::TaskClock).is_some());
/// ```
#[derive(Debug)]
pub struct ProcTaskSource {
    tid: Tid,
    events: Vec<Event>,
    fields: Vec<Field>,
    schedstat: Option<ProcFile>,
    sched: Option<ProcFile>,
    status: Option<ProcFile>,
    stat: Option<ProcFile>,
    buf: Vec<u8>,
}

impl ProcTaskSource {
    /// Every event this source can provide on this kernel, for `target`.
    pub fn open(target: Target) -> Result<ProcTaskSource, PmuError> {
        let tid = target.tid();
        let mut events = vec![
            Event::TaskClock,
            Event::RunDelay,
            Event::VoluntaryContextSwitches,
            Event::InvoluntaryContextSwitches,
            Event::ContextSwitches,
        ];
        if std::path::Path::new(&format!("/proc/self/task/{tid}/sched")).exists() {
            events.push(Event::CpuMigrations);
        }
        events.push(Event::PageFaults);
        ProcTaskSource::with_events(target, &events)
    }

    /// Only `events`, opening only the files they need. Fails with
    /// [`PmuError::NotSupported`] for an event `/proc` cannot give here (hardware events;
    /// migrations without `CONFIG_SCHED_DEBUG`).
    pub fn with_events(target: Target, events: &[Event]) -> Result<ProcTaskSource, PmuError> {
        check_event_count(events)?;
        let tid = target.tid();
        let base = format!("/proc/self/task/{tid}");
        if !std::path::Path::new(&base).exists() {
            return Err(PmuError::NoSuchThread { tid });
        }
        let has_sched = std::path::Path::new(&format!("{base}/sched")).exists();
        let mut fields = Vec::with_capacity(events.len());
        for &e in events {
            fields.push(match e {
                Event::TaskClock => Field::CpuNs,
                Event::RunDelay => Field::RunDelayNs,
                Event::VoluntaryContextSwitches => Field::Voluntary,
                Event::InvoluntaryContextSwitches => Field::Involuntary,
                Event::ContextSwitches => Field::Switches,
                Event::CpuMigrations if has_sched => Field::Migrations,
                Event::CpuMigrations => {
                    return Err(PmuError::NotSupported {
                        event: e,
                        reason: format!(
                            "{base}/sched is missing (kernel built without CONFIG_SCHED_DEBUG), \
                             and perf counts migrations only in kernel mode"
                        ),
                    })
                }
                Event::PageFaults => Field::Faults,
                other => {
                    return Err(PmuError::NotSupported {
                        event: other,
                        reason: "/proc has no count of hardware events; use PerfGroup".into(),
                    })
                }
            });
        }
        let needs = |fs: &[Field]| fields.iter().any(|f| fs.contains(f));
        let open = |name: &str| ProcFile::open(format!("{base}/{name}"), tid).map(Some);
        let schedstat = if needs(&[Field::CpuNs, Field::RunDelayNs]) {
            open("schedstat")?
        } else {
            None
        };
        let switches = needs(&[Field::Voluntary, Field::Involuntary, Field::Switches]);
        let sched = if has_sched && (switches || needs(&[Field::Migrations])) {
            open("sched")?
        } else {
            None
        };
        let status = if !has_sched && switches {
            open("status")?
        } else {
            None
        };
        let stat = if needs(&[Field::Faults]) {
            open("stat")?
        } else {
            None
        };
        Ok(ProcTaskSource {
            tid,
            events: events.to_vec(),
            fields,
            schedstat,
            sched,
            status,
            stat,
            buf: Vec::with_capacity(4096),
        })
    }

    fn malformed(&self, file: &str) -> PmuError {
        PmuError::io(
            format!("parsing /proc/self/task/{}/{file}", self.tid),
            std::io::Error::new(std::io::ErrorKind::InvalidData, "unexpected format"),
        )
    }
}

impl CounterSource for ProcTaskSource {
    fn events(&self) -> &[Event] {
        &self.events
    }

    fn read(&mut self) -> Result<Reading, PmuError> {
        let tid = self.tid;
        let (mut cpu, mut delay, mut vol, mut invol, mut migr, mut faults) = (0, 0, 0, 0, 0, 0);
        if let Some(f) = &self.schedstat {
            let text = f.read(&mut self.buf, tid)?;
            (cpu, delay) = sys::parse_schedstat(text).ok_or_else(|| self.malformed("schedstat"))?;
        }
        if let Some(f) = &self.sched {
            let c = sys::parse_sched(f.read(&mut self.buf, tid)?);
            vol = c.voluntary.unwrap_or(0);
            invol = c.involuntary.unwrap_or(0);
            migr = c.migrations.ok_or_else(|| self.malformed("sched"))?;
        }
        if let Some(f) = &self.status {
            (vol, invol) = sys::parse_status_switches(f.read(&mut self.buf, tid)?)
                .ok_or_else(|| self.malformed("status"))?;
        }
        if let Some(f) = &self.stat {
            let (min, maj) = sys::parse_stat_faults(f.read(&mut self.buf, tid)?)
                .ok_or_else(|| self.malformed("stat"))?;
            faults = min + maj;
        }
        let mut r = Reading::with_len(self.fields.len());
        for (i, f) in self.fields.iter().enumerate() {
            r.set(
                i,
                match f {
                    Field::CpuNs => cpu,
                    Field::RunDelayNs => delay,
                    Field::Voluntary => vol,
                    Field::Involuntary => invol,
                    Field::Switches => vol + invol,
                    Field::Migrations => migr,
                    Field::Faults => faults,
                },
            );
        }
        Ok(r)
    }

    fn read_path(&self) -> ReadPath {
        ReadPath::Procfs
    }

    fn target_tid(&self) -> Option<Tid> {
        Some(self.tid)
    }
}
