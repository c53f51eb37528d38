//! The store: open (boot), publish into staging, and the seal barrier.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::path::Path;
use std::sync::{Arc, Mutex};

use strata_index::{Catalog, Entry, FileName, Record, StreamDecl, TrackKey};
use strata_recover::{
    Booted, Report, Viewed, boot_keeping_retired, boot_new, boot_read_only, holds_no_store,
};
use strata_segment::vfs::{Counting, RealFs, SyncCounts, Vfs};
use strata_segment::{ManifestWriter, SegmentError};

use crate::config::Config;
use crate::decl::describe;
use crate::error::EngineError;
use crate::metrics::Metrics;
use crate::pins::Removal;
use crate::reader::Reader;
use crate::readers::{ManifestPosition, oldest_reader};
use crate::value::Row;
use crate::view::View;
use crate::write::manifest::{append_record, snapshot_len};
use crate::write::stage::StreamState;

/// How a store is being opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opening {
    Create,
    Open,
    OpenOrCreate,
}

/// A store folder opened without creating it: a missing folder is `NotAStore`, naming it.
pub(crate) fn open_folder(dir: &Path) -> Result<RealFs, EngineError> {
    // `try_exists`, not `exists`: a folder this process may not look into is that error, not
    // "does not exist".
    if !dir.try_exists().map_err(|e| folder_error(dir, e))? {
        return Err(EngineError::Open(strata_recover::RecoverError::NotAStore {
            reason: format!("{} does not exist", dir.display()),
        }));
    }
    RealFs::open(dir).map_err(|e| folder_error(dir, e))
}

fn folder_error(dir: &Path, source: std::io::Error) -> EngineError {
    EngineError::write(SegmentError::Io {
        path: dir.display().to_string(),
        source,
    })
}

/// An open store. One writer per folder: a writable open takes an exclusive lock; read-only
/// opens share it.
pub struct Store {
    /// The read half, at the current version: every read of the store is a method of it
    /// (reached through `Deref`), and [`Store::view`] hands out pinned copies of it.
    pub(crate) view: View,
    /// What only the writer has: the manifest it appends to, staging's size, the files it is
    /// yet to remove, compaction's place, its counters. A store that only reads is a
    /// [`Reader`](crate::Reader), which has none.
    pub(crate) writer: Writer,
    /// Each stream's staging and the positions it has published: the write half's.
    pub(crate) streams: BTreeMap<String, StreamState>,
}

/// A store is the read half at its current version plus the writer's state: every read of a
/// [`View`] is a read of the store.
impl Deref for Store {
    type Target = View;

    fn deref(&self) -> &View {
        &self.view
    }
}

/// The writer's own state ([`Store::writer`]): one owner, the store that writes; a snapshot
/// carries a detached one that nothing writes through.
// Independent states (writing, a measure due, a sweep due, removals deferred), not one mode.
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct Writer {
    /// Files retired while a snapshot of an earlier version was held, with the version that
    /// retired them: removed once no snapshot older than that version is left.
    pub(crate) removals: Vec<Removal>,
    /// Every retired file is queued in `removals` rather than removed in place: `Served` has
    /// its worker remove them ([`Store::take_due_removals`]), so that no unlink or directory
    /// sync runs on its supervisor's thread.
    pub(crate) defer_removals: bool,
    /// A barrier's writes are in flight on a worker (`Served`): every write but a publish
    /// waits for it (the supervisor sees to that; a write that comes anyway is refused).
    pub(crate) sealing: bool,
    pub(crate) manifest: ManifestWriter,
    /// The length of a snapshot of the live state, as of the last rewrite (or measured at open
    /// when the manifest is past its threshold): the next rewrite waits until the manifest is
    /// twice that, so rewriting costs O(1) per byte appended.
    pub(crate) manifest_base_len: u64,
    /// Whether files were wholly retired since `manifest_base_len` was measured, so that the
    /// snapshot may now be much shorter: measured again once compaction is quiet.
    pub(crate) retired_since_measure: bool,
    /// The partition the last compaction step merged: the next step looks for work after it
    /// first, so every partition with work gets a step in turn (`compact.rs`, `pick`).
    pub(crate) compact_cursor: Option<(String, TrackKey)>,
    /// Whether a barrier landed since the last sweep: only a barrier moves what has outlived
    /// its retention, so compaction steps sweep only then.
    pub(crate) sweep_due: bool,
    /// The file of the last one-input rewrite whose read failed: skipped by the next picks,
    /// so that it does not take every step (`compact.rs`, `pick_rewrite`).
    pub(crate) rewrite_failed: Option<FileName>,
    pub(crate) next_name: FileName,
    pub(crate) staged_bytes: usize,
    pub(crate) metrics: Metrics,
}

