//! Green-thread control blocks ("tasks"), their job/result slot, and join handles.
//!
//! A [`Task`] is the control block of one green thread (ELiTE's TCB). It is reference counted
//! (`Arc`), pooled per worker, and owns a coroutine (with its stack) only while the thread has
//! started and not finished: a spawned-but-not-started thread owns no stack.
//!
//! The closure of a green thread and later its result live in an inline slot of the control block
//! when they fit (64 bytes), else in one box; so a spawn from a pooled control block allocates
//! nothing for small closures.

use crate::accounting::ThreadAccount;
use crate::sync::atomic::AtomicU8;
use footprint_locks::{ClassCell, Placement, PriorityClass, Unpark};
use std::any::Any;
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::mem::{self, MaybeUninit};
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub(crate) mod blocks;
pub(crate) mod extras;
pub(crate) mod states;
pub(crate) mod switch;

pub(crate) use switch::{Co, Exit, GreenYielder, Reason};

pub(crate) use extras::{PlacementHints, TaskExtras};

pub(crate) use states::{HandleState, Latch, ParkState, ScopeCount};
/// Lifecycle of a task (`states.rs`: `claim` moves it from new to running).
pub(crate) use states::{LIFE_DONE, LIFE_NEW, LIFE_RUNNING};

const SLOT_WORDS: usize = 8;

/// Inline storage for a job and then its result.
#[repr(C, align(16))]
pub(crate) struct Slot(MaybeUninit<[usize; SLOT_WORDS]>);

/// What a slot holds.
enum Stored<F, T> {
    Job(F),
    Done(std::thread::Result<T>),
}

/// Type-erased operations on a slot; one static table per `(F, T)`.
pub(crate) struct JobVtable {
    /// Runs the job and stores its result; returns whether it panicked.
    pub(crate) run: unsafe fn(*mut Slot) -> bool,
    /// Drops a job that never ran.
    pub(crate) drop_job: unsafe fn(*mut Slot),
    /// Moves the result out into `out` (a `*mut MaybeUninit<thread::Result<T>>`).
    pub(crate) take_result: unsafe fn(*mut Slot, *mut ()),
    /// Drops the result, returning the panic payload if it was an `Err`.
    pub(crate) dispose: unsafe fn(*mut Slot) -> Option<Box<dyn Any + Send>>,
    /// Stores `Err(payload)` as the result; drops the job first when it never ran.
    pub(crate) write_err: unsafe fn(*mut Slot, Box<dyn Any + Send>, bool),
}

const fn fits<S>() -> bool {
    mem::size_of::<S>() <= mem::size_of::<Slot>() && mem::align_of::<S>() <= mem::align_of::<Slot>()
}

/// Where the `Stored<F, T>` of a slot is.
///
/// # Safety
/// The slot must hold a `Stored<F, T>` written by [`write_job`].
unsafe fn stored_ptr<F, T>(slot: *mut Slot) -> *mut Stored<F, T> {
    if fits::<Stored<F, T>>() {
        slot.cast()
    } else {
        // SAFETY: a boxed slot holds the box's raw pointer (see write_job).
        unsafe { *slot.cast::<*mut Stored<F, T>>() }
    }
}

/// Frees the box of a boxed slot (after its content was moved out or dropped).
///
/// # Safety
/// The slot must hold a boxed `Stored<F, T>` whose content is already gone.
unsafe fn free_box<F, T>(slot: *mut Slot) {
    if !fits::<Stored<F, T>>() {
        // SAFETY: the pointer came from Box::into_raw of a MaybeUninit-compatible layout; the
        // content was moved out, so we free the allocation without dropping it.
        unsafe {
            let p = *slot.cast::<*mut Stored<F, T>>();
            drop(Box::from_raw(p.cast::<MaybeUninit<Stored<F, T>>>()));
        }
    }
}

