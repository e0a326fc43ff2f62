//! Timing: medians of repeated runs, and per-iteration times with the iteration count calibrated
//! to a time budget (the same idea as criterion's `iter_custom`, without its statistics).

use std::time::{Duration, Instant};

/// Repeated measurements of one quantity, in nanoseconds.
#[derive(Clone, Debug)]
pub struct Sample {
    pub values: Vec<f64>,
}

impl Sample {
    /// The median (mean of the middle two for an even count); NaN when empty.
    pub fn median(&self) -> f64 {
        median(&self.values)
    }
}

/// The median of `values`; NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs `f` once to warm up, then `reps` times; each call returns the time to record.
pub fn repeat(reps: usize, mut f: impl FnMut() -> Duration) -> Sample {
    f();
    Sample {
        values: (0..reps.max(1)).map(|_| f().as_nanos() as f64).collect(),
    }
}

/// Like [`repeat`], for runs timed from outside (the whole call).
pub fn repeat_whole(reps: usize, mut f: impl FnMut()) -> Sample {
    repeat(reps, || {
        let t = Instant::now();
        f();
        t.elapsed()
    })
}

/// Like [`repeat_whole`] for several runs compared with each other: one warm-up call of each,
/// then `reps` rounds that time each once, in turn, so that a slow phase of the machine falls on
/// all of them alike instead of on whichever ran during it (one block per run read fib(30) at
/// 1.40× rayon where criterion, which also runs them one after the other but in short samples,
/// read 1.01×). One sample per run, in `fs`'s order.
pub fn repeat_whole_interleaved(reps: usize, fs: &mut [&mut dyn FnMut()]) -> Vec<Sample> {
    for f in fs.iter_mut() {
        f();
    }
    let mut samples = vec![Sample { values: Vec::new() }; fs.len()];
    for _ in 0..reps.max(1) {
        for (f, sample) in fs.iter_mut().zip(samples.iter_mut()) {
            let t = Instant::now();
            f();
            sample.values.push(t.elapsed().as_nanos() as f64);
        }
    }
    samples
}

/// The iteration count at which one call of `f(iters)` (which returns the time of `iters`
/// iterations) takes about `per_rep`; the calibration calls double as warm-up: the count grows
/// until one call takes at least an eighth of `per_rep`.
fn calibrate(per_rep: f64, f: &mut dyn FnMut(u64) -> Duration) -> u64 {
    let mut iters = 1u64;
    loop {
        let t = f(iters).as_secs_f64();
        if t >= per_rep / 8.0 || iters >= 1 << 40 {
            let per_iter = t / iters as f64;
            return ((per_rep / per_iter.max(1e-12)) as u64).clamp(1, 1 << 40);
        }
        iters *= 4;
    }
}

/// Time per iteration of `f(iters)` (which returns the time of `iters` iterations): the count is
/// calibrated so that one repetition takes about `budget / reps`, then `reps` repetitions.
pub fn per_iteration(budget: Duration, reps: usize, mut f: impl FnMut(u64) -> Duration) -> Sample {
    let reps = reps.max(1);
    let per_rep = budget.as_secs_f64() / reps as f64;
    let iters = calibrate(per_rep, &mut f);
    Sample {
        values: (0..reps)
            .map(|_| one_repetition(per_rep, iters, &mut f))
            .collect(),
    }
}

/// Time per iteration over one repetition: calls of `f(iters)` until they have taken half of
/// `per_rep` (one call where the calibration was right).
///
/// Why not one call whatever it takes: a calibration can meet a state of the machine that the
/// repetitions do not. Under multiprogramming the always-spin variant of 002's loop calibrated
/// at 300–500 µs per iteration (its threads preempted while their partner spins) to ~900
/// iterations, and 4 of its 7 repetitions then finished in 0.47 ms, inside one window in which
/// the kernel happened to run both of its threads, at the idle machine's 510 ns per iteration:
/// their median said that spinning costs nothing at degree 3. A repetition as long as planned
/// spans many time slices, which is what the experiment measures. (At most
/// [`MAX_CALLS_PER_REPETITION`] calls: a program that reports no time at all ends too.)
fn one_repetition(per_rep: f64, iters: u64, f: &mut dyn FnMut(u64) -> Duration) -> f64 {
    let (mut total, mut done, mut calls) = (Duration::ZERO, 0u64, 0u32);
    while calls == 0 || total.as_secs_f64() < per_rep / 2.0 && calls < MAX_CALLS_PER_REPETITION {
        total += f(iters);
        done += iters;
        calls += 1;
    }
    total.as_nanos() as f64 / done as f64
}

/// Calls of the program one repetition makes at most ([`one_repetition`]).
const MAX_CALLS_PER_REPETITION: u32 = 10_000;

/// [`per_iteration`] for several programs compared with each other, each given `budget`: each is
/// calibrated, then `reps` rounds time each once, in turn (see [`repeat_whole_interleaved`] for
/// why). One sample per program, in `fs`'s order.
pub fn per_iteration_interleaved(
    budget: Duration,
    reps: usize,
    fs: &mut [&mut dyn FnMut(u64) -> Duration],
) -> Vec<Sample> {
    let reps = reps.max(1);
    let per_rep = budget.as_secs_f64() / reps as f64;
    let iters: Vec<u64> = fs.iter_mut().map(|f| calibrate(per_rep, *f)).collect();
    let mut samples = vec![Sample { values: Vec::new() }; fs.len()];
    for _ in 0..reps {
        for ((f, &n), sample) in fs.iter_mut().zip(&iters).zip(samples.iter_mut()) {
            sample.values.push(one_repetition(per_rep, n, *f));
        }
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted program: call `k` takes `times_ms[k]` (the last one repeats).
    fn scripted(times_ms: &'static [u64]) -> impl FnMut(u64) -> Duration {
        let mut call = 0;
        move |_iters| {
            let t = times_ms[call.min(times_ms.len() - 1)];
            call += 1;
            Duration::from_millis(t)
        }
    }

    #[test]
    fn a_repetition_shorter_than_planned_is_extended_until_it_lasts_half_its_budget() {
        // Planned 400 ms: two quick calls (1 ms each, inside one lucky time slice) are not a
        // repetition; the third call's 300 ms brings it past 200 ms.
        let mut f = scripted(&[1, 1, 300]);
        let ns = one_repetition(0.4, 10, &mut f);
        assert_eq!(ns, 302e6 / 30.0);
    }

    #[test]
    fn a_repetition_as_long_as_planned_is_one_call() {
        let mut calls = 0;
        let mut f = |_iters| {
            calls += 1;
            Duration::from_millis(250)
        };
        let ns = one_repetition(0.4, 1000, &mut f);
        assert_eq!(calls, 1);
        assert_eq!(ns, 250e6 / 1000.0);
    }

    #[test]
    fn a_program_that_reports_no_time_ends_its_repetition() {
        let mut f = scripted(&[0]);
        assert_eq!(one_repetition(0.4, 10, &mut f), 0.0);
    }
}
