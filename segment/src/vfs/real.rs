//! The real file system: std::fs for ordinary calls, rustix where std has no word for what we
//! need (no-replace rename, directory fsync, non-blocking flock), memmap2 for reads.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use rustix::fs::{CWD, FlockOperation, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::{
    DirEntry, Mapped, RenameMode, Vfs, VfsFile, VfsHold, VfsLock, components, entry_components,
};

/// A store rooted at a directory of the real file system.
#[derive(Debug, Clone)]
pub struct RealFs {
    /// Absolute, so a later change of the process's working directory cannot move the store.
    root: PathBuf,
    /// How this file system renames without replacing, learnt from the first rename and then
    /// fixed (clones share it): a `RenameMode` as `u8`.
    rename_mode: Arc<AtomicU8>,
}

const MODE_UNPROBED: u8 = 0;
const MODE_NOREPLACE: u8 = 1;
const MODE_LINK_UNLINK: u8 = 2;

impl RealFs {
    /// Opens the store rooted at `root`, which must be an existing directory.
    pub fn open(root: &Path) -> io::Result<Self> {
        let root = fs::canonicalize(root)?;
        if !fs::metadata(&root)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("store root {} is not a directory", root.display()),
            ));
        }
        Ok(Self {
            root,
            rename_mode: Arc::new(AtomicU8::new(MODE_UNPROBED)),
        })
    }

    /// As [`open`](Self::open), but renaming as a file system without `RENAME_NOREPLACE` must:
    /// link then unlink. For tests of that mode on a file system that has the flag.
    pub fn open_link_unlink(root: &Path) -> io::Result<Self> {
        let store = Self::open(root)?;
        store.rename_mode.store(MODE_LINK_UNLINK, Ordering::Relaxed);
        Ok(store)
    }

    /// Creates the directory `root` (and missing ancestors) if needed, then opens it.
    ///
    /// The root's own entry is synced into its parent, so a crash right after cannot lose the
    /// directory that later syncs of the store's files rely on.
    pub fn create(root: &Path) -> io::Result<Self> {
        // A file in the way would make `create_dir_all` answer only "File exists".
        if let Ok(metadata) = fs::metadata(root)
            && !metadata.is_dir()
        {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("store root {} is not a directory", root.display()),
            ));
        }
        fs::create_dir_all(root)?;
        let store = Self::open(root)?;
        if let Some(parent) = store.root.parent() {
            sync_dir_at(parent)?;
        }
        Ok(store)
    }

    /// The absolute path of the store root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real path of any store path, the root "" included.
    fn at(&self, path: &str) -> io::Result<PathBuf> {
        components(path)?;
        Ok(self.join(path))
    }

    /// The real path of a store path that must name an entry beneath the root.
    fn entry_at(&self, path: &str) -> io::Result<PathBuf> {
        entry_components(path)?;
        Ok(self.join(path))
    }

    fn join(&self, path: &str) -> PathBuf {
        if path.is_empty() {
            self.root.clone()
        } else {
            self.root.join(path)
        }
    }
}

