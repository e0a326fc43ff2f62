//! Loom models of the wait paths that ask the scheduler about green threads: each model
//! installs a hook that says it schedules green threads and answers the runtime's questions
//! (does the lock's holder run on another worker? are threads queued on this worker? how many
//! other workers run a thread?) as the model sets them, and checks mutual exclusion, one leader
//! per barrier phase, and that nobody is left parked (a lost wake-up is a loom deadlock).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p footprint-hpc-locks --release --target-dir target/loom --test loom_informed`
#![cfg(loom)]

use footprint_locks::*;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize as StdAtomicUsize};
use std::time::Duration;

/// A green-thread scheduler as the locks see it, with configurable answers. Parking, the class
/// cell and the unparker are the OS hook's (loom's park under the model).
struct ModelHook {
    /// 0: `RunningElsewhere`, 1: `NotRunning`, 2: `Unknown`.
    run: AtomicU8,
    queued: AtomicBool,
    running_elsewhere: StdAtomicUsize,
}

static HOOK: ModelHook = ModelHook {
    run: AtomicU8::new(0),
    queued: AtomicBool::new(false),
    running_elsewhere: StdAtomicUsize::new(0),
};

impl SchedulerHook for ModelHook {
    fn class_cell(&self) -> &ClassCell {
        os::os_hook().class_cell()
    }
    fn higher_class_ready(&self, _than: PriorityClass) -> bool {
        false
    }
    fn yield_to_higher(&self, _than: PriorityClass) -> bool {
        false
    }
    fn yield_now(&self) {
        thread::yield_now()
    }
    fn current_unparker(&self) -> Unparker {
        os::os_hook().current_unparker()
    }
    fn park(&self) {
        os::os_hook().park()
    }
    fn park_timeout(&self, timeout: Duration) -> bool {
        os::os_hook().park_timeout(timeout)
    }
    fn worker_id(&self) -> Option<usize> {
        Some(0)
    }
    fn switch_cost_ns(&self) -> u64 {
        // Long enough that Bellosa's rule never parks at once: the scheduler's answers decide.
        1_000_000
    }
    fn run_state(&self, thread: ThreadTag) -> RunState {
        if thread.is_none() {
            return RunState::Unknown;
        }
        match self.run.load(std::sync::atomic::Ordering::Relaxed) {
            0 => RunState::RunningElsewhere,
            1 => RunState::NotRunning,
            _ => RunState::Unknown,
        }
    }
    fn queued_here(&self) -> bool {
        self.queued.load(std::sync::atomic::Ordering::Relaxed)
    }
    fn running_elsewhere(&self) -> Option<usize> {
        Some(
            self.running_elsewhere
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }
}

/// Serialises the models of this process (they set the hook's answers).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The hook's answers for one model.
#[derive(Clone, Copy)]
struct Answers {
    run: RunState,
    queued: bool,
    running_elsewhere: usize,
}

fn green_model(answers: Answers, f: impl Fn() + Sync + Send + 'static) {
    green_model_ruled(answers, green_wait::GreenLockWait::Park, f);
}

/// [`green_model`] with contended green threads waiting on the default lock by `rule`.
fn green_model_ruled(
    answers: Answers,
    rule: green_wait::GreenLockWait,
    f: impl Fn() + Sync + Send + 'static,
) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let relaxed = std::sync::atomic::Ordering::Relaxed;
    HOOK.run.store(
        match answers.run {
            RunState::RunningElsewhere => 0,
            RunState::NotRunning => 1,
            RunState::Unknown => 2,
        },
        relaxed,
    );
    HOOK.queued.store(answers.queued, relaxed);
    HOOK.running_elsewhere
        .store(answers.running_elsewhere, relaxed);
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    // Process-wide: set under `SERIAL`, so that no other model runs meanwhile.
    green_wait::with_green_lock_wait(rule, || {
        b.check(move || {
            install_hook(&HOOK);
            f();
        })
    });
    uninstall_hook();
}