unsafe fn run_job<F: FnOnce() -> T, T>(slot: *mut Slot) -> bool {
    // SAFETY: the caller guarantees the slot holds Stored::Job(F) and that we own it now.
    unsafe {
        let p = stored_ptr::<F, T>(slot);
        // In place, then the closure alone (see `take_result`).
        let f = match &*p {
            Stored::Job(f) => ptr::read(f),
            Stored::Done(_) => unreachable!("job slot ran twice"),
        };
        let r = panic::catch_unwind(AssertUnwindSafe(f));
        let panicked = r.is_err();
        ptr::write(p, Stored::Done(r));
        panicked
    }
}

unsafe fn drop_job<F: FnOnce() -> T, T>(slot: *mut Slot) {
    // SAFETY: the slot holds an unrun job that nobody else will touch.
    unsafe {
        ptr::drop_in_place(stored_ptr::<F, T>(slot));
        free_box::<F, T>(slot);
    }
}

unsafe fn take_result<F: FnOnce() -> T, T>(slot: *mut Slot, out: *mut ()) {
    // SAFETY: the slot holds Stored::Done; `out` points to MaybeUninit<thread::Result<T>>.
    unsafe {
        let p = stored_ptr::<F, T>(slot);
        // The variant is checked in place and only the result is read: reading the whole enum
        // at once (one wide load over the tag and the value, stored separately by `run_job`)
        // stalls on store forwarding, which profiles of spawn + join showed.
        let r = match &*p {
            Stored::Done(r) => ptr::read(r),
            Stored::Job(_) => unreachable!("result taken before the job ran"),
        };
        ptr::write(out.cast::<std::thread::Result<T>>(), r);
        free_box::<F, T>(slot);
    }
}

unsafe fn dispose<F: FnOnce() -> T, T>(slot: *mut Slot) -> Option<Box<dyn Any + Send>> {
    // SAFETY: the slot holds Stored::Done and we are its only disposer.
    unsafe {
        let p = stored_ptr::<F, T>(slot);
        let r = match ptr::read(p) {
            Stored::Done(r) => r,
            Stored::Job(_) => unreachable!("result disposed before the job ran"),
        };
        free_box::<F, T>(slot);
        // Drop an Ok value here; a panic in its destructor must not escape into the scheduler.
        match r {
            Ok(v) => {
                let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(v)));
                None
            }
            Err(e) => Some(e),
        }
    }
}

unsafe fn write_err<F: FnOnce() -> T, T>(
    slot: *mut Slot,
    payload: Box<dyn Any + Send>,
    unrun: bool,
) {
    // SAFETY: the caller owns the slot; when `unrun` it holds the job, else the job was moved out
    // (by a run that was abandoned) and the slot's bytes are free.
    unsafe {
        let p = stored_ptr::<F, T>(slot);
        if unrun {
            ptr::drop_in_place(p);
        }
        ptr::write(p, Stored::Done(Err(payload)));
    }
}

struct VtableFor<F, T>(PhantomData<(F, T)>);

impl<F: FnOnce() -> T, T> VtableFor<F, T> {
    const VTABLE: JobVtable = JobVtable {
        run: run_job::<F, T>,
        drop_job: drop_job::<F, T>,
        take_result: take_result::<F, T>,
        dispose: dispose::<F, T>,
        write_err: write_err::<F, T>,
    };
}

/// A parked thread's way back: a green thread or an OS thread.
pub(crate) enum Waiter {
    Green(Arc<Task>),
    Os(std::thread::Thread),
}

impl Waiter {
    pub(crate) fn wake(self) {
        match self {
            Waiter::Green(t) => t.unpark(Placement::Anywhere),
            Waiter::Os(t) => t.unpark(),
        }
    }

    pub(crate) fn wake_by_ref(&self) {
        match self {
            Waiter::Green(t) => t.unpark(Placement::Anywhere),
            Waiter::Os(t) => t.unpark(),
        }
    }
}

/// Completion of a scope: its pending count, first panic and owner.
pub(crate) struct ScopeShared {
    pub(crate) pending: ScopeCount,
    pub(crate) owner: Waiter,
    pub(crate) panic: std::sync::Mutex<Option<Box<dyn Any + Send>>>,
}