impl Vfs for RealFs {
    fn create_dir(&self, dir: &str) -> io::Result<()> {
        let at = self.at(dir)?;
        match fs::create_dir(&at) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                // Only an existing directory makes this a no-op; a file of that name is a clash,
                // said as one (the bare errno would read "File exists").
                let meta = fs::metadata(&at)?;
                if meta.is_dir() {
                    Ok(())
                } else {
                    Err(not_a_directory(&at, &meta, io::ErrorKind::AlreadyExists))
                }
            }
            Err(err) => Err(err),
        }
    }

    fn create(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let at = self.entry_at(path)?;
        // O_CREAT|O_EXCL: the kernel refuses an existing name atomically, no check-then-create.
        let file = OpenOptions::new().append(true).create_new(true).open(&at)?;
        Ok(Box::new(RealFile { file }))
    }

    fn open_append(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let at = self.entry_at(path)?;
        let file = open_regular(&at, OpenOptions::new().append(true))?;
        Ok(Box::new(RealFile { file }))
    }

    fn map(&self, path: &str) -> io::Result<Mapped> {
        let at = self.entry_at(path)?;
        let file = open_regular(&at, OpenOptions::new().read(true))?;
        let meta = file.metadata()?;
        if meta.len() == 0 {
            return Ok(Mapped::empty());
        }
        #[allow(unsafe_code)]
        // SAFETY: the map is read-only and shared, and `Mmap::map` is sound only while nothing
        // shrinks or rewrites the mapped range for as long as the view lives. strata upholds
        // that for itself: segments are written in `tmp/`, synced, renamed into place, never
        // written again, and removed only by unlinking (which leaves a live view's pages as they
        // were); the manifest is only appended to while a view of it lives (appends lie
        // beyond the view); the store's LOCK keeps other strata processes out. Shrinking a
        // mapped file is a caller bug (see `Vfs::map`). A foreign program writing into a store
        // is outside this guarantee; the digest checked on every read is what catches it.
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        Ok(Mapped::from_mmap(map))
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        use std::io::Read as _;
        let at = self.entry_at(path)?;
        let mut file = open_regular(&at, OpenOptions::new().read(true))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn len(&self, path: &str) -> io::Result<u64> {
        let at = self.entry_at(path)?;
        let meta = fs::metadata(&at)?;
        if meta.is_dir() {
            return Err(is_a_directory(&at));
        }
        Ok(meta.len())
    }

    fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()> {
        let from_at = self.entry_at(from)?;
        let to_at = self.entry_at(to)?;
        let mode = self.rename_mode.load(Ordering::Relaxed);
        if mode == MODE_LINK_UNLINK {
            return link_then_unlink(&from_at, &to_at);
        }
        // RENAME_NOREPLACE makes "never replace" the kernel's check, atomic with the rename.
        match rustix::fs::renameat_with(CWD, &from_at, CWD, &to_at, RenameFlags::NOREPLACE) {
            Ok(()) => {
                self.rename_mode.store(MODE_NOREPLACE, Ordering::Relaxed);
                Ok(())
            }
            Err(errno) if lacks_noreplace(errno, mode, from_at.is_dir()) => {
                self.rename_mode.store(MODE_LINK_UNLINK, Ordering::Relaxed);
                link_then_unlink(&from_at, &to_at)
            }
            Err(errno) => Err(io::Error::from(errno)),
        }
    }

    fn rename_mode(&self) -> RenameMode {
        match self.rename_mode.load(Ordering::Relaxed) {
            MODE_NOREPLACE => RenameMode::Noreplace,
            MODE_LINK_UNLINK => RenameMode::LinkUnlink,
            _ => RenameMode::Unprobed,
        }
    }

    fn location(&self) -> String {
        self.root.display().to_string()
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        fs::remove_file(self.entry_at(path)?)
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        sync_dir_at(&self.at(dir)?)
    }

    fn list(&self, dir: &str) -> io::Result<Vec<DirEntry>> {
        let at = self.at(dir)?;
        let mut entries = Vec::new();
        let listing = fs::read_dir(&at).map_err(|err| match fs::metadata(&at) {
            Ok(meta) if !meta.is_dir() => not_a_directory(&at, &meta, io::ErrorKind::NotADirectory),
            _ => err,
        })?;
        for entry in listing {
            let entry = entry?;
            // Every name strata issues is ASCII; a name that is not UTF-8 was put there by
            // someone else, and passing it on lossily would name a file that cannot be opened.
            #[allow(
                clippy::unnecessary_debug_formatting,
                reason = "Debug escapes the bytes that are not UTF-8; Display would replace them"
            )]
            let name = entry.file_name().into_string().map_err(|raw| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: entry {raw:?} is not UTF-8", at.display()),
                )
            })?;
            let is_dir = entry.file_type()?.is_dir();
            entries.push(DirEntry { name, is_dir });
        }
        entries.sort_unstable();
        Ok(entries)
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        self.at(path)?.try_exists()
    }

    fn lock(&self) -> io::Result<Box<dyn VfsLock>> {
        Ok(Box::new(self.lock_file()?))
    }

    fn lock_shared(&self) -> io::Result<Option<Box<dyn VfsLock>>> {
        let at = self.join("LOCK");
        // O_RDONLY, no O_CREAT: nothing is created or written, so this works on a read-only
        // mount and leaves a copied store's bytes as they are.
        let file = match open_regular(&at, OpenOptions::new().read(true)) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        rustix::fs::flock(&file, FlockOperation::NonBlockingLockShared).map_err(|errno| {
            let err = io::Error::from(errno);
            if err.kind() == io::ErrorKind::WouldBlock {
                io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("store {} is locked by a writer", self.root.display()),
                )
            } else {
                err
            }
        })?;
        Ok(Some(Box::new(RealLock { file })))
    }

    fn read_from(&self, path: &str, offset: u64) -> io::Result<Vec<u8>> {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let at = self.entry_at(path)?;
        let mut file = open_regular(&at, OpenOptions::new().read(true))?;
        // A seek past i64::MAX is EINVAL; past the end there is nothing to read anyway.
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(offset.min(len)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn hold(&self, path: &str) -> io::Result<Box<dyn VfsHold>> {
        let at = self.entry_at(path)?;
        let file = OpenOptions::new().write(true).create_new(true).open(&at)?;
        // A prober that opened the new file before this lock took it for a dead holder's: it
        // holds the lock now (WouldBlock), or has removed the file already (no link left).
        rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive)?;
        if rustix::fs::fstat(&file)?.st_nlink == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} was removed before it was held", at.display()),
            ));
        }
        Ok(Box::new(RealHold { _file: file }))
    }

    fn held(&self, path: &str) -> io::Result<bool> {
        let at = self.entry_at(path)?;
        let file = open_regular(&at, OpenOptions::new().read(true))?;
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(Errno::WOULDBLOCK) => return Ok(true),
            Err(errno) => return Err(errno.into()),
        }
        // Nobody holds it: remove it while this lock keeps a holder from taking it meanwhile
        // (names are never reused, so the name is still this file). Another prober may have
        // removed it first.
        match fs::remove_file(&at) {
            Ok(()) => Ok(false),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(err) => Err(err),
        }
    }
}

