//! Giving both sides of a comparison the same CPUs: the first `w` CPUs of the process's allowed
//! set (all of them when `w` exceeds it: oversubscribed runs).

/// The CPUs a side with `w` workers runs on.
pub fn first(allowed: &[usize], w: usize) -> Vec<usize> {
    allowed[..w.min(allowed.len())].to_vec()
}

/// Restricts the calling OS thread to `cpus` (`sched_setaffinity`); an empty set leaves it as
/// it is. A failure is reported once per call and the thread runs unrestricted.
pub fn restrict_current(cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c < libc::CPU_SETSIZE as usize {
            // SAFETY: c < CPU_SETSIZE, within the set.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
    }
    // SAFETY: pid 0 is the calling thread; pointer and size describe `set`.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        eprintln!(
            "scaling: sched_setaffinity failed ({}); this peer thread runs unrestricted",
            std::io::Error::last_os_error()
        );
    }
}

/// Runs `f(i)` on `n` scoped OS threads restricted to `cpus` and returns their results in order.
pub fn os_threads<R: Send>(n: usize, cpus: &[usize], f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                let f = &f;
                s.spawn(move || {
                    restrict_current(cpus);
                    f(i)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("peer thread panicked"))
            .collect()
    })
}
