//! The reader's side: the bucket seen as a read-only store folder, and a replica that follows it.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use strata_engine::{Config, Reader, Store};
use strata_index::{Catalog, FileName, log_header_of};
use strata_segment::names::{NumberedName, QUARANTINE_DIR, SEG_DIR, TMP_DIR, manifest_name};
use strata_segment::vfs::{DirEntry, Mapped, RenameMode, Vfs, VfsFile, VfsLock};

use crate::bucket::Bucket;
use crate::cache::SegmentCache;
use crate::chain::passes_through;
use crate::config::RemoteConfig;
use crate::error::RemoteError;
use crate::logobj::{LogKind, LogObject};
use crate::publish::{catalog_of, hex, parse_identity};

/// The key of the store's identity object.
pub(crate) const IDENTITY_KEY: &str = "identity";
const SEQ_DIGITS: usize = 20;

pub(crate) fn log_key(seq: u64) -> String {
    format!("log/{seq:020}")
}

pub(crate) fn epoch_key(epoch: u64) -> String {
    format!("epoch/{epoch:020}")
}

pub(crate) fn seg_key(name: FileName) -> String {
    NumberedName::segment(name).path_in(SEG_DIR)
}

/// A `log/` or `epoch/` object's number: exactly 20 digits.
pub(crate) fn parse_seq(name: &str) -> Option<u64> {
    (name.len() == SEQ_DIGITS && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

/// The bucket's newest state: the manifest its log spells, and the last object read.
#[derive(Debug)]
pub(crate) struct Assembled {
    /// The last object applied (its body dropped).
    pub(crate) head: LogObject,
    /// The manifest: the log header, a reset's body and every append after it.
    pub(crate) manifest: Vec<u8>,
    /// What the manifest describes.
    pub(crate) catalog: Catalog,
}

/// Reads the bucket's newest state: the newest `log/` object, the reset it builds on, and every
/// object between, each checked (checksum, identity, chain) before it is used. `None` if the
/// bucket holds no log yet.
pub(crate) fn assemble(
    bucket: &Bucket,
    config: &RemoteConfig,
    identity: Option<[u8; 16]>,
) -> Result<Option<Assembled>, RemoteError> {
    let seqs = log_seqs(bucket, None)?;
    let Some(&newest) = seqs.last() else {
        return Ok(None);
    };
    let identity = match identity {
        Some(id) => id,
        None => read_identity(bucket)?,
    };
    let head = read_log(bucket, newest, identity, config)?;
    let reset = head.reset;
    // decode guarantees reset <= seq.
    let count = (newest - reset).saturating_add(1);
    if count > config.log_objects_max {
        return Err(RemoteError::Bound {
            reason: format!(
                "{}: {count} log objects since the newest reset (log/{reset}) pass \
                 RemoteConfig::log_objects_max {}",
                bucket.location(),
                config.log_objects_max
            ),
        });
    }
    // The object before the reset, while it is kept (collect deletes it after the grace):
    // the reset must extend it, as every object extends the one before.
    let mut state: Option<Assembled> = match reset.checked_sub(1) {
        Some(prev) => read_prev(bucket, prev, identity, config)?,
        None => None,
    };
    for seq in reset..newest {
        let object = read_log(bucket, seq, identity, config)?;
        state = Some(within(apply(state, object)?, config)?);
    }
    let state = within(apply(state, head)?, config)?;
    finish(state).map(Some)
}

/// `log/prev`, the object before a reset, as a state to apply the reset to (only its head is
/// used: a reset's check needs nothing of the manifest before it); `None` once it is gone
/// (collected after the grace), or if it does not decode.
fn read_prev(
    bucket: &Bucket,
    prev: u64,
    identity: [u8; 16],
    config: &RemoteConfig,
) -> Result<Option<Assembled>, RemoteError> {
    let key = log_key(prev);
    let Some(bytes) = bucket.get_opt(&key, config.log_bytes_max)? else {
        return Ok(None);
    };
    // What is below the reset is no part of the state a replica serves: damage to it is the
    // business of the collect that deletes it, and only takes away the check.
    let Ok(object) = decode_log(&key, &bytes, prev, identity) else {
        return Ok(None);
    };
    Ok(Some(Assembled {
        head: LogObject {
            body: Vec::new(),
            ..object
        },
        manifest: Vec::new(),
        catalog: Catalog::new(),
    }))
}

/// The numbers of the `log/` objects above `after` (all, for `None`), ascending. A key under
/// `log/` that is not a 20-digit number (a stray upload, a tool's marker) is not strata's and is
/// passed over: it must not stop every replica of the bucket.
pub(crate) fn log_seqs(bucket: &Bucket, after: Option<u64>) -> Result<Vec<u64>, RemoteError> {
    let key = after.map(|s| format!("{s:020}"));
    let mut seqs: Vec<u64> = bucket
        .list("log", key.as_deref())?
        .iter()
        .filter_map(|(name, _)| parse_seq(name))
        .filter(|&seq| after.is_none_or(|after| seq > after))
        .collect();
    seqs.sort_unstable();
    Ok(seqs)
}

/// How many objects a poll fetches by number before it lists the log to learn how far behind it
/// is ([`Replica::poll`]): a replica far behind reboots rather than read them one by one.
const CHAINED_GETS_MAX: u64 = 8;

/// The most bytes an `identity` object may hold (it holds a line of 40-odd).
pub(crate) const IDENTITY_BYTES_MAX: u64 = 4096;

/// `state`, if its manifest is within [`RemoteConfig::log_bytes_max`].
fn within(state: Assembled, config: &RemoteConfig) -> Result<Assembled, RemoteError> {
    let len = state.manifest.len() as u64;
    if len > config.log_bytes_max {
        return Err(RemoteError::Bound {
            reason: format!(
                "the manifest assembled up to log/{} holds {len} bytes, more than \
                 RemoteConfig::log_bytes_max {}",
                state.head.seq, config.log_bytes_max
            ),
        });
    }
    Ok(state)
}

fn read_identity(bucket: &Bucket) -> Result<[u8; 16], RemoteError> {
    let bytes = bucket.get(IDENTITY_KEY, IDENTITY_BYTES_MAX)?;
    parse_identity(&bytes)
        .ok_or_else(|| RemoteError::unreadable(IDENTITY_KEY, "not a strata store identity"))
}

fn read_log(
    bucket: &Bucket,
    seq: u64,
    identity: [u8; 16],
    config: &RemoteConfig,
) -> Result<LogObject, RemoteError> {
    let key = log_key(seq);
    decode_log(
        &key,
        &bucket.get(&key, config.log_bytes_max)?,
        seq,
        identity,
    )
}

/// The object `log/seq` (key `key`) whose bytes are `bytes`, checked: whole, of that number,
/// and this store's.
fn decode_log(
    key: &str,
    bytes: &[u8],
    seq: u64,
    identity: [u8; 16],
) -> Result<LogObject, RemoteError> {
    let object = LogObject::decode(bytes, seq).map_err(|r| RemoteError::unreadable(key, r))?;
    if object.identity != identity {
        return Err(RemoteError::unreadable(
            key,
            format!(
                "written by store {}, the bucket is store {}",
                hex(&object.identity),
                hex(&identity)
            ),
        ));
    }
    Ok(object)
}

/// Applies one log object to the state before it: a reset starts over, an append must follow
/// on exactly. Each names the object before it by its digest (format 2), and a reset that is
/// not an operator's adoption must also hold, in its lineage, the state the object before it
/// recorded: the log is one chain, so a replica never moves from one history to another.
fn apply(before: Option<Assembled>, object: LogObject) -> Result<Assembled, RemoteError> {
    let key = log_key(object.seq);
    // Formats only go forward: an object of format 1 after one of format 2 would skip the
    // chain's checks.
    if let Some(before) = &before
        && object.version < before.head.version
    {
        return Err(RemoteError::unreadable(
            &key,
            format!(
                "an object of format {} after log/{:020}, of format {}",
                object.version, before.head.seq, before.head.version
            ),
        ));
    }
    if let (Some(before), Some(parent)) = (&before, object.parent)
        && !object.adopted
        && parent != before.head.digest
    {
        return Err(RemoteError::unreadable(
            &key,
            format!(
                "it extends an object of digest {parent:#010x}, not log/{:020} (digest {:#010x}): \
                 it does not follow on from it",
                before.head.seq, before.head.digest
            ),
        ));
    }
    let mut manifest = match (object.kind, before) {
        (LogKind::Reset, before) => {
            // Format 1 left the manifest's header (of format 1) out of a reset's body.
            let mut manifest = match object.version {
                1 => log_header_of(1).to_vec(),
                _ => Vec::new(),
            };
            manifest.extend_from_slice(&object.body);
            // Format 1 predates the chain: its resets carry no lineage to check.
            if let Some(before) = before
                && object.version >= 2
                && !object.adopted
            {
                reset_extends(&key, &manifest, &object, &before.head)?;
            }
            return Ok(Assembled {
                head: LogObject {
                    body: Vec::new(),
                    ..object
                },
                manifest,
                catalog: Catalog::new(),
            });
        }
        (LogKind::Append, Some(before)) => {
            let prev = &before.head;
            if Some(object.seq) != prev.seq.checked_add(1)
                || object.reset != prev.reset
                || object.generation != prev.generation
                || object.start() != prev.end
                || object.epoch < prev.epoch
            {
                return Err(RemoteError::unreadable(
                    &key,
                    format!("does not follow on from log/{:020}", prev.seq),
                ));
            }
            before.manifest
        }
        (LogKind::Append, None) => {
            return Err(RemoteError::unreadable(
                &key,
                "an append with nothing before it",
            ));
        }
    };
    manifest.extend_from_slice(&object.body);
    Ok(Assembled {
        head: LogObject {
            body: Vec::new(),
            ..object
        },
        manifest,
        catalog: Catalog::new(),
    })
}

/// Refuses a reset (its manifest `manifest`) whose history does not pass through the state the
/// object before it, `prev`, recorded: a writer put another history in the bucket's place
/// without saying so (an adoption says so).
fn reset_extends(
    key: &str,
    manifest: &[u8],
    reset: &LogObject,
    prev: &LogObject,
) -> Result<(), RemoteError> {
    if reset.seq != prev.seq.saturating_add(1) || reset.epoch < prev.epoch {
        return Err(RemoteError::unreadable(
            key,
            format!("does not follow on from log/{:020}", prev.seq),
        ));
    }
    let catalog = catalog_of(manifest, key.to_owned())?;
    passes_through(
        "its",
        reset.generation,
        manifest,
        catalog.lineage(),
        prev.state(),
    )
    .map_err(|apart| {
        RemoteError::unreadable(
            key,
            format!(
                "a reset that does not extend log/{:020} (manifest {}): {apart}",
                prev.seq,
                prev.state()
            ),
        )
    })
}

/// Checks the assembled manifest against the newest object's length and checksum, and reads
/// its catalog.
fn finish(state: Assembled) -> Result<Assembled, RemoteError> {
    let mut state = verified(state)?;
    state.catalog = catalog_of(&state.manifest, log_key(state.head.seq))?;
    Ok(state)
}

/// `state`, once the manifest its log spells is checked against the writer's length and
/// checksum (its catalog left as it is: a poll's replica follows the frames itself).
fn verified(state: Assembled) -> Result<Assembled, RemoteError> {
    if state.manifest.len() as u64 != state.head.end
        || crc32c::crc32c(&state.manifest) != state.head.prefix_crc
    {
        return Err(RemoteError::unreadable(
            &log_key(state.head.seq),
            "the manifest its log spells differs from the writer's (length or checksum)",
        ));
    }
    Ok(state)
}

/// The bucket, seen as a read-only store folder holding one manifest (the one the log spells)
/// and the segments it claims, fetched with ranged GETs into a [`SegmentCache`] and checked
/// against their records' lengths and digests. Every write is refused. A poll shows it the
/// manifest's next state ([`BucketVfs::show`]) and the replica's store follows it.
#[derive(Debug)]
pub struct BucketVfs {
    bucket: Arc<Bucket>,
    cache: Arc<SegmentCache>,
    range_bytes: u64,
    shown: RwLock<Shown>,
}

/// What a [`BucketVfs`] holds now.
#[derive(Debug)]
struct Shown {
    generation: u32,
    /// Grown in place as polls follow appends ([`BucketVfs::show_appended`]).
    manifest: Vec<u8>,
    /// Every segment a state shown since the last reset claimed, with its length and digest:
    /// a view the replica's store handed out before a poll may still read one the poll
    /// retired, and the bucket keeps it until a newer reset collects it. Bounded by what the
    /// manifest records (`RemoteConfig::log_bytes_max`).
    files: BTreeMap<FileName, (u64, u32)>,
}

impl BucketVfs {
    fn new(
        bucket: Arc<Bucket>,
        cache: Arc<SegmentCache>,
        range_bytes: u64,
        state: &Assembled,
    ) -> BucketVfs {
        BucketVfs {
            bucket,
            cache,
            // A field set to 0 by hand would never advance a fetch.
            range_bytes: range_bytes.max(1),
            shown: RwLock::new(Shown {
                generation: state.head.generation.max(1),
                manifest: state.manifest.clone(),
                files: live_files(&state.catalog),
            }),
        }
    }

    /// Shows the manifest of `state`, which extends the one shown (the same generation): the
    /// store that follows it reads what was appended ([`Reader::refresh`]). Its segments are
    /// added once the store knows them ([`BucketVfs::claimed`]).
    fn show(&self, state: &Assembled) {
        let mut shown = self.shown.write().unwrap_or_else(PoisonError::into_inner);
        debug_assert_eq!(shown.generation, state.head.generation.max(1));
        shown.manifest.clone_from(&state.manifest);
    }

    /// Shows the manifest as it was up to `len` bytes with `appended` after them: what a poll
    /// read past the state shown, copied once (a retry after a failed follow shows the same
    /// bytes again at the same place).
    fn show_appended(&self, len: usize, appended: &[u8]) {
        let mut shown = self.shown.write().unwrap_or_else(PoisonError::into_inner);
        shown.manifest.truncate(len);
        shown.manifest.extend_from_slice(appended);
    }

    /// Adds the segments `catalog` holds live (the store's, once it followed what was shown):
    /// those named above every segment known, as names only rise.
    fn claimed(&self, catalog: &Catalog) {
        let mut shown = self.shown.write().unwrap_or_else(PoisonError::into_inner);
        let known = shown.files.last_key_value().map(|(&name, _)| name);
        let new: Vec<_> = catalog
            .live_files_after(known)
            .map(|f| (f.name, (f.len, f.digest)))
            .collect();
        shown.files.extend(new);
    }

    fn shown(&self) -> RwLockReadGuard<'_, Shown> {
        self.shown.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn manifest_path(&self) -> String {
        manifest_name(self.shown().generation)
    }

    fn segment(&self, path: &str) -> Option<(FileName, u64, u32)> {
        let name = NumberedName::parse(path.strip_prefix(SEG_DIR)?.strip_prefix('/')?)?;
        let &(len, digest) = self.shown().files.get(&name.number)?;
        Some((name.number, len, digest))
    }

    fn fetch(&self, name: FileName, len: u64, digest: u32) -> io::Result<Arc<[u8]>> {
        fetch_segment(
            &self.bucket,
            &self.cache,
            self.range_bytes,
            name,
            len,
            digest,
        )
    }
}

/// Segment `name` from the bucket (or `cache`), fetched in ranges of `range_bytes` and checked
/// against its record's `len` and `digest`; kept in `cache`. A missing object is `NotFound`,
/// a short or damaged one `InvalidData`, each naming the object.
pub(crate) fn fetch_segment(
    bucket: &Bucket,
    cache: &SegmentCache,
    range_bytes: u64,
    name: FileName,
    len: u64,
    digest: u32,
) -> io::Result<Arc<[u8]>> {
    let range_bytes = range_bytes.max(1);
    if let Some(bytes) = cache.get(name) {
        return Ok(bytes);
    }
    let key = seg_key(name);
    // The record's length is not trusted with an allocation: the bytes grow as the
    // bucket answers, a range at a time.
    let mut bytes = Vec::with_capacity(usize::try_from(len.min(range_bytes)).unwrap_or(0));
    let mut at = 0;
    while at < len {
        let end = len.min(at.saturating_add(range_bytes));
        let part = bucket.get_range(&key, at..end).map_err(|e| match e {
            RemoteError::Missing { .. } => io::Error::new(
                io::ErrorKind::NotFound,
                format!("object {key} is missing from {}", bucket.location()),
            ),
            other => io::Error::other(other.to_string()),
        })?;
        if part.len() as u64 != end - at {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "object {key}: bytes {at}..{end} came back as {} bytes (is it shorter \
                     than its record's {len}?)",
                    part.len()
                ),
            ));
        }
        bytes.extend_from_slice(&part);
        at = end;
    }
    let actual = strata_segment::format::file_digest(&bytes);
    if actual != digest {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("object {key}: digest {actual:#010x} differs from its record's {digest:#010x}"),
        ));
    }
    let bytes: Arc<[u8]> = bytes.into();
    cache.insert(name, Arc::clone(&bytes));
    Ok(bytes)
}

