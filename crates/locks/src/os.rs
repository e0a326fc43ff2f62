//! The OS-thread scheduler hook: where no runtime installed a hook, the kernel is the scheduler,
//! and a waiting thread decides between spinning and a futex park from what the kernel tells:
//!
//! - [`oversubscribed`]: more runnable threads than CPUs, from the running-threads field of
//!   `/proc/loadavg` (read with `pread` on a descriptor kept open, at most once per
//!   [`SAMPLE_INTERVAL_NS`] by whichever waiter finds the sample stale, once per
//!   [`OVERSUBSCRIBED_RESAMPLE_NS`] while it says yes; ≈1–2 µs a read). One reading in excess
//!   is believed only when the next, within [`SPIN_SAMPLE_INTERVAL_NS`], confirms it;
//! - [`my_involuntary_switches`]: this thread's involuntary context switches
//!   (`getrusage(RUSAGE_THREAD)`, ≈0.3 µs) — a spinner that gets preempted should park;
//! - [`thread_sched_state`]: whether the thread we wait for is running and how often it was
//!   preempted (`/proc/self/task/<tid>/status`, read once per spin budget only).
//!
//! Parking is `std::thread::park` (a futex on Linux); under `cfg(loom)`, loom's park.

use crate::interface::{ClassCell, Placement, PriorityClass, SchedulerHook, Unpark, Unparker};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[cfg(loom)]
use loom::thread as park_thread;
#[cfg(not(loom))]
use std::thread as park_thread;

/// How often (at most) [`oversubscribed`] re-samples the run queue while the signal is off, in
/// nanoseconds ([`OVERSUBSCRIBED_RESAMPLE_NS`] while it is on).
pub const SAMPLE_INTERVAL_NS: u64 = 2_000_000;

/// Estimate of one park plus one unpark of an OS thread, in nanoseconds, until parked threads
/// of this process have measured it ([`switch_cost_ns`]): a futex wake-and-switch round trip
/// between two threads of an otherwise idle machine costs 4–10 µs on bare metal.
pub const DEFAULT_SWITCH_COST_NS: u64 = 6_000;

/// Longest wake-up latency one sample may contribute (a thread that waited this long for a CPU
/// measured the run queue, not the park).
const MAX_WAKE_SAMPLE_NS: u64 = 200_000;

static SWITCH_COST_NS: AtomicU64 = AtomicU64::new(DEFAULT_SWITCH_COST_NS);
/// Set by [`set_switch_cost_ns`]: measurements no longer change the estimate.
static SWITCH_COST_FIXED: AtomicBool = AtomicBool::new(false);

/// Fixes the switch-cost estimate the OS hook reports (for experiments, or after measuring);
/// from then on the wake-ups parked threads measure no longer change it.
pub fn set_switch_cost_ns(ns: u64) {
    SWITCH_COST_FIXED.store(true, Ordering::Relaxed);
    SWITCH_COST_NS.store(ns.max(1), Ordering::Relaxed);
}

/// What the OS hook tells a waiter a park costs: [`DEFAULT_SWITCH_COST_NS`] until OS threads of
/// this process have been woken from a park, then a moving average (weight 1/8) of their
/// wake-up latencies, from the notifier's pop to the woken thread running again (each sample
/// capped at 200 µs), unless [`set_switch_cost_ns`] fixed it.
///
/// Why measured: the two-phase rule spins for about this long before it parks, and what a park
/// costs differs by an order of magnitude between machines. In a KVM guest whose idle vCPUs
/// halt, the woken thread's vCPU must be brought back by the host first: 002's lock + barrier
/// loop (2 threads on 2 vCPUs) parked at most barrier phases with the 6 µs default, and took
/// 2.7× as long per iteration as with waiters that spin through the phase.
pub fn switch_cost_ns() -> u64 {
    SWITCH_COST_NS.load(Ordering::Relaxed)
}

/// Feeds one wake-up latency (nanoseconds from a notifier's pop to the woken OS thread running)
/// into [`switch_cost_ns`]. Samples taken while the machine is oversubscribed are dropped: the
/// thread then waited for a CPU, which spinning would not have saved either.
pub(crate) fn record_wake_latency(ns: u64) {
    if !wants_wake_latency() {
        return;
    }
    let old = SWITCH_COST_NS.load(Ordering::Relaxed);
    // A lost update between two racing wake-ups loses one sample of an average: harmless.
    SWITCH_COST_NS.store(averaged_switch_cost(old, ns), Ordering::Relaxed);
}