impl Writer {
    /// A writer at the manifest's end and `next_name`, with nothing staged, queued or due.
    pub(crate) fn new(
        manifest: ManifestWriter,
        next_name: FileName,
        manifest_base_len: u64,
    ) -> Writer {
        Writer {
            removals: Vec::new(),
            defer_removals: false,
            sealing: false,
            manifest,
            manifest_base_len,
            retired_since_measure: false,
            compact_cursor: None,
            sweep_due: true,
            rewrite_failed: None,
            next_name,
            staged_bytes: 0,
            metrics: Metrics::default(),
        }
    }

    /// The writer a writable boot leaves: its syncs so far counted, and the retired files boot
    /// left for readers in other processes queued, to be removed once every reader has read
    /// past `at`, the manifest boot trusted (`readers.rs`).
    fn booted(
        manifest: ManifestWriter,
        next_name: FileName,
        manifest_base_len: u64,
        syncs: &SyncCounts,
        retired_kept: Vec<FileName>,
        at: ManifestPosition,
    ) -> Writer {
        let mut writer = Writer {
            metrics: Metrics {
                file_syncs: syncs.file_syncs(),
                dir_syncs: syncs.dir_syncs(),
                ..Metrics::default()
            },
            ..Writer::new(manifest, next_name, manifest_base_len)
        };
        writer
            .removals
            .extend(retired_kept.into_iter().map(|name| Removal {
                version: 0,
                at,
                name,
            }));
        writer
    }

