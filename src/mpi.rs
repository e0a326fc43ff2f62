//! footprint inside an MPI rank (feature `mpi`): start MPI at the threading level footprint
//! needs, wait for MPI requests without stalling a worker, and check how `mpirun` placed the
//! ranks. A thin layer over [rsmpi](https://docs.rs/mpi) (re-exported as [`rsmpi`]), which stays
//! the MPI API you call.
//!
//! # Threading level: [`init`] chooses the route
//! A green thread may resume on any worker (work stealing), and [`blocking`] runs its call on a
//! thread of the blocking pool, so calling MPI directly from green threads needs
//! [`Threading::Multiple`]; [`initialize`] asks for it and returns
//! [`MpiError::ThreadingTooLow`] when the library offers less. [`init`] serves every level with
//! one program: it asks for `Multiple` and, from the level granted, lets green threads call MPI
//! themselves ([`Route::Direct`], through [`SharedComm`]) or routes every call through a
//! [`ProgressOwner`] thread ([`Route::Owner`], `Funneled`/`Serialized`), whose progress engine
//! tests the requests green threads posted ([`Comm::post`], [`ProgressOwner::post`]) and wakes
//! each waiter when its request completes. [`init`]'s docs weigh the two routes' costs.
//!
//! # Communicators in green threads
//! rsmpi's communicators are not `Send`; [`SharedComm`] makes any owning communicator (split,
//! duplicated, Cartesian, inter) a `Send + Sync` handle for green threads, and exists only
//! under `MPI_THREAD_MULTIPLE` (see its safety argument).
//!
//! # Waiting without stalling a worker
//! - [`wait`] / [`wait_all`] / [`wait_any`] / [`progress`]: poll immediate requests
//!   (`immediate_send`, `immediate_receive_into`, `immediate_all_reduce_into`, ...) with
//!   `MPI_Test*`, yielding the worker to other green threads between polls. No extra OS thread;
//!   the preferred way. `wait_all` takes a `Vec` of requests or an rsmpi `RequestCollection`.
//! - [`blocking`]: run a blocking call (`receive`, `all_reduce_into`, ...) on the blocking pool
//!   while the green thread parks, for calls that have no immediate form.
//!
//! # Placement
//! [`Runtime::builder()`](crate::Runtime::builder) already places one worker per CPU of the
//! process's allowed CPU set and pins each inside it, so under `mpirun --bind-to core|socket|...`
//! the workers stay inside the rank's binding. [`placement`] reports each rank's CPU set and the
//! ranks on the same host whose sets overlap (their workers would share cores).
//!
//! ```
//! use footprint::mpi::rsmpi::traits::*;
//! let universe = footprint::mpi::initialize()?;               // MPI_THREAD_MULTIPLE or an error
//! let world = universe.world();
//! let here = footprint::mpi::placement(&world)?;               // collective: every rank calls it
//! let rt = footprint::Runtime::builder().build()?;             // workers inside the rank's CPUs
//! let mine = world.rank() as u64;
//! let total = rt.block_on(|| {
//!     let world = footprint::mpi::rsmpi::topology::SimpleCommunicator::world();
//!     let mut sum = 0u64;
//!     footprint::mpi::rsmpi::request::scope(|scope| {
//!         let op = footprint::mpi::rsmpi::collective::SystemOperation::sum();
//!         let req = world.immediate_all_reduce_into(scope, &mine, &mut sum, op);
//!         footprint::mpi::wait(req);                           // other green threads run meanwhile
//!     });
//!     sum
//! });
//! assert_eq!(total, (0..world.size() as u64).sum::<u64>());
//! println!("{here}: sum of ranks {total}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

mod progress;
mod route;

pub use ::mpi as rsmpi;
use ::mpi::collective::CommunicatorCollectives;
use ::mpi::environment::Universe;
use ::mpi::point_to_point::Status;
use ::mpi::request::{Request, RequestCollection, Scope};
use ::mpi::topology::Communicator;
use ::mpi::Threading;
pub use progress::{PostScope, Posted};
pub use route::{init, init_requesting, Comm, Mpi, Route};

/// The MPI threading level footprint needs (see the module docs for why).
pub const REQUIRED_THREADING: Threading = Threading::Multiple;