impl RealFs {
    /// Takes the flock of root/LOCK; see [`Vfs::lock`].
    fn lock_file(&self) -> io::Result<RealLock> {
        let at = self.join("LOCK");
        // The lock is the flock on this open file description, not the file's content, so the
        // file is never truncated.
        let file = open_regular(
            &at,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )?;
        // flock locks belong to the open file description: a second open() of LOCK in this
        // process is a second holder and is refused like another process would be.
        rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive).map_err(|errno| {
            let err = io::Error::from(errno);
            if err.kind() == io::ErrorKind::WouldBlock {
                io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("store {} is locked by another holder", self.root.display()),
                )
            } else {
                err
            }
        })?;
        Ok(RealLock { file })
    }
}

/// Whether a first rename's `errno` says the file system lacks `RENAME_NOREPLACE`. Some FUSE and
/// network file systems answer EINVAL to the flag (ENOSYS: a kernel without renameat2;
/// EOPNOTSUPP: a file system that says so). Only the first rename decides: once the flag has
/// worked, EINVAL means something else and is passed on. A directory moved beneath itself is the
/// one EINVAL a file system with the flag gives a store path, and link(2) cannot move
/// directories anyway, so a directory's EINVAL decides nothing. The fallback, link then unlink,
/// refuses an existing target in the kernel just as atomically: never a racy
/// exists-then-rename.
fn lacks_noreplace(errno: Errno, mode: u8, from_is_dir: bool) -> bool {
    mode == MODE_UNPROBED
        && !from_is_dir
        && matches!(errno, Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP)
}

/// The no-replace rename of a file system without `RENAME_NOREPLACE`: `link(2)` fails with
/// EEXIST if `to` exists, so nothing is ever replaced. Between the two calls the file has both
/// names; a crash there is healed by boot (the temp is a second name of the final file).
fn link_then_unlink(from: &Path, to: &Path) -> io::Result<()> {
    fs::hard_link(from, to)?;
    fs::remove_file(from).inspect_err(|_| {
        // The link made `to` (it did not exist, or link would have failed): undo it, best
        // effort, so a failed rename leaves only the source, as a failed rename(2) does.
        let _ = fs::remove_file(to);
    })
}

/// fsync of a directory, which is what makes its entries (create, rename, unlink) durable.
fn sync_dir_at(at: &Path) -> io::Result<()> {
    // O_DIRECTORY makes a file under this name an ENOTDIR error instead of a silent file fsync.
    let fd = rustix::fs::open(
        at,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::fs::fsync(&fd)?;
    Ok(())
}

fn is_a_directory(at: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::IsADirectory,
        format!("{} is a directory, not a file", at.display()),
    )
}

