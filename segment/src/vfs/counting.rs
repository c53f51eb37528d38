//! A file system wrapper that counts syncs, so a barrier's price is measured, not assumed.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{DirEntry, Mapped, RenameMode, Vfs, VfsFile, VfsHold, VfsLock};

/// How many syncs went through a [`Counting`] file system.
#[derive(Debug, Default)]
pub struct SyncCounts {
    file_syncs: AtomicU64,
    dir_syncs: AtomicU64,
}

impl SyncCounts {
    /// `fdatasync` calls on files.
    pub fn file_syncs(&self) -> u64 {
        self.file_syncs.load(Ordering::Relaxed)
    }

    /// `fsync` calls on directories.
    pub fn dir_syncs(&self) -> u64 {
        self.dir_syncs.load(Ordering::Relaxed)
    }

    /// Both together.
    pub fn total(&self) -> u64 {
        self.file_syncs() + self.dir_syncs()
    }
}

/// Delegates every call to `inner`, counting the syncs (successful or not).
pub struct Counting {
    inner: Arc<dyn Vfs>,
    counts: Arc<SyncCounts>,
}

impl Counting {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Vfs>) -> Counting {
        Counting {
            inner,
            counts: Arc::new(SyncCounts::default()),
        }
    }

    /// The counters, shared with every file this wrapper opened.
    pub fn counts(&self) -> &SyncCounts {
        &self.counts
    }
}

impl fmt::Debug for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Counting")
            .field("inner", &self.inner)
            .field("counts", &self.counts)
            .finish()
    }
}

struct CountingFile {
    inner: Box<dyn VfsFile>,
    counts: Arc<SyncCounts>,
}

impl fmt::Debug for CountingFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl VfsFile for CountingFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.inner.write_all(bytes)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.counts.file_syncs.fetch_add(1, Ordering::Relaxed);
        self.inner.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

impl Vfs for Counting {
    fn create_dir(&self, dir: &str) -> io::Result<()> {
        self.inner.create_dir(dir)
    }

    fn create(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let inner = self.inner.create(path)?;
        Ok(Box::new(CountingFile {
            inner,
            counts: Arc::clone(&self.counts),
        }))
    }

    fn open_append(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let inner = self.inner.open_append(path)?;
        Ok(Box::new(CountingFile {
            inner,
            counts: Arc::clone(&self.counts),
        }))
    }

    fn map(&self, path: &str) -> io::Result<Mapped> {
        self.inner.map(path)
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        self.inner.read(path)
    }

    fn len(&self, path: &str) -> io::Result<u64> {
        self.inner.len(path)
    }

    fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.rename_noreplace(from, to)
    }

    fn rename_mode(&self) -> RenameMode {
        self.inner.rename_mode()
    }

    fn location(&self) -> String {
        self.inner.location()
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        self.inner.remove(path)
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        self.counts.dir_syncs.fetch_add(1, Ordering::Relaxed);
        self.inner.sync_dir(dir)
    }

    fn list(&self, dir: &str) -> io::Result<Vec<DirEntry>> {
        self.inner.list(dir)
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        self.inner.exists(path)
    }

    fn lock(&self) -> io::Result<Box<dyn VfsLock>> {
        self.inner.lock()
    }

    fn lock_shared(&self) -> io::Result<Option<Box<dyn VfsLock>>> {
        self.inner.lock_shared()
    }

    fn read_from(&self, path: &str, offset: u64) -> io::Result<Vec<u8>> {
        self.inner.read_from(path, offset)
    }

    fn hold(&self, path: &str) -> io::Result<Box<dyn VfsHold>> {
        self.inner.hold(path)
    }

    fn held(&self, path: &str) -> io::Result<bool> {
        self.inner.held(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::SimFs;

    #[test]
    fn counts_file_and_directory_syncs() {
        let fs = Counting::new(Arc::new(SimFs::new()));
        fs.create_dir("tmp").unwrap();
        let mut file = fs.create("tmp/a").unwrap();
        file.write_all(b"x").unwrap();
        file.sync_data().unwrap();
        file.sync_data().unwrap();
        fs.sync_dir("tmp").unwrap();
        assert_eq!((fs.counts().file_syncs(), fs.counts().dir_syncs()), (2, 1));
        assert_eq!(fs.counts().total(), 3);
    }
}
