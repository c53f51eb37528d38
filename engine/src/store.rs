//! The store: open (boot), publish into staging, and the seal barrier.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::ops::Deref;
use std::path::Path;
use std::sync::{Arc, Mutex};

use strata_index::{
    Catalog, Entry, FRAME_BODY_MAX, FileName, LOG_HEADER_LEN, Record, StreamDecl, TrackKey,
    encode_frame, split_record, whole_state,
};
use strata_recover::{
    Booted, Report, Viewed, boot_keeping_retired, boot_new, boot_read_only, holds_no_store,
};
use strata_segment::names::{NumberedName, SEG_DIR, TMP_DIR};
use strata_segment::vfs::{Counting, RealFs, SyncCounts, Vfs};
use strata_segment::{
    CountingSink, FileSink, ManifestWriter, SegmentError, SegmentSink, SegmentSummary,
    SegmentWriter, SyncedFile, TempFile, read_manifest, rewrite_manifest, truncate_manifest,
};

use crate::config::Config;
use crate::decl::describe;
use crate::error::{EngineError, FailedBarrier, StreamIntact};
use crate::ladder::{LevelStorage, field_cells, fold_partition};
use crate::pins::Removal;
use crate::readers::{Follow, ManifestPosition, oldest_reader};
use crate::stage::StreamState;
use crate::value::Row;
use crate::view::View;

/// What the store has done since it was opened, measured as it happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Barriers closed (seals that wrote something).
    pub barriers: u64,
    /// Rows those barriers made durable.
    pub rows_sealed: u64,
    /// Segment bytes those barriers wrote.
    pub bytes_sealed: u64,
    /// File syncs (fdatasync) issued, boot's included.
    pub file_syncs: u64,
    /// Directory syncs (fsync) issued, boot's included.
    pub dir_syncs: u64,
    /// Syncs issued by barriers alone.
    pub barrier_syncs: u64,
    /// Level cells read by surveys and level folds.
    pub cells_read: u64,
    /// Segment readers open (mapped) in the store's cache now: at most
    /// `Config::open_segments_max`.
    pub segments_open: u64,
    /// Segment readers evicted from the cache to keep it under its cap.
    pub segment_evictions: u64,
    /// Segment maps alive now: the cache's, plus evicted ones a read in progress still holds.
    pub segments_mapped: u64,
    /// The most segment maps alive at once since the store was opened.
    pub segments_mapped_peak: u64,
    /// Bytes of decoded packed chunks kept for reads that come back to them now: at most
    /// `Config::decoded_chunks_bytes_max`.
    pub decoded_chunks_bytes: u64,
    /// Reads of a packed chunk answered from those kept.
    pub decoded_chunk_hits: u64,
    /// Reads of a packed chunk that decoded it (and offered it to be kept).
    pub decoded_chunk_misses: u64,
    /// Decoded chunks let go to keep them under their bound.
    pub decoded_chunk_evictions: u64,
    /// Compaction steps taken (each one `Merge` record).
    pub compaction_steps: u64,
    /// Bytes of the partitions those steps read (their inputs' partition blocks).
    pub compaction_bytes_read: u64,
    /// Segment bytes those steps wrote. Over `bytes_sealed`, the write amplification
    /// compaction adds to the barriers' own writes.
    pub compaction_bytes_written: u64,
    /// Tiers (raw or one level, of one partition of one segment) retired by sweeps, `retire`
    /// and `trim_to`.
    pub tiers_retired: u64,
    /// Barriers a `Served` supervisor closed because staging reached its size trigger
    /// (`ServeConfig::seal_at_staged_share`); also counted in `barriers`. 0 for a store used
    /// directly.
    pub size_barriers: u64,
    /// Times a `Served` supervisor held publishes in their lane because staging had reached
    /// its size trigger while a barrier was in flight (both buffers the bound allows full):
    /// the back-pressure that keeps memory bounded. 0 for a store used directly.
    pub backpressure_waits: u64,
    /// Reads a `Served` supervisor started while a barrier was in flight on its worker: each
    /// ran on a snapshot and waited for none of the barrier's syncs (reads during a compaction
    /// step are not counted). Counted when that barrier lands, with it in `barriers`, so a
    /// read beside a barrier still in flight is in neither yet. 0 for a store used directly.
    pub reads_during_barriers: u64,
    /// Snapshots alive now ([`Store::snapshot`], and `Served`'s reads).
    pub snapshots: u64,
    /// Retired files waiting now for the snapshots that may read them to be let go.
    pub removals_pending: u64,
}

/// How a store is being opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opening {
    Create,
    Open,
    OpenOrCreate,
    ReadOnly,
}