fn read_only() -> io::Error {
    io::Error::new(
        io::ErrorKind::ReadOnlyFilesystem,
        "a replica never writes: the bucket is the writer's",
    )
}

fn not_found(path: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{path}: no such file"))
}

impl Vfs for BucketVfs {
    fn create_dir(&self, _dir: &str) -> io::Result<()> {
        Err(read_only())
    }

    fn create(&self, _path: &str) -> io::Result<Box<dyn VfsFile>> {
        Err(read_only())
    }

    fn open_append(&self, _path: &str) -> io::Result<Box<dyn VfsFile>> {
        Err(read_only())
    }

    fn map(&self, path: &str) -> io::Result<Mapped> {
        {
            let shown = self.shown();
            if path == manifest_name(shown.generation) {
                return Ok(Mapped::from_bytes(shown.manifest.as_slice().into()));
            }
        }
        let (name, len, digest) = self.segment(path).ok_or_else(|| not_found(path))?;
        self.fetch(name, len, digest).map(Mapped::from_bytes)
    }

    fn read_from(&self, path: &str, offset: u64) -> io::Result<Vec<u8>> {
        {
            let shown = self.shown();
            if path == manifest_name(shown.generation) {
                let from = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(shown.manifest.len());
                return Ok(shown.manifest[from..].to_vec());
            }
        }
        self.read(path).map(|bytes| {
            bytes
                .get(usize::try_from(offset).unwrap_or(usize::MAX)..)
                .unwrap_or_default()
                .to_vec()
        })
    }

