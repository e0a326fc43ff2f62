//! Helpers shared by the test files: counters for the OS-thread tests (`stress.rs`,
//! `oversubscribed.rs`), and [`fake_hook`], the scheduler hook of `placement.rs` and `windows.rs`.
#![allow(dead_code)]

pub mod fake_hook;

use std::sync::Arc;

/// Scales iteration counts down in debug builds.
pub fn iters(release: usize) -> usize {
    if cfg!(debug_assertions) {
        release / 10
    } else {
        release
    }
}

/// `threads` OS threads each add 1 to a counter under a `lock_api::Mutex<R, _>`, `per_thread`
/// times, with a non-atomic read-modify-write (lost updates would show in the total); asserts
/// the exact total and hands the mutex back for further checks.
pub fn exact_counter<R: lock_api::RawMutex + Send + Sync + 'static>(
    threads: usize,
    per_thread: usize,
) -> Arc<lock_api::Mutex<R, u64>>
where
    R::Guard: 'static,
{
    let m = Arc::new(lock_api::Mutex::<R, u64>::new(0));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    let mut g = m.lock();
                    let v = *g;
                    std::hint::black_box(&v);
                    *g = v + 1;
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*m.lock(), (threads * per_thread) as u64);
    m
}
