//! What the kernel says about a worker's OS thread: whether it is blocked, in which system
//! call, at which kernel wait point (`/proc/self/task/<tid>/{stat,syscall,wchan}`, Linux).

/// The calling thread's kernel thread id.
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// A worker's OS thread as the kernel sees it (fields `None` where unreadable).
#[derive(Clone, Debug, Default)]
pub(crate) struct ThreadState {
    /// The scheduler state letter of `stat` (`R` running or runnable, `S` sleeping, `D`
    /// uninterruptible, ...).
    pub(crate) state: Option<char>,
    /// The system call it is in (`None`: not in one, or unknown).
    pub(crate) syscall: Option<libc::c_long>,
    /// The kernel function it waits in (`wchan`), when it waits.
    pub(crate) wchan: Option<String>,
}

impl ThreadState {
    /// Whether the thread is blocked in the kernel rather than computing (or unknown: then
    /// assumed blocked, as a worker that has not switched for that long most likely is).
    pub(crate) fn blocked(&self) -> bool {
        match self.state {
            Some('S' | 'D' | 'T' | 't') => true,
            Some(_) => false,
            None => true,
        }
    }

    /// "the system call futex (wchan futex_wait_queue)" and a hint at its usual cause, or
    /// what is known.
    pub(crate) fn describe(&self) -> String {
        let mut out = match self.syscall {
            Some(nr) => {
                let name = syscall_name(nr);
                let mut s = match name {
                    Some(n) => format!("blocked in the system call {n}"),
                    None => format!("blocked in system call number {nr}"),
                };
                if let Some(hint) = name.and_then(hint_for) {
                    s.push_str(&format!(" ({hint})"));
                }
                s
            }
            None if self.state.is_some() => "blocked in the kernel (not in a system call)".into(),
            None => "blocked (the kernel's view of the thread is not readable here)".into(),
        };
        if let Some(w) = &self.wchan {
            out.push_str(&format!(", waiting in the kernel at {w}"));
        }
        out
    }
}