    /// Where the manifest ends now: past the last frame appended.
    pub(crate) fn manifest_position(&self) -> ManifestPosition {
        ManifestPosition {
            generation: self.manifest.generation(),
            len: self.manifest.len(),
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("streams", &self.streams.keys().collect::<Vec<_>>())
            .field("staged_bytes", &self.staged_bytes())
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Creates a new store in folder `dir`, declaring `streams`. The folder is created (with
    /// its missing ancestors) if it does not exist; one that already holds a store is refused
    /// (`EngineError::Open` of `RecoverError::AlreadyAStore`, naming it), one that holds
    /// anything else likewise (`RecoverError::NotEmpty`, naming what it holds), and left as it
    /// was. The config, the declarations and the retention are checked before anything is
    /// created: a refused create leaves the folder as it was (a missing one stays missing).
    pub fn create(
        dir: impl AsRef<Path>,
        config: Config,
        streams: &[StreamDecl],
    ) -> Result<Store, EngineError> {
        Store::boot_at(dir.as_ref(), config, streams, Opening::Create)
    }

    /// Opens the store in folder `dir`, declaring `streams`. A stream the store already
    /// recorded must be declared identically; streams it recorded but `streams` omits are
    /// opened as recorded. A folder that does not exist or holds no store is refused
    /// (`EngineError::Open` of `RecoverError::NotAStore`, naming the folder) and nothing is
    /// created: a mistyped path is an error, never a new store.
    pub fn open(
        dir: impl AsRef<Path>,
        config: Config,
        streams: &[StreamDecl],
    ) -> Result<Store, EngineError> {
        Store::boot_at(dir.as_ref(), config, streams, Opening::Open)
    }

    /// Opens the store in folder `dir`, or creates one there if the folder does not exist or is
    /// empty: the convenience of a program that owns its folder. A folder holding anything
    /// else is refused as [`Store::open`] refuses it. A refusal of the config, the
    /// declarations or the retention creates nothing: a missing folder stays missing, an empty
    /// one empty.
    pub fn open_or_create(
        dir: impl AsRef<Path>,
        config: Config,
        streams: &[StreamDecl],
    ) -> Result<Store, EngineError> {
        Store::boot_at(dir.as_ref(), config, streams, Opening::OpenOrCreate)
    }

    /// Opens the store in folder `dir` for reading only: nothing is written, created, renamed,
    /// removed or synced, so it works on a read-only mount and leaves a copied store
    /// byte-identical. Boot is planned and not carried out: what a writable open would heal
    /// (a torn manifest tail, orphan temps, unrecorded segments, retired files) stays on disk,
    /// and [`View::boot_report`] lists it with `heal_pending` set; reads answer from the
    /// manifest's trusted prefix exactly as a writable open would. No `LOCK` is created; if
    /// the store has one, a shared hold of it keeps writers out while this reader lives, and a
    /// store a writer holds is refused (`Locked`). The answer is a [`Reader`], which has no
    /// write method (publish, seal, compact, sweep, retire, trim, checkpoint). Streams in
    /// `streams` the store has not recorded are served as empty and not recorded.
    pub fn open_read_only(
        dir: impl AsRef<Path>,
        config: Config,
        streams: &[StreamDecl],
    ) -> Result<Reader, EngineError> {
        let vfs = open_folder(dir.as_ref())?;
        Store::open_read_only_in(Arc::new(vfs), config, streams)
    }

    /// [`Store::create`] on any file system (the simulated one, in tests), whose root must
    /// exist.
    pub fn create_in(
        vfs: Arc<dyn Vfs>,
        config: Config,
        streams: &[StreamDecl],
    ) -> Result<Store, EngineError> {
        Store::boot_in(vfs, config, streams, Opening::Create)
    }

    /// [`Store::open`] on any file system (the simulated one, in tests).
    pub fn open_in(
        vfs: Arc<dyn Vfs>,
        config: Config,
        streams: &[StreamDecl],
    ) -> Result<Store, EngineError> {
        Store::boot_in(vfs, config, streams, Opening::Open)
    }

    /// [`Store::open_or_create`] on any file system (the simulated one, in tests).
    pub fn open_or_create_in(
        vfs: Arc<dyn Vfs>,
        config: Config,
        streams: &[StreamDecl],
    ) -> Result<Store, EngineError> {
        Store::boot_in(vfs, config, streams, Opening::OpenOrCreate)
    }

    /// [`Store::open_read_only`] on any file system (the simulated one, in tests).
    pub fn open_read_only_in(
        vfs: Arc<dyn Vfs>,
        config: Config,
        streams: &[StreamDecl],
    ) -> Result<Reader, EngineError> {
        check_before_boot(&config, streams, false)?;
        let vfs = Arc::new(Counting::new(vfs));
        let Viewed {
            mut catalog,
            report,
            unreadable,
            lock,
            ..
        } = boot_read_only(vfs.as_ref()).map_err(EngineError::Open)?;
        // Never appended to: a read-only open declares in memory only.
        let mut manifest = ManifestWriter::detached(report.generation, report.trusted_len);
        declare_streams(
            &mut catalog,
            &mut manifest,
            vfs.as_ref(),
            streams,
            &config,
            true,
        )?;
        let mut reader = Reader::reading(vfs, config, catalog, report);
        reader.view.unreadable = Arc::new(unreadable);
        reader.view.lock = lock.map(|lock| Arc::new(Mutex::new(lock)));
        Ok(reader)
    }

    /// The three writable opens of a folder: a store to create is checked (config, declarations,
    /// retention) before its folder is made, so a refusal leaves a missing folder missing; the
    /// others need the folder to exist and create nothing of it. `boot_in` checks the rest.
    fn boot_at(
        dir: &Path,
        config: Config,
        streams: &[StreamDecl],
        opening: Opening,
    ) -> Result<Store, EngineError> {
        let vfs = match opening {
            Opening::Create | Opening::OpenOrCreate => {
                let missing = matches!(dir.try_exists(), Ok(false));
                let creating = opening == Opening::Create || missing;
                check_before_boot(&config, streams, creating)?;
                RealFs::create(dir).map_err(|e| folder_error(dir, e))?
            }
            Opening::Open => open_folder(dir)?,
        };
        Store::boot_in(Arc::new(vfs), config, streams, opening)
    }

    fn boot_in(
        vfs: Arc<dyn Vfs>,
        config: Config,
        streams: &[StreamDecl],
        opening: Opening,
    ) -> Result<Store, EngineError> {
        // What can be refused without the store's records is refused before boot changes
        // anything (creates, locks or heals); for a store boot would create, that is all of it,
        // the catalog being empty.
        let creating = match opening {
            Opening::Create => true,
            Opening::OpenOrCreate => holds_no_store(vfs.as_ref()).map_err(EngineError::Open)?,
            Opening::Open => false,
        };
        check_before_boot(&config, streams, creating)?;
        let vfs = Arc::new(Counting::new(vfs));
        // Readers in other processes may still open files whose retirement is recorded: while
        // any is alive, boot leaves those for the writer to remove once they have read past it.
        // A reader that starts after this look reads a manifest that records the retirements.
        let keep_retired = match opening {
            Opening::Open | Opening::OpenOrCreate => oldest_reader(vfs.as_ref())?.is_some(),
            Opening::Create => false,
        };
        let Booted {
            mut catalog,
            mut manifest,
            report,
            next_name,
            unreadable,
            lock,
            retired_kept,
            ..
        } = match opening {
            Opening::Create => boot_new(vfs.as_ref()),
            Opening::Open => boot_keeping_retired(vfs.as_ref(), false, keep_retired),
            Opening::OpenOrCreate => boot_keeping_retired(vfs.as_ref(), true, keep_retired),
        }
        .map_err(EngineError::Open)?;
        let upgrade = declare_streams(
            &mut catalog,
            &mut manifest,
            vfs.as_ref(),
            streams,
            &config,
            false,
        )?;
        let manifest_base_len = if manifest.len() > config.manifest_rewrite_bytes {
            snapshot_len(&catalog)
        } else {
            0
        };
        let at = ManifestPosition {
            generation: report.generation,
            len: report.trusted_len,
        };
        let writer = Writer::booted(
            manifest,
            next_name,
            manifest_base_len,
            vfs.counts(),
            retired_kept,
            at,
        );
        let mut store = Store::assemble(vfs, config, catalog, writer, report);
        store.view.unreadable = Arc::new(unreadable);
        store.view.lock = Some(Arc::new(Mutex::new(lock)));
        // A declaration the manifest's format cannot hold (a time axis in a generation an
        // earlier build wrote) is recorded by a new generation of this build's format, whose
        // snapshot holds it: the catalog already does.
        if upgrade && !store.rewrite_manifest()? {
            return Err(crate::decl::upgrade_deferred(streams));
        }
        Ok(store)
    }

    /// A store of `catalog` with `writer`'s state, nothing staged, its caches empty, no lock.
    fn assemble(
        vfs: Arc<Counting>,
        config: Config,
        catalog: Catalog,
        writer: Writer,
        report: Report,
    ) -> Store {
        Store {
            streams: stream_states(&catalog),
            view: View::new(vfs, config, catalog, report),
            writer,
        }
    }

    /// What the store has done since it was opened.
    pub fn metrics(&self) -> Metrics {
        let read = self.view.metrics();
        let writer = &self.writer;
        // The writer counts what it wrote; the view, the gauges every opening's reads share.
        Metrics {
            removals_pending: writer.removals.len() as u64,
            file_syncs: read.file_syncs,
            dir_syncs: read.dir_syncs,
            cells_read: read.cells_read,
            segments_open: read.segments_open,
            segment_evictions: read.segment_evictions,
            segments_mapped: read.segments_mapped,
            segments_mapped_peak: read.segments_mapped_peak,
            snapshots: read.snapshots,
            decoded_chunks_bytes: read.decoded_chunks_bytes,
            decoded_chunk_hits: read.decoded_chunk_hits,
            decoded_chunk_misses: read.decoded_chunk_misses,
            decoded_chunk_evictions: read.decoded_chunk_evictions,
            decoded_cells_bytes: read.decoded_cells_bytes,
            decoded_cell_hits: read.decoded_cell_hits,
            decoded_cell_misses: read.decoded_cell_misses,
            decoded_cell_evictions: read.decoded_cell_evictions,
            ..writer.metrics
        }
    }

    /// The manifest position this store answers at: where its manifest ends now, past the
    /// last record it appended.
    pub fn manifest_position(&self) -> ManifestPosition {
        self.writer.manifest_position()
    }

    /// Bytes staged and not yet sealed.
    pub fn staged_bytes(&self) -> usize {
        self.writer.staged_bytes
    }

    /// Stages `rows` of `stream` at `position`. Touches no file. The whole batch is validated
    /// first; if any row is refused, nothing of the batch is staged.
    pub fn publish(
        &mut self,
        stream: &str,
        position: u64,
        rows: &[Row],
    ) -> Result<(), EngineError> {
        self.check_writable("publish")?;
        let catalog = &self.view.catalog;
        let state = stream_state_mut(&mut self.streams, stream)?;
        let (keys, batch_bytes) = state.validate(
            position,
            rows,
            |key| durable_axis(catalog, stream, key),
            |key| floor_axis(catalog, stream, key),
        )?;
        room_to_stage(
            self.writer.staged_bytes,
            batch_bytes,
            self.view.config.staged_bytes_max,
        )?;
        state.stage(position, rows, keys);
        self.writer.staged_bytes += batch_bytes;
        Ok(())
    }

    /// The position the next batch of `stream` gets when the caller has no position of its
    /// own (as `strata ingest` assigns them to a CSV without a `position` column): the lowest
    /// one above everything published (sealed or staged), above the watermark, above the
    /// fence, and not beneath the floor — so a publish there is accepted and shares its
    /// position with no earlier row. 0 for a stream with nothing published and nothing fenced.
    /// `None` once `u64::MAX` is taken: the stream's positions are exhausted.
    pub fn next_position(&self, stream: &str) -> Result<Option<u64>, EngineError> {
        self.selection_key(stream, &[])?;
        let state = &self.streams[stream];
        let taken = [
            state.last_position,
            self.catalog.watermark(stream),
            state.fence,
        ]
        .into_iter()
        .flatten()
        .max();
        let Some(taken) = taken else {
            return Ok(Some(state.floor));
        };
        Ok(taken.checked_add(1).map(|next| next.max(state.floor)))
    }

    /// Whether the store only reads: never, since a `Store` is the writer. A store opened with
    /// [`Store::open_read_only`] or [`Store::open_reader`] is a [`Reader`], and a view a
    /// [`View`]: their `is_read_only` answer true.
    pub fn is_read_only(&self) -> bool {
        false
    }
}

/// `stream`'s state, or [`EngineError::UnknownStream`] naming it.
pub(crate) fn stream_state<'s>(
    streams: &'s BTreeMap<String, StreamState>,
    stream: &str,
) -> Result<&'s StreamState, EngineError> {
    streams
        .get(stream)
        .ok_or_else(|| EngineError::unknown_stream(stream, streams.keys().map(String::as_str)))
}

/// `stream`'s state to stage into, or [`EngineError::UnknownStream`] naming it. A function of
/// the map, not of the store, so a caller may hold the catalog beside it.
pub(crate) fn stream_state_mut<'s>(
    streams: &'s mut BTreeMap<String, StreamState>,
    stream: &str,
) -> Result<&'s mut StreamState, EngineError> {
    if !streams.contains_key(stream) {
        return Err(EngineError::unknown_stream(
            stream,
            streams.keys().map(String::as_str),
        ));
    }
    streams
        .get_mut(stream)
        .ok_or_else(|| EngineError::Internal {
            reason: format!("stream {stream:?} went from the map between two looks"),
        })
}

