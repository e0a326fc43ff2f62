//! The reload-transient cache model (Bellosa, 004 §3.3.1, after Thiebaut and Stone).
//!
//! A cache has `N` lines and every reference is equally likely to hit any line. A thread that
//! starts with `v` valid lines and suffers `n` misses while it runs ends with the expected
//! footprint
//!
//! ```text
//! F(v, n) = N − (N − v)·(1 − 1/N)^n
//! ```
//!
//! (the Markov chain of eq. 3.2/3.3 has exactly this expectation because `E[v' | v] = v + (N − v)/N`
//! is linear in `v`; [`markov`] keeps that chain as the test oracle). While it waits, `n` misses of
//! other threads on the same cache leave on average `V(f, n) = f·(1 − 1/N)^n` of its `f` lines, and
//! its reload transient, the misses needed to rebuild footprint `f` from `v` valid lines, is
//!
//! ```text
//! RT(f, v) = 0                                         if v ≥ f
//!          = ln((N − f)/(N − v)) / ln(1 − 1/N)         otherwise
//! ```
//!
//! # Out-of-range inputs: clamped, never rejected
//! These functions sit on the scheduler's hot path, so they have no error branch; every input is
//! clamped into the model's domain, always the same way:
//! - `lines = 0` means "no cache": every function returns 0.
//! - Line counts (`valid`, `footprint`) are clamped into `[0, N]`; NaN counts read as 0.
//! - Miss counts are clamped into `[0, +∞]`; negative and NaN misses read as 0 (no misses);
//!   `+∞` misses give the limits (`F → N`, `V → 0`).
//! - [`reload_transient`] only: the chain reaches a footprint of `N` only in the limit, so a
//!   footprint above `N − ½` counts as `N − ½`; the result stays finite and still decreases as
//!   `valid` grows. With `N = 1` a single miss fills the cache: `RT = 1` when `valid < footprint`.
//!
//! All three are computed in `ln_1p`/`exp_m1` form, accurate for large `N` (a 1 MiB cache of 64 B
//! lines has `N = 16384`; a 32 MiB one `N = 524288`).
//!
//! ```
//! use footprint_affinity::reload::{expected_footprint, expected_remaining, reload_transient};
//! let n = 16384; // 1 MiB of 64-byte lines
//! let f = expected_footprint(n, 0.0, 1000.0);          // a cold thread that missed 1000 times
//! assert!(f > 969.0 && f < 1000.0);                     // a few misses hit its own lines
//! let v = expected_remaining(n, f, 16384.0);            // one cache-full of others' misses
//! assert!((v / f - (-1.0f64).exp()).abs() < 1e-4);     // leaves about 1/e of it
//! let rt = reload_transient(n, f, v);                   // misses to get back to f
//! assert!((expected_footprint(n, v, rt) - f).abs() < 1e-6);
//! ```

/// `ln(1 − 1/N)`, the log of the per-miss survival probability (negative; `-∞` for `N = 1`).
#[inline]
fn ln_survival(lines: u64) -> f64 {
    (-1.0 / lines as f64).ln_1p()
}

/// Clamps a miss count: NaN and negative read as 0.
#[inline]
fn clamp_misses(misses: f64) -> f64 {
    if misses > 0.0 {
        misses
    } else {
        0.0
    }
}

/// Clamps a line count into `[0, N]`; NaN reads as 0.
#[inline]
fn clamp_lines(x: f64, lines: u64) -> f64 {
    if x > 0.0 {
        x.min(lines as f64)
    } else {
        0.0
    }
}

/// `(1 − 1/N)^n`: the probability that one line survives `n` misses (1 for `n = 0`, 0 for
/// `N = 0`). Inputs are clamped as the module documentation says.
#[inline]
pub fn survival(lines: u64, misses: f64) -> f64 {
    if lines == 0 {
        return 0.0;
    }
    let n = clamp_misses(misses);
    if n == 0.0 {
        return 1.0;
    }
    (n * ln_survival(lines)).exp()
}