    fn len(&self, path: &str) -> io::Result<u64> {
        {
            let shown = self.shown();
            if path == manifest_name(shown.generation) {
                return Ok(shown.manifest.len() as u64);
            }
        }
        self.segment(path)
            .map(|(_, len, _)| len)
            .ok_or_else(|| not_found(path))
    }

    fn rename_noreplace(&self, _from: &str, _to: &str) -> io::Result<()> {
        Err(read_only())
    }

    fn rename_mode(&self) -> RenameMode {
        RenameMode::Noreplace
    }

    fn location(&self) -> String {
        self.bucket.location().to_owned()
    }

    fn remove(&self, _path: &str) -> io::Result<()> {
        Err(read_only())
    }

    fn sync_dir(&self, _dir: &str) -> io::Result<()> {
        Err(read_only())
    }

    fn list(&self, dir: &str) -> io::Result<Vec<DirEntry>> {
        let entry = |name: String, is_dir| DirEntry { name, is_dir };
        let mut entries = match dir {
            "" => vec![
                entry(self.manifest_path(), false),
                entry(QUARANTINE_DIR.to_owned(), true),
                entry(SEG_DIR.to_owned(), true),
                entry(TMP_DIR.to_owned(), true),
            ],
            SEG_DIR => self
                .shown()
                .files
                .keys()
                .map(|&n| entry(NumberedName::segment(n).to_string(), false))
                .collect(),
            TMP_DIR | QUARANTINE_DIR => Vec::new(),
            other => return Err(not_found(other)),
        };
        entries.sort();
        Ok(entries)
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        Ok(path == self.manifest_path()
            || [SEG_DIR, TMP_DIR, QUARANTINE_DIR].contains(&path)
            || self.segment(path).is_some())
    }

