//! Probes what this machine can count so that tests needing perf run where it works and are
//! reported as ignored, with the reason, where it does not:
//!
//! - `cfg(footprint_hw_pmu)`: a hardware `cycles` counter opens on the build thread;
//! - `cfg(footprint_perf)`: a software `task-clock` counter opens (perf_event_open is not
//!   blocked by a seccomp filter or `perf_event_paranoid` 3).
//!
//! Override with `FOOTPRINT_HW_PMU=1`/`0` and `FOOTPRINT_PERF=1`/`0` (forced on, the tests
//! then fail loudly if the counters cannot be opened).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(footprint_hw_pmu)");
    println!("cargo::rustc-check-cfg=cfg(footprint_perf)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=FOOTPRINT_HW_PMU");
    println!("cargo::rerun-if-env-changed=FOOTPRINT_PERF");
    println!("cargo::rerun-if-changed=/proc/sys/kernel/perf_event_paranoid");

    let native = std::env::var("HOST").ok() == std::env::var("TARGET").ok()
        && std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let decide = |var: &str, probe: &dyn Fn() -> bool| match std::env::var(var).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => native && probe(),
    };
    if decide("FOOTPRINT_HW_PMU", &|| {
        can_open(PERF_TYPE_HARDWARE, HW_CPU_CYCLES)
    }) {
        println!("cargo::rustc-cfg=footprint_hw_pmu");
    }
    if decide("FOOTPRINT_PERF", &|| {
        can_open(PERF_TYPE_SOFTWARE, SW_TASK_CLOCK)
    }) {
        println!("cargo::rustc-cfg=footprint_perf");
    }
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const HW_CPU_CYCLES: u64 = 0;
const SW_TASK_CLOCK: u64 = 1;

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

#[cfg(target_os = "linux")]
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

#[cfg(not(target_os = "linux"))]
fn can_open(_type: u32, _config: u64) -> bool {
    false
}