/// Why MPI could not be set up for footprint.
#[derive(Debug)]
pub enum MpiError {
    /// MPI was initialised before [`initialize`] was called.
    AlreadyInitialized,
    /// The MPI library offers a lower threading level than [`REQUIRED_THREADING`].
    ThreadingTooLow {
        /// The level the library granted.
        provided: Threading,
    },
    /// The rank's allowed CPU set could not be read.
    Affinity(crate::affinity::TopologyError),
    /// The [`ProgressOwner`]'s thread could not be started or ended early.
    OwnerThread(String),
}

impl fmt::Display for MpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MpiError::AlreadyInitialized => write!(
                f,
                "MPI is already initialised: call footprint::mpi::initialize() once, before any \
                 other MPI initialisation, so it can ask for MPI_THREAD_MULTIPLE"
            ),
            MpiError::ThreadingTooLow { provided } => write!(
                f,
                "the MPI library offers threading level {provided:?} but footprint needs \
                 {REQUIRED_THREADING:?} (MPI_THREAD_MULTIPLE: green threads call MPI from \
                 several workers): use an MPI built with thread-multiple support (Open MPI >= 3 \
                 and MPICH do by default; check `ompi_info | grep -i thread`), or, at \
                 MPI_THREAD_FUNNELED or SERIALIZED, hand MPI calls to \
                 footprint::mpi::ProgressOwner"
            ),
            MpiError::Affinity(e) => write!(f, "cannot read this rank's CPU set: {e}"),
            MpiError::OwnerThread(e) => write!(f, "footprint's MPI owner thread: {e}"),
        }
    }
}

impl std::error::Error for MpiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MpiError::Affinity(e) => Some(e),
            _ => None,
        }
    }
}

/// Checks a granted threading level against [`REQUIRED_THREADING`].
///
/// ```
/// use footprint::mpi::{check_threading, rsmpi::Threading, MpiError};
/// assert!(check_threading(Threading::Multiple).is_ok());
/// let e = check_threading(Threading::Serialized).unwrap_err();
/// assert!(matches!(e, MpiError::ThreadingTooLow { provided: Threading::Serialized }));
/// assert!(e.to_string().contains("MPI_THREAD_MULTIPLE"));
/// ```
pub fn check_threading(provided: Threading) -> Result<(), MpiError> {
    if provided >= REQUIRED_THREADING {
        Ok(())
    } else {
        Err(MpiError::ThreadingTooLow { provided })
    }
}

/// Initialises MPI with [`REQUIRED_THREADING`] and returns the universe (MPI is finalised when
/// it is dropped). Fails when MPI is already initialised or the library offers less; in the
/// latter case MPI is finalised again before returning, so every rank exits cleanly.
///
/// Works under `mpirun` and, with Open MPI and MPICH, as a single process without it.
pub fn initialize() -> Result<Universe, MpiError> {
    let (universe, provided) =
        ::mpi::initialize_with_threading(REQUIRED_THREADING).ok_or(MpiError::AlreadyInitialized)?;
    check_threading(provided)?;
    Ok(universe)
}

/// Waits for an immediate request, yielding the worker to other green threads between
/// `MPI_Test` polls, then the OS thread (`sched_yield`, like Open MPI's `mpi_yield_when_idle`).
/// Returns its status.
///
/// The OS yield matters where cores are shared: on this project's loaded 2-core machine it
/// halved the time per sweep of `mpi_heat` on 2 ranks (a rank that spins while its peer is
/// descheduled uses up its own share of the core); on a dedicated core it returns at once.
///
/// MPI only makes progress on a request while some thread is inside MPI, so a long computation
/// between polls delays a message that needs several round trips (a large rendezvous send).
pub fn wait<'a, D: ?Sized, S: Scope<'a>>(mut request: Request<'a, D, S>) -> Status {
    loop {
        match request.test() {
            Ok(status) => return status,
            Err(pending) => {
                request = pending;
                crate::yield_now();
                std::thread::yield_now();
            }
        }
    }
}