/// Whether a wake-up latency measured now would be kept ([`record_wake_latency`]): the
/// estimate is not fixed and the machine is not oversubscribed. A park asks before it pays for
/// the measurement (a clock read by the notifier, two `getrusage` calls by the parked thread):
/// on an oversubscribed machine every sample was dropped, and the two calls were 2 % of the
/// CPU time of 002's loop at degree 4, where every barrier wait parks.
pub(crate) fn wants_wake_latency() -> bool {
    !SWITCH_COST_FIXED.load(Ordering::Relaxed) && !oversubscribed_hint()
}

/// One step of [`switch_cost_ns`]'s moving average: `old` moved an eighth of the way to the
/// sample `ns` (capped at [`MAX_WAKE_SAMPLE_NS`]), never 0.
fn averaged_switch_cost(old: u64, ns: u64) -> u64 {
    let sample = ns.min(MAX_WAKE_SAMPLE_NS);
    (old - old / 8 + sample / 8).max(1)
}

struct OsHook;

struct OsUnpark(park_thread::Thread);

impl Unpark for OsUnpark {
    fn unpark(&self, _hint: Placement) {
        self.0.unpark()
    }
}

fn new_unparker() -> Unparker {
    Unparker::new(Arc::new(OsUnpark(park_thread::current())))
}

// The class cell and the tid are const-initialised (no lazy-init check, no destructor: the
// cheapest thread-locals, on every lock acquisition); the unparker is needed on slow paths only.
#[cfg(not(loom))]
std::thread_local! {
    static CLASS: ClassCell = const { ClassCell::new(PriorityClass::Running) };
    static TID: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
    static UNPARKER: Unparker = new_unparker();
}
#[cfg(loom)]
loom::thread_local! {
    static CLASS: ClassCell = ClassCell::new(PriorityClass::Running);
    static TID: std::cell::Cell<i32> = std::cell::Cell::new(0);
    static UNPARKER: Unparker = new_unparker();
}

fn gettid() -> i32 {
    if cfg!(loom) {
        return 0;
    }
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// The kernel thread id of the calling OS thread (0 under loom).
pub fn current_tid() -> i32 {
    TID.with(|t| {
        if t.get() == 0 {
            t.set(gettid());
        }
        t.get()
    })
}

/// The calling OS thread's class cell (what [`OsHook`]'s `class_cell` returns), valid as long as
/// the thread lives.
#[inline]
pub(crate) fn os_class_cell() -> *const ClassCell {
    CLASS.with(|c| c as *const ClassCell)
}

impl SchedulerHook for OsHook {
    fn class_cell(&self) -> &ClassCell {
        // SAFETY: the thread-local lives as long as the current OS thread, which is the
        // contract of `class_cell`; it is never moved.
        unsafe { &*os_class_cell() }
    }

    fn higher_class_ready(&self, than: PriorityClass) -> bool {
        // The kernel does not know our classes; what it tells is that runnable threads wait for
        // a CPU. A lock or barrier waiter (below Running) then gives way: the runnable threads
        // are running, holding or next in line, all of a higher class.
        than < PriorityClass::Running && oversubscribed()
    }

    fn yield_to_higher(&self, than: PriorityClass) -> bool {
        if self.higher_class_ready(than) {
            crate::sync::os_yield();
            true
        } else {
            false
        }
    }

    fn yield_now(&self) {
        crate::sync::os_yield()
    }

    fn current_unparker(&self) -> Unparker {
        UNPARKER.with(|u| u.clone())
    }

    fn park(&self) {
        park_thread::park()
    }

    fn park_timeout(&self, timeout: Duration) -> bool {
        #[cfg(loom)]
        {
            // loom has no timed park: model the timeout as an immediate spurious return.
            let _ = timeout;
            park_thread::yield_now();
            false
        }
        #[cfg(not(loom))]
        {
            let start = std::time::Instant::now();
            std::thread::park_timeout(timeout);
            start.elapsed() < timeout
        }
    }

    fn worker_id(&self) -> Option<usize> {
        None
    }

    fn switch_cost_ns(&self) -> u64 {
        switch_cost_ns()
    }
}

static OS_HOOK: OsHook = OsHook;

/// The hook used on threads where none is installed.
pub fn os_hook() -> &'static dyn SchedulerHook {
    &OS_HOOK
}

