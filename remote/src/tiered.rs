//! The writer's local disk as a cache of the bucket (#17 item 2): [`TieredVfs`] is the store's
//! folder, except that a segment the bucket holds may be evicted from it
//! ([`TieredVfs::evict`], under a byte budget) and is then read from the bucket with ranged
//! GETs into a bounded [`SegmentCache`], checked against its record's length and digest.
//!
//! An eviction is recorded before the local file goes: a marker `remote-evicted/NAME.evicted`
//! (NAME the segment's), written two-phase, holding the segment's length and digest. A crash between
//! the marker and the removal leaves both, and the local file is read. Boot sees an evicted
//! segment as present (its listing and length come from the marker), so a store with evicted
//! segments must be opened through a `TieredVfs` ([`strata_engine::Store::open_in`]); opened
//! plainly, its reads of evicted segments are `Unreadable`, never wrong. When the engine removes
//! a retired segment, its marker goes too.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use strata_engine::Store;
use strata_index::FileName;
use strata_segment::names::{NumberedName, SEG_DIR};
use strata_segment::vfs::{DirEntry, Mapped, RenameMode, Vfs, VfsFile, VfsLock};
use strata_segment::write_two_phase;

use crate::bucket::Bucket;
use crate::cache::SegmentCache;
use crate::config::RemoteConfig;
use crate::error::RemoteError;
use crate::publish::Publisher;
use crate::replica::{fetch_segment, seg_key};

/// The folder of eviction markers, in the store's root.
pub const EVICTED_DIR: &str = "remote-evicted";

const MARKER_PREFIX: &str = "strata evicted segment ";

/// A marker's file name: the segment's, with this suffix (so that a marker's temp in `tmp/`
/// never looks like a segment's).
const MARKER_SUFFIX: &str = ".evicted";

fn marker_name(name: FileName) -> String {
    format!("{}{MARKER_SUFFIX}", NumberedName::segment(name))
}

/// What one [`TieredVfs::evict`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Evicted {
    /// Segments whose local copy was removed.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// The bytes of live segments still on the local disk afterwards.
    pub local_bytes: u64,
}

/// A store's folder whose segments may live only in the bucket (see the module's docs).
#[derive(Debug)]
pub struct TieredVfs {
    local: Arc<dyn Vfs>,
    bucket: Arc<Bucket>,
    cache: Arc<SegmentCache>,
    range_bytes: u64,
    /// Evicted segments: length and digest, as their markers say.
    evicted: Mutex<BTreeMap<FileName, (u64, u32)>>,
}

impl TieredVfs {
    /// The store folder `local`, with the segments its markers name read from `bucket`
    /// (through a cache of `remote.cache_bytes`, in GETs of `remote.range_bytes`). A marker
    /// that does not parse is refused, naming it.
    pub fn open(
        local: Arc<dyn Vfs>,
        bucket: Bucket,
        remote: &RemoteConfig,
    ) -> Result<TieredVfs, RemoteError> {
        let io_error = |path: &str, e: io::Error| RemoteError::Local(segment_io(path, e));
        let mut evicted = BTreeMap::new();
        if local
            .exists(EVICTED_DIR)
            .map_err(|e| io_error(EVICTED_DIR, e))?
        {
            for entry in local
                .list(EVICTED_DIR)
                .map_err(|e| io_error(EVICTED_DIR, e))?
            {
                let path = format!("{EVICTED_DIR}/{}", entry.name);
                let name = entry
                    .name
                    .strip_suffix(MARKER_SUFFIX)
                    .and_then(NumberedName::parse)
                    .filter(|_| !entry.is_dir)
                    .ok_or_else(|| RemoteError::unreadable(&path, "not an eviction marker"))?;
                let bytes = local.read(&path).map_err(|e| io_error(&path, e))?;
                let (len, digest) = parse_marker(&bytes).ok_or_else(|| {
                    RemoteError::unreadable(&path, "not an eviction marker (length and digest)")
                })?;
                evicted.insert(name.number, (len, digest));
            }
        }
        Ok(TieredVfs {
            local,
            bucket: Arc::new(bucket),
            cache: Arc::new(SegmentCache::new(remote.cache_bytes)),
            range_bytes: remote.range_bytes.max(1),
            evicted: Mutex::new(evicted),
        })
    }

