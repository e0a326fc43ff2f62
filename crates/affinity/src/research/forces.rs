//! Attracting and repulsing threads (004 §5.3; an advisor the runtime does not consult).
//!
//! Synchronisation partners that share data attract each other: each time thread A on worker X
//! synchronises with B, B's pull towards X grows by the misses A spent on their shared data.
//! Compute-heavy partners that rarely synchronise repulse: when two of them share a worker, each
//! one's pull towards that worker shrinks, so an idle worker may catch one. Pulls age
//! ([`PartnerForces::age`]) and load balance limits every suggestion.
//!
//! ```
//! use footprint_affinity::research::forces::PartnerForces;
//! let mut forces = PartnerForces::new(2);
//! forces.attract(1, 0, 5000);                         // thread 1's partner ran on worker 0
//! assert_eq!(forces.advise(1, 1, &[2, 2]), Some(0));  // so thread 1 should move there
//! ```

use std::collections::HashMap;

/// Per-thread pulls towards each worker, from synchronisation events.
#[derive(Clone, Debug)]
pub struct PartnerForces {
    workers: usize,
    pulls: HashMap<u64, Vec<f64>>,
    threshold: f64,
    slack: usize,
}

impl PartnerForces {
    /// For `workers` workers, moving a thread only for a pull above 1000 (misses) and only to a
    /// worker at most one thread busier than its current one.
    pub fn new(workers: usize) -> PartnerForces {
        PartnerForces::with_limits(workers, 1000.0, 1)
    }

    /// With the pull needed to suggest a move and the load slack a move may add.
    pub fn with_limits(workers: usize, threshold: f64, slack: usize) -> PartnerForces {
        PartnerForces {
            workers,
            pulls: HashMap::new(),
            threshold: if threshold.is_nan() {
                0.0
            } else {
                threshold.abs()
            },
            slack,
        }
    }

    fn pulls_of(&mut self, thread: u64) -> &mut Vec<f64> {
        let workers = self.workers;
        self.pulls
            .entry(thread)
            .or_insert_with(|| vec![0.0; workers])
    }

    /// Gravitation: `thread`'s partner, running on `partner_worker`, synchronised with it after
    /// `shared_misses` misses on the data they share. Out-of-range workers are ignored.
    pub fn attract(&mut self, thread: u64, partner_worker: usize, shared_misses: u64) {
        if partner_worker < self.workers {
            self.pulls_of(thread)[partner_worker] += shared_misses as f64;
        }
    }

    /// Repulsion: compute-heavy `a` and `b` (many misses, long between blocking) share `worker`;
    /// both lose `strength` of pull towards it.
    pub fn repulse(&mut self, a: u64, b: u64, worker: usize, strength: f64) {
        if worker < self.workers && strength.is_finite() {
            let s = strength.abs();
            self.pulls_of(a)[worker] -= s;
            self.pulls_of(b)[worker] -= s;
        }
    }

    /// The pull of `thread` towards `worker`.
    pub fn pull(&self, thread: u64, worker: usize) -> f64 {
        self.pulls
            .get(&thread)
            .and_then(|p| p.get(worker).copied())
            .unwrap_or(0.0)
    }

    /// Multiplies every pull by `factor` (in `[0, 1]`; e.g. 0.5 per balancing period) and drops
    /// threads whose pulls have all faded below 1.
    pub fn age(&mut self, factor: f64) {
        let f = if factor.is_nan() {
            0.0
        } else {
            factor.clamp(0.0, 1.0)
        };
        self.pulls.retain(|_, p| {
            p.iter_mut().for_each(|x| *x *= f);
            p.iter().any(|x| x.abs() >= 1.0)
        });
    }

    /// Forgets a thread (it finished).
    pub fn remove(&mut self, thread: u64) {
        self.pulls.remove(&thread);
    }

    /// Where `thread`, now on `current`, should move, if anywhere: the worker with the strongest
    /// pull above the threshold, if its load is at most `slack` above the current worker's;
    /// otherwise, if the current worker repels it beyond the threshold, the least-loaded other
    /// worker. `None`: stay.
    pub fn advise(&self, thread: u64, current: usize, loads: &[usize]) -> Option<usize> {
        let pulls = self.pulls.get(&thread)?;
        let n = self.workers.min(loads.len());
        let here = loads.get(current).copied()?;
        let best = (0..n)
            .filter(|&w| w != current && pulls[w] > self.threshold && pulls[w] > pulls[current])
            .filter(|&w| loads[w] <= here + self.slack)
            .max_by(|&a, &b| pulls[a].total_cmp(&pulls[b]).then(b.cmp(&a)));
        if best.is_some() {
            return best;
        }
        if pulls[current] < -self.threshold {
            return (0..n)
                .filter(|&w| w != current && loads[w] <= here)
                .min_by_key(|&w| (loads[w], w));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn partners_attract_and_heavy_threads_spread() {
        let mut f = PartnerForces::with_limits(3, 100.0, 1);
        f.attract(7, 2, 50);
        assert_eq!(f.advise(7, 0, &[1, 1, 1]), None, "below the threshold");
        f.attract(7, 2, 80);
        assert_eq!(f.advise(7, 0, &[1, 1, 1]), Some(2));
        assert_eq!(f.advise(7, 0, &[1, 1, 3]), None, "load balance wins");
        assert_eq!(f.advise(7, 2, &[1, 1, 1]), None, "already there");
        // Two compute-heavy threads on worker 1 push each other off it.
        f.repulse(8, 9, 1, 500.0);
        assert_eq!(f.advise(8, 1, &[2, 3, 0]), Some(2));
        assert_eq!(f.advise(9, 1, &[4, 3, 5]), None, "no lighter worker");
        f.age(0.5);
        assert_eq!(f.pull(7, 2), 65.0);
        f.age(0.0);
        assert_eq!(f.pull(7, 2), 0.0);
        f.attract(1, 99, 1_000_000);
        assert_eq!(f.pull(1, 99), 0.0);
        f.remove(1);
    }

    proptest! {
        #[test]
        fn advice_respects_load(events in proptest::collection::vec((0u64..4, 0usize..4, 0u64..3000, any::<bool>()), 0..40),
                                loads in proptest::collection::vec(0usize..10, 4), current in 0usize..4) {
            let mut f = PartnerForces::new(4);
            for (t, w, m, attract) in events {
                if attract { f.attract(t, w, m) } else { f.repulse(t, (t + 1) % 4, w, m as f64) }
            }
            for t in 0..4 {
                if let Some(w) = f.advise(t, current, &loads) {
                    prop_assert!(w < 4 && w != current);
                    prop_assert!(loads[w] <= loads[current] + 1);
                    prop_assert!(f.pull(t, w) > 1000.0 || f.pull(t, current) < -1000.0);
                }
            }
        }
    }
}