impl ScopeShared {
    /// Keeps the first scoped thread's panic for `scope` to re-raise; a later one's payload is
    /// dropped (outside the lock, a panic of its destructor swallowed: it runs on a worker).
    pub(crate) fn record_panic(&self, payload: Box<dyn Any + Send>) {
        let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(payload);
            return;
        }
        drop(slot);
        drop_payload(payload);
    }

    pub(crate) fn task_done(self: Arc<ScopeShared>) {
        if self.pending.done() {
            self.owner.wake_by_ref();
        }
    }
}

/// The control block of one green thread.
///
/// Its mechanism (lifecycle, handle and park states, the job/result slot, the waiter, scope,
/// name, green-locals, the spare reference) is private to this module and changes only through
/// the methods below, each a step of one hand-off protocol (`states.rs`). The fields marked
/// *switch* are the worker loop's: it installs and takes the coroutine, stamps the worker and
/// the accounting at every resumption (`worker/switch.rs`). The research state is one [`TaskExtras`]
/// (`extras.rs`), written by the features that own it.
///
/// The field order is fixed (`repr(C)`) for the cache: the job slot fills the first line; the
/// hand-off bytes (life, handle, park, class) share the last line only with fields that are
/// rarely written (the registry slot, the nested count, the extras' tail with `bound`, which
/// the joiner reads beside the handle), not with the accounting the switch writes.
#[repr(C)]
pub(crate) struct Task {
    /// The job, then its result (see [`Slot`]).
    slot: UnsafeCell<Slot>,
    /// Who joins it.
    waiter: UnsafeCell<Option<Waiter>>,
    name: UnsafeCell<Option<Arc<str>>>,
    /// Switch: trap handler of the running coroutine (and, in `stack_limit`, the lowest address
    /// of its stack mapping: the guard page), read by the SIGSEGV handler on the same OS thread.
    trap: UnsafeCell<Option<corosensei::trap::CoroutineTrapHandler<Exit>>>,
    /// Switch: the worker it last ran on, stamped at every resumption.
    last_worker: AtomicUsize,
    /// The runtime it belongs to (its `registry::Shared`, read with `Task::runtime`; untyped here
    /// so that the control block sits below the runtime state that pools it). Valid while the
    /// task is not finished (a runtime outlives its unfinished green threads: `Runtime::drop`
    /// waits for them).
    shared: UnsafeCell<*const ()>,
    /// Switch: the coroutine, from the first resumption until the thread finishes.
    co: UnsafeCell<Option<Co>>,
    /// Switch: the running coroutine's yielder ([`Task::suspend`]).
    yielder: UnsafeCell<*const GreenYielder>,
    vtable: UnsafeCell<&'static JobVtable>,
    scope: UnsafeCell<Option<Arc<ScopeShared>>>,
    /// Switch: the stack size it asked for (the worker takes a stack of it).
    stack_size: UnsafeCell<usize>,
    locals: UnsafeCell<Option<Box<Locals>>>,
    /// Switch: see `trap`.
    stack_limit: UnsafeCell<usize>,
    /// Switch: run time, runs, migrations, steals, parked time, misses; written at the switches
    /// by the worker holding the run reference (`worker/switch.rs`), read by `JoinHandle::stats` and
    /// `current_stats`.
    acct: ThreadAccount,
    /// The research state (`extras.rs`).
    extras: TaskExtras,
    /// Its index in the control-block registry (`usize::MAX`: not listed).
    registry_slot: AtomicUsize,
    /// Frames of this green thread that others may still reach: `join` halves it offered and
    /// has not taken back, and spawned threads it is running inline. While non-zero a stack
    /// overflow cannot be recovered (abandoning the stack would leave dangling references), so
    /// the overflow handler reports and aborts instead.
    nested: std::cell::Cell<u32>,
    /// LIFE_* (`crate::sync`'s atomic: `states::claim` is model-checked). Switch: read by the
    /// worker loop; changed only here.
    life: AtomicU8,
    /// Who owns the result (`states.rs`).
    handle: HandleState,
    /// The park permit (`states.rs`). Switch: the worker publishes `PARKED` after the switch.
    park: ParkState,
    /// Published priority class (the scheduler hook's cell).
    class: ClassCell,
    /// Whether the job panicked (set on completion).
    panicked: UnsafeCell<bool>,
    /// The block's strong count includes one reference that no `Arc` holds: left by a joiner
    /// that took its own queue entry back (spawn, then join), it becomes the queue entry of the
    /// block's next spawn, which so costs no atomic increment and the join no decrement
    /// (`spare.rs`). Touched only by the block's exclusive owner: its spawner before publishing
    /// it, its joiner, its recycler.
    spare_ref: UnsafeCell<bool>,
}

