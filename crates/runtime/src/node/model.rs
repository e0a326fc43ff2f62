//! ADAPT's performance models (003 §6.2.1): PAAP predicts a program's share of user time when
//! it runs on all cores beside another program (Eq. 6.1), PACC its share alone on a processor
//! set of fewer cores (Eq. 6.3). Both are linear with the paper's coefficients
//! ([`LinearModel::paper`]) as a starting point; [`Model`] lets a user plug in a fitted one
//! (see [`fit`](super::fit())).
//!
//! # Units
//!
//! `usr`, `sys`, `lat` and `lock` are percentages of elapsed time (0..=100) as Solaris'
//! `prstat` reports them; `mpa` is the last-level miss ratio (0..=1). The paper does not state
//! the units of `mpa` and `sys` with its coefficients; these are our reading, and why the
//! coefficients are only a starting point: refit them with [`fit`](super::fit()) on this
//! machine's co-runs.

/// A program's resource-usage vector as ADAPT reads it (003 §6.2.3's RSV, Table 6.1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProgramProfile {
    /// Share of elapsed time in user mode, percent.
    pub usr: f64,
    /// Share of elapsed time in the kernel, percent.
    pub sys: f64,
    /// Share of elapsed time waiting for a CPU (latency), percent.
    pub lat: f64,
    /// Share of elapsed time spent on lock contention, percent.
    pub lock: f64,
    /// Last-level cache miss ratio (0..=1), 0 where no counter exists.
    pub mpa: f64,
    /// Threads (workers) the program runs.
    pub threads: usize,
}

/// Predicts a program's user-time share (percent) on a cores configuration.
pub trait Model {
    /// PAAP: the share of `a` on all `cores` beside `b` (`usr_ab`).
    fn paap(&self, a: &ProgramProfile, b: &ProgramProfile, cores: usize) -> f64;
    /// PACC: the share of `a` alone on a processor set of `cores` cores (`usr_acc`).
    fn pacc(&self, a: &ProgramProfile, cores: usize) -> f64;
}

/// Cores per thread of a program on `cores` cores (`ct`, unbounded: a program with fewer
/// threads leaves cores to the others).
pub fn cores_to_threads(cores: usize, threads: usize) -> f64 {
    cores as f64 / threads.max(1) as f64
}

/// Cores per thread of a program on a processor set (`rct`), at most 1: cores beyond its
/// threads do not speed the program itself up (our reading of Eq. 6.3, whose training sets
/// had fewer cores than threads).
pub fn reduced_cores_to_threads(cores: usize, threads: usize) -> f64 {
    cores_to_threads(cores, threads).min(1.0)
}

/// Eq. 6.1 with `coef` = [intercept, lock_a, lock_b, mpa_a, sys_a, ct_b]:
/// `usr_ab = c0 + c1·lock_a + c2·lock_b + c3·mpa_a + c4·sys_a + c5·ct_b`.
///
/// ```
/// use footprint_runtime::node::{paap, LinearModel, ProgramProfile};
/// let p = ProgramProfile { threads: 64, ..Default::default() };
/// // Nothing contended, B has a thread per core: the intercept plus 7.8.
/// let u = paap(&LinearModel::paper().paap, &p, &p, 64);
/// assert!((u - (65.2 + 7.8)).abs() < 1e-9);
/// ```
pub fn paap(coef: &[f64; 6], a: &ProgramProfile, b: &ProgramProfile, cores: usize) -> f64 {
    coef[0]
        + coef[1] * a.lock
        + coef[2] * b.lock
        + coef[3] * a.mpa
        + coef[4] * a.sys
        + coef[5] * cores_to_threads(cores, b.threads)
}

/// Eq. 6.3 with `coef` = [intercept, lock_a, rct_a]:
/// `usr_acc = c0 + c1·lock_a + c2·rct_a`.
///
/// ```
/// use footprint_runtime::node::{pacc, LinearModel, ProgramProfile};
/// let p = ProgramProfile { lock: 10.0, threads: 16, ..Default::default() };
/// let u = pacc(&LinearModel::paper().pacc, &p, 16);
/// assert!((u - (18.6 - 3.0 + 32.5)).abs() < 1e-9);
/// ```
pub fn pacc(coef: &[f64; 3], a: &ProgramProfile, cores: usize) -> f64 {
    coef[0] + coef[1] * a.lock + coef[2] * reduced_cores_to_threads(cores, a.threads)
}

/// The linear PAAP and PACC models: coefficients of [`paap`] and [`pacc`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearModel {
    /// [intercept, lock_a, lock_b, mpa_a, sys_a, ct_b].
    pub paap: [f64; 6],
    /// [intercept, lock_a, rct_a].
    pub pacc: [f64; 3],
}

impl LinearModel {
    /// The paper's coefficients (Eq. 6.1 and 6.3, fitted on a 64-core Solaris machine).
    ///
    /// Eq. 6.1 as printed has `lock_b` where the text's important predictors (and Table 6.2)
    /// name `lat_b`; we use the equation as printed.
    pub const fn paper() -> LinearModel {
        LinearModel {
            paap: [65.2, -0.6, -0.8, -9.6, -10.2, 7.8],
            pacc: [18.6, -0.3, 32.5],
        }
    }
}

impl Default for LinearModel {
    fn default() -> Self {
        LinearModel::paper()
    }
}

impl Model for LinearModel {
    fn paap(&self, a: &ProgramProfile, b: &ProgramProfile, cores: usize) -> f64 {
        paap(&self.paap, a, b, cores)
    }

    fn pacc(&self, a: &ProgramProfile, cores: usize) -> f64 {
        pacc(&self.pacc, a, cores)
    }
}