/// Tests each request in `requests` once and removes those that completed, without waiting.
/// Calling it between pieces of computation lets MPI progress messages (a large send needs
/// several round trips) while the computation runs.
///
/// ```
/// use footprint::mpi::rsmpi::{request, traits::*};
/// let universe = footprint::mpi::initialize()?;
/// let world = universe.world();
/// let me = world.this_process();
/// let (out, mut back) = ([1.0f64, 2.0], [0.0f64; 2]);
/// request::scope(|scope| {
///     let mut reqs = vec![me.immediate_receive_into(scope, &mut back[..])];
///     footprint::mpi::progress(&mut reqs);                // nothing sent yet: still pending
///     assert_eq!(reqs.len(), 1);
///     me.send(&out[..]);
///     while !reqs.is_empty() {
///         footprint::mpi::progress(&mut reqs);            // ...computation between polls
///     }
/// });
/// assert_eq!(back, out);
/// # Ok::<(), footprint::mpi::MpiError>(())
/// ```
pub fn progress<'a, D: ?Sized, S: Scope<'a>>(requests: &mut Vec<Request<'a, D, S>>) {
    for request in std::mem::take(requests) {
        if let Err(pending) = request.test() {
            requests.push(pending);
        }
    }
}

/// Requests [`wait_all`] can wait for: a `Vec` of requests (statuses in the requests' order)
/// or an rsmpi [`RequestCollection`] (from `request::multiple_scope`: the completed requests'
/// indices, statuses and buffers, in completion order).
pub trait WaitAll {
    /// What waiting for them gives.
    type Output;
    /// Waits like [`wait_all`].
    fn wait_all(self) -> Self::Output;
}

impl<'a, D: ?Sized, S: Scope<'a>> WaitAll for Vec<Request<'a, D, S>> {
    type Output = Vec<Status>;
    fn wait_all(self) -> Vec<Status> {
        wait_all_vec(self)
    }
}

impl<'a, D: ?Sized> WaitAll for &mut RequestCollection<'a, D> {
    type Output = Vec<(usize, Status, &'a D)>;
    fn wait_all(self) -> Vec<(usize, Status, &'a D)> {
        let mut done = Vec::new();
        let mut batch = Vec::new();
        while self.incomplete() > 0 {
            self.test_some(&mut batch);
            if batch.is_empty() {
                crate::yield_now();
                std::thread::yield_now();
            }
            done.append(&mut batch);
        }
        done
    }
}

/// Waits for any incomplete request of an rsmpi [`RequestCollection`] like [`wait`] (other
/// green threads run between `MPI_Testany` polls); returns its index, status and buffer, or
/// `None` when every request of the collection has already completed.
///
/// ```
/// use footprint::mpi::rsmpi::{request, traits::*};
/// let universe = footprint::mpi::initialize()?;
/// let world = universe.world();
/// let me = world.this_process();
/// let (one, mut a, mut b) = (1u32, [0u32], [0u32]);
/// request::multiple_scope(2, |scope, coll| {
///     coll.add(me.immediate_receive_into_with_tag(scope, &mut a[..], 1));
///     coll.add(me.immediate_receive_into_with_tag(scope, &mut b[..], 2));
///     me.send_with_tag(&one, 2);
///     let (i, status, _) = footprint::mpi::wait_any(coll).expect("one incomplete");
///     assert_eq!((i, status.tag()), (1, 2));
///     me.send_with_tag(&one, 1);
///     assert_eq!(footprint::mpi::wait_all(&mut *coll).len(), 1);
///     assert!(footprint::mpi::wait_any(coll).is_none());
/// });
/// # Ok::<(), footprint::mpi::MpiError>(())
/// ```
pub fn wait_any<'a, D: ?Sized>(
    requests: &mut RequestCollection<'a, D>,
) -> Option<(usize, Status, &'a D)> {
    // MPI_Testany on a collection with nothing incomplete answers MPI_UNDEFINED.
    while requests.incomplete() > 0 {
        if let Some(done) = requests.test_any() {
            return Some(done);
        }
        crate::yield_now();
        std::thread::yield_now();
    }
    None
}