    fn evicted(&self) -> MutexGuard<'_, BTreeMap<FileName, (u64, u32)>> {
        self.evicted.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The segments evicted now.
    pub fn evicted_count(&self) -> usize {
        self.evicted().len()
    }

    /// The cache evicted segments are read into.
    pub fn cache(&self) -> &SegmentCache {
        &self.cache
    }

    /// Removes local copies of live segments that the bucket's newest state (as `publisher`
    /// last published or read it) claims, oldest first, until the live segments on the local
    /// disk hold at most `budget` bytes. Each is read from the bucket and checked against its
    /// digest, and recorded by its marker, before its local file goes. `store` must be the store over
    /// this file system, and `publisher` attached to it; a publisher a newer writer has fenced
    /// evicts nothing (`RemoteError::Fenced`).
    pub fn evict(
        &self,
        store: &Store,
        publisher: &Publisher,
        budget: u64,
    ) -> Result<Evicted, RemoteError> {
        // A fenced writer's state is no longer what the bucket keeps: the newer writer may
        // collect what it claims, and the local file would be the last copy.
        publisher.still_the_writer()?;
        let claimed = publisher.claimed().ok_or_else(|| RemoteError::Diverged {
            reason: format!(
                "{}: the publisher has not read the bucket since its last failure: publish first",
                self.bucket.location()
            ),
        })?;
        let mut local: Vec<(FileName, u64, u32)> = Vec::new();
        let mut local_bytes = 0u64;
        for file in store.catalog().live_files() {
            let path = NumberedName::segment(file.name).path_in(SEG_DIR);
            if self
                .local
                .exists(&path)
                .map_err(|e| local_error(&path, e))?
            {
                local_bytes = local_bytes.saturating_add(file.len);
                local.push((file.name, file.len, file.digest));
            }
        }
        local.sort_unstable();
        let mut done = Evicted::default();
        for (name, len, digest) in local {
            if local_bytes <= budget {
                break;
            }
            if !claimed.contains(&name) {
                continue;
            }
            // The bucket's copy is read whole and checked against the digest before the
            // local one goes (and is then in the cache for the next read).
            let key = seg_key(name);
            fetch_segment(
                &self.bucket,
                &self.cache,
                self.range_bytes,
                name,
                len,
                digest,
            )
            .map_err(|e| RemoteError::unreadable(&key, format!("{e}: not evicted")))?;
            self.record(name, len, digest)?;
            let path = NumberedName::segment(name).path_in(SEG_DIR);
            self.local
                .remove(&path)
                .and_then(|()| self.local.sync_dir(SEG_DIR))
                .map_err(|e| local_error(&path, e))?;
            local_bytes -= len;
            done.files += 1;
            done.bytes += len;
        }
        done.local_bytes = local_bytes;
        Ok(done)
    }

    /// Writes the marker of `name` (unless there is one: a crash after it, before the local
    /// file went) and notes it evicted.
    fn record(&self, name: FileName, len: u64, digest: u32) -> Result<(), RemoteError> {
        if self.evicted().contains_key(&name) {
            return Ok(());
        }
        self.local
            .create_dir(EVICTED_DIR)
            .and_then(|()| self.local.sync_dir(""))
            .map_err(|e| local_error(EVICTED_DIR, e))?;
        let marker = format!("{MARKER_PREFIX}{len} {digest:08x}\n");
        write_two_phase(
            self.local.as_ref(),
            EVICTED_DIR,
            &marker_name(name),
            marker.as_bytes(),
        )?;
        self.evicted().insert(name, (len, digest));
        Ok(())
    }

