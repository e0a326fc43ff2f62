//! One entry point, [`init`], whose threading level chooses how green threads reach MPI: at
//! `MPI_THREAD_MULTIPLE` they call it themselves (through [`SharedComm`]); below it every call
//! goes through the [`ProgressOwner`]'s thread. A program written against [`Mpi`] and [`Comm`]
//! runs unchanged under both.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ::mpi::request::Request;
use ::mpi::topology::{Color, Communicator, SimpleCommunicator};
use ::mpi::Threading;

use super::progress::{self, PostScope, Posted};
use super::{MpiError, ProgressOwner, SharedComm};

/// How calls reach MPI, chosen by [`init`] from the level the library granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `MPI_THREAD_MULTIPLE`: the calling green thread calls MPI itself, on whichever worker
    /// it runs; a posted request is tested by its waiter.
    Direct,
    /// `MPI_THREAD_FUNNELED` or `SERIALIZED`: every call runs on the owner thread, one at a time
    /// (a green thread parks meanwhile); posted requests are progressed by the owner.
    Owner,
}

/// MPI for green threads, from [`init`]: the granted level, the [`Route`] it chose, and the
/// world [`Comm`]. Cheap to clone; MPI is finalised (on the thread that initialised it) once
/// every clone and every [`Comm`] is gone.
#[derive(Clone)]
pub struct Mpi {
    owner: ProgressOwner,
    route: Route,
}

/// Initialises MPI asking for `MPI_THREAD_MULTIPLE` and picks the [`Route`] from what the
/// library grants: [`Route::Direct`] at `Multiple`, [`Route::Owner`] at `Funneled` or
/// `Serialized` (refused, with [`MpiError::ThreadingTooLow`], at `Single`).
///
/// MPI is initialised on the owner thread in both cases (under `FUNNELED` only the thread that
/// initialised MPI may call it, and which level comes back is known only afterwards); at
/// `Multiple` that thread then only waits to finalise MPI.
///
/// # The cost of each route
/// - `Direct`: no hand-over; calls from many workers at once. The library serialises them
///   internally (`MPI_THREAD_MULTIPLE` costs a lock or atomics per call in Open MPI and MPICH),
///   and each waiter polls its own request (`MPI_Test`, yielding its worker in between).
/// - `Owner`: each call is a job (a channel hand-over to the owner thread and a wake-up back,
///   microseconds), calls never overlap, and one extra OS thread polls the posted requests
///   while any is in flight (it yields the CPU between rounds but stays runnable): keep it a
///   core, or accept that it competes with the workers.
///
/// ```
/// use footprint::mpi::rsmpi::traits::*;
/// let mpi = footprint::mpi::init()?;
/// let world = mpi.world();
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let me = world.rank();
/// let (back, _) = rt.block_on(|| {
///     let recv = world.post(vec![0i32; 3], move |buf, c, scope| {
///         c.process_at_rank(me).immediate_receive_into_with_tag(scope, buf, 5)
///     });
///     world.post(vec![me; 3], move |buf, c, scope| {
///         c.process_at_rank(me).immediate_send_with_tag(scope, buf, 5)
///     }).wait();
///     recv.wait()
/// });
/// assert_eq!(back, [me; 3]);
/// println!("route {:?} at {:?}", mpi.route(), mpi.provided());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn init() -> Result<Mpi, MpiError> {
    init_requesting(Threading::Multiple)
}

/// Like [`init`], asking the library for `requested` instead: `Threading::Funneled` takes the
/// [`Route::Owner`] even where `MPI_THREAD_MULTIPLE` is available (to spare the library's
/// internal locking, or to test the owner route).
pub fn init_requesting(requested: Threading) -> Result<Mpi, MpiError> {
    let owner = ProgressOwner::start_requesting(requested)?;
    let route = if owner.provided() >= Threading::Multiple {
        Route::Direct
    } else {
        Route::Owner
    };
    Ok(Mpi { owner, route })
}

impl Mpi {
    /// The threading level the library granted.
    pub fn provided(&self) -> Threading {
        self.owner.provided()
    }