/// Spawns a model thread that runs under the model hook.
fn spawn_green<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> thread::JoinHandle<T> {
    thread::spawn(move || {
        install_hook(&HOOK);
        assert!(
            current_hook().is_green(),
            "the model hook schedules this thread"
        );
        f()
    })
}

/// Two green threads increment under a TTAS lock (informed), each twice, so that a waiter goes
/// past the quick spin and the lock turns informing (its holders record their class cell).
fn ttas_green(answers: Answers) {
    ttas_green_ruled(answers, green_wait::GreenLockWait::Park);
}

fn ttas_green_ruled(answers: Answers, rule: green_wait::GreenLockWait) {
    ttas_green_lock(answers, rule, Holds::Long);
}

/// How a model's lock counts its holds, which decides whether a waiter turns informing on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Holds {
    /// `RawTtasLock::new`: long, a waiter past the quick spin turns informing on.
    Long,
    /// `RawTtasLock::with_short_holds`: short, nobody does.
    Short,
}

/// `ttas_green_ruled` on a lock with long or short holds.
fn ttas_green_lock(answers: Answers, rule: green_wait::GreenLockWait, holds: Holds) {
    green_model_ruled(answers, rule, move || {
        let lock = Arc::new(match holds {
            Holds::Long => RawTtasLock::<Informed>::new(),
            Holds::Short => RawTtasLock::<Informed>::with_short_holds(),
        });
        let value = Arc::new(AtomicUsize::new(0));
        let (l, v) = (lock.clone(), value.clone());
        let bump = |lock: &RawTtasLock<Informed>, value: &AtomicUsize| {
            let t = lock.lock();
            let x = value.load(Ordering::Relaxed);
            value.store(x + 1, Ordering::Relaxed);
            // SAFETY: held through `t`.
            unsafe { lock.unlock(t) };
        };
        let h = spawn_green(move || {
            bump(&l, &v);
            bump(&l, &v);
        });
        bump(&lock, &value);
        bump(&lock, &value);
        h.join().unwrap();
        assert_eq!(value.load(Ordering::Relaxed), 4);
        assert!(!lock.is_locked());
        if holds == Holds::Short {
            assert!(
                !lock.is_informing(),
                "a lock with short holds stays uninforming"
            );
        }
    });
}

/// The holder runs on another worker: after the quick spin the waiter parks (it does not spin
/// on a holder running elsewhere), and the release wakes it.
#[test]
fn ttas_green_holder_running_elsewhere() {
    ttas_green(Answers {
        run: RunState::RunningElsewhere,
        queued: false,
        running_elsewhere: 1,
    });
}

/// A lock whose holds are short stays uninforming: the waiter's quick spin, park and wake-up
/// on a plain word (no `INFORMING`, no holder tags), holder running on another worker.
#[test]
fn ttas_green_short_holds_holder_running_elsewhere() {
    ttas_green_lock(
        Answers {
            run: RunState::RunningElsewhere,
            queued: false,
            running_elsewhere: 1,
        },
        green_wait::GreenLockWait::Park,
        Holds::Short,
    );
}

/// As above with threads queued on the waiter's worker (the yield phase, then the park).
#[test]
fn ttas_green_short_holds_queued_here() {
    ttas_green_lock(
        Answers {
            run: RunState::NotRunning,
            queued: true,
            running_elsewhere: 0,
        },
        green_wait::GreenLockWait::Park,
        Holds::Short,
    );
}

/// Under `GreenLockWait::Poll` a waiter polls the lock (two rounds under the model) before the
/// park path: every increment lands and nobody is left parked, whether it took the lock while
/// polling or polled to the end and parked.
#[test]
fn ttas_green_polling_nothing_queued() {
    ttas_green_ruled(
        Answers {
            run: RunState::RunningElsewhere,
            queued: false,
            running_elsewhere: 1,
        },
        green_wait::GreenLockWait::Poll,
    );
}

