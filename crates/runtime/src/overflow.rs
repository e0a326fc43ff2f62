//! Stack-overflow handling for green threads.
//!
//! Every green-thread stack has a guard page below it. A `SIGSEGV`/`SIGBUS` handler, running on
//! a per-worker alternate signal stack, checks whether the fault hit the guard page of the green
//! thread running on that OS thread. If so (x86-64 Linux, and the thread is not inside a `join`
//! or running a joined thread inline, whose frames others still reference), it uses corosensei's
//! trap support to
//! make the coroutine return at once: the joiner gets `Err(String)` naming the thread and its
//! stack size, the worker keeps running and the overflowed stack is unmapped. The frames of the
//! overflowed thread are abandoned without running destructors: what it owned leaks and a lock it
//! held stays locked. On other targets the handler prints the same report and aborts. Faults that
//! are not green-thread overflows go to the previously installed handler (Rust's own stack
//! overflow reporter for OS threads, or the default action).

use crate::context;
use crate::task::Exit;
use std::sync::Once;

struct OldActions {
    segv: std::cell::UnsafeCell<libc::sigaction>,
    bus: std::cell::UnsafeCell<libc::sigaction>,
}

// SAFETY: written once inside `Once::call_once` before the handler is installed, read-only after.
unsafe impl Sync for OldActions {}

static OLD: OldActions = OldActions {
    // SAFETY: sigaction is plain data; all-zero is SIG_DFL with an empty mask.
    segv: std::cell::UnsafeCell::new(unsafe { std::mem::zeroed() }),
    // SAFETY: as above.
    bus: std::cell::UnsafeCell::new(unsafe { std::mem::zeroed() }),
};

/// Installs the process-wide handler (once).
pub(crate) fn install_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: we fill a zeroed sigaction with a valid handler and flags, and save the old
        // actions before any fault can reach our handler.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGSEGV, &sa, OLD.segv.get());
            libc::sigaction(libc::SIGBUS, &sa, OLD.bus.get());
        }
    });
}

/// An alternate signal stack for the calling worker thread (the handler must not run on the
/// overflowed stack).
pub(crate) struct AltStack {
    mem: *mut libc::c_void,
    len: usize,
}

const ALT_SIZE: usize = 64 << 10;

impl AltStack {
    /// Installs one unless the thread already has an alternate stack.
    pub(crate) fn install() -> Option<AltStack> {
        // SAFETY: querying with a null new stack only fills `old`.
        unsafe {
            let mut old: libc::stack_t = std::mem::zeroed();
            libc::sigaltstack(std::ptr::null(), &mut old);
            if old.ss_flags & libc::SS_DISABLE == 0 {
                return None;
            }
            let page = crate::sys::page_size();
            let len = ALT_SIZE + page;
            let mem = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if mem == libc::MAP_FAILED {
                return None;
            }
            // Guard page at the bottom of the signal stack.
            libc::mprotect(mem, page, libc::PROT_NONE);
            let st = libc::stack_t {
                ss_sp: mem.cast::<u8>().add(page).cast(),
                ss_flags: 0,
                ss_size: ALT_SIZE,
            };
            if libc::sigaltstack(&st, std::ptr::null_mut()) != 0 {
                libc::munmap(mem, len);
                return None;
            }
            Some(AltStack { mem, len })
        }
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        // SAFETY: disable the alternate stack of this thread, then unmap the memory we mapped.
        unsafe {
            let st = libc::stack_t {
                ss_sp: std::ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            };
            libc::sigaltstack(&st, std::ptr::null_mut());
            libc::munmap(self.mem, self.len);
        }
    }
}

fn write_stderr(bytes: &[u8]) {
    // SAFETY: write(2) is async-signal-safe; the buffer is valid.
    unsafe {
        libc::write(2, bytes.as_ptr().cast(), bytes.len());
    }
}

fn write_usize(mut v: usize) {
    let mut buf = [0u8; 24];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    write_stderr(&buf[i..]);
}

unsafe extern "C" fn handler(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    uctx: *mut libc::c_void,
) {
    let t = context::current_task_ptr();
    if !t.is_null() {
        // SAFETY: the task runs on this OS thread (we interrupted it); its trap fields were set by
        // this thread before resuming it.
        unsafe {
            if let Some((th, limit)) = (*t).trap_and_limit() {
                let addr = (*info).si_addr() as usize;
                let page = crate::sys::page_size();
                if addr >= limit && addr < limit + page {
                    let recoverable = !(*t).has_nested();
                    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
                    if recoverable {
                        let uc = uctx as *mut libc::ucontext_t;
                        let g = &mut (*uc).uc_mcontext.gregs;
                        let sp = g[libc::REG_RSP as usize] as usize;
                        if th.stack_ptr_in_bounds(sp) {
                            let regs = th.setup_trap_handler(|| Exit::Overflow);
                            g[libc::REG_RIP as usize] = regs.rip as i64;
                            g[libc::REG_RSP as usize] = regs.rsp as i64;
                            g[libc::REG_RBP as usize] = regs.rbp as i64;
                            g[libc::REG_RDI as usize] = regs.rdi as i64;
                            g[libc::REG_RSI as usize] = regs.rsi as i64;
                            return;
                        }
                    }
                    write_stderr(b"footprint: green thread ");
                    match (*t).name_str() {
                        Some(n) => {
                            write_stderr(b"'");
                            write_stderr(n.as_bytes());
                            write_stderr(b"'");
                        }
                        None => write_stderr(b"<unnamed>"),
                    }
                    write_stderr(b" overflowed its stack of ");
                    write_usize((*t).stack_size());
                    write_stderr(b" bytes");
                    if !recoverable {
                        write_stderr(b" inside a join (its stack is still referenced, so it cannot be abandoned)");
                    }
                    write_stderr(b"; aborting. Give green threads a larger stack with Builder::stack_size or GreenBuilder::stack_size\n");
                    libc::abort();
                }
            }
        }
    }
    // SAFETY: chain to the saved action for this signal.
    unsafe { chain(sig, info, uctx) }
}

unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    // SAFETY: OLD was filled before our handler was installed and is read-only now.
    unsafe {
        let old = if sig == libc::SIGBUS {
            &*OLD.bus.get()
        } else {
            &*OLD.segv.get()
        };
        let h = old.sa_sigaction;
        if h == libc::SIG_DFL || h == libc::SIG_IGN {
            // Restore the default action and return: the faulting instruction runs again and
            // the process gets the default treatment (core dump).
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        } else if old.sa_flags & libc::SA_SIGINFO != 0 {
            let f: unsafe extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(h);
            f(sig, info, uctx);
        } else {
            let f: unsafe extern "C" fn(libc::c_int) = std::mem::transmute(h);
            f(sig);
        }
    }
}
