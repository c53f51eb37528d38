//! A simulated file system that can crash.
//!
//! Every inode keeps two images. A file has `live` bytes (what reads see) and `durable` bytes
//! (what a disk holds after a power cut); `sync_data` copies one to the other. A directory has
//! `live` and `durable` entries; `sync_dir` copies them. `crash()` builds a new file system from
//! the durable image alone: from the root's durable entries, through durable entries of durable
//! directories, each reachable file holding its durable bytes. Anything not synced is gone.
//!
//! Operations that mutate or sync are numbered from 0, so a test can crash the process at the
//! Nth operation or make exactly that one fail with an I/O error, and then see what survived.

use std::collections::{BTreeMap, HashMap};
use std::error::Error;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{
    DirEntry, Mapped, RenameMode, Vfs, VfsFile, VfsHold, VfsLock, components, entry_components,
};

/// An I/O error to inject with [`SimFs::fail_at`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// EIO (raw OS error 5): the device failed the operation.
    Eio,
    /// ENOSPC (raw OS error 28): the device is full.
    Enospc,
    /// ENOMEM (raw OS error 12): out of memory; a map fails this way when the process has too
    /// many mappings (`vm.max_map_count`).
    Enomem,
    /// EMFILE (raw OS error 24): the process has too many open files.
    Emfile,
}

impl Fault {
    /// The Linux errno this fault stands for.
    pub fn raw_os_error(self) -> i32 {
        match self {
            Self::Eio => 5,
            Self::Enospc => 28,
            Self::Enomem => 12,
            Self::Emfile => 24,
        }
    }

    fn error(self) -> io::Error {
        io::Error::from_raw_os_error(self.raw_os_error())
    }
}

/// An in-memory file system with separate live and durable images. Clones share one file system.
#[derive(Clone)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

type Ino = usize;

/// The root directory is always inode 0.
const ROOT: Ino = 0;

struct State {
    /// Indexed by inode number. Inodes are never reused, so an open handle to a removed file
    /// keeps its own bytes, as with unlink on a real file system.
    nodes: Vec<Node>,
    /// Operations attempted so far; the next one gets this index.
    ops: u64,
    crash_at: Option<u64>,
    faults: BTreeMap<u64, Fault>,
    /// For a fault on a `write_all`: how many of its bytes land before it fails (a short write).
    short_writes: BTreeMap<u64, usize>,
    locked: bool,
    last_write: Option<LastWrite>,
    /// Directory operations since the last `sync_dir`, in order: what a journaling file system
    /// may already have committed when the power goes (see [`SimFs::crash_keeping_dir_ops`]).
    recent_dir_ops: Vec<DirOp>,
    /// Whether this models a file system without `RENAME_NOREPLACE` (kept across crashes: it is
    /// a property of the file system, not of the process).
    link_unlink: bool,
    /// Maps fail with this until cleared (maps are reads, not numbered operations).
    map_fault: Option<Fault>,
    /// Shared locks held now ([`Vfs::lock_shared`]); the exclusive lock waits for none.
    shared_locks: usize,
    /// Files held now ([`Vfs::hold`]), by inode, with how many holds each has.
    holds: BTreeMap<Ino, usize>,
    /// Whether this models a read-only mount: every mutating or sync operation, opening a file
    /// for appending and the exclusive lock fail with EROFS and change nothing.
    read_only: bool,
    /// Operations refused because of `read_only`, so a test can assert none was attempted.
    refused_writes: u64,
}

/// One directory operation's effects on directory entries: `(dir, name, Some(ino))` sets an
/// entry, `(dir, name, None)` removes one. A rename has two effects that land together.
#[derive(Clone, Debug)]
struct DirOp {
    effects: Vec<(Ino, String, Option<Ino>)>,
}

enum Node {
    File(FileNode),
    Dir(DirNode),
}

#[derive(Default)]
struct FileNode {
    live: Vec<u8>,
    durable: Vec<u8>,
}

#[derive(Default)]
struct DirNode {
    live: BTreeMap<String, Ino>,
    durable: BTreeMap<String, Ino>,
}

/// The most recent successful `write_all`, the one `crash_tearing` tears.
#[derive(Clone, Copy)]
struct LastWrite {
    ino: Ino,
    offset: usize,
    len: usize,
}

