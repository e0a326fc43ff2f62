//! Loom models of the worker idle protocol: the runtime's own [`SleepWord`], [`SleeperCount`],
//! [`wake_one`] and [`wake_all`] (`sleep/word.rs`), composed as `Shared::notify_*`
//! (`sleep.rs`) and `WorkerLocal::run_loop`/`idle` (`worker.rs`) compose them, over two model
//! workers whose queues are atomic bags (a push is a Release RMW, a search an Acquire load: the
//! ordering the protocol's argument relies on, and no more). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-runtime --release --target-dir target/loom --test loom_idle`.
//!
//! What each model proves, under every interleaving and weak-memory outcome loom explores with up
//! to 2 preemptions (3 runs for over 10 minutes here): a green thread made runnable while every
//! worker is going to sleep (a spawn from outside into the injector, an unpark into another
//! worker's inbox, a push onto a worker's own start deque) is always run, and every worker then
//! leaves its loop. A lost wake-up leaves a worker waiting on its futex with a job unrun, which
//! loom reports as a deadlock. Each worker asserts, when it commits to sleep, that its own start
//! deque is empty.
#![cfg(loom)]

mod loom_support;

use footprint_runtime::loom_protocols::{wake_all, wake_one, SleepWord, SleeperCount, Slept};
use loom::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use loom_support::model;

const WORKERS: usize = 2;

/// A queue of job ids (a bit each): order does not matter to the idle protocol, only that a
/// push is published with Release and a search reads with Acquire.
struct Bag(AtomicU32);

impl Bag {
    fn new() -> Bag {
        Bag(AtomicU32::new(0))
    }

    fn push(&self, job: u32) {
        self.0.fetch_or(1 << job, Ordering::Release);
    }

    fn pop(&self) -> Option<u32> {
        let mut v = self.0.load(Ordering::Acquire);
        loop {
            if v == 0 {
                return None;
            }
            let job = v.trailing_zeros();
            match self
                .0
                .compare_exchange(v, v & !(1 << job), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(job),
                Err(x) => v = x,
            }
        }
    }

    fn len(&self) -> u32 {
        self.0.load(Ordering::Acquire).count_ones()
    }
}

/// A job's body: runs on `worker`, may publish more jobs.
type Body = fn(&Rt, usize, u32);

/// The model runtime: the protocol's words and count (the runtime's own types), the queues, and
/// the finish count that `count_finished` keeps.
struct Rt {
    words: [SleepWord; WORKERS],
    sleepers: SleeperCount,
    injector: Bag,
    deques: [Bag; WORKERS],
    inboxes: [Bag; WORKERS],
    finished: AtomicUsize,
    total: usize,
    body: Body,
}

impl Rt {
    fn new(total: usize, body: Body) -> Rt {
        Rt {
            words: [SleepWord::new(), SleepWord::new()],
            sleepers: SleeperCount::new(),
            injector: Bag::new(),
            deques: [Bag::new(), Bag::new()],
            inboxes: [Bag::new(), Bag::new()],
            finished: AtomicUsize::new(0),
            total,
            body,
        }
    }

    /// `Shared::notify_one`: after publishing stealable work.
    fn notify_one(&self, from: usize) {
        if self.sleepers.any_after_publish() {
            wake_one((1..=WORKERS).map(|i| &self.words[(from + i) % WORKERS]));
        }
    }

    /// `WorkerLocal::notify_after_local_push`: after a push to the caller's own start deque
    /// (its skip of the attempts after a failed one only leaves out wake-ups this fence-less
    /// path may miss anyway).
    fn notify_one_local_push(&self, from: usize) {
        if self.sleepers.any_after_local_push() {
            wake_one((1..=WORKERS).map(|i| &self.words[(from + i) % WORKERS]));
        }
    }

    /// `Shared::notify_worker`: after putting work in worker `w`'s inbox.
    fn notify_worker(&self, w: usize) {
        if !self.words[w].wake_after_publish() && self.inboxes[w].len() > 1 {
            self.notify_one(w);
        }
    }

    /// `spawn::count_finished` with the runtime shutting down: the last finish wakes everyone.
    fn finish(&self) {
        if self.finished.fetch_add(1, Ordering::SeqCst) + 1 == self.total {
            wake_all(&self.words);
        }
    }

    fn may_exit(&self) -> bool {
        self.finished.load(Ordering::SeqCst) == self.total
    }

    /// `WorkerLocal::next_local`: own inbox, own start deque.
    fn next_local(&self, me: usize) -> Option<u32> {
        self.inboxes[me].pop().or_else(|| self.deques[me].pop())
    }

    /// `WorkerLocal::steal`: own inbox, the other worker's start deque and inbox, the injector.
    fn steal(&self, me: usize) -> Option<u32> {
        let other = (me + 1) % WORKERS;
        self.inboxes[me]
            .pop()
            .or_else(|| self.deques[other].pop())
            .or_else(|| self.inboxes[other].pop())
            .or_else(|| self.injector.pop())
    }

    fn run(&self, me: usize, job: u32) {
        (self.body)(self, me, job);
        self.finish();
    }