/// Under `GreenLockWait::Poll` on a lock with short holds: the poll keeps no informing
/// bookkeeping (the word never turns `INFORMING`), and the increments and wake-ups are as above.
#[test]
fn ttas_green_polling_short_holds() {
    ttas_green_lock(
        Answers {
            run: RunState::RunningElsewhere,
            queued: false,
            running_elsewhere: 1,
        },
        green_wait::GreenLockWait::Poll,
        Holds::Short,
    );
}

/// As above, with threads queued on the waiter's worker (it yields to them while it polls).
#[test]
fn ttas_green_polling_queued_here() {
    ttas_green_ruled(
        Answers {
            run: RunState::NotRunning,
            queued: true,
            running_elsewhere: 0,
        },
        green_wait::GreenLockWait::Poll,
    );
}

/// The holder does not run (queued or parked): the waiter parks without spinning.
#[test]
fn ttas_green_holder_not_running() {
    ttas_green(Answers {
        run: RunState::NotRunning,
        queued: true,
        running_elsewhere: 0,
    });
}

/// The holder does not run and nothing is queued on the waiter's worker (the holder waits in
/// another worker's queue, or parked): after the quick spin the waiter neither pauses nor
/// yields but parks at once, and the release wakes it.
#[test]
fn ttas_green_holder_not_running_nothing_queued() {
    ttas_green(Answers {
        run: RunState::NotRunning,
        queued: false,
        running_elsewhere: 1,
    });
}

/// Three green threads on one lock with threads queued on their worker: one waiter at a time
/// yields in the yield phase (the lock's sole yielder), a second one parks at once; every
/// increment lands and nobody is left parked.
#[test]
fn ttas_green_sole_yielder_and_a_parked_waiter() {
    green_model(
        Answers {
            run: RunState::RunningElsewhere,
            queued: true,
            running_elsewhere: 1,
        },
        || {
            let lock = Arc::new(RawTtasLock::<Informed>::new());
            let value = Arc::new(AtomicUsize::new(0));
            let bump = |lock: &RawTtasLock<Informed>, value: &AtomicUsize| {
                let t = lock.lock();
                let x = value.load(Ordering::Relaxed);
                value.store(x + 1, Ordering::Relaxed);
                // SAFETY: held through `t`.
                unsafe { lock.unlock(t) };
            };
            let others: Vec<_> = (0..2)
                .map(|_| {
                    let (l, v) = (lock.clone(), value.clone());
                    spawn_green(move || bump(&l, &v))
                })
                .collect();
            bump(&lock, &value);
            for h in others {
                h.join().unwrap();
            }
            assert_eq!(value.load(Ordering::Relaxed), 3);
            assert!(!lock.is_locked());
        },
    );
}

/// Two green ranks pass two phases of a central barrier.
fn barrier_green(answers: Answers) {
    green_model(answers, || {
        let b = Arc::new(CentralBarrier::<Informed>::new(2));
        let leaders = Arc::new(AtomicUsize::new(0));
        let arrived = Arc::new(AtomicUsize::new(0));
        let (b2, l2, a2) = (b.clone(), leaders.clone(), arrived.clone());
        let rank = move |b: &CentralBarrier<Informed>, l: &AtomicUsize, a: &AtomicUsize| {
            for p in 0..2 {
                a.fetch_add(1, Ordering::SeqCst);
                if b.wait().is_leader() {
                    l.fetch_add(1, Ordering::SeqCst);
                }
                assert!(a.load(Ordering::SeqCst) >= (p + 1) * 2);
            }
        };
        let h = spawn_green(move || rank(&b2, &l2, &a2));
        rank(&b, &leaders, &arrived);
        h.join().unwrap();
        assert_eq!(leaders.load(Ordering::SeqCst), 2);
    });
}