#[derive(Clone, Copy)]
enum Image {
    Live,
    Durable,
}

/// The payload of the error every operation returns once the simulated process is dead.
#[derive(Debug)]
struct SimCrash {
    op: u64,
}

impl fmt::Display for SimCrash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "simulated crash at op {}", self.op)
    }
}

impl Error for SimCrash {}

impl SimFs {
    /// An empty file system: just the root directory, durable.
    pub fn new() -> Self {
        Self::from_state(State::empty())
    }

    /// An empty file system without `RENAME_NOREPLACE`, as some FUSE and network file systems
    /// are: `rename_noreplace` is a link then an unlink, two numbered operations, so a crash or
    /// a fault can fall between them and leave both names.
    pub fn without_noreplace() -> Self {
        let mut state = State::empty();
        state.link_unlink = true;
        Self::from_state(state)
    }

    /// An empty file system renaming in `mode` (`Unprobed` is taken as `Noreplace`), so a test
    /// can run once per mode.
    pub fn with_rename_mode(mode: RenameMode) -> Self {
        match mode {
            RenameMode::LinkUnlink => Self::without_noreplace(),
            _ => Self::new(),
        }
    }

    /// Makes this file system a read-only mount (`true`) or a writable one again. While it is
    /// read-only, every operation that would write or sync (creating, appending, renaming,
    /// removing, cutting, syncing, and the exclusive lock, which creates or opens `LOCK` for
    /// writing) fails with EROFS, changes nothing, and is counted in
    /// [`refused_writes`](Self::refused_writes); reads, listings and shared locks work.
    pub fn set_read_only(&self, read_only: bool) {
        self.state().read_only = read_only;
    }

    /// How many operations were refused because the file system was read-only.
    pub fn refused_writes(&self) -> u64 {
        self.state().refused_writes
    }

    /// Every map from now on fails with `fault` (`None`: maps work again). A map is a read, so
    /// it is not a numbered operation and `fail_at` cannot reach it.
    pub fn fail_maps(&self, fault: Option<Fault>) {
        self.state().map_fault = fault;
    }

