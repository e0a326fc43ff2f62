//! Loom models of the worker idle protocol: the runtime's own [`SleepWord`], [`SleeperCount`],
//! [`wake_one`], [`wake_many`] and [`wake_all`] (`sleep/word.rs`), composed as `Shared::notify_*`,
//! `Shared::wake_for` and `WorkerLocal::notify_after_local_push` (`sleep.rs`) and
//! `WorkerLocal::run_loop`/`idle` (`worker.rs`) compose them, over two model workers whose
//! queues are atomic bags (a push is a Release RMW, a search an Acquire load: the ordering the
//! protocol's argument relies on, and no more). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-runtime --release --target-dir target/loom --test loom_idle`.
//!
//! Under loom a sleep has no timeout (`SleepWord::sleep`): only a publisher's wake-up ends it.
//! The light and heavy barriers (`sleep/barrier.rs`) are both SeqCst fences here, which is what
//! the kernel's barrier pair guarantees.
//!
//! What each model proves, under every interleaving and weak-memory outcome loom explores with
//! up to 2 preemptions: work published while every other worker is going to sleep (a spawn from
//! outside into the injector, an unpark into another worker's inbox, a push onto a worker's own
//! start deque whose pusher then waits for it without draining its deque, a loop start's pushes
//! for several workers) is always run, and every worker then leaves its loop. A lost wake-up
//! leaves a worker waiting on its futex with a job unrun (loom reports a deadlock) or a pusher
//! spinning for good (loom reports too many branches).
#![cfg(loom)]

mod loom_support;

use footprint_runtime::loom_protocols::{
    wake_all, wake_many, wake_one, SleepWord, SleeperCount, Slept,
};
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

/// The model runtime: the protocol's words and counts (the runtime's own types), the queues,
/// and the finish count that `count_finished` keeps.
struct Rt {
    words: [SleepWord; WORKERS],
    sleepers: SleeperCount,
    injector: Bag,
    deques: [Bag; WORKERS],
    inboxes: [Bag; WORKERS],
    /// Jobs finished, a bit each (a pusher that waits for its pushed job reads its bit).
    done: AtomicU32,
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
            done: AtomicU32::new(0),
            finished: AtomicUsize::new(0),
            total,
            body,
        }
    }

    fn ring(&self, from: usize) -> impl Iterator<Item = &SleepWord> {
        (1..=WORKERS).map(move |i| &self.words[(from + i) % WORKERS])
    }

    /// `Shared::notify_one`: after publishing stealable work with a fence.
    fn notify_one(&self, from: usize) {
        if self.sleepers.wake_needed_after_publish() {
            wake_one(&self.sleepers, self.ring(from));
        }
    }

    /// `WorkerLocal::notify_after_local_push`: after a push onto the caller's own start deque
    /// (the light barrier).
    fn notify_after_local_push(&self, from: usize) {
        if self.sleepers.wake_needed_after_local_push() {
            wake_one(&self.sleepers, self.ring(from));
        }
    }

    /// `Shared::wake_for`: after pushing work for `n` workers onto the caller's own deque.
    fn wake_for(&self, from: usize, n: usize) {
        if self.sleepers.any_sleeping_after_local_push() {
            wake_many(&self.sleepers, self.ring(from), n);
        }
    }

    /// `Shared::notify_worker`: after putting work in worker `w`'s inbox.
    fn notify_worker(&self, w: usize) {
        if !self.words[w].wake_after_publish(&self.sleepers) && self.sleepers.wake_needed() {
            wake_one(&self.sleepers, self.ring(w));
        }
    }

    /// `spawn::count_finished` with the runtime shutting down: the last finish wakes everyone.
    fn finish(&self, job: u32) {
        self.done.fetch_or(1 << job, Ordering::Release);
        if self.finished.fetch_add(1, Ordering::SeqCst) + 1 == self.total {
            wake_all(&self.sleepers, &self.words);
        }
    }

    fn may_exit(&self) -> bool {
        self.finished.load(Ordering::SeqCst) == self.total
    }

    /// A green thread that spins until `job` has run (it never yields its worker, so it never
    /// drains its worker's deque): the other worker must take `job`.
    fn wait_for(&self, job: u32) {
        while self.done.load(Ordering::Acquire) & (1 << job) == 0 {
            thread::yield_now();
        }
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
        self.finish(job);
    }

    /// `WorkerLocal::run_loop` with `idle` (one search round standing for the spin rounds):
    /// a worker counted as searching stops when it finds work (waking one more if it was the
    /// last searcher while the other sleeps) or before it sleeps.
    fn worker(&self, me: usize) {
        let mut searching = false;
        let found = |searching: &mut bool| {
            if std::mem::replace(searching, false) && self.sleepers.stop_searching() {
                wake_one(&self.sleepers, self.ring(me));
            }
        };
        loop {
            if let Some(j) = self.next_local(me) {
                found(&mut searching);
                self.run(me, j);
                continue;
            }
            if !searching {
                self.sleepers.start_searching();
                searching = true;
            }
            if let Some(j) = self.steal(me) {
                found(&mut searching);
                self.run(me, j);
                continue;
            }
            if std::mem::replace(&mut searching, false) {
                self.sleepers.stop_searching();
            }
            let slept = self.words[me].sleep(
                &self.sleepers,
                None,
                || self.steal(me),
                || self.may_exit(),
                || assert_eq!(self.deques[me].len(), 0, "worker {me} sleeps on own work"),
            );
            match slept {
                Slept::Found(j, woken) => {
                    searching = woken;
                    found(&mut searching);
                    self.run(me, j);
                }
                Slept::Woke => searching = true,
                Slept::Expired => unreachable!("a sleep without a timeout ran out"),
                Slept::Exit => return,
            }
        }
    }
}

