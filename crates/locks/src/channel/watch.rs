//! How a blocked select waits on several channels at once: one [`Watch`] per operation,
//! linked into its channel's list of watchers, all pointing at one [`Token`].
//!
//! A channel that becomes ready for a watched operation (a message or a waiting sender for a
//! receive, a free place or a waiting receiver for a send, a disconnection for both) fires the
//! watches of that kind, under its lock: each fire tries to move the watch's token from
//! `WAITING` to "fired by operation i"; only the winner takes the watch's unparker and wakes
//! the select's thread, after the lock is released. The select parks until its token is no
//! longer `WAITING`, so it parks once and the first channel to become ready wakes it. It then
//! unlinks its remaining watches (under each channel's lock) before they go out of scope, and
//! retries its operations. A select that finds an operation ready while linking its watches
//! moves its own token to `ABORTED` (when no channel fired it first) and retries at once.
//!
//! # Claims: a rendezvous with a blocked select
//! On a zero-capacity channel a fired watch is not enough: two selects that can only complete
//! with each other (one's send arm, the other's receive arm) would each wake the other and
//! retry, and a select's send must not be chosen unless a receiver is committed to it. There
//! a watch can instead be *claimed*: the other side (a plain send or receive, or a select
//! trying its operations) moves the token from `WAITING` to "claimed by operation i" under the
//! channel's lock and unlinks the watch, so the blocked select is committed to that operation
//! and nobody else can fire or claim it. Then the claimer hands over what the rendezvous needs:
//! for a claimed receive, the message (a [`Payload`], possibly later: a select's send arm
//! evaluates its message only once chosen); for a claimed send, the address of the receiver's
//! node to fill. It marks the hand-over `DELIVERED` (or `RELEASED` when a chosen operation was
//! dropped uncompleted: the select retries) and only then wakes the select, which waits for
//! that mark past its deadline: a committed operation is never abandoned half-way.
//!
//! The loom models `select_registration_races_a_send` and `selects_pair_on_a_rendezvous` in
//! `tests/loom.rs` check that a send racing the linking is never missed and that two selects
//! racing to register on both ends of a rendezvous always pair.

use crate::hook::{current_hook, Placement, PriorityClass, Unparker, WaitOn};
use crate::sync::{AtomicUsize, Ordering};
use crate::wait::{ClassScope, Informed};
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::time::Instant;

/// The token is armed: no channel has fired it.
const WAITING: usize = 0;
/// The select found an operation ready itself (it does not wait).
const ABORTED: usize = usize::MAX;
/// Set with an operation's position: the watch of that operation was claimed (committed).
const CLAIMED: usize = 1 << (usize::BITS - 2);

/// A claimed operation's hand-over has not happened yet.
const PENDING: usize = 0;
/// The claimer handed over the message (a receive) or its node (a send).
const DELIVERED: usize = 1;
/// The claimer gave the claim up (its chosen operation was dropped): the select retries.
const RELEASED: usize = 2;

/// How a select's wait ended.
pub(crate) enum Outcome {
    /// Fired, aborted or timed out: try the operations again.
    Retry,
    /// Operation `position` (in the order added) was claimed and handed over.
    Claimed(usize),
}

/// What a select's watches share: whether (and by which operation) it was fired or claimed.
pub(crate) struct Token {
    state: AtomicUsize,
    /// `PENDING`, `DELIVERED` or `RELEASED`, for a claimed token.
    handover: AtomicUsize,
}

impl Token {
    pub(crate) fn new() -> Token {
        Token {
            state: AtomicUsize::new(WAITING),
            handover: AtomicUsize::new(PENDING),
        }
    }

    /// Whether a channel fired or claimed the token or the select aborted it.
    pub(crate) fn is_set(&self) -> bool {
        self.state.load(Ordering::Acquire) != WAITING
    }

    /// Whether nothing has fired, claimed or aborted the token yet: its select could be
    /// claimed now (a hint: the claim itself decides).
    pub(crate) fn is_waiting(&self) -> bool {
        !self.is_set()
    }

    /// Whether the select may stop waiting: set, and for a claim, handed over.
    fn settled(&self) -> bool {
        let state = self.state.load(Ordering::Acquire);
        state != WAITING
            && (state == ABORTED
                || state & CLAIMED == 0
                || self.handover.load(Ordering::Acquire) != PENDING)
    }

    /// How the wait ended, once [`park`](Self::park) returned.
    pub(crate) fn outcome(&self) -> Outcome {
        let state = self.state.load(Ordering::Acquire);
        if state != ABORTED
            && state & CLAIMED != 0
            && self.handover.load(Ordering::Acquire) == DELIVERED
        {
            Outcome::Claimed(state & !CLAIMED)
        } else {
            Outcome::Retry
        }
    }

