//! The node-wide table of co-scheduled runtimes: one file under `/dev/shm`, mapped shared by
//! every member, with a versioned layout ([`LAYOUT_VERSION`]).
//!
//! # The lock
//!
//! Every read and write of the table happens under an exclusive `flock` on the file. The
//! kernel releases a `flock` when its holder dies (like a robust futex), so a member killed
//! while it holds the lock never blocks the others; and unlike a `pthread` robust mutex in
//! the mapping, it needs no lock layout shared between binaries built against different C
//! libraries. A member killed half-way through an update leaves at most its own slot
//! half-written, and slots of dead processes are removed by the next member that takes the
//! lock ([`TableGuard::sweep`]): a slot names its process by pid *and* start time, so a reused
//! pid does not keep a dead member's slot alive.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// "FPNODE" and two zero bytes: the table's magic number.
const MAGIC: u64 = u64::from_le_bytes(*b"FPNODE\0\0");
/// The layout version: bumped whenever the header or slot layout changes.
pub const LAYOUT_VERSION: u32 = 1;
/// Members a table holds.
pub const MAX_MEMBERS: usize = 64;
/// CPUs an assignment can name (1024).
const CPU_WORDS: usize = 16;

#[repr(C)]
struct Header {
    magic: u64,
    version: u32,
    max_members: u32,
    /// Bumped at every join, leave, removal and assignment.
    generation: u64,
    /// Pid of the member that last acted as the allocator.
    allocator_pid: u32,
    _pad: u32,
}

/// One member's slot (`pid == 0`: free).
#[repr(C)]
#[derive(Clone, Copy)]
struct Slot {
    pid: u32,
    workers: u32,
    /// The process's start time (clock ticks since boot, `/proc/<pid>/stat` field 22).
    start_time: u64,
    /// Profiles published so far.
    heartbeat: u64,
    /// usr, sys, lat, lock (percent), mpa (ratio).
    profile: [f64; 5],
    /// Generation of the table when this slot's assignment was last written.
    assigned_gen: u64,
    /// 1: all cores; 0: the CPUs in `assigned`.
    assigned_all: u32,
    /// CPUs in `assigned` (0 before the first assignment).
    assigned_count: u32,
    assigned: [u64; CPU_WORDS],
}

#[repr(C)]
struct Layout {
    header: Header,
    slots: [Slot; MAX_MEMBERS],
}

const SIZE: usize = std::mem::size_of::<Layout>();

/// What a member published, and what it was given.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberView {
    /// The member's slot.
    pub slot: usize,
    /// Its process id.
    pub pid: u32,
    /// Its workers.
    pub workers: usize,
    /// Profiles published.
    pub heartbeat: u64,
    /// Its last profile (usr, sys, lat, lock percent; mpa ratio; threads = workers).
    pub profile: super::ProgramProfile,
    /// Its assignment: `None` before the first, `Some(None)` all cores, `Some(Some(cpus))` a
    /// processor set.
    pub assigned: Option<Option<Vec<usize>>>,
}

/// Why the table could not be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum TableError {
    /// Opening, sizing, locking or mapping the file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The file holds another layout (another version of footprint, or not a table).
    Layout {
        /// The file.
        path: PathBuf,
        /// What was found.
        found: String,
    },
    /// All [`MAX_MEMBERS`] slots are taken by live members.
    Full,
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableError::Io { path, source } => {
                write!(f, "node table {}: {source}", path.display())
            }
            TableError::Layout { path, found } => write!(
                f,
                "node table {} has {found}, this build uses layout version {LAYOUT_VERSION}: \
                 remove the file once no program uses it, or give this program another \
                 NodeConfig::name",
                path.display()
            ),
            TableError::Full => write!(
                f,
                "node table full: {MAX_MEMBERS} live members; use another NodeConfig::name"
            ),
        }
    }
}

impl std::error::Error for TableError {}

/// An open table (the file and its shared mapping).
pub struct NodeTable {
    file: File,
    path: PathBuf,
    map: *mut Layout,
}

// SAFETY: the mapping is only read or written under the file lock (`lock`), whichever thread
// holds the table.
unsafe impl Send for NodeTable {}
// SAFETY: as above: `&NodeTable` gives access only through `lock`.
unsafe impl Sync for NodeTable {}

