//! A token bucket of bytes: what slows one thread without a guarantee to its share.
//!
//! Time is explicit (nanoseconds from any fixed origin), so that the runtime feeds it the
//! clock and tests and the simulator feed it scripted times.

use std::time::Duration;

/// Bytes that refill at `rate` per second up to `burst`; a charge that overdraws it returns the
/// delay after which the debt is paid.
///
/// The bucket is drained by what a thread did (bytes are charged *after* a run), so it may go
/// into debt: the thread then waits `debt / rate` before its next run. A small burst (a few
/// milliseconds of the rate) gives fine-grained delays ("you don't open and close the faucet",
/// 004 §4.2.1); a burst smaller than one run's traffic delays every run in proportion.
///
/// ```
/// use footprint_bandwidth::TokenBucket;
/// use std::time::Duration;
/// // 1 MB/s, 10 kB burst, full at t = 0.
/// let mut b = TokenBucket::new(1e6, 10e3, 0);
/// assert_eq!(b.charge(10_000, 0), Duration::ZERO);          // the burst
/// assert_eq!(b.charge(5_000, 0), Duration::from_millis(5)); // 5 kB of debt at 1 MB/s
/// // 5 ms later the debt is paid and nothing more has refilled.
/// assert_eq!(b.charge(1, 5_000_000), Duration::from_micros(1));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last_ns: u64,
}

impl TokenBucket {
    /// A full bucket refilling at `rate` bytes per second up to `burst` bytes, at time `now_ns`.
    /// A rate that is not finite and positive is clamped to one byte per second (a bucket is
    /// only made for a thread that is being limited).
    pub fn new(rate: f64, burst: f64, now_ns: u64) -> TokenBucket {
        let rate = sane(rate);
        let burst = if burst.is_finite() && burst > 0.0 {
            burst
        } else {
            0.0
        };
        TokenBucket {
            rate,
            burst,
            tokens: burst,
            last_ns: now_ns,
        }
    }

    /// The refill rate, bytes per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Bytes available now (negative: debt).
    pub fn tokens(&self) -> f64 {
        self.tokens
    }

    fn refill(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.last_ns) as f64 * 1e-9;
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        self.last_ns = self.last_ns.max(now_ns);
    }

    /// Changes the rate from `now_ns` on (what accrued so far accrued at the old rate).
    pub fn set_rate(&mut self, rate: f64, burst: f64, now_ns: u64) {
        self.refill(now_ns);
        self.rate = sane(rate);
        if burst.is_finite() && burst >= 0.0 {
            self.burst = burst;
            self.tokens = self.tokens.min(burst);
        }
    }

    /// Charges `bytes` done by `now_ns`; returns how long the thread must wait before its next
    /// run (zero while the bucket covers it).
    pub fn charge(&mut self, bytes: u64, now_ns: u64) -> Duration {
        self.refill(now_ns);
        self.tokens -= bytes as f64;
        self.debt_delay()
    }

    /// The wait that pays the current debt (zero without debt).
    pub fn debt_delay(&self) -> Duration {
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
}

fn sane(rate: f64) -> f64 {
    if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_rate_change_keeps_what_accrued() {
        let mut b = TokenBucket::new(1e6, 1e6, 0);
        b.charge(1_000_000, 0); // empty
        b.set_rate(2e6, 1e6, 100_000_000); // 0.1 s at 1 MB/s accrued 100 kB
        assert!((b.tokens() - 100e3).abs() < 1e-6);
        assert_eq!(b.charge(300_000, 100_000_000), Duration::from_millis(100)); // 200 kB / 2 MB/s
    }

    #[test]
    fn time_going_backwards_adds_nothing() {
        let mut b = TokenBucket::new(1e6, 1e3, 1_000);
        b.charge(1_000, 1_000);
        assert_eq!(b.charge(0, 0), Duration::ZERO);
        assert_eq!(b.tokens(), 0.0);
    }

    proptest! {
        /// A thread that always waits the returned delay before its next charge moves at most
        /// `burst + rate · elapsed` bytes: the oracle is the bucket's defining inequality.
        #[test]
        fn obeying_the_delays_keeps_the_rate(
            rate in 1e3f64..1e10,
            burst_ms in 0.0f64..20.0,
            runs in proptest::collection::vec((1u64..1_000_000, 0u64..2_000_000), 1..200),
        ) {
            let burst = rate * burst_ms * 1e-3;
            let mut b = TokenBucket::new(rate, burst, 0);
            let mut now = 0u64;
            let mut moved = 0.0f64;
            for (bytes, gap) in runs {
                now += gap;
                moved += bytes as f64;
                let delay = b.charge(bytes, now);
                // The bytes charged so far, once the delay is served, fit the budget.
                let until = now + delay.as_nanos() as u64;
                prop_assert!(moved <= burst + rate * until as f64 * 1e-9 + rate * 2e-9 + 1.0,
                    "moved {} by {} ns", moved, until);
                now = until;
            }
        }
    }
}
