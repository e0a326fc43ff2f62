//! The two levers, as Linux system calls: a thread's scheduling class
//! (`sched_setscheduler`) and memory policy (`set_mempolicy` for the calling thread, `mbind`
//! for a mapped range), with every refusal turned into a [`Refusal`] (never a panic).

use super::config::{MemPolicy, SchedClass};
use std::fmt;

/// Linux `MPOL_DEFAULT` / `MPOL_INTERLEAVE` and `get_mempolicy`'s `MPOL_F_MEMS_ALLOWED`.
const MPOL_DEFAULT: libc::c_int = 0;
const MPOL_INTERLEAVE: libc::c_int = 3;
const MPOL_F_MEMS_ALLOWED: libc::c_ulong = 4;
/// Bits of the node masks passed to the kernel (the kernel's default `MAX_NUMNODES` is at most
/// 1024).
const MASK_BITS: usize = 1024;
const MASK_WORDS: usize = MASK_BITS / 64;

/// Which lever a refusal is about.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lever {
    /// The workers' scheduling class.
    Class(SchedClass),
    /// The workers' and stacks' memory policy.
    Memory(MemPolicy),
}

impl fmt::Display for Lever {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lever::Class(c) => write!(f, "scheduling class {c}"),
            Lever::Memory(m) => write!(f, "memory policy {m}"),
        }
    }
}

/// Why the kernel refused a lever.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// `EPERM`: the process may not (a real-time class needs `CAP_SYS_NICE` or an
    /// `RLIMIT_RTPRIO` at or above the priority; a container may forbid either).
    NotPermitted,
    /// `EINVAL`: the kernel does not accept the value (e.g. a priority out of range, a class
    /// this kernel lacks, or no allowed node).
    Invalid,
    /// `ENOSYS`: the kernel has no such call (NUMA policies need `CONFIG_NUMA`).
    NotSupported,
    /// `ESRCH`: the worker thread is gone.
    ThreadGone,
    /// Some other errno.
    Other(i32),
}

impl Refusal {
    /// The refusal an errno means.
    ///
    /// ```
    /// use footprint_runtime::tranquilizer::Refusal;
    /// assert_eq!(Refusal::from_errno(libc::EPERM), Refusal::NotPermitted);
    /// assert_eq!(Refusal::from_errno(libc::EIO), Refusal::Other(libc::EIO));
    /// ```
    pub fn from_errno(errno: i32) -> Refusal {
        match errno {
            libc::EPERM | libc::EACCES => Refusal::NotPermitted,
            libc::EINVAL => Refusal::Invalid,
            libc::ENOSYS | libc::EOPNOTSUPP => Refusal::NotSupported,
            libc::ESRCH => Refusal::ThreadGone,
            e => Refusal::Other(e),
        }
    }

    fn last() -> Refusal {
        Refusal::from_errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotPermitted => f.write_str(
                "not permitted (EPERM): real-time classes need CAP_SYS_NICE or RLIMIT_RTPRIO \
                 (ulimit -r) at or above the priority; use SchedClass::Batch otherwise",
            ),
            Refusal::Invalid => f.write_str("invalid for this kernel (EINVAL)"),
            Refusal::NotSupported => {
                f.write_str("not supported by this kernel (ENOSYS: no NUMA support)")
            }
            Refusal::ThreadGone => f.write_str("the worker thread is gone (ESRCH)"),
            Refusal::Other(e) => write!(f, "errno {e}"),
        }
    }
}

/// Puts thread `tid` (0: the caller) in `class`.
pub(crate) fn set_class(tid: i32, class: SchedClass) -> Result<(), Refusal> {
    let (policy, priority) = match class {
        SchedClass::Other => (libc::SCHED_OTHER, 0),
        SchedClass::Batch => (libc::SCHED_BATCH, 0),
        SchedClass::RoundRobin { priority } => (libc::SCHED_RR, i32::from(priority)),
        SchedClass::Fifo { priority } => (libc::SCHED_FIFO, i32::from(priority)),
    };
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: a valid pointer to an initialised sched_param; the kernel checks tid and values.
    if unsafe { libc::sched_setscheduler(tid, policy, &param) } == 0 {
        Ok(())
    } else {
        Err(Refusal::last())
    }
}

/// The class thread `tid` (0: the caller) is in, if it can be read and is one of ours.
#[cfg(test)]
pub(crate) fn class_of(tid: i32) -> Option<SchedClass> {
    // SAFETY: no pointers; the kernel checks tid.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a valid out-pointer.
    if policy < 0 || unsafe { libc::sched_getparam(tid, &mut param) } != 0 {
        return None;
    }
    let priority = u8::try_from(param.sched_priority).ok()?;
    match policy {
        libc::SCHED_OTHER => Some(SchedClass::Other),
        libc::SCHED_BATCH => Some(SchedClass::Batch),
        libc::SCHED_RR => Some(SchedClass::RoundRobin { priority }),
        libc::SCHED_FIFO => Some(SchedClass::Fifo { priority }),
        _ => None,
    }
}

/// The NUMA nodes the process may allocate on (its cpuset's `mems`), as a kernel node mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Nodes {
    mask: [libc::c_ulong; MASK_WORDS],
}

