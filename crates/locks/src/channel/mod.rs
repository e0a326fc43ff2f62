//! Multi-producer multi-consumer channels whose blocked operations park the green thread (or the
//! OS thread outside a runtime), never the worker: crossbeam-channel's API.
//!
//! - [`bounded(cap)`](bounded): at most `cap` buffered messages; a send waits for a place.
//!   The buffer is allocated up front ([`try_bounded`] reports a capacity that cannot be
//!   allocated, such as `usize::MAX`, as a [`CapacityError`]; `bounded` panics with its message).
//!   `bounded(0)` is a rendezvous: a send waits until a receiver takes the message.
//! - [`unbounded()`](unbounded): sends never wait; the buffer grows as needed.
//!
//! [`Sender`] and [`Receiver`] are both `Clone`. When every sender is gone, receivers still get
//! the buffered messages, then [`RecvError`]; when every receiver is gone, a send returns its
//! message in [`SendError`] and the buffered messages are dropped. Messages are delivered in the
//! order they were sent (per sender, and in buffer order overall). A bounded channel with places
//! keeps its messages in a lock-free ring: a send or receive that need not wait takes no lock,
//! and a woken waiter tries the ring again at the head of its side's queue. Zero-capacity and
//! unbounded channels take a short lock for every operation, and there a waiting receiver is
//! handed its message directly.
//!
//! The buffered messages are dropped in order when the last receiver goes. If a message's
//! destructor panics, the panic comes out of that `Receiver`'s drop and the messages after it
//! are leaked, never dropped twice (crossbeam-channel's rule):
//!
//! ```
//! struct Loud;
//! impl Drop for Loud {
//!     fn drop(&mut self) {
//!         panic!("first drop");
//!     }
//! }
//! let (tx, rx) = footprint_locks::channel::bounded(2);
//! tx.send(Loud).unwrap_or_else(|_| unreachable!());
//! tx.send(Loud).unwrap_or_else(|_| unreachable!());
//! drop(tx);
//! let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(rx)));
//! assert_eq!(*r.unwrap_err().downcast::<&str>().unwrap(), "first drop");
//! ```
//!
//! A waiting thread publishes the `Waiter` priority class, like a lock waiter.
//!
//! [`select!`](crate::select) and [`Select`] wait on several operations at once (fair random
//! choice among the ready ones, `default` and timeouts, disconnected operations ready);
//! [`after`], [`at`], [`tick`] and [`never`](fn@never) are channels of time for them.
//!
//! ```
//! use footprint::channel;
//!
//! let (tx, rx) = channel::bounded(4);
//! let producers: Vec<_> = (0..2)
//!     .map(|p| {
//!         let tx = tx.clone();
//!         std::thread::spawn(move || {
//!             for i in 0..100 {
//!                 tx.send(p * 1000 + i).unwrap();
//!             }
//!         })
//!     })
//!     .collect();
//! drop(tx); // the channel disconnects once the producers are done
//! let received: Vec<i32> = rx.iter().collect();
//! for p in producers {
//!     p.join().unwrap();
//! }
//! assert_eq!(received.len(), 200);
//! ```

mod chan;
mod error;
mod ring;
mod select;
mod select_macro;
mod spin;
mod timer;
mod watch;

pub use crate::select;
use chan::{Block, Chan, RecvFail, SendFail};
pub use error::{
    CapacityError, RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError,
    TrySendError,
};
pub use select::{
    ReadyTimeoutError, Select, SelectTimeoutError, SelectedOperation, TryReadyError, TrySelectError,
};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
pub use timer::{after, at, never, tick};

/// A channel of at most `cap` buffered messages (`0`: rendezvous).
///
/// # Panics
/// When the buffer of `cap` messages cannot be allocated (e.g. `usize::MAX`), with the message
/// of [`CapacityError`]; use [`try_bounded`] to get the error instead.
///
/// ```
/// let (tx, rx) = footprint::channel::bounded(1);
/// tx.send(1).unwrap();
/// assert!(tx.try_send(2).unwrap_err().is_full());
/// assert_eq!(rx.recv(), Ok(1));
/// assert_eq!(tx.capacity(), Some(1));
/// ```
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    try_bounded(cap).unwrap_or_else(|e| panic!("footprint::channel::bounded({cap}): {e}"))
}

/// Like [`bounded`], returning a [`CapacityError`] when the buffer cannot be allocated.
///
/// ```
/// use footprint::channel;
/// let e = channel::try_bounded::<u64>(usize::MAX).unwrap_err();
/// assert_eq!(e.capacity(), usize::MAX);
/// assert!(e.to_string().contains("smaller capacity"));
/// assert!(channel::try_bounded::<u64>(8).is_ok());
/// ```
pub fn try_bounded<T>(cap: usize) -> Result<(Sender<T>, Receiver<T>), CapacityError> {
    let chan = Chan::new(Some(cap)).map_err(|_| CapacityError {
        capacity: cap,
        message_size: std::mem::size_of::<T>(),
    })?;
    Ok(pair(chan))
}

/// A channel whose sends never wait.
///
/// ```
/// let (tx, rx) = footprint::channel::unbounded();
/// for i in 0..1000 {
///     tx.send(i).unwrap();
/// }
/// drop(tx);
/// assert_eq!(rx.iter().sum::<i32>(), 999 * 1000 / 2);
/// ```
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    pair(Chan::new(None).expect("an unbounded channel allocates nothing up front"))
}

