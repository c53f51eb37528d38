//! The I/O seam: every byte strata reads or writes goes through a [`Vfs`].
//!
//! Two implementations share one contract. [`RealFs`] is the file system (std + rustix, segments
//! read through memmap2). [`SimFs`] is an in-memory file system that keeps a *live* and a
//! *durable* image, so a test can crash it at any operation, tear the last write, or inject an I/O
//! error, and then look at what a real disk could have kept.
//!
//! Paths are relative to the store root and `/`-separated ("tmp/000000000007.seg", "LOCK"); the
//! root itself is "". A path is refused with `InvalidInput` when it has a leading `/`, an empty
//! component (so also a trailing `/`), a `.` or `..` component, or a NUL byte: a store path names
//! exactly one entry beneath the root and never escapes it.
//!
//! Durability follows POSIX as careful engines assume it: file data and length are durable after
//! [`VfsFile::sync_data`]; a directory entry (create, rename, remove) is durable only after
//! [`Vfs::sync_dir`] of its directory. Nothing here retries a failed sync: a failed sync leaves the
//! kernel's page state unknown, so the caller must treat the store as poisoned.

use std::fmt;
use std::io;
use std::ops::Deref;
use std::sync::Arc;

mod counting;
mod real;
mod sim;

#[cfg(test)]
mod tests;

pub use counting::{Counting, SyncCounts};
pub use real::RealFs;
pub use sim::{Fault, SimFs};

/// The file system a store lives in, addressed by store-relative paths.
pub trait Vfs: Send + Sync + fmt::Debug {
    /// Creates directory `dir` (its parent must exist). Ok if it already exists as a directory.
    /// Durable only after `sync_dir` of its parent.
    fn create_dir(&self, dir: &str) -> io::Result<()>;
    /// Creates a new, empty file for writing; fails with AlreadyExists if the name exists.
    /// The directory entry is durable only after `sync_dir` of its directory.
    ///
    /// Writes through the returned handle always go to the file's current end (O_APPEND), so a
    /// `set_len` followed by `write_all` continues at the new length and never leaves a hole.
    fn create(&self, path: &str) -> io::Result<Box<dyn VfsFile>>;
    /// Opens an existing file for appending (writes go to its end).
    fn open_append(&self, path: &str) -> io::Result<Box<dyn VfsFile>>;
    /// A read-only view of the whole file as it is now (the real one maps it with memmap2).
    ///
    /// The caller must not shrink the file (`set_len` to less) while a view of it lives: a real
    /// mapping of a cut page faults with SIGBUS. Appending to it is fine; the view keeps the
    /// length it had when taken.
    fn map(&self, path: &str) -> io::Result<Mapped>;
    /// A copy of the whole file, read with ordinary reads: for files another process may cut
    /// while they are read (the manifest, which boot truncates), where a map could fault.
    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        Ok(self.map(path)?.to_vec())
    }
    /// The file's length in bytes.
    fn len(&self, path: &str) -> io::Result<u64>;
    /// Renames `from` to `to`, failing with AlreadyExists if `to` exists (never replaces).
    /// Durable only after `sync_dir` of both directories.
    ///
    /// In [`RenameMode::LinkUnlink`] this is two steps, link then unlink: a crash or a failure
    /// between them leaves the file under both names (see [`RenameMode`]).
    fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()>;
    /// How `rename_noreplace` renames on this file system.
    fn rename_mode(&self) -> RenameMode;
    /// Where the store lives, for messages: its folder, or what the file system calls itself.
    fn location(&self) -> String;
    /// Removes a file. Durable only after `sync_dir` of its directory.
    fn remove(&self, path: &str) -> io::Result<()>;
    /// Makes the entries of directory `dir` durable (fsync of the directory).
    fn sync_dir(&self, dir: &str) -> io::Result<()>;
    /// The names in `dir` (files and directories), sorted, without "." and "..".
    fn list(&self, dir: &str) -> io::Result<Vec<DirEntry>>;
    /// Whether `path` exists.
    fn exists(&self, path: &str) -> io::Result<bool>;
    /// Takes the store's exclusive lock (file "LOCK" in the root, created if missing). Held until
    /// the returned guard drops. A second holder — another process, or another lock() on the
    /// same store in this process — gets io::ErrorKind::WouldBlock, never a wait.
    fn lock(&self) -> io::Result<Box<dyn VfsLock>>;
    /// Takes a shared hold of the store's lock without creating or writing anything: `LOCK`
    /// opened read-only, if it exists (`None` if it does not: nothing to hold). Held until the
    /// returned guard drops. Any number of shared holders coexist; while one lives, `lock()`
    /// gets WouldBlock, and while an exclusive holder lives, this does. What a read-only open
    /// takes, so that no writer changes the store under it and it never reads a store a writer
    /// is changing; it works on a read-only mount (flock is not a write).
    fn lock_shared(&self) -> io::Result<Option<Box<dyn VfsLock>>>;
    /// The bytes of the file from `offset` to its end, read with ordinary reads (as
    /// [`Vfs::read`]): what a reader following an append-only file reads of what is new,
    /// without reading again what it has. An offset past the end answers no bytes.
    fn read_from(&self, path: &str, offset: u64) -> io::Result<Vec<u8>> {
        let bytes = self.read(path)?;
        let from = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        Ok(bytes[from..].to_vec())
    }
    /// Creates the new, empty file `path` (AlreadyExists if the name is taken) and holds it:
    /// an exclusive lock on the file (flock) until the returned guard drops, or the holder's
    /// process dies, whichever comes first. The hold follows the file through renames. Another
    /// process asks whether it is still held with [`Vfs::held`]. Nothing is synced: a hold
    /// means nothing after a power cut, which ends every holder. WouldBlock or NotFound if a
    /// prober took the new file for a dead holder's first (try another name). A file system
    /// that cannot hold answers Unsupported.
    fn hold(&self, path: &str) -> io::Result<Box<dyn VfsHold>> {
        Err(unsupported(path, "hold"))
    }
    /// Whether the file at `path` is held ([`Vfs::hold`]) by a holder still alive. One nobody
    /// holds (its holder died, or let go without removing it) is removed, under its lock, and
    /// answers false. NotFound if there is no such file (its holder may have renamed it).
    fn held(&self, path: &str) -> io::Result<bool> {
        Err(unsupported(path, "held"))
    }
}

