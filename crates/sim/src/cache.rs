//! Cache models: set-associative LRU (the real line size and associativity) and the
//! random-replacement fully associative cache that 004's Markov model assumes.
//!
//! Both take **line addresses** (byte address ÷ line size). Both support *set sampling*: with
//! `sample = S` (a power of two) only the lines whose address is a multiple of `S` are
//! simulated; the cache keeps `1/S` of its capacity for them. For LRU this is exact per sampled
//! set (every sampled set sees its whole reference stream), the standard set-sampling estimate of
//! miss counts; for the random cache it keeps the ratio of footprint to capacity. Callers check
//! [`Cache::sampled`] before [`Cache::access`] and scale counts by `S`.
//!
//! ```
//! use footprint_sim::cache::Cache;
//!
//! // 2 sets of 2 ways: lines 0, 2, 4 map to set 0.
//! let mut c = Cache::lru(4, 2, 1);
//! assert!(!c.access(0) && !c.access(2)); // cold misses
//! assert!(c.access(0));                  // hit: 0 is now most recent
//! assert!(!c.access(4));                 // evicts 2, the least recent
//! assert!(c.access(0) && !c.access(2));
//! assert_eq!(c.stats().evictions, 2);
//! ```

use crate::rng::SplitMix64;
use std::collections::HashMap;

const EMPTY: u64 = u64::MAX;

/// Hit, miss and eviction counts of one cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// References that hit.
    pub hits: u64,
    /// References that missed.
    pub misses: u64,
    /// Valid lines replaced.
    pub evictions: u64,
}

/// Set-associative with LRU replacement; each set is kept most-recent first.
#[derive(Clone, Debug)]
pub struct LruCache {
    set_mask: u64,
    ways: usize,
    sample_shift: u32,
    /// `sampled sets × ways` tags, `EMPTY` for none.
    tags: Vec<u64>,
    stats: CacheStats,
}

/// Fully associative with random replacement (the victim is uniform among all lines; empty
/// slots fill first).
#[derive(Clone, Debug)]
pub struct RandomCache {
    slots: Vec<u64>,
    filled: usize,
    index: HashMap<u64, usize>,
    rng: SplitMix64,
    stats: CacheStats,
}

/// One simulated cache.
#[derive(Clone, Debug)]
pub enum Cache {
    /// Set-associative LRU.
    Lru(LruCache),
    /// Fully associative, random replacement.
    Random(RandomCache),
}

impl Cache {
    /// An LRU cache of `lines` lines in sets of `ways` (both powers of two after division:
    /// `lines / ways` sets), simulating one line in `sample`.
    ///
    /// # Panics
    /// If `ways` is 0, the set count is not a power of two, or `sample` is not a power of two
    /// dividing the set count ([`crate::machine::Machine::validate`] and the simulator's
    /// configuration check rule these out with typed errors first).
    pub fn lru(lines: u64, ways: u64, sample: u64) -> Cache {
        assert!(
            ways > 0 && lines.is_multiple_of(ways),
            "lines are whole sets"
        );
        let sets = lines / ways;
        assert!(sets.is_power_of_two(), "power-of-two sets");
        assert!(
            sample.is_power_of_two() && sample <= sets,
            "sample divides the set count"
        );
        let sampled_sets = sets / sample;
        Cache::Lru(LruCache {
            set_mask: sets - 1,
            ways: ways as usize,
            sample_shift: sample.trailing_zeros(),
            tags: vec![EMPTY; (sampled_sets * ways) as usize],
            stats: CacheStats::default(),
        })
    }

    /// A random-replacement fully associative cache of `lines` lines simulating one line in
    /// `sample` (so `lines / sample` slots), with its own generator seeded by `seed`.
    pub fn random(lines: u64, sample: u64, seed: u64) -> Cache {
        let slots = (lines / sample.max(1)).max(1) as usize;
        Cache::Random(RandomCache {
            slots: vec![EMPTY; slots],
            filled: 0,
            index: HashMap::with_capacity(slots),
            rng: SplitMix64::new(seed),
            stats: CacheStats::default(),
        })
    }

    /// References `line`; true on a hit. A miss brings the line in, evicting per the policy.
    #[inline]
    pub fn access(&mut self, line: u64) -> bool {
        match self {
            Cache::Lru(c) => c.access(line),
            Cache::Random(c) => c.access(line),
        }
    }

    /// Like [`Cache::access`], but says which valid line a miss evicted: `Ok(())` on a hit,
    /// `Err(victim)` on a miss.
    pub fn access_evicting(&mut self, line: u64) -> Result<(), Option<u64>> {
        let before = self.stats().evictions;
        let victim = match self {
            Cache::Lru(c) => {
                let set = c.set_of(line);
                (!set.contains(&line)).then(|| set[c.ways - 1])
            }
            Cache::Random(_) => None,
        };
        if let Cache::Random(c) = self {
            if c.index.contains_key(&line) {
                c.stats.hits += 1;
                return Ok(());
            }
            return Err(c.miss(line));
        }
        if self.access(line) {
            return Ok(());
        }
        let evicted = self.stats().evictions > before;
        Err(victim.filter(|_| evicted))
    }

    /// Whether `line` is one of the simulated (sampled) lines.
    #[inline]
    pub fn sampled(line: u64, sample: u64) -> bool {
        line & (sample - 1) == 0
    }

    /// Counts so far.
    pub fn stats(&self) -> CacheStats {
        match self {
            Cache::Lru(c) => c.stats,
            Cache::Random(c) => c.stats,
        }
    }

    /// Whether `line` is present (no state change).
    pub fn contains(&self, line: u64) -> bool {
        match self {
            Cache::Lru(c) => c.set_of(line).contains(&line),
            Cache::Random(c) => c.index.contains_key(&line),
        }
    }
}

