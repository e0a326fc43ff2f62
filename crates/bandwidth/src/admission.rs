//! Admission of bandwidth reservations against the calibrated capacity (004 §4.2.2.1).
//!
//! The rules, with the paper's equation numbers:
//! - (4.3) one request may ask for at most 90 % of the copy rate measured with every CPU
//!   copying at once (`StreamCopyRate`);
//! - (4.4) each granted request `r` shrinks the bandwidth left to threads without a guarantee:
//!   `free' = (free - r) · (1 - r / StreamCopyRate)` (the reserved thread needs the fraction
//!   `r / StreamCopyRate` of the memory cycles, the others share the rest of what is left);
//! - (4.8) a request that would leave `free' <= 0` is refused;
//! - (4.9) every guarantee gets a CPU of its own and at least one CPU stays for the rest. The
//!   paper writes `guarantees + 1 < cpus`, but its own Fig. 4.5 grants a request on a
//!   dual-processor machine, which that inequality forbids; we use `guarantees + 1 <= cpus`;
//! - (4.11) the free bandwidth is shared equally by the free CPUs: that is the limit of a thread
//!   without a guarantee ([`Admission::unreserved_limit`]).

use std::fmt;

/// The machine's memory bandwidth as admission sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Capacity {
    /// Copy rate with every CPU copying at once, in bytes per second (the paper's
    /// `StreamCopyRate`; [`Calibration::capacity`](crate::Calibration::capacity)).
    pub copy_rate: f64,
    /// How many CPUs (workers) share it.
    pub cpus: usize,
}

impl Capacity {
    /// A capacity of `copy_rate` bytes per second shared by `cpus` CPUs; an error unless the
    /// rate is finite and positive and `cpus >= 1`.
    ///
    /// ```
    /// use footprint_bandwidth::Capacity;
    /// assert!(Capacity::new(406e6, 4).is_ok());
    /// assert!(Capacity::new(f64::NAN, 4).is_err());
    /// ```
    pub fn new(copy_rate: f64, cpus: usize) -> Result<Capacity, AdmissionError> {
        if !(copy_rate.is_finite() && copy_rate > 0.0) || cpus == 0 {
            return Err(AdmissionError::InvalidCapacity { copy_rate, cpus });
        }
        Ok(Capacity { copy_rate, cpus })
    }
}

/// Why a reservation was refused (each variant says what is left).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AdmissionError {
    /// The request is not a finite positive number of bytes per second.
    InvalidRequest {
        /// What was asked for.
        requested: f64,
    },
    /// The request is above 90 % of the copy rate (4.3).
    AboveMaxRequest {
        /// What was asked for, bytes per second.
        requested: f64,
        /// The most one request may ask for.
        max_request: f64,
    },
    /// Granting it would leave no bandwidth to the threads without a guarantee (4.4, 4.8).
    Overcommit {
        /// What was asked for, bytes per second.
        requested: f64,
        /// The bandwidth left to threads without a guarantee now.
        free: f64,
        /// The largest request that would still be granted now (0 when none would).
        largest_grantable: f64,
    },
    /// Every guarantee needs a CPU of its own and one must stay free (4.9).
    NoFreeCpu {
        /// Guarantees already granted.
        guarantees: usize,
        /// CPUs sharing the bandwidth.
        cpus: usize,
    },
    /// The capacity itself is unusable (see [`Capacity::new`]).
    InvalidCapacity {
        /// The copy rate given.
        copy_rate: f64,
        /// The CPU count given.
        cpus: usize,
    },
}

impl fmt::Display for AdmissionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mb = |b: f64| b / 1e6;
        match self {
            AdmissionError::InvalidRequest { requested } => write!(
                f,
                "a bandwidth reservation must be a finite positive rate, not {requested} bytes/s"
            ),
            AdmissionError::AboveMaxRequest {
                requested,
                max_request,
            } => write!(
                f,
                "reservation of {:.1} MB/s refused: one request may take at most 90 % of the calibrated copy rate, {:.1} MB/s",
                mb(*requested),
                mb(*max_request)
            ),
            AdmissionError::Overcommit {
                requested,
                free,
                largest_grantable,
            } => write!(
                f,
                "reservation of {:.1} MB/s refused: it would leave no bandwidth to unreserved threads ({:.1} MB/s free now; at most {:.1} MB/s can still be granted)",
                mb(*requested),
                mb(*free),
                mb(*largest_grantable)
            ),
            AdmissionError::NoFreeCpu { guarantees, cpus } => write!(
                f,
                "reservation refused: {guarantees} guarantees already hold {guarantees} of {cpus} CPUs and one must stay free for unreserved threads"
            ),
            AdmissionError::InvalidCapacity { copy_rate, cpus } => write!(
                f,
                "unusable bandwidth capacity ({copy_rate} bytes/s over {cpus} CPUs): calibrate again"
            ),
        }
    }
}

