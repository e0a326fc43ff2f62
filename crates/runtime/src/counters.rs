//! What a runtime measures at each green-thread switch ([`Counters`], chosen with
//! [`Builder::counters`](crate::Builder::counters)), how the choice is resolved when the runtime
//! is built, and the per-worker counter source read at the switches.

use crate::error::Error;
use footprint_pmu::{
    Capabilities, CounterSource, Event, PerfGroup, PerfOptions, PmuError, Reading, Target,
};
use std::fmt;
use std::sync::Arc;

/// Makes the counter source of worker `index`; called once on each worker's own OS thread
/// when the runtime starts (so a source that observes "the calling thread" observes that
/// worker).
pub type SourceFactory =
    Arc<dyn Fn(usize) -> Result<Box<dyn CounterSource>, PmuError> + Send + Sync>;

/// What the runtime measures when a green thread starts and stops running on a worker.
///
/// - [`Counters::Off`] (the default): nothing per green thread; the per-worker run, park,
///   steal, idle and inbox totals of [`Runtime::stats`](crate::Runtime::stats) are still kept.
/// - [`Counters::Time`]: run time, runs, migrations, steals and parked time of every green
///   thread, from the time-stamp counter (one `rdtsc` per switch: about +15 ns per switch on the
///   development VM, where a yield costs 15 ns, so it is not on by default).
/// - [`Counters::Hardware`]: time, plus the cache misses of every run from a per-worker perf
///   counter (the LLC-miss event where the probe finds it, else L1D read misses) read with
///   `rdpmc` where allowed; the misses feed the ready order's affinity policy
///   (`MinMisses`, `MissSum`, `ReloadTransient`). Building fails with
///   [`Error::NoHardwareCounters`] (saying why) where the probe finds none.
/// - [`Counters::Auto`]: `Hardware` where the probe finds counters, else `Time`.
/// - [`Counters::Source`]: time, plus misses from any [`CounterSource`] (one per worker, made
///   on the worker's thread); the source's miss value is its `LlcMisses` event if it counts
///   one, else `L1dReadMisses`, else its first event.
///
/// A source that fails (cannot be made, or a read fails mid-run) is dropped for that worker:
/// its accounting falls back to time only, the failure is counted in
/// [`WorkerStats::counter_failures`](crate::WorkerStats::counter_failures) and the first error
/// is kept in [`RuntimeStats::counter_error`](crate::RuntimeStats::counter_error). A worker
/// never panics for it.
///
/// ```
/// use footprint_pmu::{Event, ScriptEnd, ScriptedSource};
/// use footprint::{Counters, Runtime};
///
/// let rt = Runtime::builder()
///     .workers(1)
///     .counters(Counters::source(|_worker| {
///         let src = ScriptedSource::new(&[Event::LlcMisses], [[0]])?;
///         Ok(Box::new(src.on_end(ScriptEnd::RepeatLast)))
///     }))
///     .build()?;
/// let h = rt.spawn(|| footprint::current_stats().map(|s| s.runs));
/// assert_eq!(h.join().unwrap(), Some(1));
/// # Ok::<(), footprint::Error>(())
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Counters {
    /// No per-thread accounting.
    #[default]
    Off,
    /// Time-only accounting.
    Time,
    /// Time and hardware cache misses (error if this machine has no usable counters).
    Hardware,
    /// Hardware where present, else time only.
    Auto,
    /// Time and misses from a counter source per worker.
    Source(SourceFactory),
}

impl Counters {
    /// [`Counters::Source`] from a closure.
    pub fn source<F>(make: F) -> Counters
    where
        F: Fn(usize) -> Result<Box<dyn CounterSource>, PmuError> + Send + Sync + 'static,
    {
        Counters::Source(Arc::new(make))
    }

    /// Makes the choice concrete for this machine (the PMU crate's cached probe).
    pub(crate) fn resolve(&self) -> Result<Resolved, Error> {
        Ok(match self {
            Counters::Off => Resolved {
                timed: false,
                source: None,
                describe: "off".into(),
            },
            Counters::Time => Resolved::time("time only"),
            Counters::Source(f) => Resolved {
                timed: true,
                source: Some(f.clone()),
                describe: "time and a custom counter source".into(),
            },
            Counters::Hardware => hardware(Capabilities::get())?,
            Counters::Auto => match hardware(Capabilities::get()) {
                Ok(r) => r,
                Err(_) => Resolved::time("time only (auto: no hardware counters)"),
            },
        })
    }
}

