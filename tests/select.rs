//! `footprint::channel::select!` and `Select`, crossbeam-channel's select tests rewritten for
//! footprint: each runs on OS threads and again on green threads (2 workers), under a
//! watchdog. Naps only make a blocked select likely; every assertion holds whatever the timing.

mod common;

use common::{runtime, with_watchdog};
use footprint::channel::{
    self, after, never, select, tick, Receiver, RecvError, Select, SendError, Sender,
};
use footprint::Runtime;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
enum On {
    Os,
    Green,
}

/// A thread of the kind the test runs on.
struct Thread(Box<dyn FnOnce() + Send>);

impl Thread {
    fn join(self) {
        (self.0)()
    }
}

fn go(on: On, f: impl FnOnce() + Send + 'static) -> Thread {
    match on {
        On::Os => {
            let h = std::thread::spawn(f);
            Thread(Box::new(move || h.join().unwrap()))
        }
        On::Green => {
            let h = footprint::spawn(f);
            Thread(Box::new(move || h.join().unwrap()))
        }
    }
}

fn nap(on: On, ms: u64) {
    match on {
        On::Os => std::thread::sleep(Duration::from_millis(ms)),
        On::Green => footprint::sleep(Duration::from_millis(ms)),
    }
}

fn rt() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| runtime(2))
}

