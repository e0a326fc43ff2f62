//! Spawning one green thread on the current runtime (the global one outside any): [`spawn`] and
//! [`GreenBuilder`] (a name, a stack size, placement hints).

use crate::context;
use crate::error::Error;
use crate::global::global_shared;
use crate::handle::JoinHandle;
use crate::spawn::{spawn_raw, SpawnOptions};
use crate::stack::check_stack_size;
use std::marker::PhantomData;
use std::sync::Arc;

/// Spawns a green thread on the current runtime (the global one outside any runtime) and
/// returns its handle. Dropping the handle detaches the thread.
///
/// # Panics
/// In the caller, with the [`Error`]'s message, when the runtime cannot give the thread a stack
/// (the `Builder::max_stacks` cap is reached, or the last stack could not be mapped); use
/// [`GreenBuilder::spawn`] for the typed error.
///
/// ```
/// let rt = footprint::Runtime::builder().workers(2).build().unwrap();
/// let h = rt.block_on(|| footprint::spawn(|| "hi"));
/// assert_eq!(h.join().unwrap(), "hi");
/// ```
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // No builder: no name, size or hints to carry (and none to drop) on the hot path.
    spawn_current(f, SpawnOptions::default).unwrap_or_else(|e| panic!("footprint::spawn: {e}"))
}

/// Spawns on the current runtime (the global one outside any runtime): [`spawn`] and
/// [`GreenBuilder::spawn`]. The options are made only once the spawn is admitted: made before,
/// they were a struct kept in memory across the admission's error path, which cost a plain
/// spawn + join ten instructions.
#[inline(always)]
fn spawn_current<F, T>(f: F, opts: impl FnOnce() -> SpawnOptions) -> Result<JoinHandle<T>, Error>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // One thread-local read for both the runtime and the spawn.
    let c = context::ctx_ptr();
    let s = if c.is_null() {
        global_shared()
    } else {
        // SAFETY: a non-null context lives as long as its OS thread's worker loop.
        unsafe { (*c).shared() }
    };
    // SAFETY: the runtime is the caller's (alive while it runs) or the global one.
    unsafe { (*s).stack_limits().admit()? };
    // SAFETY: as above; 'static closure and result; `c` was read just now on this OS thread.
    let t = unsafe { spawn_raw(c, &*s, f, opts()) };
    Ok(JoinHandle {
        task: Some(t),
        _marker: PhantomData,
    })
}

/// Options for one green thread: a name (shown in panic and overflow reports) and a stack size.
///
/// ```
/// let rt = footprint::Runtime::builder().workers(1).build().unwrap();
/// let h = rt.block_on(|| {
///     footprint::GreenBuilder::new()
///         .name("leaf")
///         .stack_size(256 << 10)
///         .spawn(|| 7)
///         .unwrap()
/// });
/// assert_eq!(h.name().as_deref(), Some("leaf"));
/// assert_eq!(h.join().unwrap(), 7);
/// ```
#[derive(Clone, Debug, Default)]
pub struct GreenBuilder {
    name: Option<Arc<str>>,
    stack_size: Option<usize>,
    // placement
    hints: crate::task::PlacementHints,
    /// Bytes of memory traffic per run (`traffic`).
    traffic: Option<u64>,
    /// A bandwidth reservation admitted at spawn (`reserve_bandwidth`).
    reserve: Option<f64>,
}

impl GreenBuilder {
    /// Default options (no name, the runtime's stack size).
    pub fn new() -> GreenBuilder {
        GreenBuilder::default()
    }

    /// Names the green thread.
    pub fn name(mut self, name: impl Into<String>) -> GreenBuilder {
        self.name = Some(Arc::from(name.into()));
        self
    }

    /// Its usable stack size (a stack of a size other than the runtime's is not pooled).
    pub fn stack_size(mut self, bytes: usize) -> GreenBuilder {
        self.stack_size = Some(bytes);
        self
    }

    /// Declares that the thread works on data fragment `id` of about `bytes` bytes (001): the
    /// threads of one fragment are batched on one worker (a new fragment opens its batch on the
    /// least-loaded worker) and run back to back there, so the fragment is read into that
    /// worker's cache once. The thread stays bound to the batch's worker (wake-ups that name no
    /// worker send it back there; idle workers do not steal it). Change it while running with
    /// [`set_fragment`](crate::set_fragment). A size of 0 makes [`GreenBuilder::spawn`] fail
    /// with [`Error::EmptyFragment`].
    ///
    /// ```
    /// use footprint::{GreenBuilder, Runtime};
    /// let rt = Runtime::builder().workers(2).build().unwrap();
    /// let workers: Vec<Option<usize>> = rt.block_on(|| {
    ///     let hs: Vec<_> = (0..4)
    ///         .map(|_| {
    ///             GreenBuilder::new()
    ///                 .fragment(7, 512 << 10)
    ///                 .spawn(footprint::runtime::park::current_worker)
    ///                 .unwrap()
    ///         })
    ///         .collect();
    ///     hs.into_iter().map(|h| h.join().unwrap()).collect()
    /// });
    /// assert!(workers.iter().all(|w| *w == workers[0]), "one fragment, one worker");
    /// ```
    pub fn fragment(mut self, id: u64, bytes: usize) -> GreenBuilder {
        self.hints.fragment = Some((id, bytes));
        self
    }

