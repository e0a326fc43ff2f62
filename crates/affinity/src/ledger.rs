//! The footprint ledger: O(1) bookkeeping of how much of each thread's data a cache still holds.
//!
//! Every cache domain of one level (private L2s, or a shared L3) keeps a cumulative miss clock
//! `M_c`: the sum of the misses of every thread that ran on a CPU of the domain. A thread that stops
//! records its expected footprint `f` (from [`crate::reload::expected_footprint`]) and the clock
//! `M_c` at that moment; its valid lines at any later time are `f·(1 − 1/N)^(M_c(now) − M_c(then))`
//! (004 §3.3.1), one subtraction and one `exp`, whatever happened in between.
//!
//! The clocks are atomics (relaxed): workers that share a domain (an L3) advance the same clock
//! from their own OS threads. Nothing here spawns or blocks.
//!
//! ```
//! use footprint_affinity::ledger::{Footprint, Ledger};
//! use footprint_affinity::{CacheDomain, Topology};
//!
//! let l2 = |cpu| CacheDomain { level: 2, size_bytes: 1 << 20, line_size: 64, cpus: vec![cpu] };
//! let topo = Topology::from_parts(vec![0, 1], vec![l2(0), l2(1)], vec![]);
//! let ledger = Ledger::new(&topo, 2);
//! let d0 = ledger.domain_of_cpu(0).unwrap();
//!
//! let mut fp = Footprint::NONE;
//! fp.record_run(&ledger, d0, 4000);          // a cold run with 4000 misses on CPU 0's L2
//! let f = fp.lines();
//! assert!(f > 3500.0 && f < 4000.0);
//! assert_eq!(fp.valid_in(&ledger, Some(d0)), f);
//! ledger.advance(d0, 16384);                 // another thread misses one cache-full
//! let v = fp.valid_in(&ledger, Some(d0));
//! assert!((v / f - (-1.0f64).exp()).abs() < 1e-4);
//! assert_eq!(fp.valid_in(&ledger, ledger.domain_of_cpu(1)), 0.0); // nothing in CPU 1's L2
//! ```

use crate::reload::{CacheModel, ReloadTable, StoppedFootprint};
use crate::topology::{CacheDomain, Topology};
use std::sync::atomic::{AtomicU64, Ordering};

/// Index of a cache domain in a [`Ledger`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DomainId(u32);

impl DomainId {
    /// The index (0-based, in the ledger's domain order).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A miss clock on its own cache line (workers of different domains never share a line).
#[derive(Debug, Default)]
#[repr(align(128))]
struct PaddedClock(AtomicU64);

#[derive(Debug)]
struct DomainState {
    model: CacheModel,
    cpus: Vec<usize>,
    clock: PaddedClock,
}

/// Miss clocks for the cache domains of one level.
#[derive(Debug)]
pub struct Ledger {
    level: u8,
    domains: Vec<DomainState>,
    /// `cpu_domain[cpu]` is the domain index of `cpu`, `u32::MAX` for none.
    cpu_domain: Vec<u32>,
    table: ReloadTable,
}

const NO_DOMAIN: u32 = u32::MAX;

impl Ledger {
    /// One clock per cache domain of `level` in `topology`. A topology without caches at that
    /// level gives an empty ledger: every CPU maps to no domain and footprints stay unknown, so
    /// the reload-transient policy falls back to virtual time.
    pub fn new(topology: &Topology, level: u8) -> Ledger {
        let domains: Vec<CacheDomain> = topology
            .caches()
            .iter()
            .filter(|c| c.level == level)
            .cloned()
            .collect();
        Ledger::from_domains(level, domains)
    }

    /// A ledger for the last-level cache of `topology` (the level whose misses a PMU's "LLC
    /// misses" event counts); empty when the topology knows no caches.
    pub fn for_last_level(topology: &Topology) -> Ledger {
        Ledger::new(topology, topology.last_level().unwrap_or(0))
    }