impl std::fmt::Debug for NodeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeTable")
            .field("path", &self.path)
            .finish()
    }
}

impl Drop for NodeTable {
    fn drop(&mut self) {
        // SAFETY: our own mapping of SIZE bytes; nothing refers to it after the table.
        unsafe {
            libc::munmap(self.map.cast(), SIZE);
        }
    }
}

/// The table file for a node-table name: `/dev/shm/footprint-node-<name>`.
pub fn table_path(name: &str) -> PathBuf {
    PathBuf::from(format!("/dev/shm/footprint-node-{name}"))
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> TableError + '_ {
    move |source| TableError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl NodeTable {
    /// Opens the table at `path`, creating and initialising it if it does not exist.
    pub fn open(path: &Path) -> Result<NodeTable, TableError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(io_err(path))?;
        let fd = file.as_raw_fd();
        let _lock = FileLock::exclusive(fd).map_err(io_err(path))?;
        let len = file.metadata().map_err(io_err(path))?.len() as usize;
        if len == 0 {
            file.set_len(SIZE as u64).map_err(io_err(path))?;
        } else if len != SIZE {
            return Err(TableError::Layout {
                path: path.to_path_buf(),
                found: format!("{len} bytes (a table of this layout has {SIZE})"),
            });
        }
        // SAFETY: a shared read-write mapping of the whole file, which has SIZE bytes.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io_err(path)(io::Error::last_os_error()));
        }
        let table = NodeTable {
            file,
            path: path.to_path_buf(),
            map: map.cast(),
        };
        // SAFETY: we hold the lock; the mapping is SIZE bytes (zeroes when new).
        let h = unsafe { &mut (*table.map).header };
        if len == 0 || h.magic == 0 {
            // New (or its creator died before writing the header: all zeroes then).
            h.version = LAYOUT_VERSION;
            h.max_members = MAX_MEMBERS as u32;
            h.magic = MAGIC;
        } else if h.magic != MAGIC || h.version != LAYOUT_VERSION {
            return Err(TableError::Layout {
                path: path.to_path_buf(),
                found: format!("magic {:#x}, layout version {}", h.magic, h.version),
            });
        }
        Ok(table)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the table's lock (blocking) for a series of reads and writes.
    pub fn lock(&self) -> Result<TableGuard<'_>, TableError> {
        let lock = FileLock::exclusive(self.file.as_raw_fd()).map_err(io_err(&self.path))?;
        Ok(TableGuard {
            table: self,
            _lock: lock,
        })
    }

    /// The live members, after removing dead ones.
    pub fn members(&self) -> Result<Vec<MemberView>, TableError> {
        let mut g = self.lock()?;
        g.sweep();
        Ok(g.members())
    }
}

/// An exclusive `flock`, released on drop (and by the kernel if the process dies).
struct FileLock(libc::c_int);

impl FileLock {
    fn exclusive(fd: libc::c_int) -> io::Result<FileLock> {
        loop {
            // SAFETY: a valid open descriptor.
            if unsafe { libc::flock(fd, libc::LOCK_EX) } == 0 {
                return Ok(FileLock(fd));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // SAFETY: the descriptor we locked, still open (its table outlives the guard).
        unsafe {
            libc::flock(self.0, libc::LOCK_UN);
        }
    }
}

/// The table, locked.
pub struct TableGuard<'a> {
    table: &'a NodeTable,
    _lock: FileLock,
}

/// The start time of process `pid` (clock ticks since boot), if it exists and is not a
/// zombie.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // Field 3, the state: a zombie (killed, not yet reaped) or dead process is gone.
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    // The start time is field 22, the 19th after the state.
    fields.nth(18)?.parse().ok()
}

fn alive(pid: u32, started: u64) -> bool {
    start_time(pid) == Some(started)
}