/// A partition's highest axis value recorded durable (a publish may not go below it).
pub(crate) fn durable_axis(catalog: &Catalog, stream: &str, key: &TrackKey) -> Option<u64> {
    catalog.axis_range(stream, key).map(|[_, hi]| hi)
}

/// A partition's raw floor's axis value, if something of it was retired.
pub(crate) fn floor_axis(catalog: &Catalog, stream: &str, key: &TrackKey) -> Option<u64> {
    catalog
        .floors_of(stream, key)
        .and_then(|f| f.raw)
        .and_then(|raw| raw.axis)
}

/// Refuses a batch of `batch_bytes` that would take staging past `staged_bytes_max`.
pub(crate) fn room_to_stage(
    staged_bytes: usize,
    batch_bytes: usize,
    staged_bytes_max: usize,
) -> Result<(), EngineError> {
    if staged_bytes + batch_bytes > staged_bytes_max {
        return Err(EngineError::StagingFull {
            staged_bytes,
            batch_bytes,
            staged_bytes_max,
        });
    }
    Ok(())
}

/// Refuses, before boot, what needs none of the store's records: a bound no store can honour,
/// a declaration that is not well formed, two different declarations of one stream, and a
/// retention that its declared stream cannot honour. With `creating` (the store is new, its
/// catalog empty), also a retention naming a stream `streams` does not declare: then nothing
/// left to check after boot can refuse, and a refused create leaves nothing behind.
fn check_before_boot(
    config: &Config,
    streams: &[StreamDecl],
    creating: bool,
) -> Result<(), EngineError> {
    config.validate()?;
    for (i, decl) in streams.iter().enumerate() {
        decl.validate().map_err(|e| EngineError::Declaration {
            stream: decl.id.clone(),
            reason: e.to_string(),
        })?;
        if let Some(other) = streams[..i].iter().find(|d| d.id == decl.id && *d != decl) {
            return Err(EngineError::Declaration {
                stream: decl.id.clone(),
                reason: format!(
                    "is declared twice, differently: {} and {}",
                    describe(other),
                    describe(decl)
                ),
            });
        }
    }
    if creating {
        validate_retention(config, &Catalog::new(), streams)
    } else {
        for (id, retention) in &config.retention {
            if let Some(decl) = streams.iter().find(|d| &d.id == id) {
                retention.validate(decl)?;
            }
        }
        Ok(())
    }
}

