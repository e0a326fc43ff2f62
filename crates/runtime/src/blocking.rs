//! A pool of OS threads for blocking system calls: `spawn_blocking` and `block_in_place`.
//!
//! ELiTE §3.4: a kernel thread blocked in a system call must not cost the application a
//! processor. Work handed to this pool runs on extra OS threads (created on demand, retired
//! after 10 s idle), so the workers keep running green threads meanwhile.

use crate::handle::JoinHandle;
use crate::registry::Shared;
use crate::task::{Task, TaskSetup};
use crate::worker::local::ThreadCtx;
use crate::{context, handle, spawn};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

const MAX_THREADS: usize = 512;
const KEEP_ALIVE: Duration = Duration::from_secs(10);

struct State {
    jobs: VecDeque<Arc<Task>>,
    idle: usize,
    threads: usize,
}

struct Pool {
    state: Mutex<State>,
    cv: Condvar,
}

fn pool() -> &'static Pool {
    static P: OnceLock<Pool> = OnceLock::new();
    P.get_or_init(|| Pool {
        state: Mutex::new(State {
            jobs: VecDeque::new(),
            idle: 0,
            threads: 0,
        }),
        cv: Condvar::new(),
    })
}

fn submit(t: Arc<Task>) {
    let p = pool();
    let mut g = p.state.lock().unwrap_or_else(|e| e.into_inner());
    g.jobs.push_back(t);
    if g.idle > 0 {
        drop(g);
        p.cv.notify_one();
        return;
    }
    if g.threads < MAX_THREADS {
        g.threads += 1;
        drop(g);
        let started = std::thread::Builder::new()
            .name("footprint-blocking".into())
            .spawn(blocking_main);
        if started.is_err() {
            let mut g = p.state.lock().unwrap_or_else(|e| e.into_inner());
            g.threads -= 1;
            // The job stays queued; an existing thread will take it.
        }
    }
}

fn blocking_main() {
    // A thread started from a pinned worker inherits its pin; blocking calls belong on any CPU
    // of the process's set, not on a worker's core. Failing that, it keeps the inherited set.
    let _ = crate::sys::unpin_to_process_set();
    let p = pool();
    let mut g = p.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(t) = g.jobs.pop_front() {
            drop(g);
            run_blocking(t);
            g = p.state.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        g.idle += 1;
        let (ng, to) =
            p.cv.wait_timeout(g, KEEP_ALIVE)
                .unwrap_or_else(|e| e.into_inner());
        g = ng;
        g.idle -= 1;
        if to.timed_out() && g.jobs.is_empty() {
            g.threads -= 1;
            return;
        }
    }
}

use crate::in_flight::IN_FLIGHT;

fn run_blocking(t: Arc<Task>) {
    // SAFETY: the task is unfinished, so its runtime is alive.
    let shared = unsafe { t.runtime() };
    let ctx = ThreadCtx::off_worker(shared);
    context::set_ctx(&ctx);
    // SAFETY: blocking tasks are created LIFE_RUNNING and handed only to this pool, so this
    // thread holds the run reference.
    unsafe {
        t.run_job_in_place();
        t.complete();
    }
    spawn::count_finished(&t);
    context::set_ctx(std::ptr::null());
    IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
}

/// # Safety
/// As for `spawn::spawn_raw`.
unsafe fn spawn_blocking_raw<F, T>(shared: *const Shared, f: F) -> Arc<Task>
where
    F: FnOnce() -> T,
{
    let t = Arc::new(Task::new());
    // SAFETY: a fresh Arc is unique.
    unsafe {
        t.init(
            f,
            TaskSetup {
                runtime: shared.cast(),
                with_handle: true,
                stack_size: 0,
                name: None,
                scope: None,
                worker: 0,
            },
        )
    };
    // Never claimable by a joiner: it must run on a blocking thread.
    // SAFETY: the block is still ours alone.
    unsafe { t.claim_owned() };
    // SAFETY: shared is alive (caller's runtime or the global one).
    unsafe { (*shared).count_external_spawn() };
    IN_FLIGHT.fetch_add(1, Ordering::Relaxed);
    submit(t.clone());
    t
}

fn current_shared_or_global() -> *const Shared {
    let s = context::current_shared();
    if s.is_null() {
        crate::global::global_shared()
    } else {
        s
    }
}

/// Runs a blocking function on the blocking pool and returns a handle to its result; the
/// workers keep running green threads meanwhile.
///
/// ```
/// let rt = footprint::Runtime::builder().workers(1).build().unwrap();
/// let n = rt.block_on(|| {
///     footprint::spawn_blocking(|| std::fs::read_dir(".").map(|d| d.count()).unwrap_or(0))
///         .join()
///         .unwrap()
/// });
/// assert!(n > 0);
/// ```
pub fn spawn_blocking<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // SAFETY: 'static closure and result.
    let t = unsafe { spawn_blocking_raw(current_shared_or_global(), f) };
    JoinHandle {
        task: Some(t),
        _marker: PhantomData,
    }
}

/// Runs `f` (which may block in the kernel, and may borrow) on the blocking pool while the
/// calling green thread parks, so its worker keeps running other green threads. Outside a green
/// thread it simply calls `f`. A panic in `f` is re-raised here.
pub fn block_in_place<F, R>(f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    if context::current_task_ptr().is_null() {
        return f();
    }
    // SAFETY: we join before returning, so `f`'s borrows outlive its run.
    let t = unsafe { spawn_blocking_raw(context::current_shared(), f) };
    // SAFETY: result type R, sole handle.
    match unsafe { handle::join_task::<R>(t, None) } {
        Ok(v) => v,
        Err(p) => std::panic::resume_unwind(p),
    }
}