impl TableGuard<'_> {
    fn layout(&mut self) -> &mut Layout {
        // SAFETY: we hold the file lock: no other process or thread touches the mapping.
        unsafe { &mut *self.table.map }
    }

    /// Removes the slots of processes that are gone (or whose pid now names another
    /// process); returns how many.
    pub fn sweep(&mut self) -> usize {
        let l = self.layout();
        let mut removed = 0;
        for s in l.slots.iter_mut() {
            if s.pid != 0 && !alive(s.pid, s.start_time) {
                *s = empty_slot();
                removed += 1;
            }
        }
        if removed > 0 {
            l.header.generation += 1;
        }
        removed
    }

    /// Takes a free slot for the calling process.
    pub(crate) fn join(&mut self, workers: usize) -> Result<usize, TableError> {
        let pid = std::process::id();
        let started = start_time(pid).unwrap_or(0);
        let l = self.layout();
        let i = l
            .slots
            .iter()
            .position(|s| s.pid == 0)
            .ok_or(TableError::Full)?;
        l.slots[i] = empty_slot();
        l.slots[i].workers = workers as u32;
        l.slots[i].start_time = started;
        l.slots[i].pid = pid;
        l.header.generation += 1;
        Ok(i)
    }

    /// Frees slot `i` if the calling process holds it.
    pub(crate) fn leave(&mut self, i: usize) {
        let pid = std::process::id();
        let l = self.layout();
        if l.slots.get(i).is_some_and(|s| s.pid == pid) {
            l.slots[i] = empty_slot();
            l.header.generation += 1;
        }
    }

    /// Writes the profile of slot `i`.
    pub(crate) fn publish(&mut self, i: usize, p: &super::ProgramProfile) {
        let s = &mut self.layout().slots[i];
        s.profile = [p.usr, p.sys, p.lat, p.lock, p.mpa];
        s.heartbeat += 1;
    }

    /// Whether slot `i` acts as the allocator (the first live slot).
    pub(crate) fn is_allocator(&mut self, i: usize) -> bool {
        let l = self.layout();
        let first = l.slots.iter().position(|s| s.pid != 0);
        if first == Some(i) {
            l.header.allocator_pid = l.slots[i].pid;
            true
        } else {
            false
        }
    }

    /// Gives slot `i` all cores (`None`) or the CPUs listed.
    pub(crate) fn assign(&mut self, i: usize, cpus: Option<&[usize]>) {
        let l = self.layout();
        l.header.generation += 1;
        let g = l.header.generation;
        let s = &mut l.slots[i];
        s.assigned = [0; CPU_WORDS];
        match cpus {
            None => {
                s.assigned_all = 1;
                s.assigned_count = 0;
            }
            Some(c) => {
                s.assigned_all = 0;
                let mut n = 0;
                for &cpu in c.iter().filter(|&&c| c < CPU_WORDS * 64) {
                    s.assigned[cpu / 64] |= 1 << (cpu % 64);
                    n += 1;
                }
                s.assigned_count = n;
            }
        }
        s.assigned_gen = g;
    }

    /// The table's generation (changes at every join, leave, removal and assignment).
    pub fn generation(&mut self) -> u64 {
        self.layout().header.generation
    }

    /// The live members as published (call [`sweep`](Self::sweep) first to drop dead ones).
    pub fn members(&mut self) -> Vec<MemberView> {
        self.layout()
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.pid != 0)
            .map(|(i, s)| view(i, s))
            .collect()
    }

    /// The view of slot `i`, if taken.
    pub(crate) fn member(&mut self, i: usize) -> Option<MemberView> {
        let s = self.layout().slots.get(i)?;
        (s.pid != 0).then(|| view(i, s))
    }
}

fn view(i: usize, s: &Slot) -> MemberView {
    let assigned = match (s.assigned_gen, s.assigned_all) {
        (0, _) => None,
        (_, 1) => Some(None),
        _ => Some(Some(
            (0..CPU_WORDS * 64)
                .filter(|&c| s.assigned[c / 64] & (1 << (c % 64)) != 0)
                .collect(),
        )),
    };
    MemberView {
        slot: i,
        pid: s.pid,
        workers: s.workers as usize,
        heartbeat: s.heartbeat,
        profile: super::ProgramProfile {
            usr: s.profile[0],
            sys: s.profile[1],
            lat: s.profile[2],
            lock: s.profile[3],
            mpa: s.profile[4],
            threads: s.workers as usize,
        },
        assigned,
    }
}

