//! `footprint::channel::select!` and `Select`, crossbeam-channel's select tests rewritten for
//! footprint: each runs on OS threads and again on green threads (2 workers), under a
//! watchdog. Where a test needs a select to be blocked before the other side acts, it waits
//! until that thread is parked ([`until_parked`]: the OS thread asleep in the kernel, or the
//! green thread in the runtime's list of parked threads), not for a fixed time.

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

/// A thread the test can wait on until it parks: an OS thread by its kernel id, a green thread
/// by its (unique) name.
struct Watched {
    thread: Thread,
    who: Who,
}

enum Who {
    Os(libc::pid_t),
    Green(String),
}

/// Runs `f` on a new thread of the kind `on` that [`until_parked`] can watch.
fn go_watched(on: On, f: impl FnOnce() + Send + 'static) -> Watched {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    match on {
        On::Os => {
            let (tid_tx, tid_rx) = std::sync::mpsc::channel();
            let h = std::thread::spawn(move || {
                // SAFETY: gettid has no preconditions.
                tid_tx.send(unsafe { libc::gettid() }).unwrap();
                f()
            });
            let tid = tid_rx.recv().unwrap();
            Watched {
                thread: Thread(Box::new(move || h.join().unwrap())),
                who: Who::Os(tid),
            }
        }
        On::Green => {
            let name = format!("watched-{}", NEXT.fetch_add(1, Ordering::Relaxed));
            let h = footprint::GreenBuilder::new()
                .name(name.clone())
                .spawn(f)
                .expect("a green thread");
            Watched {
                thread: Thread(Box::new(move || h.join().unwrap())),
                who: Who::Green(name),
            }
        }
    }
}

/// Waits until `w` is parked (blocked in a select or a channel operation: the only place these
/// tests' watched threads park).
fn until_parked(w: &Watched) {
    match &w.who {
        Who::Os(tid) => loop {
            // The state is the field after the command name's closing parenthesis.
            let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
                .expect("a live thread's /proc stat");
            let state = stat[stat.rfind(')').expect("stat has a comm field") + 2..]
                .chars()
                .next();
            if state == Some('S') {
                return;
            }
            std::thread::yield_now();
        },
        Who::Green(name) => {
            let line = format!("'{name}' waits on");
            while !rt().debug_state().contains(&line) {
                footprint::yield_now();
            }
        }
    }
}