/// `F(v, n) = N − (N − v)(1 − 1/N)^n`: the expected footprint of a thread that started with
/// `valid` lines and suffered `misses` misses while running. Out-of-range inputs are clamped (see
/// the module documentation).
#[inline]
pub fn expected_footprint(lines: u64, valid: f64, misses: f64) -> f64 {
    if lines == 0 {
        return 0.0;
    }
    let v = clamp_lines(valid, lines);
    let n = clamp_misses(misses);
    if n == 0.0 {
        return v;
    }
    // v + (N − v)(1 − q^n), with 1 − q^n = −expm1(n ln q): exact for small n·ln q.
    let gained = -(n * ln_survival(lines)).exp_m1();
    (v + (lines as f64 - v) * gained).min(lines as f64)
}

/// `V(f, n) = f(1 − 1/N)^n`: the expected number of a waiting thread's `footprint` lines that
/// survive `misses` misses of other threads. Out-of-range inputs are clamped (see the module
/// documentation).
#[inline]
pub fn expected_remaining(lines: u64, footprint: f64, misses: f64) -> f64 {
    if lines == 0 {
        return 0.0;
    }
    clamp_lines(footprint, lines) * survival(lines, misses)
}

/// `RT(f, v)`: the expected misses needed to rebuild `footprint` lines from `valid` lines
/// (0 when `valid ≥ footprint`). Out-of-range inputs are clamped (see the module documentation;
/// a footprint above `N − ½` counts as `N − ½`).
#[inline]
pub fn reload_transient(lines: u64, footprint: f64, valid: f64) -> f64 {
    if lines == 0 {
        return 0.0;
    }
    let n = lines as f64;
    let f = clamp_lines(footprint, lines).min(n - 0.5);
    let v = clamp_lines(valid, lines);
    if v >= f {
        return 0.0;
    }
    if lines == 1 {
        return 1.0;
    }
    // ln((N − f)/(N − v)) = ln(1 − (f − v)/(N − v)).
    (-(f - v) / (n - v)).ln_1p() / ln_survival(lines)
}

/// The explicit Markov chains of 004 eq. 3.2/3.3, for small `N`: the test oracle of the closed
/// forms (`O(N²)` memory, `O(N²)` per step; meant for `N` up to a few hundred).
pub mod markov {
    /// A row-stochastic `(N+1)×(N+1)` transition matrix over the states `0..=N` valid lines.
    #[derive(Clone, Debug, PartialEq)]
    pub struct TransitionMatrix {
        lines: usize,
        /// Row-major, `(lines + 1)²` entries; entry `(i, j)` is `P(i → j)`.
        p: Vec<f64>,
    }

    impl TransitionMatrix {
        fn zero(lines: usize) -> TransitionMatrix {
            TransitionMatrix {
                lines,
                p: vec![0.0; (lines + 1) * (lines + 1)],
            }
        }

        fn at(&self, i: usize, j: usize) -> f64 {
            self.p[i * (self.lines + 1) + j]
        }

        fn set(&mut self, i: usize, j: usize, value: f64) {
            let w = self.lines + 1;
            self.p[i * w + j] = value;
        }

        /// Eq. 3.2: a miss of the running thread turns one more line valid with probability
        /// `(N − v)/N` and hits one of its own lines with probability `v/N`.
        pub fn growth(lines: usize) -> TransitionMatrix {
            assert!(lines > 0, "a cache has at least one line");
            let mut m = TransitionMatrix::zero(lines);
            let n = lines as f64;
            for v in 0..=lines {
                m.set(v, v, v as f64 / n);
                if v < lines {
                    m.set(v, v + 1, (n - v as f64) / n);
                }
            }
            m
        }

        /// Fig. 3.8: a miss of another thread evicts one of the waiting thread's lines with
        /// probability `v/N` and misses them with probability `(N − v)/N`.
        pub fn displacement(lines: usize) -> TransitionMatrix {
            assert!(lines > 0, "a cache has at least one line");
            let mut m = TransitionMatrix::zero(lines);
            let n = lines as f64;
            for v in 0..=lines {
                m.set(v, v, (n - v as f64) / n);
                if v > 0 {
                    m.set(v, v - 1, v as f64 / n);
                }
            }
            m
        }

        /// The matrix product `self · other`.
        pub fn multiply(&self, other: &TransitionMatrix) -> TransitionMatrix {
            assert_eq!(self.lines, other.lines);
            let w = self.lines + 1;
            let mut out = TransitionMatrix::zero(self.lines);
            for i in 0..w {
                for k in 0..w {
                    let a = self.at(i, k);
                    if a == 0.0 {
                        continue;
                    }
                    for j in 0..w {
                        out.p[i * w + j] += a * other.at(k, j);
                    }
                }
            }
            out
        }

