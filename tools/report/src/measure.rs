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
    let iters = calibrate(budget.as_secs_f64() / reps as f64, &mut f);
    Sample {
        values: (0..reps)
            .map(|_| f(iters).as_nanos() as f64 / iters as f64)
            .collect(),
    }
}

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
            sample.values.push(f(n).as_nanos() as f64 / n as f64);
        }
    }
    samples
}