    fn lock(&self) -> io::Result<Box<dyn VfsLock>> {
        Err(read_only())
    }

    fn lock_shared(&self) -> io::Result<Option<Box<dyn VfsLock>>> {
        Ok(None)
    }
}

/// A read replica: a [`Reader`] booted from the bucket's newest state, following new
/// records when [`Replica::poll`] is called. It never writes to the bucket.
#[derive(Debug)]
pub struct Replica {
    bucket: Arc<Bucket>,
    cache: Arc<SegmentCache>,
    remote: RemoteConfig,
    config: Config,
    identity: [u8; 16],
    head: LogObject,
    manifest: Vec<u8>,
    /// What the store reads: the manifest and segments of the state shown.
    vfs: Arc<BucketVfs>,
    store: Reader,
}

impl Replica {
    /// Boots from the bucket's newest state. Refuses a bucket with nothing published yet.
    pub fn open(
        bucket: Bucket,
        config: Config,
        remote: RemoteConfig,
    ) -> Result<Replica, RemoteError> {
        let identity = read_identity(&bucket).map_err(|e| match e {
            RemoteError::Missing { .. } => RemoteError::Missing {
                key: format!(
                    "{}/{IDENTITY_KEY} (nothing was ever published there)",
                    bucket.location()
                ),
            },
            other => other,
        })?;
        let state =
            assemble(&bucket, &remote, Some(identity))?.ok_or_else(|| RemoteError::Missing {
                key: format!("{}/log/ (nothing was published yet)", bucket.location()),
            })?;
        let bucket = Arc::new(bucket);
        let cache = Arc::new(SegmentCache::new(remote.cache_bytes));
        let (vfs, store) = boot(&bucket, &cache, &remote, &config, &state)?;
        Ok(Replica {
            bucket,
            cache,
            remote,
            config,
            identity,
            head: state.head,
            manifest: state.manifest,
            vfs,
            store,
        })
    }