    fn from_state(state: State) -> Self {
        Self {
            state: Arc::new(Mutex::new(state)),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock_state(&self.state)
    }

    /// What a power cut now would leave: a new file system whose live and durable images are both
    /// this one's durable image. Locks are released; the operation counter and faults reset.
    ///
    /// A file the durable entries name twice (a rename synced in one directory only) stays one
    /// file under both names. A directory named twice that way keeps only the first name
    /// reached, since a directory has one parent (and the two names could even form a cycle).
    #[must_use]
    pub fn crash(&self) -> SimFs {
        Self::from_state(self.state().durable_image(None))
    }

    /// As [`crash`](Self::crash), but the most recent successful `write_all`, if its bytes are
    /// not yet durable, reaches the disk torn: its file keeps its live bytes up to that write's
    /// offset plus `min(keep, write length)`. Earlier unsynced writes to the same file made it.
    /// Only when the file's durable bytes are a prefix of its live bytes; otherwise a plain crash.
    #[must_use]
    pub fn crash_tearing(&self, keep: usize) -> SimFs {
        let state = self.state();
        let torn = state.torn_last_write(keep);
        Self::from_state(state.durable_image(torn.as_ref()))
    }

    /// How many crash images [`crash_image`](Self::crash_image) knows.
    pub const CRASH_IMAGES: usize = 4;

    /// Crash image `image` (below [`CRASH_IMAGES`](Self::CRASH_IMAGES)) of this file system:
    /// 0 a plain [`crash`](Self::crash); 1 the last write torn after all its bytes and 2 after
    /// 9 of them ([`crash_tearing`](Self::crash_tearing)); 3 every directory operation since the
    /// last sync kept ([`crash_keeping_dir_ops`](Self::crash_keeping_dir_ops)). The images a
    /// crash test runs every crash point under, in one place. Anything past the last is the
    /// last.
    #[must_use]
    pub fn crash_image(&self, image: usize) -> SimFs {
        match image {
            0 => self.crash(),
            1 => self.crash_tearing(usize::MAX),
            2 => self.crash_tearing(9),
            _ => self.crash_keeping_dir_ops(usize::MAX),
        }
    }

    /// As [`crash`](Self::crash), but the first `n` directory operations (create, create_dir,
    /// rename, remove) issued since the last `sync_dir` reached the disk too, in the order they
    /// were issued — as a journaling file system may commit metadata before anyone asks. This is
    /// how a crash leaves, say, a temp file whose name survived though its directory was never
    /// synced. `n` past the number of such operations keeps them all.
    #[must_use]
    pub fn crash_keeping_dir_ops(&self, n: usize) -> SimFs {
        let mut state = self.state();
        let ops: Vec<DirOp> = state.recent_dir_ops.iter().take(n).cloned().collect();
        // Apply the kept operations to the durable entries, take the image, then put the
        // durable entries back: this file system itself must not change.
        let mut undo: Vec<(Ino, String, Option<Ino>)> = Vec::new();
        for (dir, name, target) in ops.iter().flat_map(|op| op.effects.iter()) {
            if let Node::Dir(entries) = &mut state.nodes[*dir] {
                let previous = match target {
                    Some(ino) => entries.durable.insert(name.clone(), *ino),
                    None => entries.durable.remove(name),
                };
                undo.push((*dir, name.clone(), previous));
            }
        }
        let image = state.durable_image(None);
        for (dir, name, previous) in undo.into_iter().rev() {
            if let Node::Dir(entries) = &mut state.nodes[dir] {
                match previous {
                    Some(ino) => entries.durable.insert(name, ino),
                    None => entries.durable.remove(&name),
                };
            }
        }
        Self::from_state(image)
    }

    /// How many directory operations were issued since the last `sync_dir`.
    pub fn recent_dir_ops(&self) -> usize {
        self.state().recent_dir_ops.len()
    }

    /// How many mutating or sync operations were attempted so far (failed ones included).
    pub fn ops(&self) -> u64 {
        self.state().ops
    }

    /// What a process kill leaves, as against a power cut ([`crash`](Self::crash)): the same
    /// file system, live image and all (the kernel keeps what the dead process wrote), with the
    /// crash point cleared so that the next process's operations go through. The dead process's
    /// locks go when its store is dropped; holds ([`Vfs::hold`]) of other processes stay.
    pub fn restart(&self) {
        self.state().crash_at = None;
    }

    /// Operation `op` and every later one fail with the simulated-crash error and change
    /// nothing: the process is dead from there. Use [`crash`](Self::crash) to see what survived.
    pub fn crash_at(&self, op: u64) {
        self.state().crash_at = Some(op);
    }

    /// As [`fail_at`](Self::fail_at), but if operation `op` is a `write_all`, the first
    /// `landed` bytes of it reach the file (live, not durable) before it fails: the short write
    /// a full disk gives. Any other operation at `op` just fails.
    pub fn fail_at_after_writing(&self, op: u64, kind: Fault, landed: usize) {
        let mut state = self.state();
        state.faults.insert(op, kind);
        state.short_writes.insert(op, landed);
    }

    /// Operation `op` alone fails with `kind` and changes nothing; later operations proceed.
    pub fn fail_at(&self, op: u64, kind: Fault) {
        self.state().faults.insert(op, kind);
    }

    /// Whether `err` is the error of an operation at or after a [`crash_at`](Self::crash_at).
    pub fn is_crash(err: &io::Error) -> bool {
        matches!(err.get_ref(), Some(inner) if inner.is::<SimCrash>())
    }

    /// The live bytes of the file at `path`, or `None` if no file is there.
    pub fn live_bytes(&self, path: &str) -> Option<Vec<u8>> {
        self.state().bytes(path, Image::Live)
    }

    /// The durable bytes of the file reached from the root through durable entries only, or
    /// `None` if a crash now would leave no file at `path`.
    pub fn durable_bytes(&self, path: &str) -> Option<Vec<u8>> {
        self.state().bytes(path, Image::Durable)
    }

    /// Every live file's path, sorted (directories are not listed, only the files in them).
    pub fn paths(&self) -> Vec<String> {
        let state = self.state();
        let mut paths = Vec::new();
        let mut pending = vec![(ROOT, String::new())];
        while let Some((ino, prefix)) = pending.pop() {
            let Node::Dir(dir) = &state.nodes[ino] else {
                continue;
            };
            for (name, &child) in &dir.live {
                let path = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}/{name}")
                };
                match state.nodes[child] {
                    Node::File(_) => paths.push(path),
                    Node::Dir(_) => pending.push((child, path)),
                }
            }
        }
        paths.sort_unstable();
        paths
    }
}