    /// Moves the armed token to `ABORTED`; `false` when a channel fired it first.
    pub(crate) fn abort(&self) -> bool {
        self.state
            .compare_exchange(WAITING, ABORTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Parks the calling thread until the token is set (and, if claimed, handed over) or
    /// `deadline` passes. A claim made before the deadline is waited for past it: the claimer
    /// is committed to this select and hands over shortly.
    /// `what` is recorded for the runtime's report of parked threads (a select names its first
    /// operation's channel).
    pub(crate) fn park(&self, deadline: Option<Instant>, what: WaitOn) {
        if self.settled() {
            return;
        }
        let hook = current_hook();
        let scope = ClassScope::enter::<Informed>();
        scope.publish(PriorityClass::Waiter);
        hook.note_wait(what);
        while !self.settled() {
            match deadline {
                Some(d) if !self.is_set() => {
                    let now = Instant::now();
                    if now >= d {
                        // Closes the race with a claimer: either we abort first (no claim can
                        // follow) or the claim won and we wait for its hand-over.
                        if self.abort() {
                            break;
                        }
                        continue;
                    }
                    hook.park_timeout(d - now);
                }
                _ => hook.park(),
            }
        }
        scope.restore();
    }
}

/// One operation of a blocked select, linked into its channel's watchers.
pub(crate) struct Watch {
    token: *const Token,
    /// Taken by the channel that fires the token (under that channel's lock), or by a claimer.
    unparker: UnsafeCell<Option<Unparker>>,
    index: usize,
    /// A claimed receive: the message (or disconnection) the claimer handed over.
    payload: UnsafeCell<Option<Payload>>,
    /// A claimed send: the receiver's node (a `Handoff<T>` of this channel's `T`) to fill.
    partner: UnsafeCell<*const ()>,
    /// A select's watch, which may be claimed; `false` for `ready`-style checks, which are
    /// only fired (they carry nothing out).
    claimable: bool,
}

/// A claimed watch, held by its claimer until it hands over: the select waits for it.
pub(crate) struct Claimed {
    watch: NonNull<Watch>,
    /// The select's unparker, called after the hand-over.
    unparker: Unparker,
}

// SAFETY: a claim is the exclusive right to hand over to one blocked select, which stays parked
// (keeping the watch alive) until the claim delivers or releases; any thread may do that.
unsafe impl Send for Claimed {}

impl Claimed {
    /// Hands the received message (type-erased) to the select and wakes it.
    pub(crate) fn deliver(self, payload: Payload) {
        // SAFETY: the claim is exclusive and the select waits (its watch alive) until `settle`.
        unsafe { *self.watch.as_ref().payload.get() = Some(payload) };
        self.settle(DELIVERED);
    }

    /// Hands over the receiver's node to a claimed send, and wakes the select.
    pub(crate) fn deliver_partner(self, node: *const ()) {
        // SAFETY: as in `deliver`.
        unsafe { *self.watch.as_ref().partner.get() = node };
        self.settle(DELIVERED);
    }

    /// Gives the claim up: the select wakes and tries its operations again.
    pub(crate) fn release(self) {
        self.settle(RELEASED);
    }

    fn settle(self, handover: usize) {
        // SAFETY: as in `deliver`; after this store the select may return and free the watch
        // and token, so the unparker was taken before.
        unsafe {
            let token = &*self.watch.as_ref().token;
            token.handover.store(handover, Ordering::Release);
        }
        self.unparker.unpark(Placement::Anywhere);
    }
}

/// Claims the first watch of `list` whose select is still waiting and is not `not` (a select
/// never pairs with itself): unlinks it and commits its select to its operation.
///
/// # Safety
/// The caller holds the lock of the channel whose list this is.
pub(crate) unsafe fn claim_first(
    list: &mut Vec<NonNull<Watch>>,
    not: *const Token,
) -> Option<Claimed> {
    let at = list.iter().position(|w| {
        // SAFETY: linked watches are alive under the lock; the claim decides below.
        let w = unsafe { w.as_ref() };
        w.token != not && w.claim()
    })?;
    let watch = list.remove(at);
    // SAFETY: the claim won: only this call takes the unparker.
    let unparker = unsafe { (*watch.as_ref().unparker.get()).take() }
        .expect("a claimed watch still holds its unparker");
    Some(Claimed { watch, unparker })
}

/// Whether `list` holds a watch of another select (not `not`) that could be claimed now.
///
/// # Safety
/// As for [`claim_first`].
pub(crate) unsafe fn any_claimable(list: &[NonNull<Watch>], not: *const Token) -> bool {
    list.iter().any(|w| {
        // SAFETY: linked watches are alive under the lock.
        let w = unsafe { w.as_ref() };
        // SAFETY: a linked watch's token outlives it.
        w.claimable && w.token != not && unsafe { &*w.token }.is_waiting()
    })
}

impl Watch {
    /// A watch of operation `index` for the calling thread, on `token` (which outlives it);
    /// `claimable` for a select that carries its operation out.
    pub(crate) fn new(token: &Token, index: usize, claimable: bool) -> Watch {
        Watch {
            token,
            unparker: UnsafeCell::new(Some(current_hook().current_unparker())),
            index,
            payload: UnsafeCell::new(None),
            partner: UnsafeCell::new(std::ptr::null()),
            claimable,
        }
    }

    /// Whether the watch may be claimed (a select's, not a `ready` check's).
    pub(crate) fn claimable(&self) -> bool {
        self.claimable
    }

    /// Tries to commit the select to this watch's operation.
    fn claim(&self) -> bool {
        if !self.claimable {
            return false;
        }
        // SAFETY: a linked watch's token outlives it.
        let token = unsafe { &*self.token };
        token
            .state
            .compare_exchange(
                WAITING,
                CLAIMED | self.index,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// The message a claimer handed to this (claimed, delivered) receive.
    ///
    /// # Safety
    /// The owner calls it after its token's wait ended `Claimed` at this watch.
    pub(crate) unsafe fn take_payload(&self) -> Option<Payload> {
        // SAFETY: the hand-over is complete (acquired through the token) and the claimer is gone.
        unsafe { (*self.payload.get()).take() }
    }

    /// The receiver's node a claimer handed to this (claimed, delivered) send.
    ///
    /// # Safety
    /// As for [`take_payload`](Self::take_payload).
    pub(crate) unsafe fn partner(&self) -> *const () {
        // SAFETY: as in `take_payload`.
        unsafe { *self.partner.get() }
    }

    /// The token this watch belongs to (to tell one select's watches from another's).
    pub(crate) fn token(&self) -> *const Token {
        self.token
    }

    /// Fires the watch's token for its operation, if it is still armed; returns the unparker
    /// to call once the channel's lock is released.
    ///
    /// # Safety
    /// The watch is linked into the caller's channel and the caller holds that channel's lock
    /// (its owner unlinks it under the same lock before freeing it).
    pub(crate) unsafe fn fire(&self) -> Option<Unparker> {
        // SAFETY: the token outlives its linked watches (the select unlinks them all before
        // its token goes away).
        let token = unsafe { &*self.token };
        token
            .state
            .compare_exchange(WAITING, self.index + 1, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        // SAFETY: only the winner of the token takes an unparker, once; the owner does not
        // touch it while the watch is linked.
        unsafe { (*self.unparker.get()).take() }
    }
}

/// The result of a receive, its type erased while it travels through a select (from
/// [`Select`](super::Select)'s receive attempt or a claimer to
/// [`SelectedOperation::recv`](super::SelectedOperation::recv)).
pub(crate) struct Payload {
    ptr: *mut (),
    free: unsafe fn(*mut ()),
}

// SAFETY: a payload holds a `Result<T, RecvError>` of a channel's `T`, and channels move their
// messages across threads only for `T: Send`.
unsafe impl Send for Payload {}

impl Payload {
    pub(crate) fn new<T>(r: Result<T, super::RecvError>) -> Payload {
        unsafe fn free<T>(p: *mut ()) {
            // SAFETY: `p` came from `Box::into_raw` of this type (see `new`), freed once.
            drop(unsafe { Box::from_raw(p.cast::<Result<T, super::RecvError>>()) });
        }
        Payload {
            ptr: Box::into_raw(Box::new(r)).cast(),
            free: free::<T>,
        }
    }

    /// The result inside.
    ///
    /// # Safety
    /// `T` is the type the payload was made with.
    pub(crate) unsafe fn into_result<T>(self) -> Result<T, super::RecvError> {
        let p = std::mem::ManuallyDrop::new(self);
        // SAFETY: made by `new::<T>` (the caller's contract), taken once (not freed by `Drop`).
        *unsafe { Box::from_raw(p.ptr.cast::<Result<T, super::RecvError>>()) }
    }
}

impl Drop for Payload {
    fn drop(&mut self) {
        // SAFETY: not taken (`into_result` skips this drop).
        unsafe { (self.free)(self.ptr) }
    }
}
