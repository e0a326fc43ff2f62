//! Thin, safe wrappers over the system calls and `/proc` files this crate reads.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::error::PmuError;

/// A kernel thread id (`gettid()`), as `perf_event_open` and `/proc/self/task` use it.
pub type Tid = i32;

thread_local! {
    static CACHED_TID: Tid = raw_gettid();
}

fn raw_gettid() -> Tid {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// Kernel thread id of the calling thread (cached per thread, so it costs a TLS load).
pub fn current_tid() -> Tid {
    CACHED_TID.with(|t| *t)
}

/// Process id.
pub fn current_pid() -> i32 {
    std::process::id() as i32
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clocks used here always exist on Linux,
    // so the call cannot fail (and if it did, `ts` stays zero, which is still initialised).
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time of the calling thread in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_time_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The fields of `struct rusage` this crate uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rusage {
    /// User plus system CPU time, in nanoseconds (microsecond resolution).
    pub cpu_ns: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// Voluntary context switches (`ru_nvcsw`).
    pub voluntary_switches: u64,
    /// Involuntary context switches (`ru_nivcsw`).
    pub involuntary_switches: u64,
    /// Peak resident set size in KiB (`ru_maxrss`; for [`RusageWho::Thread`] Linux reports
    /// the process's peak too).
    pub max_rss_kib: u64,
}

/// Whose usage [`getrusage`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RusageWho {
    /// The calling thread only (`RUSAGE_THREAD`).
    Thread,
    /// The whole process, all its threads, live and exited (`RUSAGE_SELF`).
    Process,
}

/// `getrusage(2)`. Needs no permission.
pub fn getrusage(who: RusageWho) -> Result<Rusage, PmuError> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    let which = match who {
        RusageWho::Thread => libc::RUSAGE_THREAD,
        RusageWho::Process => libc::RUSAGE_SELF,
    };
    // SAFETY: `ru` points to writable memory of the right size and type.
    let rc = unsafe { libc::getrusage(which, ru.as_mut_ptr()) };
    if rc != 0 {
        return Err(PmuError::io("getrusage", io::Error::last_os_error()));
    }
    // SAFETY: getrusage succeeded and filled the struct (and it was zeroed before anyway).
    let ru = unsafe { ru.assume_init() };
    let tv_ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    Ok(Rusage {
        cpu_ns: tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime),
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
        voluntary_switches: ru.ru_nvcsw as u64,
        involuntary_switches: ru.ru_nivcsw as u64,
        max_rss_kib: ru.ru_maxrss.max(0) as u64,
    })
}

/// A `/proc` file kept open and re-read from offset 0 with `pread`, which makes the kernel
/// regenerate its contents; this saves the `open`/`close` pair on every sample.
#[derive(Debug)]
pub(crate) struct ProcFile {
    file: File,
    path: String,
}

impl ProcFile {
    pub(crate) fn open(path: String, tid: Tid) -> Result<ProcFile, PmuError> {
        match File::open(&path) {
            Ok(file) => Ok(ProcFile { file, path }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(PmuError::NoSuchThread { tid }),
            Err(e) => Err(PmuError::io(format!("opening {path}"), e)),
        }
    }

    /// Reads the whole file into `buf` (cleared first) and returns it as text.
    pub(crate) fn read<'b>(&self, buf: &'b mut Vec<u8>, tid: Tid) -> Result<&'b str, PmuError> {
        buf.clear();
        if buf.capacity() < 4096 {
            buf.reserve(4096);
        }
        loop {
            let len = buf.len();
            let cap = buf.capacity();
            buf.resize(cap, 0);
            let n = match self.file.read_at(&mut buf[len..], len as u64) {
                Ok(n) => n,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                    buf.truncate(len);
                    return Err(PmuError::NoSuchThread { tid });
                }
                Err(e) => {
                    buf.truncate(len);
                    return Err(PmuError::io(format!("reading {}", self.path), e));
                }
            };
            buf.truncate(len + n);
            if n == 0 {
                break;
            }
            if buf.len() < buf.capacity() {
                // A short read of a seq_file means we have it all; one more read would just
                // return 0, so stop here when there is room left over.
                break;
            }
            buf.reserve(buf.capacity());
        }
        if buf.is_empty() {
            // The kernel returns an empty file for a thread that has exited.
            return Err(PmuError::NoSuchThread { tid });
        }
        std::str::from_utf8(buf).map_err(|_| {
            PmuError::io(
                format!("reading {}", self.path),
                io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"),
            )
        })
    }
}

/// `/proc/<pid>/task/<tid>/schedstat`: "run_ns wait_ns timeslices".
pub(crate) fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
    let mut it = text.split_ascii_whitespace();
    let run = it.next()?.parse().ok()?;
    let wait = it.next()?.parse().ok()?;
    Some((run, wait))
}

/// Counts from `/proc/<pid>/task/<tid>/sched` (present with `CONFIG_SCHED_DEBUG`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SchedCounts {
    pub migrations: Option<u64>,
    pub voluntary: Option<u64>,
    pub involuntary: Option<u64>,
}

fn field_u64(line: &str, key: &str) -> Option<u64> {
    let rest = line.strip_prefix(key)?;
    let rest = rest.trim_start();
    let rest = rest.strip_prefix(':')?;
    rest.trim().parse().ok()
}

