//! Dissemination barrier.

use super::{BarrierCore, BarrierError, BarrierWaitResult};
use crate::sync::{AtomicUsize, Ordering};
use crate::wait::{Informed, WaitPolicy};
use crossbeam_utils::CachePadded;
use std::marker::PhantomData;

const KIND: &str = "DisseminationBarrier";

/// Dissemination barrier (Hensgen, Finkel & Manber): in round `k` of `⌈log2 n⌉`, participant `i`
/// signals `(i + 2^k) mod n` and waits for the signal of `(i − 2^k) mod n`. No thread is special;
/// index 0 of the phase is reported as the leader.
pub struct DisseminationBarrier<W: WaitPolicy = Informed> {
    core: BarrierCore,
    rounds: usize,
    /// `flags[i * rounds + k]`: last phase (+1) in which participant `i` was signalled in round `k`.
    flags: Box<[CachePadded<AtomicUsize>]>,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> DisseminationBarrier<W> {
    /// A barrier for `n` threads per phase; `n = 0` is an error.
    pub fn try_new(n: usize) -> Result<Self, BarrierError> {
        let core = BarrierCore::new(n)?;
        let rounds = n.next_power_of_two().trailing_zeros() as usize;
        let flags = (0..n * rounds)
            .map(|_| CachePadded::new(AtomicUsize::new(0)))
            .collect();
        Ok(DisseminationBarrier {
            core,
            rounds,
            flags,
            _policy: PhantomData,
        })
    }

    /// Waits until `n` threads have called `wait` in this phase.
    #[track_caller]
    pub fn wait(&self) -> BarrierWaitResult {
        let c = &self.core;
        let n = c.n;
        let a = c.arrive::<W>(KIND);
        let (i, target) = (a.index, a.phase + 1);
        for k in 0..self.rounds {
            let partner = (i + (1 << k)) % n;
            let slot = partner * self.rounds + k;
            self.flags[slot].fetch_max(target, Ordering::SeqCst);
            c.queue.notify_key_home(slot);
            let mine = &self.flags[i * self.rounds + k];
            c.wait_for::<W>(&a, i * self.rounds + k, KIND, &mut || {
                mine.load(Ordering::Acquire) >= target
            });
        }
        // Every thread has seen all others arrive: the phase is complete for us.
        c.complete(&a);
        c.depart(a, i == 0)
    }
}

barrier_common!(DisseminationBarrier);