/// Any communicator (`world`, one from `split_by_color`, `duplicate`, a Cartesian one, ...) as a
/// handle that green threads may move and share: rsmpi's communicators are neither `Send` nor
/// `Sync`, because MPI below `MPI_THREAD_MULTIPLE` forbids calls from several threads. This
/// handle derefs to the communicator and clones cheaply (an `Arc`); the communicator is freed
/// when the last clone is dropped.
///
/// # Why it may be shared: `MPI_THREAD_MULTIPLE` only
/// [`SharedComm::new`] fails with [`MpiError::ThreadingTooLow`] unless the library granted
/// `MPI_THREAD_MULTIPLE` (the level [`initialize`] requires): only at that level does MPI let
/// several threads call it at once, which is what green threads on several workers do. Under
/// `MPI_THREAD_SERIALIZED` or `FUNNELED` there is no safe way to hand a communicator to green
/// threads, and this type refuses: hand MPI calls to a [`ProgressOwner`] instead. It wraps rsmpi's owning communicator types only
/// (`SimpleCommunicator`, from `world()`, `split_*`, `duplicate()`; `CartesianCommunicator`;
/// `InterCommunicator`), which hold nothing but an `MPI_Comm` handle.
///
/// Two rules MPI keeps at any threading level:
/// - ranks enter the collectives of one communicator in the same order, so do not run two
///   collectives on one communicator from two green threads at once (give each its own
///   `duplicate()`); point-to-point calls from many green threads at once are fine;
/// - drop every clone before the [`Universe`] (MPI_Finalize), e.g. keep the universe in a
///   variable declared first in `main`.
///
/// ```
/// use footprint::mpi::rsmpi::topology::Color;
/// use footprint::mpi::rsmpi::traits::*;
/// let universe = footprint::mpi::initialize()?;
/// let world = universe.world();
/// let half = world.split_by_color(Color::with_value(world.rank() % 2)).expect("a color");
/// let half = footprint::mpi::SharedComm::new(half)?;
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let sizes = rt.block_on(|| {
///     let hs: Vec<_> = (0..4).map(|_| footprint::spawn({
///         let half = half.clone();
///         move || half.size()
///     })).collect();
///     hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
/// });
/// assert!(sizes.iter().all(|&s| s == half.size()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SharedComm<C> {
    comm: std::sync::Arc<C>,
}

// SAFETY: `C` is one of rsmpi's owning communicator types (sealed below): each is only an
// `MPI_Comm` handle value (no Rust-side state that threads could race on), freed with
// `MPI_Comm_free` when dropped. They are not `Send`/`Sync` in rsmpi because MPI below
// `MPI_THREAD_MULTIPLE` forbids calls from several threads. A `SharedComm` exists only after
// `new` checked that the library granted `MPI_THREAD_MULTIPLE`, under which the MPI standard
// lets any thread call MPI on the communicator, concurrently, and free it; the `Arc` frees it
// once, after the last clone, from whichever thread drops that clone.
unsafe impl<C: Communicator + sealed::OwnedCommunicator> Send for SharedComm<C> {}
// SAFETY: as for `Send`: shared access only calls MPI functions on the handle, which
// `MPI_THREAD_MULTIPLE` allows from several threads at once.
unsafe impl<C: Communicator + sealed::OwnedCommunicator> Sync for SharedComm<C> {}

mod sealed {
    /// rsmpi's communicator types that own nothing but their `MPI_Comm` handle. Borrowing
    /// views (`Process`, `AnyProcess`) and user types are left out: their safety cannot be
    /// argued here.
    pub trait OwnedCommunicator {}
    impl OwnedCommunicator for ::mpi::topology::SimpleCommunicator {}
    impl OwnedCommunicator for ::mpi::topology::CartesianCommunicator {}
    impl OwnedCommunicator for ::mpi::topology::InterCommunicator {}
}

impl<C: Communicator + sealed::OwnedCommunicator> SharedComm<C> {
    /// Wraps `comm`; fails with [`MpiError::ThreadingTooLow`] unless the library granted
    /// `MPI_THREAD_MULTIPLE` (as [`initialize`] ensures).
    pub fn new(comm: C) -> Result<SharedComm<C>, MpiError> {
        check_threading(::mpi::environment::threading_support())?;
        Ok(SharedComm {
            comm: std::sync::Arc::new(comm),
        })
    }
}

impl<C> Clone for SharedComm<C> {
    fn clone(&self) -> Self {
        SharedComm {
            comm: std::sync::Arc::clone(&self.comm),
        }
    }
}

impl<C> std::ops::Deref for SharedComm<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.comm
    }
}

