//! What this machine lets a test count, found with a raw `perf_event_open` independent of the
//! crate under test (so that the crate's own capability probe can be checked against it).

/// The first 64 bytes of `struct perf_event_attr` (`PERF_ATTR_SIZE_VER0`), which every kernel
/// since 2.6.31 accepts.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttrV0 {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const HW_CPU_CYCLES: u64 = 0;
const SW_TASK_CLOCK: u64 = 1;

/// Whether a hardware `cycles` counter opens on the calling thread.
pub fn hardware_cycles_open() -> bool {
    can_open(PERF_TYPE_HARDWARE, HW_CPU_CYCLES)
}

/// Whether a software `task-clock` counter opens (perf_event_open not blocked by seccomp or
/// `perf_event_paranoid` 3).
pub fn task_clock_opens() -> bool {
    can_open(PERF_TYPE_SOFTWARE, SW_TASK_CLOCK)
}

fn can_open(type_: u32, config: u64) -> bool {
    const DISABLED: u64 = 1 << 0;
    const EXCLUDE_KERNEL: u64 = 1 << 5;
    const EXCLUDE_HV: u64 = 1 << 6;
    let attr = PerfEventAttrV0 {
        type_,
        size: std::mem::size_of::<PerfEventAttrV0>() as u32,
        config,
        flags: DISABLED | EXCLUDE_KERNEL | EXCLUDE_HV,
        ..PerfEventAttrV0::default()
    };
    // SAFETY: `attr` is a valid perf_event_attr of the size it declares; pid 0 / cpu -1 / no
    // group / no flags observe the calling thread. The returned fd is closed below.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttrV0,
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            0 as libc::c_ulong,
        )
    };
    if fd < 0 {
        return false;
    }
    // SAFETY: fd is a file descriptor we own and close once.
    unsafe { libc::close(fd as libc::c_int) };
    true
}