// ---------------------------------------------------------------------------------------------
// Kernel signals.

static OVERSUBSCRIBED: AtomicBool = AtomicBool::new(false);
/// The last sample read more runnable threads than CPUs after one that did not: not believed
/// until the next sample, due within [`SPIN_SAMPLE_INTERVAL_NS`], confirms it ([`after_sample`]).
static SUSPECT: AtomicBool = AtomicBool::new(false);
static SAMPLED_AT_NS: AtomicU64 = AtomicU64::new(0);
static FORCED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Forces [`oversubscribed`] to answer `Some(value)` (tests and experiments), or `None` to go
/// back to sampling the kernel.
pub fn force_oversubscribed(value: Option<bool>) {
    FORCED.store(
        match value {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        },
        Ordering::Relaxed,
    );
}

/// The last sample of [`oversubscribed`], without re-sampling (one relaxed load; for fast paths).
#[inline]
pub fn oversubscribed_hint() -> bool {
    match FORCED.load(Ordering::Relaxed) {
        0 => OVERSUBSCRIBED.load(Ordering::Relaxed),
        f => f == 2,
    }
}

/// Whether more threads are runnable than there are CPUs for this process (sampled at most
/// every [`SAMPLE_INTERVAL_NS`]; sooner while it says yes or a lone reading awaits confirmation,
/// see [`oversubscribed_within`]).
pub fn oversubscribed() -> bool {
    oversubscribed_within(SAMPLE_INTERVAL_NS)
}

/// How fresh a spinning OS thread wants [`oversubscribed`]'s answer: it re-samples the kernel's
/// run queue (one read of `/proc/loadavg`, ≈2 µs, by one of the process's spinners) at most
/// this often while it spins. A spin lasts up to a park's cost ([`switch_cost_ns`], tens of
/// microseconds in a virtual machine): with the 2 ms sample, a spinner that read "not
/// oversubscribed" from a moment when the other programs' threads happened to be parked kept
/// spinning through their return (002's loop at multiprogramming degree 2: 1.25× block's time
/// per iteration).
pub const SPIN_SAMPLE_INTERVAL_NS: u64 = 20_000;

/// [`oversubscribed`] re-sampled if the last sample is older than `max_age_ns`, or than the
/// shorter age a suspect sample ([`SPIN_SAMPLE_INTERVAL_NS`]) or an oversubscribed one
/// ([`OVERSUBSCRIBED_RESAMPLE_NS`]) allows. A lone reading in excess is believed only once the
/// next confirms it.
pub fn oversubscribed_within(max_age_ns: u64) -> bool {
    match FORCED.load(Ordering::Relaxed) {
        1 => return false,
        2 => return true,
        _ => {}
    }
    if cfg!(loom) {
        return false;
    }
    let now = crate::stats::now_ns();
    let at = SAMPLED_AT_NS.load(Ordering::Relaxed);
    let over = OVERSUBSCRIBED.load(Ordering::Relaxed);
    let suspect = SUSPECT.load(Ordering::Relaxed);
    if now.saturating_sub(at) > sample_age_limit(max_age_ns, over, suspect)
        && SAMPLED_AT_NS
            .compare_exchange(at, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        if let Some(running) = runnable_threads() {
            let (over, suspect) = after_sample(running > cpus(), over || suspect);
            SUSPECT.store(suspect, Ordering::Relaxed);
            OVERSUBSCRIBED.store(over, Ordering::Relaxed);
        }
    }
    OVERSUBSCRIBED.load(Ordering::Relaxed)
}

/// How old a sample that says "oversubscribed" may get before the next look re-samples the run
/// queue, whatever age the caller accepts: one read (1–2 µs) per 200 µs costs a loaded machine
/// under 1 % of a CPU, and a burst of other work (a kernel thread, a short process) that two
/// readings caught then makes waiters park for about this long, not for [`SAMPLE_INTERVAL_NS`].
pub const OVERSUBSCRIBED_RESAMPLE_NS: u64 = 200_000;