        /// `Pⁿ` by repeated squaring: entry `(v, j)` is the probability of going from `v` to
        /// `j` valid lines in `n` misses.
        pub fn power(&self, mut n: u64) -> TransitionMatrix {
            let mut result = TransitionMatrix::zero(self.lines);
            for i in 0..=self.lines {
                result.set(i, i, 1.0);
            }
            let mut base = self.clone();
            while n > 0 {
                if n & 1 == 1 {
                    result = result.multiply(&base);
                }
                n >>= 1;
                if n > 0 {
                    base = base.multiply(&base);
                }
            }
            result
        }

        /// The distribution after `steps` transitions from state `start`, by iterating the
        /// matrix on a probability vector (`steps` vector–matrix products).
        pub fn distribution_after(&self, start: usize, steps: u64) -> Vec<f64> {
            let w = self.lines + 1;
            let mut dist = vec![0.0; w];
            dist[start] = 1.0;
            let mut next = vec![0.0; w];
            for _ in 0..steps {
                next.iter_mut().for_each(|x| *x = 0.0);
                for (i, &pi) in dist.iter().enumerate() {
                    if pi == 0.0 {
                        continue;
                    }
                    for (j, slot) in next.iter_mut().enumerate() {
                        *slot += pi * self.at(i, j);
                    }
                }
                std::mem::swap(&mut dist, &mut next);
            }
            dist
        }

        /// Eq. 3.3: `Σ_j j·p(start → j)` after `steps` misses.
        pub fn expected_state(&self, start: usize, steps: u64) -> f64 {
            self.distribution_after(start, steps)
                .iter()
                .enumerate()
                .map(|(j, p)| j as f64 * p)
                .sum()
        }

        /// Eq. 3.3 read from a matrix power: `Σ_j j·Pⁿ(start, j)` where `self = Pⁿ`.
        pub fn expected_state_of_row(&self, start: usize) -> f64 {
            (0..=self.lines).map(|j| j as f64 * self.at(start, j)).sum()
        }
    }

    /// The chain's expected footprint `E[F | V = v, M = n]` (eq. 3.3).
    pub fn expected_footprint(lines: usize, valid: usize, misses: u64) -> f64 {
        TransitionMatrix::growth(lines).expected_state(valid, misses)
    }

    /// The chain's expected surviving lines `E[V | F = f, M = n]`.
    pub fn expected_remaining(lines: usize, footprint: usize, misses: u64) -> f64 {
        TransitionMatrix::displacement(lines).expected_state(footprint, misses)
    }
}

/// Number of intervals of [`ReloadTable`]'s grid.
const TABLE_STEPS: usize = 512;
/// The table covers occupancies `y = lines/N` in `[0, TABLE_MAX_Y]`; beyond, it computes exactly.
const TABLE_MAX_Y: f64 = 0.9375;

/// The precomputed table of the scheduler's hot path (004: "reduced to a simple table lookup").
///
/// It tabulates `L(y) = −ln(1 − y)` for the occupancy `y = lines/N ∈ [0, 0.9375]` (513 entries,
/// 4 KiB, independent of `N`) and interpolates linearly; occupancies above 0.9375 are computed
/// exactly. Since `RT(f, v)·(−ln(1 − 1/N)) = L(f/N) − L(v/N)`, one lookup per valid-line count
/// replaces the two logarithms.
///
/// **Error bound** ([`ReloadTable::max_error_in_cache_sizes`]): linear interpolation errs by at
/// most `h²/8 · max|L''| = h²/8 /(1 − 0.9375)²` per lookup with `h = 0.9375/512`; two lookups and
/// the `1/(−N ln(1 − 1/N)) ≤ 1` scaling give `|RT_table − RT| ≤ 2.15·10⁻⁴ · N` misses: about 3.5
/// misses for a 1 MiB L2 of 64 B lines. The tests check the bound on a dense grid.
#[derive(Clone, Debug)]
pub struct ReloadTable {
    neg_log: Vec<f64>,
    scale: f64,
}

impl Default for ReloadTable {
    fn default() -> Self {
        ReloadTable::new()
    }
}