impl std::error::Error for AdmissionError {}

/// The number of a granted reservation (to release it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GrantId(pub u64);

/// The granted reservations of one machine (or runtime) and the rules that admit new ones.
///
/// ```
/// use footprint_bandwidth::{Admission, AdmissionError, Capacity};
/// // Table 4.2: four CPUs, two banks, 406 MB/s copying together.
/// let mut a = Admission::new(Capacity::new(406e6, 4)?);
/// let g = a.admit(60e6)?;
/// // (4.4): (406 - 60) · (1 - 60/406) ≈ 294.9 MB/s left, shared by 3 free CPUs (4.11).
/// assert!((a.free_bandwidth() / 1e6 - 294.87).abs() < 0.01);
/// assert!((a.unreserved_limit().unwrap() / 1e6 - 98.29).abs() < 0.01);
/// assert!(matches!(a.admit(400e6), Err(AdmissionError::AboveMaxRequest { .. })));
/// a.release(g);
/// assert_eq!(a.unreserved_limit(), None); // no guarantee: nobody is limited
/// # Ok::<(), AdmissionError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Admission {
    capacity: Capacity,
    grants: Vec<(GrantId, f64)>,
    next: u64,
}

/// The share of the copy rate one request may take (4.3).
pub const MAX_REQUEST_SHARE: f64 = 0.9;

impl Admission {
    /// No reservations yet against `capacity`.
    pub fn new(capacity: Capacity) -> Admission {
        Admission {
            capacity,
            grants: Vec::new(),
            next: 1,
        }
    }

    /// The capacity admitted against.
    pub fn capacity(&self) -> Capacity {
        self.capacity
    }

    /// The most one request may ask for (4.3).
    pub fn max_request(&self) -> f64 {
        MAX_REQUEST_SHARE * self.capacity.copy_rate
    }

    /// The bandwidth left to threads without a guarantee (4.4 over the grants in order).
    pub fn free_bandwidth(&self) -> f64 {
        self.grants
            .iter()
            .fold(self.capacity.copy_rate, |free, &(_, r)| {
                self.shrink(free, r)
            })
    }

    fn shrink(&self, free: f64, r: f64) -> f64 {
        (free - r) * (1.0 - r / self.capacity.copy_rate)
    }

    /// The sum of the granted rates.
    pub fn reserved(&self) -> f64 {
        self.grants.iter().map(|g| g.1).sum()
    }

    /// How many reservations are granted.
    pub fn guarantees(&self) -> usize {
        self.grants.len()
    }

    /// Grants `bytes_per_sec` or says why not (and what is left).
    pub fn admit(&mut self, bytes_per_sec: f64) -> Result<GrantId, AdmissionError> {
        let r = bytes_per_sec;
        if !(r.is_finite() && r > 0.0) {
            return Err(AdmissionError::InvalidRequest { requested: r });
        }
        if r > self.max_request() {
            return Err(AdmissionError::AboveMaxRequest {
                requested: r,
                max_request: self.max_request(),
            });
        }
        if self.grants.len() + 1 >= self.capacity.cpus {
            return Err(AdmissionError::NoFreeCpu {
                guarantees: self.grants.len(),
                cpus: self.capacity.cpus,
            });
        }
        let free = self.free_bandwidth();
        if self.shrink(free, r) <= 0.0 || r >= free {
            return Err(AdmissionError::Overcommit {
                requested: r,
                free,
                largest_grantable: self.largest_grantable(free),
            });
        }
        let id = GrantId(self.next);
        self.next += 1;
        self.grants.push((id, r));
        Ok(id)
    }

    /// The largest request below `free` that (4.3) and (4.8) admit: `free' > 0` exactly when
    /// `r < free` (for `r < copy_rate`), so just below `free`, capped by the 90 % rule.
    fn largest_grantable(&self, free: f64) -> f64 {
        free.min(self.max_request()).max(0.0)
    }