fn empty_slot() -> Slot {
    Slot {
        pid: 0,
        workers: 0,
        start_time: 0,
        heartbeat: 0,
        profile: [0.0; 5],
        assigned_gen: 0,
        assigned_all: 0,
        assigned_count: 0,
        assigned: [0; CPU_WORDS],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("fp-node-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn join_publish_assign_leave() {
        let p = temp("basic");
        let t = NodeTable::open(&p).unwrap();
        let mut g = t.lock().unwrap();
        let i = g.join(4).unwrap();
        assert!(g.is_allocator(i));
        let prof = super::super::ProgramProfile {
            usr: 50.0,
            lock: 3.0,
            threads: 4,
            ..Default::default()
        };
        g.publish(i, &prof);
        g.assign(i, Some(&[1, 3]));
        let m = g.member(i).unwrap();
        assert_eq!(m.profile, prof);
        assert_eq!(m.assigned, Some(Some(vec![1, 3])));
        g.assign(i, None);
        assert_eq!(g.member(i).unwrap().assigned, Some(None));
        g.leave(i);
        assert!(g.members().is_empty());
        drop(g);
        // A second open sees the same table.
        let t2 = NodeTable::open(&p).unwrap();
        assert!(t2.members().unwrap().is_empty());
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn concurrent_members_never_see_each_others_half_writes() {
        const THREADS: usize = 8;
        const ROUNDS: usize = 200;
        let p = temp("stress");
        let (tx, rx) = std::sync::mpsc::channel();
        let path = p.clone();
        std::thread::spawn(move || {
            let joins = std::sync::atomic::AtomicUsize::new(0);
            std::thread::scope(|s| {
                for t in 0..THREADS {
                    let (path, joins) = (&path, &joins);
                    s.spawn(move || {
                        // Its own open file: flock excludes between open files, even in one
                        // process, as between processes.
                        let table = NodeTable::open(path).unwrap();
                        for r in 0..ROUNDS {
                            let mut g = table.lock().unwrap();
                            let i = g.join(t + 1).unwrap();
                            joins.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let mine = super::super::ProgramProfile {
                                usr: (t * 1000 + r) as f64,
                                threads: t + 1,
                                ..Default::default()
                            };
                            g.publish(i, &mine);
                            g.assign(i, Some(&[t, THREADS + r]));
                            let m = g.member(i).unwrap();
                            assert_eq!((m.profile, m.workers), (mine, t + 1));
                            assert_eq!(m.assigned, Some(Some(vec![t, THREADS + r])));
                            assert!(g.members().len() <= THREADS);
                            g.leave(i);
                        }
                    });
                }
            });
            let _ = tx.send(joins.into_inner());
        });
        let joins = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the stress test made no progress in 120 s (a lock never released?)");
        assert_eq!(joins, THREADS * ROUNDS);
        assert!(NodeTable::open(&p).unwrap().members().unwrap().is_empty());
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn a_file_of_another_layout_is_refused_with_what_to_do() {
        let p = temp("layout");
        std::fs::write(&p, b"not a table").unwrap();
        let e = NodeTable::open(&p).unwrap_err();
        assert!(matches!(e, TableError::Layout { .. }));
        assert!(e.to_string().contains("remove the file"));
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn a_dead_processs_slot_is_swept_and_a_reused_pid_does_not_keep_it() {
        let p = temp("dead");
        let t = NodeTable::open(&p).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let started = start_time(pid).unwrap();
        {
            let mut g = t.lock().unwrap();
            let l = g.layout();
            l.slots[5].pid = pid;
            l.slots[5].start_time = started;
            l.slots[6].pid = std::process::id();
            l.slots[6].start_time = started.wrapping_add(12345); // our pid, another start
            assert_eq!(
                g.sweep(),
                1,
                "the live child stays, the wrong start time goes"
            );
            assert_eq!(g.members().len(), 1);
        }
        child.kill().unwrap();
        // Killed but not reaped yet (a zombie) already counts as gone; poll, as the kill is
        // delivered asynchronously.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !t.members().unwrap().is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the zombie was never swept"
            );
            std::thread::yield_now();
        }
        child.wait().unwrap();
        let m = t.members().unwrap();
        assert!(m.is_empty(), "the killed child's slot was removed: {m:?}");
        let _ = std::fs::remove_file(&p);
    }
}
