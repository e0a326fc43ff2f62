//! Green-thread stacks: carved from large slabs (one memory mapping per 64 MiB, not one per
//! stack), with or without a guard page each.
//!
//! A stack of the runtime's size is a slot of a slab. The slab is mapped once, read-write; the
//! slots are handed out in address order as they are first needed, so untouched slots cost
//! neither memory nor a mapping. With guard pages on, carving a slot makes its lowest page
//! inaccessible, in one of two ways, chosen once per process by a probe ([`guard_kind`]):
//! - **lightweight guard regions** (`madvise(MADV_GUARD_INSTALL)`, Linux 6.13+): the page is
//!   marked in the page tables and the slab stays one mapping, so guarded stacks are bounded by
//!   memory and address space only, like unguarded ones;
//! - **`mprotect(PROT_NONE)`** elsewhere: this splits the slab's mapping, so each guarded stack
//!   costs two mappings of the process's `vm.max_map_count` (65,530 by default), as a stack of
//!   its own would, and about 30,000 guarded stacks fit.
//!
//! Slots are never unmapped while the runtime lives (the pools keep them); the slabs are unmapped
//! when the runtime's state is dropped. A lightweight guard survives `MADV_DONTNEED`
//! ([`GreenStack::release_memory`]), so a trimmed stack keeps its guard.
//!
//! A stack of another size (`GreenBuilder::stack_size`) is a mapping of its own, unmapped when
//! the stack is dropped.

use crate::error::Error;
use corosensei::stack::{Stack, StackPointer};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Default usable stack size of a green thread: 2 MiB, plus one guard page that is not counted.
///
/// Stacks are `mmap`ed and touched lazily, so a green thread that uses 8 KiB costs 8 KiB of
/// memory (plus whatever its pooled stack touched before). With this size fork-join recursion
/// 1,500 levels deep fits in a debug build; deeper recursion wants `stack_size`.
pub const DEFAULT_STACK_SIZE: usize = 2 << 20;

/// Smallest accepted green-thread stack (usable bytes): room for the runtime's own frames, the
/// panic machinery and a little user code.
pub const MIN_STACK_SIZE: usize = 64 << 10;

/// Largest accepted green-thread stack (usable bytes): 1 TiB. Larger sizes are refused by
/// [`Builder::build`](crate::Builder::build) and [`GreenBuilder::spawn`](crate::GreenBuilder::spawn) with [`Error::StackTooLarge`]; a size below it
/// that the system cannot map fails when the thread first runs, with [`Error::Stack`].
pub const MAX_STACK_SIZE: usize = 1 << 40;

/// The stack-size check shared by [`Builder::build`](crate::Builder::build) and [`GreenBuilder::spawn`](crate::GreenBuilder::spawn).
pub(crate) fn check_stack_size(bytes: usize) -> Result<(), Error> {
    if bytes < MIN_STACK_SIZE {
        return Err(Error::StackTooSmall {
            requested: bytes,
            minimum: MIN_STACK_SIZE,
        });
    }
    if bytes > MAX_STACK_SIZE {
        return Err(Error::StackTooLarge {
            requested: bytes,
            maximum: MAX_STACK_SIZE,
        });
    }
    Ok(())
}

/// Bytes of address space mapped per slab (a slab holds at least one stack).
const SLAB_BYTES: usize = 64 << 20;

/// A green thread's stack: a slab slot, or a mapping of its own.
pub(crate) struct GreenStack {
    /// Highest address (the stack grows down from here).
    top: usize,
    /// Lowest address of the region, guard page included when there is one.
    limit: usize,
    /// `Some(len)`: a mapping of its own of `len` bytes at `limit`, unmapped on drop.
    own_len: Option<usize>,
}

// SAFETY: the stack is plain memory that this value owns exclusively while it exists (slab slots
// are handed out once and come back to a pool); moving it between threads is fine.
unsafe impl Send for GreenStack {}

// SAFETY: `top` and `limit` bound a read-write region of at least the requested size, page
// aligned (so 16-byte aligned) at the top, that stays mapped while this value lives; below
// `limit + page` lies the guard page when guard pages are on.
unsafe impl Stack for GreenStack {
    #[inline]
    fn base(&self) -> StackPointer {
        StackPointer::new(self.top).expect("stack top is not null")
    }

