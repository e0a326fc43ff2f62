//! `par::map_reduce`: a parallel map over a range, reduced in index order.

use super::fold::fold_in_order;
use super::schedule::Schedule;
use std::ops::Range;

/// Maps every index of `range` with `map` and reduces the values with `reduce`, in parallel on
/// the current runtime's workers (the global runtime's outside), iterations dealt by `schedule`.
///
/// `reduce` must be associative; it need not be commutative: values are reduced in index order
/// (each participant folds its own takes starting from `identity()`, and the partial results
/// are joined left to right). An empty range gives `identity()`. A panic in `map`, `identity` or
/// `reduce` stops the loop and is re-raised here once every participant has stopped.
///
/// ```
/// use footprint::par::{self, Schedule};
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let a: Vec<f64> = (0..1000).map(|i| i as f64).collect();
/// let b = vec![2.0; 1000];
/// let dot = rt.block_on(|| {
///     par::map_reduce(0..a.len(), Schedule::Static, |i| a[i] * b[i], || 0.0, |x, y| x + y)
/// });
/// assert_eq!(dot, 999_000.0);
/// # Ok::<(), footprint::Error>(())
/// ```
///
/// # Panics
/// With `Schedule::Dynamic(0)` or `Schedule::Guided(0)` (at the call, before any iteration).
#[track_caller]
pub fn map_reduce<T, M, I, R>(
    range: Range<usize>,
    schedule: Schedule,
    map: M,
    identity: I,
    reduce: R,
) -> T
where
    T: Send,
    M: Fn(usize) -> T + Sync + Send,
    I: Fn() -> T + Sync + Send,
    R: Fn(T, T) -> T + Sync + Send,
{
    let base = range.start;
    fold_in_order(
        range.len(),
        &schedule,
        |r| {
            (r.start + base..r.end + base)
                .map(&map)
                .fold(identity(), &reduce)
        },
        &reduce,
    )
    .unwrap_or_else(identity)
}
