//! Child processes of the report binary: the report re-runs itself with a hidden subcommand when
//! a measurement needs a process of its own (peak memory) or a hard time limit. Every child is
//! killed when its [`ChildGuard`] is dropped and, through `PR_SET_PDEATHSIG`, when the thread that
//! started it dies, so an interrupted report leaves none behind.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::workloads::multiprog::die_with_parent;

/// The hidden subcommand that runs one measurement in a child (see `peers::child_main`).
pub const SUBCOMMAND: &str = "__measure";

/// A started child; killed and reaped on drop.
pub struct ChildGuard(Option<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            // Only this child, by its own handle; an error means it has already exited.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts this binary with `args`, stdout piped, stderr piped, dying with its parent thread.
fn start(args: &[String]) -> Result<ChildGuard, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the report's own path: {e}"))?;
    let mut command = Command::new(exe);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    die_with_parent(&mut command);
    command
        .spawn()
        .map(|c| ChildGuard(Some(c)))
        .map_err(|e| format!("starting a child report process: {e}"))
}

/// Runs this binary with `args` and waits at most `limit`. Returns the `key value` lines the child
/// printed on stdout, or why it failed (exit status or time-out, and the end of its stderr).
pub fn run(args: &[String], limit: Duration) -> Result<BTreeMap<String, String>, String> {
    let mut guard = start(args)?;
    let child = guard.0.as_mut().expect("started");
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    // Drain both pipes on threads so that a chatty child cannot block on a full pipe.
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for the child: {e}")),
        }
    };
    let Some(status) = status else {
        drop(guard); // kills it; the pipes close and the reader threads end
        return Err(format!("timed out after {limit:?} ({})", args.join(" ")));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("{status}: {}", tail.join(" / ")));
    }
    Ok(stdout
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect())
}

/// This process's peak resident set size in KiB: `VmHWM` of `/proc/self/status`, which starts
/// afresh at `exec` (unlike `ru_maxrss`, which keeps the forking parent's peak), else
/// `getrusage(RUSAGE_SELF).ru_maxrss`.
pub fn peak_rss_kib() -> u64 {
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        });
    if let Some(kib) = hwm {
        return kib;
    }
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF and a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0;
    }
    usage.ru_maxrss as u64
}