fn pair<T>(chan: Chan<T>) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(chan);
    (
        Sender {
            chan: Arc::clone(&chan),
        },
        Receiver { chan },
    )
}

/// The queries both ends of a channel answer alike (`self.chan` is the shared state).
macro_rules! buffer_queries {
    () => {
        /// Messages in the buffer now.
        pub fn len(&self) -> usize {
            self.chan.len()
        }

        /// Whether the buffer is empty now.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// Whether the buffer is full now (a zero-capacity channel always is).
        pub fn is_full(&self) -> bool {
            self.chan.capacity().is_some_and(|c| self.len() >= c)
        }

        /// The capacity; `None` for an unbounded channel.
        pub fn capacity(&self) -> Option<usize> {
            self.chan.capacity()
        }
    };
}

/// The sending side of a channel; `Clone` for more producers.
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

/// The receiving side of a channel; `Clone` for more consumers (each message goes to one).
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Sends `msg`, waiting for a place (or, at capacity 0, for a receiver) as long as needed.
    /// Fails only when every receiver is gone, giving the message back.
    pub fn send(&self, msg: T) -> Result<(), SendError<T>> {
        self.chan.send(msg, Block::Forever).map_err(|e| match e {
            SendFail::Disconnected(m) | SendFail::Full(m) | SendFail::Timeout(m) => SendError(m),
        })
    }

    /// Sends `msg` if that needs no waiting.
    pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
        self.chan.send(msg, Block::Never).map_err(|e| match e {
            SendFail::Disconnected(m) => TrySendError::Disconnected(m),
            SendFail::Full(m) | SendFail::Timeout(m) => TrySendError::Full(m),
        })
    }

    /// Like [`send`](Self::send), giving up after `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (tx, _rx) = footprint::channel::bounded(0);
    /// let e = tx.send_timeout(7, Duration::from_millis(1)).unwrap_err();
    /// assert!(e.is_timeout());
    /// assert_eq!(e.into_inner(), 7);
    /// ```
    pub fn send_timeout(&self, msg: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        self.send_block(msg, Block::after(timeout))
    }

    /// Like [`send`](Self::send), giving up at `deadline`.
    pub fn send_deadline(&self, msg: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
        self.send_block(msg, Block::Until(deadline))
    }

    fn send_block(&self, msg: T, block: Block) -> Result<(), SendTimeoutError<T>> {
        self.chan.send(msg, block).map_err(|e| match e {
            SendFail::Disconnected(m) => SendTimeoutError::Disconnected(m),
            SendFail::Full(m) | SendFail::Timeout(m) => SendTimeoutError::Timeout(m),
        })
    }

    buffer_queries!();
}

impl<T> Receiver<T> {
    /// Receives a message, waiting as long as needed. Fails only when the channel is empty and
    /// every sender is gone.
    pub fn recv(&self) -> Result<T, RecvError> {
        self.chan.recv(Block::Forever).map_err(|_| RecvError)
    }

    /// Receives a message if one is there now.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.recv(Block::Never).map_err(|e| match e {
            RecvFail::Disconnected => TryRecvError::Disconnected,
            RecvFail::Empty | RecvFail::Timeout => TryRecvError::Empty,
        })
    }

    /// Like [`recv`](Self::recv), giving up after `timeout`.
    ///
    /// ```
    /// use footprint::channel::{self, RecvTimeoutError};
    /// use std::time::Duration;
    /// let (tx, rx) = channel::unbounded::<u8>();
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
    /// drop(tx);
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(1)), Err(RecvTimeoutError::Disconnected));
    /// ```
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.recv_block(Block::after(timeout))
    }

    /// Like [`recv`](Self::recv), giving up at `deadline`.
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.recv_block(Block::Until(deadline))
    }

    fn recv_block(&self, block: Block) -> Result<T, RecvTimeoutError> {
        self.chan.recv(block).map_err(|e| match e {
            RecvFail::Disconnected => RecvTimeoutError::Disconnected,
            RecvFail::Empty | RecvFail::Timeout => RecvTimeoutError::Timeout,
        })
    }

    /// A blocking iterator: yields messages until the channel is empty and disconnected.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// A non-blocking iterator: yields the messages there now.
    ///
    /// ```
    /// let (tx, rx) = footprint::channel::unbounded();
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }

    buffer_queries!();
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        chan::acquire(&self.chan.sender_count);
        Sender {
            chan: Arc::clone(&self.chan),
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        chan::acquire(&self.chan.receiver_count);
        Receiver {
            chan: Arc::clone(&self.chan),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if chan::release(&self.chan.sender_count) {
            self.chan.disconnect_senders();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if chan::release(&self.chan.receiver_count) {
            self.chan.disconnect_receivers();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

/// Blocking iterator over a [`Receiver`] (see [`Receiver::iter`]).
#[derive(Debug)]
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

/// Non-blocking iterator over a [`Receiver`] (see [`Receiver::try_iter`]).
#[derive(Debug)]
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

/// Owning blocking iterator over a [`Receiver`].
#[derive(Debug)]
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;
    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}