impl ReloadTable {
    /// Builds the table (about 10 µs).
    pub fn new() -> ReloadTable {
        let h = TABLE_MAX_Y / TABLE_STEPS as f64;
        let neg_log = (0..=TABLE_STEPS)
            .map(|i| -(-(i as f64) * h).ln_1p())
            .collect();
        ReloadTable {
            neg_log,
            scale: TABLE_STEPS as f64 / TABLE_MAX_Y,
        }
    }

    /// The stated bound on `|RT_table − RT|` as a fraction of `N` (multiply by the cache's line
    /// count for misses).
    pub fn max_error_in_cache_sizes() -> f64 {
        let h = TABLE_MAX_Y / TABLE_STEPS as f64;
        2.0 * h * h / 8.0 / ((1.0 - TABLE_MAX_Y) * (1.0 - TABLE_MAX_Y))
    }

    /// `L(y) = −ln(1 − y)` for an occupancy `y` in `[0, 1)`: table lookup with linear
    /// interpolation up to 0.9375, exact above. Out of range: `y ≤ 0` (or NaN) gives 0.
    #[inline]
    pub fn neg_log_vacancy(&self, occupancy: f64) -> f64 {
        if occupancy.is_nan() || occupancy <= 0.0 {
            return 0.0;
        }
        if occupancy >= TABLE_MAX_Y {
            return -(-occupancy).ln_1p();
        }
        let pos = occupancy * self.scale;
        let i = pos as usize; // < TABLE_STEPS since occupancy < TABLE_MAX_Y
        let frac = pos - i as f64;
        let a = self.neg_log[i];
        let b = self.neg_log[i + 1];
        a + (b - a) * frac
    }

    /// [`reload_transient`] through the table, with the same clamping rules.
    #[inline]
    pub fn reload_transient(&self, lines: u64, footprint: f64, valid: f64) -> f64 {
        if lines == 0 {
            return 0.0;
        }
        let n = lines as f64;
        let f = clamp_lines(footprint, lines).min(n - 0.5);
        let v = clamp_lines(valid, lines);
        if v >= f {
            return 0.0;
        }
        if lines == 1 {
            return 1.0;
        }
        let inv_n = 1.0 / n;
        let diff = self.neg_log_vacancy(f * inv_n) - self.neg_log_vacancy(v * inv_n);
        (diff / -ln_survival(lines)).max(0.0)
    }

    /// [`ReloadTable::reload_transient`] for the cache of `model`, using its precomputed
    /// `−ln(1 − 1/N)` (no logarithm computed here).
    #[inline]
    pub fn reload_transient_in(&self, model: &CacheModel, footprint: f64, valid: f64) -> f64 {
        let lines = model.lines;
        if lines <= 1 {
            return self.reload_transient(lines, footprint, valid);
        }
        let n = lines as f64;
        let f = clamp_lines(footprint, lines).min(n - 0.5);
        let v = clamp_lines(valid, lines);
        if v >= f {
            return 0.0;
        }
        let inv_n = 1.0 / n;
        let diff = self.neg_log_vacancy(f * inv_n) - self.neg_log_vacancy(v * inv_n);
        (diff / model.decay).max(0.0)
    }
}

/// The part of a reload transient that depends only on the footprint, computed once when a
/// thread stops so that a key costs one `exp` and one table lookup
/// ([`CacheModel::reload_from`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StoppedFootprint {
    /// `f/N` with `f` clamped into `[0, N − ½]`.
    pub occupancy: f64,
    /// `L(f/N) = −ln(1 − f/N)` through the table.
    pub neg_log: f64,
}

/// Per-cache constants for the hot path: `N` and `−ln(1 − 1/N)`, computed once per domain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CacheModel {
    lines: u64,
    decay: f64,
}

impl CacheModel {
    /// A cache of `lines` lines (0 means "no cache": every estimate is 0).
    pub fn new(lines: u64) -> CacheModel {
        CacheModel {
            lines,
            decay: if lines <= 1 {
                f64::INFINITY
            } else {
                -ln_survival(lines)
            },
        }
    }

    /// `N`.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// `(1 − 1/N)^misses` for an integer miss count (exact for `misses = 0`).
    #[inline]
    pub fn survival(&self, misses: u64) -> f64 {
        if self.lines == 0 {
            0.0
        } else if misses == 0 {
            1.0
        } else {
            (-(misses as f64) * self.decay).exp()
        }
    }