impl fmt::Debug for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Counters::Off => "Off",
            Counters::Time => "Time",
            Counters::Hardware => "Hardware",
            Counters::Auto => "Auto",
            Counters::Source(_) => "Source(..)",
        })
    }
}

/// The hardware choice on a machine with capabilities `caps`, or why there is none.
fn hardware(caps: &Capabilities) -> Result<Resolved, Error> {
    if let Some(reason) = caps.hardware_group.reason() {
        return Err(Error::NoHardwareCounters {
            reason: format!("hardware counter group {}: {reason}", caps.hardware_group),
        });
    }
    let event = [Event::LlcMisses, Event::L1dReadMisses]
        .into_iter()
        .find(|&e| caps.perf_available(e))
        .ok_or_else(|| Error::NoHardwareCounters {
            reason: "neither LLC misses nor L1D read misses can be counted here".into(),
        })?;
    let describe = format!("time and hardware {event} (rdpmc {})", caps.rdpmc);
    let make: SourceFactory = Arc::new(move |_worker| {
        let g = PerfGroup::open(&[event], Target::CallingThread, PerfOptions::default())?;
        Ok(Box::new(g) as Box<dyn CounterSource>)
    });
    Ok(Resolved {
        timed: true,
        source: Some(make),
        describe,
    })
}

/// A resolved counter choice (what `Shared` keeps).
#[derive(Clone)]
pub(crate) struct Resolved {
    /// Per-thread accounting on.
    pub(crate) timed: bool,
    /// The per-worker source maker, if misses are counted.
    pub(crate) source: Option<SourceFactory>,
    /// In words, for stats.
    pub(crate) describe: String,
}

impl Resolved {
    fn time(describe: &str) -> Resolved {
        Resolved {
            timed: true,
            source: None,
            describe: describe.into(),
        }
    }
}

/// One worker's counter source, read at the start and end of every run (owner-only).
pub(crate) struct WorkerSource {
    source: Box<dyn CounterSource>,
    /// Index of the miss event in the source's readings.
    miss: usize,
    /// The reading taken when the current run began (`None`: that read failed).
    start: Option<Reading>,
}

impl WorkerSource {
    pub(crate) fn new(source: Box<dyn CounterSource>) -> WorkerSource {
        let events = source.events();
        let miss = [Event::LlcMisses, Event::L1dReadMisses]
            .iter()
            .find_map(|e| events.iter().position(|x| x == e))
            .unwrap_or(0);
        WorkerSource {
            source,
            miss,
            start: None,
        }
    }

    /// Reads at the start of a run.
    #[inline]
    pub(crate) fn begin(&mut self) -> Result<(), PmuError> {
        self.start = Some(self.source.read()?);
        Ok(())
    }

    /// Reads at the end of a run: the misses since [`WorkerSource::begin`].
    #[inline]
    pub(crate) fn end(&mut self) -> Result<u64, PmuError> {
        let now = self.source.read()?;
        let start = self.start.take().ok_or(PmuError::InvalidConfig(
            "a run ended without a start reading".into(),
        ))?;
        Ok(now.delta_since(&start).get(self.miss).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use footprint_pmu::{ScriptEnd, ScriptedSource};

    #[test]
    fn the_miss_event_is_picked_from_the_source() {
        let s = ScriptedSource::new(&[Event::Cycles, Event::LlcMisses], [[0, 0], [10, 3]])
            .unwrap()
            .on_end(ScriptEnd::Error);
        let mut w = WorkerSource::new(Box::new(s));
        w.begin().unwrap();
        assert_eq!(w.end().unwrap(), 3);
        assert!(w.begin().is_err(), "the script ran out");
        assert!(w.end().is_err());
    }

    /// `Hardware` on a machine without a PMU is a typed error that says why; `Auto` there is
    /// time only.
    #[test]
    fn hardware_needs_a_pmu() {
        let caps = Capabilities::get();
        match hardware(caps) {
            Ok(r) => assert!(r.timed && r.source.is_some()),
            Err(Error::NoHardwareCounters { reason }) => {
                assert!(!caps.cache_misses_available() || caps.hardware_group.reason().is_some());
                assert!(!reason.is_empty());
                let auto = Counters::Auto.resolve().unwrap();
                assert!(auto.timed && auto.source.is_none());
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
}