impl Default for SimFs {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SimFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("SimFs");
        // try_lock: a debug line must never deadlock on a guard held further up this thread.
        match self.state.try_lock() {
            Ok(state) => out
                .field("ops", &state.ops)
                .field("inodes", &state.nodes.len())
                .field("crash_at", &state.crash_at)
                .field("locked", &state.locked),
            Err(_) => out.field("state", &"<busy>"),
        };
        out.finish_non_exhaustive()
    }
}

/// Poison is ignored: every mutation of the state completes before anything that can panic, so
/// a panic in another test thread cannot have left it half-changed.
fn lock_state(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl State {
    fn empty() -> Self {
        Self {
            nodes: vec![Node::Dir(DirNode::default())],
            ops: 0,
            crash_at: None,
            faults: BTreeMap::new(),
            short_writes: BTreeMap::new(),
            locked: false,
            last_write: None,
            recent_dir_ops: Vec::new(),
            link_unlink: false,
            map_fault: None,
            shared_locks: 0,
            holds: BTreeMap::new(),
            read_only: false,
            refused_writes: 0,
        }
    }

    /// Refuses an operation that would write, on a read-only mount (and counts it).
    fn refuse_if_read_only(&mut self, path: &str) -> io::Result<()> {
        if self.read_only {
            self.refused_writes += 1;
            return Err(read_only_error(path));
        }
        Ok(())
    }

    /// Numbers one mutating or sync operation and decides whether it may run at all.
    fn begin_op(&mut self) -> io::Result<()> {
        // Refused before it is numbered: a read-only mount refuses at the system call, and
        // crash points keep their numbers whether or not the mount is read-only.
        self.refuse_if_read_only("")?;
        let op = self.ops;
        self.ops += 1;
        if let Some(crash_op) = self.crash_at
            && op >= crash_op
        {
            return Err(io::Error::other(SimCrash { op: crash_op }));
        }
        match self.faults.remove(&op) {
            Some(fault) => Err(fault.error()),
            None => Ok(()),
        }
    }

    /// A new, empty file at `path` in the live image (AlreadyExists if the name is taken).
    fn new_file(&mut self, path: &str) -> io::Result<Ino> {
        let (dirs, name) = entry_components(path)?;
        let parent = self.parent_dir(path, &dirs)?;
        if self.dir(parent, path)?.live.contains_key(name) {
            return Err(already_exists(path));
        }
        let ino = self.alloc(Node::File(FileNode::default()));
        self.dir_mut(parent, path)?
            .live
            .insert(name.to_owned(), ino);
        self.note_dir_op(vec![(parent, name.to_owned(), Some(ino))]);
        Ok(ino)
    }

    fn note_dir_op(&mut self, effects: Vec<(Ino, String, Option<Ino>)>) {
        self.recent_dir_ops.push(DirOp { effects });
    }

    fn alloc(&mut self, node: Node) -> Ino {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn dir(&self, ino: Ino, path: &str) -> io::Result<&DirNode> {
        match &self.nodes[ino] {
            Node::Dir(dir) => Ok(dir),
            Node::File(_) => Err(not_a_directory(path)),
        }
    }

    fn dir_mut(&mut self, ino: Ino, path: &str) -> io::Result<&mut DirNode> {
        match &mut self.nodes[ino] {
            Node::Dir(dir) => Ok(dir),
            Node::File(_) => Err(not_a_directory(path)),
        }
    }

    fn file(&self, ino: Ino, path: &str) -> io::Result<&FileNode> {
        match &self.nodes[ino] {
            Node::File(file) => Ok(file),
            Node::Dir(_) => Err(is_a_directory(path)),
        }
    }

    fn file_mut(&mut self, ino: Ino, path: &str) -> io::Result<&mut FileNode> {
        match &mut self.nodes[ino] {
            Node::File(file) => Ok(file),
            Node::Dir(_) => Err(is_a_directory(path)),
        }
    }

    /// The inode `parts` leads to from the root through `image` entries.
    fn resolve(&self, path: &str, parts: &[&str], image: Image) -> io::Result<Ino> {
        let mut ino = ROOT;
        for part in parts {
            let dir = self.dir(ino, path)?;
            let entries = match image {
                Image::Live => &dir.live,
                Image::Durable => &dir.durable,
            };
            ino = *entries.get(*part).ok_or_else(|| not_found(path))?;
        }
        Ok(ino)
    }

    /// The live directory `dirs` names; an error if it is missing or a file.
    fn parent_dir(&self, path: &str, dirs: &[&str]) -> io::Result<Ino> {
        let ino = self.resolve(path, dirs, Image::Live)?;
        self.dir(ino, path)?;
        Ok(ino)
    }

    /// The live file at `path`.
    fn live_file(&self, path: &str) -> io::Result<&FileNode> {
        let (dirs, name) = entry_components(path)?;
        let parent = self.parent_dir(path, &dirs)?;
        let ino = *self
            .dir(parent, path)?
            .live
            .get(name)
            .ok_or_else(|| not_found(path))?;
        self.file(ino, path)
    }

    fn bytes(&self, path: &str, image: Image) -> Option<Vec<u8>> {
        let parts = components(path).ok()?;
        let ino = self.resolve(path, &parts, image).ok()?;
        let file = self.file(ino, path).ok()?;
        Some(match image {
            Image::Live => file.live.clone(),
            Image::Durable => file.durable.clone(),
        })
    }

    /// The inode and the durable bytes it would have if the last write tore after `keep` bytes,
    /// or `None` when a plain crash applies.
    fn torn_last_write(&self, keep: usize) -> Option<(Ino, Vec<u8>)> {
        let write = self.last_write?;
        let Node::File(file) = &self.nodes[write.ino] else {
            return None;
        };
        let write_end = write.offset.saturating_add(write.len);
        // A durable image that is not a prefix of the live one (the file was cut and synced)
        // has no single "tail in flight" to tear; a write already synced cannot tear.
        if !file.live.starts_with(&file.durable) || file.durable.len() >= write_end {
            return None;
        }
        // A later set_len may have cut the live bytes; tearing never loses what was durable.
        let torn_len = write
            .offset
            .saturating_add(keep.min(write.len))
            .min(file.live.len())
            .max(file.durable.len());
        Some((write.ino, file.live[..torn_len].to_vec()))
    }

    /// A fresh state holding only what is reachable through durable entries, each file with its
    /// durable bytes (or `torn` bytes for the torn inode).
    fn durable_image(&self, torn: Option<&(Ino, Vec<u8>)>) -> State {
        let mut image = State::empty();
        image.link_unlink = self.link_unlink;
        // Old inode -> new inode, so two names of one file (a rename synced only on one side)
        // stay one file, as on a real file system.
        let mut copied: HashMap<Ino, Ino> = HashMap::from([(ROOT, ROOT)]);
        let mut pending = vec![ROOT];
        while let Some(old_dir) = pending.pop() {
            let new_dir = copied[&old_dir];
            let Node::Dir(dir) = &self.nodes[old_dir] else {
                continue;
            };
            for (name, &old_child) in &dir.durable {
                let new_child = match (copied.get(&old_child), &self.nodes[old_child]) {
                    // A directory has one name. Durable entries from different moments can
                    // name one twice (even in a cycle); the first name reached keeps it.
                    (Some(_), Node::Dir(_)) => continue,
                    (Some(&new_child), Node::File(_)) => new_child,
                    (None, Node::File(file)) => {
                        let bytes = match torn {
                            Some((torn_ino, bytes)) if *torn_ino == old_child => bytes.clone(),
                            _ => file.durable.clone(),
                        };
                        image.alloc(Node::File(FileNode {
                            live: bytes.clone(),
                            durable: bytes,
                        }))
                    }
                    (None, Node::Dir(_)) => {
                        pending.push(old_child);
                        image.alloc(Node::Dir(DirNode::default()))
                    }
                };
                copied.insert(old_child, new_child);
                if let Node::Dir(entries) = &mut image.nodes[new_dir] {
                    entries.live.insert(name.clone(), new_child);
                    entries.durable.insert(name.clone(), new_child);
                }
            }
        }
        image
    }
}

impl Vfs for SimFs {
    fn create_dir(&self, dir: &str) -> io::Result<()> {
        let mut state = self.state();
        state.begin_op()?;
        let parts = components(dir)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Ok(()); // the root always exists
        };
        let parent = state.parent_dir(dir, dirs)?;
        if let Some(&ino) = state.dir(parent, dir)?.live.get(*name) {
            return match state.nodes[ino] {
                Node::Dir(_) => Ok(()),
                Node::File(_) => Err(already_exists(dir)),
            };
        }
        let ino = state.alloc(Node::Dir(DirNode::default()));
        state
            .dir_mut(parent, dir)?
            .live
            .insert((*name).to_owned(), ino);
        state.note_dir_op(vec![(parent, (*name).to_owned(), Some(ino))]);
        Ok(())
    }

    fn create(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let mut state = self.state();
        state.begin_op()?;
        let ino = state.new_file(path)?;
        Ok(Box::new(SimFile {
            state: Arc::clone(&self.state),
            ino,
            path: path.to_owned(),
        }))
    }

    fn open_append(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let mut state = self.state();
        state.refuse_if_read_only(path)?;
        let (dirs, name) = entry_components(path)?;
        let parent = state.parent_dir(path, &dirs)?;
        let ino = *state
            .dir(parent, path)?
            .live
            .get(name)
            .ok_or_else(|| not_found(path))?;
        state.file(ino, path)?;
        Ok(Box::new(SimFile {
            state: Arc::clone(&self.state),
            ino,
            path: path.to_owned(),
        }))
    }

    fn map(&self, path: &str) -> io::Result<Mapped> {
        let state = self.state();
        if let Some(fault) = state.map_fault {
            return Err(fault.error());
        }
        let file = state.live_file(path)?;
        if file.live.is_empty() {
            return Ok(Mapped::empty());
        }
        Ok(Mapped::from_shared(Arc::from(file.live.as_slice())))
    }

    fn len(&self, path: &str) -> io::Result<u64> {
        Ok(self.state().live_file(path)?.live.len() as u64)
    }

    fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()> {
        let mut state = self.state();
        state.begin_op()?;
        let (from_dirs, from_name) = entry_components(from)?;
        let (to_dirs, to_name) = entry_components(to)?;
        // The kernel's order: rename(2) looks up both parents, then the source, then the
        // target; link(2) resolves the whole source first.
        let from_parent = state.parent_dir(from, &from_dirs)?;
        let source = |state: &State| {
            state
                .dir(from_parent, from)?
                .live
                .get(from_name)
                .copied()
                .ok_or_else(|| not_found(from))
        };
        if state.link_unlink {
            source(&state)?;
        }
        let to_parent = state.parent_dir(to, &to_dirs)?;
        let ino = source(&state)?;
        if state.dir(to_parent, to)?.live.contains_key(to_name) {
            return Err(already_exists(to));
        }
        // link(2) refuses a directory with EPERM, after the target's existence (EEXIST).
        if state.link_unlink && matches!(state.nodes[ino], Node::Dir(_)) {
            return Err(io::Error::from_raw_os_error(EPERM));
        }
        // A directory moved beneath itself would be cut off from the root (EINVAL on Linux).
        if to.starts_with(from) && to.as_bytes().get(from.len()) == Some(&b'/') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("sim: cannot move {from} beneath itself to {to}"),
            ));
        }
        if state.link_unlink {
            // link(2) then unlink(2): two operations, each its own directory change.
            state
                .dir_mut(to_parent, to)?
                .live
                .insert(to_name.to_owned(), ino);
            state.note_dir_op(vec![(to_parent, to_name.to_owned(), Some(ino))]);
            if let Err(error) = state.begin_op() {
                // The unlink failed: undo the link, as the real one does, so a failed rename
                // leaves only the source. A dead process undoes nothing: both names stay.
                if state.begin_op().is_ok() {
                    state.dir_mut(to_parent, to)?.live.remove(to_name);
                    state.note_dir_op(vec![(to_parent, to_name.to_owned(), None)]);
                }
                return Err(error);
            }
            state.dir_mut(from_parent, from)?.live.remove(from_name);
            state.note_dir_op(vec![(from_parent, from_name.to_owned(), None)]);
            return Ok(());
        }
        state.dir_mut(from_parent, from)?.live.remove(from_name);
        state
            .dir_mut(to_parent, to)?
            .live
            .insert(to_name.to_owned(), ino);
        state.note_dir_op(vec![
            (from_parent, from_name.to_owned(), None),
            (to_parent, to_name.to_owned(), Some(ino)),
        ]);
        Ok(())
    }

    fn rename_mode(&self) -> RenameMode {
        if self.state().link_unlink {
            RenameMode::LinkUnlink
        } else {
            RenameMode::Noreplace
        }
    }

    fn location(&self) -> String {
        "a simulated file system".to_owned()
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        let mut state = self.state();
        state.begin_op()?;
        let (dirs, name) = entry_components(path)?;
        let parent = state.parent_dir(path, &dirs)?;
        let ino = *state
            .dir(parent, path)?
            .live
            .get(name)
            .ok_or_else(|| not_found(path))?;
        // unlink(2) refuses directories with EISDIR on Linux.
        state.file(ino, path)?;
        state.dir_mut(parent, path)?.live.remove(name);
        state.note_dir_op(vec![(parent, name.to_owned(), None)]);
        Ok(())
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        let mut state = self.state();
        state.begin_op()?;
        let parts = components(dir)?;
        let ino = state.resolve(dir, &parts, Image::Live)?;
        let entries = state.dir_mut(ino, dir)?;
        entries.durable.clone_from(&entries.live);
        state.recent_dir_ops.clear();
        Ok(())
    }

    fn list(&self, dir: &str) -> io::Result<Vec<DirEntry>> {
        let state = self.state();
        let parts = components(dir)?;
        let ino = state.resolve(dir, &parts, Image::Live)?;
        // BTreeMap order is byte order of the names, the order RealFs sorts into.
        Ok(state
            .dir(ino, dir)?
            .live
            .iter()
            .map(|(name, &child)| DirEntry {
                name: name.clone(),
                is_dir: matches!(state.nodes[child], Node::Dir(_)),
            })
            .collect())
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        let state = self.state();
        let parts = components(path)?;
        match state.resolve(path, &parts, Image::Live) {
            Ok(_) => Ok(true),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(err) => Err(err),
        }
    }

    fn lock(&self) -> io::Result<Box<dyn VfsLock>> {
        let mut state = self.state();
        // The real lock opens LOCK for writing (creating it if missing): EROFS on a read-only
        // mount, whoever holds it.
        state.refuse_if_read_only("LOCK")?;
        // Like the real one, lock() leaves a LOCK file in the live root (not synced, not counted:
        // the real lock() does not sync it either), so both list the same names.
        if let Some(&ino) = state.dir(ROOT, "")?.live.get("LOCK") {
            state.file(ino, "LOCK")?;
        } else {
            let ino = state.alloc(Node::File(FileNode::default()));
            state.dir_mut(ROOT, "")?.live.insert("LOCK".to_owned(), ino);
        }
        if state.locked || state.shared_locks > 0 {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "sim: store is locked by another holder",
            ));
        }
        state.locked = true;
        Ok(Box::new(SimLock {
            state: Arc::clone(&self.state),
            shared: false,
        }))
    }

    fn lock_shared(&self) -> io::Result<Option<Box<dyn VfsLock>>> {
        let mut state = self.state();
        let Some(&ino) = state.dir(ROOT, "")?.live.get("LOCK") else {
            return Ok(None);
        };
        state.file(ino, "LOCK")?;
        if state.locked {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "sim: store is locked by a writer",
            ));
        }
        state.shared_locks += 1;
        Ok(Some(Box::new(SimLock {
            state: Arc::clone(&self.state),
            shared: true,
        })))
    }

    // A hold is another process's: not numbered, and not refused by this one's crash point.
    fn hold(&self, path: &str) -> io::Result<Box<dyn VfsHold>> {
        let mut state = self.state();
        state.refuse_if_read_only(path)?;
        let ino = state.new_file(path)?;
        *state.holds.entry(ino).or_default() += 1;
        Ok(Box::new(SimHold {
            state: Arc::clone(&self.state),
            ino,
        }))
    }

    fn held(&self, path: &str) -> io::Result<bool> {
        let mut state = self.state();
        let (dirs, name) = entry_components(path)?;
        let parent = state.parent_dir(path, &dirs)?;
        let ino = *state
            .dir(parent, path)?
            .live
            .get(name)
            .ok_or_else(|| not_found(path))?;
        state.file(ino, path)?;
        if state.holds.contains_key(&ino) {
            return Ok(true);
        }
        state.refuse_if_read_only(path)?;
        state.dir_mut(parent, path)?.live.remove(name);
        state.note_dir_op(vec![(parent, name.to_owned(), None)]);
        Ok(false)
    }
}