    /// `−ln(1 − 1/N)` (`+∞` for `N ≤ 1`).
    pub fn decay(&self) -> f64 {
        self.decay
    }

    /// `RT` through `table` for a thread whose `footprint` lines have since seen `misses_since`
    /// misses of others on this cache: `RT(f, V(f, m))`.
    #[inline]
    pub fn reload_after(&self, table: &ReloadTable, footprint: f64, misses_since: u64) -> f64 {
        let valid = footprint * self.survival(misses_since);
        table.reload_transient_in(self, footprint, valid)
    }

    /// Precomputes the footprint-only part of `RT` for [`CacheModel::reload_from`].
    pub fn stopped(&self, table: &ReloadTable, footprint: f64) -> StoppedFootprint {
        if self.lines == 0 {
            return StoppedFootprint::default();
        }
        let n = self.lines as f64;
        let occupancy = clamp_lines(footprint, self.lines).min(n - 0.5) / n;
        StoppedFootprint {
            occupancy,
            neg_log: table.neg_log_vacancy(occupancy),
        }
    }

    /// The hot path of [`CacheModel::reload_after`]: `RT(f, V(f, m))` from the precomputed
    /// `stopped` part; one `exp` and one table lookup. Equal to `reload_after` (same table, same
    /// clamping) up to rounding.
    #[inline]
    pub fn reload_from(
        &self,
        table: &ReloadTable,
        stopped: &StoppedFootprint,
        misses_since: u64,
    ) -> f64 {
        if misses_since == 0 {
            return 0.0;
        }
        if self.lines <= 1 {
            let f = stopped.occupancy * self.lines as f64;
            return self.reload_after(table, f, misses_since);
        }
        let valid_occupancy = stopped.occupancy * self.survival(misses_since);
        ((stopped.neg_log - table.neg_log_vacancy(valid_occupancy)) / self.decay).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rel_close(a: f64, b: f64, tol: f64) -> bool {
        let scale = a.abs().max(b.abs()).max(1e-300);
        (a - b).abs() / scale <= tol || (a - b).abs() <= 1e-12
    }

    fn cases(n: u32) -> ProptestConfig {
        ProptestConfig {
            cases: if cfg!(debug_assertions) { n / 2 } else { n },
            ..ProptestConfig::default()
        }
    }

    proptest! {
        #![proptest_config(cases(128))]

        /// Eq. 3.3 by iterating eq. 3.2 equals the closed form to 1e-9 relative error.
        #[test]
        fn footprint_matches_markov_chain(lines in 1usize..=64, valid_frac in 0.0f64..=1.0, misses in 0u64..400) {
            let valid = (valid_frac * lines as f64).floor() as usize;
            let oracle = markov::expected_footprint(lines, valid, misses);
            let closed = expected_footprint(lines as u64, valid as f64, misses as f64);
            prop_assert!(rel_close(closed, oracle, 1e-9), "N={lines} v={valid} n={misses}: {closed} vs {oracle}");
        }

        #[test]
        fn remaining_matches_markov_chain(lines in 1usize..=64, f_frac in 0.0f64..=1.0, misses in 0u64..400) {
            let f = (f_frac * lines as f64).floor() as usize;
            let oracle = markov::expected_remaining(lines, f, misses);
            let closed = expected_remaining(lines as u64, f as f64, misses as f64);
            prop_assert!(rel_close(closed, oracle, 1e-9), "N={lines} f={f} n={misses}: {closed} vs {oracle}");
        }

        /// RT inverts the chain: the footprint the chain reaches from v in n misses needs
        /// exactly n misses to rebuild from v.
        #[test]
        fn reload_transient_inverts_markov_chain(lines in 2usize..=64, valid_frac in 0.0f64..=0.9, misses in 1u64..300) {
            let valid = (valid_frac * lines as f64).floor() as usize;
            let f = markov::expected_footprint(lines, valid, misses);
            let rt = reload_transient(lines as u64, f, valid as f64);
            if f < lines as f64 - 0.5 {
                prop_assert!(rel_close(rt, misses as f64, 1e-9), "N={lines} v={valid} n={misses}: RT={rt}");
            } else {
                // Clamped: a footprint within half a line of N counts as N − ½.
                let capped = reload_transient(lines as u64, lines as f64 - 0.5, valid as f64);
                prop_assert_eq!(rt, capped);
                prop_assert!(rt <= misses as f64);
            }
        }

        #[test]
        fn footprint_is_monotone_in_misses_and_bounded(lines in 1u64..100_000, valid in 0.0f64..=1.0, a in 0.0f64..1e7, b in 0.0f64..1e7) {
            let v = valid * lines as f64;
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let f_lo = expected_footprint(lines, v, lo);
            let f_hi = expected_footprint(lines, v, hi);
            prop_assert!(f_lo <= f_hi);
            prop_assert!(f_lo >= v * (1.0 - 1e-15) && f_hi <= lines as f64);
            let r_lo = expected_remaining(lines, v, lo);
            let r_hi = expected_remaining(lines, v, hi);
            prop_assert!(r_hi <= r_lo && r_lo <= v && r_hi >= 0.0);
        }

        /// The longer a thread waits, the more it costs to bring back: RT(f, V(f, n)) grows with n.
        #[test]
        fn reload_transient_grows_with_waiting(lines in 1u64..1_000_000, f_frac in 0.0f64..=1.0, a in 0.0f64..1e8, b in 0.0f64..1e8) {
            let f = f_frac * lines as f64;
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let rt_lo = reload_transient(lines, f, expected_remaining(lines, f, lo));
            let rt_hi = reload_transient(lines, f, expected_remaining(lines, f, hi));
            prop_assert!(rt_lo <= rt_hi * (1.0 + 1e-12), "{rt_lo} > {rt_hi}");
            prop_assert!(rt_hi.is_finite() && rt_lo >= 0.0);
        }

        /// Rebuilding from V(f, n) with RT misses gives back f (the forms are mutually inverse).
        #[test]
        fn reload_transient_inverts_footprint(lines in 2u64..1_000_000, f_frac in 0.0f64..0.999, n_frac in 0.0f64..5.0) {
            let f = f_frac * lines as f64;
            let v = expected_remaining(lines, f, n_frac * lines as f64);
            let rt = reload_transient(lines, f, v);
            let back = expected_footprint(lines, v, rt);
            prop_assert!((back - f).abs() <= 1e-9 * lines as f64, "f={f} back={back}");
        }

        #[test]
        fn table_stays_within_its_bound(lines in 1u64..2_000_000, f_frac in 0.0f64..=1.0, v_frac in 0.0f64..=1.0) {
            let table = ReloadTable::new();
            let (f, v) = (f_frac * lines as f64, v_frac * f_frac * lines as f64);
            let exact = reload_transient(lines, f, v);
            let fast = table.reload_transient(lines, f, v);
            prop_assert!((exact - fast).abs() <= ReloadTable::max_error_in_cache_sizes() * lines as f64 + 1e-9 * exact,
                "N={lines} f={f} v={v}: {fast} vs {exact}");
        }
    }

    #[test]
    fn matrix_power_equals_iteration() {
        for lines in [1usize, 2, 7, 16] {
            for steps in [0u64, 1, 5, 33] {
                let g = markov::TransitionMatrix::growth(lines);
                let d = markov::TransitionMatrix::displacement(lines);
                let (gp, dp) = (g.power(steps), d.power(steps));
                for start in 0..=lines {
                    let a = gp.expected_state_of_row(start);
                    let b = g.expected_state(start, steps);
                    assert!(rel_close(a, b, 1e-12), "{a} {b}");
                    let a = dp.expected_state_of_row(start);
                    let b = d.expected_state(start, steps);
                    assert!(rel_close(a, b, 1e-12), "{a} {b}");
                }
            }
        }
    }

    #[test]
    fn table_error_bound_holds_on_a_dense_grid() {
        let table = ReloadTable::new();
        let bound = ReloadTable::max_error_in_cache_sizes();
        assert!(bound <= 2.15e-4, "documented as 2.15e-4, got {bound}");
        let mut worst: f64 = 0.0;
        for lines in [64u64, 768, 16384, 524288] {
            for i in 0..=400 {
                for j in 0..=i {
                    let f = i as f64 / 400.0 * lines as f64;
                    let v = j as f64 / 400.0 * lines as f64;
                    let e =
                        (reload_transient(lines, f, v) - table.reload_transient(lines, f, v)).abs();
                    worst = worst.max(e / lines as f64);
                }
            }
        }
        println!("worst table error {worst:.3e}·N, bound {bound:.3e}·N");
        assert!(worst <= bound, "worst {worst} above the bound {bound}");
        assert!(
            worst > bound / 100.0,
            "the bound should not be vacuous: worst {worst}"
        );
    }

    #[test]
    fn out_of_range_inputs_are_clamped() {
        let n = 64;
        assert_eq!(expected_footprint(0, 5.0, 5.0), 0.0);
        assert_eq!(expected_remaining(0, 5.0, 5.0), 0.0);
        assert_eq!(reload_transient(0, 5.0, 0.0), 0.0);
        assert_eq!(expected_footprint(n, 10.0, f64::NAN), 10.0);
        assert_eq!(expected_footprint(n, 10.0, -3.0), 10.0);
        assert_eq!(expected_footprint(n, f64::NAN, 0.0), 0.0);
        assert_eq!(expected_footprint(n, 100.0, 0.0), 64.0);
        assert_eq!(expected_footprint(n, 0.0, f64::INFINITY), 64.0);
        assert_eq!(expected_remaining(n, 100.0, 0.0), 64.0);
        assert_eq!(expected_remaining(n, 10.0, f64::INFINITY), 0.0);
        assert_eq!(expected_remaining(n, -1.0, 3.0), 0.0);
        assert_eq!(reload_transient(n, 10.0, 10.0), 0.0);
        assert_eq!(reload_transient(n, 10.0, 20.0), 0.0);
        assert_eq!(reload_transient(n, f64::NAN, 0.0), 0.0);
        // f ≥ N counts as N − ½: finite, equal for every f ≥ N, still decreasing in v.
        let full = reload_transient(n, 64.0, 0.0);
        assert!(full.is_finite());
        assert_eq!(reload_transient(n, 1e9, 0.0), full);
        assert_eq!(reload_transient(n, 63.5, 0.0), full);
        assert!(reload_transient(n, 64.0, 32.0) < full);
        assert_eq!(reload_transient(1, 1.0, 0.0), 1.0);
        assert_eq!(reload_transient(1, 1.0, 1.0), 0.0);
        assert_eq!(expected_footprint(1, 0.0, 1.0), 1.0);
        assert_eq!(survival(1, 0.0), 1.0);
    }

    #[test]
    fn accurate_for_large_caches() {
        // N = 16384: one miss on an empty cache adds exactly one line; a naive (1 − 1/N)^n
        // through powf loses digits here.
        let n = 16384;
        assert!((expected_footprint(n, 0.0, 1.0) - 1.0).abs() < 1e-12);
        // A fractional miss: F ≈ n·(−N ln(1 − 1/N)) = n·(1 + 1/(2N) + 1/(3N²) + …).
        let f = expected_footprint(n, 0.0, 1e-6);
        let nn = n as f64;
        let series = 1e-6 * (1.0 + 0.5 / nn + 1.0 / (3.0 * nn * nn));
        assert!(rel_close(f, series, 1e-9), "{f} vs {series}");
        // RT for a tiny deficit d: ln(1 − d/(N − v)) ≈ −d/(N − v) to first order (relative error
        // d/(2(N − v)) ≈ 3e-11 here); the naive ln((N − f)/(N − v)) keeps only ~7 digits.
        let d = 1e-6;
        let rt = reload_transient(n, 1000.0 + d, 1000.0);
        let first_order = d / (nn - 1000.0) / -(-1.0 / nn).ln_1p();
        assert!(rel_close(rt, first_order, 1e-9), "{rt} vs {first_order}");
    }

    #[test]
    fn cache_model_agrees_with_free_functions() {
        let table = ReloadTable::new();
        for lines in [0u64, 1, 64, 16384] {
            let m = CacheModel::new(lines);
            for misses in [0u64, 1, 100, 100_000] {
                assert!(rel_close(
                    m.survival(misses),
                    survival(lines, misses as f64),
                    1e-12
                ));
                let f = lines as f64 * 0.3;
                let exact = reload_transient(lines, f, expected_remaining(lines, f, misses as f64));
                let fast = m.reload_after(&table, f, misses);
                assert!(
                    (exact - fast).abs()
                        <= ReloadTable::max_error_in_cache_sizes() * lines as f64 + 1e-9
                );
            }
        }
    }
}