/// Waits for all `requests` like [`wait`]; the statuses come back in the requests' order.
///
/// ```
/// use footprint::mpi::rsmpi::{request, traits::*};
/// let universe = footprint::mpi::initialize()?;
/// let rt = footprint::Runtime::builder().workers(1).build()?;
/// let got = rt.block_on(|| {
///     let world = footprint::mpi::rsmpi::topology::SimpleCommunicator::world();
///     let me = world.this_process();
///     let (one, mut a, mut b) = (1u32, 0u32, 0u32);
///     request::scope(|scope| {
///         let reqs = vec![
///             me.immediate_receive_into_with_tag(scope, &mut a, 1),
///             me.immediate_receive_into_with_tag(scope, &mut b, 2),
///         ];
///         let sends = vec![
///             me.immediate_send_with_tag(scope, &one, 2),
///             me.immediate_send_with_tag(scope, &one, 1),
///         ];
///         let statuses = footprint::mpi::wait_all(reqs);
///         assert_eq!(statuses[1].tag(), 2);                // in the requests' order
///         footprint::mpi::wait_all(sends);
///     });
///     (a, b)
/// });
/// assert_eq!(got, (1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Also takes an rsmpi [`RequestCollection`] (see [`WaitAll`]).
pub fn wait_all<R: WaitAll>(requests: R) -> R::Output {
    requests.wait_all()
}

fn wait_all_vec<'a, D: ?Sized, S: Scope<'a>>(requests: Vec<Request<'a, D, S>>) -> Vec<Status> {
    let mut statuses: Vec<Option<Status>> = (0..requests.len()).map(|_| None).collect();
    let mut pending: Vec<(usize, Request<'a, D, S>)> = requests.into_iter().enumerate().collect();
    loop {
        let mut still = Vec::with_capacity(pending.len());
        for (i, request) in pending {
            match request.test() {
                Ok(status) => statuses[i] = Some(status),
                Err(request) => still.push((i, request)),
            }
        }
        if still.is_empty() {
            break;
        }
        pending = still;
        crate::yield_now();
        std::thread::yield_now();
    }
    statuses.into_iter().flatten().collect()
}

/// Runs a blocking MPI call on the runtime's blocking pool while the calling green thread parks,
/// so its worker keeps running other green threads ([`crate::block_in_place`], named for this
/// use). Prefer an immediate operation with [`wait`] where one exists: a blocking MPI call
/// busy-polls its thread.
///
/// rsmpi's communicators are not `Send`: build the communicator inside `f`
/// (`SimpleCommunicator::world()` is free) or move a [`SharedComm`] clone into it.
///
/// The blocking pool's threads run on the process's CPU set (the rank's binding), not pinned to
/// a worker's CPU, so a call that busy-polls inside MPI (Open MPI's blocking calls do) competes
/// with the workers for the rank's cores meanwhile.
///
/// ```
/// use footprint::mpi::rsmpi::{collective::SystemOperation, topology::SimpleCommunicator};
/// use footprint::mpi::rsmpi::traits::*;
/// let universe = footprint::mpi::initialize()?;
/// let rt = footprint::Runtime::builder().workers(1).build()?;
/// let ranks = rt.block_on(|| {
///     let mine = SimpleCommunicator::world().rank();
///     footprint::mpi::blocking(|| {
///         let world = SimpleCommunicator::world();
///         let mut total = 0;
///         world.all_reduce_into(&(mine + 1), &mut total, SystemOperation::sum());
///         total
///     })
/// });
/// assert_eq!(ranks, (1..=universe.world().size()).sum::<i32>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn blocking<F, R>(f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    crate::block_in_place(f)
}

/// Returns the value, or prints `rank N: <error>` and aborts every rank of `comm` (so no peer is
/// left waiting in a collective for a rank that gave up).
///
/// ```
/// let universe = footprint::mpi::initialize()?;
/// let world = universe.world();
/// let rt = footprint::mpi::abort_on_error(&world, footprint::Runtime::builder().build());
/// assert!(rt.workers() >= 1);
/// # Ok::<(), footprint::mpi::MpiError>(())
/// ```
pub fn abort_on_error<T, E: fmt::Display, C: Communicator>(comm: &C, result: Result<T, E>) -> T {
    match result {
        Ok(v) => v,
        Err(e) => {
            eprintln!(
                "rank {}: {e}; aborting all {} ranks",
                comm.rank(),
                comm.size()
            );
            comm.abort(1)
        }
    }
}

