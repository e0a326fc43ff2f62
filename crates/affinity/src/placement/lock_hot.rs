//! Lock-hot placement (000, FAST: futex-aware scheduling).
//!
//! When a contended lock is released and a waiter is woken, the releaser's cache holds the
//! critical section's data: the waiter should run on the releaser's worker. Load balance wins
//! when the two conflict: if that worker would end up more than `slack` threads above the
//! least-loaded worker, the waiter goes back to its own last worker when that is balanced, else to
//! the least-loaded worker. Threads on the lock-hot worker that do not want the lock may be pushed
//! away to lighter workers ([`LockHotPlacement::push_away`]).
//!
//! ```
//! use footprint_affinity::placement::lock_hot::{LockHotPlacement, LockHotReason};
//! let advisor = LockHotPlacement::default(); // slack 2
//! let a = advisor.place_waiter(1, Some(0), &[3, 2, 2]);
//! assert_eq!((a.worker, a.reason), (1, LockHotReason::LockHot));
//! let a = advisor.place_waiter(1, Some(0), &[1, 4, 2]);   // worker 1 is overloaded
//! assert_eq!((a.worker, a.reason), (0, LockHotReason::Unbalanced));
//! ```

/// Why a waiter was placed where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockHotReason {
    /// On the releaser's worker: the critical section's data is in its cache.
    LockHot,
    /// The releaser's worker was too loaded; load balance won.
    Unbalanced,
}

/// Where to run a woken waiter, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaiterPlacement {
    /// The worker to enqueue it on.
    pub worker: usize,
    /// Why.
    pub reason: LockHotReason,
}

/// The lock-hot placement advisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockHotPlacement {
    slack: usize,
}

impl Default for LockHotPlacement {
    fn default() -> Self {
        LockHotPlacement { slack: 2 }
    }
}

impl LockHotPlacement {
    /// An advisor that tolerates a worker holding up to `slack` more threads than the
    /// least-loaded one (at least 1: with 0 no placement could ever be balanced).
    pub fn new(slack: usize) -> LockHotPlacement {
        LockHotPlacement {
            slack: slack.max(1),
        }
    }

    /// The tolerated load difference.
    pub fn slack(&self) -> usize {
        self.slack
    }

    fn fits(&self, loads: &[usize], worker: usize, min: usize) -> bool {
        loads.get(worker).is_some_and(|&l| l < min + self.slack)
    }

    /// Where to enqueue a waiter woken by a releaser running on `releaser`. `home` is the
    /// waiter's last worker; `loads[w]` the number of ready or running threads on worker `w`.
    ///
    /// Guarantee (tested): the chosen worker's load plus one is at most `min(loads) + slack`, so
    /// a placement never widens the spread `max − min` beyond `max(spread, slack)`.
    ///
    /// # Panics
    /// If `loads` is empty.
    pub fn place_waiter(
        &self,
        releaser: usize,
        home: Option<usize>,
        loads: &[usize],
    ) -> WaiterPlacement {
        let (least, &min) = loads
            .iter()
            .enumerate()
            .min_by_key(|&(i, l)| (l, i))
            .expect("at least one worker");
        if self.fits(loads, releaser, min) {
            return WaiterPlacement {
                worker: releaser,
                reason: LockHotReason::LockHot,
            };
        }
        let worker = match home {
            Some(h) if self.fits(loads, h, min) => h,
            _ => least,
        };
        WaiterPlacement {
            worker,
            reason: LockHotReason::Unbalanced,
        }
    }