/// What an `io::Error` carries when a name strata opens as a file is something else: a named
/// pipe, a socket or a device, which strata never writes. A real file system opens such a name
/// without blocking and refuses it with this, so nothing a directory can hold makes an open
/// wait; a caller to whom the name is not one of strata's (a stranger in `readers/`) passes it
/// over ([`NotRegular::is`]).
#[derive(Debug)]
pub struct NotRegular {
    path: String,
    kind: &'static str,
}

impl NotRegular {
    /// The I/O error saying that `path` is `kind` ("a named pipe"), not a regular file.
    pub fn error(path: String, kind: &'static str) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidInput, NotRegular { path, kind })
    }

    /// Whether `error` says a name is not a regular file.
    pub fn is(error: &io::Error) -> bool {
        error
            .get_ref()
            .is_some_and(<dyn std::error::Error + Send + Sync>::is::<NotRegular>)
    }
}

impl fmt::Display for NotRegular {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is {}, not a regular file: strata never writes one there; move it aside",
            self.path, self.kind
        )
    }
}

impl std::error::Error for NotRegular {}

/// The error of an operation a file system does not have.
fn unsupported(path: &str, operation: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("this file system cannot {operation} a file ({path})"),
    )
}

/// How a file system renames without replacing: what [`Vfs::rename_noreplace`] does there.
///
/// Both modes refuse an existing target in the kernel, atomically with creating the new name;
/// neither checks then renames. They differ only in what a crash can leave: `LinkUnlink` can
/// leave the source and the target as two names of one file, which boot heals by removing the
/// source (a temp whose bytes are identical to the file under its final name is a second name,
/// not evidence: docs/format.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RenameMode {
    /// Nothing has been renamed yet, so the file system has not been asked.
    Unprobed,
    /// `renameat2` with `RENAME_NOREPLACE`: one atomic step.
    Noreplace,
    /// `link(2)` to the target (which fails with EEXIST if it exists), then `unlink(2)` of the
    /// source: for file systems (some FUSE and network ones) that answer EINVAL to
    /// `RENAME_NOREPLACE`.
    LinkUnlink,
}

impl RenameMode {
    /// Its name in reports: `unprobed`, `noreplace` or `link-unlink`.
    pub fn name(self) -> &'static str {
        match self {
            RenameMode::Unprobed => "unprobed",
            RenameMode::Noreplace => "noreplace",
            RenameMode::LinkUnlink => "link-unlink",
        }
    }
}