/// Where a rank runs: its host, its allowed CPU set (as `mpirun` bound it), and the other ranks
/// on the same host whose CPU sets overlap it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPlacement {
    /// This rank in the communicator.
    pub rank: i32,
    /// Ranks in the communicator.
    pub size: i32,
    /// The MPI processor name (the host).
    pub host: String,
    /// The CPUs this rank may run on; the runtime's workers are pinned inside this set.
    pub cpus: Vec<usize>,
    /// Ranks on the same host sharing at least one of those CPUs (empty when the binding is
    /// exclusive).
    pub shares_cpus_with: Vec<i32>,
}

impl fmt::Display for RankPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rank {}/{} on {} cpus {:?}",
            self.rank, self.size, self.host, self.cpus
        )?;
        if !self.shares_cpus_with.is_empty() {
            write!(
                f,
                " (shares CPUs with ranks {:?}: bind ranks apart, e.g. mpirun --bind-to core \
                 --map-by slot:PE=<workers>)",
                self.shares_cpus_with
            )?;
        }
        Ok(())
    }
}

/// CPU mask words exchanged by [`placement`] (CPUs 0..4096).
const MASK_WORDS: usize = 64;

/// Reports this rank's placement (a collective: every rank of `comm` must call it).
pub fn placement<C: Communicator>(comm: &C) -> Result<RankPlacement, MpiError> {
    let cpus = crate::affinity::allowed_cpus().map_err(MpiError::Affinity)?;
    let host = ::mpi::environment::processor_name().unwrap_or_else(|_| "?".into());
    let mut mine = [0u64; MASK_WORDS + 1];
    mine[0] = fnv1a(host.as_bytes());
    for &cpu in cpus.iter().filter(|&&c| c < MASK_WORDS * 64) {
        mine[1 + cpu / 64] |= 1 << (cpu % 64);
    }
    let size = comm.size();
    let mut all = vec![0u64; mine.len() * size as usize];
    comm.all_gather_into(&mine[..], &mut all[..]);
    let rank = comm.rank();
    let shares_cpus_with = all
        .chunks_exact(mine.len())
        .enumerate()
        .filter(|&(r, other)| {
            r as i32 != rank
                && other[0] == mine[0]
                && other[1..].iter().zip(&mine[1..]).any(|(a, b)| a & b != 0)
        })
        .map(|(r, _)| r as i32)
        .collect();
    Ok(RankPlacement {
        rank,
        size,
        host,
        cpus,
        shares_cpus_with,
    })
}

/// FNV-1a hash of a host name (to compare hosts in a fixed-size message).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A job for the [`ProgressOwner`]'s thread.
type OwnerJob = Box<dyn FnOnce() + Send>;

