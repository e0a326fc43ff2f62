//! The Tranquilizer daemon thread: every pass it measures the workers' profile under the
//! setting in force, asks [`plan`] what to try, applies it, measures again, applies what
//! [`judge`] keeps and logs the decision. Also the runtime-side state (`TranquilizerState`).

use super::config::{MemPolicy, TranquilizerConfig};
use super::levers::{self, Lever, Nodes, Refusal};
use super::pass::{judge, plan, PassProfile, Setting, Spread, TranquilReason};
use super::stats::{Log, TranquilizerDecision, TranquilizerStats};
use crate::registry::Shared;
use footprint_pmu::{Availability, ProfileSampler, SamplerConfig, ThreadRegistry, ThreadSelection};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// A tranquil runtime's state, in its `Shared`.
pub(crate) struct TranquilizerState {
    pub(crate) config: TranquilizerConfig,
    /// The workers' kernel thread ids (the class lever and the ICX rows).
    pub(crate) threads: ThreadRegistry,
    log: Mutex<Log>,
    started: Instant,
    /// `true` once the runtime drops. Held while the daemon queues a green thread, so that
    /// nothing is queued after the workers were told to finish.
    stopped: Mutex<bool>,
    daemon: Mutex<Option<std::thread::Thread>>,
}

impl TranquilizerState {
    pub(crate) fn new(config: TranquilizerConfig) -> TranquilizerState {
        TranquilizerState {
            config,
            threads: ThreadRegistry::new(),
            log: Mutex::new(Log::default()),
            started: Instant::now(),
            stopped: Mutex::new(false),
            daemon: Mutex::new(None),
        }
    }

    /// The public view (`Runtime::stats().tranquilizer`).
    pub(crate) fn stats(&self) -> TranquilizerStats {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).view()
    }

    /// Stops the daemon (the runtime is dropping).
    pub(crate) fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        if let Some(t) = self
            .daemon
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            t.unpark();
        }
    }

    fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Starts the daemon thread.
pub(crate) fn start(shared: &Arc<Shared>) -> std::io::Result<()> {
    let t = shared.tranquilizer().expect("a tranquil runtime");
    let weak = Arc::downgrade(shared);
    let handle = std::thread::Builder::new()
        .name("footprint-tranquilizer".into())
        .spawn(move || run(weak))?;
    *t.daemon.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle.thread().clone());
    Ok(())
}

/// Why the daemon stops early.
struct Stopping;

