//! The lock-hot placement switch (`footprint_locks::placement`): the hint a releaser passes to
//! the thread it wakes follows the switch.
//!
//! Both threads run under fake scheduler hooks: the releaser's says it runs on worker 3, the
//! waiter's records every `Placement` its unparker receives. One test function only, because the
//! switch is process-wide and tests of one binary run in parallel.
#![cfg(not(loom))]

use footprint_locks::{
    install_hook, placement, uninstall_hook, BlockTtasMutex, Condvar, ImmediateBlock, Placement,
    RawTicketLock, RawTtasLock,
};

mod common;
use common::fake_hook::{until_parked, with_parked_waiter, FakeHook};

/// The releaser's worker in the fake hook.
const RELEASER_WORKER: usize = 3;

/// The calling thread (the releaser) holds a `lock_api::Mutex<R, _>` that a waiter thread blocks
/// on; once the waiter is parked, the release wakes it. Returns the hints the waiter received.
fn hints_from_mutex_release<R: lock_api::RawMutex + Send + Sync>() -> Vec<Placement> {
    let lock = lock_api::Mutex::<R, u64>::new(0);
    let waiter = FakeHook::leak(None);
    with_parked_waiter(&lock, waiter, |v| *v += 1, |mut held| *held += 1);
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