// SAFETY: the non-atomic fields are accessed only by the holder of the task's "run reference"
// (the worker running it, or the creator before it is published) or, for the slot after
// completion, by the single disposer chosen through the `handle` bits. Every hand-over goes
// through an atomic with Release/Acquire ordering.
unsafe impl Send for Task {}
// SAFETY: as above.
unsafe impl Sync for Task {}

/// What a new green thread is set up with besides its closure ([`Task::init`]).
pub(crate) struct TaskSetup {
    /// Its runtime's `registry::Shared`, untyped (see `Task::shared`).
    pub(crate) runtime: *const (),
    /// Whether a `JoinHandle` (or a joiner) will take the result; `false` for a detached thread.
    pub(crate) with_handle: bool,
    /// The stack size it asks for.
    pub(crate) stack_size: usize,
    /// Its name (`GreenBuilder::name`).
    pub(crate) name: Option<Arc<str>>,
    /// The scope it belongs to (`join::scope`).
    pub(crate) scope: Option<Arc<ScopeShared>>,
    /// The worker it is created on (its `last_worker` until it first runs).
    pub(crate) worker: usize,
}

static EMPTY_VTABLE: JobVtable = VtableFor::<fn(), ()>::VTABLE;

impl Task {
    pub(crate) fn new() -> Task {
        Task {
            life: AtomicU8::new(LIFE_NEW),
            handle: HandleState::new(false),
            park: ParkState::new(),
            class: ClassCell::new(PriorityClass::Running),
            last_worker: AtomicUsize::new(0),
            shared: UnsafeCell::new(ptr::null()),
            waiter: UnsafeCell::new(None),
            co: UnsafeCell::new(None),
            yielder: UnsafeCell::new(ptr::null()),
            slot: UnsafeCell::new(Slot(MaybeUninit::uninit())),
            vtable: UnsafeCell::new(&EMPTY_VTABLE),
            scope: UnsafeCell::new(None),
            name: UnsafeCell::new(None),
            stack_size: UnsafeCell::new(0),
            locals: UnsafeCell::new(None),
            panicked: UnsafeCell::new(false),
            trap: UnsafeCell::new(None),
            stack_limit: UnsafeCell::new(0),
            nested: std::cell::Cell::new(0),
            spare_ref: UnsafeCell::new(false),
            registry_slot: AtomicUsize::new(usize::MAX),
            extras: TaskExtras::new(),
            acct: ThreadAccount::default(),
        }
    }

    /// The research state (see [`TaskExtras`]).
    #[inline]
    pub(crate) fn extras(&self) -> &TaskExtras {
        &self.extras
    }

    /// Its accounting record: written at the switches through `ThreadAccount`'s methods by
    /// the worker holding the run reference, read by the stats.
    #[inline(always)]
    pub(crate) fn account(&self) -> &ThreadAccount {
        &self.acct
    }

    /// Its park permit (`states.rs`), stepped through `ParkState`'s methods.
    #[inline(always)]
    pub(crate) fn park_state(&self) -> &ParkState {
        &self.park
    }

    /// Its published priority class (the scheduler hook's cell).
    #[inline(always)]
    pub(crate) fn class_cell(&self) -> &ClassCell {
        &self.class
    }