    #[inline]
    fn limit(&self) -> StackPointer {
        StackPointer::new(self.limit).expect("stack limit is not null")
    }
}

impl Drop for GreenStack {
    fn drop(&mut self) {
        if let Some(len) = self.own_len {
            // SAFETY: we mapped exactly [limit, limit + len) in `GreenStack::own` and nobody
            // else refers to it once the stack is dropped.
            unsafe {
                libc::munmap(self.limit as *mut libc::c_void, len);
            }
        }
    }
}

/// Bytes from one stack's lowest address to the next: the usable size rounded up to pages,
/// plus the guard page. `None` when that overflows.
pub(crate) fn stride(size: usize, guard: bool) -> Option<usize> {
    let page = crate::sys::page_size();
    let usable = size.checked_add(page - 1)? & !(page - 1);
    usable.checked_add(if guard { page } else { 0 })
}

fn map(len: usize) -> io::Result<usize> {
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches no
    // existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p as usize)
}

/// `madvise` advice that installs a lightweight guard region (Linux 6.13+,
/// `include/uapi/asm-generic/mman-common.h`); the libc crate does not name it yet.
const MADV_GUARD_INSTALL: libc::c_int = 102;

/// How guard pages are made in this process (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GuardKind {
    /// `madvise(MADV_GUARD_INSTALL)`: no extra mapping per stack.
    Lightweight,
    /// `mprotect(PROT_NONE)`: two mappings per stack.
    Mprotect,
}

impl GuardKind {
    /// In words, for messages.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            GuardKind::Lightweight => {
                "lightweight guard regions (MADV_GUARD_INSTALL: no extra mapping per stack)"
            }
            GuardKind::Mprotect => {
                "mprotect guard pages (two memory mappings per stack, bounded by vm.max_map_count)"
            }
        }
    }
}

/// The guard kind of this process: probed once, by installing a lightweight guard on a page of
/// a scratch mapping (a kernel without them answers `EINVAL`). The environment variable
/// `FOOTPRINT_GUARDS_MPROTECT` (any value) forces the `mprotect` fallback, to try what a kernel
/// without lightweight guards does (the tests of the mapping limit use it).
pub(crate) fn guard_kind() -> GuardKind {
    static KIND: std::sync::OnceLock<GuardKind> = std::sync::OnceLock::new();
    *KIND.get_or_init(|| {
        if std::env::var_os("FOOTPRINT_GUARDS_MPROTECT").is_some() {
            return GuardKind::Mprotect;
        }
        let page = crate::sys::page_size();
        let Ok(at) = map(page) else {
            return GuardKind::Mprotect;
        };
        // SAFETY: `at` is a page we just mapped and own; the advice only marks it.
        let rc = unsafe { libc::madvise(at as *mut libc::c_void, page, MADV_GUARD_INSTALL) };
        // SAFETY: unmapping the scratch page we mapped (its guard marker goes with it).
        unsafe { libc::munmap(at as *mut libc::c_void, page) };
        if rc == 0 {
            GuardKind::Lightweight
        } else {
            GuardKind::Mprotect
        }
    })
}

