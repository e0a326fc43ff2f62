//! `os::cpus()` answers the process's CPU count even when a pinned thread asks first (its own
//! process: the answer is cached for the process, so no other test may ask before).

use footprint_locks::os;

#[test]
fn a_pinned_thread_asking_first_gets_the_process_count() {
    let process = std::thread::available_parallelism().map_or(1, |n| n.get());
    let asked = std::thread::spawn(|| {
        // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes bit 0 of it.
        let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(0, &mut one) };
        // SAFETY: `one` is a valid set of the size passed; 0 names the calling thread.
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) };
        assert_eq!(rc, 0, "pinning to CPU 0");
        assert_eq!(
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            1,
            "the pinned thread sees one CPU"
        );
        os::cpus()
    })
    .join()
    .unwrap();
    assert_eq!(asked, process);
    assert_eq!(os::cpus(), process, "cached");
}