/// An open simulated file. It names its inode, not its path: like a real descriptor it keeps
/// working after the file is renamed or removed.
struct SimFile {
    state: Arc<Mutex<State>>,
    ino: Ino,
    path: String,
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFile")
            .field("path", &self.path)
            .field("ino", &self.ino)
            .finish_non_exhaustive()
    }
}

impl VfsFile for SimFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut state = lock_state(&self.state);
        let op = state.ops;
        let landed = state.short_writes.remove(&op);
        if let Err(error) = state.begin_op() {
            // A short write: a real disk may apply a prefix of a write that then fails.
            if let Some(landed) = landed.filter(|_| !SimFs::is_crash(&error)) {
                let file = state.file_mut(self.ino, &self.path)?;
                file.live
                    .extend_from_slice(&bytes[..landed.min(bytes.len())]);
            }
            return Err(error);
        }
        let file = state.file_mut(self.ino, &self.path)?;
        let offset = file.live.len();
        file.live.try_reserve(bytes.len()).map_err(out_of_memory)?;
        file.live.extend_from_slice(bytes);
        state.last_write = Some(LastWrite {
            ino: self.ino,
            offset,
            len: bytes.len(),
        });
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut state = lock_state(&self.state);
        state.begin_op()?;
        let file = state.file_mut(self.ino, &self.path)?;
        file.durable.clone_from(&file.live);
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut state = lock_state(&self.state);
        state.begin_op()?;
        let file = state.file_mut(self.ino, &self.path)?;
        // The simulation holds files in memory: a length it cannot hold is refused, not aborted.
        let len = usize::try_from(len).map_err(|_| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("sim: {len} bytes do not fit in memory"),
            )
        })?;
        if let Some(grow) = len.checked_sub(file.live.len()) {
            file.live.try_reserve(grow).map_err(out_of_memory)?;
        }
        file.live.resize(len, 0);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let state = lock_state(&self.state);
        Ok(state.file(self.ino, &self.path)?.live.len() as u64)
    }
}

