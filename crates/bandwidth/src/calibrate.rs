//! The machine's copy bandwidth with 1..N threads (a STREAM-like copy, like 004's Table 4.2),
//! measured once and cached in a file under the user's cache directory, measured again when
//! the CPU model or count changes.

use crate::admission::{AdmissionError, Capacity};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// What the cache file is keyed by: a measurement of another machine is not reused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineId {
    /// The CPU model (`model name` of `/proc/cpuinfo`, or `unknown`).
    pub cpu_model: String,
    /// CPUs this process may use.
    pub cpus: usize,
}

impl MachineId {
    /// This machine, as this process sees it.
    pub fn current() -> MachineId {
        let cpu_model = fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        MachineId { cpu_model, cpus }
    }
}

/// How a calibration is made.
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    /// Bytes of each of a thread's two arrays (source and destination); by default
    /// [`default_array_bytes`], above the last-level cache, so that the copy runs from memory.
    /// The cache file records it: a calibration with other arrays is measured again.
    pub array_bytes: usize,
    /// Timed copies per thread count (the best one counts, as STREAM reports).
    pub repeats: usize,
    /// The machine measured (and the cache key).
    pub machine: MachineId,
    /// The cache file; `None`: measure and keep nothing.
    pub cache_file: Option<PathBuf>,
    /// Check a cached calibration with a copy on one thread (the best of two) before using it
    /// (default `true`): where that copy runs more than [`STALE_FACTOR`] times as fast as the
    /// cache says, the cache was measured in a slower state of the machine (a busy moment,
    /// another host of a VM) and everything is measured again.
    pub recheck: bool,
}

/// How much faster than its cached single-thread rate a copy must run now for the cache to be
/// measured again ([`CalibrateOptions::recheck`]). Generous: a copy that runs slower now (the
/// machine is busy) keeps the cache, and run-to-run noise of one copy stays well below 2×.
pub const STALE_FACTOR: f64 = 2.0;

/// Twice the last-level cache (from sysfs), at least 32 MiB and at most 256 MiB: STREAM asks
/// for arrays well above the caches, and the cap keeps a calibration of a machine with a huge
/// shared cache to about a second and 512 MiB per thread.
pub fn default_array_bytes() -> usize {
    let llc = (0..8)
        .filter_map(|i| {
            fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size")).ok()
        })
        .filter_map(|s| parse_size(s.trim()))
        .max()
        .unwrap_or(0);
    (2 * llc).clamp(32 << 20, 256 << 20)
}

/// `"260M"`, `"4096K"`, `"32768"` (bytes) as sysfs writes cache sizes.
fn parse_size(s: &str) -> Option<usize> {
    let (num, mult) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mult)
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        CalibrateOptions {
            array_bytes: default_array_bytes(),
            repeats: 5,
            machine: MachineId::current(),
            cache_file: default_cache_file(),
            recheck: true,
        }
    }
}

/// `$XDG_CACHE_HOME/footprint/bandwidth-v1.txt`, else `$HOME/.cache/footprint/...`.
pub fn default_cache_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("footprint").join("bandwidth-v1.txt"))
}

/// Where a calibration came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheState {
    /// Read from this file (measured earlier on this machine).
    Hit(PathBuf),
    /// Measured now and written to this file.
    Stored(PathBuf),
    /// Measured now, not cached (why).
    NotStored(String),
}

/// The measured copy rates.
///
/// ```no_run
/// let c = footprint_bandwidth::calibrate()?;
/// println!("{c}");
/// let capacity = c.capacity()?; // all CPUs copying at once: what admission uses
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// The machine it was measured on.
    pub machine: MachineId,
    /// Total copy rate in bytes per second (bytes read plus bytes written, as STREAM counts)
    /// with 1, 2, .. `machine.cpus` threads copying at once.
    pub total_rates: Vec<f64>,
    /// Where it came from.
    pub cache: CacheState,
}

impl Calibration {
    /// The rate with every CPU copying: the capacity admission works against.
    pub fn capacity(&self) -> Result<Capacity, AdmissionError> {
        Capacity::new(
            self.total_rates.last().copied().unwrap_or(0.0),
            self.machine.cpus,
        )
    }

