//! Giving both sides of a comparison the same CPUs: the first `w` CPUs of the process's allowed
//! set (all of them when `w` exceeds it: oversubscribed runs).

/// The CPUs a side with `w` workers runs on.
pub fn first(allowed: &[usize], w: usize) -> Vec<usize> {
    allowed[..w.min(allowed.len())].to_vec()
}

/// Restricts the calling thread, and so every
/// thread it starts from then on (a runtime's workers, a rayon pool, OS-thread peers), to the
/// first `w` CPUs of the allowed set when `w` is less than its size, so that both sides of a
/// comparison at `w` workers run on the same CPUs; leaves it as it is otherwise. Call it first
/// thing in `main` of a program that compares at one worker count.
pub fn keep_first(w: usize) {
    let allowed = footprint::affinity::allowed_cpus().unwrap_or_default();
    if w < allowed.len() {
        restrict_current(&first(&allowed, w));
    }
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

/// Runs `f` on a scoped OS thread restricted to `cpus`; the threads `f` starts inherit the
/// restriction (Linux gives a new thread its creator's CPU mask), so a peer that starts its
/// own threads runs on `cpus` whole. On the calling thread when `cpus` is empty. A panic in
/// `f` goes on in the caller.
pub fn on_cpus<R: Send>(cpus: &[usize], f: impl FnOnce() -> R + Send) -> R {
    if cpus.is_empty() {
        return f();
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            restrict_current(cpus);
            f()
        })
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
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
