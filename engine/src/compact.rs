//! Compaction: merging a partition's segments into one, one bounded step and one record at a
//! time.
//!
//! A step picks one partition whose live raw segments number more than
//! [`Config::compact_files_max`](crate::Config) and merges its oldest run of whole segments (every
//! tier live, consecutive in ordinal order), at most `compact_inputs_max` of them, into one new
//! segment holding only that partition: its raw columns concatenated in ordinal order, and for
//! every level up to the output's own top the inputs' cells merged by the merge law, oldest
//! first. A cell that straddled two barriers (a partial cell in each file) becomes one whole
//! cell, equal to what a read merged from the partials before: every answer is the same after.
//!
//! One partition per output: a compaction output is what reads and retirement touch per
//! partition, so it should hold one partition contiguously; several partitions in one output
//! would tie their lifetimes together again (retiring one leaves the file partly live), which is
//! what barrier files do and what compaction undoes. A barrier keeps writing one file for every
//! partition it touches, because there the cost that matters is syncs per barrier.
//!
//! The step writes the output two-phase, then appends one `Merge` record (the claim and the
//! retirement of the inputs in one entry) and syncs it; only then are inputs that are now wholly
//! retired removed (and `seg/` synced). A crash before the record leaves an unclaimed output
//! (boot quarantines it) and the inputs untouched; after it, boot removes retired inputs that
//! were not removed yet. A failed write or sync poisons the store until it is reopened, as a
//! barrier's does; nothing is retried.
//!
//! Every answer is the same after a step, bit for bit: a read merges a partition's cells oldest
//! segment first, as a left fold, and the output's cells are that same fold of its inputs,
//! which are the oldest whole segments. (A run that started after an older live segment would
//! regroup the fold, and an `f64` sum could round differently; nothing retires tiers yet, so
//! the oldest segment is always whole.)
//!
//! Not built yet (issue 11): the policy here is the simplest that bounds live files — merge the
//! oldest files of any partition over the bound — not the tiered or leveled policy with
//! measured write amplification (rewriting the oldest, largest file every step costs O(n) per
//! step); compaction in `Served` between barriers; `strata compact` on the command line; fsck's
//! per-partition figures; the lifecycle benches.

use std::collections::BTreeMap;

use strata_index::{Entry, FileName, PartitionEntry, Record, TrackKey};
use strata_levels::{Bucket, Cell};
use strata_segment::names::{NumberedName, SEG_DIR};
use strata_segment::vfs::Vfs;
use strata_segment::{
    Column, FieldCells, PartitionInput, SegmentError, SegmentWriter, write_two_phase,
};

use crate::error::EngineError;
use crate::ladder::{FieldLevels, ladder_of, num_kind};
use crate::read::unreadable;
use crate::stage::ColumnBuf;
use crate::store::Store;

/// What one compaction step did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactStep {
    /// The stream of the merged partition.
    pub stream: String,
    /// Its track.
    pub track: TrackKey,
    /// The segment written.
    pub output: FileName,
    /// The segments it replaced, oldest rows first.
    pub inputs: Vec<FileName>,
    /// Of those, the ones now wholly retired, and so removed.
    pub removed: Vec<FileName>,
    /// Rows the output holds.
    pub n_rows: u64,
    /// Bytes of the output.
    pub bytes_written: u64,
}

/// A partition to merge, and its segments to merge, oldest first.
struct Pick {
    stream: String,
    track: TrackKey,
    inputs: Vec<(FileName, PartitionEntry)>,
}

/// A merged partition's rows and cells, ready to write.
struct Merged {
    positions: Vec<u64>,
    ordinals: Vec<u64>,
    axis: Vec<u64>,
    columns: Vec<ColumnBuf>,
    levels: Vec<FieldLevels>,
}

impl Store {
    /// Runs compaction steps until no partition has more than `compact_files_max` live raw
    /// segments (or none can be merged), and answers what each step did. Each step is bounded
    /// by `compact_inputs_max` and is one manifest record; see [`Store::compact_step`].
    pub fn compact(&mut self) -> Result<Vec<CompactStep>, EngineError> {
        let mut steps = Vec::new();
        while let Some(step) = self.compact_step()? {
            steps.push(step);
        }
        Ok(steps)
    }

