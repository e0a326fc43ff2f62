//! The many-core synchronisation shapes of [`crate::many_core`] as rows of the suite, so that
//! one run over worker counts shows how each holds up as workers grow: the hot `Mutex<[u64; 8]>`
//! loop and the fan-in channel pipeline at about 1 and at 4 or 3 threads per worker, the
//! branch-and-bound tour whose bound every node reads through a `Mutex`. (The SPMD stencil's
//! rows, 1 and 4 ranks per worker, are the suite's own.)
//!
//! The bodies check their results (a wrong count, tour or sum panics); a row's `check` is the
//! value the body verified. The OS-thread peers run on a thread restricted to the row's CPUs,
//! whose threads inherit the restriction ([`on_cpus`]).

use super::cpus::on_cpus;
use super::{row, Env, Row, Run};
use crate::many_core as bodies;
use std::time::Duration;

/// Threads through the hot lock: `per` per worker, the suite's lock operations shared among them.
fn bump_threads(e: &Env, per: usize) -> (usize, usize) {
    let threads = per * e.w;
    (threads, (e.sizes.lock_ops / threads).max(1))
}

/// A run of `threads × ops` bumps that took `t`.
fn bumped(t: Duration, threads: usize, ops: usize) -> Run {
    Run {
        secs: t.as_secs_f64(),
        check: (threads * ops) as u64,
    }
}

/// Producers and squarers of the pipeline with about `per` stage threads per worker: a third
/// of them producers (at least one), twice as many squarers; the summer comes on top. At 16
/// workers, `per` = 3 is the shape first measured there (16 → 32 → 1).
fn stages(e: &Env, per: usize) -> (usize, usize) {
    let producers = (per * e.w / 3).max(1);
    (producers, 2 * producers)
}

/// One search of the suite's tour by `search` (given the distances and the optimum it checks).
fn tsp(e: &Env, search: impl FnOnce(&[Vec<u64>], u64) -> Duration) -> Run {
    let d = bodies::tsp_instance(e.sizes.tsp_cities);
    let best = bodies::tsp_expected(&d);
    Run {
        secs: search(&d, best).as_secs_f64(),
        check: best,
    }
}

/// A pipeline run of `messages` that took `t` (the body checked the sum).
fn piped(t: Duration, messages: u64) -> Run {
    Run {
        secs: t.as_secs_f64(),
        check: bodies::pipeline_expected(messages),
    }
}

/// The rows, in table order.
pub(super) fn rows() -> Vec<Row> {
    type FpMutex = footprint::sync::Mutex<[u64; 8]>;
    let mut rows = Vec::new();
    for (per, label) in [(1, "1 thread/worker"), (4, "4 threads/worker")] {
        let name = format!("mutex [u64; 8], {label}");
        let fp = move |e: &Env| {
            let (threads, ops) = bump_threads(e, per);
            bumped(
                bodies::bump_green::<FpMutex>(e.rt, threads, ops),
                threads,
                ops,
            )
        };
        rows.push(row(name.clone(), "std Mutex", fp, move |e| {
            let (threads, ops) = bump_threads(e, per);
            let t = on_cpus(e.cpus, || {
                bodies::bump_os::<std::sync::Mutex<[u64; 8]>>(threads, ops)
            });
            bumped(t, threads, ops)
        }));
        rows.push(row(name, "parking_lot", fp, move |e| {
            let (threads, ops) = bump_threads(e, per);
            let t = on_cpus(e.cpus, || {
                bodies::bump_os::<parking_lot::Mutex<[u64; 8]>>(threads, ops)
            });
            bumped(t, threads, ops)
        }));
    }
    rows.push(row(
        "TSP, bound in a Mutex",
        "rayon+std Mutex",
        |e| {
            tsp(e, |d, best| {
                bodies::tsp_green::<footprint::sync::Mutex<u64>>(e.rt, d, best)
            })
        },
        |e| {
            tsp(e, |d, best| {
                bodies::tsp_rayon::<std::sync::Mutex<u64>>(e.pool, d, best)
            })
        },
    ));
    for (per, label) in [(1, "1 thread/worker"), (3, "3 threads/worker")] {
        rows.push(row(
            format!("fan-in pipeline, {label}"),
            "crossbeam",
            move |e| {
                let (p, s) = stages(e, per);
                let m = e.sizes.messages as u64;
                piped(bodies::pipeline_green(e.rt, p, s, m), m)
            },
            move |e| {
                let (p, s) = stages(e, per);
                let m = e.sizes.messages as u64;
                piped(on_cpus(e.cpus, || bodies::pipeline_crossbeam(p, s, m)), m)
            },
        ));
    }
    rows
}
