//! ADAPT's Cores Allocator (003 §6.2.1, "The Design of Cores Allocator"): every program on all
//! cores, or each on its own processor set, whichever the models predict gives the higher mean
//! user share; CPU-bound, uncontended programs get all cores without asking the models; a
//! change is made only when it is predicted to pay (the γ threshold, two intervals running).

use super::model::{Model, ProgramProfile};
use std::fmt;

/// A cores configuration for the programs on the node, in the order they were given.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CoresConfig {
    /// Every program may use every core (the OS default).
    AllCores,
    /// Program `i` gets `sets[i]` cores of its own (disjoint processor sets).
    Sets(Vec<usize>),
}

impl fmt::Display for CoresConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoresConfig::AllCores => f.write_str("all cores"),
            CoresConfig::Sets(s) => {
                let parts: Vec<String> = s.iter().map(usize::to_string).collect();
                write!(f, "processor sets ({})", parts.join(", "))
            }
        }
    }
}

/// Why the allocator chose what it chose.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AllocReason {
    /// One program (or none): it has the machine.
    Alone,
    /// Every program is CPU-intensive with low lock contention: all cores, no prediction.
    AllCpuBoundUncontended,
    /// The models predict the highest mean user share for this configuration.
    BestPredicted,
    /// The best prediction is not better than the configuration in force by γ (yet): kept.
    KeptWithinGamma,
}

impl fmt::Display for AllocReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AllocReason::Alone => "one program: it has the machine",
            AllocReason::AllCpuBoundUncontended => {
                "every program is CPU-intensive with low lock contention: all cores"
            }
            AllocReason::BestPredicted => "highest predicted mean user share",
            AllocReason::KeptWithinGamma => {
                "the best prediction does not beat the configuration in force by gamma: kept"
            }
        })
    }
}

/// One decision: the configuration, the predicted share of each program in it, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    /// The configuration.
    pub config: CoresConfig,
    /// Predicted user share (percent) of each program in it (empty when not predicted).
    pub predicted: Vec<f64>,
    /// Their mean (0 when not predicted).
    pub mean: f64,
    /// Why.
    pub reason: AllocReason,
}

/// The allocator's numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct AllocatorConfig {
    /// Processor sets are made of `cores / units` cores at a time (the paper: 8 units of 8 on
    /// 64 cores); fewer units on machines with fewer cores.
    pub units: usize,
    /// Least units per program in a split (the paper: 2 of 8, i.e. 16 cores of 64).
    pub min_units: usize,
    /// Lock time (percent) below which a program is "low lock contention" (ours: 5 %; the
    /// paper gives no figure).
    pub low_lock: f64,
    /// Miss ratio below which a program is CPU-intensive (ours: 0.25, as the Tranquilizer's
    /// default; not measured here, no PMU).
    pub cpu_bound_mpa: f64,
    /// γ: percentage points by which the best prediction must beat the configuration in force
    /// (the paper: 8).
    pub gamma: f64,
    /// Consecutive intervals the gain must last before a change (the paper: 2).
    pub confirm: u32,
}

impl Default for AllocatorConfig {
    fn default() -> Self {
        AllocatorConfig {
            units: 8,
            min_units: 2,
            low_lock: 5.0,
            cpu_bound_mpa: 0.25,
            gamma: 8.0,
            confirm: 2,
        }
    }
}

impl AllocatorConfig {
    /// The defaults.
    pub fn new() -> AllocatorConfig {
        AllocatorConfig::default()
    }

    /// Sets γ (percentage points).
    pub fn gamma(mut self, gamma: f64) -> AllocatorConfig {
        self.gamma = gamma;
        self
    }

    /// Sets the intervals a gain must last.
    pub fn confirm(mut self, intervals: u32) -> AllocatorConfig {
        self.confirm = intervals;
        self
    }
}

/// The processor-set splits of `cores` among `programs` programs: every way to give each at
/// least `min_units` of `units` units (units and minimum shrunk to fit small machines), each
/// unit `cores / units` cores, the remainder to the last program. Empty when the programs
/// outnumber the cores.
///
/// ```
/// use footprint_runtime::node::{splits, AllocatorConfig};
/// // The paper's 64-core machine: its five two-program processor sets (Fig. 6.1 b).
/// let s = splits(64, 2, &AllocatorConfig::default());
/// assert_eq!(s, vec![vec![16, 48], vec![24, 40], vec![32, 32], vec![40, 24], vec![48, 16]]);
/// ```
pub fn splits(cores: usize, programs: usize, config: &AllocatorConfig) -> Vec<Vec<usize>> {
    if programs == 0 || programs > cores {
        return Vec::new();
    }
    let units = config.units.clamp(programs, cores);
    // The minimum keeps its share of the units (the paper's 2 of 8 is a quarter).
    let min_units = (config.min_units * units / config.units.max(1)).clamp(1, units / programs);
    let per = cores / units;
    let mut out = Vec::new();
    let mut cur = Vec::with_capacity(programs);
    fn rec(
        left: usize,
        programs: usize,
        min: usize,
        per: usize,
        cores: usize,
        cur: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        if cur.len() + 1 == programs {
            if left >= min {
                let used: usize = cur.iter().sum();
                let mut s = cur.clone();
                s.push(cores - used);
                out.push(s);
            }
            return;
        }
        let rest = programs - cur.len() - 1;
        let mut u = min;
        while u + rest * min <= left {
            cur.push(u * per);
            rec(left - u, programs, min, per, cores, cur, out);
            cur.pop();
            u += 1;
        }
    }
    rec(units, programs, min_units, per, cores, &mut cur, &mut out);
    out
}

