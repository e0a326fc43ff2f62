//! The model check: 004's Markov model (`footprint_affinity::reload`) against trace-driven
//! simulation of the caches in [`crate::cache`], as Thiebaut and Stone validated theirs.
//!
//! Two experiments per point, each averaged over seeds, on a cache of `N` lines that starts full
//! of other threads' lines:
//! - **footprint**: a thread with `v` lines in the cache misses `n` times on new lines; its
//!   lines in the cache afterwards, against `expected_footprint(N, v, n)`;
//! - **reload transient**: a thread misses `n` times from nothing (footprint `f`), other threads
//!   then miss `m` times, then the thread references the lines it had until all are back; the
//!   misses that took, against `reload_transient(N, F, V(F, m))` with the model's `F`.
//!
//! On the random-replacement fully associative cache (the model's assumption) the means must
//! agree within [`FOOTPRINT_TOLERANCE`] and [`RELOAD_TOLERANCE`]; on a set-associative LRU cache
//! of the same size the deviation is reported.
//!
//! ```
//! use footprint_sim::model_check::{check_model, ModelCheckParams};
//! let check = check_model(&ModelCheckParams { lines: 256, seeds: 8, ..ModelCheckParams::default() });
//! assert!(!check.random.is_empty() && !check.lru.is_empty());
//! println!("{}", check.table());
//! ```

use crate::cache::Cache;
use crate::rng::SplitMix64;
use footprint_affinity::reload::{expected_footprint, expected_remaining, reload_transient};
use std::collections::HashSet;
use std::fmt::Write;

/// Largest relative error of the mean simulated footprint.
pub const FOOTPRINT_TOLERANCE: f64 = 0.02;
/// Largest relative error of the mean simulated reload transient.
pub const RELOAD_TOLERANCE: f64 = 0.05;

/// Sizes of the check.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCheckParams {
    /// Cache lines `N`.
    pub lines: u64,
    /// Ways of the LRU cache.
    pub lru_ways: u64,
    /// Seeds per point.
    pub seeds: u64,
    /// First seed.
    pub seed: u64,
}

impl Default for ModelCheckParams {
    fn default() -> Self {
        ModelCheckParams {
            lines: 1024,
            lru_ways: 16,
            seeds: 64,
            seed: 1,
        }
    }
}

/// Which quantity a point compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// Expected footprint after `n` misses from `v` valid lines.
    Footprint {
        /// Valid lines at the start.
        valid: u64,
        /// Misses.
        misses: u64,
    },
    /// Reload transient after building from `n` misses and `m` misses of others.
    Reload {
        /// Misses that built the footprint.
        build: u64,
        /// Misses of other threads meanwhile.
        others: u64,
    },
}

/// One compared point.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckPoint {
    /// What was compared.
    pub quantity: Quantity,
    /// Mean over seeds of the simulation.
    pub simulated: f64,
    /// The model's value.
    pub model: f64,
}

impl CheckPoint {
    /// `(simulated − model) / model`.
    pub fn relative_error(&self) -> f64 {
        (self.simulated - self.model) / self.model.max(1e-9)
    }

    /// The tolerance of its quantity.
    pub fn tolerance(&self) -> f64 {
        match self.quantity {
            Quantity::Footprint { .. } => FOOTPRINT_TOLERANCE,
            Quantity::Reload { .. } => RELOAD_TOLERANCE,
        }
    }
}

/// The check's results.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCheck {
    /// The parameters.
    pub params: ModelCheckParams,
    /// Points on the random-replacement cache (held to the tolerances).
    pub random: Vec<CheckPoint>,
    /// The same points on the LRU cache (reported).
    pub lru: Vec<CheckPoint>,
}

impl ModelCheck {
    /// True when every random-cache point is within its tolerance.
    pub fn passed(&self) -> bool {
        self.random
            .iter()
            .all(|p| p.relative_error().abs() <= p.tolerance())
    }

    /// A text table of every point.
    pub fn table(&self) -> String {
        let mut s = format!(
            "model check: N = {} lines, {} seeds per point, LRU {}-way\n\
             {:<10} {:<26} {:>10} {:>10} {:>8} {:>6} {:>10} {:>8}\n",
            self.params.lines,
            self.params.seeds,
            self.params.lru_ways,
            "quantity",
            "point",
            "model",
            "random",
            "error",
            "ok",
            "LRU",
            "LRU dev"
        );
        for (r, l) in self.random.iter().zip(&self.lru) {
            let (name, point) = match r.quantity {
                Quantity::Footprint { valid, misses } => {
                    ("footprint", format!("v={valid} n={misses}"))
                }
                Quantity::Reload { build, others } => {
                    ("reload", format!("build n={build} others m={others}"))
                }
            };
            let ok = r.relative_error().abs() <= r.tolerance();
            let _ = writeln!(
                s,
                "{name:<10} {point:<26} {:>10.1} {:>10.1} {:>7.2}% {:>6} {:>10.1} {:>7.1}%",
                r.model,
                r.simulated,
                100.0 * r.relative_error(),
                if ok { "yes" } else { "NO" },
                l.simulated,
                100.0 * l.relative_error()
            );
        }
        s
    }
}