    /// [`Replica::open`] of the bucket a URL names (see [`Bucket::open_url`]).
    pub fn open_url(
        url: &str,
        config: Config,
        remote: RemoteConfig,
    ) -> Result<Replica, RemoteError> {
        Replica::open(Bucket::open_url(url, false)?, config, remote)
    }

    /// Reads the records published since the last boot or poll and, if there are any, has the
    /// store follow them: the frames they append are applied to its catalog
    /// ([`Reader::refresh`], as a reader in another process follows a manifest), the catalog is
    /// not rebuilt and the cache is kept. Past a reset, the store reads the new generation
    /// whole. `true` if the state moved. On an error the replica keeps serving the state it
    /// had.
    ///
    /// The objects past the last one read are fetched by number, one after another, until one
    /// is missing: a poll after one barrier costs two GETs and what they append, however long
    /// the log. A listing is taken only when the next object is missing (nothing new, or
    /// collected beneath a newer reset: the listing says which) or when more than
    /// `CHAINED_GETS_MAX` (8) objects are new (how far behind the replica is).
    pub fn poll(&mut self) -> Result<bool, RemoteError> {
        let mut state = Assembled {
            head: self.head.clone(),
            // What the objects read append to the manifest (or, past a reset, its whole).
            manifest: Vec::new(),
            catalog: Catalog::new(),
        };
        let mut read = 0u64;
        let mut reset = false;
        // The newest object, once listed.
        let mut newest: Option<u64> = None;
        loop {
            let seq = state.head.seq.saturating_add(1);
            if newest.is_some_and(|newest| seq > newest) {
                break;
            }
            if newest.is_none() && read == CHAINED_GETS_MAX {
                let seqs = log_seqs(&self.bucket, Some(self.head.seq))?;
                match seqs.last() {
                    Some(&last) if last - self.head.seq <= self.remote.log_objects_max => {
                        newest = Some(last);
                        continue;
                    }
                    // Far behind, or collected meanwhile: the newest state from its reset.
                    _ => return self.reboot(),
                }
            }
            let object = match read_log(&self.bucket, seq, self.identity, &self.remote) {
                Ok(object) => object,
                Err(RemoteError::Missing { .. }) if read == 0 => {
                    // Nothing new, or collected beneath a newer reset.
                    return match log_seqs(&self.bucket, Some(self.head.seq))?.last() {
                        None => Ok(false),
                        Some(_) => self.reboot(),
                    };
                }
                // The end of the log as it was written when asked.
                Err(RemoteError::Missing { .. }) if newest.is_none() => break,
                // Listed, then gone: collected beneath a newer reset.
                Err(RemoteError::Missing { .. }) => return self.reboot(),
                Err(e) => return Err(e),
            };
            reset |= object.kind == LogKind::Reset;
            state = apply(Some(state), object)?;
            read += 1;
            let len = if reset {
                state.manifest.len()
            } else {
                self.manifest.len() + state.manifest.len()
            };
            if len as u64 > self.remote.log_bytes_max {
                return Err(RemoteError::Bound {
                    reason: format!(
                        "the manifest assembled up to log/{} holds {len} bytes, more than \
                         RemoteConfig::log_bytes_max {}",
                        state.head.seq, self.remote.log_bytes_max
                    ),
                });
            }
        }
        if reset {
            self.follow(verified(state)?, false)?;
            return Ok(true);
        }
        self.follow_appended(state)?;
        Ok(true)
    }