    /// Per-thread rate with `n` threads copying (Table 4.2's "per CPU" column).
    pub fn per_cpu(&self, n: usize) -> Option<f64> {
        self.total_rates
            .get(n.checked_sub(1)?)
            .map(|t| t / n as f64)
    }
}

impl fmt::Display for Calibration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "copy bandwidth of {} ({} CPUs), {}",
            self.machine.cpu_model,
            self.machine.cpus,
            match &self.cache {
                CacheState::Hit(p) => format!("cached in {}", p.display()),
                CacheState::Stored(p) => format!("measured now, cached in {}", p.display()),
                CacheState::NotStored(why) => format!("measured now, not cached: {why}"),
            }
        )?;
        writeln!(
            f,
            "  {:>7} {:>14} {:>14}",
            "threads", "total MB/s", "per CPU MB/s"
        )?;
        for (i, t) in self.total_rates.iter().enumerate() {
            writeln!(
                f,
                "  {:>7} {:>14.0} {:>14.0}",
                i + 1,
                t / 1e6,
                t / 1e6 / (i + 1) as f64
            )?;
        }
        Ok(())
    }
}

/// Why no calibration could be made.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CalibrateError {
    /// `array_bytes` or `repeats` is zero, or the machine has no CPU.
    BadOptions(String),
    /// A copy thread could not be started.
    Spawn(String),
}

impl fmt::Display for CalibrateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CalibrateError::BadOptions(s) => write!(f, "bandwidth calibration: {s}"),
            CalibrateError::Spawn(s) => {
                write!(
                    f,
                    "bandwidth calibration: a copy thread failed to start: {s}"
                )
            }
        }
    }
}

impl std::error::Error for CalibrateError {}

/// This machine's copy bandwidth with 1..N threads: from the cache file when it was measured on
/// this CPU model and count and one copy now does not run more than [`STALE_FACTOR`] times as
/// fast as it says, else measured now (a fraction of a second per thread count) and cached.
pub fn calibrate() -> Result<Calibration, CalibrateError> {
    calibrate_with(&CalibrateOptions::default())
}

/// [`calibrate`] with explicit options.
pub fn calibrate_with(opts: &CalibrateOptions) -> Result<Calibration, CalibrateError> {
    if let Some(path) = &opts.cache_file {
        if let Some(rates) = read_cache(path, &opts.machine, opts.array_bytes) {
            // A copy rate cached during a loaded run here (5.6 GB/s, where fresh calibrations
            // read 60-74 GB/s) refused every later reservation above it. Best of two copies:
            // the factor is generous, and one copy of a large array takes tens of milliseconds.
            let stale = opts.recheck
                && copy_rate(1, opts.array_bytes / 8, opts.repeats.clamp(1, 2))?
                    > STALE_FACTOR * rates[0];
            if !stale {
                return Ok(Calibration {
                    machine: opts.machine.clone(),
                    total_rates: rates,
                    cache: CacheState::Hit(path.clone()),
                });
            }
        }
    }
    let total_rates = measure(opts)?;
    let cache = match &opts.cache_file {
        None => {
            CacheState::NotStored("no cache directory (neither XDG_CACHE_HOME nor HOME)".into())
        }
        Some(path) => match write_cache(path, &opts.machine, opts.array_bytes, &total_rates) {
            Ok(()) => CacheState::Stored(path.clone()),
            Err(e) => CacheState::NotStored(format!("{}: {e}", path.display())),
        },
    };
    Ok(Calibration {
        machine: opts.machine.clone(),
        total_rates,
        cache,
    })
}

/// Measures the total copy rate with 1..=`machine.cpus` threads.
pub fn measure(opts: &CalibrateOptions) -> Result<Vec<f64>, CalibrateError> {
    if opts.array_bytes < 8 || opts.repeats == 0 || opts.machine.cpus == 0 {
        return Err(CalibrateError::BadOptions(format!(
            "array_bytes {} (at least 8), repeats {} and cpus {} must be positive",
            opts.array_bytes, opts.repeats, opts.machine.cpus
        )));
    }
    (1..=opts.machine.cpus)
        .map(|n| copy_rate(n, opts.array_bytes / 8, opts.repeats))
        .collect()
}