    /// One compaction step: merges the oldest whole segments of one partition over the bound
    /// into one segment, claimed by one record. `None` when there is nothing to merge.
    ///
    /// Staged rows are untouched (they hold newer ordinals than anything merged). A read error
    /// of an input fails the step before anything is written, and leaves the store as it was;
    /// a failed write, sync or removal poisons the store.
    pub fn compact_step(&mut self) -> Result<Option<CompactStep>, EngineError> {
        self.check_poison()?;
        let Some(pick) = self.pick() else {
            return Ok(None);
        };
        let merged = self.merge_rows(&pick)?;
        let name = self.next_name;
        let written = {
            let state = &self.streams[&pick.stream];
            let mut writer = SegmentWriter::new();
            writer.add_partition(&PartitionInput {
                stream: &pick.stream,
                track: &pick.track,
                positions: &merged.positions,
                ordinals: &merged.ordinals,
                axis: state.decl.axis.map(|_| merged.axis.as_slice()),
                columns: state
                    .stored
                    .iter()
                    .zip(&merged.columns)
                    .map(|(&field, column)| (field, column.data()))
                    .collect(),
                cells: merged
                    .levels
                    .iter()
                    .map(|f| FieldCells {
                        field: f.field,
                        kind: f.kind,
                        levels: &f.levels,
                    })
                    .collect(),
            });
            writer.finish()
        };
        let mut inputs: Vec<FileName> = pick.inputs.iter().map(|&(input, _)| input).collect();
        inputs.sort_unstable();
        let record = Record {
            entries: vec![
                Entry::Merge {
                    file: written.claim(name),
                    inputs: inputs.clone(),
                },
                Entry::NameHigh(name),
            ],
        };
        // As at a barrier: applied first, so a record the catalog refuses (our bug) never
        // reaches the disk; if a write below fails the store is poisoned, and a poisoned store
        // answers nothing from this catalog.
        self.catalog
            .apply(&record)
            .map_err(|e| EngineError::Internal {
                reason: format!("a compaction's own record was refused: {e}"),
            })?;
        self.write_merge(name, &written.bytes, &record)?;
        self.next_name = name + 1;
        let removed = self.remove_retired(&inputs)?;
        self.maybe_rewrite_manifest()?;
        Ok(Some(CompactStep {
            stream: pick.stream,
            track: pick.track,
            output: name,
            inputs: pick.inputs.iter().map(|&(input, _)| input).collect(),
            removed,
            n_rows: merged.positions.len() as u64,
            bytes_written: written.bytes.len() as u64,
        }))
    }

    /// The first partition (streams by id, tracks in key order) over the bound with a run of
    /// at least two whole segments to merge: its oldest such run, at most `compact_inputs_max`.
    fn pick(&self) -> Option<Pick> {
        let inputs_max = self.config.compact_inputs_max.max(2);
        for id in self.streams.keys() {
            for view in self.catalog.partitions(id, &TrackKey::ROOT) {
                let n_raw = view.segments(strata_index::Tier::Raw).count();
                if n_raw <= self.config.compact_files_max {
                    continue;
                }
                let mut run: Vec<(FileName, PartitionEntry)> = Vec::new();
                for (name, entry, whole) in view.live_segments() {
                    // A file boot could not read stays as it is, for fsck and the operator.
                    if whole && !self.unreadable.contains_key(&name) {
                        run.push((name, entry.clone()));
                        if run.len() == inputs_max {
                            break;
                        }
                    } else if run.len() >= 2 {
                        break;
                    } else {
                        run.clear();
                    }
                }
                if run.len() >= 2 {
                    return Some(Pick {
                        stream: id.clone(),
                        track: view.track().clone(),
                        inputs: run,
                    });
                }
            }
        }
        None
    }

    /// Reads the picked segments and merges them: raw columns concatenated oldest first, and
    /// each level's cells merged cell by cell, oldest first, up to the output's top.
    fn merge_rows(&self, pick: &Pick) -> Result<Merged, EngineError> {
        let state = &self.streams[&pick.stream];
        let decl = &state.decl;
        let mut merged = Merged {
            positions: Vec::new(),
            ordinals: Vec::new(),
            axis: Vec::new(),
            columns: state
                .stored
                .iter()
                .map(|&f| ColumnBuf::new(decl.fields[usize::from(f)].kind))
                .collect(),
            levels: Vec::new(),
        };
        for (name, entry) in &pick.inputs {
            let (reader, part_idx) = self.partition_in(*name, &pick.stream, &pick.track)?;
            self.check_partition(&reader, part_idx, entry)?;
            let positions = reader.positions(part_idx).map_err(unreadable)?;
            merged.positions.extend(positions.iter().map(|v| v.get()));
            let ordinals = reader.ordinals(part_idx).map_err(unreadable)?;
            merged.ordinals.extend(ordinals.iter().map(|v| v.get()));
            if let Some(axis) = reader.axis(part_idx).map_err(unreadable)? {
                merged.axis.extend(axis.iter().map(|v| v.get()));
            }
            for (&field, buf) in state.stored.iter().zip(&mut merged.columns) {
                let column = reader.column(part_idx, field).map_err(unreadable)?;
                let Some(column) = column else {
                    return Err(EngineError::Unreadable {
                        source: SegmentError::mismatch(
                            reader.path(),
                            format!("no column for field {field} in partition {:?}", pick.track),
                        ),
                    });
                };
                append(buf, &column, reader.path())?;
            }
        }
        merged.levels = self.merge_levels(pick, &merged.axis)?;
        Ok(merged)
    }

