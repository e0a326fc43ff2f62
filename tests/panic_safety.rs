//! What happens to values when user code panics, on green threads (the locks and runtime
//! READMEs list the rules): the channel's panicking messages (crossbeam-channel's
//! `panic_on_drop`) on 1 and 2 workers, and the result slots of `join`, `scope`, spawned
//! threads and the parallel loops. Every value counts its drops (`Probe`): each is dropped at
//! most once (a second drop panics, aborting the binary during an unwind), and the first panic
//! reaches the caller.

mod common;

use common::{runtime, with_watchdog};
use footprint::channel;
use footprint::par::{self, Schedule};
use std::any::Any;
use std::panic::{catch_unwind, panic_any, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Drop counters, one per value.
#[derive(Clone)]
struct Drops(Arc<Vec<AtomicUsize>>);

impl Drops {
    fn new(n: usize) -> Drops {
        Drops(Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect()))
    }
    fn all(&self) -> Vec<usize> {
        self.0.iter().map(|c| c.load(Ordering::SeqCst)).collect()
    }
    fn probe(&self, id: usize, panics: bool) -> Probe {
        Probe {
            id,
            panics,
            drops: self.clone(),
        }
    }
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Probe({})", self.id)
    }
}

/// Counts its drops; panics in its first one ("first drop") if `panics`, and in any later one
/// ("double drop").
struct Probe {
    id: usize,
    panics: bool,
    drops: Drops,
}

impl Drop for Probe {
    fn drop(&mut self) {
        if self.drops.0[self.id].fetch_add(1, Ordering::SeqCst) > 0 {
            panic!("double drop");
        }
        if self.panics {
            panic!("first drop");
        }
    }
}

fn message(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "?".into())
}

/// Runs `f` on a green thread of a runtime with `workers` workers, under a watchdog.
fn on_green(workers: usize, what: &str, f: impl FnOnce() + Send + 'static) {
    let what = format!("{what} on {workers} worker(s)");
    with_watchdog(60, &what, move || {
        let rt = runtime(workers);
        rt.block_on(|| footprint::spawn(f).join().unwrap());
    });
}

/// crossbeam-channel's `panic_on_drop`: `bounded(2)` holding two messages whose destructors
/// panic, the sender dropped, the receiver dropped inside `catch_unwind`: the panic is "first
/// drop", the first message was dropped once and the second leaked.
fn panic_on_drop() {
    let drops = Drops::new(2);
    let (tx, rx) = channel::bounded(2);
    tx.send(drops.probe(0, true)).unwrap();
    tx.send(drops.probe(1, true)).unwrap();
    drop(tx);
    let r = catch_unwind(AssertUnwindSafe(move || drop(rx)));
    assert_eq!(message(&*r.unwrap_err()), "first drop");
    assert_eq!(drops.all(), [1, 0]);
}

#[test]
fn channel_panic_on_drop_on_os_threads() {
    with_watchdog(60, "panic_on_drop on an OS thread", || {
        std::thread::spawn(panic_on_drop).join().unwrap()
    });
}

#[test]
fn channel_panic_on_drop_on_one_worker() {
    on_green(1, "panic_on_drop", panic_on_drop);
}

#[test]
fn channel_panic_on_drop_on_two_workers() {
    on_green(2, "panic_on_drop", panic_on_drop);
}

/// The receiver dropped on a green thread while a producer green thread on the other worker
/// waits to send (the buffer full): the producer gets its message back, the buffered one is
/// dropped once.
#[test]
fn channel_receiver_drop_with_a_waiting_green_sender() {
    on_green(2, "receiver drop with a waiting sender", || {
        let drops = Drops::new(2);
        let (tx, rx) = channel::bounded(1);
        tx.send(drops.probe(0, true)).unwrap();
        let d = drops.clone();
        let producer =
            footprint::spawn(move || tx.send(d.probe(1, false)).unwrap_err().into_inner().id);
        let r = catch_unwind(AssertUnwindSafe(move || drop(rx)));
        assert_eq!(message(&*r.unwrap_err()), "first drop");
        assert_eq!(producer.join().unwrap(), 1);
        assert_eq!(drops.all(), [1, 1]);
    });
}