    /// Releases a grant; `false` if it was not granted (or released already).
    pub fn release(&mut self, id: GrantId) -> bool {
        let before = self.grants.len();
        self.grants.retain(|g| g.0 != id);
        self.grants.len() != before
    }

    /// The rate each free CPU may use while any guarantee is granted (4.11); `None` without one.
    pub fn unreserved_limit(&self) -> Option<f64> {
        if self.grants.is_empty() {
            return None;
        }
        let free_cpus = self.capacity.cpus.saturating_sub(self.grants.len()).max(1);
        Some(self.free_bandwidth().max(0.0) / free_cpus as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn table_4_2() -> Admission {
        Admission::new(Capacity::new(406e6, 4).unwrap())
    }

    #[test]
    fn a_refusal_says_what_is_left() {
        let mut a = table_4_2();
        a.admit(300e6).unwrap();
        let free = a.free_bandwidth();
        match a.admit(200e6) {
            Err(AdmissionError::Overcommit {
                free: f,
                largest_grantable,
                ..
            }) => {
                assert_eq!(f, free);
                assert!(largest_grantable > 0.0 && largest_grantable <= free);
                let msg = a.admit(200e6).unwrap_err().to_string();
                assert!(msg.contains("MB/s free now"), "{msg}");
                // The largest grantable request is granted (just below the bound).
                assert!(a.admit(largest_grantable * 0.999).is_ok());
            }
            other => panic!("expected an overcommit refusal, got {other:?}"),
        }
    }

    #[test]
    fn every_guarantee_takes_a_cpu_and_one_stays_free() {
        let mut a = Admission::new(Capacity::new(1e9, 2).unwrap());
        a.admit(1e6).unwrap();
        assert_eq!(
            a.admit(1e6),
            Err(AdmissionError::NoFreeCpu {
                guarantees: 1,
                cpus: 2
            })
        );
        let mut one = Admission::new(Capacity::new(1e9, 1).unwrap());
        assert!(matches!(
            one.admit(1e6),
            Err(AdmissionError::NoFreeCpu { .. })
        ));
    }

    #[test]
    fn bad_requests_are_typed() {
        let mut a = table_4_2();
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                a.admit(r),
                Err(AdmissionError::InvalidRequest { .. })
            ));
        }
        assert!(matches!(
            a.admit(0.95 * 406e6),
            Err(AdmissionError::AboveMaxRequest { .. })
        ));
        assert!(Capacity::new(0.0, 2).is_err());
        assert!(Capacity::new(1.0, 0).is_err());
    }

    #[test]
    fn release_restores_the_free_bandwidth() {
        let mut a = table_4_2();
        let g1 = a.admit(60e6).unwrap();
        let after_one = a.free_bandwidth();
        let g2 = a.admit(50e6).unwrap();
        assert!(a.free_bandwidth() < after_one);
        assert!(a.release(g2));
        assert!(!a.release(g2));
        assert!((a.free_bandwidth() - after_one).abs() < 1e-6);
        assert!(a.release(g1));
        assert_eq!(a.free_bandwidth(), 406e6);
        assert_eq!(a.reserved(), 0.0);
    }

    proptest! {
        /// Against an oracle that applies (4.3), (4.4), (4.8), (4.9) to the running list:
        /// whatever sequence of requests arrives, the granted ones keep the free bandwidth
        /// positive, and a request is refused exactly when the oracle refuses it.
        #[test]
        fn admission_matches_the_rules(
            cap in 1e8f64..1e11,
            cpus in 1usize..9,
            reqs in proptest::collection::vec(0.001f64..1.0, 0..12),
        ) {
            let mut a = Admission::new(Capacity::new(cap, cpus).unwrap());
            let mut granted: Vec<f64> = Vec::new();
            for share in reqs {
                let r = share * cap;
                let free: f64 = granted.iter().fold(cap, |f, &g| (f - g) * (1.0 - g / cap));
                let oracle_ok = r <= 0.9 * cap
                    && granted.len() + 1 < cpus
                    && (free - r) * (1.0 - r / cap) > 0.0
                    && r < free;
                let got = a.admit(r);
                prop_assert_eq!(got.is_ok(), oracle_ok, "r={} free={} got={:?}", r, free, got);
                if got.is_ok() {
                    granted.push(r);
                }
                prop_assert!(a.free_bandwidth() > 0.0);
                prop_assert!((a.reserved() - granted.iter().sum::<f64>()).abs() <= 1e-6 * cap);
            }
        }
    }
}
