//! The one trait every counter source implements, and the fixed-size reading it produces.

use std::fmt;

use crate::error::PmuError;
use crate::event::Event;
use crate::sys::{self, Tid};

/// Most events one source (and one [`Reading`]) can carry.
pub const MAX_EVENTS: usize = 8;

/// Which thread a source observes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The thread that opens the source.
    CallingThread,
    /// Another thread of this process, by kernel thread id (`gettid()`).
    Thread(Tid),
}

impl Target {
    /// The kernel thread id this target names (the caller's for [`Target::CallingThread`]).
    pub fn tid(self) -> Tid {
        match self {
            Target::CallingThread => sys::current_tid(),
            Target::Thread(tid) => tid,
        }
    }
}

/// How a source's reads reach the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPath {
    /// User-space `rdpmc` from the perf mmap page (tens of cycles, no system call).
    Rdpmc,
    /// `read(2)` on the perf group file descriptor (one system call per group).
    ReadSyscall,
    /// `getrusage(RUSAGE_THREAD)` and `clock_gettime` (system calls, no permission needed).
    Rusage,
    /// `pread` of `/proc/self/task/<tid>/...` files (several microseconds).
    Procfs,
    /// Replayed from a script.
    Scripted,
}

impl fmt::Display for ReadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReadPath::Rdpmc => "rdpmc",
            ReadPath::ReadSyscall => "read()",
            ReadPath::Rusage => "getrusage",
            ReadPath::Procfs => "/proc",
            ReadPath::Scripted => "scripted",
        })
    }
}

/// Cumulative counts of a source's events at one instant, in the order of
/// [`CounterSource::events`]. `Copy` and allocation-free, so a scheduler can take one at every
/// green-thread switch.
///
/// ```
/// use footprint_pmu::Reading;
/// let before = Reading::from_values(&[10, 100]).unwrap();
/// let after = Reading::from_values(&[15, 160]).unwrap();
/// assert_eq!(after.delta_since(&before).values(), &[5, 60]);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Reading {
    len: u8,
    values: [u64; MAX_EVENTS],
    /// Nanoseconds the counters were enabled (perf's `time_enabled`; 0 where meaningless).
    pub time_enabled_ns: u64,
    /// Nanoseconds the counters were actually on the PMU (`time_running`; less than
    /// `time_enabled_ns` when the kernel multiplexed them; 0 where meaningless).
    pub time_running_ns: u64,
}

impl Reading {
    /// A reading of the given values (times zero). Fails with
    /// [`PmuError::TooManyEvents`] for more than [`MAX_EVENTS`] values.
    pub fn from_values(values: &[u64]) -> Result<Reading, PmuError> {
        if values.len() > MAX_EVENTS {
            return Err(PmuError::TooManyEvents {
                requested: values.len(),
                max: MAX_EVENTS,
            });
        }
        let mut r = Reading {
            len: values.len() as u8,
            ..Reading::default()
        };
        r.values[..values.len()].copy_from_slice(values);
        Ok(r)
    }

    /// The values, one per event.
    pub fn values(&self) -> &[u64] {
        &self.values[..self.len as usize]
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// `true` if the reading holds no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value at `index`, if any.
    pub fn get(&self, index: usize) -> Option<u64> {
        self.values().get(index).copied()
    }

    pub(crate) fn set(&mut self, index: usize, value: u64) {
        self.values[index] = value;
    }

    pub(crate) fn with_len(len: usize) -> Reading {
        debug_assert!(len <= MAX_EVENTS);
        Reading {
            len: len as u8,
            ..Reading::default()
        }
    }

    /// Per-event difference `self - earlier` (wrapping, as hardware counters do), with the
    /// times subtracted too. Both readings must come from the same source.
    pub fn delta_since(&self, earlier: &Reading) -> Reading {
        let mut d = *self;
        for (v, e) in d.values[..self.len as usize]
            .iter_mut()
            .zip(earlier.values.iter())
        {
            *v = v.wrapping_sub(*e);
        }
        d.time_enabled_ns = self.time_enabled_ns.wrapping_sub(earlier.time_enabled_ns);
        d.time_running_ns = self.time_running_ns.wrapping_sub(earlier.time_running_ns);
        d
    }

    /// `value × time_enabled / time_running`: the estimate perf uses when the kernel
    /// multiplexed the counters. Returns `value` unchanged where the times are 0 or equal.
    pub fn scaled(&self, index: usize) -> Option<u64> {
        let v = self.get(index)?;
        if self.time_running_ns == 0 || self.time_running_ns >= self.time_enabled_ns {
            return Some(v);
        }
        Some(
            (v as u128 * self.time_enabled_ns as u128 / self.time_running_ns as u128)
                .min(u64::MAX as u128) as u64,
        )
    }
}

impl fmt::Debug for Reading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reading")
            .field("values", &self.values())
            .field("time_enabled_ns", &self.time_enabled_ns)
            .field("time_running_ns", &self.time_running_ns)
            .finish()
    }
}