/// Runs both workers on `rt` while the main thread does `outside`, then checks every job ran.
fn run_model(rt: fn() -> Rt, outside: fn(&Rt)) {
    model(2, move || {
        let rt = Arc::new(rt());
        let workers: Vec<_> = (0..WORKERS)
            .map(|i| {
                let rt = rt.clone();
                thread::spawn(move || rt.worker(i))
            })
            .collect();
        outside(&rt);
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(rt.finished.load(Ordering::SeqCst), rt.total);
        assert_eq!(
            rt.sleepers.get(Ordering::SeqCst),
            0,
            "a worker left counted asleep"
        );
        assert_eq!(
            rt.sleepers.searching(Ordering::SeqCst),
            0,
            "a worker left counted searching"
        );
        assert_eq!(rt.injector.len(), 0);
        for i in 0..WORKERS {
            assert_eq!(rt.deques[i].len() + rt.inboxes[i].len(), 0);
        }
    });
}

fn no_more(_: &Rt, _: usize, _: u32) {}

/// The outside thread's spawn of job 0: `spawn_raw` off a worker (the injector, then
/// `notify_one`).
fn spawn_0(rt: &Rt) {
    rt.injector.push(0);
    rt.notify_one(0);
}

#[test]
fn a_spawn_from_outside_while_both_workers_go_to_sleep_runs() {
    run_model(|| Rt::new(1, no_more), spawn_0);
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
    run_model(|| Rt::new(2, unpark_to_1), spawn_0);
}

#[test]
fn a_push_on_a_workers_own_deque_that_its_pusher_waits_for_runs_on_the_other() {
    // Job 0 pushes job 1 onto its worker's own start deque (a `join` half: the deque, then
    // `notify_after_local_push`) and spins until job 1 has run, never draining its deque: only
    // the other worker, asleep or falling asleep, can run job 1, so the push must wake it or be
    // seen by its last search.
    fn push_and_wait(rt: &Rt, me: usize, job: u32) {
        if job == 0 {
            rt.deques[me].push(1);
            rt.notify_after_local_push(me);
            rt.wait_for(1);
        }
    }
    run_model(|| Rt::new(2, push_and_wait), spawn_0);
}

#[test]
fn two_own_deque_pushes_while_the_other_worker_searches_or_sleeps_both_run() {
    // Job 0 pushes jobs 1 and 2 and waits for both: the second push may see the other worker
    // searching (and wake nobody); that worker then finds one of them or sleeps after a last
    // search that sees both.
    fn push_two_and_wait(rt: &Rt, me: usize, job: u32) {
        if job == 0 {
            for j in [1, 2] {
                rt.deques[me].push(j);
                rt.notify_after_local_push(me);
            }
            rt.wait_for(1);
            rt.wait_for(2);
        }
    }
    run_model(|| Rt::new(3, push_two_and_wait), spawn_0);
}

#[test]
fn a_loop_start_wakes_for_its_participants() {
    // Job 0 starts a loop: one participant (job 1) pushed onto its own deque, then `wake_for`
    // (the loop's single fan-out), then it waits for the participant.
    fn start_loop(rt: &Rt, me: usize, job: u32) {
        if job == 0 {
            rt.deques[me].push(1);
            rt.wake_for(me, 1);
            rt.wait_for(1);
        }
    }
    run_model(|| Rt::new(2, start_loop), spawn_0);
}

#[test]
fn two_spawns_from_outside_racing_the_sleepers_both_run() {
    // Two spawns from outside racing the workers' sleep, the second into the injector after
    // the first: every one is run even when a publisher finds the only sleeper already woken.
    run_model(
        || Rt::new(2, no_more),
        |rt| {
            spawn_0(rt);
            rt.injector.push(1);
            rt.notify_one(0);
        },
    );
}
