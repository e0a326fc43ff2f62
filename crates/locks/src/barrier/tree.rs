//! MCS tree barrier.

use super::{BarrierCore, BarrierError, BarrierWaitResult};
use crate::sync::{AtomicUsize, Ordering};
use crate::wait::{Informed, WaitPolicy};
use crossbeam_utils::CachePadded;
use std::marker::PhantomData;

const KIND: &str = "TreeBarrier";
const FAN_IN: usize = 4;

/// Per-participant flags, each on its own cache line.
struct TreeNode {
    /// Last phase (+1) in which this node's whole arrival subtree has arrived.
    arrived: AtomicUsize,
    /// Last phase (+1) for which this node was released by its wake-up parent.
    released: AtomicUsize,
}

/// MCS tree barrier (Mellor-Crummey & Scott): arrival climbs a 4-ary tree (each node waits for
/// its up to four children, then tells its parent), and the root's release travels down a binary
/// wake-up tree. Every thread waits on its own flags only: O(log n) critical path, no hot spot.
/// The root (index 0 of the phase) is the leader.
pub struct TreeBarrier<W: WaitPolicy = Informed> {
    core: BarrierCore,
    nodes: Box<[CachePadded<TreeNode>]>,
    _policy: PhantomData<W>,
}

impl<W: WaitPolicy> TreeBarrier<W> {
    /// A barrier for `n` threads per phase; `n = 0` is an error.
    pub fn try_new(n: usize) -> Result<Self, BarrierError> {
        let core = BarrierCore::new(n)?;
        let nodes = (0..n)
            .map(|_| {
                CachePadded::new(TreeNode {
                    arrived: AtomicUsize::new(0),
                    released: AtomicUsize::new(0),
                })
            })
            .collect();
        Ok(TreeBarrier {
            core,
            nodes,
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
        // Arrival: wait for the children, then report to the parent.
        for child in (FAN_IN * i + 1..=FAN_IN * i + FAN_IN).filter(|&ch| ch < n) {
            let flag = &self.nodes[child].arrived;
            c.wait_for::<W>(&a, 2 * child, KIND, &mut || {
                flag.load(Ordering::Acquire) >= target
            });
        }
        if i == 0 {
            c.complete(&a);
        } else {
            self.nodes[i].arrived.swap(target, Ordering::SeqCst);
            c.queue.notify_key_home(2 * i);
            let flag = &self.nodes[i].released;
            c.wait_for::<W>(&a, 2 * i + 1, KIND, &mut || {
                flag.load(Ordering::Acquire) >= target
            });
        }
        // Wake-up: release the binary children.
        for child in [2 * i + 1, 2 * i + 2].into_iter().filter(|&ch| ch < n) {
            self.nodes[child].released.swap(target, Ordering::SeqCst);
            c.queue.notify_key_home(2 * child + 1);
        }
        c.depart(a, i == 0)
    }
}

barrier_common!(TreeBarrier);