/// One OS thread that owns MPI: it initialises MPI, runs every MPI call the green threads hand
/// it ([`ProgressOwner::call`]), one at a time, and finalises MPI when the owner is dropped.
/// That is what `MPI_THREAD_FUNNELED` (only the thread that initialised MPI calls it) and
/// `MPI_THREAD_SERIALIZED` (one call at a time) allow, so this works with an MPI library that
/// does not grant `MPI_THREAD_MULTIPLE`; [`ProgressOwner::provided`] says what it granted (at
/// `Multiple` you may also use [`SharedComm`] directly).
///
/// A green thread in [`call`](ProgressOwner::call) parks on a channel until its job has run, so
/// its worker keeps running other green threads. Jobs run one after another, so a job must not
/// block on something only another rank's later job provides (a blocking receive whose send is
/// queued behind a receive on the peer deadlocks): [`post`](ProgressOwner::post) the operation
/// instead (the owner's progress engine tests the posted requests between jobs and wakes each
/// waiter when its request completes), or poll, as in the example (an immediate matched probe,
/// then a receive of the message that is already there). [`init`] picks this owner or direct
/// calls from the level the library grants, behind one API ([`Comm`]).
///
/// ```
/// use footprint::mpi::rsmpi::{topology::SimpleCommunicator, traits::*};
/// let owner = footprint::mpi::ProgressOwner::start()?;         // MPI_Init on the owner thread
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let got = rt.block_on(|| {
///     let hs: Vec<_> = (0..8).map(|t| footprint::spawn({
///         let owner = owner.clone();
///         move || {
///             owner.call(move || SimpleCommunicator::world().this_process().send_with_tag(&t, t));
///             loop {                                           // poll; never block the owner
///                 let got = owner.call(move || {
///                     let world = SimpleCommunicator::world();
///                     world.this_process().immediate_matched_probe_with_tag(t)
///                         .map(|(msg, _)| msg.matched_receive::<i32>().0)
///                 });
///                 match got {
///                     Some(v) => break v,
///                     None => footprint::yield_now(),
///                 }
///             }
///         }
///     })).collect();
///     hs.into_iter().map(|h| h.join().unwrap()).sum::<i32>()
/// });
/// assert_eq!(got, (0..8).sum::<i32>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ProgressOwner {
    inner: std::sync::Arc<OwnerInner>,
}

struct OwnerInner {
    jobs: Option<crate::channel::Sender<OwnerJob>>,
    thread: Option<std::thread::JoinHandle<()>>,
    provided: Threading,
}

impl ProgressOwner {
    /// Starts the owner thread and initialises MPI on it, asking for `MPI_THREAD_MULTIPLE` and
    /// accepting `MPI_THREAD_FUNNELED` or more. Fails with [`MpiError::AlreadyInitialized`] or,
    /// when the library grants only `MPI_THREAD_SINGLE`, [`MpiError::ThreadingTooLow`].
    pub fn start() -> Result<ProgressOwner, MpiError> {
        ProgressOwner::start_requesting(Threading::Multiple)
    }

    /// Like [`start`](ProgressOwner::start), asking the library for `requested` instead (e.g.
    /// `Threading::Funneled`, where `MPI_THREAD_MULTIPLE` costs locking in the library that
    /// funnelled calls do not need). `Threading::Single` is refused like a grant of it.
    pub fn start_requesting(requested: Threading) -> Result<ProgressOwner, MpiError> {
        let (jobs, job_rx) = crate::channel::unbounded::<OwnerJob>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<Threading, MpiError>>();
        let thread = std::thread::Builder::new()
            .name("footprint-mpi-owner".into())
            .spawn(move || {
                let Some((universe, provided)) = ::mpi::initialize_with_threading(requested) else {
                    let _ = ready_tx.send(Err(MpiError::AlreadyInitialized));
                    return;
                };
                if provided < Threading::Funneled {
                    let _ = ready_tx.send(Err(MpiError::ThreadingTooLow { provided }));
                    return; // `universe` drops here: MPI is finalised on this thread.
                }
                let _ = ready_tx.send(Ok(provided));
                serve(&job_rx);
                // Communicators kept for `Comm` handles go before MPI_Finalize.
                route::free_owned_comms();
                drop(universe);
            })
            .map_err(|e| MpiError::OwnerThread(e.to_string()))?;
        let provided = match ready_rx.recv() {
            Ok(Ok(provided)) => provided,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(MpiError::OwnerThread(
                    "the MPI owner thread ended while initialising MPI".into(),
                ));
            }
        };
        Ok(ProgressOwner {
            inner: std::sync::Arc::new(OwnerInner {
                jobs: Some(jobs),
                thread: Some(thread),
                provided,
            }),
        })
    }

    /// The threading level the MPI library granted.
    pub fn provided(&self) -> Threading {
        self.inner.provided
    }

    /// Whether the calling thread is the owner thread (inside a job).
    fn on_owner_thread(&self) -> bool {
        let owner_thread = self.inner.thread.as_ref().map(|t| t.thread().id());
        owner_thread == Some(std::thread::current().id())
    }

    /// Queues `job` for the owner thread without waiting for it (run at once when called from a
    /// job).
    fn submit(&self, job: OwnerJob) {
        if self.on_owner_thread() {
            return job();
        }
        let jobs = self.inner.jobs.as_ref().expect("present until drop");
        if jobs.send(job).is_err() {
            panic!("footprint::mpi::ProgressOwner: the owner thread is gone (it panicked?)");
        }
    }

    /// Posts a non-blocking operation through the owner: `start` runs on the owner thread (after
    /// the jobs handed over before it) and starts one request over `buffer` (registered with
    /// the [`PostScope`] it is given, and returned); the owner then tests it between jobs until
    /// it completes. [`Posted::wait`] parks the calling green thread until then and gives the
    /// buffer back with the status. Many green threads may wait at once, and a receive posted
    /// before its matching send (another rank's later job) holds nothing up.
    ///
    /// ```
    /// use footprint::mpi::rsmpi::{topology::SimpleCommunicator, traits::*};
    /// let owner = footprint::mpi::ProgressOwner::start()?;
    /// let rt = footprint::Runtime::builder().workers(2).build()?;
    /// let got = rt.block_on(|| {
    ///     // The receive is posted (and waited for) before the send exists.
    ///     let recv = owner.post(vec![0u64; 4], |buf, scope| {
    ///         SimpleCommunicator::world().this_process().immediate_receive_into_with_tag(scope, buf, 3)
    ///     });
    ///     let waiter = footprint::spawn(move || recv.wait().0);
    ///     let send = owner.post(vec![1u64, 2, 3, 4], |buf, scope| {
    ///         SimpleCommunicator::world().this_process().immediate_send_with_tag(scope, buf, 3)
    ///     });
    ///     send.wait();
    ///     waiter.join().unwrap()
    /// });
    /// assert_eq!(got, [1, 2, 3, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn post<B, D, F>(&self, buffer: B, start: F) -> Posted<B>
    where
        B: Send + 'static,
        D: ?Sized,
        F: for<'b> FnOnce(&'b mut B, &'b PostScope<'b>) -> Request<'b, D, &'b PostScope<'b>>
            + Send
            + 'static,
    {
        Posted::through_owner(self, buffer, move |b| progress::start(b, start))
    }

    /// Runs `f` on the owner thread (after the jobs handed over before it) and returns its
    /// result; the calling green thread parks meanwhile (an OS thread blocks). A panic in `f`
    /// is caught on the owner thread, which goes on serving, and resumed here. Called from a
    /// job (on the owner thread), it runs `f` at once.
    pub fn call<F, R>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        if self.on_owner_thread() {
            // Called from a job: queueing would wait for the job that is waiting.
            return f();
        }
        let (done_tx, done_rx) = crate::channel::bounded(1);
        let job: OwnerJob = Box::new(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = done_tx.send(result);
        });
        let jobs = self.inner.jobs.as_ref().expect("present until drop");
        if jobs.send(job).is_err() {
            panic!("footprint::mpi::ProgressOwner: the owner thread is gone (it panicked?)");
        }
        match done_rx.recv() {
            Ok(Ok(value)) => value,
            Ok(Err(payload)) => std::panic::resume_unwind(payload),
            Err(_) => panic!("footprint::mpi::ProgressOwner: the owner thread dropped a job"),
        }
    }
}