/// The missing rank may run on another worker, nothing queued here: the waiter spins, then
/// parks.
#[test]
fn barrier_green_arrival_may_run() {
    barrier_green(Answers {
        run: RunState::Unknown,
        queued: false,
        running_elsewhere: 1,
    });
}

/// No other worker runs a thread (the missing rank is queued somewhere or parked): the waiter
/// parks at once.
#[test]
fn barrier_green_arrival_not_running() {
    barrier_green(Answers {
        run: RunState::Unknown,
        queued: false,
        running_elsewhere: 0,
    });
}

/// A thread is queued on the waiter's worker (perhaps the missing rank): the waiter parks at
/// once even though other workers run threads.
#[test]
fn barrier_green_arrival_queued_here() {
    barrier_green(Answers {
        run: RunState::Unknown,
        queued: true,
        running_elsewhere: 4,
    });
}

/// Channel blocking path on green threads: two senders through one place, the receiver gets
/// both (a sender parked on the full buffer is woken when a place frees, a receiver parked on
/// the empty one when a message comes), with and without threads queued on the worker (the
/// yields before a park), and with the other side running elsewhere or not (a waiter polls
/// the ring, then tries again from the start, before it links its node; under the model the
/// poll is one look).
fn channel_green(answers: Answers) {
    green_model(answers, || {
        let (tx, rx) = channel::bounded::<usize>(1);
        let tx2 = tx.clone();
        let h1 = spawn_green(move || tx.send(1).unwrap());
        let h2 = spawn_green(move || tx2.send(2).unwrap());
        let a = rx.recv().unwrap();
        let b = rx.recv().unwrap();
        assert_eq!(a + b, 3);
        h1.join().unwrap();
        h2.join().unwrap();
    });
}

#[test]
fn channel_green_nothing_queued() {
    channel_green(Answers {
        run: RunState::Unknown,
        queued: false,
        running_elsewhere: 1,
    });
}

#[test]
fn channel_green_queued_here() {
    channel_green(Answers {
        run: RunState::Unknown,
        queued: true,
        running_elsewhere: 1,
    });
}

/// Two receivers wait on an empty channel while one sender sends two messages: both may poll
/// (nothing limits the ring's poll to one waiter) while either links and parks; each gets one
/// message and nobody is left parked. Whether the other side runs does not change the ring's
/// poll (it watches the ring itself). The other receiver's message comes back through an
/// atomic, not a join: the sender's unpark of this thread may come after it found its
/// completion without parking, and loom's join takes that unpark for its own wake-up
/// ("assertion failed: state.notified"; see `loom.rs`); loom still runs every thread to its
/// end.
#[test]
fn channel_green_poller_and_parked_receiver() {
    green_model(
        Answers {
            run: RunState::RunningElsewhere,
            queued: false,
            running_elsewhere: 1,
        },
        || {
            let (tx, rx) = channel::bounded::<usize>(1);
            let rx2 = rx.clone();
            let other = Arc::new(AtomicUsize::new(0));
            let o2 = other.clone();
            spawn_green(move || o2.store(rx2.recv().unwrap(), Ordering::SeqCst));
            spawn_green(move || {
                tx.send(1).unwrap();
                tx.send(2).unwrap();
            });
            let a = rx.recv().unwrap();
            while other.load(Ordering::SeqCst) == 0 {
                thread::yield_now();
            }
            assert_eq!(a + other.load(Ordering::SeqCst), 3);
        },
    );
}

/// Rendezvous on green threads: whichever side comes first parks, the other completes it.
#[test]
fn channel_green_rendezvous() {
    green_model(
        Answers {
            run: RunState::Unknown,
            queued: false,
            running_elsewhere: 1,
        },
        || {
            let (tx, rx) = channel::bounded::<usize>(0);
            let h = spawn_green(move || tx.send(7).unwrap());
            assert_eq!(rx.recv(), Ok(7));
            h.join().unwrap();
        },
    );
}