pub(crate) fn parse_sched(text: &str) -> SchedCounts {
    let mut out = SchedCounts::default();
    for line in text.lines() {
        if let Some(v) = field_u64(line, "se.nr_migrations") {
            out.migrations = Some(v);
        } else if let Some(v) = field_u64(line, "nr_voluntary_switches") {
            out.voluntary = Some(v);
        } else if let Some(v) = field_u64(line, "nr_involuntary_switches") {
            out.involuntary = Some(v);
        }
    }
    out
}

/// `voluntary_ctxt_switches` / `nonvoluntary_ctxt_switches` from `/proc/.../status`.
pub(crate) fn parse_status_switches(text: &str) -> Option<(u64, u64)> {
    let mut vol = None;
    let mut invol = None;
    for line in text.lines() {
        if let Some(v) = field_u64(line, "voluntary_ctxt_switches") {
            vol = Some(v);
        } else if let Some(v) = field_u64(line, "nonvoluntary_ctxt_switches") {
            invol = Some(v);
        }
    }
    Some((vol?, invol?))
}

/// `minflt` and `majflt` (fields 10 and 12) from `/proc/.../stat`. The command name (field 2)
/// may contain spaces and parentheses, so fields are counted after the last `)`.
pub(crate) fn parse_stat_faults(text: &str) -> Option<(u64, u64)> {
    let after = &text[text.rfind(')')? + 1..];
    let mut it = after.split_ascii_whitespace();
    // Fields after the name start at field 3 (state); minflt is field 10, majflt field 12.
    let minflt = it.nth(7)?.parse().ok()?;
    let majflt = it.nth(1)?.parse().ok()?;
    Some((minflt, majflt))
}

/// Live thread ids of this process, from `/proc/self/task`.
pub fn process_threads() -> Result<Vec<Tid>, PmuError> {
    let dir = std::fs::read_dir("/proc/self/task")
        .map_err(|e| PmuError::io("listing /proc/self/task", e))?;
    let mut tids: Vec<Tid> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_schedstat() {
        assert_eq!(parse_schedstat("607556 12 1\n"), Some((607556, 12)));
        assert_eq!(parse_schedstat("garbage"), None);
        assert_eq!(parse_schedstat(""), None);
    }

    #[test]
    fn parses_sched() {
        let text = "cat (7357, #threads: 1)\n---\n\
            se.exec_start                                :        427956.426704\n\
            se.sum_exec_runtime                          :             0.000000\n\
            se.nr_migrations                             :                    7\n\
            nr_switches                                  :                   30\n\
            nr_voluntary_switches                        :                   21\n\
            nr_involuntary_switches                      :                    9\n";
        assert_eq!(
            parse_sched(text),
            SchedCounts {
                migrations: Some(7),
                voluntary: Some(21),
                involuntary: Some(9)
            }
        );
        assert_eq!(parse_sched("nothing here"), SchedCounts::default());
    }

    #[test]
    fn parses_status_switches() {
        let text = "Name:\tx\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(parse_status_switches(text), Some((5, 3)));
        assert_eq!(parse_status_switches("Name:\tx\n"), None);
    }

    #[test]
    fn parses_stat_faults_with_a_hostile_name() {
        let text = "7361 (a) b) c) R 7355 7355 3463 0 -1 4194304 99 5 17 0 0 0 0 0 20 0 1 0";
        assert_eq!(parse_stat_faults(text), Some((99, 17)));
        assert_eq!(parse_stat_faults("7361 (cat) R 1 2"), None);
    }

    #[test]
    fn real_proc_files_parse() {
        let tid = current_tid();
        let base = format!("/proc/self/task/{tid}");
        let schedstat = std::fs::read_to_string(format!("{base}/schedstat")).unwrap();
        assert!(parse_schedstat(&schedstat).is_some(), "{schedstat}");
        let stat = std::fs::read_to_string(format!("{base}/stat")).unwrap();
        assert!(parse_stat_faults(&stat).is_some(), "{stat}");
        let status = std::fs::read_to_string(format!("{base}/status")).unwrap();
        assert!(parse_status_switches(&status).is_some());
        assert!(process_threads().unwrap().contains(&tid));
    }

    #[test]
    fn proc_file_rereads_fresh_contents() {
        let tid = current_tid();
        let f = ProcFile::open(format!("/proc/self/task/{tid}/schedstat"), tid).unwrap();
        let mut buf = Vec::new();
        let (run1, _) = parse_schedstat(f.read(&mut buf, tid).unwrap()).unwrap();
        // Burn CPU until the kernel's accounting moves (a condition, not a sleep).
        let start = thread_cpu_time_ns();
        while thread_cpu_time_ns() - start < 5_000_000 {
            std::hint::black_box(0u64);
        }
        let (run2, _) = parse_schedstat(f.read(&mut buf, tid).unwrap()).unwrap();
        assert!(run2 > run1, "{run1} -> {run2}");
    }

    #[test]
    fn clocks_and_rusage_move_forward() {
        let a = monotonic_ns();
        let c = thread_cpu_time_ns();
        let r = getrusage(RusageWho::Thread).unwrap();
        let p = getrusage(RusageWho::Process).unwrap();
        assert!(monotonic_ns() >= a);
        assert!(thread_cpu_time_ns() >= c);
        assert!(p.cpu_ns >= r.cpu_ns);
        // Touch 16 MiB: the peak RSS must cover it.
        let v = vec![1u8; 16 << 20];
        std::hint::black_box(&v);
        let after = getrusage(RusageWho::Process).unwrap();
        assert!(after.max_rss_kib >= 16 << 10, "{after:?}");
        assert_eq!(current_tid(), raw_gettid());
    }
}