/// Checks each of `streams` against the recorded declarations (a conflict is refused) and
/// `config`'s retention against them, then records the streams not recorded yet, in one frame,
/// so that a refusal writes nothing; a read-only store declares them in memory only. Answers
/// whether the frame was left for a rewrite to record instead, the manifest's format being too
/// old to hold it (`decl::needs_newer_format`).
fn declare_streams(
    catalog: &mut Catalog,
    manifest: &mut ManifestWriter,
    vfs: &dyn Vfs,
    streams: &[StreamDecl],
    config: &Config,
    read_only: bool,
) -> Result<bool, EngineError> {
    let mut declare = Vec::new();
    for decl in streams {
        decl.validate().map_err(|e| EngineError::Declaration {
            stream: decl.id.clone(),
            reason: e.to_string(),
        })?;
        match catalog.stream(&decl.id) {
            Some(recorded) if recorded == decl => {}
            Some(recorded) => {
                return Err(EngineError::Declaration {
                    stream: decl.id.clone(),
                    reason: format!(
                        "conflicts with the recorded declaration {}",
                        describe(recorded)
                    ),
                });
            }
            None => declare.push(Entry::Declare(decl.clone())),
        }
    }
    validate_retention(config, catalog, streams)?;
    if !declare.is_empty() {
        let record = Record { entries: declare };
        catalog
            .apply(&record)
            .map_err(|e| EngineError::Declaration {
                stream: String::new(),
                reason: e.to_string(),
            })?;
        // A read-only store declares in memory only: a stream it never recorded holds
        // nothing, and reads of it answer as a writable open's would, empty.
        if !read_only && crate::decl::needs_newer_format(vfs, manifest, &record)? {
            return Ok(true);
        }
        if !read_only {
            append_record(vfs, manifest, &record)
                .map_err(|failed| EngineError::write(failed.error))?;
        }
    }
    Ok(false)
}

