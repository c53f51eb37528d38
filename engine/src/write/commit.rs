//! The commit path: every record a write appends goes through [`Store::commit`] (on the
//! store's thread) or [`write_and_claim`] (a barrier's or a compaction step's, whose segment
//! is written first), and a catalog built off the thread is installed by [`Store::install`].
//! Here too: what refuses a write, poisoning, and the manifest's own upkeep (rewrite,
//! checkpoint, name reservations).

use std::sync::Arc;

use strata_index::{
    Catalog, Entry, FRAME_BODY_MAX, FileName, Record, encode_frame, split_record, whole_state,
};
use strata_segment::names::{NumberedName, SEG_DIR};
use strata_segment::vfs::Vfs;
use strata_segment::{
    FileSink, ManifestWriter, SegmentError, SegmentSummary, SyncedFile, TempFile, read_manifest,
    rewrite_manifest,
};

use crate::error::EngineError;
use crate::store::Store;
use crate::write::manifest::{append_record, snapshot_len};

impl Store {
    pub(crate) fn maybe_rewrite_manifest(&mut self) -> Result<(), EngineError> {
        // Past the threshold alone is not enough: a snapshot that is itself past it (a large
        // live state) would otherwise be rewritten after every record, each rewrite costing the
        // whole snapshot. Waiting until the manifest has doubled since the last rewrite makes
        // each rewrite pay for itself with as many bytes of new frames.
        let len = self.writer.manifest.len();
        if len <= self.config.manifest_rewrite_bytes || len <= self.writer.manifest_base_len * 2 {
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
        if self.writer.retired_since_measure
            && self.writer.manifest.len() > self.config.manifest_rewrite_bytes
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
        if self.writer.next_name > through {
            return Ok(false);
        }
        let record = Record {
            entries: vec![Entry::NameHigh(through)],
        };
        self.commit(&record, "a name reservation")?;
        self.writer.next_name = through + 1;
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
        if !self.writer.removals.is_empty() {
            return Ok(false);
        }
        self.writer.manifest_base_len = snapshot_len(&self.catalog);
        self.writer.retired_since_measure = false;
        if self.writer.manifest.len() <= self.writer.manifest_base_len * 2 {
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
    pub(crate) fn rewrite_manifest(&mut self) -> Result<bool, EngineError> {
        self.remove_unpinned()?;
        if !self.writer.removals.is_empty() {
            return Ok(false);
        }
        // The generation replaced, read back whole: its frame boundaries join the lineage
        // the new one records, which is what proves a copy of any of them (a bucket's) an
        // earlier state of this store. The appends that wrote it succeeded (a failed one
        // poisons the store), so it is all trusted prefix.
        let generation = self.writer.manifest.generation();
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
                self.writer.manifest_base_len = manifest.len();
                self.writer.retired_since_measure = false;
                self.writer.manifest = manifest;
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
        let vfs = Arc::clone(&self.view.vfs);
        if let Err(failed) = append_record(vfs.as_ref(), &mut self.writer.manifest, record) {
            return Err(self.poison(EngineError::write(failed.error)));
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

    /// Refuses a write to a poisoned store, then any write but a publish while a barrier is in
    /// flight (`Served` waits for the barrier before it asks; one that comes anyway is a bug,
    /// refused before it writes).
    pub(crate) fn check_writable(&self, operation: &'static str) -> Result<(), EngineError> {
        self.check_poison()?;
        // Staging goes on while a barrier is written (the served pipeline stages the next
        // barrier's rows meanwhile); every other write waits for it to land.
        let stages = matches!(
            operation,
            "publish" | "publish_columns" | "publish_columns_at"
        );
        if self.writer.sealing && !stages {
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
/// that fails), then appends the frame that claims it ([`append_record`]); a frame that never
/// reached the file whole is cut off and the segment removed, leaving nothing for the next open
/// to quarantine. If it did reach the file whole (the sync failed), it may be durable and claim
/// the segment: both stay, for boot to judge. The claim of [`write_and_claim`].
fn claim(
    vfs: &dyn Vfs,
    manifest: &mut ManifestWriter,
    synced: SyncedFile<'_>,
    record: &Record,
) -> Result<(), SegmentError> {
    let segment_path = synced.final_path().to_owned();
    synced.publish()?;
    append_record(vfs, manifest, record).map_err(|failed| {
        if failed.cut {
            // Best effort, like the temp's removal: what is not undone is evidence boot keeps.
            let _ = vfs.remove(&segment_path);
        }
        failed.error
    })
}