/// Makes the page at `at` inaccessible (the guard page of the stack above it).
fn protect_guard(at: usize) -> io::Result<()> {
    let page = crate::sys::page_size();
    // SAFETY: `at` is the page-aligned lowest page of a region we mapped and own; either call
    // only changes that page's access.
    let rc = unsafe {
        match guard_kind() {
            GuardKind::Lightweight => {
                libc::madvise(at as *mut libc::c_void, page, MADV_GUARD_INSTALL)
            }
            GuardKind::Mprotect => libc::mprotect(at as *mut libc::c_void, page, 0),
        }
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl GreenStack {
    /// A stack of `size` usable bytes in a mapping of its own.
    pub(crate) fn own(size: usize, guard: bool) -> io::Result<GreenStack> {
        let len = stride(size, guard).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
        let base = map(len)?;
        let s = GreenStack {
            top: base + len,
            limit: base,
            own_len: Some(len),
        };
        if guard {
            protect_guard(base)?; // on error `s` drops and unmaps
        }
        Ok(s)
    }
}

impl GreenStack {
    /// Hands the stack's touched pages back to the system (they read as zero when next
    /// touched); the stack stays mapped and usable.
    pub(crate) fn release_memory(&self) {
        // SAFETY: [limit, top) is mapped and owned by this stack, which no thread runs on (it
        // sits in a pool); MADV_DONTNEED only drops its private pages.
        unsafe {
            libc::madvise(
                self.limit as *mut libc::c_void,
                self.top - self.limit,
                libc::MADV_DONTNEED,
            );
        }
    }
}

/// The slabs of one runtime, from which stacks of its size are carved.
pub(crate) struct Slabs {
    stride: usize,
    guard: bool,
    state: Mutex<SlabState>,
}

struct SlabState {
    /// (base, len) of every slab mapped.
    mapped: Vec<(usize, usize)>,
    /// The next uncarved slot and the end of the current slab.
    next: usize,
    end: usize,
}

impl Slabs {
    /// Slabs for stacks of `size` usable bytes (`stride(size, guard)` must be `Some`).
    pub(crate) fn new(size: usize, guard: bool) -> Slabs {
        Slabs {
            stride: stride(size, guard).expect("stack size validated by Builder::build"),
            guard,
            state: Mutex::new(SlabState {
                mapped: Vec::new(),
                next: 0,
                end: 0,
            }),
        }
    }

    /// The slabs mapped so far, as (base, length).
    pub(crate) fn mapped(&self) -> Vec<(usize, usize)> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.mapped.clone()
    }

    /// Carves a fresh stack (mapping a new slab when the current one is used up).
    pub(crate) fn carve(&self) -> io::Result<GreenStack> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.end - st.next < self.stride {
            let len = (SLAB_BYTES / self.stride).max(1) * self.stride;
            let base = map(len)?;
            st.mapped.push((base, len));
            st.next = base;
            st.end = base + len;
        }
        let at = st.next;
        if self.guard {
            protect_guard(at)?;
        }
        st.next += self.stride;
        Ok(GreenStack {
            top: at + self.stride,
            limit: at,
            own_len: None,
        })
    }
}

impl Drop for Slabs {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        for &(base, len) in &st.mapped {
            // SAFETY: the runtime is gone: no green thread runs and no pool holds a slot any
            // more, so nothing refers to the slab we mapped.
            unsafe {
                libc::munmap(base as *mut libc::c_void, len);
            }
        }
    }
}

/// The runtime's stack accounting: the optional cap on live stacks and the last refusal.
pub(crate) struct StackLimits {
    /// `Builder::max_stacks` (usize::MAX: none).
    pub(crate) max: usize,
    /// Stacks taken and not returned; kept only when `max` is set.
    pub(crate) live: AtomicUsize,
    /// A stack could not be made, and none came back since: spawning is refused.
    pub(crate) refused: AtomicBool,
    /// The OS error of that refusal.
    pub(crate) refused_errno: AtomicI32,
    /// Green threads that could not get a stack when they first ran (`stack_refusal.rs`).
    pub(crate) failures: std::sync::atomic::AtomicU64,
    /// The first of them was said (once per runtime).
    pub(crate) said: AtomicBool,
}

impl StackLimits {
    pub(crate) fn new(max: Option<usize>) -> StackLimits {
        StackLimits {
            max: max.unwrap_or(usize::MAX),
            live: AtomicUsize::new(0),
            refused: AtomicBool::new(false),
            refused_errno: AtomicI32::new(0),
            failures: std::sync::atomic::AtomicU64::new(0),
            said: AtomicBool::new(false),
        }
    }

    /// Whether a new green thread may be spawned now: the error naming the limit when the
    /// live-stack cap is reached or the last stack could not be made.
    #[inline]
    pub(crate) fn admit(&self) -> Result<(), Error> {
        if self.max != usize::MAX && self.live.load(Ordering::Relaxed) >= self.max {
            return Err(Error::StackLimit { limit: self.max });
        }
        if self.refused.load(Ordering::Relaxed) {
            let errno = self.refused_errno.load(Ordering::Relaxed);
            return Err(Error::Stack(std::io::Error::from_raw_os_error(errno)));
        }
        Ok(())
    }