    /// Declares the thread a partner of `other` (004 §5.3, attract): it starts, and resumes
    /// after wake-ups that name no worker, on the worker `other` last ran on, sharing its cache.
    /// If `other` has finished by then, the hint is ignored (counted in
    /// [`PlacementStats::finished_hint_ignored`](crate::PlacementStats)) and the thread is
    /// placed by the plain rules; never an error. A fragment hint takes precedence.
    ///
    /// ```
    /// use footprint::{GreenBuilder, Runtime};
    /// let rt = Runtime::builder().workers(2).build().unwrap();
    /// rt.block_on(|| {
    ///     let a = footprint::spawn(|| 1);
    ///     let b = GreenBuilder::new().partner(&a).spawn(|| 2).unwrap();
    ///     assert_eq!(a.join().unwrap() + b.join().unwrap(), 3);
    /// });
    /// ```
    pub fn partner<U>(mut self, other: &JoinHandle<U>) -> GreenBuilder {
        self.hints.partner = other.task.clone();
        self
    }

    /// Declares the thread a rival of `other` (004 §5.3, repulse: both are compute-heavy or
    /// would evict each other's data): it runs on a worker other than the one `other` last ran
    /// on (when the runtime has more than one). A finished rival is ignored like a finished
    /// partner ([`GreenBuilder::partner`]).
    pub fn rival<U>(mut self, other: &JoinHandle<U>) -> GreenBuilder {
        self.hints.rival = other.task.clone();
        self
    }

    /// Declares the thread's memory traffic: about `bytes_per_run` bytes each time it runs
    /// (from a start or resume to its next yield, park or end). Where no hardware counter or
    /// resctrl group measures traffic, bandwidth control counts this (see
    /// [`bandwidth`](crate::bandwidth)); a streaming thread beside a reserved one is throttled
    /// by it.
    ///
    /// ```
    /// use footprint_runtime::{GreenBuilder, Runtime};
    /// let rt = Runtime::builder().workers(1).build().unwrap();
    /// rt.block_on(|| {
    ///     let h = GreenBuilder::new().traffic(4096).spawn(|| footprint_runtime::yield_now());
    ///     h.unwrap().join().unwrap();
    /// });
    /// assert_eq!(rt.stats().bandwidth.declared_bytes, 2 * 4096); // two runs
    /// ```
    pub fn traffic(mut self, bytes_per_run: u64) -> GreenBuilder {
        self.traffic = Some(bytes_per_run);
        self
    }

    /// Reserves `bytes_per_sec` of memory bandwidth for the thread, admitted when it is spawned
    /// (a refusal makes [`GreenBuilder::spawn`] fail with [`Error::Bandwidth`], saying what is
    /// left) and held until it finishes; as
    /// [`Runtime::reserve_bandwidth`](crate::Runtime::reserve_bandwidth) called first thing in
    /// the thread.
    ///
    /// ```
    /// use footprint_runtime::bandwidth::Capacity;
    /// use footprint_runtime::{Error, GreenBuilder, Runtime};
    /// let rt = Runtime::builder().workers(2).build()?;
    /// rt.set_bandwidth_capacity(Capacity::new(1e9, 2).unwrap())?;
    /// rt.block_on(|| {
    ///     let h = GreenBuilder::new().reserve_bandwidth(300e6).spawn(|| 1).unwrap();
    ///     assert_eq!(h.join().unwrap(), 1);
    ///     let refused = GreenBuilder::new().reserve_bandwidth(5e9).spawn(|| 2);
    ///     assert!(matches!(refused, Err(Error::Bandwidth(_))));
    /// });
    /// assert_eq!(rt.stats().bandwidth.reservations, 0); // released when it finished
    /// # Ok::<(), Error>(())
    /// ```
    pub fn reserve_bandwidth(mut self, bytes_per_sec: f64) -> GreenBuilder {
        self.reserve = Some(bytes_per_sec);
        self
    }

    /// Spawns it on the current runtime (the global one outside any runtime).
    ///
    /// Errors: [`Error::StackTooSmall`], [`Error::EmptyFragment`] (a fragment hint of 0 bytes).
    pub fn spawn<F, T>(self, f: F) -> Result<JoinHandle<T>, Error>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if let Some((fragment, 0)) = self.hints.fragment {
            return Err(Error::EmptyFragment { fragment });
        }
        if let Some(s) = self.stack_size {
            check_stack_size(s)?;
        }
        self.spawn_inner(f)
    }

    fn spawn_inner<F, T>(mut self, f: F) -> Result<JoinHandle<T>, Error>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let reservation = match self.reserve.take() {
            None => None,
            Some(bps) => {
                let c = context::ctx_ptr();
                let s = if c.is_null() {
                    global_shared()
                } else {
                    // SAFETY: a non-null context lives as long as its OS thread's worker loop.
                    unsafe { (*c).shared() }
                };
                // SAFETY: the runtime is the caller's (alive while it runs) or the global one.
                let state = unsafe { (*s).bandwidth().clone() };
                Some(crate::bandwidth::admit(state, bps)?)
            }
        };
        match reservation {
            None => self.spawn_declared(f),
            Some(r) => self.spawn_declared(move || {
                r.bind_to_current();
                let out = f();
                drop(r);
                out
            }),
        }
    }

    /// Spawns `f`, each run charged the declared traffic if any.
    fn spawn_declared<F, T>(self, f: F) -> Result<JoinHandle<T>, Error>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let opts = SpawnOptions {
            name: self.name,
            stack_size: self.stack_size,
            scope: None,
            hints: (!self.hints.is_empty()).then(|| Box::new(self.hints)),
        };
        match self.traffic {
            None => spawn_current(f, move || opts),
            Some(bytes) => spawn_current(
                crate::bandwidth::thread::with_declared_traffic(bytes, f),
                move || opts,
            ),
        }
    }
}
