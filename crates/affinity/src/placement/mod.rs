//! Placement advice: where a thread should run. Each advisor is small, deterministic and
//! separately tested; the runtime asks them at wake-up, at DF hints, and periodically.
//!
//! - [`lock_hot`]: a woken lock waiter goes to the releaser's worker unless that unbalances the
//!   load (000, FAST).
//! - [`fragments`]: threads declaring the same data fragment are batched on one worker and run
//!   back to back (001).
//! - [`shuffle`]: periodically regroup threads by lock time, one group per cache domain, by
//!   pairwise swaps (003 ch. 4).
//!
//! Partner forces (004 §5.3), which the runtime does not consult, are in
//! [`research::forces`](crate::research::forces).

pub mod fragments;
pub mod lock_hot;
pub mod shuffle;
