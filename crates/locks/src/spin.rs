//! A tiny internal spin lock for the short critical sections of the channel and the semaphore
//! (a few pointer moves, never a park, never user code). A waiter spins with backoff and then
//! yields its OS thread, so that a holder preempted by the kernel gets the CPU back.

//!
//! Under `cfg(loom)` it is loom's mutex: the models check the protocols built on it, and a spin
//! loop of three model threads would exceed loom's branch budget.

#[cfg(loom)]
pub(crate) use loom_lock::SpinLock;

#[cfg(loom)]
mod loom_lock {
    pub(crate) struct SpinLock<T>(loom::sync::Mutex<T>);
    type SpinGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> SpinLock<T> {
        pub(crate) fn new(value: T) -> SpinLock<T> {
            SpinLock(loom::sync::Mutex::new(value))
        }
        pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
    }
}

#[cfg(not(loom))]
pub(crate) use std_lock::SpinLock;

#[cfg(not(loom))]
mod std_lock {
    use crate::sync::{os_yield, spin_hint, AtomicBool, Ordering};
    use std::cell::UnsafeCell;
    use std::ops::{Deref, DerefMut};

    /// Spins before the first OS yield.
    const SPINS_BEFORE_YIELD: u32 = 6;

    pub(crate) struct SpinLock<T> {
        locked: AtomicBool,
        value: UnsafeCell<T>,
    }

    // SAFETY: the value is reached only through a guard, and one guard exists at a time (the flag is
    // taken with an Acquire CAS and released with a Release store).
    unsafe impl<T: Send> Sync for SpinLock<T> {}
    // SAFETY: as above; moving the lock moves the value.
    unsafe impl<T: Send> Send for SpinLock<T> {}

    impl<T> SpinLock<T> {
        pub(crate) fn new(value: T) -> SpinLock<T> {
            SpinLock {
                locked: AtomicBool::new(false),
                value: UnsafeCell::new(value),
            }
        }

        #[inline]
        pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                self.lock_contended();
            }
            SpinGuard { lock: self }
        }

        #[cold]
        fn lock_contended(&self) {
            let mut round = 0u32;
            loop {
                while self.locked.load(Ordering::Relaxed) {
                    if round < SPINS_BEFORE_YIELD {
                        for _ in 0..(1u32 << round) {
                            spin_hint();
                        }
                        round += 1;
                    } else {
                        os_yield();
                    }
                }
                if self
                    .locked
                    .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
            }
        }
    }

    pub(crate) struct SpinGuard<'a, T> {
        lock: &'a SpinLock<T>,
    }

    impl<T> Deref for SpinGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            // SAFETY: the guard is the only access to the value while it lives.
            unsafe { &*self.lock.value.get() }
        }
    }

    impl<T> DerefMut for SpinGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            // SAFETY: as for `deref`.
            unsafe { &mut *self.lock.value.get() }
        }
    }

    impl<T> Drop for SpinGuard<'_, T> {
        #[inline]
        fn drop(&mut self) {
            self.lock.locked.store(false, Ordering::Release);
        }
    }
}