impl Nodes {
    /// The allowed nodes, from `get_mempolicy(MPOL_F_MEMS_ALLOWED)`.
    pub(crate) fn allowed() -> Result<Nodes, Refusal> {
        let mut mode: libc::c_int = 0;
        let mut nodes = Nodes {
            mask: [0; MASK_WORDS],
        };
        // SAFETY: valid out-pointers; the mask holds MASK_BITS bits.
        let r = unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                &mut mode as *mut libc::c_int,
                nodes.mask.as_mut_ptr(),
                MASK_BITS as libc::c_ulong,
                std::ptr::null_mut::<libc::c_void>(),
                MPOL_F_MEMS_ALLOWED,
            )
        };
        if r != 0 {
            return Err(Refusal::last());
        }
        if nodes.count() == 0 {
            return Err(Refusal::Invalid);
        }
        Ok(nodes)
    }

    /// How many nodes.
    pub(crate) fn count(&self) -> usize {
        self.mask.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The policy's mode and mask arguments.
    fn args(&self, p: MemPolicy) -> (libc::c_int, *const libc::c_ulong, libc::c_ulong) {
        match p {
            MemPolicy::Local => (MPOL_DEFAULT, std::ptr::null(), 0),
            MemPolicy::Interleave => (
                MPOL_INTERLEAVE,
                self.mask.as_ptr(),
                // The kernel reads maxnode - 1 bits.
                (MASK_BITS + 1) as libc::c_ulong,
            ),
        }
    }
}

/// Sets the calling thread's memory policy.
pub(crate) fn set_thread_policy(p: MemPolicy, nodes: &Nodes) -> Result<(), Refusal> {
    let (mode, mask, maxnode) = nodes.args(p);
    // SAFETY: mask is null or points to MASK_WORDS words that outlive the call.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, mask, maxnode) };
    if r == 0 {
        Ok(())
    } else {
        Err(Refusal::last())
    }
}

/// Sets the policy of the mapped range `base..base + len` (page-aligned) for pages not yet
/// faulted in (no move of those already present: moving a running program's stacks would cost
/// more than the policy can win back in a pass).
pub(crate) fn bind_range(
    base: usize,
    len: usize,
    p: MemPolicy,
    nodes: &Nodes,
) -> Result<(), Refusal> {
    let (mode, mask, maxnode) = nodes.args(p);
    // SAFETY: the range is one of the runtime's own mappings (alive while the runtime is); the
    // mask is null or valid for the call; flags 0 change no page already faulted.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            base as *mut libc::c_void,
            len as libc::c_ulong,
            mode,
            mask,
            maxnode,
            0 as libc::c_uint,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(Refusal::last())
    }
}

/// The calling thread's memory policy mode (`MPOL_DEFAULT` 0, `MPOL_INTERLEAVE` 3, ...).
#[cfg(test)]
pub(crate) fn thread_policy_mode() -> Result<i32, Refusal> {
    let mut mode: libc::c_int = -1;
    // SAFETY: a valid out-pointer; no mask asked for (null, 0).
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            std::ptr::null_mut::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    if r == 0 {
        Ok(mode)
    } else {
        Err(Refusal::last())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_map_to_refusals() {
        assert_eq!(Refusal::from_errno(libc::EPERM), Refusal::NotPermitted);
        assert_eq!(Refusal::from_errno(libc::EINVAL), Refusal::Invalid);
        assert_eq!(Refusal::from_errno(libc::ENOSYS), Refusal::NotSupported);
        assert_eq!(Refusal::from_errno(libc::ESRCH), Refusal::ThreadGone);
        assert_eq!(Refusal::from_errno(libc::EIO), Refusal::Other(libc::EIO));
        assert!(Refusal::NotPermitted.to_string().contains("CAP_SYS_NICE"));
    }

    #[test]
    fn an_out_of_range_priority_is_refused_with_a_reason() {
        let t = std::thread::spawn(|| {
            let r = set_class(0, SchedClass::Fifo { priority: 200 });
            (r, class_of(0))
        });
        let (r, class) = t.join().unwrap();
        assert_eq!(r, Err(Refusal::Invalid));
        assert_eq!(class, Some(SchedClass::Other), "the class did not change");
    }

    #[test]
    fn batch_is_allowed_and_read_back_and_the_thread_can_return() {
        let t = std::thread::spawn(|| {
            set_class(0, SchedClass::Batch).unwrap();
            let batch = class_of(0);
            set_class(0, SchedClass::Other).unwrap();
            (batch, class_of(0))
        });
        assert_eq!(
            t.join().unwrap(),
            (Some(SchedClass::Batch), Some(SchedClass::Other))
        );
    }

    #[test]
    fn a_gone_thread_is_a_typed_refusal() {
        // A tid far above pid_max's default (4 194 304 at most) names no thread.
        assert_eq!(
            set_class(i32::MAX - 7, SchedClass::Batch),
            Err(Refusal::ThreadGone)
        );
    }

    #[test]
    fn interleave_and_local_on_the_allowed_nodes_or_a_typed_refusal() {
        let t = std::thread::spawn(|| match Nodes::allowed() {
            Ok(nodes) => {
                assert!(nodes.count() >= 1);
                set_thread_policy(MemPolicy::Interleave, &nodes)?;
                set_thread_policy(MemPolicy::Local, &nodes)
            }
            Err(r) => Err(r),
        });
        match t.join().unwrap() {
            Ok(()) => {}
            // A kernel without NUMA: the refusal says so.
            Err(r) => assert_eq!(r, Refusal::NotSupported, "{r}"),
        }
    }
}
