//! A counting semaphore whose waiters park green threads.

use crate::sync::{AtomicUsize, Ordering};
use crate::timed::park_until;
use crate::wait::WaitQueue;
use std::time::{Duration, Instant};

/// A counting semaphore: [`acquire`](Semaphore::acquire) takes a permit (parking the green
/// thread, or the OS thread, while none is free); the returned [`SemaphorePermit`] gives it back
/// when dropped. Not FIFO: a released permit goes to whichever waiter takes it first.
///
/// ```
/// use footprint::sync::Semaphore;
///
/// let sem = Semaphore::new(2);
/// let a = sem.acquire();
/// let b = sem.acquire();
/// assert!(sem.try_acquire().is_none(), "both permits are out");
/// drop(a);
/// assert_eq!(sem.available_permits(), 1);
/// let c = sem.try_acquire().expect("one permit came back");
/// drop((b, c));
/// assert_eq!(sem.available_permits(), 2);
/// ```
pub struct Semaphore {
    permits: AtomicUsize,
    queue: WaitQueue,
}

/// A permit of a [`Semaphore`] (or several); released when dropped.
#[must_use = "the permit is released at once if not kept"]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
    n: usize,
}

impl Semaphore {
    /// A semaphore with `permits` free permits.
    #[cfg(not(loom))]
    pub const fn new(permits: usize) -> Semaphore {
        Semaphore {
            permits: AtomicUsize::new(permits),
            queue: WaitQueue::new(),
        }
    }

    /// A semaphore with `permits` free permits.
    #[cfg(loom)]
    pub fn new(permits: usize) -> Semaphore {
        Semaphore {
            permits: AtomicUsize::new(permits),
            queue: WaitQueue::new(),
        }
    }

    /// Free permits now.
    pub fn available_permits(&self) -> usize {
        self.permits.load(Ordering::SeqCst)
    }

    fn try_take(&self, n: usize) -> bool {
        let mut cur = self.permits.load(Ordering::Relaxed);
        while cur >= n {
            match self.permits.compare_exchange_weak(
                cur,
                cur - n,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(x) => cur = x,
            }
        }
        false
    }

    fn take(&self, n: usize, deadline: Option<Instant>) -> Option<SemaphorePermit<'_>> {
        loop {
            if self.try_take(n) {
                return Some(SemaphorePermit { sem: self, n });
            }
            let ready = &mut || self.permits.load(Ordering::SeqCst) >= n;
            let what = crate::hook::WaitOn::Semaphore(self as *const Self as usize);
            if !park_until(&self.queue, n, ready, deadline, what) {
                return None;
            }
        }
    }

    /// Takes one permit, waiting as long as needed.
    pub fn acquire(&self) -> SemaphorePermit<'_> {
        self.acquire_many(1)
    }

    /// Takes `n` permits at once, waiting as long as needed. (`n` larger than every permit there
    /// will ever be waits forever, as with any semaphore.)
    pub fn acquire_many(&self, n: usize) -> SemaphorePermit<'_> {
        self.take(n, None)
            .expect("an untimed wait ends with the permits")
    }

    /// Takes one permit if one is free now.
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.try_take(1)
            .then(|| SemaphorePermit { sem: self, n: 1 })
    }

    /// Takes one permit, giving up after `timeout` (never earlier).
    ///
    /// ```
    /// use std::time::Duration;
    /// let sem = footprint::sync::Semaphore::new(0);
    /// assert!(sem.acquire_timeout(Duration::from_millis(1)).is_none());
    /// ```
    pub fn acquire_timeout(&self, timeout: Duration) -> Option<SemaphorePermit<'_>> {
        self.take(1, Instant::now().checked_add(timeout))
    }

    /// Adds `n` permits (e.g. after [`SemaphorePermit::forget`]) and wakes the waiters that
    /// could now proceed.
    pub fn add_permits(&self, n: usize) {
        let now = self.permits.fetch_add(n, Ordering::SeqCst) + n;
        if self.queue.has_waiters() {
            self.queue.notify(usize::MAX, &|need| need <= now);
        }
    }
}

impl SemaphorePermit<'_> {
    /// Keeps the permits out of the semaphore for good.
    pub fn forget(self) {
        std::mem::forget(self)
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        self.sem.add_permits(self.n);
    }
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("available_permits", &self.available_permits())
            .finish()
    }
}

impl std::fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("n", &self.n)
            .finish()
    }
}