impl fmt::Display for RenameMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RenameMode::Unprobed => "not yet probed (nothing renamed)",
            RenameMode::Noreplace => "rename with RENAME_NOREPLACE",
            RenameMode::LinkUnlink => "link then unlink (no RENAME_NOREPLACE here)",
        })
    }
}

/// An open file that is written at its end.
#[expect(
    clippy::len_without_is_empty,
    reason = "a file's length is a fallible query of the disk, not a collection's size"
)]
pub trait VfsFile: Send + fmt::Debug {
    /// Appends all of `bytes` at the file's end, or fails.
    ///
    /// A failed write may have applied a prefix of `bytes` on a real disk; the caller must treat
    /// the file's tail as unknown (and the store as poisoned), never retry in place.
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// fdatasync: the file's data and length are durable (not its directory entry).
    fn sync_data(&mut self) -> io::Result<()>;
    /// Cuts or extends the file to `len` bytes (durable after `sync_data`).
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// The file's current length in bytes.
    fn len(&self) -> io::Result<u64>;
}

/// The store's exclusive lock, held until this guard drops.
pub trait VfsLock: Send + fmt::Debug {}

/// A hold on one file ([`Vfs::hold`]), kept until this guard drops. Dropping it does not remove
/// the file: its owner removes it first (by its name now), or a prober does later.
pub trait VfsHold: Send + Sync + fmt::Debug {}

/// One name in a directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DirEntry {
    /// The entry's name within its directory: one path component, never a path. A name that is
    /// not UTF-8 is not listed; listing the directory fails instead, naming it.
    pub name: String,
    /// Whether the entry is a directory. A symbolic link counts as what it is, a link, not what it
    /// points to, so a link to a directory is `false`.
    pub is_dir: bool,
}

/// A read-only view of a whole file: a memory map (real) or a shared snapshot (simulated).
///
/// The real view never copies the file, so reading a segment costs no buffer proportional to it.
pub struct Mapped {
    view: View,
}

enum View {
    Map(memmap2::Mmap),
    Shared(Arc<[u8]>),
    /// memmap2 cannot map zero bytes on every platform, and nothing needs mapping anyway.
    Empty,
}

impl Mapped {
    pub(crate) fn from_mmap(map: memmap2::Mmap) -> Self {
        Self {
            view: View::Map(map),
        }
    }

    pub(crate) fn from_shared(bytes: Arc<[u8]>) -> Self {
        Self {
            view: View::Shared(bytes),
        }
    }

    pub(crate) fn empty() -> Self {
        Self { view: View::Empty }
    }

    /// A view of bytes held in memory: what a file system that is not a disk (strata-remote's
    /// bucket, whose segments live in a bounded cache) hands out. The view shares `bytes`; the
    /// memory lives until the last view of it drops.
    pub fn from_bytes(bytes: Arc<[u8]>) -> Self {
        if bytes.is_empty() {
            Self::empty()
        } else {
            Self::from_shared(bytes)
        }
    }
}

impl Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.view {
            View::Map(map) => map,
            View::Shared(bytes) => bytes,
            View::Empty => &[],
        }
    }
}

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl fmt::Debug for Mapped {
    // The bytes of a segment are no use in a debug line; their length and origin are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.view {
            View::Map(_) => "mmap",
            View::Shared(_) => "shared",
            View::Empty => "empty",
        };
        f.debug_struct("Mapped")
            .field("kind", &kind)
            .field("len", &self.len())
            .finish()
    }
}

/// The components of a store path: empty for the root "".
pub(crate) fn components(path: &str) -> io::Result<Vec<&str>> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let parts: Vec<&str> = path.split('/').collect();
    for part in &parts {
        if part.is_empty() || *part == "." || *part == ".." || part.contains('\0') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("store path {path:?} must be relative, without empty, '.' or '..' parts"),
            ));
        }
    }
    Ok(parts)
}

/// Splits a path that names an entry beneath the root (a file, or either end of a rename) into
/// its parent's components and its own name. The root itself is refused: it is neither a file
/// nor an entry of any directory.
pub(crate) fn entry_components(path: &str) -> io::Result<(Vec<&str>, &str)> {
    let mut parts = components(path)?;
    match parts.pop() {
        Some(name) => Ok((parts, name)),
        None => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the store root \"\" is not a file or a directory entry",
        )),
    }
}