/// Refuses a retention naming a stream neither recorded nor being declared, or one no sweep
/// can honour for its stream.
fn validate_retention(
    config: &Config,
    catalog: &Catalog,
    streams: &[StreamDecl],
) -> Result<(), EngineError> {
    for (id, retention) in &config.retention {
        let decl = catalog
            .stream(id)
            .or_else(|| streams.iter().find(|d| &d.id == id))
            .ok_or_else(|| EngineError::Config {
                setting: "retention",
                reason: format!("names stream {id:?}, which is not declared"),
            })?;
        retention.validate(decl)?;
    }
    Ok(())
}

/// The lowest position a row of stream `id` may be published at: the highest raw floor of its
/// partitions (one past the highest horizon trimmed), 0 before any.
/// Every stream's state as `catalog` records it, with nothing staged.
pub(crate) fn stream_states(catalog: &Catalog) -> BTreeMap<String, StreamState> {
    catalog
        .streams()
        .map(|decl| {
            let state = StreamState::new(
                decl.clone(),
                catalog.next_ordinal(&decl.id),
                catalog.last_position(&decl.id),
                catalog.fence(&decl.id),
                stream_floor(catalog, &decl.id),
            );
            (decl.id.clone(), state)
        })
        .collect()
}

pub(crate) fn stream_floor(catalog: &Catalog, id: &str) -> u64 {
    catalog
        .floors(id, &TrackKey::ROOT)
        .filter_map(|(_, floors)| floors.raw)
        .map(|raw| raw.position)
        .max()
        .unwrap_or(0)
}

/// A count that agrees in number: `1 row`, `0 rows`, `3 rows`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
