//! The read half of a store: a [`View`] of one catalog version, cheap to clone, `Send + Sync`.
//!
//! Every read (`query`, `query_runs`, `survey`, `fold`, Arrow, watermarks, floors) is a method
//! of [`View`]; a [`Store`](crate::Store) is a view of its current version plus the writer's
//! state, and reads through it reach the view (`Deref`). [`Store::view`](crate::Store::view)
//! hands out a view that another thread may keep and read from while the store goes on
//! publishing, sealing, compacting and retiring: the store replaces its catalog at each record
//! (copying it if a view still holds it, `Store::catalog_mut`) rather than changing it under
//! anyone, so a read that starts during a seal answers from the version before it and waits
//! for no barrier.
//!
//! What a view holds is behind reference counts: the catalog version, the file system, the
//! caches of open segments and decoded chunks, the counters and the configuration. Clones
//! share all of it, the caches included, so two threads reading one opening share one bound
//! on maps and decoded bytes. A view handed out pins its version (`Pins`): a file retired
//! after it is removed only once every clone of it is dropped (snapshot.rs says how removal
//! waits on them), and it holds the store's lock, shared, so no other writer removes them
//! either. Hold one for a read or a request, not for the life of a program.

#[cfg(feature = "arrow")]
pub(crate) mod arrow;
pub(crate) mod cells;
pub(crate) mod decoded_chunks;
pub(crate) mod floors;
pub(crate) mod narrow;
pub(crate) mod open_segments;
pub(crate) mod read;
pub(crate) mod runs;
pub(crate) mod survey;
pub(crate) mod within;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use strata_index::{Catalog, FileName, StreamDecl, TrackKey, validate_label};
use strata_recover::Report;
use strata_segment::vfs::{Counting, RenameMode, Vfs, VfsLock};

use crate::config::Config;
use crate::error::{EngineError, TRACKS_NAMED_MAX};
use crate::metrics::Metrics;
use crate::pins::{Pin, Pins};
use crate::readers::ManifestPosition;
use crate::view::decoded_chunks::DecodedChunks;
use crate::view::open_segments::{LiveMaps, OpenSegment, OpenSegments};

/// The read half of a store at one catalog version: every read of a store is a method of it.
/// Clone it freely (reference counts) and read from as many threads as you like; it never
/// changes, however the store it came from does. See the [module documentation](self).
#[derive(Clone)]
pub struct View {
    pub(crate) vfs: Arc<Counting>,
    /// The catalog version this view answers from: the store replaces its own at each record
    /// applied (copying it if a view holds it), never changes it under a view.
    pub(crate) catalog: Arc<Catalog>,
    /// Counts the catalog's versions: raised at every change, so a view's version tells which
    /// retired files it may still read.
    pub(crate) version: u64,
    /// The versions handed-out views hold, so that a file they may read is not removed under
    /// them.
    pub(crate) pins: Arc<Pins>,
    /// This view's hold on `version`: `Some` for a view handed out ([`crate::Store::view`]),
    /// shared by its clones; `None` for a store's own, which no write can change under a read
    /// (writes take `&mut Store`).
    #[expect(
        dead_code,
        reason = "held, never read: dropping the last clone lets the version go"
    )]
    pub(crate) pin: Option<Arc<Pin>>,
    /// The manifest position this view answers at. A writing store's own moves with every
    /// record (`Store::manifest_position` asks its writer).
    pub(crate) seen: ManifestPosition,
    /// Files boot could not read, and why.
    pub(crate) unreadable: Arc<BTreeMap<FileName, String>>,
    /// The store's lock, shared: exclusive for a writable store; shared, or `None` for a store
    /// without a `LOCK` file, for a read-only one. A view handed out keeps it, so a folder is
    /// not opened for writing again (and its files removed) while a view may read them.
    pub(crate) lock: Option<Arc<Mutex<Box<dyn VfsLock>>>>,
    /// The failed write that poisoned the store, as of this version: every read refuses.
    pub(crate) poisoned: Option<Arc<EngineError>>,
    /// Open segment readers, at most `config.open_segments_max`, least recently used evicted:
    /// looked up under the read lock (reads on many threads share it), opened ones inserted
    /// under the write lock.
    pub(crate) readers: Arc<RwLock<OpenSegments<Arc<OpenSegment>>>>,
    /// Every segment map alive, cached or held by a read.
    pub(crate) live_maps: Arc<LiveMaps>,
    /// Level cells read by surveys and folds (reads take `&self`, hence atomic).
    pub(crate) cells_read: Arc<AtomicU64>,
    /// Packed chunks decoded by reads, kept for reads that come back to them, at most
    /// `config.decoded_chunks_bytes_max`.
    pub(crate) chunks: Arc<DecodedChunks>,
    /// Packed chunks of level cells decoded by reads (segment format 8), kept apart from the
    /// columns' chunks, at most `config.decoded_cells_bytes_max`.
    pub(crate) cell_chunks: Arc<DecodedChunks>,
    pub(crate) report: Arc<Report>,
    pub(crate) config: Arc<Config>,
}