    /// Counts a stack taken; the cap error when none may be.
    #[inline]
    pub(crate) fn take(&self) -> Result<(), Error> {
        if self.max == usize::MAX {
            return Ok(());
        }
        self.live
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max).then_some(n + 1)
            })
            .map(drop)
            .map_err(|_| Error::StackLimit { limit: self.max })
    }

    /// Counts a stack returned (or dropped).
    #[inline]
    pub(crate) fn give_back(&self) {
        if self.max != usize::MAX {
            self.live.fetch_sub(1, Ordering::Relaxed);
        }
        if self.refused.load(Ordering::Relaxed) {
            self.refused.store(false, Ordering::Relaxed);
        }
    }

    /// Uncounts a stack counted by `take` that could not be made.
    pub(crate) fn untake(&self) {
        if self.max != usize::MAX {
            self.live.fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn refuse(&self, e: &std::io::Error) {
        self.refused_errno
            .store(e.raw_os_error().unwrap_or(libc::ENOMEM), Ordering::Relaxed);
        self.refused.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_disjoint_page_aligned_and_writable() {
        let slabs = Slabs::new(64 << 10, true);
        let a = slabs.carve().unwrap();
        let b = slabs.carve().unwrap();
        let page = crate::sys::page_size();
        for s in [&a, &b] {
            assert_eq!(s.top % page, 0);
            assert!(s.top - s.limit >= (64 << 10) + page);
            // SAFETY: the byte just below the top is in the slot's read-write part.
            unsafe { *((s.top - 1) as *mut u8) = 7 };
        }
        assert!(a.top <= b.limit || b.top <= a.limit, "slots overlap");
    }

    /// The memory mappings of `/proc/self/maps` that overlap `[lo, hi)`.
    fn mappings_in(lo: usize, hi: usize) -> usize {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .filter_map(|l| {
                let range = l.split_whitespace().next()?;
                let (a, b) = range.split_once('-')?;
                Some((
                    usize::from_str_radix(a, 16).ok()?,
                    usize::from_str_radix(b, 16).ok()?,
                ))
            })
            .filter(|&(a, b)| a < hi && b > lo)
            .count()
    }

    /// Eight guarded slots: one mapping for the slab with lightweight guards, two per slot with
    /// `mprotect` (the guard splits the mapping). That the guards trap is the overflow tests'
    /// part (`tests/sched.rs`).
    #[test]
    fn guarded_slots_cost_mappings_only_without_lightweight_guards() {
        let slabs = Slabs::new(64 << 10, true);
        let stacks: Vec<_> = (0..8).map(|_| slabs.carve().unwrap()).collect();
        let lo = stacks.iter().map(|s| s.limit).min().unwrap();
        let hi = stacks.iter().map(|s| s.top).max().unwrap();
        let n = mappings_in(lo, hi);
        match guard_kind() {
            GuardKind::Lightweight => assert_eq!(n, 1, "a slab with lightweight guards"),
            GuardKind::Mprotect => assert!(n >= 16, "{n} mappings for 8 mprotect guards"),
        }
    }

    /// Four OS threads take and return stacks against a cap of 3: no more than 3 are ever held
    /// at once, every refusal is the cap's error, and the count ends at zero.
    #[test]
    fn cap_holds_under_concurrent_takes() {
        let limits = std::sync::Arc::new(StackLimits::new(Some(3)));
        let held = std::sync::Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (limits, held) = (limits.clone(), held.clone());
                std::thread::spawn(move || {
                    let mut refused = 0usize;
                    for _ in 0..20_000 {
                        match limits.take() {
                            Ok(()) => {
                                let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                                assert!(now <= 3, "{now} stacks held under a cap of 3");
                                held.fetch_sub(1, Ordering::SeqCst);
                                limits.give_back();
                            }
                            Err(Error::StackLimit { limit: 3 }) => refused += 1,
                            Err(e) => panic!("unexpected {e:?}"),
                        }
                    }
                    refused
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(limits.live.load(Ordering::SeqCst), 0);
        assert!(limits.admit().is_ok());
    }

    #[test]
    fn refusal_lasts_until_a_stack_comes_back() {
        let limits = StackLimits::new(None);
        limits.refuse(&io::Error::from_raw_os_error(libc::ENOMEM));
        assert!(matches!(limits.admit(), Err(Error::Stack(_))));
        limits.give_back();
        assert!(limits.admit().is_ok());
    }

    #[test]
    fn stride_rejects_overflow() {
        assert_eq!(stride(usize::MAX, true), None);
        assert_eq!(stride(4096, false), Some(4096));
    }
}
