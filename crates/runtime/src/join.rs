//! Fork-join: `join(a, b)` and `scope`.

use crate::job::StackJobRef;
use crate::task::{drop_payload, Latch, ScopeCount, ScopeShared, Task, Waiter};
use crate::{context, handle, job, parking, registry, spawn};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

/// The stealable half of a `join`, on its caller's stack.
#[repr(C)]
struct StackJob<B, RB> {
    /// Must stay first: the scheduler reads it through the type-erased pointer.
    header: job::StackJobHeader,
    f: UnsafeCell<Option<B>>,
    result: UnsafeCell<Option<std::thread::Result<RB>>>,
    done: Latch,
    /// The green thread that waits for it (alive until `done`).
    owner: *const Task,
}

unsafe fn exec_stack_job<B: FnOnce() -> RB, RB>(p: *const ()) {
    // SAFETY: p points to a live StackJob<B, RB> whose owner waits for `done`; exactly one thread
    // (the one that popped or stole the ref) runs it.
    unsafe {
        let job = &*(p as *const StackJob<B, RB>);
        let f = (*job.f.get()).take().expect("join half ran twice");
        let r = panic::catch_unwind(AssertUnwindSafe(f));
        *job.result.get() = Some(r);
        // Take our own reference to the owner before `done`: after it, the job may be gone.
        Arc::increment_strong_count(job.owner);
        let owner = Arc::from_raw(job.owner);
        job.done.set();
        owner.unpark_task(footprint_locks::Placement::Anywhere);
    }
}

/// Runs `a` and `b`, potentially in parallel, and returns both results.
///
/// `a` runs inline; `b` is offered to idle workers. If nobody took `b` by the time `a` returns,
/// it runs inline too (no green thread, no stack, no switch). If a thief took it and it is not
/// finished, the calling green thread parks and its worker runs something else. A panic in
/// either closure is re-raised after both have finished (`a`'s first).
///
/// Called outside a runtime it runs on the global runtime (see [`crate::global`]).
///
/// ```
/// fn fib(n: u64) -> u64 {
///     if n < 2 { return n; }
///     let (a, b) = footprint::join(|| fib(n - 1), || fib(n - 2));
///     a + b
/// }
/// let rt = footprint::Runtime::builder().workers(2).build().unwrap();
/// assert_eq!(rt.block_on(|| fib(20)), 6765);
/// ```
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let Some((owner, worker)) = context::current_green_on_worker() else {
        return crate::global::current_or_global(|rt| rt.block_on(move || join(a, b)));
    };
    let job = StackJob::<B, RB> {
        header: job::StackJobHeader {
            seq: std::cell::Cell::new(0),
        },
        f: UnsafeCell::new(Some(b)),
        result: UnsafeCell::new(None),
        done: Latch::new(),
        owner,
    };
    let r = StackJobRef {
        data: &job as *const StackJob<B, RB> as *const (),
        exec: exec_stack_job::<B, RB>,
    };
    // SAFETY: `owner` is the running green thread (this one); only it touches `nested`.
    unsafe { (*owner).enter_nested() };
    // SAFETY: `worker` was read just above and we have not yielded since.
    let (pushed_on, seq) = unsafe { spawn::push_stack_job(worker, r) };
    let ra = panic::catch_unwind(AssertUnwindSafe(a));
    // SAFETY: `owner` is this green thread and `worker` the worker it pushed on.
    let rb = if unsafe { spawn::take_back_stack_job(owner, worker, r.data, seq, pushed_on) } {
        // SAFETY: we took the only reference back, so `f` is ours.
        // `b` runs even when `a` panicked (as rayon does); `a`'s panic is re-raised below.
        let f = unsafe { (*job.f.get()).take() }.expect("join half present");
        Some(panic::catch_unwind(AssertUnwindSafe(f)))
    } else {
        crate::watch::note::note_current(crate::watch::record::WaitKind::JoinHalf, 0, None);
        while !job.done.probe() {
            parking::park_current();
        }
        // SAFETY: `done` (Acquire) publishes the result; the executor no longer touches the job.
        unsafe { (*job.result.get()).take() }
    };
    // SAFETY: as above; the control block outlives the green thread's frames.
    unsafe { (*owner).leave_nested() };
    match (ra, rb) {
        (Ok(a), Some(Ok(b))) => (a, b),
        // The other half's result or payload is dropped before the panic goes on, where a
        // panic of its destructor is swallowed: dropped during the unwind, it would abort.
        (Err(p), other) => {
            match other {
                Some(Ok(b)) => drop_quietly(b),
                Some(Err(q)) => drop_payload(q),
                None => {}
            }
            panic::resume_unwind(p)
        }
        (Ok(a), Some(Err(p))) => {
            drop_quietly(a);
            panic::resume_unwind(p)
        }
        (Ok(_), None) => unreachable!("b result missing"),
    }
}