/// Yields the thread (a polling loop's pause).
fn pause(on: On) {
    match on {
        On::Os => std::thread::yield_now(),
        On::Green => footprint::yield_now(),
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
        let t = go_watched(on, move || {
            let mut sel = Select::new();
            let i = sel.recv(&r2);
            let oper = sel.select();
            assert_eq!(oper.index(), i);
            assert_eq!(oper.recv(&r2), Err(RecvError));
        });
        until_parked(&t);
        drop(s2);
        t.thread.join();
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
        let r2 = r.clone();
        let t = go_watched(on, move || {
            let got = select! {
                recv(r2) -> v => v.unwrap(),
                default(Duration::from_secs(20)) => panic!("the send comes long before"),
            };
            assert_eq!(got, 5);
        });
        until_parked(&t);
        s.send(5).unwrap();
        t.thread.join();
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
            let (r1c, r2c, s3c) = (r1.clone(), r2.clone(), s3.clone());
            let (got_tx, got_rx) = channel::bounded(1);
            let t = go_watched(on, move || {
                let got = select! {
                    recv(r1c) -> v => v.unwrap(),
                    recv(r2c) -> v => v.unwrap(),
                    send(s3c, 30) -> res => { res.unwrap(); 30 },
                };
                got_tx.send(got).unwrap();
            });
            until_parked(&t);
            match which {
                0 => s1.send(10).unwrap(),
                1 => s2.send(20).unwrap(),
                _ => assert_eq!(r3.recv(), Ok(0)),
            }
            t.thread.join();
            assert_eq!(got_rx.recv(), Ok([10, 20, 30][which]));
            drop((s1, s2, r3, r1, r2, s3));
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
            // The peer is a plain receive or a plain send, after the select blocked; the select
            // must not pair with itself.
            let t = go_watched(on, move || {
                select! {
                    recv(r2) -> v => assert_eq!(v, Ok(round)),
                    send(s2, -1) -> res => res.unwrap(),
                }
            });
            until_parked(&t);
            if round % 2 == 0 {
                assert_eq!(r.recv(), Ok(-1));
            } else {
                s.send(round).unwrap();
            }
            t.thread.join();
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
                while !counted.debug_state().contains(" waits on ") {
                    footprint::yield_now();
                }
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

/// Threads that each select a send and a receive on one rendezvous channel pair off with each
/// other, never with themselves (crossbeam's `matching`): every select completes, each value
/// received is another thread's, each sent value is received once, nothing is left over.
fn matching_on(on: On, threads: usize, leftover: bool) {
    let (s, r) = channel::bounded::<usize>(0);
    let (log_tx, log_rx) = channel::unbounded::<(usize, Option<usize>)>();
    let handles: Vec<Thread> = (0..threads)
        .map(|i| {
            let (s, r, log_tx) = (s.clone(), r.clone(), log_tx.clone());
            go(on, move || {
                let got = select! {
                    recv(r) -> v => {
                        let v = v.unwrap();
                        assert_ne!(v, i, "a select received its own message");
                        Some(v)
                    }
                    send(s, i) -> res => { res.unwrap(); None }
                };
                log_tx.send((i, got)).unwrap();
            })
        })
        .collect();
    if leftover {
        // An odd number of selects: a plain send pairs with the one left over.
        s.send(usize::MAX).unwrap();
    }
    for h in handles {
        h.join();
    }
    drop(log_tx);
    let log: Vec<(usize, Option<usize>)> = log_rx.iter().collect();
    assert_eq!(log.len(), threads);
    let mut received: Vec<usize> = log.iter().filter_map(|&(_, got)| got).collect();
    let mut sent: Vec<usize> = log
        .iter()
        .filter(|&&(_, got)| got.is_none())
        .map(|&(i, _)| i)
        .collect();
    if leftover {
        sent.push(usize::MAX);
    }
    received.sort_unstable();
    sent.sort_unstable();
    assert_eq!(received, sent, "every sent value received exactly once");
    assert_eq!(received.len() * 2, threads + usize::from(leftover));
    assert!(r.try_recv().unwrap_err().is_empty());
}

#[test]
fn matching() {
    both("matching", |on| {
        for _ in 0..10 {
            matching_on(on, 44, false);
        }
    });
}

#[test]
fn matching_with_leftover() {
    both("matching with leftover", |on| {
        for _ in 0..10 {
            matching_on(on, 55, true);
        }
    });
}

/// The same with the `Select` struct and its operations' indices.
#[test]
fn matching_with_select_struct() {
    both("matching (Select)", |on| {
        for _ in 0..10 {
            matching_struct_on(on, 21);
        }
    });
}

fn matching_struct_on(on: On, threads: usize) {
    let (s, r) = channel::bounded::<usize>(0);
    let (log_tx, log_rx) = channel::unbounded::<(usize, Option<usize>)>();
    let handles: Vec<Thread> = (0..threads)
        .map(|i| {
            let (s, r, log_tx) = (s.clone(), r.clone(), log_tx.clone());
            go(on, move || {
                let mut sel = Select::new();
                let recv_at = sel.recv(&r);
                let send_at = sel.send(&s);
                let oper = sel.select();
                let got = match oper.index() {
                    k if k == recv_at => Some(oper.recv(&r).unwrap()),
                    k if k == send_at => {
                        oper.send(&s, i).unwrap();
                        None
                    }
                    k => unreachable!("index {k}"),
                };
                assert_ne!(got, Some(i), "a select received its own message");
                log_tx.send((i, got)).unwrap();
            })
        })
        .collect();
    // An odd number of selects: a plain receive pairs with the one left over.
    let last = r.recv().unwrap();
    for h in handles {
        h.join();
    }
    drop(log_tx);
    let log: Vec<(usize, Option<usize>)> = log_rx.iter().collect();
    let mut received: Vec<usize> = log.iter().filter_map(|&(_, got)| got).collect();
    received.push(last);
    let mut sent: Vec<usize> = log
        .iter()
        .filter(|&&(_, got)| got.is_none())
        .map(|&(i, _)| i)
        .collect();
    received.sort_unstable();
    sent.sort_unstable();
    assert_eq!(received, sent, "every sent value received exactly once");
    assert_eq!(received.len() * 2, threads + 1);
}

/// A `default` select sending on a rendezvous pairs with a select blocked on receiving there,
/// and a `try_recv` with a select blocked on sending (crossbeam pairs both; before, both were
/// refused and polled forever).
#[test]
fn try_operations_pair_with_blocked_selects() {
    both("try pairs with blocked select", |on| {
        for round in 0..20 {
            let (s, r) = channel::bounded::<usize>(0);
            let (_idle_tx, idle) = channel::bounded::<usize>(0);
            let r2 = r.clone();
            let t = go_watched(on, move || {
                select! {
                    recv(r2) -> v => assert_eq!(v, Ok(round)),
                    recv(idle) -> _ => panic!("nothing is sent on idle"),
                }
            });
            until_parked(&t);
            let sent = select! {
                send(s, round) -> res => { res.unwrap(); true },
                default => false,
            };
            assert!(sent, "a blocked select receive is a ready receiver");
            t.thread.join();

            let s2 = s.clone();
            let t = go_watched(on, move || {
                select! {
                    send(s2, round + 100) -> res => res.unwrap(),
                }
            });
            until_parked(&t);
            assert_eq!(r.try_recv(), Ok(round + 100));
            t.thread.join();
        }
    });
}

/// A chosen send keeps what it was chosen for until its message comes: a buffer place (a
/// plain `try_send` finds the channel full meanwhile), or a blocked receiver (which no other
/// sender can take). Dropping the chosen operation gives them back.
#[test]
fn a_chosen_send_keeps_its_place_or_receiver() {
    both("chosen send keeps", |on| {
        let (s, r) = channel::bounded::<i32>(1);
        let mut sel = Select::new();
        let i = sel.send(&s);
        let oper = sel.try_select().unwrap();
        assert_eq!(oper.index(), i);
        assert!(
            s.try_send(1).unwrap_err().is_full(),
            "the place is reserved"
        );
        oper.send(&s, 2).unwrap();
        assert_eq!(r.try_recv(), Ok(2));
        // Dropped uncompleted: the place is free again.
        drop(sel.try_select().unwrap());
        s.try_send(3).unwrap();
        assert_eq!(r.try_recv(), Ok(3));

        let (s, r) = channel::bounded::<i32>(0);
        let r2 = r.clone();
        let t = go_watched(on, move || {
            assert_eq!(r2.recv(), Ok(7));
            assert_eq!(r2.recv(), Ok(8));
        });
        until_parked(&t);
        let mut sel = Select::new();
        sel.send(&s);
        let oper = sel.try_select().expect("a receiver is blocked");
        assert!(
            s.try_send(0).unwrap_err().is_full(),
            "the receiver is committed"
        );
        oper.send(&s, 7).unwrap();
        until_parked(&t);
        // A chosen send dropped: the receiver goes back to waiting and takes the next one.
        drop(sel.try_select().expect("a receiver is blocked"));
        s.send(8).unwrap();
        t.thread.join();
    });
}

/// Crossbeam's `both_ready`: a select with a receive and a send on two rendezvous channels,
/// against a peer that sends on one and then receives on the other.
#[test]
fn both_ready() {
    both("both ready (two channels)", |on| {
        for _ in 0..50 {
            let (s1, r1) = channel::bounded::<i32>(0);
            let (s2, r2) = channel::bounded::<i32>(0);
            let t = go(on, move || {
                s1.send(1).unwrap();
                assert_eq!(r2.recv(), Ok(2));
            });
            let mut done = [false; 2];
            for _ in 0..2 {
                select! {
                    recv(r1) -> v => { assert_eq!(v, Ok(1)); done[0] = true; }
                    send(s2, 2) -> res => { res.unwrap(); done[1] = true; }
                }
            }
            assert_eq!(done, [true, true]);
            t.join();
        }
    });
}

/// Crossbeam's `loop_try`: two threads poll with `default` (a send and a `try_recv`) against
/// a third that blocks in a select with a receive and a send on the two rendezvous channels;
/// the blocked select must pair with both pollers.
#[test]
fn loop_try() {
    both("loop try", |on| {
        for _ in 0..20 {
            let (s1, r1) = channel::bounded::<i32>(0);
            let (s2, r2) = channel::bounded::<i32>(0);
            let (s_end, r_end) = channel::bounded::<()>(0);
            let r_end2 = r_end.clone();
            // Kept open until the end (crossbeam's scoped threads borrow them): a poller that is
            // done must not disconnect the blocked select's other arm.
            let keep = (s1.clone(), r2.clone());
            let sender = go(on, move || loop {
                select! {
                    send(s1, 1) -> res => { res.unwrap(); break }
                    default => {}
                }
                select! {
                    recv(r_end) -> _ => break,
                    default => {}
                }
                pause(on);
            });
            let receiver = go(on, move || loop {
                if let Ok(x) = r2.try_recv() {
                    assert_eq!(x, 2);
                    break;
                }
                select! {
                    recv(r_end2) -> _ => break,
                    default => {}
                }
                pause(on);
            });
            let blocked = go(on, move || {
                for _ in 0..2 {
                    select! {
                        recv(r1) -> v => assert_eq!(v, Ok(1)),
                        send(s2, 2) -> res => res.unwrap(),
                        default(Duration::from_secs(30)) => panic!("the pollers never paired"),
                    }
                }
                drop(s_end);
            });
            blocked.join();
            sender.join();
            receiver.join();
            drop(keep);
        }
    });
}

/// Crossbeam's `stress_send`: a select over sends on two rendezvous channels, a peer receiving
/// from each in turn; every value arrives in order.
#[test]
fn stress_send_on_rendezvous() {
    both("stress send", |on| {
        const COUNT: usize = 2000;
        let (s1, r1) = channel::bounded::<usize>(0);
        let (s2, r2) = channel::bounded::<usize>(0);
        let (s3, r3) = channel::bounded::<()>(100);
        let t = go(on, move || {
            for i in 0..COUNT {
                assert_eq!(r1.recv(), Ok(i));
                assert_eq!(r2.recv(), Ok(i));
                r3.recv().unwrap();
            }
        });
        for i in 0..COUNT {
            for _ in 0..2 {
                select! {
                    send(s1, i) -> res => res.unwrap(),
                    send(s2, i) -> res => res.unwrap(),
                }
            }
            s3.send(()).unwrap();
        }
        t.join();
    });
}

/// Crossbeam's `stress_mixed`: a select with a receive on one rendezvous channel and a send on
/// another, a peer sending then receiving; every value in order.
#[test]
fn stress_mixed_on_rendezvous() {
    both("stress mixed", |on| {
        const COUNT: usize = 2000;
        let (s1, r1) = channel::bounded::<usize>(0);
        let (s2, r2) = channel::bounded::<usize>(0);
        let (s3, r3) = channel::bounded::<()>(100);
        let t = go(on, move || {
            for i in 0..COUNT {
                s1.send(i).unwrap();
                assert_eq!(r2.recv(), Ok(i));
                r3.recv().unwrap();
            }
        });
        for i in 0..COUNT {
            for _ in 0..2 {
                select! {
                    recv(r1) -> v => assert_eq!(v, Ok(i)),
                    send(s2, i) -> res => res.unwrap(),
                }
            }
            s3.send(()).unwrap();
        }
        t.join();
    });
}

/// Selects on both ends of rendezvous channels, many rounds: a sending select and a receiving
/// select (each also offering an operation that never completes) always meet; exact sum.
#[test]
fn stress_select_to_select() {
    both("stress select to select", |on| {
        const COUNT: usize = 2000;
        let (s, r) = channel::bounded::<usize>(0);
        let (_keep_tx, idle_r) = channel::bounded::<usize>(0);
        let (idle_s, _keep_rx) = channel::bounded::<usize>(0);
        let t = go(on, move || {
            for i in 0..COUNT {
                select! {
                    send(s, i) -> res => res.unwrap(),
                    send(idle_s, 0) -> _ => panic!("nobody receives on idle"),
                }
            }
        });
        let mut sum = 0;
        for _ in 0..COUNT {
            sum += select! {
                recv(r) -> v => v.unwrap(),
                recv(idle_r) -> _ => panic!("nobody sends on idle"),
            };
        }
        t.join();
        assert_eq!(sum, COUNT * (COUNT - 1) / 2);
    });
}

/// Crossbeam's `send_recv_same_channel`: a select never pairs with itself on a rendezvous (it
/// times out); on an unbounded channel its send is ready.
#[test]
fn send_recv_same_channel() {
    both("same channel", |_| {
        let (s, r) = channel::bounded::<i32>(0);
        let timed_out = select! {
            send(s, 0) -> _ => false,
            recv(r) -> _ => false,
            default(ms(50)) => true,
        };
        assert!(timed_out);
        let (s, r) = channel::unbounded::<i32>();
        let sent = select! {
            send(s, 0) -> _ => true,
            recv(r) -> _ => false,
            default(ms(50)) => false,
        };
        assert!(sent);
    });
}

/// Crossbeam's `duplicate_operations`: the same channel end twice in one select; each arm is
/// chosen some time.
#[test]
fn duplicate_operations() {
    both("duplicate operations", |_| {
        let (s, r) = channel::unbounded::<i32>();
        let mut hit = [false; 4];
        let mut rounds = 0;
        while hit.iter().any(|h| !h) {
            rounds += 1;
            assert!(rounds < 100_000, "an arm is never chosen: {hit:?}");
            select! {
                recv(r) -> _ => hit[0] = true,
                recv(r) -> _ => hit[1] = true,
                send(s, 0) -> _ => hit[2] = true,
                send(s, 0) -> _ => hit[3] = true,
            }
        }
    });
}

/// Crossbeam's `nesting`: selects inside select arms.
#[test]
fn nesting() {
    both("nesting", |_| {
        let (s, r) = channel::unbounded::<i32>();
        select! {
            send(s, 0) -> _ => {
                select! {
                    recv(r) -> v => {
                        assert_eq!(v, Ok(0));
                        select! {
                            send(s, 1) -> _ => {
                                select! {
                                    recv(r) -> v => assert_eq!(v, Ok(1)),
                                }
                            }
                        }
                    }
                }
            }
        }
    });
}

/// Crossbeam's `linearizable_default` and `linearizable_timeout`: a message sent before a
/// select with `default` (or a zero timeout) is seen by it, whatever another thread does to the
/// other channel meanwhile.
#[test]
fn linearizable_default_and_timeout() {
    both("linearizable default/timeout", |on| {
        const COUNT: usize = 2000;
        for step in 0..4 {
            let (start_s, start_r) = channel::bounded::<()>(0);
            let (end_s, end_r) = channel::bounded::<()>(0);
            let ((s1, r1), (s2, r2)) = if step % 2 == 0 {
                (channel::bounded::<i32>(1), channel::bounded::<i32>(1))
            } else {
                (channel::unbounded::<i32>(), channel::unbounded::<i32>())
            };
            let with_timeout = step >= 2;
            let (s2b, r1b) = (s2.clone(), r1.clone());
            let t = go(on, move || {
                for _ in 0..COUNT {
                    start_s.send(()).unwrap();
                    s1.send(1).unwrap();
                    if with_timeout {
                        select! {
                            recv(r1) -> _ => {}
                            recv(r2) -> _ => {}
                            default(Duration::ZERO) => unreachable!("r1 holds a message"),
                        }
                    } else {
                        select! {
                            recv(r1) -> _ => {}
                            recv(r2) -> _ => {}
                            default => unreachable!("r1 holds a message"),
                        }
                    }
                    end_s.send(()).unwrap();
                    let _ = r2.try_recv();
                }
            });
            for _ in 0..COUNT {
                start_r.recv().unwrap();
                s2b.send(1).unwrap();
                let _ = r1b.try_recv();
                end_r.recv().unwrap();
            }
            t.join();
        }
    });
}

/// Crossbeam's `fairness1` and `fairness_send`: ready receives (two buffers, `after(0)`,
/// `tick(0)`) and ready sends are each chosen a fair share of the time.
#[test]
fn fairness_with_timers_and_sends() {
    both("fairness timers/sends", |_| {
        const COUNT: usize = 4000;
        let (s1, r1) = channel::bounded::<()>(COUNT);
        let (s2, r2) = channel::unbounded::<()>();
        for _ in 0..COUNT {
            s1.send(()).unwrap();
            s2.send(()).unwrap();
        }
        let mut hits = [0usize; 4];
        for _ in 0..COUNT {
            select! {
                recv(r1) -> _ => hits[0] += 1,
                recv(r2) -> _ => hits[1] += 1,
                recv(after(Duration::ZERO)) -> _ => hits[2] += 1,
                recv(tick(Duration::ZERO)) -> _ => hits[3] += 1,
            }
        }
        assert!(
            hits.iter().all(|&h| h >= COUNT / hits.len() / 2),
            "{hits:?}"
        );

        let (s1, _r1) = channel::bounded::<()>(COUNT);
        let (s2, _r2) = channel::unbounded::<()>();
        let mut hits = [0usize; 2];
        for _ in 0..COUNT {
            select! {
                send(s1, ()) -> _ => hits[0] += 1,
                send(s2, ()) -> _ => hits[1] += 1,
            }
        }
        assert!(hits.iter().all(|&h| h >= COUNT / 4), "{hits:?}");
    });
}

/// Crossbeam's `fairness2`: a sender selecting over an unbounded, a one-place and a rendezvous
/// channel against a receiver selecting over the three; each channel carries a share.
#[test]
fn fairness_across_capacities() {
    both("fairness capacities", |on| {
        const COUNT: usize = 4000;
        let (s1, r1) = channel::unbounded::<()>();
        let (s2, r2) = channel::bounded::<()>(1);
        let (s3, r3) = channel::bounded::<()>(0);
        let t = go(on, move || {
            let (hole, _keep) = channel::bounded::<()>(0);
            for _ in 0..COUNT {
                let a = if s1.is_empty() { &s1 } else { &hole };
                let b = if s2.is_empty() { &s2 } else { &hole };
                select! {
                    send(a, ()) -> res => res.unwrap(),
                    send(b, ()) -> res => res.unwrap(),
                    send(s3, ()) -> res => res.unwrap(),
                }
            }
        });
        let mut hits = [0usize; 3];
        for _ in 0..COUNT {
            select! {
                recv(r1) -> _ => hits[0] += 1,
                recv(r2) -> _ => hits[1] += 1,
                recv(r3) -> _ => hits[2] += 1,
            }
        }
        t.join();
        assert_eq!(hits.iter().sum::<usize>(), COUNT);
        assert!(
            hits.iter().all(|&h| h >= COUNT / hits.len() / 50),
            "{hits:?}"
        );
    });
}

/// Crossbeam's `recv` and `try_recv` in select form: a receiving select and a sending select
/// on a rendezvous, three messages, then the disconnection.
#[test]
fn select_recv_against_select_send() {
    both("select recv vs select send", |on| {
        let (s, r) = channel::bounded::<i32>(0);
        let t = go(on, move || {
            for v in [7, 8, 9] {
                select! {
                    send(s, v) -> res => res.unwrap(),
                }
            }
        });
        for v in [7, 8, 9] {
            select! {
                recv(r) -> got => assert_eq!(got, Ok(v)),
            }
        }
        select! {
            recv(r) -> got => assert_eq!(got, Err(RecvError)),
        }
        t.join();
    });
}

/// Crossbeam's `channel_through_channel` at capacities 0, 1 and 2: receivers sent through the
/// channel they replace.
#[test]
fn channel_through_channel_all_capacities() {
    both("channel through channel (capacities)", |on| {
        const COUNT: usize = 300;
        type T = Box<dyn std::any::Any + Send>;
        for cap in 0..3 {
            let (s, r) = channel::bounded::<T>(cap);
            let t = go(on, move || {
                let mut s = s;
                for _ in 0..COUNT {
                    let (new_s, new_r) = channel::bounded::<T>(cap);
                    let new_r: T = Box::new(Some(new_r));
                    select! {
                        send(s, new_r) -> res => assert!(res.is_ok()),
                    }
                    s = new_s;
                }
            });
            let mut r = r;
            for _ in 0..COUNT {
                r = select! {
                    recv(r) -> msg => msg
                        .unwrap()
                        .downcast_mut::<Option<Receiver<T>>>()
                        .unwrap()
                        .take()
                        .unwrap(),
                };
            }
            t.join();
        }
    });
}

/// A place reserved by a chosen send is kept from a select blocked on sending to the channel
/// until the chosen send completes, to a receiver that came meanwhile or into the buffer; then
/// the blocked select gets its turn: both messages arrive, once each.
#[test]
fn a_reserved_place_then_a_blocked_select_send() {
    both("reserved place freed", |on| {
        for _ in 0..20 {
            let (s, r) = channel::bounded::<i32>(1);
            let mut sel = Select::new();
            sel.send(&s);
            let oper = sel.try_select().expect("an empty one-place channel");
            let s2 = s.clone();
            // Blocked: the only place is reserved.
            let sender = go_watched(on, move || select! { send(s2, 2) -> res => res.unwrap() });
            until_parked(&sender);
            let (got_tx, got_rx) = channel::bounded(1);
            let r2 = r.clone();
            let receiver = go(on, move || got_tx.send(r2.recv().unwrap()).unwrap());
            oper.send(&s, 1).unwrap();
            receiver.join();
            sender.thread.join();
            let mut got = [got_rx.recv().unwrap(), r.recv().unwrap()];
            got.sort_unstable();
            assert_eq!(got, [1, 2]);
            assert!(r.try_recv().unwrap_err().is_empty());
        }
    });
}

/// Crossbeam's macro tests of syntax and evaluation (`default_when_disconnected`,
/// `default_only`, `default_syntax`, `same_variable_name`, `handles_on_heap`, `once_blocks`,
/// `references`, `move_handles`, `infer_types`, `result_types`, `evaluate`, `case_blocks`).
#[allow(clippy::unnecessary_literal_unwrap)] // crossbeam's `references` does this on purpose
#[test]
fn macro_syntax_and_evaluation() {
    both("macro syntax", |_| {
        // default_when_disconnected
        let (_, r) = channel::unbounded::<i32>();
        select! {
            recv(r) -> res => assert!(res.is_err()),
            default => panic!("a disconnected receive is ready"),
        }
        let (s, _) = channel::bounded::<i32>(0);
        select! {
            send(s, 0) -> res => assert!(res.is_err()),
            default(ms(1000)) => panic!("a disconnected send is ready"),
        }
        // default_only and default()
        let start = Instant::now();
        select! { default => {} }
        select! { default() => {} }
        select! { default(ms(30)) => {} }
        assert!(start.elapsed() >= ms(30));
        let (s, r) = channel::bounded::<i32>(0);
        select! {
            recv(r) -> _ => panic!("nothing sent"),
            default() => {}
        }
        select! {
            send(s, 0) -> _ => panic!("nobody receives"),
            default() => {},
        }
        // same_variable_name
        let (_, r) = channel::unbounded::<i32>();
        select! {
            recv(r) -> r => assert!(r.is_err()),
        }
        // handles_on_heap
        let (s, r) = channel::unbounded::<i32>();
        let (s, r) = (Box::new(s), Box::new(r));
        select! {
            send(*s, 0) -> _ => {}
            recv(*r) -> _ => {}
            default => {}
        }
        // once_blocks: each arm's body runs once, moving what it owns
        let (s, r) = channel::unbounded::<i32>();
        let once = Box::new(());
        select! { send(s, 0) -> _ => drop(once) }
        let once = Box::new(());
        select! { recv(r) -> _ => drop(once) }
        let (once1, once2) = (Box::new(()), Box::new(()));
        select! {
            recv(r) -> _ => drop(once1),
            send(s, 0) -> _ => drop(once2),
        }
        // references and move_handles
        select! {
            send(&&&&s, 0) -> _ => {}
            recv(&&&&r) -> _ => {}
        }
        let nev = never();
        select! {
            recv(Some(&r).unwrap_or(&nev)) -> _ => {},
            default => {}
        }
        let (s2, r2) = channel::unbounded::<i32>();
        #[allow(clippy::redundant_closure_call)]
        {
            select! {
                recv((move || r2)()) -> _ => {}
                send((move || s2)(), 0) -> _ => {}
            }
        }
        // infer_types
        let (s, r) = channel::unbounded();
        select! {
            recv(r) -> _ => {}
            default => {}
        }
        s.send(()).unwrap();
        // result_types
        let (s, _keep) = channel::bounded::<i32>(1);
        let (_keep2, r) = channel::bounded::<i32>(1);
        select! {
            send(s, 0) -> res => { let _: Result<(), SendError<i32>> = res; },
        }
        select! {
            recv(r) -> res => { let _: Result<i32, RecvError> = res; },
            default(ms(0)) => {}
        }
        // evaluate and case_blocks: arms are expressions with a value
        let (s, r) = channel::unbounded::<i32>();
        let v: String = select! {
            recv(r) -> _ => "foo".into(),
            send(s, 0) -> _ => "bar".to_owned(),
            default => "baz".to_string(),
        };
        assert_eq!(v, "bar");
        let v: String = select! {
            recv(r) -> _ => "foo".into(),
            default => "baz".to_string(),
        };
        assert_eq!(v, "foo");
        let x = select! {
            recv(r) -> _ => 3.0,
            default => 7.,
        };
        assert_eq!(x, 7.0);
    });
}

/// Crossbeam's `panic_sender` and `panic_receiver`: a panic evaluating an arm's channel comes
/// out of the select.
#[test]
#[should_panic(expected = "send panicked")]
fn panic_evaluating_a_sender() {
    fn get() -> Sender<i32> {
        panic!("send panicked")
    }
    #[allow(unreachable_code, clippy::diverging_sub_expression)]
    {
        select! {
            send(get(), panic!()) -> _ => {}
        }
    }
}

#[test]
#[should_panic(expected = "recv panicked")]
fn panic_evaluating_a_receiver() {
    fn get() -> Receiver<i32> {
        panic!("recv panicked")
    }
    select! {
        recv(get()) -> _ => {}
    }
}

/// Crossbeam's `stress_timeout_two_threads`: a sender and a receiver both selecting with short
/// timeouts, each pausing now and then (the pauses make the other time out: the behaviour
/// under test); every value arrives once, in order.
#[test]
fn stress_timeout_two_threads() {
    both("stress timeout two threads", |on| {
        const COUNT: usize = 40;
        let (s, r) = channel::bounded::<usize>(2);
        let t = go(on, move || {
            for i in 0..COUNT {
                if i % 4 == 0 {
                    nap(on, 3);
                }
                loop {
                    select! {
                        send(s, i) -> res => { res.unwrap(); break }
                        default(ms(1)) => {}
                    }
                }
            }
        });
        for i in 0..COUNT {
            if i % 4 == 2 {
                nap(on, 3);
            }
            loop {
                select! {
                    recv(r) -> v => { assert_eq!(v, Ok(i)); break }
                    default(ms(1)) => {}
                }
            }
        }
        t.join();
    });
}

/// Crossbeam's `reuse`: one `Select` (a receive and a send on two rendezvous channels) reused
/// for every round against a peer that sends then receives; every value in order.
#[test]
fn reuse() {
    both("reuse", |on| {
        const COUNT: usize = 2000;
        let (s1, r1) = channel::bounded::<usize>(0);
        let (s2, r2) = channel::bounded::<usize>(0);
        let (s3, r3) = channel::bounded::<()>(100);
        let t = go(on, move || {
            for i in 0..COUNT {
                s1.send(i).unwrap();
                assert_eq!(r2.recv(), Ok(i));
                r3.recv().unwrap();
            }
        });
        let mut sel = Select::new();
        let oper1 = sel.recv(&r1);
        let oper2 = sel.send(&s2);
        for i in 0..COUNT {
            for _ in 0..2 {
                let oper = sel.select();
                match oper.index() {
                    ix if ix == oper1 => assert_eq!(oper.recv(&r1), Ok(i)),
                    ix if ix == oper2 => oper.send(&s2, i).unwrap(),
                    ix => unreachable!("index {ix}"),
                }
            }
            s3.send(()).unwrap();
        }
        t.join();
    });
}

/// Claims racing deadlines on a rendezvous: a sender and a receiver both select with very short
/// timeouts and retry (each side's timeout races the other's claim of its blocked select);
/// every value arrives once, in order, and nothing is left over.
#[test]
fn stress_timeouts_on_a_rendezvous() {
    both("stress timeouts rendezvous", |on| {
        const COUNT: usize = 300;
        let (s, r) = channel::bounded::<usize>(0);
        let r_left = r.clone();
        let t = go(on, move || {
            for i in 0..COUNT {
                loop {
                    select! {
                        send(s, i) -> res => { res.unwrap(); break }
                        default(Duration::from_micros(50)) => {}
                    }
                }
            }
        });
        for i in 0..COUNT {
            loop {
                select! {
                    recv(r) -> v => { assert_eq!(v, Ok(i)); break }
                    default(Duration::from_micros(70)) => {}
                }
            }
        }
        t.join();
        assert_eq!(r_left.try_recv(), Err(channel::TryRecvError::Disconnected));
    });
}
