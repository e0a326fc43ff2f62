//! [`Select`]: waiting on several channel operations at once, crossbeam-channel's API.
//!
//! A select first tries its operations in a random order (so that no ready operation starves
//! another) and takes the first possible one. If none is, it links one watch per operation
//! into the channels (see `watch.rs`), parks once, and the first channel to become ready wakes
//! it; it then unlinks its watches and tries again.

use super::watch::{Token, Watch};
use super::{Receiver, RecvError, SendError, Sender};
#[cfg(not(loom))]
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// One end of a channel as a select sees it.
trait Endpoint {
    /// The channel's address (which operation belongs to which channel).
    fn addr(&self) -> *const ();
    /// Whether this is a send.
    fn is_send(&self) -> bool;
    /// Whether the operation would not wait now (see `Chan::send_ready` for `selects`).
    fn ready(&self, selects: bool) -> bool;
    /// A receive tried now: its result, or `None` when it would wait. Sends: `None`.
    fn try_take(&self) -> Option<Payload>;
    fn watch(&self, w: &Watch) -> bool;
    fn unwatch(&self, w: &Watch);
}

impl<T> Endpoint for Receiver<T> {
    fn addr(&self) -> *const () {
        std::sync::Arc::as_ptr(&self.chan).cast()
    }
    fn is_send(&self) -> bool {
        false
    }
    fn ready(&self, _selects: bool) -> bool {
        self.chan.recv_ready()
    }
    fn try_take(&self) -> Option<Payload> {
        match self.try_recv() {
            Ok(m) => Some(Payload::new::<T>(Ok(m))),
            Err(super::TryRecvError::Disconnected) => Some(Payload::new::<T>(Err(RecvError))),
            Err(super::TryRecvError::Empty) => None,
        }
    }
    fn watch(&self, w: &Watch) -> bool {
        self.chan.watch_recv(w)
    }
    fn unwatch(&self, w: &Watch) {
        self.chan.unwatch(w)
    }
}

impl<T> Endpoint for Sender<T> {
    fn addr(&self) -> *const () {
        std::sync::Arc::as_ptr(&self.chan).cast()
    }
    fn is_send(&self) -> bool {
        true
    }
    fn ready(&self, selects: bool) -> bool {
        self.chan.send_ready(selects)
    }
    fn try_take(&self) -> Option<Payload> {
        None
    }
    fn watch(&self, w: &Watch) -> bool {
        self.chan.watch_send(w)
    }
    fn unwatch(&self, w: &Watch) {
        self.chan.unwatch(w)
    }
}

/// The result of a selected receive, its type erased until [`SelectedOperation::recv`].
struct Payload {
    ptr: *mut (),
    free: unsafe fn(*mut ()),
}

impl Payload {
    fn new<T>(r: Result<T, RecvError>) -> Payload {
        unsafe fn free<T>(p: *mut ()) {
            // SAFETY: `p` came from `Box::into_raw` of this type (see `new`), freed once.
            drop(unsafe { Box::from_raw(p.cast::<Result<T, RecvError>>()) });
        }
        Payload {
            ptr: Box::into_raw(Box::new(r)).cast(),
            free: free::<T>,
        }
    }
}

impl Drop for Payload {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: not taken (null after `SelectedOperation::recv` takes it).
            unsafe { (self.free)(self.ptr) }
        }
    }
}

/// Waits on several channel operations at once and picks one that can proceed
/// (crossbeam-channel's `Select`).
///
/// Add operations with [`recv`](Select::recv) and [`send`](Select::send) (each returns the
/// operation's index), then call [`select`](Select::select) (waits),
/// [`try_select`](Select::try_select) or [`select_timeout`](Select::select_timeout), and
/// complete the returned [`SelectedOperation`] with the same channel end. When several
/// operations can proceed, one is chosen at random. A receive from a disconnected channel and
/// a send to one can proceed (they complete with an error). Waiting parks the green thread (or
/// the OS thread outside a runtime) once; the first channel to become ready wakes it.
///
/// ```
/// use footprint_locks::channel::{self, Select};
/// let (tx1, rx1) = channel::unbounded::<i32>();
/// let (_tx2, rx2) = channel::unbounded::<&str>();
/// std::thread::spawn(move || tx1.send(7).unwrap());
/// let mut sel = Select::new();
/// let a = sel.recv(&rx1);
/// let b = sel.recv(&rx2);
/// let oper = sel.select();
/// match oper.index() {
///     i if i == a => assert_eq!(oper.recv(&rx1), Ok(7)),
///     i if i == b => panic!("nothing is sent on rx2: {:?}", oper.recv(&rx2)),
///     _ => unreachable!(),
/// }
/// ```
pub struct Select<'a> {
    ops: Vec<(&'a dyn Endpoint, usize)>,
    next_index: usize,
}

impl Default for Select<'_> {
    fn default() -> Self {
        Select::new()
    }
}

impl fmt::Debug for Select<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Select")
            .field("operations", &self.ops.len())
            .finish()
    }
}