/// A source of cumulative event counts for one thread: the perf hardware group, the software
/// sources, or a script. The runtime and the affinity policies program against this trait so
/// the backend can change (and tests can replay counts).
///
/// ```
/// use footprint_pmu::{CounterSource, Event, ScriptedSource};
/// let mut src = ScriptedSource::new(&[Event::LlcMisses], [[0], [40], [100]]).unwrap();
/// let first = src.read().unwrap();
/// let second = src.read().unwrap();
/// assert_eq!(src.value(&second.delta_since(&first), Event::LlcMisses), Some(40));
/// ```
pub trait CounterSource: Send {
    /// The events this source counts, in the order of [`Reading::values`].
    fn events(&self) -> &[Event];

    /// Reads all events at once.
    fn read(&mut self) -> Result<Reading, PmuError>;

    /// How the next [`read`](CounterSource::read) will reach the counters.
    fn read_path(&self) -> ReadPath;

    /// The thread this source observes, if it observes one.
    fn target_tid(&self) -> Option<Tid> {
        None
    }

    /// The value of `event` in `reading`, if this source counts it.
    fn value(&self, reading: &Reading, event: Event) -> Option<u64> {
        let i = self.events().iter().position(|e| *e == event)?;
        reading.get(i)
    }
}

impl<S: CounterSource + ?Sized> CounterSource for Box<S> {
    fn events(&self) -> &[Event] {
        (**self).events()
    }
    fn read(&mut self) -> Result<Reading, PmuError> {
        (**self).read()
    }
    fn read_path(&self) -> ReadPath {
        (**self).read_path()
    }
    fn target_tid(&self) -> Option<Tid> {
        (**self).target_tid()
    }
}

pub(crate) fn check_event_count(events: &[Event]) -> Result<(), PmuError> {
    if events.is_empty() {
        return Err(PmuError::InvalidConfig(
            "a counter source needs at least one event".into(),
        ));
    }
    if events.len() > MAX_EVENTS {
        return Err(PmuError::TooManyEvents {
            requested: events.len(),
            max: MAX_EVENTS,
        });
    }
    for (i, e) in events.iter().enumerate() {
        if events[..i].contains(e) {
            return Err(PmuError::InvalidConfig(format!(
                "event {e} is listed twice; list each event once"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn from_values_limits() {
        assert!(Reading::from_values(&[0; MAX_EVENTS]).is_ok());
        assert!(matches!(
            Reading::from_values(&[0; MAX_EVENTS + 1]),
            Err(PmuError::TooManyEvents {
                requested: 9,
                max: 8
            })
        ));
        assert!(Reading::from_values(&[]).unwrap().is_empty());
    }

    #[test]
    fn scaling_follows_perf() {
        let mut r = Reading::from_values(&[100]).unwrap();
        r.time_enabled_ns = 200;
        r.time_running_ns = 50;
        assert_eq!(r.scaled(0), Some(400));
        r.time_running_ns = 0;
        assert_eq!(r.scaled(0), Some(100));
        assert_eq!(r.scaled(1), None);
    }

    #[test]
    fn event_list_validation() {
        assert!(check_event_count(&[]).is_err());
        assert!(check_event_count(&[Event::Cycles, Event::Cycles]).is_err());
        assert!(check_event_count(&Event::HARDWARE_GROUP).is_ok());
        assert!(matches!(
            check_event_count(&Event::ALL),
            Err(PmuError::TooManyEvents { .. })
        ));
    }

    proptest! {
        #[test]
        fn delta_inverts_wrapping_add(
            base in proptest::collection::vec(any::<u64>(), 0..=MAX_EVENTS),
            inc_seed in any::<u64>(),
        ) {
            let incs: Vec<u64> = base.iter().enumerate()
                .map(|(i, _)| inc_seed.rotate_left(i as u32 * 7)).collect();
            let later: Vec<u64> = base.iter().zip(&incs).map(|(b, i)| b.wrapping_add(*i)).collect();
            let a = Reading::from_values(&base).unwrap();
            let b = Reading::from_values(&later).unwrap();
            let d = b.delta_since(&a);
            prop_assert_eq!(d.values(), &incs[..]);
        }
    }
}
