//! Green-thread-local storage.
//!
//! `std::thread_local!` is per *OS thread*, which inside footprint means per worker: a green
//! thread that parks may resume on another worker and then sees that worker's values, and two
//! green threads on one worker share them. [`GreenLocal`] is per green thread instead (and per
//! OS thread when used outside the runtime).

use crate::context;
use crate::task::{Locals, Task};
use std::cell::RefCell;

std::thread_local! {
    static OS_LOCALS: RefCell<Locals> = RefCell::new(Locals::default());
}

/// A value with one instance per green thread, created lazily on first use.
///
/// Declare it in a `static`; use interior mutability (`Cell`, `RefCell`) to change it.
///
/// ```
/// use footprint::GreenLocal;
/// use std::cell::Cell;
/// static COUNTER: GreenLocal<Cell<u32>> = GreenLocal::new(|| Cell::new(0));
///
/// let rt = footprint::Runtime::builder().workers(2).build().unwrap();
/// rt.block_on(|| {
///     COUNTER.with(|c| c.set(c.get() + 1));
///     let other = footprint::spawn(|| COUNTER.with(|c| c.get())).join().unwrap();
///     assert_eq!(other, 0); // a different green thread has its own value
///     footprint::yield_now(); // may resume on another worker: the value follows
///     assert_eq!(COUNTER.with(|c| c.get()), 1);
/// });
/// ```
pub struct GreenLocal<T: 'static> {
    init: fn() -> T,
}

/// Names the key and its value type, not a value (which green thread's would it be?), as
/// std's `LocalKey` does.
///
/// ```
/// static SCRATCH: footprint::GreenLocal<Vec<u8>> = footprint::GreenLocal::new(Vec::new);
/// assert_eq!(format!("{SCRATCH:?}"), "GreenLocal<alloc::vec::Vec<u8>> { .. }");
/// ```
impl<T: 'static> std::fmt::Debug for GreenLocal<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GreenLocal<{}> {{ .. }}", std::any::type_name::<T>())
    }
}

impl<T: 'static> GreenLocal<T> {
    /// A green-thread-local initialised by `init` in each green thread that uses it.
    pub const fn new(init: fn() -> T) -> GreenLocal<T> {
        GreenLocal { init }
    }

    /// Runs `f` with this green thread's value (this OS thread's, outside the runtime).
    ///
    /// The reference must not be sent to another green thread; it stays valid across parks
    /// and yields because the value belongs to the green thread, not to the worker.
    pub fn with<R>(&'static self, f: impl FnOnce(&T) -> R) -> R {
        let key = self as *const GreenLocal<T> as usize;
        let t = context::current_task_ptr();
        if t.is_null() {
            let p = OS_LOCALS.with(|l| l.borrow_mut().get_or_init(key, self.init));
            // SAFETY: values are boxed and live until the OS thread exits; the borrow of the
            // map ended above, so `f` may use other locals.
            return f(unsafe { &*p });
        }
        // SAFETY: the locals of the running green thread are touched only by that green thread;
        // the map borrow ends before `f` runs, and boxed values live until the thread finishes.
        let p = unsafe { (*t).local(key, self.init) };
        // SAFETY: as above.
        f(unsafe { &*p })
    }
}

/// Drops the locals of a finishing green thread, on its own stack.
pub(crate) fn clear_task_locals(t: &Task) {
    // SAFETY: called by the green thread itself at its end.
    unsafe { t.clear_locals() }
}