/// A view of one catalog version, pinned: what [`crate::Store::snapshot`] has always handed
/// out, now the read half itself.
pub type Snapshot = View;

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("version", &self.version)
            .field("streams", &self.catalog.streams().count())
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

impl View {
    /// A view of `catalog` at version 0, nothing read yet: its caches empty, no lock, no pin.
    pub(crate) fn new(
        vfs: Arc<Counting>,
        config: Config,
        catalog: Catalog,
        report: Report,
    ) -> View {
        let seen = ManifestPosition {
            generation: report.generation,
            len: report.trusted_len,
        };
        View {
            vfs,
            catalog: Arc::new(catalog),
            version: 0,
            pins: Arc::default(),
            pin: None,
            seen,
            unreadable: Arc::default(),
            lock: None,
            poisoned: None,
            readers: Arc::new(RwLock::new(OpenSegments::new(config.open_segments_max))),
            live_maps: Arc::new(LiveMaps::default()),
            cells_read: Arc::default(),
            chunks: Arc::new(DecodedChunks::new(config.decoded_chunks_bytes_max)),
            cell_chunks: Arc::new(DecodedChunks::new(config.decoded_cells_bytes_max)),
            report: Arc::new(report),
            config: Arc::new(config),
        }
    }

    /// This view, pinned at its version and answering at manifest position `seen`: what a
    /// store hands out.
    pub(crate) fn pinned(&self, seen: ManifestPosition) -> View {
        View {
            pin: Some(Arc::new(self.pins.pin(self.version))),
            seen,
            ..self.clone()
        }
    }

    /// The declarations of every stream, recorded order (by id).
    pub fn streams(&self) -> impl Iterator<Item = &StreamDecl> {
        self.catalog.streams()
    }

    /// The declaration of `stream`.
    pub fn stream(&self, stream: &str) -> Option<&StreamDecl> {
        self.catalog.stream(stream)
    }

    /// The declaration of `stream`, or the refusal every face gives a stream the store does
    /// not declare ([`EngineError::UnknownStream`], naming those it does).
    pub fn declaration(&self, stream: &str) -> Result<&StreamDecl, EngineError> {
        self.catalog.stream(stream).ok_or_else(|| {
            EngineError::unknown_stream(stream, self.catalog.streams().map(|d| d.id.as_str()))
        })
    }

    /// The file system the store lives on (its folder, or a simulated one), for a tier that
    /// copies the store's files elsewhere: strata-remote's publisher reads the manifest and the
    /// claimed segments through it. Reading is safe while the store is open; writing or
    /// removing a store file through it is not.
    pub fn vfs(&self) -> Arc<dyn Vfs> {
        Arc::clone(&self.vfs) as Arc<dyn Vfs>
    }

    /// How the store's file system renames without replacing: `Unprobed` until the first
    /// rename (a seal's), then `Noreplace`, or `LinkUnlink` where the file system refuses
    /// `RENAME_NOREPLACE` (docs/format.md).
    pub fn rename_mode(&self) -> RenameMode {
        self.vfs.rename_mode()
    }

    /// What boot found when the store was opened.
    pub fn boot_report(&self) -> &Report {
        &self.report
    }

    /// What the store's records say as of this view, derived by the same `Catalog::apply`
    /// boot replays: its files, live or retired, and each partition's live segments.
    /// Read-only, for tools that count and report (`strata compact` prints live files before
    /// and after).
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The manifest position this view answers at: the generation and the length of the
    /// trusted prefix its catalog holds. (A writing store's own moves with every record.)
    pub fn manifest_position(&self) -> ManifestPosition {
        self.seen
    }

    /// The catalog version this view answers from: raised by every record the store applies.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// What reads through this view's opening have done (cells read, caches), and the gauges
    /// it shares with the store; a store's own adds its writer's counts.
    pub fn metrics(&self) -> Metrics {
        let (segments_open, segment_evictions) = {
            let readers = self.readers.read().unwrap_or_else(PoisonError::into_inner);
            (readers.len() as u64, readers.evictions())
        };
        let (chunks, cells) = (self.chunks.counts(), self.cell_chunks.counts());
        Metrics {
            file_syncs: self.vfs.counts().file_syncs(),
            dir_syncs: self.vfs.counts().dir_syncs(),
            cells_read: self.cells_read.load(Ordering::Relaxed),
            segments_open,
            segment_evictions,
            segments_mapped: self.live_maps.now(),
            segments_mapped_peak: self.live_maps.peak(),
            snapshots: self.pins.count() as u64,
            decoded_chunks_bytes: chunks.bytes,
            decoded_chunk_hits: chunks.hits,
            decoded_chunk_misses: chunks.misses,
            decoded_chunk_evictions: chunks.evictions,
            decoded_cells_bytes: cells.bytes,
            decoded_cell_hits: cells.hits,
            decoded_cell_misses: cells.misses,
            decoded_cell_evictions: cells.evictions,
            ..Metrics::default()
        }
    }

    /// A view only reads: always true. (A [`crate::Store`] answers for itself.)
    pub fn is_read_only(&self) -> bool {
        true
    }