    /// Has the store follow the bytes `appended` (in `state.manifest`) to the manifest it
    /// follows, once they are checked with the writer's length and checksum of the whole, the
    /// checksum carried on from the one checked before: nothing of what was followed before is
    /// read or copied again.
    fn follow_appended(&mut self, state: Assembled) -> Result<(), RemoteError> {
        let appended = state.manifest;
        let len = self.manifest.len() as u64 + appended.len() as u64;
        if len != state.head.end
            || crc32c::crc32c_append(self.head.prefix_crc, &appended) != state.head.prefix_crc
        {
            return Err(RemoteError::unreadable(
                &log_key(state.head.seq),
                "the manifest its log spells differs from the writer's (length or checksum)",
            ));
        }
        self.vfs.show_appended(self.manifest.len(), &appended);
        self.store.refresh()?;
        self.vfs.claimed(self.store.catalog());
        self.manifest.extend_from_slice(&appended);
        self.head = state.head;
        Ok(())
    }

    fn reboot(&mut self) -> Result<bool, RemoteError> {
        let state =
            assemble(&self.bucket, &self.remote, Some(self.identity))?.ok_or_else(|| {
                RemoteError::Missing {
                    key: format!("{}/log/", self.bucket.location()),
                }
            })?;
        let moved = state.head.seq != self.head.seq;
        self.follow(state, true)?;
        Ok(moved)
    }

