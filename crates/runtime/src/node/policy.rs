//! ADAPT's Policy Allocator (003 §6.2.2) as a pure function: which memory policy and which
//! scheduling class each co-scheduled program should run with, given the cores configuration.
//!
//! The paper's rule: a CPU-intensive, low-contention program on all cores keeps the defaults
//! (next-touch memory, TS); every other program gets the random (interleaved) policy and the
//! fixed-priority class. On all cores the programs share the CPUs, and mixing TS and FF there
//! "dramatically degrades overall performance", so on all cores every program gets the same
//! class (the fixed one as soon as one program needs it); on processor sets each decides alone.

use super::allocator::{cpu_bound_uncontended, AllocatorConfig, CoresConfig};
use super::model::ProgramProfile;
use crate::tranquilizer::MemPolicy;

/// One program's policies.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramPolicy {
    /// Its memory policy.
    pub memory: MemPolicy,
    /// Whether it runs in the fixed-priority class (else the default one).
    pub fixed_class: bool,
}

/// The policies of `programs` (in order) under `config`.
///
/// ```
/// use footprint_runtime::node::{policies, AllocatorConfig, CoresConfig, ProgramProfile};
/// use footprint_runtime::tranquilizer::MemPolicy;
/// let cpu = ProgramProfile { mpa: 0.01, lock: 1.0, threads: 8, ..Default::default() };
/// let p = policies(&[cpu, cpu], &CoresConfig::AllCores, &AllocatorConfig::default());
/// assert!(p.iter().all(|p| p.memory == MemPolicy::Local && !p.fixed_class));
/// ```
pub fn policies(
    programs: &[ProgramProfile],
    config: &CoresConfig,
    allocator: &AllocatorConfig,
) -> Vec<ProgramPolicy> {
    let all_cores = matches!(config, CoresConfig::AllCores);
    let plain: Vec<bool> = programs
        .iter()
        .map(|p| all_cores && cpu_bound_uncontended(p, allocator))
        .collect();
    let uniform_fixed = all_cores && plain.iter().any(|&p| !p);
    plain
        .iter()
        .map(|&plain| ProgramPolicy {
            memory: if plain {
                MemPolicy::Local
            } else {
                MemPolicy::Interleave
            },
            fixed_class: if all_cores { uniform_fixed } else { !plain },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(mpa: f64, lock: f64) -> ProgramProfile {
        ProgramProfile {
            mpa,
            lock,
            threads: 16,
            ..Default::default()
        }
    }

    #[test]
    fn cpu_bound_uncontended_programs_on_all_cores_keep_the_defaults() {
        let p = policies(
            &[prog(0.01, 1.0), prog(0.02, 0.0)],
            &CoresConfig::AllCores,
            &AllocatorConfig::default(),
        );
        assert_eq!(
            p,
            vec![
                ProgramPolicy {
                    memory: MemPolicy::Local,
                    fixed_class: false
                };
                2
            ]
        );
    }

    #[test]
    fn on_all_cores_one_contended_program_puts_every_program_in_the_fixed_class() {
        // apsi-like (lock-bound) beside a CPU-bound uncontended program.
        let p = policies(
            &[prog(0.05, 40.0), prog(0.01, 1.0)],
            &CoresConfig::AllCores,
            &AllocatorConfig::default(),
        );
        assert_eq!(p[0].memory, MemPolicy::Interleave);
        assert_eq!(p[1].memory, MemPolicy::Local);
        assert!(
            p[0].fixed_class && p[1].fixed_class,
            "one class on all cores: {p:?}"
        );
    }

    #[test]
    fn on_processor_sets_every_program_gets_random_and_fixed() {
        // The paper: the defaults only for CPU-bound uncontended programs *on all cores*.
        let p = policies(
            &[prog(0.05, 40.0), prog(0.01, 1.0)],
            &CoresConfig::Sets(vec![16, 48]),
            &AllocatorConfig::default(),
        );
        assert!(p
            .iter()
            .all(|p| p.memory == MemPolicy::Interleave && p.fixed_class));
    }
}