    /// Whether it is running (started, not finished): a relaxed read, for assertions.
    #[inline]
    pub(crate) fn is_running(&self) -> bool {
        self.life.load(Ordering::Relaxed) == LIFE_RUNNING
    }

    /// Prepares a pooled control block for a new green thread running `f`.
    ///
    /// # Safety
    /// The caller must be the only holder of the block (a fresh `Arc`, or one taken from a pool,
    /// which holds only blocks whose strong count was 1 and that never had a `Weak`). Its waiter,
    /// scope, name and hints are `None` (a fresh block, or one `pool::recycle` cleared), so they
    /// are written without dropping the old values.
    pub(crate) unsafe fn init<F, T>(&self, f: F, setup: TaskSetup)
    where
        F: FnOnce() -> T,
    {
        let TaskSetup {
            runtime: shared,
            with_handle,
            stack_size,
            name,
            scope,
            worker,
        } = setup;
        self.life.store(LIFE_NEW, Ordering::Relaxed);
        self.handle.reset(with_handle);
        self.park.reset();
        self.class.set(PriorityClass::Running);
        self.last_worker.store(worker, Ordering::Relaxed);
        self.nested.set(0);
        self.acct.reset();
        // SAFETY: exclusive access per the contract; the block is published to other threads
        // only afterwards, through a queue push (Release) or a thread spawn.
        unsafe {
            *self.shared.get() = shared;
            debug_assert!((*self.waiter.get()).is_none());
            debug_assert!((*self.co.get()).is_none());
            *self.yielder.get() = ptr::null();
            *self.vtable.get() = &VtableFor::<F, T>::VTABLE;
            debug_assert!((*self.scope.get()).is_none() && (*self.name.get()).is_none());
            ptr::write(self.scope.get(), scope);
            ptr::write(self.name.get(), name);
            *self.stack_size.get() = stack_size;
            *self.panicked.get() = false;
            self.extras.reset();
            let slot = self.slot.get();
            if fits::<Stored<F, T>>() {
                ptr::write(slot.cast::<Stored<F, T>>(), Stored::Job(f));
            } else {
                let b = Box::into_raw(Box::new(Stored::<F, T>::Job(f)));
                ptr::write(slot.cast::<*mut Stored<F, T>>(), b);
            }
        }
    }

    /// Runs the job in place (on whatever stack calls this). The caller holds the run reference.
    ///
    /// # Safety
    /// The task must be LIFE_RUNNING, with an unrun job, and run by exactly one thread.
    pub(crate) unsafe fn run_job_in_place(&self) {
        // SAFETY: per the contract we own the slot and the vtable matches it.
        unsafe {
            let vt = *self.vtable.get();
            let panicked = (vt.run)(self.slot.get());
            *self.panicked.get() = panicked;
        }
    }

    /// Publishes completion: wakes the joiner, disposes a detached result, counts the scope down.
    ///
    /// # Safety
    /// Called once, by the run-reference holder, after the job ran.
    pub(crate) unsafe fn complete(&self) {
        // SAFETY: we hold the run reference (contract), so the plain fields are ours until the
        // `handle` RMW publishes the result.
        unsafe {
            let scope = (*self.scope.get()).take();
            self.life.store(LIFE_DONE, Ordering::Release);
            let finished = self.handle.finish();
            if finished.dispose {
                // Detached: nobody will take the result, so drop it (or hand a panic to the scope).
                let vt = *self.vtable.get();
                if let Some(payload) = (vt.dispose)(self.slot.get()) {
                    if let Some(s) = &scope {
                        s.record_panic(payload);
                    } else {
                        drop_payload(payload);
                    }
                }
            }
            if finished.wake {
                if let Some(w) = (*self.waiter.get()).take() {
                    w.wake();
                }
            }
            if let Some(s) = scope {
                s.task_done();
            }
        }
    }