    /// How calls reach MPI.
    pub fn route(&self) -> Route {
        self.route
    }

    /// The owner thread (at [`Route::Direct`] it only holds MPI open).
    pub fn owner(&self) -> &ProgressOwner {
        &self.owner
    }

    /// The world communicator as a [`Comm`].
    pub fn world(&self) -> Comm {
        match self.route {
            // At `Multiple` any thread may make the handle (the owner initialised MPI).
            Route::Direct => Comm::direct(
                SharedComm::new(SimpleCommunicator::world())
                    .expect("Route::Direct is chosen only at MPI_THREAD_MULTIPLE"),
                &self.owner,
            ),
            Route::Owner => Comm::owned(&self.owner, WORLD, |_| Some(SimpleCommunicator::world()))
                .expect("the world exists"),
        }
    }
}

/// Any communicator (the world, a split, a duplicate) as a handle green threads may move and
/// share, whichever [`Route`] [`init`] chose: at `Direct` a [`SharedComm`], at `Owner` an entry
/// in the owner thread's table of communicators (rsmpi's communicators may not leave the thread
/// that may call MPI there). Every call goes through [`call`](Comm::call) or
/// [`post`](Comm::post), which hand the communicator to a closure where it may be used.
///
/// ```
/// use footprint::mpi::rsmpi::{topology::Color, traits::*};
/// let mpi = footprint::mpi::init()?;
/// let world = mpi.world();
/// let half = world.split_by_color(Color::with_value(world.rank() % 2)).expect("a color");
/// let rt = footprint::Runtime::builder().workers(2).build()?;
/// let sizes = rt.block_on(|| {
///     let hs: Vec<_> = (0..4).map(|_| {
///         let half = half.clone();                  // Send + Sync, whatever the route
///         footprint::spawn(move || half.call(|c| c.size()))
///     }).collect();
///     hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
/// });
/// assert!(sizes.iter().all(|&s| s == half.size()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Comm {
    inner: Arc<CommInner>,
    rank: i32,
    size: i32,
}

enum CommInner {
    /// Field order: the communicator is freed before the owner (MPI) may go.
    Direct(SharedComm<SimpleCommunicator>, ProgressOwner),
    Owned {
        id: u64,
        owner: ProgressOwner,
    },
}

impl Drop for CommInner {
    fn drop(&mut self) {
        if let CommInner::Owned { id, owner } = self {
            let id = *id;
            // Freed on the owner thread, as every call on it (MPI_Comm_free is a call).
            owner.call(move || {
                COMMS.with(|c| c.borrow_mut().remove(&id));
            });
        }
    }
}

/// The table key of the world communicator (other ids count up from 1).
const WORLD: u64 = 0;

thread_local! {
    /// The owner thread's communicators, by id (empty on other threads).
    static COMMS: RefCell<HashMap<u64, SimpleCommunicator>> = RefCell::new(HashMap::new());
}

/// Frees the owner thread's communicators (before MPI_Finalize).
pub(crate) fn free_owned_comms() {
    COMMS.with(|c| c.borrow_mut().clear());
}

/// Runs `f` with communicator `id` of the owner thread's table (on the owner thread).
fn with_owned<R>(id: u64, f: impl FnOnce(&SimpleCommunicator) -> R) -> R {
    COMMS.with(|c| {
        let table = c.borrow();
        let comm = table
            .get(&id)
            .expect("a Comm handle's communicator stays in the table until the handle goes");
        f(comm)
    })
}

impl Comm {
    fn direct(shared: SharedComm<SimpleCommunicator>, owner: &ProgressOwner) -> Comm {
        let (rank, size) = (shared.rank(), shared.size());
        Comm {
            inner: Arc::new(CommInner::Direct(shared, owner.clone())),
            rank,
            size,
        }
    }