/// `join`: when `a` panics, `b`'s result is dropped (once; its own destructor's panic is
/// swallowed) and `a`'s panic reaches the caller.
#[test]
fn join_drops_the_other_result_once() {
    on_green(2, "join", || {
        let drops = Drops::new(2);
        let d = drops.clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            footprint::join(
                || -> Probe { panic!("a panicked") },
                move || d.probe(0, true),
            )
        }));
        assert_eq!(message(&*r.unwrap_err()), "a panicked");
        assert_eq!(drops.all(), [1, 0]);
        let d = drops.clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            footprint::join(
                move || d.probe(1, true),
                || -> Probe { panic!("b panicked") },
            )
        }));
        assert_eq!(message(&*r.unwrap_err()), "b panicked");
        assert_eq!(drops.all(), [1, 1]);
    });
}

/// `join` with both halves panicking: `a`'s panic wins; `b`'s payload is dropped (a payload
/// whose destructor panics does not abort).
#[test]
fn join_both_panic_a_wins() {
    on_green(2, "join, both panic", || {
        let drops = Drops::new(1);
        let d = drops.clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            footprint::join(|| panic!("a panicked"), move || panic_any(d.probe(0, true)))
        }));
        assert_eq!(message(&*r.unwrap_err()), "a panicked");
        assert_eq!(drops.all(), [1]);
    });
}

/// `scope`: a scoped thread's result nobody joined is dropped once (its destructor's panic
/// swallowed); a scoped thread's panic reaches the caller after every thread finished, and the
/// closure's own result is then dropped once.
#[test]
fn scope_result_slots() {
    on_green(2, "scope", || {
        let drops = Drops::new(3);
        let d = drops.clone();
        footprint::scope(|s| {
            s.spawn(move || d.probe(0, true));
        });
        assert_eq!(drops.all(), [1, 0, 0]);
        let d = drops.clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            footprint::scope(|s| {
                s.spawn(|| panic!("scoped thread"));
                d.probe(1, true)
            })
        }));
        assert_eq!(message(&*r.unwrap_err()), "scoped thread");
        assert_eq!(drops.all(), [1, 1, 0]);
        // The closure's panic wins over a scoped thread's, whose payload is dropped.
        let d = drops.clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            footprint::scope(|s| {
                s.spawn(move || panic_any(d.probe(2, true)));
                panic!("closure");
            })
        }));
        assert_eq!(message(&*r.unwrap_err()), "closure");
        assert_eq!(drops.all(), [1, 1, 1]);
    });
}

/// A detached green thread's result is dropped once (its destructor's panic swallowed, never
/// reaching the worker); a joined one's result or payload is the joiner's.
#[test]
fn spawned_thread_result_slots() {
    on_green(1, "spawn", || {
        let drops = Drops::new(2);
        let d = drops.clone();
        let h = footprint::spawn(move || d.probe(0, true));
        while !h.is_finished() {
            footprint::yield_now();
        }
        drop(h);
        assert_eq!(drops.all(), [1, 0]);
        let d = drops.clone();
        let p = footprint::spawn(move || panic_any(d.probe(1, false)))
            .join()
            .unwrap_err();
        assert_eq!(drops.all(), [1, 0]);
        drop(p);
        assert_eq!(drops.all(), [1, 1]);
    });
}

/// A parallel loop whose body panics: the participants' partial results are dropped once
/// each (a destructor's panic among them swallowed) and the body's panic reaches the caller.
#[test]
fn par_partial_results_on_a_panic() {
    const N: usize = 64;
    on_green(2, "par map_reduce", || {
        let drops = Drops::new(N);
        let made = Drops::new(N);
        let d = drops.clone();
        let m = made.clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            par::map_reduce(
                0..N,
                Schedule::Dynamic(1),
                |i| {
                    if i == N / 2 {
                        panic!("body");
                    }
                    m.0[i].fetch_add(1, Ordering::SeqCst);
                    // Item 0's destructor panics too, after the body's panic.
                    vec![d.probe(i, i == 0)]
                },
                Vec::new,
                |mut a, b| {
                    a.extend(b);
                    a
                },
            )
        }));
        assert_eq!(message(&*r.unwrap_err()), "body");
        assert_eq!(
            drops.all(),
            made.all(),
            "every value built was dropped once"
        );
    });
}