/// Drops `value` without letting a panic of its destructor out (its payload is dropped the
/// same way): for values dropped on the way to re-raising another panic.
pub(crate) fn drop_quietly<T>(value: T) {
    if let Err(p) = panic::catch_unwind(AssertUnwindSafe(move || drop(value))) {
        drop_payload(p);
    }
}

/// A scope for spawning green threads that borrow from the enclosing stack frame; see [`scope`].
pub struct Scope<'scope, 'env: 'scope> {
    data: Arc<ScopeShared>,
    rt: *const registry::Shared,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

// SAFETY: the raw runtime pointer is only used to queue work; the runtime outlives the scope.
unsafe impl Sync for Scope<'_, '_> {}
// SAFETY: as above.
unsafe impl Send for Scope<'_, '_> {}

/// Creates a scope in which green threads may borrow non-`'static` data; every green thread
/// spawned in it has finished when `scope` returns (like `std::thread::scope`).
///
/// A panic in the closure, or in a scoped green thread that was not joined, is re-raised when
/// all of them have finished. Outside a runtime the scoped threads run on the global runtime and
/// the calling OS thread blocks while it waits.
///
/// ```
/// let rt = footprint::Runtime::builder().workers(2).build().unwrap();
/// let data = vec![1, 2, 3];
/// let sum = rt.block_on(|| {
///     footprint::scope(|s| {
///         let h = s.spawn(|| data.iter().sum::<i32>());
///         h.join().unwrap()
///     })
/// });
/// assert_eq!(sum, 6);
/// ```
pub fn scope<'env, F, R>(f: F) -> R
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
{
    let mut rt = context::current_shared();
    if rt.is_null() {
        rt = crate::global::global_shared();
    }
    let s = Scope {
        data: Arc::new(ScopeShared {
            pending: ScopeCount::new(),
            owner: Waiter::current(),
            panic: Mutex::new(None),
        }),
        rt,
        _scope: PhantomData,
        _env: PhantomData,
    };
    let r = panic::catch_unwind(AssertUnwindSafe(|| f(&s)));
    crate::watch::note::note_current(crate::watch::record::WaitKind::Scope, 0, None);
    while !s.data.pending.is_zero() {
        parking::park_current();
    }
    let late = s
        .data
        .panic
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    // The closure's panic first, then a scoped thread's; whatever is not re-raised is dropped
    // first, a panic of its destructor swallowed (dropped during the unwind, it would abort).
    match (r, late) {
        (Ok(v), None) => v,
        (Err(p), late) => {
            if let Some(q) = late {
                drop_payload(q);
            }
            panic::resume_unwind(p)
        }
        (Ok(v), Some(p)) => {
            drop_quietly(v);
            panic::resume_unwind(p)
        }
    }
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Spawns a green thread that may borrow anything that outlives the scope.
    pub fn spawn<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        self.data.pending.add();
        // SAFETY: `scope` waits for every task it counted before the borrows of 'scope end, and
        // the runtime outlives the scope (it is the caller's own or the global one).
        let task = unsafe {
            spawn::spawn_raw(
                crate::context::ctx_ptr(),
                &*self.rt,
                f,
                spawn::SpawnOptions {
                    scope: Some(self.data.clone()),
                    ..spawn::SpawnOptions::default()
                },
            )
        };
        ScopedJoinHandle {
            task: Some(task),
            scope: &self.data,
            _marker: PhantomData,
        }
    }
}

/// Owned permission to join a scoped green thread.
pub struct ScopedJoinHandle<'scope, T> {
    task: Option<Arc<Task>>,
    scope: &'scope ScopeShared,
    _marker: PhantomData<&'scope T>,
}

// SAFETY: moves T (Send) to the joiner only.
unsafe impl<T: Send> Send for ScopedJoinHandle<'_, T> {}
// SAFETY: &handle exposes only is_finished.
unsafe impl<T> Sync for ScopedJoinHandle<'_, T> {}

impl<T> ScopedJoinHandle<'_, T> {
    /// Waits for the green thread and returns its value or its panic payload.
    #[track_caller]
    pub fn join(mut self) -> std::thread::Result<T> {
        let t = self.task.take().expect("handle used twice");
        // SAFETY: the task's result type is T and we own its handle.
        unsafe { handle::join_task::<T>(t, Some(std::panic::Location::caller())) }
    }

    /// Whether the green thread has finished.
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_some_and(|t| t.is_done())
    }
}

impl<T> Drop for ScopedJoinHandle<'_, T> {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            handle::detach_task(t, Some(self.scope));
        }
    }
}
