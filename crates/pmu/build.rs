//! Probes for a hardware PMU so that hardware tests run where one exists and are reported as
//! ignored, with the reason, where none does (`cfg(footprint_hw_pmu)`).
//!
//! Override with `FOOTPRINT_HW_PMU=1` (force the hardware tests on: they then fail loudly if
//! the counters cannot be opened) or `FOOTPRINT_HW_PMU=0` (force them off).

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(footprint_hw_pmu)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=FOOTPRINT_HW_PMU");
    println!("cargo::rerun-if-changed=/sys/bus/event_source/devices");

    let forced = std::env::var("FOOTPRINT_HW_PMU").ok();
    let present = match forced.as_deref() {
        Some("1") => true,
        Some("0") => false,
        _ => probe(),
    };
    if present {
        println!("cargo::rustc-cfg=footprint_hw_pmu");
    }
}

fn probe() -> bool {
    // Only meaningful when building for the machine we run on (tests run where they build).
    if std::env::var("HOST").ok() != std::env::var("TARGET").ok() {
        return false;
    }
    let devices = Path::new("/sys/bus/event_source/devices");
    let has_cpu_pmu = ["cpu", "cpu_core", "cpu_atom"]
        .iter()
        .any(|d| devices.join(d).exists())
        || std::fs::read_dir(devices).is_ok_and(|dir| {
            dir.filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().starts_with("armv"))
        });
    // perf_event_paranoid 3 and above (Debian, Android) refuse all unprivileged counting.
    let paranoid_ok = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .is_some_and(|p| p <= 2);
    has_cpu_pmu && paranoid_ok
}