/// Total rate of `n` threads each copying `len` words `repeats` times: each thread's best copy
/// counts (2 × 8 bytes moved per word), summed.
fn copy_rate(n: usize, len: usize, repeats: usize) -> Result<f64, CalibrateError> {
    let start = Barrier::new(n);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|_| {
                std::thread::Builder::new()
                    .name("footprint-calibrate".into())
                    .spawn_scoped(s, || {
                        let a = vec![1.0f64; len];
                        let mut b = vec![0.0f64; len];
                        start.wait();
                        let mut best = Duration::MAX;
                        for _ in 0..repeats {
                            let t0 = Instant::now();
                            copy(&a, &mut b);
                            best = best.min(t0.elapsed());
                        }
                        std::hint::black_box(&b);
                        (16 * len) as f64 / best.as_secs_f64().max(1e-9)
                    })
                    .map_err(|e| CalibrateError::Spawn(e.to_string()))
            })
            .collect();
        let mut total = 0.0;
        for h in hs {
            total += h?
                .join()
                .map_err(|_| CalibrateError::Spawn("a copy thread panicked".into()))?;
        }
        Ok(total)
    })
}

/// STREAM's copy kernel, `b[i] = a[i]`, kept as a loop the compiler may vectorise but not
/// replace by a call that could pick other stores.
#[inline(never)]
fn copy(a: &[f64], b: &mut [f64]) {
    for (d, s) in b.iter_mut().zip(a) {
        *d = *s;
    }
}

fn read_cache(path: &Path, machine: &MachineId, array_bytes: usize) -> Option<Vec<f64>> {
    let text = fs::read_to_string(path).ok()?;
    let mut model = None;
    let mut cpus = None;
    let mut array = None;
    let mut rates = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (k, v) = line.split_once('=')?;
        match k {
            "cpu_model" => model = Some(v.to_string()),
            "cpus" => cpus = v.parse::<usize>().ok(),
            "array_bytes" => array = v.parse::<usize>().ok(),
            "total_rates" => {
                for r in v.split(',') {
                    rates.push(
                        r.parse::<f64>()
                            .ok()
                            .filter(|r| r.is_finite() && *r > 0.0)?,
                    );
                }
            }
            _ => {}
        }
    }
    let ok = model.as_deref() == Some(machine.cpu_model.as_str())
        && cpus == Some(machine.cpus)
        && array == Some(array_bytes)
        && rates.len() == machine.cpus;
    ok.then_some(rates)
}

