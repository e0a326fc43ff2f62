//! `fib(n)` with a `join` at every level (no cut-off) for footprint and rayon, and the sequential
//! oracle: shared by `benches/fib.rs` and the report (`tools/report`).

/// footprint: `footprint::join` at every level (call inside `Runtime::block_on`).
pub fn fib_footprint(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let (a, b) = footprint::join(|| fib_footprint(n - 1), || fib_footprint(n - 2));
    a + b
}

/// rayon: `rayon::join` at every level (call inside `ThreadPool::install`).
pub fn fib_rayon(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1), || fib_rayon(n - 2));
    a + b
}

/// The sequential recursion (the oracle).
pub fn fib_sequential(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    fib_sequential(n - 1) + fib_sequential(n - 2)
}