/// The largest age of the last sample that a caller asking for `max_age_ns` accepts, given what
/// the sample said (`over`) and whether it is an unconfirmed excess (`suspect`): a suspect
/// reading is confirmed or cleared by the next look after [`SPIN_SAMPLE_INTERVAL_NS`], an
/// oversubscribed one is looked at again after [`OVERSUBSCRIBED_RESAMPLE_NS`].
fn sample_age_limit(max_age_ns: u64, over: bool, suspect: bool) -> u64 {
    if suspect {
        max_age_ns.min(SPIN_SAMPLE_INTERVAL_NS)
    } else if over {
        max_age_ns.min(OVERSUBSCRIBED_RESAMPLE_NS)
    } else {
        max_age_ns
    }
}

/// The signal after one sample of the run queue, `(oversubscribed, suspect)`: `excess`, whether
/// the sample read more runnable threads than CPUs; `seen_before`, whether the signal was on or
/// suspect before it. One reading in excess after readings without is only suspect until the
/// next sample confirms or clears it; a reading without excess clears both.
///
/// Why: the count is the machine's, at one instant. A kernel thread or another program's short
/// burst makes one reading exceed the CPUs now and then, and a waiter that believes it parks at
/// once. 002's lock + barrier loop (2 OS threads on the 2 vCPUs, nothing else running) read 3
/// runnable threads in 6–13 of 350–1,300 samples per run, and parked at 1.5–3.5 % of its
/// barrier phases on those readings alone (each stayed believed until the next sample, 2 ms
/// later), each park costing a wake-up of some 30 µs; with this filter and the faster re-sample
/// of [`OVERSUBSCRIBED_RESAMPLE_NS`], 0.1–0.4 %.
fn after_sample(excess: bool, seen_before: bool) -> (bool, bool) {
    match (excess, seen_before) {
        (false, _) => (false, false),
        (true, true) => (true, false),
        (true, false) => (false, true),
    }
}

