//! Posted operations: a non-blocking MPI operation whose buffer travels with it, started on the
//! thread that may call MPI (the [`ProgressOwner`](super::ProgressOwner)'s, or the caller's under
//! `MPI_THREAD_MULTIPLE`), and a [`Posted`] handle a green thread waits on.
//!
//! # The owner's progress engine
//! Under `MPI_THREAD_FUNNELED`/`SERIALIZED` every MPI call runs on the owner thread. A posted
//! operation's start runs there as a job; its request then joins the owner's list of requests
//! in flight, and the owner tests every request of that list (`MPI_Test`) between jobs, and
//! over and over while no job comes. When one completes, the owner hands the buffer and the
//! status to the waiting green thread through a channel, which wakes it. So a green thread
//! waits off the owner (many at once), and a receive whose matching send comes later from
//! another rank's later job no longer blocks the jobs behind it: the owner is never inside a
//! blocking call on a green thread's behalf.
//!
//! # Why the buffer is owned
//! rsmpi ties a request to borrowed buffers and a scope that must end before the buffers do.
//! A request that outlives the job that started it needs a buffer that nobody else can touch
//! or free until MPI is done: the engine keeps it boxed (its address fixed) from the start to
//! the completion, and gives it back with the status. The start closure sees the buffer
//! only for a lifetime it cannot smuggle out, and a [`PostScope`] catches a request it
//! registered and then forgot (that aborts, as rsmpi's own scopes do: MPI would write into
//! freed memory).

use ::mpi::ffi;
use ::mpi::point_to_point::Status;
use ::mpi::request::{Request, Scope};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use crate::channel::{self, Receiver, Sender};

/// The scope of a posted operation's request (an rsmpi [`Scope`]): the start closure
/// registers exactly the one request it returns.
pub struct PostScope<'b> {
    registered: Cell<usize>,
    _life: PhantomData<Cell<&'b ()>>,
}

// SAFETY: `register`/`unregister` keep an exact count; the engine checks after the start
// closure that the only registered request is the one returned (and unregistered by
// `into_raw`), else it aborts: no request registered here outlives the buffer it uses.
unsafe impl<'a> Scope<'a> for &PostScope<'a> {
    fn register(&self) {
        self.registered.set(self.registered.get() + 1);
    }

    unsafe fn unregister(&self) {
        let n = self.registered.get();
        self.registered.set(
            n.checked_sub(1)
                .expect("unregistered more requests than registered"),
        );
    }
}

/// A request in flight and the buffer it uses (fixed on the heap until completion).
pub(crate) struct Started<B> {
    request: ffi::MPI_Request,
    buffer: Box<B>,
}

/// A started operation's start closure panicked or completed: what the waiter gets.
type Delivery<B> = Result<(Box<B>, Status), Box<dyn Any + Send>>;

/// Runs `start` over the boxed buffer on the current thread (one that may call MPI) and takes
/// the returned request over.
pub(crate) fn start<B, D, F>(mut buffer: Box<B>, start: F) -> Started<B>
where
    D: ?Sized,
    F: for<'b> FnOnce(&'b mut B, &'b PostScope<'b>) -> Request<'b, D, &'b PostScope<'b>>,
{
    let scope = PostScope {
        registered: Cell::new(0),
        _life: PhantomData,
    };
    let request = start(&mut buffer, &scope);
    // SAFETY: the request is completed (tested to completion by `Posted::wait` or the owner's
    // engine) before `buffer` is given back or dropped, and `buffer`'s heap address does not
    // change when the box moves.
    let (request, _, _) = unsafe { request.into_raw() };
    if scope.registered.get() != 0 {
        eprintln!(
            "footprint::mpi: a posted operation's start closure started a request it did not \
             return (MPI could write into freed memory): start one request and return it"
        );
        std::process::abort();
    }
    Started { request, buffer }
}

impl<B> Started<B> {
    /// `MPI_Test`s the request once.
    fn test(&mut self) -> Option<Status> {
        let mut flag = 0;
        let mut status = MaybeUninit::<ffi::MPI_Status>::uninit();
        // SAFETY: the request is active (never completed before: `Some` ends its use).
        unsafe { ffi::MPI_Test(&mut self.request, &mut flag, status.as_mut_ptr()) };
        // SAFETY: MPI_Test fills the status when it sets the flag.
        (flag != 0).then(|| Status::from_raw(unsafe { status.assume_init() }))
    }
}

/// A request the owner thread tests until it completes.
trait InFlight {
    /// Tests once; `true` once completed (and its waiter served).
    fn test(&mut self) -> bool;
}

struct OwnerPending<B> {
    started: Started<B>,
    done: Sender<Delivery<B>>,
}

/// Boxed for the owner's list: the test, and what completion hands to the waiter.
struct Entry<B>(Option<OwnerPending<B>>);

impl<B: Send + 'static> InFlight for Entry<B> {
    fn test(&mut self) -> bool {
        let Some(p) = &mut self.0 else { return true };
        match p.started.test() {
            Some(status) => {
                let p = self.0.take().expect("tested above");
                // A waiter that gave up (dropped its `Posted`) gets nothing; the buffer drops.
                let _ = p.done.send(Ok((p.started.buffer, status)));
                true
            }
            None => false,
        }
    }
}