/// What boot answered, for a writable or a read-only store.
enum Boot {
    Writable(Booted),
    ReadOnly(Viewed),
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
    /// yet to remove, compaction's place, its counters. `None` for a store that only reads
    /// (opened read-only, a reader in another process): every write is refused.
    pub(crate) writer: Option<Writer>,
    /// A reader in another process's pin and where it follows the manifest
    /// ([`Store::open_reader`]); `None` for every other store.
    pub(crate) follow: Option<Follow>,
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
            .field("writing", &self.writer.is_some())
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
    /// and [`Store::boot_report`] lists it with `heal_pending` set; reads answer from the
    /// manifest's trusted prefix exactly as a writable open would. No `LOCK` is created; if
    /// the store has one, a shared hold of it keeps writers out while this store lives, and a
    /// store a writer holds is refused (`Locked`). Every write (publish, seal of staged rows,
    /// compact, sweep, retire, trim, checkpoint) is refused with [`EngineError::ReadOnly`].
    /// Streams in `streams` the store has not recorded are served as empty and not recorded.
    pub fn open_read_only(
        dir: impl AsRef<Path>,
        config: Config,
        streams: &[StreamDecl],
    ) -> Result<Store, EngineError> {
        Store::boot_at(dir.as_ref(), config, streams, Opening::ReadOnly)
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
    ) -> Result<Store, EngineError> {
        Store::boot_in(vfs, config, streams, Opening::ReadOnly)
    }

