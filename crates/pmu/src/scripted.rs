//! A source that replays given counts: deterministic input for everything built on this crate.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::PmuError;
use crate::event::Event;
use crate::source::{check_event_count, CounterSource, ReadPath, Reading};
use crate::sys::Tid;

/// What a [`ScriptedSource`] does once its readings run out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ScriptEnd {
    /// Fail with [`PmuError::ScriptExhausted`] (the default: a test that reads more than it
    /// scripted learns about it).
    #[default]
    Error,
    /// Keep returning the last reading (counters that stopped moving).
    RepeatLast,
}

#[derive(Debug, Default)]
struct Script {
    queue: VecDeque<Reading>,
    last: Option<Reading>,
    served: usize,
}

/// Replays a list of cumulative readings, one per [`read`](CounterSource::read), in order.
/// More readings can be pushed while it is in use through a [`ScriptFeeder`], so a test can
/// drive code that owns the source step by step.
///
/// ```
/// use footprint_pmu::{CounterSource, Event, ScriptEnd, ScriptedSource};
/// let mut src = ScriptedSource::new(&[Event::Cycles, Event::LlcMisses], [[100, 1], [250, 4]])
///     .unwrap()
///     .on_end(ScriptEnd::RepeatLast);
/// assert_eq!(src.read().unwrap().values(), &[100, 1]);
/// let feeder = src.feeder();
/// assert_eq!(src.read().unwrap().values(), &[250, 4]);
/// assert_eq!(src.read().unwrap().values(), &[250, 4]); // repeated
/// feeder.push(&[400, 9]).unwrap();
/// assert_eq!(src.read().unwrap().values(), &[400, 9]);
/// ```
#[derive(Debug)]
pub struct ScriptedSource {
    events: Vec<Event>,
    script: Arc<Mutex<Script>>,
    end: ScriptEnd,
    tid: Option<Tid>,
}

impl ScriptedSource {
    /// A source of `events` replaying `readings` (each as many values as there are events).
    pub fn new<I, R>(events: &[Event], readings: I) -> Result<ScriptedSource, PmuError>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u64]>,
    {
        check_event_count(events)?;
        let src = ScriptedSource {
            events: events.to_vec(),
            script: Arc::new(Mutex::new(Script::default())),
            end: ScriptEnd::Error,
            tid: None,
        };
        let feeder = src.feeder();
        for r in readings {
            feeder.push(r.as_ref())?;
        }
        Ok(src)
    }

    /// A source whose readings are the running sums of `deltas` (starting from zero, which is
    /// served first).
    pub fn from_deltas<I, R>(events: &[Event], deltas: I) -> Result<ScriptedSource, PmuError>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u64]>,
    {
        let mut sum = vec![0u64; events.len()];
        let mut readings = vec![sum.clone()];
        for d in deltas {
            let d = d.as_ref();
            if d.len() != events.len() {
                return Err(length_error(events.len(), d.len()));
            }
            for (s, x) in sum.iter_mut().zip(d) {
                *s = s.wrapping_add(*x);
            }
            readings.push(sum.clone());
        }
        ScriptedSource::new(events, readings)
    }

    /// Sets what happens when the readings run out.
    pub fn on_end(mut self, end: ScriptEnd) -> ScriptedSource {
        self.end = end;
        self
    }

    /// Pretends to observe thread `tid` (reported by [`CounterSource::target_tid`]).
    pub fn for_thread(mut self, tid: Tid) -> ScriptedSource {
        self.tid = Some(tid);
        self
    }

    /// A handle that appends readings to this source's script from anywhere.
    pub fn feeder(&self) -> ScriptFeeder {
        ScriptFeeder {
            len: self.events.len(),
            script: Arc::clone(&self.script),
        }
    }

    /// Readings served so far.
    pub fn served(&self) -> usize {
        lock(&self.script).served
    }

    /// Readings still queued.
    pub fn remaining(&self) -> usize {
        lock(&self.script).queue.len()
    }
}

impl CounterSource for ScriptedSource {
    fn events(&self) -> &[Event] {
        &self.events
    }

    fn read(&mut self) -> Result<Reading, PmuError> {
        let mut s = lock(&self.script);
        let next = match s.queue.pop_front() {
            Some(r) => r,
            None => match (self.end, s.last) {
                (ScriptEnd::RepeatLast, Some(last)) => last,
                _ => return Err(PmuError::ScriptExhausted { served: s.served }),
            },
        };
        s.last = Some(next);
        s.served += 1;
        Ok(next)
    }

    fn read_path(&self) -> ReadPath {
        ReadPath::Scripted
    }

    fn target_tid(&self) -> Option<Tid> {
        self.tid
    }
}

/// Appends readings to a [`ScriptedSource`] (cloneable, `Send + Sync`).
#[derive(Clone, Debug)]
pub struct ScriptFeeder {
    len: usize,
    script: Arc<Mutex<Script>>,
}

impl ScriptFeeder {
    /// Queues one reading; it must have one value per event of the source.
    pub fn push(&self, values: &[u64]) -> Result<(), PmuError> {
        if values.len() != self.len {
            return Err(length_error(self.len, values.len()));
        }
        let r = Reading::from_values(values)?;
        lock(&self.script).queue.push_back(r);
        Ok(())
    }