    /// Pushes threads that do not want the lock (`movable`, in the order they may go) off the
    /// lock-hot worker `hot`, each to the currently least-loaded worker, while `hot` carries more
    /// than one thread above it. Returns `(thread, destination)` moves; `loads` is updated.
    pub fn push_away<T: Copy>(
        &self,
        hot: usize,
        loads: &mut [usize],
        movable: &[T],
    ) -> Vec<(T, usize)> {
        let mut moves = Vec::new();
        for &t in movable {
            let Some((least, &min)) = loads
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != hot)
                .min_by_key(|&(i, l)| (l, i))
            else {
                break;
            };
            if loads[hot] <= min + 1 {
                break;
            }
            loads[hot] -= 1;
            loads[least] += 1;
            moves.push((t, least));
        }
        moves
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lock_hot_unless_unbalanced() {
        let a = LockHotPlacement::new(1);
        assert_eq!(a.place_waiter(0, Some(1), &[2, 2]).worker, 0);
        let p = a.place_waiter(0, Some(1), &[3, 2]);
        assert_eq!((p.worker, p.reason), (1, LockHotReason::Unbalanced));
        // Home also overloaded: the least-loaded worker.
        let p = a.place_waiter(0, Some(1), &[3, 3, 1]);
        assert_eq!(p.worker, 2);
        // Unknown releaser index: balance.
        assert_eq!(a.place_waiter(9, None, &[3, 1]).worker, 1);
        assert_eq!(LockHotPlacement::new(0).slack(), 1);
    }

    #[test]
    fn push_away_levels_the_hot_worker() {
        let a = LockHotPlacement::default();
        let mut loads = [6, 1, 2];
        let moves = a.push_away(0, &mut loads, &['a', 'b', 'c', 'd', 'e']);
        assert_eq!(moves, vec![('a', 1), ('b', 1), ('c', 2)]);
        assert_eq!(loads, [3, 3, 3]);
        let mut single = [5];
        assert!(a.push_away(0, &mut single, &[1, 2]).is_empty());
    }

    proptest! {
        #[test]
        fn placement_keeps_load_balanced(
            loads in proptest::collection::vec(0usize..20, 1..8),
            releaser in 0usize..8,
            home in proptest::option::of(0usize..8),
            slack in 1usize..4,
        ) {
            let a = LockHotPlacement::new(slack);
            let p = a.place_waiter(releaser, home, &loads);
            prop_assert!(p.worker < loads.len());
            let min = *loads.iter().min().unwrap();
            let max = *loads.iter().max().unwrap();
            let mut after = loads.clone();
            after[p.worker] += 1;
            let (amin, amax) = (*after.iter().min().unwrap(), *after.iter().max().unwrap());
            prop_assert!(amax - amin <= (max - min).max(slack));
            // Lock-hot whenever the releaser's worker is balanced enough.
            if releaser < loads.len() && loads[releaser] < min + slack {
                prop_assert_eq!(p, WaiterPlacement { worker: releaser, reason: LockHotReason::LockHot });
            } else {
                prop_assert_eq!(p.reason, LockHotReason::Unbalanced);
            }
        }

        #[test]
        fn push_away_never_unbalances(loads in proptest::collection::vec(0usize..20, 1..8), hot_index in 0usize..8, n in 0usize..30) {
            let hot = hot_index % loads.len();
            let a = LockHotPlacement::default();
            let mut after = loads.clone();
            let movable: Vec<usize> = (0..n).collect();
            let moves = a.push_away(hot, &mut after, &movable);
            prop_assert_eq!(after.iter().sum::<usize>(), loads.iter().sum::<usize>());
            prop_assert!(moves.len() <= n);
            prop_assert_eq!(loads[hot] - after[hot], moves.len());
            for (_, dest) in &moves { prop_assert!(*dest != hot); }
            // Spread never grows.
            let spread = |l: &[usize]| l.iter().max().unwrap() - l.iter().min().unwrap();
            prop_assert!(spread(&after) <= spread(&loads));
            // Stopped only when out of movable threads or hot is level with the others.
            if moves.len() < n && loads.len() > 1 {
                let min_other = after.iter().enumerate().filter(|&(i, _)| i != hot).map(|(_, &l)| l).min().unwrap();
                prop_assert!(after[hot] <= min_other + 1);
            }
        }
    }
}