fn write_cache(
    path: &Path,
    machine: &MachineId,
    array_bytes: usize,
    rates: &[f64],
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let rates: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
    let text = format!(
        "# footprint bandwidth calibration: STREAM-like copy, bytes/s with 1..cpus threads\ncpu_model={}\ncpus={}\narray_bytes={array_bytes}\ntotal_rates={}\n",
        machine.cpu_model.replace('\n', " "),
        machine.cpus,
        rates.join(",")
    );
    // Written beside and renamed, so that a reader never sees half a file.
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&tmp, text)?;
    fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(dir: &str, model: &str, cpus: usize) -> CalibrateOptions {
        let path = std::env::temp_dir()
            .join(format!("footprint-calib-{}-{dir}", std::process::id()))
            .join("bw.txt");
        CalibrateOptions {
            array_bytes: 64 << 10,
            repeats: 2,
            machine: MachineId {
                cpu_model: model.into(),
                cpus,
            },
            cache_file: Some(path),
            // The tests below that expect a hit must not depend on one copy's noise.
            recheck: false,
        }
    }

    /// Options that check the cache, whose file says one thread copies `rate` bytes/s.
    fn rechecked_cache_of(dir: &str, rate: f64) -> (CalibrateOptions, PathBuf) {
        let mut o = opts(dir, "M", 1);
        o.recheck = true;
        let path = o.cache_file.clone().unwrap();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        write_cache(&path, &o.machine, o.array_bytes, &[rate]).unwrap();
        (o, path)
    }

    #[test]
    fn a_cache_far_slower_than_a_copy_now_is_measured_again() {
        // 1 kB/s: any copy now runs far faster than STALE_FACTOR times that.
        let (o, path) = rechecked_cache_of("stale", 1000.0);
        let c = calibrate_with(&o).unwrap();
        assert_eq!(c.cache, CacheState::Stored(path.clone()));
        assert!(c.total_rates[0] > STALE_FACTOR * 1000.0);
        // What was measured is cached: read back as written.
        assert_eq!(
            read_cache(&path, &o.machine, o.array_bytes).map(|r| r[0].round()),
            Some(c.total_rates[0].round())
        );
        fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_cache_faster_than_a_copy_now_is_kept() {
        // 1 PB/s: no copy now runs faster, so the cache stands (a busy machine copies slower
        // than its capacity; that is no reason to measure again).
        let (o, path) = rechecked_cache_of("fast", 1e15);
        let c = calibrate_with(&o).unwrap();
        assert_eq!(c.cache, CacheState::Hit(path.clone()));
        assert_eq!(c.total_rates, vec![1e15]);
        fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn measured_once_then_cached_and_invalidated_by_a_new_machine() {
        let o = opts("inval", "Model A", 2);
        let path = o.cache_file.clone().unwrap();
        let _ = fs::remove_file(&path);
        let first = calibrate_with(&o).unwrap();
        assert_eq!(first.cache, CacheState::Stored(path.clone()));
        assert_eq!(first.total_rates.len(), 2);
        assert!(first.total_rates.iter().all(|r| *r > 0.0));
        let again = calibrate_with(&o).unwrap();
        assert_eq!(again.cache, CacheState::Hit(path.clone()));
        // The cache keeps whole bytes per second.
        for (a, b) in again.total_rates.iter().zip(&first.total_rates) {
            assert!((a - b).abs() <= 0.5, "{a} vs {b}");
        }
        // Another CPU model, then another CPU count: measured again.
        let other = calibrate_with(&opts("inval", "Model B", 2)).unwrap();
        assert_eq!(other.cache, CacheState::Stored(path.clone()));
        let mut bigger = opts("inval", "Model B", 2);
        bigger.array_bytes *= 2;
        assert_eq!(
            calibrate_with(&bigger).unwrap().cache,
            CacheState::Stored(path.clone())
        );
        let fewer = calibrate_with(&opts("inval", "Model B", 1)).unwrap();
        assert_eq!(fewer.cache, CacheState::Stored(path.clone()));
        assert_eq!(fewer.total_rates.len(), 1);
        assert!(fewer.capacity().is_ok());
        fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_damaged_cache_is_measured_again() {
        let o = opts("damaged", "M", 1);
        let path = o.cache_file.clone().unwrap();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(
            &path,
            "cpu_model=M\ncpus=1\narray_bytes=65536\ntotal_rates=nan\n",
        )
        .unwrap();
        assert_eq!(
            calibrate_with(&o).unwrap().cache,
            CacheState::Stored(path.clone())
        );
        fs::write(&path, "garbage").unwrap();
        assert_eq!(
            calibrate_with(&o).unwrap().cache,
            CacheState::Stored(path.clone())
        );
        fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn sysfs_sizes_parse() {
        assert_eq!(parse_size("260M"), Some(260 << 20));
        assert_eq!(parse_size("48K"), Some(48 << 10));
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!(parse_size("x"), None);
        let d = default_array_bytes();
        assert!((32 << 20..=256 << 20).contains(&d), "{d}");
    }

    #[test]
    fn bad_options_are_typed_and_no_cache_is_said() {
        let mut o = opts("bad", "M", 1);
        o.repeats = 0;
        assert!(matches!(
            calibrate_with(&o),
            Err(CalibrateError::BadOptions(_))
        ));
        let mut o = opts("bad", "M", 1);
        o.cache_file = None;
        assert!(matches!(
            calibrate_with(&o).unwrap().cache,
            CacheState::NotStored(_)
        ));
    }
}