    /// Queues a full reading (values and times).
    pub fn push_reading(&self, reading: Reading) -> Result<(), PmuError> {
        if reading.len() != self.len {
            return Err(length_error(self.len, reading.len()));
        }
        lock(&self.script).queue.push_back(reading);
        Ok(())
    }
}

fn length_error(expected: usize, got: usize) -> PmuError {
    PmuError::InvalidConfig(format!(
        "a scripted reading has {got} values but the source counts {expected} events; give \
         one value per event, in the order of the event list"
    ))
}

fn lock(m: &Mutex<Script>) -> std::sync::MutexGuard<'_, Script> {
    // A panic while holding this lock cannot leave the script half-updated (every update is
    // a single push/pop), so a poisoned lock is still consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_in_order_then_errors() {
        let mut s = ScriptedSource::new(&[Event::Cycles], [[1], [2], [3]]).unwrap();
        assert_eq!(s.remaining(), 3);
        for want in 1..=3 {
            assert_eq!(s.read().unwrap().values(), &[want]);
        }
        assert_eq!(s.served(), 3);
        assert!(matches!(
            s.read(),
            Err(PmuError::ScriptExhausted { served: 3 })
        ));
        assert_eq!(s.read_path(), ReadPath::Scripted);
    }

    #[test]
    fn repeat_last_needs_a_first_reading() {
        let mut s = ScriptedSource::new(&[Event::Cycles], Vec::<[u64; 1]>::new())
            .unwrap()
            .on_end(ScriptEnd::RepeatLast);
        assert!(matches!(
            s.read(),
            Err(PmuError::ScriptExhausted { served: 0 })
        ));
        s.feeder().push(&[7]).unwrap();
        assert_eq!(s.read().unwrap().values(), &[7]);
        assert_eq!(s.read().unwrap().values(), &[7]);
    }

    #[test]
    fn rejects_wrong_lengths_and_bad_event_lists() {
        assert!(matches!(
            ScriptedSource::new(&[Event::Cycles, Event::Instructions], [[1u64]]),
            Err(PmuError::InvalidConfig(_))
        ));
        assert!(ScriptedSource::new(&[], [[1u64]]).is_err());
        let s = ScriptedSource::new(&[Event::Cycles], [[1u64]]).unwrap();
        assert!(s.feeder().push(&[1, 2]).is_err());
        assert!(s
            .feeder()
            .push_reading(Reading::from_values(&[1, 2]).unwrap())
            .is_err());
    }

    #[test]
    fn from_deltas_accumulates() {
        let mut s = ScriptedSource::from_deltas(
            &[Event::LlcMisses, Event::LlcReferences],
            [[1, 10], [2, 20]],
        )
        .unwrap();
        assert_eq!(s.read().unwrap().values(), &[0, 0]);
        assert_eq!(s.read().unwrap().values(), &[1, 10]);
        assert_eq!(s.read().unwrap().values(), &[3, 30]);
        let b = ScriptedSource::from_deltas(&[Event::Cycles], [[1, 2]]);
        assert!(b.is_err());
    }

    #[test]
    fn feeder_works_across_threads() {
        let mut s = ScriptedSource::new(&[Event::Cycles], Vec::<[u64; 1]>::new())
            .unwrap()
            .for_thread(42);
        let f = s.feeder();
        std::thread::spawn(move || {
            for i in 0..100 {
                f.push(&[i]).unwrap();
            }
        })
        .join()
        .unwrap();
        for i in 0..100 {
            assert_eq!(s.read().unwrap().values(), &[i]);
        }
        assert_eq!(s.target_tid(), Some(42));
    }

    #[test]
    fn stress_many_feeders_one_reader_exact_counts() {
        const PRODUCERS: u64 = 4;
        let per: u64 = if cfg!(debug_assertions) {
            2_000
        } else {
            20_000
        };
        let mut s = ScriptedSource::new(
            &[Event::Cycles, Event::Instructions],
            Vec::<[u64; 2]>::new(),
        )
        .unwrap();
        let handles: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let f = s.feeder();
                std::thread::spawn(move || {
                    for i in 0..per {
                        f.push(&[p, i]).unwrap();
                    }
                })
            })
            .collect();
        let mut next = vec![0u64; PRODUCERS as usize];
        let mut got = 0;
        while got < PRODUCERS * per {
            match s.read() {
                Ok(r) => {
                    let (p, i) = (r.values()[0] as usize, r.values()[1]);
                    // Each producer's readings come out in the order it pushed them.
                    assert_eq!(i, next[p], "producer {p}");
                    next[p] += 1;
                    got += 1;
                }
                Err(PmuError::ScriptExhausted { .. }) => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        assert!(next.iter().all(|&n| n == per));
        assert_eq!(s.served() as u64, PRODUCERS * per);
        assert_eq!(s.remaining(), 0);
    }

    #[test]
    fn boxed_sources_are_sources() {
        let mut b: Box<dyn CounterSource> =
            Box::new(ScriptedSource::new(&[Event::TaskClock], [[5]]).unwrap());
        let r = b.read().unwrap();
        assert_eq!(b.value(&r, Event::TaskClock), Some(5));
        assert_eq!(b.value(&r, Event::Cycles), None);
        assert_eq!(b.events(), &[Event::TaskClock]);
    }
}