/// Whether a program is CPU-intensive with low lock contention (it gets all cores whatever
/// the others do).
pub fn cpu_bound_uncontended(p: &ProgramProfile, config: &AllocatorConfig) -> bool {
    p.mpa < config.cpu_bound_mpa && p.lock < config.low_lock
}

/// Predicted user shares of `programs` in `config` on `cores` cores. On all cores each
/// program's share is PAAP's beside every other, averaged (the paper evaluates the pairs).
pub fn predict(
    model: &dyn Model,
    programs: &[ProgramProfile],
    cores: usize,
    config: &CoresConfig,
) -> Vec<f64> {
    match config {
        CoresConfig::AllCores => (0..programs.len())
            .map(|i| {
                let others: Vec<f64> = (0..programs.len())
                    .filter(|&j| j != i)
                    .map(|j| model.paap(&programs[i], &programs[j], cores))
                    .collect();
                if others.is_empty() {
                    0.0
                } else {
                    others.iter().sum::<f64>() / others.len() as f64
                }
            })
            .collect(),
        CoresConfig::Sets(s) => programs
            .iter()
            .zip(s)
            .map(|(p, &c)| model.pacc(p, c))
            .collect(),
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The configuration among `candidates` with the highest predicted mean user share (the first
/// of equal ones).
pub fn best_of(
    model: &dyn Model,
    programs: &[ProgramProfile],
    cores: usize,
    candidates: &[CoresConfig],
) -> Option<Allocation> {
    candidates
        .iter()
        .map(|c| {
            let predicted = predict(model, programs, cores, c);
            Allocation {
                mean: mean(&predicted),
                config: c.clone(),
                predicted,
                reason: AllocReason::BestPredicted,
            }
        })
        .fold(None, |best: Option<Allocation>, a| match best {
            Some(b) if b.mean >= a.mean => Some(b),
            _ => Some(a),
        })
}

/// The Cores Allocator's choice for `programs` on `cores` cores, from scratch: all cores for a
/// lone program or for CPU-bound uncontended ones, else the best predicted of all cores and
/// every split.
pub fn allocate(
    model: &dyn Model,
    programs: &[ProgramProfile],
    cores: usize,
    config: &AllocatorConfig,
) -> Allocation {
    let plain = |reason| Allocation {
        config: CoresConfig::AllCores,
        predicted: Vec::new(),
        mean: 0.0,
        reason,
    };
    if programs.len() < 2 {
        return plain(AllocReason::Alone);
    }
    if programs.iter().all(|p| cpu_bound_uncontended(p, config)) {
        return plain(AllocReason::AllCpuBoundUncontended);
    }
    let mut candidates = vec![CoresConfig::AllCores];
    candidates.extend(
        splits(cores, programs.len(), config)
            .into_iter()
            .map(CoresConfig::Sets),
    );
    best_of(model, programs, cores, &candidates).unwrap_or_else(|| plain(AllocReason::Alone))
}

/// The allocator over time: it follows phase changes, but changes the configuration only when
/// the best one beats the one in force by γ for `confirm` intervals running (003 §6.2.3's
/// condition 3), or at once when programs enter or leave.
#[derive(Clone, Debug)]
pub struct CoresAllocator<M> {
    model: M,
    config: AllocatorConfig,
    current: Option<Allocation>,
    programs: usize,
    better_for: u32,
}

impl<M: Model> CoresAllocator<M> {
    /// An allocator using `model`.
    pub fn new(model: M, config: AllocatorConfig) -> CoresAllocator<M> {
        CoresAllocator {
            model,
            config,
            current: None,
            programs: 0,
            better_for: 0,
        }
    }

    /// The configuration in force.
    pub fn current(&self) -> Option<&Allocation> {
        self.current.as_ref()
    }

    /// One interval: the programs' profiles now (in a stable order), and, where measured,
    /// their actual user shares in the configuration in force. Returns the allocation to
    /// apply when it changes.
    pub fn observe(
        &mut self,
        programs: &[ProgramProfile],
        cores: usize,
        actual: Option<&[f64]>,
    ) -> Option<Allocation> {
        let best = allocate(&self.model, programs, cores, &self.config);
        let changed_set = programs.len() != self.programs;
        self.programs = programs.len();
        let Some(cur) = self.current.as_ref().filter(|_| !changed_set) else {
            self.better_for = 0;
            self.current = Some(best.clone());
            return Some(best);
        };
        if best.config == cur.config {
            self.better_for = 0;
            return None;
        }
        // How the configuration in force does: measured where given, else predicted now.
        let now = match actual {
            Some(a) if a.len() == programs.len() => mean(a),
            _ => mean(&predict(&self.model, programs, cores, &cur.config)),
        };
        if best.reason != AllocReason::BestPredicted || best.mean > now + self.config.gamma {
            self.better_for += 1;
        } else {
            self.better_for = 0;
        }
        if self.better_for >= self.config.confirm.max(1) {
            self.better_for = 0;
            self.current = Some(best.clone());
            return Some(best);
        }
        None
    }
}