/// Nanoseconds kernel thread `tid` of this process has spent on a CPU (`schedstat`), if
/// readable.
pub(crate) fn cpu_ns(tid: i32) -> Option<u64> {
    if tid <= 0 {
        return None;
    }
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Whether a thread that used `cpu` nanoseconds of CPU over `wall` waited rather than
/// computed: under 2 % of the time on a CPU. A computing thread on a machine loaded
/// several times over still gets its share (tens of percent); a blocked one gets none. A
/// look at the state letter alone is not enough: a computing thread caught in a short system
/// call (an allocator's `mprotect`) reads as sleeping at that instant.
pub(crate) fn mostly_waiting(cpu: u64, wall: std::time::Duration) -> bool {
    u128::from(cpu) * 50 < wall.as_nanos()
}

/// Reads the state of kernel thread `tid` of this process.
pub(crate) fn thread_state(tid: i32) -> ThreadState {
    if tid <= 0 {
        return ThreadState::default();
    }
    let dir = format!("/proc/self/task/{tid}");
    let state = std::fs::read_to_string(format!("{dir}/stat"))
        .ok()
        .and_then(|s| {
            // "pid (comm) S ...": the letter follows the last ')' (comm may hold spaces).
            let rest = &s[s.rfind(')')? + 1..];
            rest.trim_start().chars().next()
        });
    let syscall = std::fs::read_to_string(format!("{dir}/syscall"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<libc::c_long>().ok())
        .filter(|&nr| nr >= 0);
    let wchan = std::fs::read_to_string(format!("{dir}/wchan"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s != "0");
    ThreadState {
        state,
        syscall,
        wchan,
    }
}

/// Names of the system calls a blocking call on a worker is usually in.
fn syscall_name(nr: libc::c_long) -> Option<&'static str> {
    let table: &[(libc::c_long, &str)] = &[
        (libc::SYS_futex, "futex"),
        (libc::SYS_clock_nanosleep, "clock_nanosleep"),
        (libc::SYS_read, "read"),
        (libc::SYS_write, "write"),
        (libc::SYS_readv, "readv"),
        (libc::SYS_writev, "writev"),
        (libc::SYS_pread64, "pread64"),
        (libc::SYS_pwrite64, "pwrite64"),
        (libc::SYS_ppoll, "ppoll"),
        (libc::SYS_pselect6, "pselect6"),
        (libc::SYS_epoll_pwait, "epoll_pwait"),
        (libc::SYS_recvfrom, "recvfrom"),
        (libc::SYS_recvmsg, "recvmsg"),
        (libc::SYS_sendto, "sendto"),
        (libc::SYS_sendmsg, "sendmsg"),
        (libc::SYS_accept4, "accept4"),
        (libc::SYS_connect, "connect"),
        (libc::SYS_wait4, "wait4"),
        (libc::SYS_waitid, "waitid"),
        (libc::SYS_openat, "openat"),
        (libc::SYS_fsync, "fsync"),
        (libc::SYS_fdatasync, "fdatasync"),
        (libc::SYS_flock, "flock"),
        (libc::SYS_fcntl, "fcntl"),
        (libc::SYS_sched_yield, "sched_yield"),
        (libc::SYS_mmap, "mmap"),
        (libc::SYS_munmap, "munmap"),
        (libc::SYS_mprotect, "mprotect"),
        (libc::SYS_madvise, "madvise"),
        (libc::SYS_brk, "brk"),
        #[cfg(target_arch = "x86_64")]
        (libc::SYS_nanosleep, "nanosleep"),
        #[cfg(target_arch = "x86_64")]
        (libc::SYS_poll, "poll"),
        #[cfg(target_arch = "x86_64")]
        (libc::SYS_select, "select"),
        #[cfg(target_arch = "x86_64")]
        (libc::SYS_epoll_wait, "epoll_wait"),
        #[cfg(target_arch = "x86_64")]
        (libc::SYS_accept, "accept"),
        #[cfg(target_arch = "x86_64")]
        (libc::SYS_pause, "pause"),
    ];
    table.iter().find(|&&(n, _)| n == nr).map(|&(_, name)| name)
}

/// What usually puts a worker into system call `name`.
fn hint_for(name: &str) -> Option<&'static str> {
    Some(match name {
        "futex" => "a std::sync lock, condvar or channel, or another OS-level wait",
        "clock_nanosleep" | "nanosleep" => "std::thread::sleep or another OS-level sleep",
        "read" | "readv" | "pread64" | "recvfrom" | "recvmsg" | "poll" | "ppoll" | "select"
        | "pselect6" | "epoll_wait" | "epoll_pwait" | "accept" | "accept4" => "blocking I/O",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleeping_thread_is_blocked_in_a_sleep_call() {
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            tx.send(gettid()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(400));
        });
        let tid = rx.recv().unwrap();
        // The thread is about to sleep: look until the kernel shows it asleep.
        let start = std::time::Instant::now();
        let mut st = thread_state(tid);
        while !(st.blocked() && st.syscall.is_some()) && start.elapsed().as_millis() < 300 {
            std::thread::yield_now();
            st = thread_state(tid);
        }
        h.join().unwrap();
        assert!(st.blocked(), "{st:?}");
        let d = st.describe();
        assert!(d.contains("nanosleep"), "{d}");
    }

    #[test]
    fn waiting_means_next_to_no_cpu() {
        let ms = std::time::Duration::from_millis;
        assert!(mostly_waiting(0, ms(100)));
        assert!(mostly_waiting(1_000_000, ms(100)));
        // A computing thread getting an eighth of a CPU (a machine loaded 8 times over).
        assert!(!mostly_waiting(12_500_000, ms(100)));
    }

    #[test]
    fn the_calling_thread_is_not_blocked() {
        let st = thread_state(gettid());
        assert_eq!(st.state, Some('R'), "{st:?}");
        assert!(!st.blocked());
    }
}
