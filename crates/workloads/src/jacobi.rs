//! Jacobi sweeps (1-D 3-point and 2-D 5-point) and the ways to run one over two workers that
//! `benches/par.rs` and `examples/jacobi_par.rs` compare: footprint's loops with each schedule,
//! rayon's `par_chunks_mut`, and OpenMP-like fixed OS threads that always sweep the same
//! chunks and meet at a barrier after each sweep.

use footprint::par::{self, Schedule};
use rayon::prelude::*;

/// The shape of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// `n` points in a line.
    One,
    /// Rows of `width` points.
    Two { width: usize },
}

/// Two arrays (read one, write the other, swap), cut into chunks of `chunk_len` points: runs
/// of points in 1-D, bands of whole rows in 2-D.
pub struct Grid {
    pub dim: Dim,
    pub chunk_len: usize,
    pub src: Vec<f64>,
    pub dst: Vec<f64>,
}

impl Grid {
    /// A grid whose two arrays together take about `bytes` bytes, in about `chunks` chunks.
    pub fn new(two_d: bool, bytes: usize, chunks: usize) -> Grid {
        let points = (bytes / 16).max(64);
        let (dim, n, chunk_len) = if two_d {
            let width = (points as f64).sqrt() as usize;
            let rows = points / width;
            let band = rows.div_ceil(chunks).max(1);
            (Dim::Two { width }, width * rows, band * width)
        } else {
            (Dim::One, points, points.div_ceil(chunks).max(1))
        };
        let src: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f64 / 1000.0)
            .collect();
        Grid {
            dim,
            chunk_len,
            dst: src.clone(),
            src,
        }
    }

    /// Number of chunks.
    pub fn chunks(&self) -> usize {
        self.src.len().div_ceil(self.chunk_len)
    }

    /// A value that depends on every point (equal across implementations after equal sweeps).
    pub fn checksum(&self) -> f64 {
        self.src
            .iter()
            .enumerate()
            .map(|(i, x)| x * (1 + i % 13) as f64)
            .sum()
    }

    /// One sweep with footprint's `for_each_chunk_mut` and `schedule`.
    pub fn sweep_footprint(&mut self, schedule: Schedule) {
        let (dim, len, src) = (self.dim, self.chunk_len, &self.src);
        par::for_each_chunk_mut(&mut self.dst, len, schedule, |c, out| {
            step(dim, src, c * len, out)
        });
        std::mem::swap(&mut self.src, &mut self.dst);
    }

    /// One sweep with rayon's `par_chunks_mut` (on the current rayon pool).
    pub fn sweep_rayon(&mut self) {
        let (dim, len, src) = (self.dim, self.chunk_len, &self.src);
        self.dst
            .par_chunks_mut(len)
            .enumerate()
            .for_each(|(c, out)| step(dim, src, c * len, out));
        std::mem::swap(&mut self.src, &mut self.dst);
    }

    /// `sweeps` sweeps on `threads` OS threads (pinned to the allowed CPUs in turn), thread `t`
    /// always sweeping the same contiguous block of chunks, a barrier after each sweep.
    pub fn sweeps_fixed_threads(&mut self, threads: usize, sweeps: usize) {
        let chunks = self.chunks();
        let (dim, len, n) = (self.dim, self.chunk_len, self.src.len());
        let arrays = [Shared(self.src.as_mut_ptr()), Shared(self.dst.as_mut_ptr())];
        let barrier = std::sync::Barrier::new(threads);
        let cpus = footprint::affinity::allowed_cpus().unwrap_or_default();
        std::thread::scope(|s| {
            for t in 0..threads {
                let (barrier, arrays, cpus) = (&barrier, &arrays, &cpus);
                s.spawn(move || {
                    if !cpus.is_empty() {
                        pin_to(cpus[t % cpus.len()]);
                    }
                    let first = (t * chunks / threads * len).min(n);
                    let end = ((t + 1) * chunks / threads * len).min(n);
                    for k in 0..sweeps {
                        let (from, to) = (&arrays[k % 2], &arrays[(k + 1) % 2]);
                        // SAFETY: during sweep k every thread only reads `from` and writes its
                        // own block first..end of `to`; the barrier orders sweep k's writes
                        // before sweep k + 1's reads, and both arrays outlive the scope.
                        let (src, out) = unsafe {
                            (
                                std::slice::from_raw_parts(from.0, n),
                                std::slice::from_raw_parts_mut(to.0.add(first), end - first),
                            )
                        };
                        step(dim, src, first, out);
                        barrier.wait();
                    }
                });
            }
        });
        if sweeps % 2 == 1 {
            std::mem::swap(&mut self.src, &mut self.dst);
        }
    }
}

/// One of the grid's arrays, shared by the fixed threads.
struct Shared(*mut f64);
// SAFETY: the threads touch disjoint parts between barriers (see sweeps_fixed_threads).
unsafe impl Sync for Shared {}

fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; sched_setaffinity(0, ..)
    // changes only the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Writes points `first..first + out.len()` of the next iterate from `src`. 1-D: the average
/// of a point and its two neighbours (fixed 1.0 left of the line, 0.0 right of it). 2-D: the
/// average of a point and its four neighbours inside, boundary points kept.
pub fn step(dim: Dim, src: &[f64], first: usize, out: &mut [f64]) {
    let n = src.len();
    match dim {
        Dim::One => {
            for (k, x) in out.iter_mut().enumerate() {
                let i = first + k;
                let left = if i == 0 { 1.0 } else { src[i - 1] };
                let right = if i + 1 == n { 0.0 } else { src[i + 1] };
                *x = (left + src[i] + right) * (1.0 / 3.0);
            }
        }
        Dim::Two { width } => {
            let rows = n / width;
            for (k, row) in out.chunks_mut(width).enumerate() {
                let r = first / width + k;
                let at = r * width;
                if r == 0 || r + 1 == rows {
                    row.copy_from_slice(&src[at..at + width]);
                    continue;
                }
                row[0] = src[at];
                row[width - 1] = src[at + width - 1];
                for (j, x) in row.iter_mut().enumerate().take(width - 1).skip(1) {
                    let i = at + j;
                    *x = (src[i] + src[i - 1] + src[i + 1] + src[i - width] + src[i + width]) * 0.2;
                }
            }
        }
    }
}