    /// The four opens of a folder: a store to create is checked (config, declarations,
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
            Opening::Open | Opening::ReadOnly => open_folder(dir)?,
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
            Opening::Open | Opening::ReadOnly => false,
        };
        check_before_boot(&config, streams, creating)?;
        let vfs = Arc::new(Counting::new(vfs));
        // Readers in other processes may still open files whose retirement is recorded: while
        // any is alive, boot leaves those for the writer to remove once they have read past it.
        // A reader that starts after this look reads a manifest that records the retirements.
        let keep_retired = match opening {
            Opening::Open | Opening::OpenOrCreate => oldest_reader(vfs.as_ref())?.is_some(),
            Opening::Create | Opening::ReadOnly => false,
        };
        let booted = match opening {
            Opening::Create => boot_new(vfs.as_ref()).map(Boot::Writable),
            Opening::Open => {
                boot_keeping_retired(vfs.as_ref(), false, keep_retired).map(Boot::Writable)
            }
            Opening::OpenOrCreate => {
                boot_keeping_retired(vfs.as_ref(), true, keep_retired).map(Boot::Writable)
            }
            Opening::ReadOnly => boot_read_only(vfs.as_ref()).map(Boot::ReadOnly),
        }
        .map_err(EngineError::Open)?;
        let (mut catalog, mut manifest, report, next_name, unreadable, lock, retired_kept) =
            match booted {
                Boot::Writable(Booted {
                    catalog,
                    manifest,
                    report,
                    next_name,
                    unreadable,
                    lock,
                    retired_kept,
                    ..
                }) => (
                    catalog,
                    manifest,
                    report,
                    next_name,
                    unreadable,
                    Some(lock),
                    retired_kept,
                ),
                Boot::ReadOnly(Viewed {
                    catalog,
                    report,
                    next_name,
                    unreadable,
                    lock,
                }) => {
                    // Never appended to: every write is refused before it reaches the manifest.
                    let manifest = ManifestWriter::detached(report.generation, report.trusted_len);
                    (
                        catalog,
                        manifest,
                        report,
                        next_name,
                        unreadable,
                        lock,
                        Vec::new(),
                    )
                }
            };
        let read_only = opening == Opening::ReadOnly;
        let upgrade = declare_streams(
            &mut catalog,
            &mut manifest,
            vfs.as_ref(),
            streams,
            &config,
            read_only,
        )?;
        // A read-only store has no writer: its manifest was never opened for appending.
        let writer = (!read_only).then(|| {
            let manifest_base_len = if manifest.len() > config.manifest_rewrite_bytes {
                snapshot_len(&catalog)
            } else {
                0
            };
            let at = ManifestPosition {
                generation: report.generation,
                len: report.trusted_len,
            };
            Writer::booted(
                manifest,
                next_name,
                manifest_base_len,
                vfs.counts(),
                retired_kept,
                at,
            )
        });
        let mut store = Store::assemble(vfs, config, catalog, writer, report);
        store.view.unreadable = Arc::new(unreadable);
        store.view.lock = lock.map(|lock| Arc::new(Mutex::new(lock)));
        // A declaration the manifest's format cannot hold (a time axis in a generation an
        // earlier build wrote) is recorded by a new generation of this build's format, whose
        // snapshot holds it: the catalog already does.
        if upgrade && !store.rewrite_manifest()? {
            return Err(crate::decl::upgrade_deferred(streams));
        }
        Ok(store)
    }

    /// A reader's store over `catalog` (`follow.rs`): read-only, holding no lock.
    pub(crate) fn reading(
        vfs: Arc<dyn Vfs>,
        config: Config,
        catalog: Catalog,
        report: Report,
    ) -> Store {
        let vfs = Arc::new(Counting::new(vfs));
        Store::assemble(vfs, config, catalog, None, report)
    }

    /// A store of `catalog` with `writer`'s state (`None`: it only reads), nothing staged, its
    /// caches empty, no lock.
    fn assemble(
        vfs: Arc<Counting>,
        config: Config,
        catalog: Catalog,
        writer: Option<Writer>,
        report: Report,
    ) -> Store {
        Store {
            streams: stream_states(&catalog),
            view: View::new(vfs, config, catalog, report),
            writer,
            follow: None,
        }
    }

    /// What the store has done since it was opened.
    pub fn metrics(&self) -> Metrics {
        let read = self.view.metrics();
        let Some(writer) = &self.writer else {
            return read;
        };
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
            ..writer.metrics
        }
    }

    /// Bytes staged and not yet sealed.
    pub fn staged_bytes(&self) -> usize {
        self.writer.as_ref().map_or(0, |w| w.staged_bytes)
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
            writer!(self).staged_bytes,
            batch_bytes,
            self.view.config.staged_bytes_max,
        )?;
        state.stage(position, rows, keys);
        writer!(self).staged_bytes += batch_bytes;
        Ok(())
    }

    /// Closes one barrier for everything staged, across every stream: one segment file written
    /// two-phase, then one manifest frame that claims it. With nothing staged, no barrier.
    /// Answers each stream's watermark (the position through which it is durable).
    ///
    /// A read-only store stages nothing (publish is refused), so its seal writes nothing and
    /// only answers the watermarks, as a seal with nothing staged always does: that is how a
    /// host reads them, and a read-only host may too.
    pub fn seal(&mut self) -> Result<BTreeMap<String, Option<u64>>, EngineError> {
        self.check_poison()?;
        if let Some(sealing) = self.try_seal_off()? {
            self.finish_barrier(sealing.run())?;
            self.maybe_rewrite_manifest()?;
        }
        self.remove_unpinned()?;
        Ok(self
            .streams
            .keys()
            .map(|id| (id.clone(), self.catalog.watermark(id)))
            .collect())
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

    /// [`Store::seal_off`] if anything is staged and the store may seal: refused if poisoned,
    /// read-only (with rows staged: it never has) or sealing already.
    pub(crate) fn try_seal_off(&mut self) -> Result<Option<Sealing>, EngineError> {
        self.check_poison()?;
        if self.streams.values().all(|s| s.staged.is_empty()) {
            return Ok(None);
        }
        self.check_writable("seal")?;
        Ok(Some(self.seal_off()))
    }

    /// Takes everything staged out of staging into a [`Sealing`]: the barrier's name is
    /// issued and its rows, watermarks and the manifest's writer move into it, touching no
    /// file. Staging is empty again and takes publishes at once; every other write waits for
    /// [`Store::finish_barrier`] (`sealing`). The caller has checked that something is staged
    /// and that the store is writable.
    pub(crate) fn seal_off(&mut self) -> Sealing {
        let name = writer!(self).next_name;
        writer!(self).next_name = name + 1;
        let mut rows = 0;
        let mut watermarks = Vec::new();
        for (id, state) in &self.streams {
            rows += state
                .staged
                .values()
                .map(|staged| staged.positions.len() as u64)
                .sum::<u64>();
            if let Some(position) = state.staged_position {
                watermarks.push(Entry::Watermark {
                    stream: id.clone(),
                    position,
                });
            }
        }
        // What is durable now, for the error if the writes fail: they change nothing of it.
        let intact = self.intact();
        let streams = self
            .streams
            .iter_mut()
            .map(|(id, state)| (id.clone(), state.seal_off()))
            .collect();
        let placeholder = ManifestWriter::detached(
            writer!(self).manifest.generation(),
            writer!(self).manifest.len(),
        );
        writer!(self).sealing = true;
        Sealing {
            name,
            streams,
            storage: self.config.level_storage,
            pack_columns: self.config.pack_columns,
            staged_bytes: std::mem::take(&mut writer!(self).staged_bytes),
            rows,
            watermarks,
            intact,
            catalog: Arc::clone(&self.catalog),
            version: self.version,
            manifest: std::mem::replace(&mut writer!(self).manifest, placeholder),
            vfs: Arc::clone(&self.vfs),
        }
    }

    /// Takes a barrier's outcome back: the manifest's writer, and on success the catalog
    /// version that claims it, the counters and the sweep it makes due. A failed write poisons
    /// the store, as a barrier's always did; a record the catalog refused (a bug, caught
    /// before anything was claimed) puts the rows back in staging if nothing was staged
    /// behind them, and poisons the store if something was.
    pub(crate) fn finish_barrier(&mut self, sealed: Sealed) -> Result<(), EngineError> {
        writer!(self).sealing = false;
        writer!(self).manifest = sealed.manifest;
        writer!(self).metrics.barrier_syncs += sealed.syncs;
        if sealed.version != self.version {
            let error = EngineError::Internal {
                reason: format!(
                    "the catalog changed under a barrier in flight (version {} became {})",
                    sealed.version, self.version
                ),
            };
            return Err(self.poison(error));
        }
        match sealed.outcome {
            Ok((catalog, segment_len)) => {
                self.install(catalog);
                writer!(self).sweep_due = true;
                writer!(self).metrics.barriers += 1;
                writer!(self).metrics.rows_sealed += sealed.rows;
                writer!(self).metrics.bytes_sealed += segment_len;
                Ok(())
            }
            Err(error @ EngineError::Internal { .. }) if writer!(self).staged_bytes == 0 => {
                for (id, sealed_off) in sealed.streams {
                    if let Some(state) = self.streams.get_mut(&id) {
                        state.staged = sealed_off.staged;
                        state.staged_position = sealed_off.staged_position;
                    }
                }
                writer!(self).staged_bytes = sealed.staged_bytes;
                Err(error)
            }
            Err(error) => Err(self.poison(error)),
        }
    }

    /// Every stream's durable state, as recorded.
    fn intact(&self) -> Vec<StreamIntact> {
        self.streams
            .keys()
            .map(|id| StreamIntact {
                stream: id.clone(),
                rows_sealed: self.catalog.next_ordinal(id),
                watermark: self.catalog.watermark(id),
            })
            .collect()
    }

    pub(crate) fn maybe_rewrite_manifest(&mut self) -> Result<(), EngineError> {
        // Past the threshold alone is not enough: a snapshot that is itself past it (a large
        // live state) would otherwise be rewritten after every record, each rewrite costing the
        // whole snapshot. Waiting until the manifest has doubled since the last rewrite makes
        // each rewrite pay for itself with as many bytes of new frames.
        let len = writer!(self).manifest.len();
        if len <= self.config.manifest_rewrite_bytes || len <= writer!(self).manifest_base_len * 2 {
            return Ok(());
        }
        self.rewrite_manifest().map(|_| ())
    }

    /// Once compaction is quiet: if it retired files since the snapshot's length was last
    /// measured, and the manifest is past `manifest_rewrite_bytes`, a [`Store::checkpoint`]
    /// (one encoding of the live state, at most once per quiet spell). What lets a store whose
    /// history compaction just retired boot from its live state without waiting for the
    /// manifest to double past a snapshot measured before the retirements.
    pub(crate) fn tidy_manifest(&mut self) -> Result<(), EngineError> {
        if writer!(self).retired_since_measure
            && writer!(self).manifest.len() > self.config.manifest_rewrite_bytes
        {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Makes sure no file this store writes from now on is named `through` or below: records
    /// `NameHigh(through)` (one manifest frame, durable when this returns) if the store could
    /// still issue such a name, and answers whether it wrote. For a store about to share a
    /// namespace with files it never made: strata-remote's adoption of a bucket whose old
    /// history holds segments under names above this store's (a restored backup's).
    pub fn reserve_names(&mut self, through: FileName) -> Result<bool, EngineError> {
        self.check_writable("reserve_names")?;
        if through == FileName::MAX {
            return Err(EngineError::Internal {
                reason: "u64::MAX is no file's name: it cannot be reserved".to_owned(),
            });
        }
        if writer!(self).next_name > through {
            return Ok(false);
        }
        let record = Record {
            entries: vec![Entry::NameHigh(through)],
        };
        self.commit(&record, "a name reservation")?;
        writer!(self).next_name = through + 1;
        Ok(true)
    }

    /// Rewrites the manifest now as a snapshot of the live state if it holds more than twice
    /// the snapshot's bytes, whatever `Config::manifest_rewrite_bytes` says; answers whether it
    /// did. What a store that compaction has just made quiet calls (`compact()` and `strata
    /// compact` do), so that the next boot reads a few frames of live state rather than the
    /// records of every barrier and step since the last rewrite: below the threshold those are
    /// up to `manifest_rewrite_bytes` of frames, milliseconds of boot against microseconds.
    /// Costs one encoding of the live state and, if it rewrites, one two-phase write of it.
    pub fn checkpoint(&mut self) -> Result<bool, EngineError> {
        self.check_writable("checkpoint")?;
        // Files retired under a snapshot hold the rewrite back (`rewrite_manifest`): then
        // nothing is measured, so the next quiet spell tries again.
        self.remove_unpinned()?;
        if !writer!(self).removals.is_empty() {
            return Ok(false);
        }
        writer!(self).manifest_base_len = snapshot_len(&self.catalog);
        writer!(self).retired_since_measure = false;
        if writer!(self).manifest.len() <= writer!(self).manifest_base_len * 2 {
            return Ok(false);
        }
        self.rewrite_manifest()
    }

    /// Writes a new manifest generation holding the snapshot of the live state, and swaps the
    /// catalog for the one the snapshot rebuilds, so that the catalog in memory follows the
    /// live state too (it no longer lists files wholly retired, which were removed from the
    /// disk by the step that retired them, before any rewrite).
    ///
    /// Not while files retired under a snapshot wait for removal (`snapshot.rs`): the rewrite
    /// would forget them, and a crash would leave them for boot to quarantine rather than
    /// remove. Answers whether it rewrote; a later write rewrites once they are gone.
    fn rewrite_manifest(&mut self) -> Result<bool, EngineError> {
        self.remove_unpinned()?;
        if !writer!(self).removals.is_empty() {
            return Ok(false);
        }
        // The generation replaced, read back whole: its frame boundaries join the lineage
        // the new one records, which is what proves a copy of any of them (a bucket's) an
        // earlier state of this store. The appends that wrote it succeeded (a failed one
        // poisons the store), so it is all trusted prefix.
        let generation = writer!(self).manifest.generation();
        // A failed read writes nothing: the store stays as it was, unpoisoned.
        let replaced = read_manifest(self.vfs.as_ref(), generation).map_err(EngineError::read)?;
        // A large catalog's snapshot does not fit one frame: split it into frames of at most
        // half the frame bound. The generation is written whole, two-phase, so a crash leaves
        // either the old manifest or all of the new one.
        let snapshot = split_record(
            self.catalog
                .snapshot_after(generation, &replaced, self.config.lineage_states_max),
            FRAME_BODY_MAX / 2,
        );
        // Rebuilt before it is written, as boot would rebuild it: a snapshot that would not
        // apply (our bug) never reaches the disk.
        let mut rebuilt = Catalog::new();
        for record in &snapshot {
            rebuilt.apply(record).map_err(|e| EngineError::Internal {
                reason: format!("the manifest's snapshot does not apply: {e}"),
            })?;
        }
        // Named in the new generation's preamble, so that the generation replaced, which stays
        // beside it, can be told for the one its snapshot was taken from.
        let replaced_state = whole_state(generation, &replaced);
        match rewrite_manifest(self.vfs.as_ref(), replaced_state, &snapshot) {
            Ok(manifest) => {
                writer!(self).manifest_base_len = manifest.len();
                writer!(self).retired_since_measure = false;
                writer!(self).manifest = manifest;
                self.install(rebuilt);
                Ok(true)
            }
            Err(error) => Err(self.poison(EngineError::write(error))),
        }
    }

    /// Commits `record` (`what` names it in a refusal): applied to the next catalog version
    /// first, so a record the catalog refuses (our bug) never reaches the disk, then appended
    /// to the manifest, durable when this returns. A failed append cuts the frame's partial
    /// bytes off (best effort) and poisons the store: the catalog already holds the record, and
    /// a poisoned store answers nothing from it. The one path of every record a write appends
    /// on the store's own thread (a name reservation, a sweep's, a retirement's, a trim's);
    /// a barrier and a compaction step claim their files through [`write_and_claim`] off it,
    /// and the store installs the catalog they built ([`Store::install`]).
    pub(crate) fn commit(&mut self, record: &Record, what: &str) -> Result<(), EngineError> {
        self.catalog_mut()
            .apply(record)
            .map_err(|e| EngineError::Internal {
                reason: format!("{what}'s own record was refused: {e}"),
            })?;
        let manifest_len = writer!(self).manifest.len();
        if let Err(error) = writer!(self).manifest.append(record) {
            let frame_bytes = encode_frame(record).len() as u64;
            cut_partial_frame(
                self.view.vfs.as_ref(),
                &writer!(self).manifest,
                manifest_len,
                frame_bytes,
            );
            return Err(self.poison(EngineError::write(error)));
        }
        Ok(())
    }

    /// Poisons the store with `error` (a copy kept for every later request); answers it.
    pub(crate) fn poison(&mut self, error: EngineError) -> EngineError {
        self.view.poisoned = Some(Arc::new(error.duplicate()));
        error
    }

    /// Installs `catalog`, the next version, which a barrier or a compaction step built and
    /// claimed off the store's thread (`write_and_claim`): reads through the store answer from
    /// it from here on; views taken before keep theirs.
    pub(crate) fn install(&mut self, catalog: Catalog) {
        self.view.catalog = Arc::new(catalog);
        self.view.version += 1;
    }

    /// Refuses a write to a read-only store (naming `operation`), then one to a poisoned store,
    /// then any write but a publish while a barrier is in flight (`Served` waits for the
    /// barrier before it asks; one that comes anyway is a bug, refused before it writes).
    pub(crate) fn check_writable(&self, operation: &'static str) -> Result<(), EngineError> {
        if self.writer.is_none() {
            return Err(EngineError::ReadOnly {
                store: self.vfs.location(),
                operation,
            });
        }
        self.check_poison()?;
        // Staging goes on while a barrier is written (the served pipeline stages the next
        // barrier's rows meanwhile); every other write waits for it to land.
        let stages = matches!(
            operation,
            "publish" | "publish_columns" | "publish_columns_at"
        );
        if self.writer.as_ref().is_some_and(|w| w.sealing) && !stages {
            return Err(EngineError::Internal {
                reason: format!("{operation} was asked while a barrier is in flight"),
            });
        }
        Ok(())
    }

    /// The catalog to apply a record to: the next version, copied first if a snapshot holds
    /// the current one (the snapshot keeps what it had).
    pub(crate) fn catalog_mut(&mut self) -> &mut Catalog {
        self.view.version += 1;
        Arc::make_mut(&mut self.view.catalog)
    }

    /// Whether the store only reads: opened with [`Store::open_read_only`] or
    /// [`Store::open_reader`], or a [`Snapshot`](crate::Snapshot). It has no writer, and every
    /// write is refused.
    pub fn is_read_only(&self) -> bool {
        self.writer.is_none()
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
            let manifest_len = manifest.len();
            if let Err(error) = manifest.append(&record) {
                let frame_bytes = encode_frame(&record).len() as u64;
                cut_partial_frame(vfs, manifest, manifest_len, frame_bytes);
                return Err(EngineError::write(error));
            }
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

/// A barrier sealed off ([`Store::seal_off`]): its rows, taken out of staging, and all its
/// writes need, so that they can run away from the store — on a worker, while staging fills
/// again behind them (`Served`). [`Sealing::run`] writes it; [`Store::finish_barrier`] takes
/// the outcome back. The record is still the commit point, so the all-or-nothing rule is the
/// one a barrier written in place keeps.
pub(crate) struct Sealing {
    name: FileName,
    /// Each stream's sealed-off rows (its declaration and staged partitions only).
    streams: BTreeMap<String, StreamState>,
    /// How levels are kept (`Config::level_storage`).
    storage: LevelStorage,
    /// Whether columns are packed (`Config::pack_columns`).
    pack_columns: bool,
    staged_bytes: usize,
    rows: u64,
    watermarks: Vec<Entry>,
    intact: Vec<StreamIntact>,
    /// The catalog version the barrier was sealed off from: the one its record applies to.
    catalog: Arc<Catalog>,
    version: u64,
    manifest: ManifestWriter,
    vfs: Arc<Counting>,
}

/// What a barrier's writes came to ([`Sealing::run`]).
pub(crate) struct Sealed {
    /// The catalog version that claims the barrier and the segment's length, or why not.
    outcome: Result<(Catalog, u64), EngineError>,
    streams: BTreeMap<String, StreamState>,
    staged_bytes: usize,
    manifest: ManifestWriter,
    rows: u64,
    version: u64,
    syncs: u64,
}

impl std::fmt::Debug for Sealing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealing")
            .field("name", &self.name)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealed")
            .field("ok", &self.outcome.is_ok())
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl Sealing {
    /// Writes the barrier: one segment file two-phase (temp, sync, rename, directory sync),
    /// then the manifest frame that claims it. Touches nothing of the store it was sealed off
    /// from, so it may run on any thread.
    pub(crate) fn run(mut self) -> Sealed {
        let syncs_before = self.vfs.counts().total();
        let outcome = self.write();
        Sealed {
            outcome,
            syncs: self.vfs.counts().total() - syncs_before,
            streams: self.streams,
            staged_bytes: self.staged_bytes,
            manifest: self.manifest,
            rows: self.rows,
            version: self.version,
        }
    }

    fn write(&mut self) -> Result<(Catalog, u64), EngineError> {
        let name = self.name;
        let watermarks = &self.watermarks;
        let barrier_record = |summary: &SegmentSummary| {
            let mut entries = vec![Entry::AddFile(summary.claim(name))];
            entries.extend(watermarks.iter().cloned());
            entries.push(Entry::NameHigh(name));
            Record { entries }
        };
        let segment_path = NumberedName::segment(name).path_in(SEG_DIR);
        // A handle of its own, so the synced temp does not borrow the sealing.
        let vfs = Arc::clone(&self.vfs);
        let vfs: &dyn Vfs = vfs.as_ref();
        let (streams, storage, pack) = (&self.streams, self.storage, self.pack_columns);
        // The record is applied to the next version before the file has its name; the copy
        // is made here, off the store's thread, and the store swaps it in when the barrier is
        // acknowledged, so no read ever sees a claim before it is durable.
        let committed = write_and_claim(
            vfs,
            &mut self.manifest,
            &self.catalog,
            name,
            self.staged_bytes,
            |sink| match write_staged(streams, storage, pack, sink) {
                Ok((summary, _)) => Ok((summary, ())),
                Err(error) => Err(Err::<Infallible, _>(error)),
            },
            barrier_record,
        );
        let (error, needed_bytes) = match committed {
            Ok((catalog, summary, ())) => return Ok((catalog, summary.len)),
            Err(Committing::Refused(reason)) => {
                return Err(EngineError::Internal {
                    reason: format!("the barrier's own record was refused: {reason}"),
                });
            }
            Err(Committing::Claim {
                error,
                needed_bytes,
            }) => (error, needed_bytes),
            Err(Committing::Write(error)) => {
                // What the barrier would have needed: its length, counted without writing it.
                let (counted, _) = write_staged(streams, storage, pack, CountingSink::default())
                    .expect("counting bytes does not fail");
                let frame_bytes = encode_frame(&barrier_record(&counted)).len() as u64;
                (error, counted.len + frame_bytes)
            }
            // A barrier's rows are in memory: nothing can fail to be made.
            Err(Committing::Content(never)) => match never {},
        };
        let intact = std::mem::take(&mut self.intact);
        Err(failed_barrier(
            vfs,
            error,
            &segment_path,
            needed_bytes,
            intact,
        ))
    }
}

/// How [`write_and_claim`] failed. Whatever it left, nothing claims a segment it wrote.
pub(crate) enum Committing<E> {
    /// The segment's content could not be made (a merge's input did not read): the temp is
    /// removed, and the store is as it was.
    Content(E),
    /// Creating, writing or syncing the temp failed: the temp is removed.
    Write(SegmentError),
    /// The record was refused by the catalog (our bug), caught before anything was claimed:
    /// the synced temp is removed.
    Refused(String),
    /// Publishing the segment or appending its frame failed ([`claim`]'s unwinding says what
    /// stays); `needed_bytes` is the segment's length and the frame's.
    Claim {
        error: SegmentError,
        needed_bytes: u64,
    },
}

/// Writes segment `name` two-phase (streamed by `write` into its temp, which is synced, then
/// renamed into `seg/` and the folder synced) and claims it with the one frame `record` makes
/// of its summary, applied first to a copy of `base`: a record the catalog refuses never
/// reaches the disk as a claim. The one write-and-claim of a segment, a barrier's and a
/// compaction step's alike, so that what a failure leaves is decided in one place. Returns
/// the catalog that claims the segment, its summary, and what `write` returned beside it.
///
/// `size_hint` is about how many bytes the segment will take (the sink's write size follows
/// it). `write` fails with `Ok(e)` where the content could not be made, `Err(io)` where the
/// temp could not be written.
pub(crate) fn write_and_claim<T, E>(
    vfs: &dyn Vfs,
    manifest: &mut ManifestWriter,
    base: &Catalog,
    name: FileName,
    size_hint: usize,
    write: impl FnOnce(FileSink<'_>) -> Result<(SegmentSummary, T), Result<E, std::io::Error>>,
    record: impl FnOnce(&SegmentSummary) -> Record,
) -> Result<(Catalog, SegmentSummary, T), Committing<E>> {
    let file = NumberedName::segment(name).to_string();
    let mut temp = TempFile::create(vfs, SEG_DIR, &file).map_err(Committing::Write)?;
    let sink = FileSink::for_input(temp.file(), size_hint);
    let (summary, written) = match write(sink) {
        Ok(written) => written,
        Err(Ok(content)) => {
            let path = temp.tmp_path().to_owned();
            temp.abandon(SegmentError::mismatch(
                &path,
                "its content could not be made",
            ));
            return Err(Committing::Content(content));
        }
        Err(Err(source)) => {
            let path = temp.tmp_path().to_owned();
            return Err(Committing::Write(
                temp.abandon(SegmentError::Io { path, source }),
            ));
        }
    };
    let synced = temp.sync().map_err(Committing::Write)?;
    let record = record(&summary);
    let mut catalog = Catalog::clone(base);
    if let Err(e) = catalog.apply(&record) {
        let reason = e.to_string();
        let path = synced.final_path().to_owned();
        synced.abandon(SegmentError::mismatch(&path, reason.clone()));
        return Err(Committing::Refused(reason));
    }
    let needed_bytes = summary.len + encode_frame(&record).len() as u64;
    claim(vfs, manifest, synced, &record).map_err(|error| Committing::Claim {
        error,
        needed_bytes,
    })?;
    Ok((catalog, summary, written))
}

/// Publishes a synced segment under its final name (removing its own names of the file if
/// that fails), then appends the frame that claims it; a frame that never reached the file
/// whole is cut off and the segment removed ([`unwind_append`]). The claim of
/// [`write_and_claim`].
fn claim(
    vfs: &dyn Vfs,
    manifest: &mut ManifestWriter,
    synced: SyncedFile<'_>,
    record: &Record,
) -> Result<(), SegmentError> {
    let segment_path = synced.final_path().to_owned();
    synced.publish()?;
    let manifest_len = manifest.len();
    let frame_bytes = encode_frame(record).len() as u64;
    manifest.append(record).inspect_err(|_| {
        unwind_append(vfs, manifest, manifest_len, frame_bytes, &segment_path);
    })
}

/// A failed append of a frame claiming `segment_path`: if the frame never reached the file
/// whole it can claim nothing, on any disk, so its partial bytes are cut off and its segment
/// removed, leaving nothing for the next open to quarantine. If it did reach the file whole
/// (the sync failed), it may be durable and claim the segment: both stay, for boot to judge.
pub(crate) fn unwind_append(
    vfs: &dyn Vfs,
    manifest: &ManifestWriter,
    manifest_len: u64,
    frame_bytes: u64,
    segment_path: &str,
) {
    if cut_partial_frame(vfs, manifest, manifest_len, frame_bytes) {
        // Best effort, like the temp's removal: what is not undone is evidence boot keeps.
        let _ = vfs.remove(segment_path);
    }
}

/// The error of a barrier whose write failed: exhaustion says what the barrier needed and what
/// is intact; anything else is a storage failure.
fn failed_barrier(
    vfs: &dyn Vfs,
    source: SegmentError,
    segment_path: &str,
    needed_bytes: u64,
    intact: Vec<StreamIntact>,
) -> EngineError {
    let Some(resource) = source.exhausted() else {
        return EngineError::Storage(source);
    };
    let file = segment_path.rsplit('/').next().unwrap_or(segment_path);
    let tmp_path = format!("{TMP_DIR}/{file}");
    // Whether a claim can still point at the segment: only if its frame reached the file.
    let cleaned_up =
        !vfs.exists(&tmp_path).unwrap_or(true) && !vfs.exists(segment_path).unwrap_or(true);
    EngineError::Exhausted {
        resource,
        source,
        barrier: Some(Box::new(FailedBarrier {
            store: vfs.location(),
            segment: segment_path.to_owned(),
            needed_bytes,
            cleaned_up,
            intact,
        })),
    }
}

/// After a failed append of a frame of `frame_bytes` at `manifest_len`: whether the frame never
/// reached the file whole, so that it can claim nothing on any disk. Its partial bytes, if any,
/// are cut off (best effort), so the next open finds no torn tail to quarantine: the process saw
/// the write fail and knows they are not a crash's evidence.
pub(crate) fn cut_partial_frame(
    vfs: &dyn Vfs,
    manifest: &ManifestWriter,
    manifest_len: u64,
    frame_bytes: u64,
) -> bool {
    let Ok(len_now) = vfs.len(manifest.path()) else {
        return false;
    };
    if len_now >= manifest_len + frame_bytes {
        return false;
    }
    if len_now > manifest_len {
        let _ = truncate_manifest(vfs, manifest.generation(), manifest_len);
    }
    true
}

/// The bytes a manifest rewritten now would hold: its header and the snapshot's frames. (Its
/// preamble, a fixed few dozen bytes, is left out: counting it would only move the doubling
/// that triggers a rewrite by that much, and keep a store rewriting as it did before format 3.)
fn snapshot_len(catalog: &Catalog) -> u64 {
    let frames: usize = split_record(catalog.snapshot(), FRAME_BODY_MAX / 2)
        .iter()
        .map(|record| encode_frame(record).len())
        .sum();
    (LOG_HEADER_LEN + frames) as u64
}

/// Streams every staged partition to `sink` as one segment, folding each partition's levels
/// once its rows are written (so that what they cost chooses the levels stored), so a barrier
/// holds one partition's levels at a time beside the staged rows. `pack_columns` is
/// `Config::pack_columns`.
fn write_staged<S: SegmentSink>(
    streams: &BTreeMap<String, StreamState>,
    storage: LevelStorage,
    pack_columns: bool,
    sink: S,
) -> std::io::Result<(SegmentSummary, S)> {
    let mut writer = SegmentWriter::to_sink(sink)?.packing(pack_columns);
    for state in streams.values() {
        for (key, staged) in &state.staged {
            let rows = writer.write_rows(&state.rows_input(key, staged))?;
            let (stored_from, levels) = fold_partition(
                &state.decl,
                &state.stored,
                staged,
                storage,
                rows.column_bytes,
            );
            writer.write_cells(&field_cells(&levels), stored_from)?;
        }
    }
    writer.finish_streamed()
}

/// A count that agrees in number: `1 row`, `0 rows`, `3 rows`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