thread_local! {
    /// The owner thread's requests in flight (empty on every other thread).
    static IN_FLIGHT: RefCell<Vec<Box<dyn InFlight>>> = const { RefCell::new(Vec::new()) };
}

/// Tests every request in flight on this (owner) thread once; returns how many are left and
/// whether any completed.
pub(crate) fn progress_owner() -> (usize, bool) {
    IN_FLIGHT.with(|list| {
        let mut list = list.borrow_mut();
        let before = list.len();
        list.retain_mut(|p| !p.test());
        (list.len(), list.len() != before)
    })
}

/// A non-blocking operation posted through [`Comm::post`](super::Comm::post) or
/// [`ProgressOwner::post`](super::ProgressOwner::post): [`wait`](Posted::wait) for its buffer
/// and status. Dropping it does not cancel the operation: the buffer is kept until MPI is done
/// with it (under the owner, by the owner; otherwise the drop waits). Complete every posted
/// operation (match every receive): the owner finalises MPI only once none is in flight, so one
/// that never completes keeps the last [`ProgressOwner`](super::ProgressOwner) drop waiting.
///
/// ```
/// use footprint::mpi::rsmpi::traits::*;
/// let mpi = footprint::mpi::init_requesting(footprint::mpi::rsmpi::Threading::Funneled)?;
/// let world = mpi.world();
/// let me = world.rank();
/// let rt = footprint::Runtime::builder().workers(1).build()?;
/// let got = rt.block_on(|| {
///     let recv = world.post([0u8; 2], move |buf, c, scope| {
///         c.process_at_rank(me).immediate_receive_into(scope, &mut buf[..])
///     });
///     world.post([4u8, 2], move |buf, c, scope| c.process_at_rank(me).immediate_send(scope, &buf[..]))
///         .wait();
///     recv.wait().0                                       // the buffer comes back
/// });
/// assert_eq!(got, [4, 2]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a posted operation's buffer comes back through wait"]
pub struct Posted<B> {
    inner: Inner<B>,
}

enum Inner<B> {
    /// Started on the caller's thread (`MPI_THREAD_MULTIPLE`): tested by the waiter.
    Direct(Option<DirectRequest<B>>),
    /// Started by the owner, which completes it and sends the result.
    Owner {
        done: Receiver<Delivery<B>>,
        /// Keeps the owner (and MPI) alive while the operation may still be in flight.
        _owner: super::ProgressOwner,
    },
}

/// A request started under `MPI_THREAD_MULTIPLE`, which any thread may test.
struct DirectRequest<B>(Started<B>);

// SAFETY: `MPI_Request` is a handle that `MPI_THREAD_MULTIPLE` (checked before a direct
// request is started) lets any thread test; the buffer is `Send`.
unsafe impl<B: Send> Send for DirectRequest<B> {}

impl<B: Send + 'static> Posted<B> {
    /// An operation started on the current thread, which may call MPI (`MPI_THREAD_MULTIPLE`).
    pub(crate) fn direct(started: Started<B>) -> Posted<B> {
        Posted {
            inner: Inner::Direct(Some(DirectRequest(started))),
        }
    }

    /// Hands `begin` (which starts the operation over the boxed buffer, see [`start`]) to the
    /// owner, which runs it between jobs and tests the request to completion.
    pub(crate) fn through_owner(
        owner: &super::ProgressOwner,
        buffer: B,
        begin: impl FnOnce(Box<B>) -> Started<B> + Send + 'static,
    ) -> Posted<B> {
        let (done_tx, done) = channel::bounded::<Delivery<B>>(1);
        owner.submit(Box::new(move || {
            let buffer = Box::new(buffer);
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || begin(buffer))) {
                Ok(started) => IN_FLIGHT.with(|l| {
                    l.borrow_mut().push(Box::new(Entry(Some(OwnerPending {
                        started,
                        done: done_tx,
                    }))))
                }),
                Err(payload) => {
                    let _ = done_tx.send(Err(payload));
                }
            }
        }));
        Posted {
            inner: Inner::Owner {
                done,
                _owner: owner.clone(),
            },
        }
    }

    /// Waits for the operation to complete; returns its buffer and status. A green thread
    /// parks (under the owner) or polls with `MPI_Test`, yielding its worker between polls
    /// (`MPI_THREAD_MULTIPLE`); either way its worker runs other green threads meanwhile. A
    /// panic of the start closure is resumed here.
    pub fn wait(mut self) -> (B, Status) {
        match &mut self.inner {
            Inner::Direct(started) => {
                let mut s = started.take().expect("waited once");
                loop {
                    if let Some(status) = s.0.test() {
                        return (*s.0.buffer, status);
                    }
                    crate::yield_now();
                    std::thread::yield_now();
                }
            }
            Inner::Owner { done, .. } => match done.recv() {
                Ok(Ok((buffer, status))) => (*buffer, status),
                Ok(Err(payload)) => std::panic::resume_unwind(payload),
                Err(_) => panic!("footprint::mpi: the MPI owner thread dropped a posted operation"),
            },
        }
    }
}

impl<B> Drop for Posted<B> {
    fn drop(&mut self) {
        if let Inner::Direct(Some(s)) = &mut self.inner {
            // MPI may still write the buffer: wait for it before it is freed.
            while s.0.test().is_none() {
                std::thread::yield_now();
            }
        }
    }
}
