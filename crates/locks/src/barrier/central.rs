//! Central sense-reversing ("incremental") barrier.

use super::{BarrierCore, BarrierError, BarrierWaitResult};
use crate::sync::Ordering;
use crate::wait::{Informed, WaitPolicy};
use std::marker::PhantomData;

const KIND: &str = "CentralBarrier";

/// Central sense-reversing barrier: each arrival increments one counter; the last of a phase
/// flips the shared sense (here: advances the released-phase counter, whose parity is the sense)
/// and wakes the parked waiters. O(1) space; all waiters watch one word. The last arriver is the
/// leader.
///
/// ```
/// let b = std::sync::Arc::new(footprint::sync::CentralBarrier::<footprint::sync::Informed>::new(2));
/// let b2 = b.clone();
/// let t = std::thread::spawn(move || b2.wait().is_leader());
/// let me = b.wait().is_leader();
/// assert!(me ^ t.join().unwrap());
/// ```
pub struct CentralBarrier<W: WaitPolicy = Informed> {
    pub(super) core: BarrierCore,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> CentralBarrier<W> {
    /// A barrier for `n` threads per phase; `n = 0` is an error.
    pub fn try_new(n: usize) -> Result<Self, BarrierError> {
        Ok(CentralBarrier {
            core: BarrierCore::new(n)?,
            _policy: PhantomData,
        })
    }

    /// Waits until `n` threads have called `wait` in this phase.
    #[track_caller]
    pub fn wait(&self) -> BarrierWaitResult {
        let c = &self.core;
        let a = c.arrive::<W>(KIND);
        let leader = a.index == c.n - 1;
        // Waiters park under their phase's parity, and the release wakes only that phase's:
        // a released thread that finishes its next phase's work quickly parks again for the
        // next phase while the release is still popping the queue (it pops in batches and goes
        // on while a batch is full). Under one key it popped those again, and they parked
        // again, for as long as they kept coming: with 64 green ranks on 16 workers of a
        // 16-core Xeon the last arrival sat in its release for hundreds of milliseconds per
        // phase, while the next phase could not complete without it. The next phase's
        // arrivals are the only others that can be parked here (the phase after it cannot
        // begin before this release returns: its leader is among them).
        let key = a.phase & 1;
        if leader {
            c.complete(&a);
            c.queue.notify_key_home(key);
        } else {
            let target = a.phase + 1;
            c.wait_for::<W>(&a, key, KIND, &mut || {
                c.released.load(Ordering::Acquire) >= target
            });
        }
        c.depart(a, leader)
    }
}

barrier_common!(CentralBarrier);