/// The owner thread's loop: runs the jobs in order and, between jobs, tests every posted
/// request in flight (see `progress.rs`); with requests in flight and no job waiting it keeps
/// testing, yielding the CPU between rounds (MPI progresses only while some thread is inside
/// it). Returns once every `ProgressOwner` clone is gone and no posted request is in flight.
fn serve(jobs: &crate::channel::Receiver<OwnerJob>) {
    let mut open = true;
    loop {
        let (in_flight, _) = progress::progress_owner();
        if !open && in_flight == 0 {
            return;
        }
        let job = if in_flight == 0 {
            // Nothing to progress: sleep until a job comes.
            match jobs.recv() {
                Ok(job) => Some(job),
                Err(_) => {
                    open = false;
                    None
                }
            }
        } else if open {
            match jobs.try_recv() {
                Ok(job) => Some(job),
                Err(crate::channel::TryRecvError::Empty) => None,
                Err(crate::channel::TryRecvError::Disconnected) => {
                    open = false;
                    None
                }
            }
        } else {
            None
        };
        match job {
            Some(job) => job(),
            None if in_flight > 0 => std::thread::yield_now(),
            None => {}
        }
    }
}

impl Drop for OwnerInner {
    fn drop(&mut self) {
        // Disconnect the job channel, then wait for the owner to finalise MPI.
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            // A job that held the last clone drops it on the owner thread itself, which then
            // finalises MPI as its loop ends; joining itself would fail.
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}
