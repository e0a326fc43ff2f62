//! The lock-hot placement switch (`footprint_locks::placement`): the hint a releaser passes to
//! the thread it wakes follows the switch.
//!
//! Both threads run under fake scheduler hooks: the releaser's says it runs on worker 3, the
//! waiter's records every `Placement` its unparker receives. One test function only, because the
//! switch is process-wide and tests of one binary run in parallel.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar as StdCondvar, Mutex as StdMutex};
use std::time::Duration;

use footprint_locks::{
    install_hook, placement, uninstall_hook, BlockTtasMutex, ClassCell, Condvar, ImmediateBlock,
    Placement, PriorityClass, RawTicketLock, RawTtasLock, SchedulerHook, Unpark, Unparker,
};

/// The releaser's worker in the fake hook.
const RELEASER_WORKER: usize = 3;

/// A permit with a record of every hint it was unparked with.
#[derive(Default)]
struct RecordingPermit {
    available: StdMutex<bool>,
    signal: StdCondvar,
    hints: StdMutex<Vec<Placement>>,
    /// How many times the owner entered `park` (the test waits for the waiter to be parked).
    parks: AtomicUsize,
}

impl Unpark for RecordingPermit {
    fn unpark(&self, hint: Placement) {
        self.hints.lock().unwrap().push(hint);
        *self.available.lock().unwrap() = true;
        self.signal.notify_all();
    }
}

/// A scheduler hook for one OS thread that pretends to be on `worker` and parks on `permit`.
struct FakeHook {
    worker: Option<usize>,
    cell: ClassCell,
    permit: Arc<RecordingPermit>,
}

impl FakeHook {
    fn leak(worker: Option<usize>) -> &'static FakeHook {
        Box::leak(Box::new(FakeHook {
            worker,
            cell: ClassCell::new(PriorityClass::Running),
            permit: Arc::new(RecordingPermit::default()),
        }))
    }

    fn wait_for_permit(&self, timeout: Option<Duration>) -> bool {
        self.permit.parks.fetch_add(1, Ordering::SeqCst);
        let mut available = self.permit.available.lock().unwrap();
        while !*available {
            match timeout {
                None => available = self.permit.signal.wait(available).unwrap(),
                Some(t) => {
                    let (a, r) = self.permit.signal.wait_timeout(available, t).unwrap();
                    available = a;
                    if r.timed_out() && !*available {
                        return false;
                    }
                }
            }
        }
        *available = false;
        true
    }
}

impl SchedulerHook for FakeHook {
    fn class_cell(&self) -> &ClassCell {
        &self.cell
    }
    fn higher_class_ready(&self, _than: PriorityClass) -> bool {
        false
    }
    fn yield_to_higher(&self, _than: PriorityClass) -> bool {
        false
    }
    fn yield_now(&self) {
        std::thread::yield_now();
    }
    fn current_unparker(&self) -> Unparker {
        Unparker::new(self.permit.clone())
    }
    fn park(&self) {
        self.wait_for_permit(None);
    }
    fn park_timeout(&self, timeout: Duration) -> bool {
        self.wait_for_permit(Some(timeout))
    }
    fn worker_id(&self) -> Option<usize> {
        self.worker
    }
    fn switch_cost_ns(&self) -> u64 {
        10_000
    }
}

/// Waits (yielding) until the waiter has entered `park` `n` times: a real condition, no sleep.
fn until_parked(waiter: &FakeHook, n: usize) {
    while waiter.permit.parks.load(Ordering::SeqCst) < n {
        std::thread::yield_now();
    }
}

/// The calling thread (the releaser) holds a `lock_api::Mutex<R, _>` that a waiter thread blocks
/// on; once the waiter is parked, the release wakes it. Returns the hints the waiter received.
fn hints_from_mutex_release<R: lock_api::RawMutex + Send + Sync>() -> Vec<Placement> {
    let lock = lock_api::Mutex::<R, u64>::new(0);
    let waiter = FakeHook::leak(None);
    let mut held = lock.lock();
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            install_hook(waiter);
            *lock.lock() += 1;
            uninstall_hook();
        });
        until_parked(waiter, 1);
        *held += 1;
        drop(held);
        h.join().unwrap();
    });
    assert_eq!(*lock.lock(), 2, "both critical sections ran");
    let hints = waiter.permit.hints.lock().unwrap().clone();
    hints
}

/// A waiter thread waits on a `Condvar` until a flag is set; once it is parked, the calling thread
/// sets the flag and notifies. Returns the hints the waiter received.
fn hints_from_condvar_notify() -> Vec<Placement> {
    let flag = BlockTtasMutex::new(false);
    let cv = Condvar::new();
    let waiter = FakeHook::leak(None);
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            install_hook(waiter);
            let mut set = flag.lock();
            cv.wait_while(&mut set, |set| !*set);
            uninstall_hook();
        });
        until_parked(waiter, 1);
        *flag.lock() = true;
        assert!(cv.notify_one(), "the waiter is parked on the condvar");
        h.join().unwrap();
    });
    let hints = waiter.permit.hints.lock().unwrap().clone();
    hints
}

/// Every hint recorded for one wake-up path, with the switch as given.
fn hints_with_switch(on: bool) -> [Vec<Placement>; 3] {
    placement::set_lock_hot(on);
    [
        hints_from_mutex_release::<RawTtasLock<ImmediateBlock>>(),
        hints_from_mutex_release::<RawTicketLock<ImmediateBlock>>(),
        hints_from_condvar_notify(),
    ]
}

#[test]
fn releasers_hint_follows_the_lock_hot_switch() {
    assert!(placement::lock_hot(), "lock-hot placement is on by default");
    let releaser = FakeHook::leak(Some(RELEASER_WORKER));
    install_hook(releaser);

    let on = hints_with_switch(true);
    let off = hints_with_switch(false);
    let back_on = hints_with_switch(true);

    // A releaser on no runtime worker never names one, whatever the switch says.
    uninstall_hook();
    let os_releaser = hints_with_switch(true);

    let paths = ["ttas unlock", "ticket unlock", "condvar notify_one"];
    for (i, path) in paths.iter().enumerate() {
        assert_eq!(
            on[i],
            [Placement::Worker(RELEASER_WORKER)],
            "{path}, switch on"
        );
        assert_eq!(off[i], [Placement::Anywhere], "{path}, switch off");
        assert_eq!(
            back_on[i],
            [Placement::Worker(RELEASER_WORKER)],
            "{path}, on again"
        );
        assert_eq!(
            os_releaser[i],
            [Placement::Anywhere],
            "{path}, OS-thread releaser"
        );
    }
    assert!(placement::lock_hot());
}
