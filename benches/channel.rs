//! `footprint::channel` beside its peers in one run.
//!
//! - `channel_ping_pong/*`: two green threads on one worker pass a counter through two
//!   rendezvous channels; one iteration is one message (a round trip is two). `yield` is the
//!   footprint yield measured the same way (two green threads alternating on one worker, one
//!   iteration = one yield), so the ratio is read off one run. Target: message ≤ 3 × yield.
//! - `channel_mpmc/*`: 4 producers and 4 consumers move `iters` messages (`u64`) through one
//!   channel; one iteration is one message. footprint: green threads on a 2-worker runtime,
//!   `bounded(64)` and `unbounded`; crossbeam-channel: 8 OS threads, same capacities; `may`:
//!   coroutines on 2 `may` workers, its `mpmc` channel (unbounded only). Target: footprint ≥ both.
//!
//! Run: `cargo bench --bench channel -- --warm-up-time 1 --measurement-time 2`

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const PRODUCERS: u64 = 4;
const CONSUMERS: u64 = 4;

fn ping_pong(c: &mut Criterion) {
    let mut group = c.benchmark_group("channel_ping_pong");
    group.throughput(Throughput::Elements(1));
    let rt = green::runtime(1);
    group.bench_function("yield", |b| {
        b.iter_custom(|iters| micro::footprint_yield(&rt, iters))
    });
    group.bench_function("footprint_bounded0", |b| {
        b.iter_custom(|iters| {
            rt.block_on(|| {
                let (to_b, from_a) = footprint::channel::bounded::<u64>(0);
                let (to_a, from_b) = footprint::channel::bounded::<u64>(0);
                let partner = footprint::spawn(move || {
                    for v in from_a.iter() {
                        to_a.send(v + 1).expect("the timer receives");
                    }
                });
                let rounds = iters.div_ceil(2);
                let start = Instant::now();
                let mut v = 0;
                for _ in 0..rounds {
                    to_b.send(v).expect("the partner receives");
                    v = from_b.recv().expect("the partner answers");
                }
                let t = start.elapsed();
                drop(to_b);
                partner.join().expect("no panic");
                assert_eq!(v, rounds);
                t * iters as u32 / (2 * rounds) as u32
            })
        })
    });
    group.finish();
}

/// A thread body (producer or consumer) returning how many messages it received.
type Body = Box<dyn FnOnce() -> u64 + Send>;
/// Joins a thread and returns its body's result.
type Join = Box<dyn FnOnce() -> u64>;

/// Moves `iters` messages from `PRODUCERS` to `CONSUMERS` threads made by `spawn`; returns the
/// time from the first spawn to the last join.
fn mpmc_run<S, R>(
    iters: u64,
    tx: S,
    rx: R,
    send: fn(&S, u64),
    recv: fn(&R) -> Option<u64>,
    spawn: &dyn Fn(Body) -> Join,
) -> Duration
where
    S: Clone + Send + 'static,
    R: Clone + Send + 'static,
{
    let per = iters.div_ceil(PRODUCERS);
    let start = Instant::now();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let rx = rx.clone();
            spawn(Box::new(move || {
                let mut n = 0;
                while recv(&rx).is_some() {
                    n += 1;
                }
                n
            }))
        })
        .collect();
    drop(rx);
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|_| {
            let tx = tx.clone();
            spawn(Box::new(move || {
                for i in 0..per {
                    send(&tx, i);
                }
                0
            }))
        })
        .collect();
    drop(tx);
    for p in producers {
        p();
    }
    let received: u64 = consumers.into_iter().map(|c| c()).sum();
    let t = start.elapsed();
    assert_eq!(received, per * PRODUCERS, "every message once");
    t * iters as u32 / (per * PRODUCERS) as u32
}

fn green_spawn(f: Body) -> Join {
    let h = footprint::spawn(f);
    Box::new(move || h.join().expect("no panic"))
}

fn os_spawn(f: Body) -> Join {
    let h = std::thread::spawn(f);
    Box::new(move || h.join().expect("no panic"))
}

fn may_spawn(f: Body) -> Join {
    // SAFETY (may's contract for `spawn`): the closure uses no thread-local storage and does not
    // block its worker except through may's own primitives (its channel).
    let h = unsafe { may::coroutine::spawn(f) };
    Box::new(move || h.join().expect("no panic"))
}

fn mpmc(c: &mut Criterion) {
    may::config().set_workers(2);
    let mut group = c.benchmark_group("channel_mpmc");
    group.throughput(Throughput::Elements(1));
    let rt = green::runtime(2);
    for (name, cap) in [("bounded64", Some(64)), ("unbounded", None)] {
        group.bench_function(format!("footprint_green_{name}"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(|| {
                    let (tx, rx) = match cap {
                        Some(c) => footprint::channel::bounded(c),
                        None => footprint::channel::unbounded(),
                    };
                    mpmc_run(
                        iters,
                        tx,
                        rx,
                        |t, v| t.send(v).expect("receivers live"),
                        |r| r.recv().ok(),
                        &green_spawn,
                    )
                })
            })
        });
        group.bench_function(format!("crossbeam_os8_{name}"), |b| {
            b.iter_custom(|iters| {
                let (tx, rx) = match cap {
                    Some(c) => crossbeam_channel::bounded(c),
                    None => crossbeam_channel::unbounded(),
                };
                mpmc_run(
                    iters,
                    tx,
                    rx,
                    |t, v| t.send(v).expect("receivers live"),
                    |r| r.recv().ok(),
                    &os_spawn,
                )
            })
        });
    }
    group.bench_function("may_2workers_unbounded", |b| {
        b.iter_custom(|iters| {
            let (tx, rx) = may::sync::mpmc::channel();
            mpmc_run(
                iters,
                tx,
                rx,
                |t, v| t.send(v).expect("receivers live"),
                |r| r.recv().ok(),
                &may_spawn,
            )
        })
    });
    group.finish();
}

use footprint_workloads::green;
use footprint_workloads::micro;
use footprint_workloads::short;

criterion_group! {
    name = benches;
    config = short::config();
    targets = ping_pong, mpmc
}
criterion_main!(benches);