    /// Every level from 0 to the output's top, per measured field: each input's cells of that
    /// level (derived from its top cell above its top, as a read derives them), merged oldest
    /// first. That is exactly what a read of the inputs merged, so the output answers alike.
    fn merge_levels(&self, pick: &Pick, axis: &[u64]) -> Result<Vec<FieldLevels>, EngineError> {
        let decl = &self.streams[&pick.stream].decl;
        let (Some(&lo), Some(&hi)) = (axis.first(), axis.last()) else {
            return Ok(Vec::new());
        };
        let n_with_levels = pick.inputs.iter().filter(|(_, e)| e.n_levels > 0).count();
        if n_with_levels == 0 {
            return Ok(Vec::new());
        }
        if n_with_levels != pick.inputs.len() {
            return Err(EngineError::Internal {
                reason: format!(
                    "segments {:?} of {:?} {:?} disagree on whether the partition has levels",
                    pick.inputs.iter().map(|(n, _)| n).collect::<Vec<_>>(),
                    pick.stream,
                    pick.track
                ),
            });
        }
        let ladder = ladder_of(decl);
        let top = ladder.top_level(lo, hi);
        let mut fields = Vec::new();
        for field in decl.measured() {
            let Some(kind) = num_kind(decl.fields[usize::from(field)].kind) else {
                continue;
            };
            let mut levels = Vec::with_capacity(usize::from(top) + 1);
            for level in 0..=top {
                let mut cells: BTreeMap<u64, Bucket> = BTreeMap::new();
                for (name, entry) in &pick.inputs {
                    let found = self.segment_cells(
                        *name,
                        &pick.track,
                        entry,
                        &ladder,
                        field,
                        level,
                        [0, u64::MAX],
                    )?;
                    for cell in found {
                        cells
                            .entry(cell.index)
                            .and_modify(|b| b.absorb(&cell.bucket))
                            .or_insert(cell.bucket);
                    }
                }
                levels.push(
                    cells
                        .into_iter()
                        .map(|(index, bucket)| Cell { index, bucket })
                        .collect(),
                );
            }
            fields.push(FieldLevels {
                field,
                kind,
                levels,
            });
        }
        Ok(fields)
    }

    /// Writes the output two-phase, then appends its record and syncs it. A failure poisons the
    /// store; a frame that never reached the file whole is cut off and its segment removed, as
    /// at a barrier.
    fn write_merge(
        &mut self,
        name: FileName,
        bytes: &[u8],
        record: &Record,
    ) -> Result<(), EngineError> {
        let file = NumberedName::segment(name).to_string();
        let result = write_two_phase(self.vfs.as_ref(), SEG_DIR, &file, bytes).and_then(|_| {
            let manifest_len = self.manifest.len();
            let frame_bytes = strata_index::encode_frame(record).len() as u64;
            self.manifest.append(record).inspect_err(|_| {
                self.unwind_append(
                    manifest_len,
                    frame_bytes,
                    &NumberedName::segment(name).path_in(SEG_DIR),
                );
            })
        });
        result.map_err(|error| self.poison(EngineError::write(error)))
    }

    /// Removes the inputs the durable record left wholly retired, then syncs `seg/` so that a
    /// crash does not bring them back (boot would remove them again, but report them). A
    /// failure poisons the store, and nothing is retried: boot removes what is left.
    fn remove_retired(&mut self, inputs: &[FileName]) -> Result<Vec<FileName>, EngineError> {
        let mut removed = Vec::new();
        for &input in inputs {
            if !self.catalog.is_retired(input) {
                continue;
            }
            self.readers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(input);
            let path = NumberedName::segment(input).path_in(SEG_DIR);
            if let Err(source) = self.vfs.remove(&path) {
                let error = EngineError::write(SegmentError::Io { path, source });
                return Err(self.poison(error));
            }
            removed.push(input);
        }
        if !removed.is_empty()
            && let Err(source) = self.vfs.sync_dir(SEG_DIR)
        {
            let path = SEG_DIR.to_owned();
            let error = EngineError::write(SegmentError::Io { path, source });
            return Err(self.poison(error));
        }
        Ok(removed)
    }

    fn poison(&mut self, error: EngineError) -> EngineError {
        self.poisoned = Some(std::sync::Arc::new(error.duplicate()));
        error
    }
}

/// Appends a stored column's values to a buffer of the same kind.
fn append(buf: &mut ColumnBuf, column: &Column<'_>, path: &str) -> Result<(), EngineError> {
    match (buf, column) {
        (ColumnBuf::U64(out), Column::U64(c)) => out.extend(c.iter().map(|v| v.get())),
        (ColumnBuf::I64(out), Column::I64(c)) => out.extend(c.iter().map(|v| v.get())),
        (ColumnBuf::F64(out), Column::F64(c)) => out.extend(c.iter().map(|v| v.get())),
        (
            ColumnBuf::Var {
                offsets,
                heap,
                is_str: true,
            },
            Column::Str(c),
        )
        | (
            ColumnBuf::Var {
                offsets,
                heap,
                is_str: false,
            },
            Column::Bytes(c),
        ) => {
            for row_idx in 0..c.len() {
                heap.extend_from_slice(c.get(row_idx).unwrap_or_default());
                offsets.push(heap.len() as u64);
            }
        }
        (buf, column) => {
            return Err(EngineError::Unreadable {
                source: SegmentError::mismatch(
                    path,
                    format!("a column stored as {column:?} where the declaration has {buf:?}"),
                ),
            });
        }
    }
    Ok(())
}