    /// Has the store follow `state`: a state whose manifest extends the one the store follows
    /// (the same generation, its bytes a prefix) is shown to it and followed as a reader in
    /// another process follows a manifest, one way for both ([`Reader::refresh`]: the frames
    /// appended, applied to its catalog). Any other (a reset: a new generation, or a history
    /// adopted in place of this one) is booted afresh, its catalog built by replaying it
    /// (`finished`: already built).
    fn follow(&mut self, state: Assembled, finished: bool) -> Result<(), RemoteError> {
        let extends = state.head.generation.max(1) == self.head.generation.max(1)
            && state.manifest.starts_with(&self.manifest);
        let state = if extends {
            self.vfs.show(&state);
            self.store.refresh()?;
            self.vfs.claimed(self.store.catalog());
            state
        } else {
            let state = if finished { state } else { finish(state)? };
            (self.vfs, self.store) = boot(
                &self.bucket,
                &self.cache,
                &self.remote,
                &self.config,
                &state,
            )?;
            state
        };
        self.head = state.head;
        self.manifest = state.manifest;
        Ok(())
    }

    /// Forgets every cached segment and boots the store again on the same state (without
    /// reading the log again), so that the next reads fetch their segments from the bucket: a
    /// cold cache, as a replica that just started has.
    pub fn evict_all(&mut self) -> Result<(), RemoteError> {
        self.cache.clear();
        let state = finish(Assembled {
            head: self.head.clone(),
            manifest: self.manifest.clone(),
            catalog: Catalog::new(),
        })?;
        let (vfs, store) = boot(
            &self.bucket,
            &self.cache,
            &self.remote,
            &self.config,
            &state,
        )?;
        self.vfs = vfs;
        self.store = store;
        Ok(())
    }

