//! Linux CPU lists (`0-3,8,10-11`) and masks, parsed and printed; sizes as sysfs writes them.

use std::collections::BTreeSet;
use std::fmt;

/// A CPU list such as `0-3,8,10-11` that could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuListError {
    /// The text that was given.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bad CPU list {:?}: {} (expected comma-separated ids or ranges, e.g. \"0-3,8,10-11\")",
            self.text, self.reason
        )
    }
}

impl std::error::Error for CpuListError {}

/// The largest CPU id a list may name (Linux's `NR_CPUS` tops out at 8192; this leaves room and
/// keeps a corrupt range such as `0-4294967295` from allocating gigabytes).
pub const MAX_CPU_ID: usize = 1 << 16;

/// Parses a Linux CPU list (`0-3,8,10-11`; whitespace and a trailing newline are ignored, the
/// empty string is the empty set) into sorted, deduplicated ids.
///
/// ```
/// use footprint_affinity::topology::parse_cpu_list;
/// assert_eq!(parse_cpu_list("0-3,8,10-11\n").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
/// assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
/// assert!(parse_cpu_list("3-1").is_err());
/// ```
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, CpuListError> {
    let err = |reason: String| CpuListError {
        text: text.to_string(),
        reason,
    };
    let parse_id = |s: &str| -> Result<usize, CpuListError> {
        let s = s.trim();
        let id: usize = s
            .parse()
            .map_err(|_| err(format!("{s:?} is not a CPU id")))?;
        if id > MAX_CPU_ID {
            return Err(err(format!("CPU id {id} is above the limit {MAX_CPU_ID}")));
        }
        Ok(id)
    };
    let mut set = BTreeSet::new();
    for part in text.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (parse_id(lo)?, parse_id(hi)?);
                if lo > hi {
                    return Err(err(format!("range {part:?} runs backwards")));
                }
                set.extend(lo..=hi);
            }
            None => {
                set.insert(parse_id(part)?);
            }
        }
    }
    Ok(set.into_iter().collect())
}

/// Parses a Linux CPU mask (`shared_cpu_map` style: hex words separated by commas, most
/// significant first, e.g. `00000000,00000003`).
pub(super) fn parse_cpu_mask(text: &str) -> Result<Vec<usize>, CpuListError> {
    let digits: Vec<char> = text.trim().chars().filter(|&c| c != ',').collect();
    if digits.is_empty() {
        return Err(CpuListError {
            text: text.to_string(),
            reason: "empty mask".into(),
        });
    }
    let mut cpus = Vec::new();
    for (nibble_index, c) in digits.iter().rev().enumerate() {
        let value = c.to_digit(16).ok_or_else(|| CpuListError {
            text: text.to_string(),
            reason: format!("{c:?} is not a hex digit"),
        })?;
        for bit in 0..4 {
            if value & (1 << bit) != 0 {
                let id = nibble_index * 4 + bit;
                if id > MAX_CPU_ID {
                    return Err(CpuListError {
                        text: text.to_string(),
                        reason: format!("CPU id {id} is above the limit {MAX_CPU_ID}"),
                    });
                }
                cpus.push(id);
            }
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// Parses a sysfs cache size: `48K`, `1024K`, `32M`, `1G` (binary units) or plain bytes.
pub(super) fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1u64 << 10),
        'M' | 'm' => (&t[..t.len() - 1], 1 << 20),
        'G' | 'g' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = digits.trim().parse().ok()?;
    n.checked_mul(mult).filter(|&b| b > 0)
}

/// Formats sorted ids compactly as a CPU list (`0-3,8`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

pub(super) fn format_bytes(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}
