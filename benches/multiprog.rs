//! 002's experiment at small size: a lock-and-barrier loop under multiprogramming degree 1–4,
//! i.e. 1 to 4 copies of the same program running at once on this machine's 2 CPUs.
//!
//! The program: 2 OS threads (one per CPU). Each iteration takes the lock, does ≈40 ns of work
//! on the shared counter inside, releases it and does ≈400 ns of work outside; every 16
//! iterations all threads meet at a barrier. One criterion iteration is one loop iteration of
//! every thread (the time is from the moment the threads are lined up to the last one's end).
//!
//! Multiprogramming degree `d`: before timing, `d - 1` background copies of this bench binary are
//! started (same variant, same loop, repeated until they are killed), so `2d` threads compete for
//! 2 CPUs and lock holders and barrier laggards get preempted — the case informing waiting was
//! designed for.
//!
//! Variants (same program, only the waiting differs):
//! - `informed`: footprint-locks TTAS mutex + central barrier with `Informed` waiting (002/004:
//!   spin while the holder runs, block when the expected wait is long or the machine is
//!   oversubscribed);
//! - `spin`: the same algorithms with `AlwaysSpin` (scheduler-oblivious spinning);
//! - `block`: the same algorithms with `ImmediateBlock` (park at once);
//! - `std`: `std::sync::Mutex` + `std::sync::Barrier` (peer);
//! - `parking_lot`: `parking_lot::Mutex` + `std::sync::Barrier` (peer).
//!
//! Run: `cargo bench --bench multiprog -- --warm-up-time 1 --measurement-time 3`
//! (the background copies are this binary re-run with `FOOTPRINT_MULTIPROG_BACKGROUND=<variant>`;
//! they are killed when their degree is done.)

use footprint_workloads::multiprog as program;

use criterion::{criterion_group, BenchmarkId, Criterion};
use program::{Background, Variant};

fn multiprogramming(c: &mut Criterion) {
    let mut group = c.benchmark_group("multiprog");
    for degree in 1..=4usize {
        for variant in Variant::ALL {
            let _background = Background::start(variant, degree - 1);
            group.bench_function(BenchmarkId::new(variant.name(), degree), |b| {
                b.iter_custom(|iters| variant.run(iters))
            });
        }
    }
    group.finish();
}

use footprint_workloads::short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = multiprogramming
}

fn main() {
    program::run_background_if_requested();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
