//! The pool's configuration from the environment and the builder, seen from a child process
//! (the variables are read once per runtime, and the global runtime once per process): this
//! test binary runs itself with the variables set and the `child_report` test selected, and
//! the child prints what it built.

use footprint_runtime::{Builder, Error, Pin, Runtime};
use std::collections::BTreeSet;
use std::process::Command;

/// The variable that tells `child_report` what to build.
const CASE: &str = "FOOTPRINT_TEST_POOL_CASE";

/// What a child reported: one `key=value` pair per line after `REPORT`.
#[derive(Debug)]
struct Report(Vec<(String, String)>);

impl Report {
    fn get(&self, key: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {key} in {self:?}"))
    }

    fn workers(&self) -> usize {
        self.get("workers").parse().unwrap()
    }

    /// The CPU of each worker (`None` for an unpinned one).
    fn cpus(&self) -> Vec<Option<usize>> {
        self.get("cpus")
            .split(',')
            .filter(|c| !c.is_empty())
            .map(|c| c.parse().ok())
            .collect()
    }
}

/// Runs this binary's `child_report` with `case` and the variables `vars` (every other
/// footprint, rayon and OpenMP count variable removed).
fn child(case: &str, vars: &[(&str, &str)]) -> Report {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "child_report",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for v in [
        "FOOTPRINT_NUM_THREADS",
        "FOOTPRINT_PIN",
        "RAYON_NUM_THREADS",
        "OMP_NUM_THREADS",
    ] {
        cmd.env_remove(v);
    }
    cmd.env(CASE, case).envs(vars.iter().copied());
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child {case} {vars:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut pairs: Vec<(String, String)> = stdout
        .lines()
        // (libtest may print "test child_report ... " before the first line.)
        .filter_map(|l| l.split_once("REPORT ").map(|(_, r)| r))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    pairs.push((
        "stderr".into(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ));
    Report(pairs)
}

/// The allowed CPUs and how many cores they make (SMT siblings read from sysfs here, apart from
/// the runtime's own reading).
fn machine() -> (Vec<usize>, usize) {
    let allowed = footprint_affinity::allowed_cpus().unwrap();
    let mut cores = BTreeSet::new();
    for &cpu in &allowed {
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
        let siblings = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| footprint_affinity::topology::parse_cpu_list(&t).ok())
            .unwrap_or_else(|| vec![cpu]);
        let first = siblings
            .into_iter()
            .filter(|c| allowed.contains(c))
            .min()
            .unwrap_or(cpu);
        cores.insert(first);
    }
    (allowed, cores.len())
}

/// Not a test of its own: what a child process runs (selected with `--ignored --exact`).
#[test]
#[ignore = "run by the tests below in a child process"]
fn child_report() {
    let case = std::env::var(CASE).expect("run by the other tests in this file");
    let show = |what: &str, v: String| println!("REPORT {what}={v}");
    let cpus = |rt: &Runtime| {
        rt.worker_cpus()
            .iter()
            .map(|c| c.map_or("-".to_string(), |c| c.to_string()))
            .collect::<Vec<_>>()
            .join(",")
    };
    match case.as_str() {
        "default" => {
            let rt = Runtime::new().unwrap();
            show("workers", rt.workers().to_string());
            show("cpus", cpus(&rt));
        }
        "explicit" => {
            let rt = Builder::new().workers(1).pin(Pin::Threads).build().unwrap();
            show("workers", rt.workers().to_string());
            show("cpus", cpus(&rt));
        }
        "global" => {
            show(
                "current_num_threads",
                footprint_runtime::current_num_threads().to_string(),
            );
            let g = footprint_runtime::global();
            show("workers", g.workers().to_string());
            show("cpus", cpus(g));
        }
        "error" => {
            let e = Runtime::new().unwrap_err();
            show("error", e.to_string());
            show(
                "typed",
                matches!(e, Error::BadEnvironment { .. }).to_string(),
            );
        }
        "build_global" => {
            Builder::new()
                .workers(3)
                .pin(Pin::Off)
                .thread_name("mine")
                .build_global()
                .unwrap();
            show(
                "current_num_threads",
                footprint_runtime::current_num_threads().to_string(),
            );
            let g = footprint_runtime::global();
            show("workers", g.workers().to_string());
            show("cpus", cpus(g));
            let name = g.block_on(|| std::thread::current().name().map(str::to_string));
            show("name", name.unwrap_or_default());
            let again = Builder::new().build_global().unwrap_err();
            show(
                "again",
                matches!(again, Error::GlobalAlreadyStarted).to_string(),
            );
        }
        "build_global_late" => {
            // A free function outside any runtime starts the global runtime with the defaults.
            let (a, b) = footprint_runtime::join(|| 1, || 2);
            show("sum", (a + b).to_string());
            let e = Builder::new().workers(1).build_global().unwrap_err();
            show(
                "typed",
                matches!(e, Error::GlobalAlreadyStarted).to_string(),
            );
            show("error", e.to_string());
        }
        "second_pool" => {
            let rt = Builder::new().workers(1).build().unwrap();
            // Outside `rt.block_on`: this starts the global runtime beside `rt`.
            let (a, b) = footprint_runtime::join(|| 1, || 2);
            show("sum", (a + b).to_string());
            // Inside it: `rt`'s own workers, nothing new.
            show(
                "inside",
                rt.block_on(footprint_runtime::current_runtime_id)
                    .to_string(),
            );
            show(
                "rt",
                rt.block_on(footprint_runtime::current_num_threads)
                    .to_string(),
            );
        }
        other => panic!("unknown case {other}"),
    }
}

#[test]
fn footprint_num_threads_sets_the_default_worker_count() {
    let (allowed, _) = machine();
    for n in [1, 3, 5] {
        let r = child("default", &[("FOOTPRINT_NUM_THREADS", &n.to_string())]);
        assert_eq!(r.workers(), n, "{r:?}");
        let cpus = r.cpus();
        assert_eq!(cpus.len(), n);
        assert!(
            cpus.iter().all(|c| c.is_some_and(|c| allowed.contains(&c))),
            "{r:?}"
        );
    }
    // The global runtime reads it too.
    let r = child("global", &[("FOOTPRINT_NUM_THREADS", "3")]);
    assert_eq!(
        (r.workers(), r.get("current_num_threads")),
        (3, "3"),
        "{r:?}"
    );
}

#[test]
fn rayon_and_openmp_variables_are_not_read() {
    let (_, cores) = machine();
    let others = [("RAYON_NUM_THREADS", "7"), ("OMP_NUM_THREADS", "5")];
    let r = child("default", &others);
    assert_eq!(r.workers(), cores, "one per core, whatever they say: {r:?}");
    let mut with_ours = others.to_vec();
    with_ours.push(("FOOTPRINT_NUM_THREADS", "1"));
    assert_eq!(child("default", &with_ours).workers(), 1);
}

#[test]
fn the_default_is_one_pinned_worker_per_core_on_distinct_cores() {
    let (allowed, cores) = machine();
    let r = child("default", &[]);
    assert_eq!(r.workers(), cores, "{r:?}");
    let cpus: Vec<usize> = r.cpus().into_iter().map(|c| c.expect("pinned")).collect();
    let distinct: BTreeSet<usize> = cpus.iter().copied().collect();
    assert_eq!(distinct.len(), cpus.len(), "two workers on one CPU: {r:?}");
    assert!(cpus.iter().all(|c| allowed.contains(c)));
}

#[test]
fn footprint_pin_chooses_the_placement() {
    let (allowed, cores) = machine();
    let off = child("default", &[("FOOTPRINT_PIN", "off")]);
    assert_eq!(off.workers(), cores);
    assert!(off.cpus().iter().all(Option::is_none), "{off:?}");
    let threads = child("default", &[("FOOTPRINT_PIN", "threads")]);
    assert_eq!(
        threads.workers(),
        allowed.len(),
        "one per hardware thread: {threads:?}"
    );
    let mut seen: Vec<usize> = threads.cpus().into_iter().map(Option::unwrap).collect();
    seen.sort_unstable();
    assert_eq!(seen, allowed, "every allowed CPU once");
    let spread = child(
        "default",
        &[("FOOTPRINT_PIN", "Spread"), ("FOOTPRINT_NUM_THREADS", "1")],
    );
    assert_eq!(spread.cpus(), vec![Some(allowed[0])], "{spread:?}");
}

#[test]
fn the_builder_wins_over_the_variables() {
    let r = child(
        "explicit",
        &[("FOOTPRINT_NUM_THREADS", "4"), ("FOOTPRINT_PIN", "off")],
    );
    assert_eq!(r.workers(), 1, "{r:?}");
    assert!(r.cpus()[0].is_some(), "pinned as the builder says: {r:?}");
}

#[test]
fn unusable_values_are_typed_errors_naming_the_variable() {
    for (var, value) in [
        ("FOOTPRINT_NUM_THREADS", "lots"),
        ("FOOTPRINT_NUM_THREADS", "-2"),
        ("FOOTPRINT_PIN", "close"),
    ] {
        let r = child("error", &[(var, value)]);
        assert_eq!(r.get("typed"), "true", "{r:?}");
        let e = r.get("error");
        assert!(e.contains(var) && e.contains(value), "{e}");
    }
    // 0 and empty mean "the default", as rayon's RAYON_NUM_THREADS=0.
    let (_, cores) = machine();
    assert_eq!(
        child("default", &[("FOOTPRINT_NUM_THREADS", "0")]).workers(),
        cores
    );
    assert_eq!(
        child("default", &[("FOOTPRINT_NUM_THREADS", "")]).workers(),
        cores
    );
}

#[test]
fn build_global_installs_the_global_runtime_once() {
    let r = child("build_global", &[("FOOTPRINT_NUM_THREADS", "1")]);
    assert_eq!(r.workers(), 3, "{r:?}");
    assert_eq!(r.get("current_num_threads"), "3");
    assert!(r.cpus().iter().all(Option::is_none), "{r:?}");
    assert!(r.get("name").starts_with("mine-"), "{r:?}");
    assert_eq!(r.get("again"), "true");
    let late = child("build_global_late", &[]);
    assert_eq!(
        (late.get("sum"), late.get("typed")),
        ("3", "true"),
        "{late:?}"
    );
    assert!(late.get("error").contains("build_global"), "{late:?}");
}

#[test]
fn a_second_pool_started_by_accident_is_announced() {
    let r = child("second_pool", &[("FOOTPRINT_NUM_THREADS", "2")]);
    assert_eq!((r.get("sum"), r.get("rt")), ("3", "1"), "{r:?}");
    let err = r.get("stderr");
    assert!(
        err.contains("starting the global runtime (2 workers) beside 1 runtime")
            && err.contains("build_global"),
        "{err}"
    );
    // Without a runtime of the program's own, starting the global one is silent.
    let quiet = child("global", &[]);
    assert!(!quiet.get("stderr").contains("beside"), "{quiet:?}");
}