    /// `WorkerLocal::run_loop` with `idle` (the spin rounds left out: they only search more).
    /// With `deaf_first`, the worker's first sleep is deaf to local pushes (as after repeated
    /// fruitless wake-ups); under loom a deaf sleep never runs out by itself, so only a fenced
    /// publisher's wake-up (or `wake_all` at the end) ends it.
    fn worker(&self, me: usize, deaf_first: bool) {
        let mut deaf = deaf_first;
        loop {
            if let Some(j) = self.next_local(me) {
                self.run(me, j);
                continue;
            }
            if let Some(j) = self.steal(me) {
                self.run(me, j);
                continue;
            }
            let deaf_for = deaf.then_some(std::time::Duration::from_micros(100));
            deaf = false;
            let slept = self.words[me].sleep(
                &self.sleepers,
                deaf_for,
                std::time::Duration::from_millis(1),
                || self.steal(me),
                || self.may_exit(),
                || assert_eq!(self.deques[me].len(), 0, "worker {me} sleeps on own work"),
            );
            match slept {
                Slept::Found(j) => self.run(me, j),
                Slept::Woke | Slept::Expired => {}
                Slept::Exit => return,
            }
        }
    }
}

/// Runs both workers on `rt` while the main thread does `outside`, then checks every job ran.
fn run_model(rt: fn() -> Rt, outside: fn(&Rt)) {
    run_model_deaf(rt, outside, [false; WORKERS]);
}

/// [`run_model`] with the workers marked in `deaf` sleeping deaf to local pushes first.
fn run_model_deaf(rt: fn() -> Rt, outside: fn(&Rt), deaf: [bool; WORKERS]) {
    model(2, move || {
        let rt = Arc::new(rt());
        let workers: Vec<_> = (0..WORKERS)
            .map(|i| {
                let rt = rt.clone();
                thread::spawn(move || rt.worker(i, deaf[i]))
            })
            .collect();
        outside(&rt);
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(rt.finished.load(Ordering::SeqCst), rt.total);
        assert_eq!(rt.injector.len(), 0);
        for i in 0..WORKERS {
            assert_eq!(rt.deques[i].len() + rt.inboxes[i].len(), 0);
        }
    });
}

fn no_more(_: &Rt, _: usize, _: u32) {}

#[test]
fn a_spawn_from_outside_while_both_workers_go_to_sleep_runs() {
    // `spawn_raw` off a worker: the injector, then `notify_one`.
    run_model(
        || Rt::new(1, no_more),
        |rt| {
            rt.injector.push(0);
            rt.notify_one(0);
        },
    );
}

#[test]
fn an_unpark_into_a_sleeping_workers_inbox_runs() {
    // Job 0 (on whichever worker takes it) wakes a green thread whose home is worker 1: the
    // woken thread (job 1) goes to worker 1's inbox, then `notify_worker(1)`.
    fn unpark_to_1(rt: &Rt, _: usize, job: u32) {
        if job == 0 {
            rt.inboxes[1].push(1);
            rt.notify_worker(1);
        }
    }
    run_model(
        || Rt::new(2, unpark_to_1),
        |rt| {
            rt.injector.push(0);
            rt.notify_one(0);
        },
    );
}

#[test]
fn work_pushed_on_a_workers_own_deque_while_the_other_sleeps_runs() {
    // Job 0 spawns jobs 1 and 2 onto its worker's own start deque (`spawn_raw` on a worker:
    // the deque, then `notify_one_local_push`, which has no fence: the other worker may miss
    // them, but the pusher drains its own deque before it idles).
    fn spawn_two(rt: &Rt, me: usize, job: u32) {
        if job == 0 {
            for j in [1, 2] {
                rt.deques[me].push(j);
                rt.notify_one_local_push(me);
            }
        }
    }
    run_model(
        || Rt::new(3, spawn_two),
        |rt| {
            rt.injector.push(0);
            rt.notify_one(0);
        },
    );
}

#[test]
fn two_spawns_from_outside_racing_the_sleepers_both_run() {
    // Two spawns from outside racing the workers' sleep, the second into the injector after
    // the first: every one is run even when a publisher finds the only sleeper already woken.
    run_model(
        || Rt::new(2, no_more),
        |rt| {
            rt.injector.push(0);
            rt.notify_one(0);
            rt.injector.push(1);
            rt.notify_one(0);
        },
    );
}

#[test]
fn work_pushed_on_a_workers_own_deque_while_the_other_sleeps_deaf_runs() {
    // As above, with worker 1 asleep deaf to local pushes (after fruitless wake-ups) and its
    // timer never firing: the pushes do not wake it, so the pusher drains its own deque; every
    // job runs and both workers leave (job 0 may run on either worker, so either may be the
    // pusher).
    fn spawn_two(rt: &Rt, me: usize, job: u32) {
        if job == 0 {
            for j in [1, 2] {
                rt.deques[me].push(j);
                rt.notify_one_local_push(me);
            }
        }
    }
    run_model_deaf(
        || Rt::new(3, spawn_two),
        |rt| {
            rt.injector.push(0);
            rt.notify_one(0);
        },
        [false, true],
    );
}

#[test]
fn a_spawn_from_outside_wakes_a_deaf_sleeper() {
    // Both workers asleep deaf, their timers never firing: a fenced publisher (the injector,
    // `notify_one`) still counts them and wakes one, or the job would never run.
    run_model_deaf(
        || Rt::new(1, no_more),
        |rt| {
            rt.injector.push(0);
            rt.notify_one(0);
        },
        [true, true],
    );
}
