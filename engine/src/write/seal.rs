//! The barrier: everything staged sealed off into a [`Sealing`], written, synced, renamed and
//! claimed by one manifest frame ([`Sealing::run`], on the store or on `Served`'s worker),
//! and its outcome taken back ([`Store::finish_barrier`]). docs/barrier.md says why in this
//! order.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;

use strata_index::{Catalog, Entry, FileName, Record, encode_frame};
use strata_segment::names::{NumberedName, SEG_DIR, TMP_DIR};
use strata_segment::vfs::{Counting, Vfs};
use strata_segment::{
    CountingSink, ManifestWriter, SegmentError, SegmentSink, SegmentSummary, SegmentWriter,
};

use crate::error::{EngineError, FailedBarrier, StreamIntact};
use crate::ladder::{LevelStorage, field_cells};
use crate::store::Store;
use crate::write::commit::{Committing, write_and_claim};
use crate::write::fold::fold_partition;
use crate::write::stage::StreamState;

impl Store {
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
        let name = self.writer.next_name;
        self.writer.next_name = name + 1;
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
            self.writer.manifest.generation(),
            self.writer.manifest.len(),
        );
        self.writer.sealing = true;
        Sealing {
            name,
            streams,
            storage: self.config.level_storage,
            pack_columns: self.config.pack_columns,
            staged_bytes: std::mem::take(&mut self.writer.staged_bytes),
            rows,
            watermarks,
            intact,
            catalog: Arc::clone(&self.catalog),
            version: self.version,
            manifest: std::mem::replace(&mut self.writer.manifest, placeholder),
            vfs: Arc::clone(&self.vfs),
        }
    }

    /// Takes a barrier's outcome back: the manifest's writer, and on success the catalog
    /// version that claims it, the counters and the sweep it makes due. A failed write poisons
    /// the store, as a barrier's always did; a record the catalog refused (a bug, caught
    /// before anything was claimed) puts the rows back in staging if nothing was staged
    /// behind them, and poisons the store if something was.
    pub(crate) fn finish_barrier(&mut self, sealed: Sealed) -> Result<(), EngineError> {
        self.writer.sealing = false;
        self.writer.manifest = sealed.manifest;
        self.writer.metrics.barrier_syncs += sealed.syncs;
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
                self.writer.sweep_due = true;
                self.writer.metrics.barriers += 1;
                self.writer.metrics.rows_sealed += sealed.rows;
                self.writer.metrics.bytes_sealed += segment_len;
                Ok(())
            }
            Err(error @ EngineError::Internal { .. }) if self.writer.staged_bytes == 0 => {
                for (id, sealed_off) in sealed.streams {
                    if let Some(state) = self.streams.get_mut(&id) {
                        state.staged = sealed_off.staged;
                        state.staged_position = sealed_off.staged_position;
                    }
                }
                self.writer.staged_bytes = sealed.staged_bytes;
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
                pack_columns,
            );
            writer.write_cells(&field_cells(&levels), stored_from)?;
        }
    }
    writer.finish_streamed()
}
