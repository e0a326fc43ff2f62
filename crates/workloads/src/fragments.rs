//! 001's data-fragment (DF) micro-benchmark body, shared by `benches/fragments.rs` and the
//! report (`tools/report/src/experiments/fragments_001.rs`); what it measures is described there.

use std::hint::black_box;
use std::sync::Arc;

use rayon::prelude::*;

/// Workers of the bench (the 2-core development machine); [`CONFIGS`] is sized for them.
pub const WORKERS: usize = 2;
/// Threads per fragment.
pub const PER: usize = 8;
/// Passes of each thread over its fragment.
pub const PASSES: usize = 1;

/// The configurations of the bench, on [`WORKERS`] workers: (fragment bytes, fragment count).
/// What each tests depends on the fragments' total against the L2s of all the processors, so
/// [`configs`] scales the counts with the worker count.
pub const CONFIGS: [(usize, usize); 3] = [
    // All 16 fit the two L2s together (4 MiB): little to gain.
    (256 << 10, 16),
    // One fits an L2, all 16 (16 MiB) do not: the case 001's rule is for.
    (1 << 20, 16),
    // One fragment exceeds the L2: a batch cannot keep it cached either.
    (4 << 20, 4),
];

/// The configurations for `workers` workers: [`CONFIGS`]' fragment counts per worker (8, 8
/// and 2) times `workers`, the fragment sizes unchanged; the bench's own at [`WORKERS`].
///
/// ```
/// use footprint_workloads::fragments::{configs, CONFIGS, WORKERS};
/// assert_eq!(configs(WORKERS), CONFIGS.to_vec());
/// assert_eq!(configs(1), vec![(256 << 10, 8), (1 << 20, 8), (4 << 20, 2)]);
/// assert_eq!(configs(16)[1], (1 << 20, 128));
/// ```
pub fn configs(workers: usize) -> Vec<(usize, usize)> {
    CONFIGS
        .iter()
        .map(|&(bytes, count)| (bytes, count / WORKERS * workers))
        .collect()
}

/// A fixed pseudo-random permutation of `lines` line indices.
pub fn permutation(lines: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..lines as u32).collect();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

/// The work of one thread: `PASSES` reads of its fragment, one word per line.
pub fn work(fragment: &[u64], order: &[u32]) -> u64 {
    let mut sum = 0u64;
    for _ in 0..PASSES {
        for &line in order {
            sum = sum.wrapping_add(fragment[line as usize * 8]);
        }
    }
    black_box(sum)
}

/// The fragments, the line order and the checked result of one configuration.
pub struct Setup {
    pub fragments: Vec<Arc<Vec<u64>>>,
    pub order: Arc<Vec<u32>>,
    pub expected: u64,
}

impl Setup {
    /// `count` fragments of `bytes` bytes each.
    pub fn new(bytes: usize, count: usize) -> Setup {
        let words = bytes / 8;
        let fragments: Vec<Arc<Vec<u64>>> = (0..count)
            .map(|f| Arc::new((0..words as u64).map(|i| i ^ f as u64).collect()))
            .collect();
        let order = Arc::new(permutation(words / 8));
        let expected = (0..PER * count)
            .map(|k| work(&fragments[k % count], &order))
            .fold(0u64, u64::wrapping_add);
        Setup {
            fragments,
            order,
            expected,
        }
    }

    /// One run on `rt`: `PER` threads per fragment, with or without fragment hints; the sum.
    pub fn run_footprint(&self, rt: &footprint::Runtime, hints: bool) -> u64 {
        let count = self.fragments.len();
        let bytes = self.fragments[0].len() * 8;
        rt.block_on(|| {
            let handles: Vec<_> = (0..PER * count)
                .map(|k| {
                    let f = k % count;
                    let (data, order) = (self.fragments[f].clone(), self.order.clone());
                    let job = move || work(&data, &order);
                    if hints {
                        footprint::GreenBuilder::new()
                            .fragment(f as u64, bytes)
                            .spawn(job)
                            .expect("a valid fragment hint")
                    } else {
                        footprint::spawn(job)
                    }
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic"))
                .fold(0u64, u64::wrapping_add)
        })
    }

    /// The same work items on a rayon pool; the sum.
    pub fn run_rayon(&self, pool: &rayon::ThreadPool) -> u64 {
        let count = self.fragments.len();
        pool.install(|| {
            (0..PER * count)
                .into_par_iter()
                .map(|k| work(&self.fragments[k % count], &self.order))
                .reduce(|| 0, u64::wrapping_add)
        })
    }
}
