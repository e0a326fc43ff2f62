//! `footprint::channel` on green threads: exact-count MPMC on 2 workers, green and OS threads
//! mixed on one channel, and a ping-pong on one worker (a blocked operation parks the green
//! thread, so two threads on one worker make progress). Watchdogs turn a lost wake-up into a
//! failure.

mod common;

use common::{runtime, with_watchdog};
use footprint::channel::{self, Receiver, Sender};

/// A message: (producer, index in that producer's sequence).
type Msg = (usize, usize);

/// Receives until disconnection; returns (count, sum of indices), checking per-producer order.
fn drain(rx: &Receiver<Msg>, producers: usize) -> (usize, usize) {
    let mut last = vec![None::<usize>; producers];
    let (mut n, mut sum) = (0, 0);
    for (p, i) in rx.iter() {
        assert!(last[p] < Some(i), "producer {p}: {i} after {:?}", last[p]);
        last[p] = Some(i);
        n += 1;
        sum += i;
    }
    (n, sum)
}

fn produce(tx: &Sender<Msg>, p: usize, per: usize) {
    for i in 0..per {
        tx.send((p, i)).unwrap();
    }
}

/// From inside `block_on`: `consumers` green threads drain the channel (`drain(rx, k)` for the
/// `k`-th), `producers` green threads fill it (`produce(tx, p)`), the caller's ends are dropped;
/// returns the drained (count, sum) summed over the consumers.
fn green_mpmc(
    (tx, rx): (Sender<Msg>, Receiver<Msg>),
    consumers: usize,
    producers: usize,
    drain: impl Fn(&Receiver<Msg>, usize) -> (usize, usize) + Copy + Send + 'static,
    produce: impl Fn(&Sender<Msg>, usize) + Copy + Send + 'static,
) -> (usize, usize) {
    let cs: Vec<_> = (0..consumers)
        .map(|k| {
            let rx = rx.clone();
            footprint::spawn(move || drain(&rx, k))
        })
        .collect();
    let ps: Vec<_> = (0..producers)
        .map(|p| {
            let tx = tx.clone();
            footprint::spawn(move || produce(&tx, p))
        })
        .collect();
    drop((tx, rx));
    for p in ps {
        p.join().unwrap();
    }
    cs.into_iter()
        .map(|c| c.join().unwrap())
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

fn expect(total: (usize, usize), producers: usize, per: usize) {
    assert_eq!(total.0, producers * per, "every message once");
    assert_eq!(total.1, producers * per * (per - 1) / 2);
}

#[test]
fn mpmc_on_green_threads_exact_counts() {
    const P: usize = 4;
    const C: usize = 4;
    const PER: usize = 5_000;
    with_watchdog(120, "MPMC on green threads", || {
        let rt = runtime(2);
        for cap in [Some(0), Some(1), Some(64), None] {
            let total = rt.block_on(|| {
                let (tx, rx) = match cap {
                    Some(c) => channel::bounded(c),
                    None => channel::unbounded(),
                };
                green_mpmc(
                    (tx, rx),
                    C,
                    P,
                    |rx, _| drain(rx, P),
                    |tx, p| produce(tx, p, PER),
                )
            });
            expect(total, P, PER);
        }
    });
}

/// Two green producers and one OS producer, two green consumers and one OS consumer, one
/// bounded channel.
#[test]
fn green_and_os_threads_mixed_on_one_channel() {
    const PER: usize = 5_000;
    with_watchdog(120, "mixed green and OS threads", || {
        let rt = runtime(2);
        for cap in [0, 4] {
            let (tx, rx) = channel::bounded(cap);
            let os_consumer = {
                let rx = rx.clone();
                std::thread::spawn(move || drain(&rx, 3))
            };
            let os_producer = {
                let tx = tx.clone();
                std::thread::spawn(move || produce(&tx, 2, PER))
            };
            let green = rt.block_on(|| {
                let cs: Vec<_> = (0..2)
                    .map(|_| {
                        let rx = rx.clone();
                        footprint::spawn(move || drain(&rx, 3))
                    })
                    .collect();
                let ps: Vec<_> = (0..2)
                    .map(|p| {
                        let tx = tx.clone();
                        footprint::spawn(move || produce(&tx, p, PER))
                    })
                    .collect();
                for p in ps {
                    p.join().unwrap();
                }
                cs
            });
            os_producer.join().unwrap();
            drop((tx, rx));
            let mut total = os_consumer.join().unwrap();
            for c in green {
                let t = c.join().unwrap();
                total = (total.0 + t.0, total.1 + t.1);
            }
            expect(total, 3, PER);
        }
    });
}

/// Two green threads on one worker pass a counter back and forth through two rendezvous
/// channels: each blocked operation must park its thread so that the other can run.
#[test]
fn ping_pong_on_one_worker() {
    const ROUNDS: u64 = 10_000;
    with_watchdog(60, "ping-pong on one worker", || {
        let rt = runtime(1);
        let last = rt.block_on(|| {
            let (to_b, from_a) = channel::bounded::<u64>(0);
            let (to_a, from_b) = channel::bounded::<u64>(0);
            let b = footprint::spawn(move || {
                for v in from_a.iter() {
                    to_a.send(v + 1).unwrap();
                }
            });
            let mut v = 0;
            for _ in 0..ROUNDS {
                to_b.send(v).unwrap();
                v = from_b.recv().unwrap() + 1;
            }
            drop(to_b);
            b.join().unwrap();
            v
        });
        assert_eq!(last, 2 * ROUNDS);
    });
}

/// Many producers and consumers on a small ring (capacity 1 to 3): plain sends and receives
/// mixed with timed ones (which cancel their parked nodes) and `try_` ones, green threads on
/// 2 workers and OS threads alike. Every message is received exactly once, in order per
/// producer; a lost wake-up or a stranded notification trips the watchdog.
#[test]
fn ring_many_senders_and_receivers_small_capacity_exact() {
    use std::time::Duration;
    const P: usize = 12;
    const C: usize = 12;
    const PER: usize = 2_000;

    /// Sends with a mix of the three flavours, retrying the ones that give the message back.
    fn produce_mixed(tx: &Sender<Msg>, p: usize) {
        for i in 0..PER {
            let mut msg = (p, i);
            loop {
                let r = match i % 3 {
                    0 => tx.send(msg).map_err(|e| e.0),
                    1 => tx
                        .send_timeout(msg, Duration::from_micros(50))
                        .map_err(|e| e.into_inner()),
                    _ => tx.try_send(msg).map_err(|e| e.into_inner()),
                };
                match r {
                    Ok(()) => break,
                    Err(m) => {
                        msg = m;
                        footprint::yield_now();
                    }
                }
            }
        }
    }

    /// Receives with a mix of flavours until disconnection; (count, sum), in order per producer.
    fn drain_mixed(rx: &Receiver<Msg>, k: usize) -> (usize, usize) {
        let mut last = [None::<usize>; P];
        let (mut n, mut sum) = (0, 0);
        let mut turn = k;
        loop {
            turn += 1;
            let got = match turn % 3 {
                0 => match rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => break,
                },
                1 => match rx.recv_timeout(Duration::from_micros(50)) {
                    Ok(m) => Some(m),
                    Err(channel::RecvTimeoutError::Timeout) => None,
                    Err(channel::RecvTimeoutError::Disconnected) => break,
                },
                _ => match rx.try_recv() {
                    Ok(m) => Some(m),
                    Err(channel::TryRecvError::Empty) => {
                        footprint::yield_now();
                        None
                    }
                    Err(channel::TryRecvError::Disconnected) => break,
                },
            };
            if let Some((p, i)) = got {
                assert!(last[p] < Some(i), "producer {p}: {i} after {:?}", last[p]);
                last[p] = Some(i);
                n += 1;
                sum += i;
            }
        }
        (n, sum)
    }

    with_watchdog(180, "many senders and receivers on a small ring", || {
        let rt = runtime(2);
        for cap in [1, 2, 3] {
            let total =
                rt.block_on(|| green_mpmc(channel::bounded(cap), C, P, drain_mixed, produce_mixed));
            expect(total, P, PER);

            let (tx, rx) = channel::bounded(cap);
            let cs: Vec<_> = (0..C / 2)
                .map(|k| {
                    let rx = rx.clone();
                    std::thread::spawn(move || drain_mixed(&rx, k))
                })
                .collect();
            let ps: Vec<_> = (0..P)
                .map(|p| {
                    let tx = tx.clone();
                    std::thread::spawn(move || produce_mixed(&tx, p))
                })
                .collect();
            drop((tx, rx));
            for p in ps {
                p.join().unwrap();
            }
            let total = cs
                .into_iter()
                .map(|c| c.join().unwrap())
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
            expect(total, P, PER);
        }
    });
}
