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
//! The loom model `select_registration_races_a_send` in `tests/loom.rs` checks that a send
//! that races the linking is never missed.

use crate::hook::{current_hook, PriorityClass, Unparker};
use crate::sync::{AtomicUsize, Ordering};
use crate::wait::{ClassScope, Informed};
use std::cell::UnsafeCell;
use std::time::Instant;

/// The token is armed: no channel has fired it.
const WAITING: usize = 0;
/// The select found an operation ready itself (it does not wait).
const ABORTED: usize = usize::MAX;

/// What a select's watches share: whether (and by which operation) it was fired.
pub(crate) struct Token {
    state: AtomicUsize,
}

impl Token {
    pub(crate) fn new() -> Token {
        Token {
            state: AtomicUsize::new(WAITING),
        }
    }

    /// Whether a channel fired the token or the select aborted it.
    pub(crate) fn is_set(&self) -> bool {
        self.state.load(Ordering::Acquire) != WAITING
    }

    /// Moves the armed token to `ABORTED`; `false` when a channel fired it first.
    pub(crate) fn abort(&self) -> bool {
        self.state
            .compare_exchange(WAITING, ABORTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Parks the calling thread until the token is set or `deadline` passes; returns whether it
    /// is set.
    pub(crate) fn park(&self, deadline: Option<Instant>) -> bool {
        if self.is_set() {
            return true;
        }
        let hook = current_hook();
        let scope = ClassScope::enter::<Informed>();
        scope.publish(PriorityClass::Waiter);
        let set = loop {
            if self.is_set() {
                break true;
            }
            match deadline {
                None => hook.park(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break self.is_set();
                    }
                    hook.park_timeout(d - now);
                }
            }
        };
        scope.restore();
        set
    }
}

/// One operation of a blocked select, linked into its channel's watchers.
pub(crate) struct Watch {
    token: *const Token,
    /// Taken by the channel that fires the token (under that channel's lock).
    unparker: UnsafeCell<Option<Unparker>>,
    index: usize,
}

impl Watch {
    /// A watch of operation `index` for the calling thread, on `token` (which outlives it).
    pub(crate) fn new(token: &Token, index: usize) -> Watch {
        Watch {
            token,
            unparker: UnsafeCell::new(Some(current_hook().current_unparker())),
            index,
        }
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