    /// Registers the communicator `make` builds on the owner thread (given the table, to
    /// derive it from another) under `id`; `None` when `make` makes none.
    fn owned(
        owner: &ProgressOwner,
        id: u64,
        make: impl FnOnce(&HashMap<u64, SimpleCommunicator>) -> Option<SimpleCommunicator>
            + Send
            + 'static,
    ) -> Option<Comm> {
        let (rank, size) = owner.call(move || {
            let comm = COMMS.with(|c| make(&c.borrow()))?;
            let rs = (comm.rank(), comm.size());
            COMMS.with(|c| c.borrow_mut().insert(id, comm));
            Some(rs)
        })?;
        Some(Comm {
            inner: Arc::new(CommInner::Owned {
                id,
                owner: owner.clone(),
            }),
            rank,
            size,
        })
    }

    /// This process's rank in the communicator.
    pub fn rank(&self) -> i32 {
        self.rank
    }

    /// The number of processes in the communicator.
    pub fn size(&self) -> i32 {
        self.size
    }

    /// Runs `f` with the communicator where MPI may be called: here (`Direct`) or on the owner
    /// thread, the calling green thread parked meanwhile (`Owner`). Blocking calls are fine for
    /// collectives every rank enters; for point-to-point, [`post`](Comm::post) a non-blocking
    /// operation instead (under `Owner` a blocking receive holds up every other call).
    pub fn call<R, F>(&self, f: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(&SimpleCommunicator) -> R + Send + 'static,
    {
        match &*self.inner {
            CommInner::Direct(shared, _) => f(shared),
            CommInner::Owned { id, owner } => {
                let id = *id;
                owner.call(move || with_owned(id, f))
            }
        }
    }

    /// Posts a non-blocking operation over `buffer`: `start` gets the buffer, the communicator
    /// and a [`PostScope`], and returns the one request it started (`immediate_send*`,
    /// `immediate_receive_into*`, ...). [`Posted::wait`] gives the buffer back with the status.
    /// Under `Owner` the owner thread starts and progresses it (see
    /// [`ProgressOwner::post`]); under `Direct` it starts here and its waiter tests it.
    pub fn post<B, D, F>(&self, buffer: B, start: F) -> Posted<B>
    where
        B: Send + 'static,
        D: ?Sized,
        F: for<'b> FnOnce(
                &'b mut B,
                &SimpleCommunicator,
                &'b PostScope<'b>,
            ) -> Request<'b, D, &'b PostScope<'b>>
            + Send
            + 'static,
    {
        match &*self.inner {
            CommInner::Direct(shared, _) => {
                let comm: &SimpleCommunicator = shared;
                Posted::direct(progress::start(Box::new(buffer), |b, s| start(b, comm, s)))
            }
            CommInner::Owned { id, owner } => {
                let id = *id;
                Posted::through_owner(owner, buffer, move |b| {
                    with_owned(id, |comm| progress::start(b, |b, s| start(b, comm, s)))
                })
            }
        }
    }

    /// Splits the communicator by `color` (a collective: every process of it calls this);
    /// `None` for a process whose color is undefined.
    pub fn split_by_color(&self, color: Color) -> Option<Comm> {
        self.derive(move |c| c.split_by_color(color))
    }

    /// Duplicates the communicator (a collective), e.g. to give concurrent collectives each
    /// their own.
    pub fn duplicate(&self) -> Comm {
        self.derive(|c| Some(c.duplicate()))
            .expect("a duplicate always exists")
    }

    /// A new communicator made from this one by `make` (a collective).
    fn derive(
        &self,
        make: impl FnOnce(&SimpleCommunicator) -> Option<SimpleCommunicator> + Send + 'static,
    ) -> Option<Comm> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(WORLD + 1);
        match &*self.inner {
            CommInner::Direct(shared, owner) => {
                let made = make(shared)?;
                let shared = SharedComm::new(made).expect("Direct implies MPI_THREAD_MULTIPLE");
                Some(Comm::direct(shared, owner))
            }
            CommInner::Owned { id, owner } => {
                let from = *id;
                let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                Comm::owned(owner, id, move |table| {
                    make(
                        table
                            .get(&from)
                            .expect("a live handle's communicator is in the table"),
                    )
                })
            }
        }
    }
}