/// Runs the check.
pub fn check_model(p: &ModelCheckParams) -> ModelCheck {
    let n = p.lines;
    let points = [
        Quantity::Footprint {
            valid: 0,
            misses: n / 4,
        },
        Quantity::Footprint {
            valid: 0,
            misses: n,
        },
        Quantity::Footprint {
            valid: n / 4,
            misses: n / 2,
        },
        Quantity::Footprint {
            valid: n / 2,
            misses: 3 * n,
        },
        Quantity::Reload {
            build: n / 2,
            others: n / 4,
        },
        Quantity::Reload {
            build: n / 2,
            others: n,
        },
        Quantity::Reload {
            build: n / 4,
            others: 2 * n,
        },
        Quantity::Reload {
            build: n,
            others: n / 2,
        },
    ];
    let run = |lru: bool| -> Vec<CheckPoint> {
        points
            .iter()
            .map(|&q| {
                let total: f64 = (0..p.seeds)
                    .map(|s| one_run(p, lru, q, p.seed.wrapping_add(s)))
                    .sum();
                CheckPoint {
                    quantity: q,
                    simulated: total / p.seeds.max(1) as f64,
                    model: model_value(n, q),
                }
            })
            .collect()
    };
    ModelCheck {
        params: p.clone(),
        random: run(false),
        lru: run(true),
    }
}

fn model_value(n: u64, q: Quantity) -> f64 {
    match q {
        Quantity::Footprint { valid, misses } => expected_footprint(n, valid as f64, misses as f64),
        Quantity::Reload { build, others } => {
            let f = expected_footprint(n, 0.0, build as f64);
            let v = expected_remaining(n, f, others as f64);
            reload_transient(n, f, v)
        }
    }
}

/// A stream of fresh line addresses: random (so LRU sets are uniform), tagged by `owner` in the
/// top bits so streams never collide.
struct Fresh {
    rng: SplitMix64,
    owner: u64,
}

impl Fresh {
    fn next(&mut self) -> u64 {
        (self.owner << 48) | (self.rng.next_u64() & ((1 << 48) - 1))
    }
}

/// One seeded run of one point; returns the simulated quantity.
fn one_run(p: &ModelCheckParams, lru: bool, q: Quantity, seed: u64) -> f64 {
    let n = p.lines;
    let mut cache = if lru {
        Cache::lru(n, p.lru_ways.min(n), 1)
    } else {
        Cache::random(n, 1, seed ^ 0xC0FF_EE00)
    };
    let mut rng = SplitMix64::new(seed);
    let mut other = Fresh {
        rng: SplitMix64::new(rng.next_u64()),
        owner: 1,
    };
    let mut mine = Fresh {
        rng: SplitMix64::new(rng.next_u64()),
        owner: 2,
    };
    let mut own: HashSet<u64> = HashSet::new();
    // Misses of `stream` on fresh lines; own lines evicted leave `own`.
    let mut miss_fresh = |cache: &mut Cache, own: &mut HashSet<u64>, count: u64, is_mine: bool| {
        for _ in 0..count {
            let line = if is_mine { mine.next() } else { other.next() };
            if let Err(Some(victim)) = cache.access_evicting(line) {
                own.remove(&victim);
            }
            if is_mine {
                own.insert(line);
            }
        }
    };
    // A full cache of other lines: with LRU, fill every set to its associativity.
    let mut filled = 0;
    while filled < n && (cache.stats().misses < 64 * n) {
        miss_fresh(&mut cache, &mut own, 1, false);
        filled = n.min(cache.stats().misses - cache.stats().evictions);
    }
    match q {
        Quantity::Footprint { valid, misses } => {
            miss_fresh(&mut cache, &mut own, valid, true);
            // Start from exactly `valid` own lines (the few evicted while loading are topped up).
            while (own.len() as u64) < valid {
                miss_fresh(&mut cache, &mut own, 1, true);
            }
            miss_fresh(&mut cache, &mut own, misses, true);
            own.len() as f64
        }
        Quantity::Reload { build, others } => {
            miss_fresh(&mut cache, &mut own, build, true);
            let stopped: Vec<u64> = own.iter().copied().collect();
            miss_fresh(&mut cache, &mut own, others, false);
            // Reload: sweep the stopped lines until all are present at once.
            let mut reloads = 0u64;
            let target = stopped.len();
            let mut present: HashSet<u64> = stopped
                .iter()
                .copied()
                .filter(|&l| cache.contains(l))
                .collect();
            let mut i = 0;
            while present.len() < target {
                let line = stopped[i % target];
                i += 1;
                match cache.access_evicting(line) {
                    Ok(()) => {}
                    Err(victim) => {
                        reloads += 1;
                        if let Some(v) = victim {
                            present.remove(&v);
                        }
                        present.insert(line);
                    }
                }
            }
            reloads as f64
        }
    }
}
