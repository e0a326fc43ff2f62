//! Thin OS wrappers: futex wait/wake, CPU pinning, page size, CPU time.

use std::sync::atomic::AtomicU32;

/// Blocks while `*word == expected` (spurious returns are possible).
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32) {
    futex_wait_until(word, expected, None);
}

/// Blocks while `*word == expected`, for at most `d` (a futex wait with a relative timeout);
/// returns early on a wake-up, a signal or a changed word, which callers re-check.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn futex_wait_for(word: &AtomicU32, expected: u32, d: std::time::Duration) {
    let ts = libc::timespec {
        tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    futex_wait_until(word, expected, Some(&ts));
}

/// FUTEX_WAIT on `word` with an optional relative timeout.
#[cfg_attr(loom, allow(dead_code))]
fn futex_wait_until(word: &AtomicU32, expected: u32, timeout: Option<&libc::timespec>) {
    let ts = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: FUTEX_WAIT_PRIVATE reads the u32 at a valid, aligned address we borrow, and the
    // timeout (null: wait indefinitely) at a valid timespec the caller borrows (a relative time
    // for FUTEX_WAIT). Errors (EAGAIN, EINTR, ETIMEDOUT) are spurious returns for our callers.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ts,
        );
    }
}

/// Wakes up to `n` threads blocked on `word`.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: FUTEX_WAKE_PRIVATE only uses the address as a key.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        );
    }
}

/// Pins the calling OS thread to `cpu`.
pub(crate) fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain data, zeroed is the empty set; cpu < CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; pointer and size describe `set`.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Gives the calling OS thread the CPU set of the process's main thread (the set `taskset` or
/// `mpirun` bound the process to), undoing a pin it inherited from a pinned worker.
pub(crate) fn unpin_to_process_set() -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data, zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: getpid() names the main thread; pointer and size describe `set`.
    if unsafe { libc::sched_getaffinity(libc::getpid(), size, &mut set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pid 0 is the calling thread; pointer and size describe `set`.
    if unsafe { libc::sched_setaffinity(0, size, &set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The system page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// CPU time (user + system) consumed by the whole process so far.
pub fn process_cpu_time() -> std::time::Duration {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// `membarrier` commands (linux/membarrier.h).
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// Registers the process for `MEMBARRIER_CMD_PRIVATE_EXPEDITED`; whether the kernel accepted.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn membarrier_register() -> bool {
    // SAFETY: membarrier takes two integers and touches no memory of ours.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
            0,
        ) == 0
    }
}

/// Makes every running thread of the process pass a full memory barrier; whether it did.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn membarrier_private() -> bool {
    // SAFETY: as in `membarrier_register`.
    unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0 }
}