    /// A ledger over the given domains (all taken to be of `level`). A CPU listed by two domains
    /// belongs to the first.
    pub fn from_domains(level: u8, domains: Vec<CacheDomain>) -> Ledger {
        let max_cpu = domains
            .iter()
            .flat_map(|d| d.cpus.iter().copied())
            .max()
            .map_or(0, |m| m + 1);
        let mut cpu_domain = vec![NO_DOMAIN; max_cpu];
        let states: Vec<DomainState> = domains
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                for &cpu in &d.cpus {
                    if cpu_domain[cpu] == NO_DOMAIN {
                        cpu_domain[cpu] = i as u32;
                    }
                }
                DomainState {
                    model: CacheModel::new(d.lines()),
                    cpus: d.cpus,
                    clock: PaddedClock::default(),
                }
            })
            .collect();
        Ledger {
            level,
            domains: states,
            cpu_domain,
            table: ReloadTable::new(),
        }
    }

    /// The reload-transient table shared by every domain.
    pub fn table(&self) -> &ReloadTable {
        &self.table
    }

    /// The cache level this ledger models.
    pub fn level(&self) -> u8 {
        self.level
    }

    /// Number of domains.
    pub fn len(&self) -> usize {
        self.domains.len()
    }

    /// True when the ledger has no domain (no cache information).
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty()
    }

    /// Every domain id.
    pub fn domains(&self) -> impl Iterator<Item = DomainId> + '_ {
        (0..self.domains.len() as u32).map(DomainId)
    }

    /// The domain holding `cpu`, if any.
    pub fn domain_of_cpu(&self, cpu: usize) -> Option<DomainId> {
        match self.cpu_domain.get(cpu) {
            Some(&d) if d != NO_DOMAIN => Some(DomainId(d)),
            _ => None,
        }
    }

    /// The CPUs of a domain.
    pub fn cpus(&self, domain: DomainId) -> &[usize] {
        &self.domains[domain.index()].cpus
    }

    /// The cache model (line count) of a domain.
    #[inline]
    pub fn model(&self, domain: DomainId) -> &CacheModel {
        &self.domains[domain.index()].model
    }

    /// The domain's cumulative miss clock `M_c`.
    #[inline]
    pub fn clock(&self, domain: DomainId) -> u64 {
        self.domains[domain.index()].clock.0.load(Ordering::Relaxed)
    }

    /// Adds `misses` to the domain's clock and returns the new value.
    #[inline]
    pub fn advance(&self, domain: DomainId, misses: u64) -> u64 {
        self.domains[domain.index()]
            .clock
            .0
            .fetch_add(misses, Ordering::Relaxed)
            .wrapping_add(misses)
    }
}

/// A thread's footprint in one cache domain: `(f, domain, M_c at stop)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Footprint {
    lines: f64,
    domain: u32,
    clock_at_stop: u64,
    stopped: StoppedFootprint,
}

impl Default for Footprint {
    fn default() -> Self {
        Footprint::NONE
    }
}

impl Footprint {
    /// No footprint anywhere (a thread that never ran, or ran without miss counts).
    pub const NONE: Footprint = Footprint {
        lines: 0.0,
        domain: NO_DOMAIN,
        clock_at_stop: 0,
        stopped: StoppedFootprint {
            occupancy: 0.0,
            neg_log: 0.0,
        },
    };

    /// The expected footprint `f` at the last stop, in lines.
    pub fn lines(&self) -> f64 {
        self.lines
    }

    /// The domain it was left in.
    pub fn domain(&self) -> Option<DomainId> {
        (self.domain != NO_DOMAIN).then_some(DomainId(self.domain))
    }

    /// The domain clock when it stopped.
    pub fn clock_at_stop(&self) -> u64 {
        self.clock_at_stop
    }

    /// Misses on the domain since the thread stopped there (`None` when `domain` is not where
    /// the footprint is).
    #[inline]
    pub fn misses_since(&self, ledger: &Ledger, domain: Option<DomainId>) -> Option<u64> {
        match domain {
            Some(d) if d.0 == self.domain => Some(ledger.clock(d).wrapping_sub(self.clock_at_stop)),
            _ => None,
        }
    }

    /// The expected valid lines now in `domain`: `f·(1 − 1/N)^(M_c(now) − M_c(then))` if that is
    /// where the footprint was left, 0 elsewhere. O(1).
    #[inline]
    pub fn valid_in(&self, ledger: &Ledger, domain: Option<DomainId>) -> f64 {
        match (domain, self.misses_since(ledger, domain)) {
            (Some(d), Some(m)) => self.lines * ledger.model(d).survival(m),
            _ => 0.0,
        }
    }

    /// Records a run of `misses` misses on `domain`: the run started from the lines still valid
    /// there ([`Footprint::valid_in`] before the run's misses are counted), ends with footprint
    /// `F(v, misses)`, and advances the domain's clock by `misses`.
    pub fn record_run(&mut self, ledger: &Ledger, domain: DomainId, misses: u64) {
        let valid = self.valid_in(ledger, Some(domain));
        let model = ledger.model(domain);
        let lines = model.lines() as f64;
        // F(v, n) = v + (N − v)(1 − q^n).
        let footprint = (valid + (lines - valid) * (1.0 - model.survival(misses))).min(lines);
        let clock = ledger.advance(domain, misses);
        *self = Footprint {
            lines: footprint,
            domain: domain.0,
            clock_at_stop: clock,
            stopped: model.stopped(&ledger.table, footprint),
        };
    }

    /// The expected reload transient of this footprint on `domain`'s cache now, in misses:
    /// `RT(f, V(f, m))` with `m` the misses there since the stop if the footprint is there,
    /// `RT(f, 0)` otherwise (rebuilding from nothing). O(1): one `exp` and one table lookup.
    #[inline]
    pub fn reload_transient_in(&self, ledger: &Ledger, domain: DomainId) -> f64 {
        let model = ledger.model(domain);
        match self.misses_since(ledger, Some(domain)) {
            Some(m) => model.reload_from(&ledger.table, &self.stopped, m),
            None => ledger.table.reload_transient_in(model, self.lines, 0.0),
        }
    }