impl LruCache {
    #[inline]
    fn base(&self, line: u64) -> usize {
        (((line & self.set_mask) >> self.sample_shift) as usize) * self.ways
    }

    fn set_of(&self, line: u64) -> &[u64] {
        let b = self.base(line);
        &self.tags[b..b + self.ways]
    }

    #[inline]
    fn access(&mut self, line: u64) -> bool {
        let b = self.base(line);
        let set = &mut self.tags[b..b + self.ways];
        match set.iter().position(|&t| t == line) {
            Some(i) => {
                set[..=i].rotate_right(1);
                self.stats.hits += 1;
                true
            }
            None => {
                if set[self.ways - 1] != EMPTY {
                    self.stats.evictions += 1;
                }
                set.rotate_right(1);
                set[0] = line;
                self.stats.misses += 1;
                false
            }
        }
    }
}

impl RandomCache {
    #[inline]
    fn access(&mut self, line: u64) -> bool {
        if self.index.contains_key(&line) {
            self.stats.hits += 1;
            return true;
        }
        self.miss(line);
        false
    }

    /// Brings in `line` (not present); returns the line it evicted.
    fn miss(&mut self, line: u64) -> Option<u64> {
        self.stats.misses += 1;
        let (slot, victim) = if self.filled < self.slots.len() {
            self.filled += 1;
            (self.filled - 1, None)
        } else {
            let s = self.rng.below(self.slots.len() as u64) as usize;
            self.index.remove(&self.slots[s]);
            self.stats.evictions += 1;
            (s, Some(self.slots[s]))
        };
        self.slots[slot] = line;
        self.index.insert(line, slot);
        victim
    }

    /// The lines present, in slot order.
    pub fn lines(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots[..self.filled].iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_order_within_a_set() {
        // One set of 4 ways.
        let mut c = Cache::lru(4, 4, 1);
        for l in [10, 11, 12, 13] {
            assert!(!c.access(l));
        }
        assert!(c.access(10)); // order now 10, 13, 12, 11
        assert!(!c.access(14)); // evicts 11
        assert!(!c.contains(11));
        assert!(c.contains(10) && c.contains(12) && c.contains(13));
        assert!(!c.access(15)); // evicts 12
        assert!(!c.contains(12));
        assert_eq!(
            c.stats(),
            CacheStats {
                hits: 1,
                misses: 6,
                evictions: 2
            }
        );
    }

    #[test]
    fn associativity_separates_sets() {
        // 4 sets × 2 ways. Lines 0, 4, 8 share set 0; line 1 is in set 1.
        let mut c = Cache::lru(8, 2, 1);
        for l in [0, 4, 1] {
            assert!(!c.access(l));
        }
        assert!(!c.access(8)); // set 0 full: evicts 0
        assert!(c.access(1), "set 1 untouched");
        assert!(c.access(4) && !c.contains(0));
        // A cyclic sweep of 3 lines over a 2-way set misses every time (LRU's worst case).
        let mut c = Cache::lru(8, 2, 1);
        let mut misses = 0;
        for _ in 0..5 {
            for l in [0, 4, 8] {
                misses += u32::from(!c.access(l));
            }
        }
        assert_eq!(misses, 15);
        assert_eq!(c.stats().evictions, 13);
        // The same sweep fits a direct-mapped cache of 16 lines: 3 cold misses.
        let mut c = Cache::lru(16, 1, 1);
        for _ in 0..5 {
            for l in [0, 4, 8] {
                c.access(l);
            }
        }
        assert_eq!(c.stats().misses, 3);
    }

    #[test]
    fn set_sampling_keeps_sampled_sets_exact() {
        // 16 sets × 2 ways; sample 1 in 4: only lines ≡ 0 mod 4 are simulated, in 4 sets.
        let mut full = Cache::lru(32, 2, 1);
        let mut sampled = Cache::lru(32, 2, 4);
        let mut rng = SplitMix64::new(3);
        for _ in 0..2000 {
            let l = rng.below(128);
            let hit = full.access(l);
            if Cache::sampled(l, 4) {
                assert_eq!(sampled.access(l), hit, "line {l}");
            }
        }
    }

    #[test]
    fn random_cache_fills_then_evicts_uniformly() {
        let mut c = Cache::random(8, 1, 9);
        for l in 0..8 {
            assert!(!c.access(l));
        }
        assert_eq!(c.stats().evictions, 0);
        assert!((0..8).all(|l| c.contains(l)));
        // Each new line evicts one of the 8: after many, every old line was hit by ~1/8 of them.
        let mut evicted = [0u32; 8];
        for l in 100..8100u64 {
            let Cache::Random(r) = &c else { unreachable!() };
            let before: Vec<u64> = r.lines().collect();
            c.access(l);
            let Cache::Random(r) = &c else { unreachable!() };
            let slot = before
                .iter()
                .zip(r.lines())
                .position(|(a, b)| *a != b)
                .unwrap();
            evicted[slot] += 1;
        }
        assert!(
            evicted.iter().all(|&n| (850..1150).contains(&n)),
            "{evicted:?}"
        );
        assert_eq!(c.stats().evictions, 8000);
        assert!(c.access(8099), "the last line is present");
    }

    #[test]
    fn random_cache_sampling_shrinks_capacity() {
        let mut c = Cache::random(64, 4, 1);
        let Cache::Random(r) = &c else { unreachable!() };
        assert_eq!(r.slots.len(), 16);
        for l in 0..16 {
            c.access(l * 4);
        }
        assert_eq!(c.stats().evictions, 0);
        c.access(1000);
        assert_eq!(c.stats().evictions, 1);
    }
}