    /// Completes a thread its joiner ran inline ([`Task::run_inline`]): as [`Task::complete`],
    /// but the joiner holds the handle and nobody waits, so no `handle` bits are published (no
    /// read-modify-write on the spawn-then-join path).
    ///
    /// # Safety
    /// As for [`Task::complete`], and the caller holds the handle.
    #[inline]
    unsafe fn complete_joined(&self) {
        // SAFETY: we hold the run reference and the handle (contract).
        unsafe {
            let scope = (*self.scope.get()).take();
            self.life.store(LIFE_DONE, Ordering::Release);
            if let Some(s) = scope {
                s.task_done();
            }
        }
    }

    /// Whether the result is ready (Acquire: the result may be taken after it).
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.handle.is_done()
    }

    /// Whether the thread was claimed (by a worker, its joiner or a blocking thread).
    #[inline]
    pub(crate) fn has_started(&self) -> bool {
        self.life.load(Ordering::Acquire) != LIFE_NEW
    }

    /// Whether the thread's job has returned (its completion is published or under way).
    #[inline]
    pub(crate) fn has_finished(&self) -> bool {
        self.life.load(Ordering::Acquire) == LIFE_DONE
    }

    /// Marks a never-started thread running that the caller already owns exclusively: a joiner
    /// that popped its only queue entry (spawn, then join), or the creator of a thread for the
    /// blocking pool, which no joiner may claim. No claim race, so no CAS.
    ///
    /// # Safety
    /// The thread is `LIFE_NEW` and no one else can reach its run reference.
    #[inline]
    pub(crate) unsafe fn claim_owned(&self) {
        self.life.store(LIFE_RUNNING, Ordering::Relaxed);
    }

    /// Runs a claimed, never-started thread on its joiner's stack and completes it. The joiner's
    /// green-locals are set aside meanwhile, so the inline thread starts with its own (empty)
    /// set, as it would on a stack of its own, and its frames count as nested in the joiner.
    ///
    /// # Safety
    /// The caller holds this thread's run reference (claimed) and its handle; `joiner` is the
    /// green thread calling (its control block is the same before and after the run, even if
    /// the inline thread yields or parks and the worker under it changes).
    ///
    /// Always in line: it is the body of spawn-then-join's fast path (`handle.rs`), which an
    /// out-of-line call here measurably slows.
    #[inline(always)]
    pub(crate) unsafe fn run_inline(&self, joiner: &Task) {
        // SAFETY: per the contract the joiner's locals and nested count are the calling
        // thread's, and this thread's run reference is ours.
        unsafe {
            let saved = (*joiner.locals.get()).take();
            joiner.enter_nested();
            self.run_job_in_place();
            joiner.leave_nested();
            joiner.clear_locals();
            *joiner.locals.get() = saved;
            self.complete_joined();
        }
    }

    /// Registers `waiter` as the joiner to wake at completion. `false` when the thread completed
    /// meanwhile: nothing stays registered, and the result is ready.
    ///
    /// # Safety
    /// The caller owns the handle (the waiter cell is its until it publishes `H_WAITER`).
    pub(crate) unsafe fn register_waiter(&self, waiter: Waiter) -> bool {
        // SAFETY: per the contract.
        unsafe { *self.waiter.get() = Some(waiter) };
        if self.handle.register_waiter() {
            return true;
        }
        // Completed meanwhile: the completer saw no waiter, so the cell is still ours.
        // SAFETY: as above.
        drop(unsafe { (*self.waiter.get()).take() });
        false
    }

    /// Moves the result out and gives the handle up.
    ///
    /// # Safety
    /// The caller owns the handle and saw [`Task::is_done`] (which publishes the result); `T` is
    /// the job's result type.
    #[inline]
    pub(crate) unsafe fn take_result<T>(&self) -> std::thread::Result<T> {
        let mut out = MaybeUninit::<std::thread::Result<T>>::uninit();
        // SAFETY: per the contract we are the only one taking the result, and the vtable's `T`
        // is ours.
        unsafe {
            let vt = *self.vtable.get();
            (vt.take_result)(self.slot.get(), out.as_mut_ptr().cast());
        }
        self.handle.release();
        // SAFETY: take_result initialised it.
        unsafe { out.assume_init() }
    }

    /// Gives the handle up: whoever finishes last drops the result. When the thread had already
    /// finished, the result is dropped here (a panic payload goes to `scope` when given) and
    /// `true` says that the caller now recycles the block.
    ///
    /// # Safety
    /// The caller owns the handle.
    pub(crate) unsafe fn detach(&self, scope: Option<&ScopeShared>) -> bool {
        if !self.handle.detach() {
            return false;
        }
        // SAFETY: completion saw our handle and left the result to us.
        unsafe {
            let vt = *self.vtable.get();
            if let Some(p) = (vt.dispose)(self.slot.get()) {
                match scope {
                    Some(s) => s.record_panic(p),
                    None => drop_payload(p),
                }
            }
        }
        true
    }

    /// One more frame of this (running) thread that others may reach (see `nested`).
    #[inline]
    pub(crate) fn enter_nested(&self) {
        self.nested.set(self.nested.get() + 1);
    }

    /// The frame [`Task::enter_nested`] counted is gone.
    #[inline]
    pub(crate) fn leave_nested(&self) {
        self.nested.set(self.nested.get() - 1);
    }

    /// Whether others may still reach frames of this thread (so that its stack cannot be
    /// abandoned).
    #[inline]
    pub(crate) fn has_nested(&self) -> bool {
        self.nested.get() != 0
    }

    /// The green-local value for `key`, created with `init` when missing; valid until the
    /// thread's locals are cleared.
    ///
    /// # Safety
    /// Called by the running thread itself (its locals are touched only by it).
    pub(crate) unsafe fn local<T: 'static>(&self, key: usize, init: fn() -> T) -> *const T {
        // SAFETY: per the contract; the borrow of the map ends here.
        unsafe {
            (*self.locals.get())
                .get_or_insert_with(Default::default)
                .get_or_init(key, init)
        }
    }

    /// Drops the thread's green-locals (a panic of a destructor is swallowed).
    ///
    /// # Safety
    /// Called by the thread itself at its end, or by its joiner after an inline run.
    pub(crate) unsafe fn clear_locals(&self) {
        // SAFETY: per the contract.
        let locals = unsafe { (*self.locals.get()).take() };
        if let Some(l) = locals {
            if let Err(p) = panic::catch_unwind(AssertUnwindSafe(move || drop(l))) {
                drop_payload(p);
            }
        }
    }

    /// The runtime it belongs to, untyped (`Task::runtime` in `registry.rs` types it).
    ///
    /// # Safety
    /// As for `Task::runtime`.
    #[inline]
    pub(crate) unsafe fn runtime_untyped(&self) -> *const () {
        // SAFETY: per the contract, no write to `shared` runs concurrently.
        unsafe { *self.shared.get() }
    }

    /// Whether the green thread has a name.
    ///
    /// # Safety
    /// As for [`Task::name`].
    #[inline]
    pub(crate) unsafe fn has_name(&self) -> bool {
        // SAFETY: per the contract.
        unsafe { (*self.name.get()).is_some() }
    }

    /// The name, borrowed (no reference count: the overflow handler reads it in a signal
    /// handler).
    ///
    /// # Safety
    /// As for [`Task::name`]; the borrow ends before the block is recycled.
    pub(crate) unsafe fn name_str(&self) -> Option<&str> {
        // SAFETY: per the contract.
        unsafe { (*self.name.get()).as_deref() }
    }

    /// Whether a finished block still holds something a pooled one must not (a waiter, name,
    /// scope, locals or hints: `Task::init` writes them without dropping the old values).
    ///
    /// # Safety
    /// The caller holds the block's only reference.
    #[inline]
    pub(crate) unsafe fn holds_leftovers(&self) -> bool {
        // SAFETY: per the contract.
        unsafe {
            (*self.waiter.get()).is_some()
                || (*self.name.get()).is_some()
                || (*self.scope.get()).is_some()
                || (*self.locals.get()).is_some()
                || self.extras.has_hints()
        }
    }

    /// Drops what [`Task::holds_leftovers`] found.
    ///
    /// # Safety
    /// The caller holds the block's only reference.
    #[cold]
    pub(crate) unsafe fn clear_leftovers(&self) {
        // SAFETY: per the contract nobody else reaches the block.
        unsafe {
            *self.waiter.get() = None;
            *self.name.get() = None;
            *self.scope.get() = None;
            *self.locals.get() = None;
            *self.extras.hints.get() = None;
        }
    }

    /// The block's spare-reference flag (`spare.rs`).
    ///
    /// # Safety
    /// The caller is the block's exclusive owner (see the field).
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn spare_flag(&self) -> &mut bool {
        // SAFETY: per the contract.
        unsafe { &mut *self.spare_ref.get() }
    }

    /// Drops a job that never ran (runtime teardown) and completes the task with a "cancelled"
    /// panic payload so that a joiner does not wait forever.
    ///
    /// # Safety
    /// The task must be LIFE_NEW and exclusively owned by the caller (claimed through `life`).
    #[allow(dead_code)]
    pub(crate) unsafe fn cancel(&self) {
        // SAFETY: exclusive by contract.
        unsafe {
            let vt = *self.vtable.get();
            (vt.drop_job)(self.slot.get());
        }
    }

    /// Claims a never-started task for running (on a worker or inline by its joiner).
    #[inline]
    pub(crate) fn claim(&self) -> bool {
        states::claim(&self.life)
    }

    /// The green thread's name, if it has one.
    pub(crate) fn name(&self) -> Option<Arc<str>> {
        // SAFETY: the name is written before the task is published and read only while the task
        // runs (by the thread itself or the worker running it).
        unsafe { (*self.name.get()).clone() }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        blocks::forget_block(self);
        // A task dropped while NEW still holds its job (e.g. the runtime dropped queued work).
        // (A Relaxed load: the last owner's view is current, and loom's atomics have no get_mut.)
        if self.life.load(Ordering::Relaxed) == LIFE_NEW && !(*self.shared.get_mut()).is_null() {
            // SAFETY: we are the last owner; the job never ran.
            unsafe { self.cancel() };
        }
    }
}