/// Opens `at` with `options`, never blocking in open(2), and refuses anything but a regular
/// file, naming what it is. Every file strata opens by name is one it wrote as a regular file;
/// something else under that name (a named pipe, a device, a socket) was put there by someone
/// else, and opening a named pipe without `O_NONBLOCK` waits for a writer that never comes.
/// On a regular file `O_NONBLOCK` changes nothing.
fn open_regular(at: &Path, options: &mut OpenOptions) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let flags = OFlags::NONBLOCK.bits().cast_signed();
    let file = options.custom_flags(flags).open(at).map_err(|err| {
        // A socket refuses to open at all (ENXIO): say what it is rather than "no such device".
        match fs::metadata(at) {
            Ok(meta) if !meta.is_file() => not_regular(at, &meta),
            _ => err,
        }
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(at, &meta));
    }
    Ok(file)
}

/// The error for a name strata opens as a file that is something else.
fn not_regular(at: &Path, meta: &fs::Metadata) -> io::Error {
    if meta.is_dir() {
        return is_a_directory(at);
    }
    super::NotRegular::error(at.display().to_string(), file_kind(meta))
}

/// The error for a name strata uses as a folder that is something else, of `kind` (what the
/// call's bare errno would have been).
fn not_a_directory(at: &Path, meta: &fs::Metadata, kind: io::ErrorKind) -> io::Error {
    io::Error::new(
        kind,
        format!(
            "{} is {}, not a directory (strata made it a folder; move it aside)",
            at.display(),
            file_kind(meta)
        ),
    )
}

/// What a directory entry is, in words.
fn file_kind(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = meta.file_type();
    if kind.is_file() {
        "a regular file"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// A file opened with O_APPEND. Errors pass through unwrapped so their raw OS error (ENOSPC,
/// EIO) survives; std's `Debug` of a `File` already names its path.
#[derive(Debug)]
struct RealFile {
    file: File,
}

impl VfsFile for RealFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
}

/// Holds the flock of root/LOCK, and releases it on drop.
#[derive(Debug)]
struct RealLock {
    file: File,
}

impl VfsLock for RealLock {}

/// A held file: its open description carries the flock, released when this drops.
#[derive(Debug)]
struct RealHold {
    _file: File,
}

impl VfsHold for RealHold {}

impl Drop for RealLock {
    /// Unlocks before the file closes. Closing alone releases the flock only once every
    /// descriptor of the open file description is closed, and a child process another thread
    /// of this process is spawning holds a copy of each until its exec: a store dropped and
    /// reopened in that window would find itself locked out (seen once in the test suite,
    /// which spawns `strata` children beside in-process stores). An explicit unlock releases
    /// the description's lock whoever else holds a descriptor of it. Failure is ignored: the
    /// close that follows releases it in the end anyway.
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.file, FlockOperation::Unlock);
    }
}

#[cfg(test)]
mod tests {
    use rustix::io::Errno;

    use super::{MODE_LINK_UNLINK, MODE_NOREPLACE, MODE_UNPROBED, RealFs, lacks_noreplace};
    use crate::vfs::Vfs;

    /// A dropped lock is released even while another descriptor of its open file description
    /// lives on — what a child process being spawned holds until its exec; here a `dup` of the
    /// lock's descriptor (`try_clone`). Without the unlock on drop the second lock is refused.
    #[test]
    fn a_dropped_lock_is_released_though_a_duplicate_descriptor_lives_on() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let fs = RealFs::create(dir.path()).expect("a store folder");
        let lock = fs.lock_file().expect("the first lock");
        let duplicate = lock.file.try_clone().expect("dup");
        assert!(fs.lock().is_err(), "held: a second lock is refused");
        drop(lock);
        let again = fs.lock();
        drop(duplicate);
        assert!(again.is_ok(), "{again:?}");
    }

    #[test]
    fn only_a_first_files_einval_enosys_or_eopnotsupp_selects_link_then_unlink() {
        for errno in [Errno::INVAL, Errno::NOSYS, Errno::OPNOTSUPP] {
            assert!(lacks_noreplace(errno, MODE_UNPROBED, false), "{errno:?}");
            assert!(
                !lacks_noreplace(errno, MODE_UNPROBED, true),
                "{errno:?}: a directory"
            );
            assert!(
                !lacks_noreplace(errno, MODE_NOREPLACE, false),
                "{errno:?}: decided"
            );
            assert!(
                !lacks_noreplace(errno, MODE_LINK_UNLINK, false),
                "{errno:?}"
            );
        }
        for errno in [
            Errno::EXIST,
            Errno::NOENT,
            Errno::IO,
            Errno::NOSPC,
            Errno::XDEV,
        ] {
            assert!(!lacks_noreplace(errno, MODE_UNPROBED, false), "{errno:?}");
        }
    }
}