/// Sleeps `d`, or less if the runtime stops; `Err` once it has.
fn pause(weak: &Weak<Shared>, d: Duration) -> Result<(), Stopping> {
    let until = Instant::now() + d;
    loop {
        let alive = weak
            .upgrade()
            .is_some_and(|s| s.tranquilizer().is_some_and(|t| !t.is_stopped()));
        if !alive {
            return Err(Stopping);
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        std::thread::park_timeout(until - now);
    }
}

fn run(weak: Weak<Shared>) {
    let Some(shared) = weak.upgrade() else {
        return;
    };
    let st = shared.tranquilizer().expect("a tranquil runtime");
    let config = st.config.clone();
    let sampler = ProfileSampler::procfs(
        SamplerConfig {
            interval: config.sample_interval,
            window: config.samples,
            history: config.samples,
        },
        ThreadSelection::Registry(st.threads.clone()),
    );
    let mut sampler = match sampler {
        Ok(s) => s,
        Err(e) => {
            // The config was checked at build; should the sampler still refuse, say why.
            let mut log = st.log.lock().unwrap_or_else(|e| e.into_inner());
            log.stats.miss_counter = format!("no profile sampler ({e}): no passes");
            return;
        }
    };
    let nodes = Nodes::allowed();
    {
        let mut log = st.log.lock().unwrap_or_else(|e| e.into_inner());
        log.stats.nodes = nodes.as_ref().map(Nodes::count).map_err(|r| *r);
    }
    let mut current = Setting {
        memory: None,
        class: config.default_class,
    };
    drop(shared);
    while let Ok(()) = one_pass(&weak, &config, &mut sampler, &nodes, &mut current) {}
}

/// One pass; `Err` when the runtime stops.
fn one_pass(
    weak: &Weak<Shared>,
    config: &TranquilizerConfig,
    sampler: &mut ProfileSampler,
    nodes: &Result<Nodes, Refusal>,
    current: &mut Setting,
) -> Result<(), Stopping> {
    let began = Instant::now();
    let first = measure(weak, config, sampler)?;
    let p = plan(config, *current, &first);
    let mut decision = TranquilizerDecision {
        at: Duration::ZERO,
        workload: p.workload,
        kept: *current,
        reason: TranquilReason::LeverRefused,
        first,
        second: None,
        refusal: None,
    };
    match apply(weak, nodes, *current, p.second)? {
        Err(refused) => {
            // Back to the setting in force (the part that was applied, if any). A memory
            // policy never set before goes back to local, the OS default.
            let back = Setting {
                memory: current.memory.or(p.second.memory.map(|_| MemPolicy::Local)),
                class: current.class,
            };
            let _ = apply(weak, nodes, p.second, back)?;
            decision.kept = back;
            decision.refusal = Some(refused);
        }
        Ok(()) => {
            let second = measure(weak, config, sampler)?;
            let v = judge(config, &p, &first, &second);
            decision.second = Some(second);
            decision.reason = v.reason;
            decision.kept = v.keep;
            if v.keep != p.second {
                if let Err(refused) = apply(weak, nodes, p.second, v.keep)? {
                    // Could not go back: what is in force is the second setting.
                    decision.kept = p.second;
                    decision.refusal = Some(refused);
                }
            }
        }
    }
    *current = decision.kept;
    record(weak, sampler, decision)?;
    pause(weak, config.pass.saturating_sub(began.elapsed()))
}

/// Measures one profile: `samples` intervals of the workers, after one interval that only sets
/// the baseline (it may span a change of setting).
fn measure(
    weak: &Weak<Shared>,
    config: &TranquilizerConfig,
    sampler: &mut ProfileSampler,
) -> Result<PassProfile, Stopping> {
    let mut misses: Vec<Option<f64>> = Vec::with_capacity(config.samples);
    let mut icx: Vec<f64> = Vec::with_capacity(config.samples);
    let mut errors = 0;
    let _ = sampler.sample_now();
    while icx.len() < config.samples {
        pause(weak, config.sample_interval)?;
        match sampler.sample_now() {
            Ok(Some(p)) => {
                let rate = if p.threads.is_empty() {
                    p.process.involuntary_switches_per_s
                } else {
                    p.threads
                        .iter()
                        .map(|t| t.rates.involuntary_switches_per_s)
                        .sum()
                };
                icx.push(rate);
                misses.push(p.process.llc_miss_ratio);
            }
            Ok(None) => {}
            Err(_) => errors += 1,
        }
    }
    if errors > 0 {
        if let Some(s) = weak.upgrade() {
            if let Some(t) = s.tranquilizer() {
                t.log
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .stats
                    .sample_errors += errors;
            }
        }
    }
    let miss_ratio = misses
        .iter()
        .copied()
        .collect::<Option<Vec<f64>>>()
        .and_then(Spread::of);
    Ok(PassProfile {
        miss_ratio,
        icx_per_s: Spread::of(icx).unwrap_or_default(),
    })
}

/// Moves the levers from `from` to `to`: the class of every worker, and, where `to` names a
/// memory policy other than `from`'s, that of the workers and of the runtime's stack slabs.
/// `Ok(Err(..))`: the first lever the kernel refused (what was changed before stays changed).
fn apply(
    weak: &Weak<Shared>,
    nodes: &Result<Nodes, Refusal>,
    from: Setting,
    to: Setting,
) -> Result<Result<(), (Lever, Refusal)>, Stopping> {
    let shared = weak.upgrade().ok_or(Stopping)?;
    let st = shared.tranquilizer().ok_or(Stopping)?;
    // Every worker, every time (cheap; a worker whose class was changed from outside is put
    // back).
    for tid in st.threads.tids() {
        match levers::set_class(tid, to.class) {
            Ok(()) | Err(Refusal::ThreadGone) => {}
            Err(r) => return Ok(Err((Lever::Class(to.class), r))),
        }
    }
    let Some(policy) = to.memory.filter(|&m| Some(m) != from.memory) else {
        return Ok(Ok(()));
    };
    let nodes = match nodes {
        Ok(n) => n.clone(),
        Err(r) => return Ok(Err((Lever::Memory(policy), *r))),
    };
    for (base, len) in shared.slabs().mapped() {
        if let Err(r) = levers::bind_range(base, len, policy, &nodes) {
            return Ok(Err((Lever::Memory(policy), r)));
        }
    }
    Ok(on_each_worker(&shared, st, move || {
        levers::set_thread_policy(policy, &nodes)
    })?
    .map_err(|r| (Lever::Memory(policy), r)))
}

/// Runs `f` on every worker's OS thread in turn (a green thread that moves from worker to
/// worker: the memory policy is a per-thread setting), stopping at the first error.
fn on_each_worker(
    shared: &Arc<Shared>,
    st: &TranquilizerState,
    f: impl Fn() -> Result<(), Refusal> + Send + 'static,
) -> Result<Result<(), Refusal>, Stopping> {
    let workers = shared.workers().len();
    let task = {
        let stopped = st.stopped.lock().unwrap_or_else(|e| e.into_inner());
        if *stopped {
            return Err(Stopping);
        }
        let visit = move || -> Result<(), Refusal> {
            for i in 0..workers {
                // Cannot fail: a green thread of this runtime, i < workers.
                let _ = crate::placement::migrate_to(i);
                f()?;
            }
            Ok(())
        };
        // SAFETY: a 'static closure and result; joined below with its result type.
        unsafe { crate::spawn::spawn_plain(shared, visit) }
    };
    // SAFETY: the task carries a job of result type Result<(), Refusal>; we own its handle.
    match unsafe { crate::handle::join_task::<Result<(), Refusal>>(task, None) } {
        Ok(r) => Ok(r),
        Err(_) => Ok(Err(Refusal::Other(0))),
    }
}

/// Logs a decision (and traces it).
fn record(
    weak: &Weak<Shared>,
    sampler: &ProfileSampler,
    mut d: TranquilizerDecision,
) -> Result<(), Stopping> {
    let shared = weak.upgrade().ok_or(Stopping)?;
    let st = shared.tranquilizer().ok_or(Stopping)?;
    d.at = st.started.elapsed();
    let mut log = st.log.lock().unwrap_or_else(|e| e.into_inner());
    log.stats.miss_counter = match sampler.llc_status() {
        Availability::Available => "available".into(),
        other => format!("none ({other:?})"),
    };
    log.decide(d);
    drop(log);
    trace(&d);
    Ok(())
}

#[cfg(feature = "tracing")]
fn trace(d: &TranquilizerDecision) {
    tracing::info!(
        target: "footprint::tranquilizer",
        workload = ?d.workload,
        memory = ?d.kept.memory,
        class = %d.kept.class,
        reason = %d.reason,
        reason_kind = ?d.reason,
        icx_mean = d.first.icx_per_s.mean,
        icx_std_dev = d.first.icx_per_s.std_dev,
        refusal = ?d.refusal,
        "tranquilizer decision"
    );
}

#[cfg(not(feature = "tracing"))]
fn trace(_d: &TranquilizerDecision) {}

#[cfg(test)]
mod tests {
    use super::super::levers::class_of;
    use super::super::{SchedClass, TranquilReason, TranquilizerConfig, Workload};
    use crate::Runtime;
    use std::time::{Duration, Instant};

    #[test]
    fn passes_decide_with_reasons_and_the_workers_are_in_a_class_it_set() {
        let rt = Runtime::builder()
            .workers(2)
            .pin(false)
            .tranquilizer(
                TranquilizerConfig::new()
                    .sampling(Duration::from_millis(10), 3)
                    .pass(Duration::from_millis(80)),
            )
            .build()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let stats = loop {
            // Work that yields, so the workers are busy and switch.
            rt.block_on(|| {
                crate::scope(|s| {
                    for _ in 0..4 {
                        s.spawn(|| {
                            for _ in 0..200 {
                                crate::yield_now();
                            }
                        });
                    }
                })
            });
            let t = rt.stats().tranquilizer.unwrap();
            if t.passes >= 3 {
                break t;
            }
            assert!(Instant::now() < deadline, "no 3 passes in 30 s: {t}");
        };
        assert!(stats.decisions.len() >= 3);
        let no_counter = stats.miss_counter != "available";
        for d in &stats.decisions {
            assert!(d.refusal.is_none(), "SCHED_BATCH is never refused: {d}");
            if no_counter {
                assert_eq!(d.workload, Workload::Unclassified);
                assert_eq!(d.kept.memory, None, "memory left as it is: {d}");
                assert!(matches!(
                    d.reason,
                    TranquilReason::NoMissCounterIcxFell
                        | TranquilReason::NoMissCounterIcxDidNotFall
                ));
            }
            assert!(d.second.is_some());
        }
        assert!(stats.to_string().contains("tranquilizer:"));
        let tids = rt.shared.tranquilizer().unwrap().threads.tids();
        assert_eq!(tids.len(), 2);
        for tid in tids {
            let c = class_of(tid).unwrap();
            assert!(matches!(c, SchedClass::Other | SchedClass::Batch), "{c}");
        }
    }

    #[test]
    fn a_real_time_class_is_applied_where_permitted_and_refused_with_a_reason_elsewhere() {
        let rr = SchedClass::RoundRobin { priority: 1 };
        let rt = Runtime::builder()
            .workers(1)
            .pin(false)
            .tranquilizer(
                TranquilizerConfig::new()
                    .sampling(Duration::from_millis(5), 2)
                    .pass(Duration::from_millis(30))
                    .fixed_class(rr),
            )
            .build()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let stats = loop {
            rt.block_on(|| {
                for _ in 0..100 {
                    crate::yield_now();
                }
            });
            let t = rt.stats().tranquilizer.unwrap();
            if t.passes >= 2 {
                break t;
            }
            assert!(Instant::now() < deadline, "no 2 passes in 30 s: {t}");
        };
        for d in &stats.decisions {
            match d.refusal {
                None => assert!(matches!(d.kept.class, SchedClass::Other) || d.kept.class == rr),
                Some((lever, why)) => {
                    // A machine without CAP_SYS_NICE: the refusal says which lever and why.
                    assert_eq!(lever, super::super::Lever::Class(rr));
                    assert_eq!(why, super::super::Refusal::NotPermitted, "{d}");
                    assert_eq!(d.reason, TranquilReason::LeverRefused);
                    assert!(d.to_string().contains("CAP_SYS_NICE"));
                }
            }
        }
        assert_eq!(
            stats.refusals,
            stats
                .decisions
                .iter()
                .filter(|d| d.refusal.is_some())
                .count() as u64
        );
    }

    #[test]
    fn the_memory_lever_reaches_every_worker_and_the_stacks_or_says_why_not() {
        use super::super::levers::{thread_policy_mode, Nodes};
        use super::super::{MemPolicy, Setting};
        let rt = Runtime::builder()
            .workers(2)
            .pin(false)
            .tranquilizer(TranquilizerConfig::new())
            .build()
            .unwrap();
        // Stacks exist (a slab is mapped) before the lever moves.
        rt.block_on(|| crate::spawn(|| 1).join().unwrap());
        let weak = std::sync::Arc::downgrade(&rt.shared);
        let nodes = Nodes::allowed();
        let from = Setting {
            memory: None,
            class: SchedClass::Other,
        };
        let to = Setting {
            memory: Some(MemPolicy::Interleave),
            class: SchedClass::Other,
        };
        let applied = super::apply(&weak, &nodes, from, to).ok().unwrap();
        match applied {
            Ok(()) => {
                let modes = rt.broadcast(|_| thread_policy_mode());
                assert_eq!(modes, vec![Ok(3), Ok(3)], "MPOL_INTERLEAVE on both workers");
                let back = super::apply(
                    &weak,
                    &nodes,
                    to,
                    Setting {
                        memory: Some(MemPolicy::Local),
                        class: SchedClass::Other,
                    },
                );
                assert_eq!(back.ok().unwrap(), Ok(()));
                let modes = rt.broadcast(|_| thread_policy_mode());
                assert_eq!(modes, vec![Ok(0), Ok(0)], "MPOL_DEFAULT again");
            }
            // A kernel without NUMA support says so; nothing panics.
            Err((lever, why)) => {
                assert_eq!(lever, super::super::Lever::Memory(MemPolicy::Interleave));
                assert_eq!(why, super::super::Refusal::NotSupported);
            }
        }
    }

    #[test]
    fn an_impossible_config_is_a_typed_build_error() {
        let e = Runtime::builder()
            .workers(1)
            .tranquilizer(TranquilizerConfig::new().sampling(Duration::from_millis(100), 1))
            .build()
            .unwrap_err();
        assert!(matches!(e, crate::Error::InvalidConfig { .. }), "{e}");
        assert!(e.to_string().contains("at least 2"));
    }
}