/// An operation a select chose; complete it with [`recv`](SelectedOperation::recv) or
/// [`send`](SelectedOperation::send) on the channel end it was added with.
#[must_use = "a selected operation completes only through its recv or send method"]
pub struct SelectedOperation<'a> {
    index: usize,
    addr: *const (),
    send: bool,
    payload: Option<Payload>,
    _ops: PhantomData<&'a ()>,
}

impl fmt::Debug for SelectedOperation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectedOperation")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

/// Which readiness a select asks its operations for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Receives are carried out when possible; sends are checked.
    Perform,
    /// Every operation is only checked (`ready*`).
    Check,
}

impl<'a> Select<'a> {
    /// A select with no operations.
    pub fn new() -> Select<'a> {
        Select {
            ops: Vec::new(),
            next_index: 0,
        }
    }

    /// Adds a receive from `r`; returns its index.
    pub fn recv<T>(&mut self, r: &'a Receiver<T>) -> usize {
        self.add(r)
    }

    /// Adds a send to `s`; returns its index.
    pub fn send<T>(&mut self, s: &'a Sender<T>) -> usize {
        self.add(s)
    }

    fn add(&mut self, e: &'a dyn Endpoint) -> usize {
        let i = self.next_index;
        self.next_index += 1;
        self.ops.push((e, i));
        i
    }

    /// Removes the operation with index `index` (indices of the others stay).
    ///
    /// # Panics
    /// When no operation has this index.
    pub fn remove(&mut self, index: usize) {
        let at = self
            .ops
            .iter()
            .position(|&(_, i)| i == index)
            .unwrap_or_else(|| panic!("Select::remove: no operation has index {index}"));
        self.ops.remove(at);
    }

    /// An operation that can proceed now, without waiting.
    pub fn try_select(&mut self) -> Result<SelectedOperation<'a>, TrySelectError> {
        self.run(Mode::Perform, Some(None)).ok_or(TrySelectError)
    }

    /// Waits until an operation can proceed and returns it.
    ///
    /// # Panics
    /// With no operations (it would wait forever; crossbeam panics too).
    pub fn select(&mut self) -> SelectedOperation<'a> {
        assert!(
            !self.ops.is_empty(),
            "Select::select with no operations would wait forever; add a recv or send first"
        );
        self.run(Mode::Perform, None)
            .expect("waits without deadline")
    }

    /// Waits at most `timeout` for an operation that can proceed.
    pub fn select_timeout(
        &mut self,
        timeout: Duration,
    ) -> Result<SelectedOperation<'a>, SelectTimeoutError> {
        match Instant::now().checked_add(timeout) {
            Some(d) => self.select_deadline(d),
            None => Ok(self.select()),
        }
    }

    /// Waits until `deadline` for an operation that can proceed.
    pub fn select_deadline(
        &mut self,
        deadline: Instant,
    ) -> Result<SelectedOperation<'a>, SelectTimeoutError> {
        self.run(Mode::Perform, Some(Some(deadline)))
            .ok_or(SelectTimeoutError)
    }

    /// The index of an operation that can proceed now (not carried out).
    pub fn try_ready(&mut self) -> Result<usize, TryReadyError> {
        self.run(Mode::Check, Some(None))
            .map(|o| o.index)
            .ok_or(TryReadyError)
    }

    /// Waits until an operation can proceed; returns its index (not carried out: another
    /// thread may take it first).
    ///
    /// # Panics
    /// With no operations.
    pub fn ready(&mut self) -> usize {
        assert!(
            !self.ops.is_empty(),
            "Select::ready with no operations would wait forever; add a recv or send first"
        );
        self.run(Mode::Check, None)
            .expect("waits without deadline")
            .index
    }

    /// Waits at most `timeout` until an operation can proceed; returns its index.
    pub fn ready_timeout(&mut self, timeout: Duration) -> Result<usize, ReadyTimeoutError> {
        let deadline = Instant::now().checked_add(timeout);
        match deadline {
            Some(d) => self.ready_deadline(d),
            None => Ok(self.ready()),
        }
    }

    /// Waits until `deadline` until an operation can proceed; returns its index.
    pub fn ready_deadline(&mut self, deadline: Instant) -> Result<usize, ReadyTimeoutError> {
        self.run(Mode::Check, Some(Some(deadline)))
            .map(|o| o.index)
            .ok_or(ReadyTimeoutError)
    }

    /// Tries the operations in random order; then, unless `limit` is `Some(None)` (no
    /// waiting), waits until one becomes possible or the deadline `limit` passes.
    fn run(&mut self, mode: Mode, limit: Option<Option<Instant>>) -> Option<SelectedOperation<'a>> {
        let mut order: Vec<usize> = (0..self.ops.len()).collect();
        let waits = !matches!(limit, Some(None));
        loop {
            shuffle(&mut order);
            for &k in &order {
                let (e, index) = self.ops[k];
                let payload = if mode == Mode::Perform && !e.is_send() {
                    match e.try_take() {
                        Some(p) => Some(p),
                        None => continue,
                    }
                } else if e.ready(waits) {
                    None
                } else {
                    continue;
                };
                return Some(SelectedOperation {
                    index,
                    addr: e.addr(),
                    send: e.is_send(),
                    payload,
                    _ops: PhantomData,
                });
            }
            let deadline = match limit {
                Some(None) => return None,
                Some(Some(d)) if Instant::now() >= d => return None,
                Some(Some(d)) => Some(d),
                None => None,
            };
            if self.ops.is_empty() {
                // Nothing can wake us: wait out the deadline (crossbeam does the same).
                if let Some(d) = deadline {
                    crate::hook::current_hook()
                        .park_timeout(d.saturating_duration_since(Instant::now()));
                }
                continue;
            }
            self.wait(deadline);
        }
    }

    /// Links a watch per operation, parks until one fires or `deadline`, unlinks them.
    fn wait(&self, deadline: Option<Instant>) {
        let token = Token::new();
        let watches: Vec<Watch> = (0..self.ops.len()).map(|k| Watch::new(&token, k)).collect();
        let mut linked = 0;
        for (k, (e, _)) in self.ops.iter().enumerate() {
            if token.is_set() {
                break;
            }
            if e.watch(&watches[k]) {
                // Possible already: retry at once (unless a channel fired us meanwhile).
                token.abort();
                break;
            }
            linked = k + 1;
        }
        token.park(deadline);
        for (k, (e, _)) in self.ops.iter().enumerate().take(linked) {
            e.unwatch(&watches[k]);
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    static SEED: Cell<u64> = Cell::new({
        // Distinct per thread: the address of this thread's cell mixed with the time.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        t ^ 0x9e37_79b9_7f4a_7c15
    });
}

/// Shuffles `order` (Fisher–Yates with a per-thread xorshift). Under loom the order stays as
/// added: a model must be deterministic from one exploration to the next.
#[cfg(loom)]
fn shuffle(_: &mut [usize]) {}

/// Shuffles `order` (Fisher–Yates with a per-thread xorshift).
#[cfg(not(loom))]
fn shuffle(order: &mut [usize]) {
    if order.len() < 2 {
        return;
    }
    SEED.with(|s| {
        let mut x = s.get() | 1;
        for i in (1..order.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        s.set(x);
    });
}

impl SelectedOperation<'_> {
    /// The index of the selected operation (as returned by `Select::recv`/`send`).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Completes a selected receive: the message, or `RecvError` when the channel is empty
    /// and disconnected.
    ///
    /// # Panics
    /// When the selected operation is not a receive from `r`.
    pub fn recv<T>(mut self, r: &Receiver<T>) -> Result<T, RecvError> {
        let mine = std::sync::Arc::as_ptr(&r.chan).cast::<()>();
        assert!(
            !self.send && std::ptr::eq(mine, self.addr),
            "SelectedOperation::recv: the selected operation (index {}) is not a receive from \
             this receiver; pass the receiver it was added with",
            self.index
        );
        match self.payload.take() {
            Some(mut p) => {
                let ptr = std::mem::replace(&mut p.ptr, std::ptr::null_mut());
                // SAFETY: the payload was made from this very channel (checked above), whose
                // messages are `T`s, by `Payload::new::<T>`; taken once (ptr now null).
                *unsafe { Box::from_raw(ptr.cast::<Result<T, RecvError>>()) }
            }
            // Selected by `ready`-style checks only: receive now (it may wait briefly if
            // another receiver took the message first).
            None => r.recv(),
        }
    }

    /// Completes a selected send of `msg` (the channel had room or a waiting receiver when
    /// selected; if another sender took it since, this waits for the next).
    ///
    /// # Panics
    /// When the selected operation is not a send to `s`.
    pub fn send<T>(self, s: &Sender<T>, msg: T) -> Result<(), SendError<T>> {
        let mine = std::sync::Arc::as_ptr(&s.chan).cast::<()>();
        assert!(
            self.send && std::ptr::eq(mine, self.addr),
            "SelectedOperation::send: the selected operation (index {}) is not a send to this \
             sender; pass the sender it was added with",
            self.index
        );
        s.send(msg)
    }
}

macro_rules! unit_error {
    ($(#[$doc:meta] $name:ident: $msg:literal;)*) => {$(
        #[$doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name;

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str($msg)
            }
        }

        impl std::error::Error for $name {}
    )*};
}

unit_error! {
    /// `Select::try_select` found no operation that could proceed.
    TrySelectError: "no operation of the select could proceed without waiting";
    /// `Select::select_timeout` waited its whole timeout.
    SelectTimeoutError: "no operation of the select could proceed before the timeout";
    /// `Select::try_ready` found no operation that could proceed.
    TryReadyError: "no operation of the select was ready";
    /// `Select::ready_timeout` waited its whole timeout.
    ReadyTimeoutError: "no operation of the select became ready before the timeout";
}