/// The simulated lock: a flag (exclusive) or a count (shared) in the state, cleared when this
/// guard drops.
struct SimLock {
    state: Arc<Mutex<State>>,
    shared: bool,
}

impl fmt::Debug for SimLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimLock").finish_non_exhaustive()
    }
}

impl VfsLock for SimLock {}

/// A hold on one inode ([`Vfs::hold`]); unnumbered, as another process's would be.
struct SimHold {
    state: Arc<Mutex<State>>,
    ino: Ino,
}

impl fmt::Debug for SimHold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimHold")
            .field("ino", &self.ino)
            .finish_non_exhaustive()
    }
}

impl VfsHold for SimHold {}

impl Drop for SimHold {
    fn drop(&mut self) {
        let mut state = lock_state(&self.state);
        if let Some(count) = state.holds.get_mut(&self.ino) {
            *count -= 1;
            if *count == 0 {
                state.holds.remove(&self.ino);
            }
        }
    }
}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut state = lock_state(&self.state);
        if self.shared {
            state.shared_locks -= 1;
        } else {
            state.locked = false;
        }
    }
}

/// The errno link(2) answers for a directory.
const EPERM: i32 = 1;

fn read_only_error(path: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::ReadOnlyFilesystem,
        format!("sim: {path:?}: read-only file system"),
    )
}

fn not_found(path: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("sim: {path:?}: no such file or directory"),
    )
}

fn already_exists(path: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("sim: {path:?} already exists"),
    )
}

fn not_a_directory(path: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotADirectory,
        format!("sim: {path:?}: a component is not a directory"),
    )
}

fn is_a_directory(path: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::IsADirectory,
        format!("sim: {path:?} is a directory"),
    )
}

fn out_of_memory(err: std::collections::TryReserveError) -> io::Error {
    io::Error::new(io::ErrorKind::OutOfMemory, err)
}
