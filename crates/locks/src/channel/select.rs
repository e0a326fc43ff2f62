//! [`Select`]: waiting on several channel operations at once, crossbeam-channel's API.
//!
//! A select first tries its operations in a random order (so that no ready operation starves
//! another) and takes the first possible one. If none is, it links one watch per operation
//! into the channels (see `watch.rs`), parks once, and the first channel to become ready wakes
//! it; it then unlinks its watches and tries again, unless the other side claimed one of its
//! operations on a zero-capacity channel (then that operation is the one chosen).
//!
//! A chosen send holds what it was chosen for (a reserved place, a receiver committed to it)
//! until [`SelectedOperation::send`] brings the message, so it never waits; dropping the
//! chosen operation instead gives that back.

use super::chan::SendClaim;
use super::watch::{Outcome, Payload, Token, Watch};
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
    /// Whether the operation would not wait now.
    fn ready(&self) -> bool;
    /// A receive tried now: its result, or `None` when it would wait. Sends: `None`.
    fn try_take(&self) -> Option<Payload>;
    /// A send's claim of what it needs now (see `Chan::claim_send`). Receives: `None`.
    fn try_claim(&self) -> Option<SendClaim>;
    /// The claim of a send whose watch a receiver claimed, handing over its node.
    fn claimed_by(&self, node: *const ()) -> SendClaim;
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
    fn ready(&self) -> bool {
        self.chan.recv_ready()
    }
    fn try_claim(&self) -> Option<SendClaim> {
        None
    }
    fn claimed_by(&self, _: *const ()) -> SendClaim {
        unreachable!("a receive's watch is never claimed as a send")
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
    fn ready(&self) -> bool {
        self.chan.send_ready()
    }
    fn try_take(&self) -> Option<Payload> {
        None
    }
    fn try_claim(&self) -> Option<SendClaim> {
        self.chan.claim_send()
    }
    fn claimed_by(&self, node: *const ()) -> SendClaim {
        SendClaim::receiver::<T>(node)
    }
    fn watch(&self, w: &Watch) -> bool {
        self.chan.watch_send(w)
    }
    fn unwatch(&self, w: &Watch) {
        self.chan.unwatch(w)
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
    pick: Pick,
    _ops: PhantomData<&'a ()>,
}

/// What a chosen operation carries until it is completed.
enum Pick {
    /// Only checked (`ready`): completing it carries it out then.
    Checked,
    /// A receive carried out: its result.
    Received(Payload),
    /// A send with what it reserved for its message.
    Send(SendClaim),
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
    ///
    /// Before saying that none is possible it looks once more, in the same order. One pass
    /// alone is not linearizable: it may find channel A empty, and then B empty because another
    /// thread sent on A and only then took B's message, although at every instant one of the
    /// two held a message. The second pass looks at A after that send. A message that another
    /// thread keeps moving from channel to channel, always into one already looked at, can
    /// still escape both passes: there is no snapshot across channels (crossbeam's select
    /// looks twice the same way).
    fn run(&mut self, mode: Mode, limit: Option<Option<Instant>>) -> Option<SelectedOperation<'a>> {
        let mut order: Vec<usize> = (0..self.ops.len()).collect();
        let mut last_look = false;
        loop {
            if !last_look {
                shuffle(&mut order);
            }
            for &k in &order {
                let (e, _) = self.ops[k];
                let pick = match (mode, e.is_send()) {
                    (Mode::Perform, false) => e.try_take().map(Pick::Received),
                    (Mode::Perform, true) => e.try_claim().map(Pick::Send),
                    (Mode::Check, _) => e.ready().then_some(Pick::Checked),
                };
                if let Some(pick) = pick {
                    return Some(self.chosen(k, pick));
                }
            }
            let deadline = match limit {
                _ if last_look => return None,
                Some(None) => {
                    last_look = true;
                    continue;
                }
                Some(Some(d)) if Instant::now() >= d => {
                    last_look = true;
                    continue;
                }
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
            if let Some(chosen) = self.wait(mode, deadline) {
                return Some(chosen);
            }
        }
    }

    fn chosen(&self, k: usize, pick: Pick) -> SelectedOperation<'a> {
        let (e, index) = self.ops[k];
        SelectedOperation {
            index,
            addr: e.addr(),
            send: e.is_send(),
            pick,
            _ops: PhantomData,
        }
    }

    /// Links a watch per operation, parks until one fires or `deadline`, unlinks them. Returns
    /// the operation the other side claimed, if it did (then it is chosen).
    fn wait(&self, mode: Mode, deadline: Option<Instant>) -> Option<SelectedOperation<'a>> {
        let token = Token::new();
        let claimable = mode == Mode::Perform;
        let watches: Vec<Watch> = (0..self.ops.len())
            .map(|k| Watch::new(&token, k, claimable))
            .collect();
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
        let (first, _) = self.ops[0];
        token.park(
            deadline,
            crate::hook::WaitOn::Channel {
                addr: first.addr() as usize,
                send: first.is_send(),
            },
        );
        for (k, (e, _)) in self.ops.iter().enumerate().take(linked) {
            e.unwatch(&watches[k]);
        }
        match token.outcome() {
            Outcome::Retry => None,
            Outcome::Claimed(k) => {
                let (e, _) = self.ops[k];
                let pick = if e.is_send() {
                    // SAFETY: the wait ended claimed at this watch.
                    Pick::Send(e.claimed_by(unsafe { watches[k].partner() }))
                } else {
                    // SAFETY: as above.
                    let payload = unsafe { watches[k].take_payload() };
                    Pick::Received(payload.expect("a delivered receive holds its message"))
                };
                Some(self.chosen(k, pick))
            }
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
        match std::mem::replace(&mut self.pick, Pick::Checked) {
            // SAFETY: the payload was made from this very channel (checked above), whose
            // messages are `T`s, by `Payload::new::<T>`.
            Pick::Received(p) => unsafe { p.into_result::<T>() },
            // Selected by `ready`-style checks only: receive now (it may wait briefly if
            // another receiver took the message first).
            _ => r.recv(),
        }
    }

    /// Completes a selected send of `msg`. A send chosen by [`Select::select`] and its kin
    /// does not wait: the place or the receiver it was chosen for is kept for it (on a
    /// zero-capacity channel, a receiver or a select blocked on receiving waits for this
    /// message). One chosen by a `ready` check is carried out now and may wait.
    ///
    /// # Panics
    /// When the selected operation is not a send to `s`.
    pub fn send<T>(mut self, s: &Sender<T>, msg: T) -> Result<(), SendError<T>> {
        let mine = std::sync::Arc::as_ptr(&s.chan).cast::<()>();
        assert!(
            self.send && std::ptr::eq(mine, self.addr),
            "SelectedOperation::send: the selected operation (index {}) is not a send to this \
             sender; pass the sender it was added with",
            self.index
        );
        match std::mem::replace(&mut self.pick, Pick::Checked) {
            Pick::Send(claim) => s.chan.send_claimed(claim, msg).map_err(SendError),
            _ => s.send(msg),
        }
    }
}

impl Drop for SelectedOperation<'_> {
    /// A chosen operation dropped uncompleted gives back what it held: a received message is
    /// dropped, a claimed send's place or receiver is released (the receiver tries again).
    fn drop(&mut self) {
        if let Pick::Send(claim) = std::mem::replace(&mut self.pick, Pick::Checked) {
            claim.release();
        }
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