/// CPUs this process may run on: its main thread's CPU set, whichever thread asks first.
///
/// Not the calling thread's set (`available_parallelism`): the first caller is often a pinned
/// worker, whose set has one CPU, and the answer is cached for the process; with 1 the
/// oversubscription rule read any two running threads as "more threads than CPUs" and green
/// waiters stopped spinning for good.
pub fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| {
        main_thread_cpus()
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// CPUs in the process's main thread's affinity mask (`None` where unavailable, e.g. more CPUs
/// than a `cpu_set_t` holds).
#[cfg(target_os = "linux")]
fn main_thread_cpus() -> Option<usize> {
    if cfg!(loom) {
        return None;
    }
    // SAFETY: an all-zero `cpu_set_t` is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable cpu_set_t of the size passed; the pid is this process's (its
    // main thread's id), which lives as long as the process.
    let rc = unsafe {
        libc::sched_getaffinity(
            libc::getpid(),
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: `set` was filled by the kernel above.
    let n = unsafe { libc::CPU_COUNT(&set) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

#[cfg(not(target_os = "linux"))]
fn main_thread_cpus() -> Option<usize> {
    None
}

/// Runnable threads on the machine now (the kernel's `nr_running`, from `/proc/loadavg`).
pub fn runnable_threads() -> Option<usize> {
    use std::os::unix::fs::FileExt;
    static LOADAVG: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    let file = LOADAVG
        .get_or_init(|| std::fs::File::open("/proc/loadavg").ok())
        .as_ref()?;
    let mut buf = [0u8; 128];
    let n = file.read_at(&mut buf, 0).ok()?;
    parse_loadavg_running(std::str::from_utf8(&buf[..n]).ok()?)
}

/// Parses the running-threads count out of a `/proc/loadavg` line
/// (`"0.52 0.58 0.59 3/467 12345"` → 3).
pub fn parse_loadavg_running(line: &str) -> Option<usize> {
    let field = line.split_whitespace().nth(3)?;
    field.split('/').next()?.parse().ok()
}

/// This OS thread's resource usage (`getrusage(RUSAGE_THREAD)`, ≈0.3 µs); `None` where
/// unavailable or under loom.
fn my_usage() -> Option<libc::rusage> {
    if cfg!(loom) {
        return None;
    }
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_THREAD is supported on Linux ≥ 2.6.26.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    // SAFETY: getrusage succeeded and filled the struct.
    (rc == 0).then(|| unsafe { usage.assume_init() })
}

/// This OS thread's involuntary context switches so far (0 where unavailable).
pub fn my_involuntary_switches() -> u64 {
    my_usage().map_or(0, |u| u.ru_nivcsw as u64)
}

/// This OS thread's voluntary context switches so far (it went to sleep this often; 0 where
/// unavailable).
pub fn my_voluntary_switches() -> u64 {
    my_usage().map_or(0, |u| u.ru_nvcsw as u64)
}

/// What the kernel says about one thread of this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadSchedState {
    /// State `R`: running or runnable (waiting for a CPU).
    pub running: bool,
    /// Its involuntary context switches so far (it was preempted this often).
    pub involuntary_switches: u64,
}

/// Reads `/proc/self/task/<tid>/status` (≈5 µs; call rarely). `None` when the thread is gone or
/// the file is unreadable.
pub fn thread_sched_state(tid: i32) -> Option<ThreadSchedState> {
    if tid <= 0 {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
    parse_status(&text)
}

/// Parses the `State:` and `nonvoluntary_ctxt_switches:` lines of a `/proc/.../status` file.
pub fn parse_status(text: &str) -> Option<ThreadSchedState> {
    let mut running = None;
    let mut invol = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("State:") {
            running = Some(rest.trim_start().starts_with('R'));
        } else if let Some(rest) = line.strip_prefix("nonvoluntary_ctxt_switches:") {
            invol = rest.trim().parse().ok();
        }
    }
    Some(ThreadSchedState {
        running: running?,
        involuntary_switches: invol?,
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn one_reading_in_excess_is_only_suspect_until_the_next_confirms_it() {
        // A lone excess is not believed; a second in a row is; a reading within the CPUs
        // clears both.
        assert_eq!(after_sample(true, false), (false, true));
        assert_eq!(after_sample(true, true), (true, false));
        assert_eq!(after_sample(false, true), (false, false));
        assert_eq!(after_sample(false, false), (false, false));
        // The states it leads through for a burst of two readings, then quiet.
        let mut state = (false, false);
        for excess in [true, true, false] {
            state = after_sample(excess, state.0 || state.1);
        }
        assert_eq!(state, (false, false));
    }

    #[test]
    fn suspect_and_oversubscribed_samples_age_faster() {
        let slow = SAMPLE_INTERVAL_NS;
        assert_eq!(sample_age_limit(slow, false, false), slow);
        assert_eq!(sample_age_limit(slow, false, true), SPIN_SAMPLE_INTERVAL_NS);
        assert_eq!(
            sample_age_limit(slow, true, false),
            OVERSUBSCRIBED_RESAMPLE_NS
        );
        // A caller that asks for fresher samples still gets them.
        assert_eq!(
            sample_age_limit(SPIN_SAMPLE_INTERVAL_NS, true, false),
            SPIN_SAMPLE_INTERVAL_NS
        );
    }

    #[test]
    fn parses_loadavg() {
        assert_eq!(
            parse_loadavg_running("0.52 0.58 0.59 3/467 12345\n"),
            Some(3)
        );
        assert_eq!(parse_loadavg_running("garbage"), None);
    }

    #[test]
    fn switch_cost_average_follows_samples_and_caps_them() {
        // Converges on a steady latency from either side.
        let mut up = DEFAULT_SWITCH_COST_NS;
        let mut down = 100_000;
        for _ in 0..100 {
            up = averaged_switch_cost(up, 35_000);
            down = averaged_switch_cost(down, 35_000);
        }
        assert!((34_000..=35_000).contains(&up), "{up}");
        assert!((35_000..=36_000).contains(&down), "{down}");
        // A sample past the cap moves it as a capped one does.
        assert_eq!(
            averaged_switch_cost(8_000, 10_000_000),
            averaged_switch_cost(8_000, MAX_WAKE_SAMPLE_NS)
        );
        // Never 0, even from 0-latency samples.
        assert_eq!(averaged_switch_cost(1, 0), 1);
    }

    #[test]
    fn parses_status() {
        let s = "Name:\tx\nState:\tR (running)\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t7\n";
        assert_eq!(
            parse_status(s),
            Some(ThreadSchedState {
                running: true,
                involuntary_switches: 7
            })
        );
        let s = "State:\tS (sleeping)\nnonvoluntary_ctxt_switches:\t0\n";
        assert_eq!(parse_status(s).map(|s| s.running), Some(false));
        assert_eq!(parse_status("State:\tR\n"), None);
    }

    #[test]
    fn reads_own_thread_state() {
        let s = thread_sched_state(current_tid()).expect("own status readable");
        assert!(s.running, "the calling thread is running");
        assert!(runnable_threads().unwrap_or(1) >= 1);
    }
}