/// Runs `test` on OS threads, then on green threads.
fn both(name: &str, test: fn(On)) {
    with_watchdog(60, &format!("{name} on OS threads"), move || test(On::Os));
    with_watchdog(60, &format!("{name} on green threads"), move || {
        rt().block_on(|| test(On::Green))
    });
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn smoke() {
    both("smoke", |_| {
        let (s1, r1) = channel::unbounded::<i32>();
        let (s2, r2) = channel::unbounded::<i32>();
        s1.send(1).unwrap();
        select! {
            recv(r1) -> v => assert_eq!(v, Ok(1)),
            recv(r2) -> _ => panic!("r2 is empty"),
        }
        s2.send(2).unwrap();
        select! {
            recv(r1) -> _ => panic!("r1 is empty"),
            recv(r2) -> v => assert_eq!(v, Ok(2)),
        }
    });
}

#[test]
fn disconnected_operations_are_ready() {
    both("disconnected", |on| {
        let (s1, r1) = channel::unbounded::<i32>();
        let (s2, r2) = channel::unbounded::<i32>();
        drop(s1);
        select! {
            recv(r1) -> v => assert!(v.is_err()),
            recv(r2) -> _ => panic!("r2 is open and empty"),
        }
        // A disconnection while the select waits wakes it.
        let t = go(on, move || {
            nap(on, 20);
            drop(s2);
        });
        let mut sel = Select::new();
        let i = sel.recv(&r2);
        let oper = sel.select();
        assert_eq!(oper.index(), i);
        assert_eq!(oper.recv(&r2), Err(RecvError));
        t.join();
        // A send to a channel whose receivers are gone is ready and gives the message back.
        let (s3, r3) = channel::bounded::<i32>(0);
        drop(r3);
        select! {
            send(s3, 9) -> res => assert_eq!(res, Err(SendError(9))),
        }
    });
}

#[test]
fn default_arm_when_nothing_is_ready() {
    both("default", |_| {
        let (s, r) = channel::unbounded::<i32>();
        let (_s2, r2) = channel::bounded::<i32>(0);
        let taken = select! {
            recv(r) -> _ => false,
            recv(r2) -> _ => false,
            default => true,
        };
        assert!(taken);
        s.send(4).unwrap();
        let got = select! {
            recv(r) -> v => v.unwrap(),
            default => panic!("r has a message"),
        };
        assert_eq!(got, 4);
        // A full channel's send is not ready; an empty one's is.
        let (fs, _fr) = channel::bounded::<i32>(1);
        fs.send(1).unwrap();
        let full = select! {
            send(fs, 2) -> _ => false,
            default => true,
        };
        assert!(full);
        let mut sel = Select::new();
        sel.recv(&r);
        assert!(sel.try_select().is_err());
        assert!(sel.try_ready().is_err());
    });
}

#[test]
fn timeouts() {
    both("timeouts", |on| {
        let (s, r) = channel::unbounded::<i32>();
        let start = Instant::now();
        let timed_out = select! {
            recv(r) -> _ => false,
            default(ms(30)) => true,
        };
        assert!(timed_out && start.elapsed() >= ms(30));
        let s_kept = s.clone();
        let t = go(on, move || {
            nap(on, 20);
            s.send(5).unwrap();
        });
        let got = select! {
            recv(r) -> v => v.unwrap(),
            default(Duration::from_secs(20)) => panic!("the send comes long before"),
        };
        assert_eq!(got, 5);
        t.join();
        let mut sel = Select::new();
        sel.recv(&r);
        let start = Instant::now();
        assert!(sel.select_timeout(ms(20)).is_err());
        assert!(sel.ready_timeout(ms(20)).is_err());
        assert!(start.elapsed() >= ms(40));
        drop(s_kept);
    });
}

#[test]
fn a_blocked_select_is_woken_by_whichever_channel_is_ready_first() {
    both("unblocks", |on| {
        for round in 0..20 {
            let (s1, r1) = channel::bounded::<usize>(0);
            let (s2, r2) = channel::bounded::<usize>(1);
            let (s3, r3) = channel::bounded::<usize>(1);
            s3.send(0).unwrap(); // full: the send arm waits for a place
            let which = round % 3;
            // The thread acts on clones: every channel stays open until the select is done.
            let (s1c, s2c, r3c) = (s1.clone(), s2.clone(), r3.clone());
            let t = go(on, move || {
                nap(on, 1);
                match which {
                    0 => s1c.send(10).unwrap(),
                    1 => s2c.send(20).unwrap(),
                    _ => assert_eq!(r3c.recv(), Ok(0)),
                }
            });
            let got = select! {
                recv(r1) -> v => v.unwrap(),
                recv(r2) -> v => v.unwrap(),
                send(s3, 30) -> res => { res.unwrap(); 30 },
            };
            t.join();
            assert_eq!(got, [10, 20, 30][which]);
            drop((s1, s2, r3));
        }
    });
}

#[test]
fn selects_on_both_ends_of_a_rendezvous_meet() {
    both("both ready", |on| {
        for _ in 0..50 {
            let (s, r) = channel::bounded::<i32>(0);
            let (_keep, idle) = channel::bounded::<i32>(0);
            let t = go(on, move || {
                select! {
                    send(s, 7) -> res => res.unwrap(),
                }
            });
            let got = select! {
                recv(r) -> v => v.unwrap(),
                recv(idle) -> _ => panic!("nothing is sent on idle"),
            };
            assert_eq!(got, 7);
            t.join();
        }
    });
}

#[test]
fn a_select_sending_and_receiving_on_one_rendezvous_pairs_with_plain_peers() {
    both("send and recv on one rendezvous", |on| {
        for round in 0..20 {
            let (s, r) = channel::bounded::<i32>(0);
            let (s2, r2) = (s.clone(), r.clone());
            // The peer is a plain receive or a plain send; the select must not pair with itself.
            let t = go(on, move || {
                nap(on, 1);
                if round % 2 == 0 {
                    assert_eq!(r2.recv(), Ok(-1));
                } else {
                    s2.send(round).unwrap();
                }
            });
            select! {
                recv(r) -> v => assert_eq!(v, Ok(round)),
                send(s, -1) -> res => res.unwrap(),
            }
            t.join();
        }
    });
}

#[test]
fn fair_choice_among_ready_operations() {
    both("fairness", |_| {
        const N: usize = 4000;
        let (s1, r1) = channel::unbounded::<()>();
        let (s2, r2) = channel::unbounded::<()>();
        for _ in 0..N {
            s1.send(()).unwrap();
            s2.send(()).unwrap();
        }
        let mut hits = [0usize; 2];
        for _ in 0..N {
            select! {
                recv(r1) -> _ => hits[0] += 1,
                recv(r2) -> _ => hits[1] += 1,
            }
        }
        assert!(hits.iter().all(|&h| h > N / 4), "{hits:?}");
    });
}

/// Producers on two channels, one consumer selecting until both are disconnected: every
/// message exactly once.
#[test]
fn stress_exact_counts() {
    both("stress", |on| {
        const PER: usize = 3000;
        let (s1, r1) = channel::bounded::<usize>(3);
        let (s2, r2) = channel::bounded::<usize>(0);
        let producers: Vec<Thread> = [(s1, 1usize), (s2, 2)]
            .into_iter()
            .flat_map(|(s, k)| {
                (0..2).map(move |_| {
                    let s: Sender<usize> = s.clone();
                    go(on, move || {
                        for i in 0..PER {
                            s.send(k * 1_000_000 + i).unwrap();
                        }
                    })
                })
            })
            .collect();
        let (mut n, mut sum) = (0usize, 0usize);
        let (mut open1, mut open2) = (true, true);
        let (never1, never2) = (never::<usize>(), never::<usize>());
        while open1 || open2 {
            let (a, b): (&Receiver<usize>, &Receiver<usize>) = (
                if open1 { &r1 } else { &never1 },
                if open2 { &r2 } else { &never2 },
            );
            select! {
                recv(a) -> v => match v {
                    Ok(x) => { n += 1; sum += x; }
                    Err(_) => open1 = false,
                },
                recv(b) -> v => match v {
                    Ok(x) => { n += 1; sum += x; }
                    Err(_) => open2 = false,
                },
            }
        }
        for p in producers {
            p.join();
        }
        assert_eq!(n, 4 * PER);
        let per_sum = PER * (PER - 1) / 2;
        assert_eq!(
            sum,
            2 * (1_000_000 * PER + per_sum) + 2 * (2_000_000 * PER + per_sum)
        );
    });
}

#[test]
fn send_arms_under_stress() {
    both("send stress", |on| {
        const N: usize = 4000;
        let (s1, r1) = channel::bounded::<usize>(0);
        let (s2, r2) = channel::bounded::<usize>(2);
        let got = Arc::new(AtomicUsize::new(0));
        let consumers: Vec<Thread> = [r1, r2]
            .into_iter()
            .map(|r| {
                let got = got.clone();
                go(on, move || {
                    for v in r.iter() {
                        got.fetch_add(v, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for i in 0..N {
            select! {
                send(s1, i) -> res => res.unwrap(),
                send(s2, i) -> res => res.unwrap(),
            }
        }
        drop((s1, s2));
        for c in consumers {
            c.join();
        }
        assert_eq!(got.load(Ordering::Relaxed), N * (N - 1) / 2);
    });
}

#[test]
fn after_tick_and_never() {
    both("after/tick/never", |_| {
        let start = Instant::now();
        let r = after(ms(30));
        let n = never::<i32>();
        select! {
            recv(n) -> _ => panic!("never delivers"),
            recv(r) -> v => assert!(v.unwrap() >= start + ms(30)),
        }
        // Fired once; afterwards empty, not disconnected.
        assert!(r.try_recv().unwrap_err().is_empty());
        let ticks = tick(ms(5));
        let mut last = start;
        for _ in 0..3 {
            let t = select! { recv(ticks) -> t => t.unwrap() };
            assert!(t > last);
            last = t;
        }
        let quiet = select! {
            recv(n) -> _ => false,
            default(ms(10)) => true,
        };
        assert!(quiet);
        assert!(after(Duration::ZERO).recv().is_ok());
    });
}

#[test]
fn select_struct_ready_and_remove() {
    both("Select", |_| {
        let (s1, r1) = channel::unbounded::<i32>();
        let (s2, r2) = channel::unbounded::<i32>();
        let mut sel = Select::new();
        let a = sel.recv(&r1);
        let b = sel.recv(&r2);
        s2.send(1).unwrap();
        assert_eq!(sel.ready(), b);
        sel.remove(b);
        assert!(sel.try_ready().is_err());
        s1.send(2).unwrap();
        let oper = sel.select();
        assert_eq!(oper.index(), a);
        assert_eq!(oper.recv(&r1), Ok(2));
        let c = sel.send(&s2);
        let oper = sel.select();
        assert!(oper.index() == c);
        assert!(oper.send(&s2, 3).is_ok());
        assert_eq!(r2.iter().take(2).collect::<Vec<_>>(), [1, 3]);
    });
}

#[test]
#[should_panic(expected = "not a receive from this receiver")]
fn completing_with_another_channel_says_which_to_pass() {
    let (s1, r1) = channel::unbounded::<i32>();
    let (_s2, r2) = channel::unbounded::<i32>();
    s1.send(1).unwrap();
    let mut sel = Select::new();
    sel.recv(&r1);
    let _ = sel.select().recv(&r2);
}

/// A green thread blocked in a select over three channels is switched back in at most once
/// (it parks once and the send wakes it), whichever channel the send comes on; a select that
/// polled would run many times.
#[test]
fn a_blocked_green_select_parks_once() {
    with_watchdog(60, "select parks once", || {
        let counted = footprint::Runtime::builder()
            .workers(2)
            .counters(footprint::Counters::Time)
            .build()
            .expect("a 2-worker runtime");
        counted.block_on(|| {
            for round in 0..12 {
                let chans: Vec<(Sender<usize>, Receiver<usize>)> =
                    (0..3).map(|_| channel::bounded(1)).collect();
                let receivers: Vec<Receiver<usize>> =
                    chans.iter().map(|(_, r)| r.clone()).collect();
                let waiter = footprint::spawn(move || {
                    let before = footprint::current_stats().expect("a green thread").runs;
                    let mut sel = Select::new();
                    for r in &receivers {
                        sel.recv(r);
                    }
                    let oper = sel.select();
                    let i = oper.index();
                    let got = oper.recv(&receivers[i]).unwrap();
                    let after = footprint::current_stats().expect("a green thread").runs;
                    (i, got, after - before)
                });
                footprint::sleep(ms(2));
                chans[round % 3].0.send(round).unwrap();
                let (i, got, resumed) = waiter.join().unwrap();
                assert_eq!((i, got), (round % 3, round));
                assert!(resumed <= 1, "round {round}: resumed {resumed} times");
            }
        })
    });
}

/// A sender that pauses now and then, a receiver selecting with short timeouts that retries
/// when it times out: every message arrives once, in order.
#[test]
fn stress_with_timeouts() {
    both("stress timeouts", |on| {
        const N: usize = 200;
        let (s, r) = channel::bounded::<usize>(2);
        let t = go(on, move || {
            for i in 0..N {
                if i % 50 == 0 {
                    nap(on, 2);
                }
                s.send(i).unwrap();
            }
        });
        let mut next = 0;
        while next < N {
            select! {
                recv(r) -> v => {
                    assert_eq!(v, Ok(next));
                    next += 1;
                }
                // Timed out: try again.
                default(Duration::from_micros(200)) => {}
            }
        }
        t.join();
        assert_eq!(r.recv(), Err(RecvError));
    });
}

/// Channels sent through a channel and selected on by the receiver.
#[test]
fn channel_through_channel() {
    both("channel through channel", |on| {
        type Inner = Receiver<u64>;
        let (s, r) = channel::bounded::<Inner>(1);
        let t = go(on, move || {
            for i in 0..50u64 {
                let (is, ir) = channel::bounded(1);
                is.send(i).unwrap();
                select! {
                    send(s, ir) -> res => res.unwrap(),
                }
            }
        });
        let mut sum = 0;
        for _ in 0..50 {
            let inner = select! { recv(r) -> v => v.unwrap() };
            sum += select! { recv(inner) -> v => v.unwrap() };
        }
        t.join();
        assert_eq!(sum, 49 * 50 / 2);
    });
}

/// A message sent before a `try_select` is seen by it (no operation is missed because of the
/// random order), and after the last sender is gone a receive arm is ready with an error.
#[test]
fn linearizable_try_select() {
    both("linearizable", |_| {
        for _ in 0..500 {
            let (s1, r1) = channel::unbounded::<u8>();
            let (s2, r2) = channel::unbounded::<u8>();
            s2.send(2).unwrap();
            let got = select! {
                recv(r1) -> _ => 0,
                recv(r2) -> v => v.unwrap(),
                default => panic!("r2 had a message before the select"),
            };
            assert_eq!(got, 2);
            drop(s1);
            let disconnected = select! {
                recv(r1) -> v => v.is_err(),
                recv(r2) -> _ => false,
                default => false,
            };
            assert!(disconnected);
            drop(s2);
        }
    });
}

/// Selects that each offer both a send and a receive on one rendezvous channel pair off with
/// each other (crossbeam's `matching`): every select completes and nothing is left over.
#[test]
fn matching() {
    both("matching", |on| {
        const THREADS: usize = 2;
        for _ in 0..2000 {
            let (s, r) = channel::bounded::<usize>(0);
            let threads: Vec<Thread> = (0..THREADS)
                .map(|i| {
                    let (s, r) = (s.clone(), r.clone());
                    go(on, move || {
                        select! {
                            recv(r) -> v => assert_ne!(v.unwrap(), i),
                            send(s, i) -> res => res.unwrap(),
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join();
            }
            assert!(r.try_recv().unwrap_err().is_empty());
        }
    });
}

#[test]
fn probe_try_select_send_vs_blocked_select_recv() {
    with_watchdog(10, "probe", || {
        let (s, r) = channel::bounded::<i32>(0);
        let t = std::thread::spawn(move || select! { recv(r) -> v => v.unwrap() });
        let mut spins = 0u64;
        loop {
            let done = select! { send(s, 7) -> res => { res.unwrap(); true }, default => false };
            if done {
                break;
            }
            spins += 1;
            std::thread::yield_now();
        }
        eprintln!("spins {spins}");
        assert_eq!(t.join().unwrap(), 7);
    });
}