    /// The evicted segment at `path`, if it is one.
    fn evicted_at(&self, path: &str) -> Option<(FileName, u64, u32)> {
        let name = NumberedName::parse(path.strip_prefix(SEG_DIR)?.strip_prefix('/')?)?;
        let &(len, digest) = self.evicted().get(&name.number)?;
        Some((name.number, len, digest))
    }
}

fn parse_marker(bytes: &[u8]) -> Option<(u64, u32)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (len, digest) = text
        .strip_prefix(MARKER_PREFIX)?
        .strip_suffix('\n')?
        .split_once(' ')?;
    if digest.len() != 8 {
        return None;
    }
    Some((len.parse().ok()?, u32::from_str_radix(digest, 16).ok()?))
}

fn segment_io(path: &str, e: io::Error) -> strata_segment::SegmentError {
    crate::publish::io_error(path, e)
}

fn local_error(path: &str, e: io::Error) -> RemoteError {
    RemoteError::Local(segment_io(path, e))
}

impl Vfs for TieredVfs {
    fn create_dir(&self, dir: &str) -> io::Result<()> {
        self.local.create_dir(dir)
    }

    fn create(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        self.local.create(path)
    }

    fn open_append(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        self.local.open_append(path)
    }

    fn map(&self, path: &str) -> io::Result<Mapped> {
        match self.local.map(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let Some((name, len, digest)) = self.evicted_at(path) else {
                    return Err(e);
                };
                fetch_segment(
                    &self.bucket,
                    &self.cache,
                    self.range_bytes,
                    name,
                    len,
                    digest,
                )
                .map(Mapped::from_bytes)
            }
            other => other,
        }
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        match self.local.read(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && self.evicted_at(path).is_some() => {
                Ok(self.map(path)?.to_vec())
            }
            other => other,
        }
    }

    fn len(&self, path: &str) -> io::Result<u64> {
        match self.local.len(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => match self.evicted_at(path) {
                Some((_, len, _)) => Ok(len),
                None => Err(e),
            },
            other => other,
        }
    }

    fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()> {
        if self.evicted_at(to).is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{to} exists (evicted to the bucket)"),
            ));
        }
        match self.evicted_at(from) {
            // Boot moving an evicted segment aside (to quarantine/, when no record claims
            // it): its marker goes there in its stead, as the evidence.
            Some((name, _, _)) if !self.local.exists(from)? => {
                let marker = format!("{EVICTED_DIR}/{}", marker_name(name));
                self.local.rename_noreplace(&marker, to)?;
                self.evicted().remove(&name);
                Ok(())
            }
            _ => self.local.rename_noreplace(from, to),
        }
    }

    fn rename_mode(&self) -> RenameMode {
        self.local.rename_mode()
    }

    fn location(&self) -> String {
        self.local.location()
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        let Some((name, _, _)) = self.evicted_at(path) else {
            return self.local.remove(path);
        };
        let marker = format!("{EVICTED_DIR}/{}", marker_name(name));
        match self.local.remove(&marker) {
            Ok(()) => self.local.sync_dir(EVICTED_DIR)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        self.evicted().remove(&name);
        match self.local.remove(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        self.local.sync_dir(dir)
    }

    fn list(&self, dir: &str) -> io::Result<Vec<DirEntry>> {
        let mut entries = self.local.list(dir)?;
        if dir == SEG_DIR {
            entries.extend(self.evicted().keys().map(|&n| DirEntry {
                name: NumberedName::segment(n).to_string(),
                is_dir: false,
            }));
            entries.sort();
            entries.dedup();
        }
        Ok(entries)
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        Ok(self.local.exists(path)? || self.evicted_at(path).is_some())
    }

    fn lock(&self) -> io::Result<Box<dyn VfsLock>> {
        self.local.lock()
    }

    fn lock_shared(&self) -> io::Result<Option<Box<dyn VfsLock>>> {
        self.local.lock_shared()
    }
}