    /// `EngineError::Poisoned` if an earlier failed write had poisoned the store when this
    /// view was taken: every read refuses with its cause.
    pub fn check_poison(&self) -> Result<(), EngineError> {
        match &self.poisoned {
            Some(cause) => Err(EngineError::Poisoned {
                cause: Arc::clone(cause),
            }),
            None => Ok(()),
        }
    }

    /// The position through which `stream` is durable, as recorded (no barrier). A barrier
    /// covers every partition, so every selection of a stream shares its watermark. `None`:
    /// nothing of it is durable yet.
    pub fn watermark(&self, stream: &str, selection: &[&str]) -> Result<Option<u64>, EngineError> {
        self.selection_key(stream, selection)?;
        Ok(self.catalog.watermark(stream))
    }

    /// The fence of `stream`: positions at or below it are never assigned to rows again,
    /// because an operator's repair cut records that had acknowledged rows there (`engine-fsck
    /// repair`). `None` unless a repair set one. A fence outlives the stream's declaration: a
    /// stream declared again after its declaring frame was cut keeps it.
    pub fn fence(&self, stream: &str) -> Result<Option<u64>, EngineError> {
        self.selection_key(stream, &[])?;
        Ok(self.catalog.fence(stream))
    }

    /// The track key a selection names: the stream's track components, outermost first, or a
    /// prefix of them; numbers as decimal labels. Refused (typed) for an unknown stream, more
    /// labels than the stream has track fields, or a label no track can hold.
    pub(crate) fn selection_key(
        &self,
        stream: &str,
        selection: &[&str],
    ) -> Result<TrackKey, EngineError> {
        // A failed barrier was applied to the catalog before its writes failed: a poisoned store
        // must not answer from it.
        self.check_poison()?;
        let decl = self.declaration(stream)?;
        let track = &decl.track;
        if selection.len() > track.len() {
            return Err(EngineError::TrackDepth {
                stream: stream.to_owned(),
                selection: selection.iter().map(|&l| l.to_owned()).collect(),
                fields: track
                    .iter()
                    .map(|&idx| decl.fields[usize::from(idx)].name.clone())
                    .collect(),
            });
        }
        // Each label is checked here, where the field it selects has a name to give; what
        // `encode` checks besides is the depth, which the length check above already bounds.
        for (label, &field_idx) in selection.iter().zip(track) {
            validate_label(label).map_err(|error| EngineError::BadRead {
                reason: format!(
                    "the selection's label for track field {:?}: {error}",
                    decl.fields[usize::from(field_idx)].name
                ),
            })?;
        }
        TrackKey::encode(selection).map_err(|e| EngineError::BadRead {
            reason: e.to_string(),
        })
    }

    /// [`View::selection_key`], refused besides when the selection names labels under which
    /// nothing of the stream was ever sealed ([`EngineError::UnknownTrack`]): no partition, live
    /// or retired. What a read or a retirement selects by; the empty selection always passes
    /// (a stream with nothing sealed answers nothing, which is no mistake).
    pub(crate) fn selected(
        &self,
        stream: &str,
        selection: &[&str],
    ) -> Result<TrackKey, EngineError> {
        let prefix = self.selection_key(stream, selection)?;
        if selection.is_empty()
            || self.catalog.partitions(stream, &prefix).next().is_some()
            || self.catalog.floors(stream, &prefix).next().is_some()
        {
            return Ok(prefix);
        }
        let mut tracks: Vec<Vec<String>> = self
            .catalog
            .partitions(stream, &TrackKey::ROOT)
            .take(TRACKS_NAMED_MAX + 1)
            .map(|p| p.track().labels().map(str::to_owned).collect())
            .collect();
        let more = tracks.len() > TRACKS_NAMED_MAX;
        tracks.truncate(TRACKS_NAMED_MAX);
        Err(EngineError::UnknownTrack {
            stream: stream.to_owned(),
            selection: selection.iter().map(|&l| l.to_owned()).collect(),
            tracks,
            more,
        })
    }

    /// Lets go of the cached readers of files this version holds no live tier of (a follow
    /// moved past their retirement): at most `Config::open_segments_max` looked at.
    pub(crate) fn evict_readers_gone(&self) {
        let mut readers = self.readers.write().unwrap_or_else(PoisonError::into_inner);
        let gone: Vec<FileName> = readers
            .names()
            .filter(|&name| self.catalog.file(name).is_none() || self.catalog.is_retired(name))
            .collect();
        for name in gone {
            readers.remove(name);
        }
    }

    /// Lets go of the cached readers of `names` (their files are about to go; a read holding
    /// one keeps it).
    pub(crate) fn evict_readers(&self, names: &[FileName]) {
        let mut readers = self.readers.write().unwrap_or_else(PoisonError::into_inner);
        for &name in names {
            readers.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::View;

    /// The read half crosses threads and outlives any borrow: a compile-time check.
    #[test]
    fn a_view_is_clone_send_sync_and_static() {
        fn read_half<T: Clone + Send + Sync + 'static>() {}
        read_half::<View>();
    }
}