    /// Forgets the footprint (a run whose misses were not counted).
    pub fn clear(&mut self) {
        *self = Footprint::NONE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reload::{expected_footprint, expected_remaining};
    use proptest::prelude::*;

    fn two_level_topology() -> Topology {
        let l2 = |cpu| CacheDomain {
            level: 2,
            size_bytes: 64 * 64,
            line_size: 64,
            cpus: vec![cpu],
        };
        let l3 = CacheDomain {
            level: 3,
            size_bytes: 64 * 1024,
            line_size: 64,
            cpus: vec![0, 1],
        };
        Topology::from_parts(vec![0, 1], vec![l2(0), l2(1), l3], vec![])
    }

    #[test]
    fn private_and_shared_levels() {
        let topo = two_level_topology();
        let l2 = Ledger::new(&topo, 2);
        let l3 = Ledger::new(&topo, 3);
        assert_eq!(l2.len(), 2);
        assert_eq!(l3.len(), 1);
        assert_ne!(l2.domain_of_cpu(0), l2.domain_of_cpu(1));
        assert_eq!(l3.domain_of_cpu(0), l3.domain_of_cpu(1));
        assert_eq!(l2.model(l2.domain_of_cpu(0).unwrap()).lines(), 64);
        assert_eq!(l3.model(l3.domain_of_cpu(0).unwrap()).lines(), 1024);
        assert_eq!(Ledger::for_last_level(&topo).level(), 3);
        assert!(Ledger::for_last_level(&Topology::flat(vec![0, 1])).is_empty());
        assert_eq!(l2.domain_of_cpu(7), None);

        // Thread A runs on CPU 0 (L2 domain 0), thread B on CPU 1: on the shared L3, B's misses
        // displace A's lines; on the private L2s they do not.
        let (a2, b2) = (l2.domain_of_cpu(0).unwrap(), l2.domain_of_cpu(1).unwrap());
        let l3d = l3.domain_of_cpu(0).unwrap();
        let (mut fa2, mut fa3) = (Footprint::NONE, Footprint::NONE);
        fa2.record_run(&l2, a2, 20);
        fa3.record_run(&l3, l3d, 20);
        let mut fb2 = Footprint::NONE;
        let mut fb3 = Footprint::NONE;
        fb2.record_run(&l2, b2, 500);
        fb3.record_run(&l3, l3d, 500);
        assert_eq!(fa2.valid_in(&l2, Some(a2)), fa2.lines());
        let expect = expected_remaining(1024, fa3.lines(), 500.0);
        assert!((fa3.valid_in(&l3, Some(l3d)) - expect).abs() < 1e-9);
    }

    #[test]
    fn rerun_starts_from_surviving_lines() {
        let ledger = Ledger::from_domains(
            2,
            vec![CacheDomain {
                level: 2,
                size_bytes: 64 * 64,
                line_size: 64,
                cpus: vec![0],
            }],
        );
        let d = ledger.domain_of_cpu(0).unwrap();
        let mut fp = Footprint::NONE;
        fp.record_run(&ledger, d, 30);
        let f1 = fp.lines();
        assert!((f1 - expected_footprint(64, 0.0, 30.0)).abs() < 1e-9);
        ledger.advance(d, 10);
        let v = expected_remaining(64, f1, 10.0);
        fp.record_run(&ledger, d, 5);
        assert!((fp.lines() - expected_footprint(64, v, 5.0)).abs() < 1e-9);
        assert_eq!(fp.clock_at_stop(), 45);
        assert_eq!(fp.misses_since(&ledger, Some(d)), Some(0));
        fp.clear();
        assert_eq!(fp.domain(), None);
        assert_eq!(fp.valid_in(&ledger, Some(d)), 0.0);
    }

    proptest! {
        /// Whatever the interleaving of runs, valid lines now equal the model applied to the
        /// misses that happened since, and never exceed the footprint or N.
        #[test]
        fn valid_lines_follow_the_clock(runs in proptest::collection::vec((0usize..3, 0u64..5000), 1..40)) {
            let topo = two_level_topology();
            let ledger = Ledger::new(&topo, 3);
            let d = ledger.domain_of_cpu(0).unwrap();
            let mut fps = [Footprint::NONE; 3];
            let mut since = [0u64; 3];
            for (thread, misses) in runs {
                fps[thread].record_run(&ledger, d, misses);
                since[thread] = 0;
                for (other, s) in since.iter_mut().enumerate() {
                    if other != thread { *s += misses; }
                }
                for t in 0..3 {
                    let v = fps[t].valid_in(&ledger, Some(d));
                    prop_assert!(v <= fps[t].lines() + 1e-9 && v <= 1024.0);
                    if fps[t].domain().is_some() {
                        let expect = expected_remaining(1024, fps[t].lines(), since[t] as f64);
                        prop_assert!((v - expect).abs() <= 1e-9 * (1.0 + expect));
                    }
                }
            }
        }
    }
}