/// Completes a never-run job with an error (e.g. no stack could be mapped for it).
///
/// # Safety
/// The caller holds the run reference of a claimed task whose job has not run.
pub(crate) unsafe fn fail_unrun(t: &Task, payload: Box<dyn Any + Send>) {
    // SAFETY: per the contract.
    unsafe {
        let vt = *t.vtable.get();
        (vt.write_err)(t.slot.get(), payload, true);
        *t.panicked.get() = true;
    }
}

/// Completes a job whose run was abandoned (stack overflow) with an error.
///
/// # Safety
/// The caller holds the run reference; the job was moved out of the slot and never stored a
/// result.
pub(crate) unsafe fn fail_running(t: &Task, payload: Box<dyn Any + Send>) {
    // SAFETY: per the contract.
    unsafe {
        let vt = *t.vtable.get();
        (vt.write_err)(t.slot.get(), payload, false);
        *t.panicked.get() = true;
    }
}

/// Drops a panic payload without letting a panicking destructor escape.
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(inner) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        mem::forget(inner);
    }
}

/// The green-thread-local values of one green thread.
#[derive(Default)]
pub(crate) struct Locals {
    entries: Vec<(usize, Box<dyn Any>)>,
}

impl Locals {
    /// The value for `key`, created with `init` when missing. The returned pointer stays valid
    /// until the `Locals` is dropped (values are boxed and never removed).
    pub(crate) fn get_or_init<T: 'static>(&mut self, key: usize, init: fn() -> T) -> *const T {
        if let Some((_, v)) = self.entries.iter().find(|(k, _)| *k == key) {
            return v
                .downcast_ref::<T>()
                .expect("green-local key reused with another type");
        }
        let b: Box<dyn Any> = Box::new(init());
        let p = b.downcast_ref::<T>().expect("fresh value has its type") as *const T;
        self.entries.push((key, b));
        p
    }
}