    /// The store as of the last boot or poll: query, survey and fold it as any read-only store.
    pub fn store(&self) -> &Reader {
        &self.store
    }

    /// The `log/` object the replica's state ends with.
    pub fn seq(&self) -> u64 {
        self.head.seq
    }

    /// The segment cache (its bytes, budget and counts).
    pub fn cache(&self) -> &SegmentCache {
        &self.cache
    }

    /// Where the replica reads from.
    pub fn location(&self) -> &str {
        self.bucket.location()
    }
}

/// The store a replica reads: a follower ([`Store::open_follower_in`]: a reader that holds no
/// pin, the bucket's publisher removing nothing a published state names) of the bucket as
/// `state` shows it.
fn boot(
    bucket: &Arc<Bucket>,
    cache: &Arc<SegmentCache>,
    remote: &RemoteConfig,
    config: &Config,
    state: &Assembled,
) -> Result<(Arc<BucketVfs>, Reader), RemoteError> {
    let vfs = Arc::new(BucketVfs::new(
        Arc::clone(bucket),
        Arc::clone(cache),
        remote.range_bytes,
        state,
    ));
    let store = Store::open_follower_in(Arc::clone(&vfs) as Arc<dyn Vfs>, config.clone())?;
    Ok((vfs, store))
}

/// The live segments of `catalog`, with their lengths and digests.
fn live_files(catalog: &Catalog) -> BTreeMap<FileName, (u64, u32)> {
    catalog
        .live_files()
        .map(|f| (f.name, (f.len, f.digest)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_names_are_exactly_twenty_digits() {
        assert_eq!(parse_seq("00000000000000000042"), Some(42));
        assert_eq!(parse_seq("0000000000000000042"), None);
        assert_eq!(parse_seq("+0000000000000000042"), None);
        assert_eq!(parse_seq("99999999999999999999"), None, "overflows u64");
        assert_eq!(log_key(7), "log/00000000000000000007");
    }
}
