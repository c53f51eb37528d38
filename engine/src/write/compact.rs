//! Compaction: merging consecutive segments of a partition into one, one bounded step and one
//! record at a time, under a size-tiered policy (docs/compaction.md has the choice and its
//! figures).
//!
//! A step picks one partition for which [`plan_merge`] finds a run, and merges that run — the
//! partition's newest whole segments (or, once those have nothing to merge, the ones behind
//! them), consecutive in ordinal order, at least
//! [`Config::compact_inputs_min`](crate::Config) of similar size, or as many as bring it back
//! under `compact_files_max`, never more than `compact_inputs_max` segments nor
//! `compact_step_bytes_max` bytes read — into one new segment
//! holding only that partition: its raw columns concatenated in ordinal order, and for every
//! level up to the output's own top the inputs' cells merged by the merge law. A cell that
//! straddled two barriers (a partial cell in each file) becomes one whole cell, equal to what a
//! read merged from the partials before: every answer is the same after.
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
//! Every answer is the same after a step, bit for bit: a read merges a partition's cells as a
//! right fold over its segments, oldest rows first (`s1 + (s2 + (.. + sn))`), and an output
//! merged from the suffix `sk..sn` holds that fold's inner term `sk + (.. + sn)`, cell by cell.
//! A run `sk..sj` with live segments after it holds that term for every cell it does not share
//! with them; a cell it shares (one reaching across its last row, and its top, which reads lift)
//! would regroup the fold, and an `f64` sum could round differently, so the output keeps such a
//! cell as the chain of its inputs' partial cells, which a read folds in front of what follows
//! link by link ([`merge_links`], segment format 4). Raw rows are only concatenated, so queries
//! and percentiles never depended on the grouping.

use std::sync::Arc;

use strata_index::{Catalog, Entry, FileName, PartitionEntry, Record, TrackKey};
use strata_levels::{Cell, Ladder, NumKind};
use strata_segment::vfs::Mapped;
use strata_segment::{
    FileSink, ManifestWriter, MergeSource, MergeWriteError, SegmentError, SegmentSink,
    SegmentSummary, SegmentWriter,
};

use crate::error::EngineError;
use crate::ladder::{FieldLevels, LevelStorage, field_cells, ladder_of, num_kind, stored_from};
use crate::lifetime::Lifetime;
use crate::store::Store;
use crate::view::View;
use crate::view::cells::{CellRun, FoldRows, cells_in, file_rows, fold_decoded, merge_links};
use crate::view::open_segments::OpenSegment;
use crate::view::read::unreadable;
use crate::write::commit::{Committing, write_and_claim};
use crate::write::policy::{PolicyBounds, plan_merge};
use crate::write::snapshot::remove_segments;

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
    /// The axis ranges of the partition's live segments after the inputs (none when the run
    /// is a suffix): a cell the output shares with one of them keeps its partial cells as a
    /// chain.
    later: Vec<[u64; 2]>,
}

impl Pick {
    /// Whether a read of `level` cell `index` of the output may fold a later segment's cell
    /// into it: the later segment's axis reaches the cell, or the cell is the output's top,
    /// which a read lifts to every level above it, where any later segment meets it.
    fn shares(&self, ladder: &Ladder, level: u8, index: u64, top: u8) -> bool {
        !self.later.is_empty()
            && (level >= top
                || self.later.iter().any(|&[lo, hi]| {
                    (ladder.cell(lo, level)..=ladder.cell(hi, level)).contains(&index)
                }))
    }
}

/// The axis ranges of the live segments of a partition after `inputs`' last, oldest first.
fn later_axes(
    live: &[(FileName, &PartitionEntry, bool)],
    inputs: &[(FileName, PartitionEntry)],
) -> Vec<[u64; 2]> {
    let Some((last, _)) = inputs.last() else {
        return Vec::new();
    };
    let after = live
        .iter()
        .position(|(name, _, _)| name == last)
        .map_or(live.len(), |at| at + 1);
    live[after..]
        .iter()
        .filter_map(|(_, entry, _)| entry.axis)
        .collect()
}

/// One input of a merge: its reader, its partition there, and what the catalog holds of it.
struct MergeInput {
    reader: Arc<OpenSegment>,
    part_idx: usize,
    entry: PartitionEntry,
    /// Its lowest level stored whole, if it stores any whole.
    whole_from: Option<u8>,
}

impl MergeInput {
    /// Its cells of `field` at `level` with indexes in `cells`, as a read has them
    /// ([`cells_in`]); `rows`, every row of it decoded already, if a fold needs them.
    fn cells(
        &self,
        ladder: &Ladder,
        field: u16,
        level: u8,
        cells: [u64; 2],
        rows: Option<&FoldRows>,
    ) -> Result<Vec<Cell>, EngineError> {
        let run = CellRun {
            field,
            level,
            cells,
        };
        cells_in(
            &self.reader,
            self.part_idx,
            &self.entry,
            ladder,
            run,
            rows,
            false,
        )
    }
}

/// Why a merge's output was not written: an input that did not read leaves the store as it
/// was; a failed write poisons it.
enum MergeFailure {
    Read(EngineError),
    Write(std::io::Error),
}

impl From<MergeWriteError> for MergeFailure {
    fn from(error: MergeWriteError) -> Self {
        match error {
            MergeWriteError::Read(e) => MergeFailure::Read(unreadable(e)),
            MergeWriteError::Write(e) => MergeFailure::Write(e),
        }
    }
}

/// `index` of a cell `up` levels higher.
fn lift_index(ladder: &Ladder, index: u64, up: u8) -> u64 {
    (0..up).fold(index, |i, _| ladder.parent(i))
}

impl Store {
    /// Runs compaction steps until the policy finds nothing to merge — so no partition has more
    /// than `compact_files_max` live raw segments, besides those `compact_step_bytes_max`
    /// leaves alone and unless a segment that cannot be merged is in the way — then
    /// [`Store::checkpoint`]s the manifest, and answers what each step did. Each step is
    /// bounded by `compact_inputs_max` and `compact_step_bytes_max` and is one manifest record;
    /// see [`Store::compact_step`].
    pub fn compact(&mut self) -> Result<Vec<CompactStep>, EngineError> {
        self.check_writable("compact")?;
        self.sweep()?;
        let mut steps = Vec::new();
        while let Some(step) = self.compact_step()? {
            steps.push(step);
        }
        self.checkpoint()?;
        Ok(steps)
    }

    /// One compaction step: merges the run the policy picks (the newest whole segments of one
    /// partition) into one segment, claimed by one record. `None` when there is nothing to
    /// merge.
    ///
    /// Staged rows are untouched (they hold newer ordinals than anything merged). A read error
    /// of an input fails the step before anything is written, and leaves the store as it was;
    /// a failed write, sync or removal poisons the store.
    pub fn compact_step(&mut self) -> Result<Option<CompactStep>, EngineError> {
        let Some(merging) = self.start_compaction()? else {
            return Ok(None);
        };
        self.finish_compaction(merging.run())
    }

    /// The first half of a compaction step, in memory: retention first (a sweep, if one is
    /// due), then the policy's pick, the output's name, a snapshot to read the inputs from and
    /// the manifest's writer, moved into a [`Merging`] that any thread may run. `None` (after
    /// tidying the manifest) when there is nothing to merge. Like a barrier in flight, every
    /// other write but a publish waits for [`Store::finish_compaction`].
    pub(crate) fn start_compaction(&mut self) -> Result<Option<Merging>, EngineError> {
        self.check_writable("compact_step")?;
        self.remove_unpinned()?;
        // Retention first: what it retires is neither merged nor rewritten.
        if self.writer.sweep_due && !self.config.retention.is_empty() {
            self.sweep()?;
        }
        let Some(pick) = self.pick() else {
            self.tidy_manifest()?;
            return Ok(None);
        };
        // Moved before the merge is tried, so a partition whose inputs fail to read does not
        // take every later step too.
        self.writer.compact_cursor = Some((pick.stream.clone(), pick.track.clone()));
        let name = self.writer.next_name;
        self.writer.next_name = name + 1;
        let snapshot = self.snapshot();
        let placeholder = ManifestWriter::detached(
            self.writer.manifest.generation(),
            self.writer.manifest.len(),
        );
        self.writer.sealing = true;
        Ok(Some(Merging {
            snapshot,
            pick,
            name,
            manifest: std::mem::replace(&mut self.writer.manifest, placeholder),
            version: self.version,
        }))
    }

    /// The second half: takes the step's outcome back. On success the version that claims
    /// the output is swapped in and the inputs it left wholly retired are removed (or queued
    /// for a snapshot that may read them). A failed read of an input leaves the store as it
    /// was (a one-input rewrite is skipped by the next picks); a record the catalog refused
    /// (a bug, caught before anything was claimed) and a failed write poison the store.
    pub(crate) fn finish_compaction(
        &mut self,
        done: MergeDone,
    ) -> Result<Option<CompactStep>, EngineError> {
        self.writer.sealing = false;
        self.writer.manifest = done.manifest;
        if done.version != self.version {
            return Err(self.poison(EngineError::Internal {
                reason: format!(
                    "the catalog changed under a compaction step in flight (version {} became {})",
                    done.version, self.version
                ),
            }));
        }
        let pick = done.pick;
        let (catalog, bytes_written, n_rows) = match done.outcome {
            Ok(outcome) => outcome,
            Err(MergeError::Read(error)) => {
                if let [(input, _)] = pick.inputs[..] {
                    self.writer.rewrite_failed = Some(input);
                }
                return Err(error);
            }
            Err(MergeError::Poisons(error)) => return Err(self.poison(error)),
        };
        self.install(catalog);
        self.writer.metrics.compaction_steps += 1;
        self.writer.metrics.compaction_bytes_read +=
            pick.inputs.iter().map(|(_, e)| e.len).sum::<u64>();
        self.writer.metrics.compaction_bytes_written += bytes_written;
        let mut inputs: Vec<FileName> = pick.inputs.iter().map(|&(input, _)| input).collect();
        inputs.sort_unstable();
        let removed = self.remove_retired(&inputs)?;
        self.writer.retired_since_measure |= !removed.is_empty();
        self.maybe_rewrite_manifest()?;
        Ok(Some(CompactStep {
            stream: pick.stream,
            track: pick.track,
            output: done.name,
            inputs: pick.inputs.iter().map(|&(input, _)| input).collect(),
            removed,
            n_rows,
            bytes_written,
        }))
    }

    /// The first partition (streams by id, tracks in key order) for which [`plan_merge`] finds
    /// a run to merge: its newest whole, readable segments, as many as the plan says.
    fn pick(&self) -> Option<Pick> {
        // Round-robin over the partitions with work, starting after the one the last step
        // merged: taking the first in order would give every step to the first dozen
        // partitions of a barrier that touches more than a grant's worth, and none ever to
        // the rest (seen: one partition of 32 at 1,000 files after a compacting ingest).
        let cursor = self.writer.compact_cursor.as_ref();
        let after = |id: &str, track: &TrackKey| {
            cursor.is_none_or(|(stream, last)| (id, track) > (stream.as_str(), last))
        };
        if let Some(pick) = self.pick_rewrite() {
            return Some(pick);
        }
        for later in [true, false] {
            for id in self.streams.keys() {
                for view in self.catalog.partitions(id, &TrackKey::ROOT) {
                    if after(id, view.track()) != later {
                        continue;
                    }
                    if let Some(pick) = self.pick_in(id, &view) {
                        return Some(pick);
                    }
                }
            }
        }
        None
    }

    /// The run the policy merges in one partition, if any.
    fn pick_in(&self, id: &str, view: &strata_index::PartitionView<'_>) -> Option<Pick> {
        let bounds = PolicyBounds::of(&self.config);
        let n_live = view.segments(strata_index::Tier::Raw).count();
        if n_live < 2 {
            return None;
        }
        // The mergeable tail: the newest segments back to the first that is not whole (a merge
        // may not reach across it) or that boot could not read (it stays as it is, for fsck and
        // the operator).
        let live = view.live_segments();
        let n_tail = live
            .iter()
            .rev()
            .take_while(|(name, _, whole)| *whole && !self.unreadable.contains_key(name))
            .count();
        let tail = &live[live.len() - n_tail..];
        // Under retention, a merge never spans more than an eighth of the lifetime after which
        // a sweep retires a whole segment, so that the segment straddling that horizon holds
        // at most that much already past it: segments further back are left as they are, as
        // the byte cap leaves them — but only while they fit within the file bound. Segments
        // that grew as far as the reach let them before falling behind it span about an
        // eighth of the lifetime each, so a lifetime holds about `compact_files_max` of them;
        // more behind it is a backlog the reach never let merge (barriers sealed while nothing
        // compacted, or a retention set after them), which would otherwise stay until it
        // expired, one file per barrier. Then the bound wins: the policy merges as it does
        // without retention, and the output spans more than the reach (docs/retention.md).
        let reach = self.retention_reach(id, tail);
        let n_behind = tail.len() - reach;
        let (tail, n_live) = if n_behind > bounds.files_max {
            (tail, n_live)
        } else {
            (&tail[n_behind..], n_live - n_behind)
        };
        let sizes: Vec<u64> = tail.iter().map(|(_, entry, _)| entry.len).collect();
        let run = plan_merge(&sizes, n_live, bounds);
        (run.len() >= 2).then(|| {
            let inputs: Vec<(FileName, PartitionEntry)> = tail[run.clone()]
                .iter()
                .map(|&(name, entry, _)| (name, entry.clone()))
                .collect();
            Pick {
                stream: id.to_owned(),
                track: view.track().clone(),
                later: later_axes(&live, &inputs),
                inputs,
            }
        })
    }

    /// How many of `tail`'s newest segments one merge may reach back over under `id`'s
    /// retention: those whose span, with the newest, is at most an eighth of the lifetime that
    /// retires whole segments (all of them without one).
    fn retention_reach(&self, id: &str, tail: &[(FileName, &PartitionEntry, bool)]) -> usize {
        let decl = &self.streams[id].decl;
        let has_levels = decl.axis.is_some() && !decl.measured().is_empty();
        let Some(lifetime) = self
            .config
            .retention
            .get(id)
            .and_then(|r| r.segment_lifetime(has_levels))
        else {
            return tail.len();
        };
        let Some(&(_, newest, _)) = tail.last() else {
            return 0;
        };
        let reach = |hi: u64, span: u64, lo: fn(&PartitionEntry) -> u64| {
            let cap = (span / 8).max(1);
            tail.iter()
                .rev()
                .take_while(|(_, entry, _)| hi.saturating_sub(lo(entry)) <= cap)
                .count()
        };
        match lifetime {
            Lifetime::AxisSpan(span) => {
                let hi = newest.axis.map_or(0, |[_, hi]| hi);
                reach(hi, span, |e| e.axis.map_or(0, |[lo, _]| lo))
            }
            Lifetime::Positions(count) => reach(newest.positions[1], count, |e| e.positions[0]),
            Lifetime::Forever => tail.len(),
        }
    }

    /// A whole segment of one partition in a file at least half of whose bytes belong to
    /// partitions retired by retention (a sweep, `retire` or `trim_to`), and whose every other
    /// partition is either retired outright or whole: rewritten alone into its own file, each
    /// whole one lets the file go once the last is out. One input, so the output holds the same
    /// rows and cells bit for bit, wherever it lies among the partition's segments.
    fn pick_rewrite(&self) -> Option<Pick> {
        let failed = self.writer.rewrite_failed;
        for name in self.catalog.partly_retired_files() {
            // One file that cannot be read (boot's verdict, or the last rewrite's failure)
            // must not take every step.
            if self.unreadable.contains_key(&name) || failed == Some(name) {
                continue;
            }
            let file = self.catalog.file(name)?;
            let mut retired_bytes = 0u64;
            let mut first_whole = None;
            let mut stuck = false;
            for part in &file.partitions {
                let view = self
                    .catalog
                    .partitions(&part.stream, &part.track)
                    .find(|view| view.track() == &part.track);
                let tiers = strata_index::tiers(part.n_levels);
                let live = tiers
                    .filter(|&tier| view.is_some_and(|v| v.is_live(name, tier)))
                    .count();
                if live == 0 {
                    // Retired by retention (the track has floors), not merged elsewhere: a
                    // barrier file whose partitions merged away goes once they all do, and
                    // rewriting its last ones alone would only add writes.
                    if self.catalog.floors_of(&part.stream, &part.track).is_some() {
                        retired_bytes = retired_bytes.saturating_add(part.len);
                    }
                } else if live == 1 + usize::from(part.n_levels) {
                    first_whole.get_or_insert(part);
                } else {
                    stuck = true;
                }
            }
            let Some(part) = first_whole.filter(|_| !stuck) else {
                continue;
            };
            if retired_bytes.saturating_mul(2) < file.len {
                continue;
            }
            let inputs = vec![(name, part.clone())];
            let later = self
                .catalog
                .partitions(&part.stream, &part.track)
                .find(|view| view.track() == &part.track)
                .map(|view| later_axes(&view.live_segments(), &inputs))
                .unwrap_or_default();
            return Some(Pick {
                stream: part.stream.clone(),
                track: part.track.clone(),
                inputs,
                later,
            });
        }
        None
    }
}

/// What a compaction step reads, from the view it was picked in: run on `Served`'s worker.
impl View {
    /// The picked segments' partitions, opened and checked against the catalog and the
    /// declaration (the columns a merge moves are the declared ones, of the declared kinds).
    fn merge_inputs(&self, pick: &Pick) -> Result<Vec<MergeInput>, EngineError> {
        let decl = self.declaration(&pick.stream)?;
        let declared: Vec<(u16, u8)> = decl
            .stored()
            .into_iter()
            .map(|f| (f, decl.fields[usize::from(f)].kind.code()))
            .collect();
        let mut inputs = Vec::with_capacity(pick.inputs.len());
        let view = self
            .catalog
            .partitions(&pick.stream, &pick.track)
            .find(|view| view.track() == &pick.track)
            .ok_or_else(|| EngineError::Internal {
                reason: format!(
                    "a merge picked {:?} of {:?}, which has no live segment",
                    pick.track, pick.stream
                ),
            })?;
        for (name, entry) in &pick.inputs {
            let (reader, part_idx) = self.partition_in(&view, *name, &pick.stream)?;
            self.check_partition(&reader, part_idx, entry)?;
            let info = &reader.partitions()[part_idx];
            if info.columns != declared {
                return Err(unreadable(SegmentError::mismatch(
                    reader.path(),
                    format!(
                        "partition {:?} stores columns {:?} where the declaration has {declared:?}",
                        pick.track, info.columns
                    ),
                )));
            }
            let stored_from = info.stored_from;
            inputs.push(MergeInput {
                reader,
                part_idx,
                entry: entry.clone(),
                whole_from: (stored_from < entry.n_levels).then_some(stored_from),
            });
        }
        Ok(inputs)
    }

    /// Streams the merged partition to `sink` as one segment: the inputs' rows (packed chunks
    /// moved as they are, `SegmentWriter::write_merged_rows`), then its levels, chosen knowing
    /// what the rows cost. Answers the summary and the output's rows.
    fn write_merged<S: SegmentSink>(
        &self,
        pick: &Pick,
        inputs: &[MergeInput],
        sink: S,
    ) -> Result<(SegmentSummary, u64), MergeFailure> {
        let mut writer = SegmentWriter::to_sink(sink)
            .map_err(MergeFailure::Write)?
            .packing(self.config.pack_columns);
        let sources: Vec<MergeSource<'_, Mapped>> = inputs
            .iter()
            .map(|input| MergeSource {
                reader: &input.reader,
                part_idx: input.part_idx,
            })
            .collect();
        let rows = writer.write_merged_rows(&sources)?;
        let (stored_from, levels) = self
            .merge_levels(pick, inputs, rows.column_bytes)
            .map_err(MergeFailure::Read)?;
        if let (false, Some([_, hi])) =
            (levels.is_empty(), inputs.last().and_then(|i| i.entry.axis))
        {
            let ladder = ladder_of(self.declaration(&pick.stream).map_err(MergeFailure::Read)?);
            let top = levels[0].levels.len() - 1;
            let top = u8::try_from(top).expect("at most 65 levels");
            let seams = output_seams(inputs, &ladder, stored_from).map_err(MergeFailure::Read)?;
            let chained_from = chained_from_of(pick, &ladder, hi, top);
            writer
                .write_folding(&seams, chained_from)
                .map_err(MergeFailure::Write)?;
        }
        writer
            .write_cells(&field_cells(&levels), stored_from)
            .map_err(MergeFailure::Write)?;
        let (summary, _) = writer.finish_streamed().map_err(MergeFailure::Write)?;
        Ok((summary, rows.n_rows))
    }

    /// Every level the output stores, per measured field: each input's cells of that level
    /// (folded from its rows where it does not store the level, and lifted from its top cell
    /// above its top, as a read has them), merged oldest first. That is exactly what a read of
    /// the inputs merged, so the output answers alike.
    ///
    /// Under `LevelStorage::Adaptive` the output stores levels whole from the lowest level its
    /// own rows pay for (`ladder::stored_from`: the cells counted from what the inputs store,
    /// [`merged_cell_counts`], against `column_bytes`), or from where its largest input stores them if that
    /// is lower (never dropping the levels the bulk of its rows kept). A bigger file pays for
    /// finer levels than the barriers it merges (whose few rows also pay for their top cells),
    /// and surveys answer from those: a merge folds the rows of the inputs that store only
    /// coarser levels (barriers, mostly, decoded once per field), and an input that stored finer
    /// levels than the output keeps its cells there as stored cells of the output
    /// ([`merged_cells_differing`]), so nothing it stored is lost. (From the lowest level any
    /// input stores, as before #30, a small input that chose a finer level had every big one
    /// decoded and the output store that level over all of them.)
    fn merge_levels(
        &self,
        pick: &Pick,
        inputs: &[MergeInput],
        column_bytes: u64,
    ) -> Result<(u8, Vec<FieldLevels>), EngineError> {
        let decl = self.declaration(&pick.stream)?;
        let (Some([lo, _]), Some([_, hi])) = (
            inputs.first().and_then(|i| i.entry.axis),
            inputs.last().and_then(|i| i.entry.axis),
        ) else {
            return Ok((0, Vec::new()));
        };
        let n_with_levels = inputs.iter().filter(|i| i.entry.n_levels > 0).count();
        if n_with_levels == 0 {
            return Ok((0, Vec::new()));
        }
        if n_with_levels != inputs.len() {
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
        let measured: Vec<(u16, NumKind)> = decl
            .measured()
            .into_iter()
            .filter_map(|f| Some((f, num_kind(decl.fields[usize::from(f)].kind)?)))
            .collect();
        let from = match self.config.level_storage {
            LevelStorage::Whole => 0,
            LevelStorage::Adaptive => {
                let counts = merged_cell_counts(inputs, &ladder, top, measured[0].0)?;
                let own = stored_from(
                    &counts,
                    top,
                    measured.len() as u64,
                    column_bytes,
                    inputs.iter().map(|i| i.entry.n_rows).sum(),
                    self.config.pack_columns,
                );
                let largest = inputs.iter().max_by_key(|i| i.entry.n_rows);
                largest
                    .and_then(|i| i.whole_from)
                    .map_or(own, |w| own.min(w))
            }
        };
        let chained_from = chained_from_of(pick, &ladder, hi, top);
        let pieces: Vec<Pieces> = if from > 0 {
            inputs.iter().map(Pieces::of).collect::<Result<_, _>>()?
        } else {
            Vec::new()
        };
        let mut fields = Vec::new();
        for (field, kind) in measured {
            let mut levels = Vec::with_capacity(usize::from(top) + 1);
            let mut edges: Vec<Edges> = inputs
                .iter()
                .map(|_| Edges::new(from.min(top + 1).saturating_sub(1)))
                .collect();
            for level in 0..from.min(top + 1) {
                levels.push(merged_cells_differing(
                    pick,
                    inputs,
                    &pieces,
                    &mut edges,
                    &ladder,
                    field,
                    level,
                    chained_from,
                )?);
            }
            // Each input's rows, decoded once for all the levels it does not store.
            let mut rows: Vec<Option<FoldRows>> = inputs.iter().map(|_| None).collect();
            for level in from..=top {
                let links = merged_links(inputs, &ladder, field, level, &mut rows)?;
                levels.push(merge_links(&links, |index| {
                    pick.shares(&ladder, level, index, top)
                }));
            }
            fields.push(FieldLevels {
                field,
                kind,
                levels,
            });
        }
        Ok((from, fields))
    }
}

impl Store {
    /// Removes the inputs (of a merge, or segments a trim retired) the durable record left
    /// wholly retired, then syncs `seg/` so that a crash does not bring them back (boot would
    /// remove them again, but report them); answers them. One a snapshot taken before the
    /// record, or a reader in another process that has not read the record, may still read is
    /// queued instead, and removed once nothing can (`snapshot.rs`). A failure poisons the store, and nothing is retried: boot removes what
    /// is left.
    pub(crate) fn remove_retired(
        &mut self,
        inputs: &[FileName],
    ) -> Result<Vec<FileName>, EngineError> {
        let retired: Vec<FileName> = inputs
            .iter()
            .copied()
            .filter(|&input| self.catalog.is_retired(input))
            .collect();
        // Queued, then removed at once if nothing can read them (no snapshot older than this
        // version, no reader in another process behind this frame): `snapshot.rs`.
        for &input in &retired {
            self.defer_removal(input);
        }
        self.remove_unpinned()?;
        Ok(retired)
    }

    /// Removes segments `names` and lets go of their readers, then syncs `seg/`
    /// ([`remove_segments`]). A failure poisons the store.
    pub(crate) fn remove_files(&mut self, names: &[FileName]) -> Result<(), EngineError> {
        self.evict_readers(names);
        let vfs = Arc::clone(&self.vfs);
        remove_segments(vfs.as_ref(), names).map_err(|error| self.poison(error))
    }
}

/// A compaction step planned ([`Store::start_compaction`]): the pick, the output's name, a
/// snapshot of the version the pick was made from (to read the inputs, which no removal can
/// take meanwhile) and the manifest's writer. [`Merging::run`] merges, writes and claims it,
/// touching nothing of the store, so that `Served` runs it on its worker.
pub(crate) struct Merging {
    snapshot: View,
    pick: Pick,
    name: FileName,
    manifest: ManifestWriter,
    version: u64,
}

/// Why a step failed, which decides what the store does about it.
pub(crate) enum MergeError {
    /// Reading an input failed before anything was written: the store is as it was.
    Read(EngineError),
    /// A write, sync or append failed, or the step's own record was refused (our bug, caught
    /// before anything was claimed; poisoned rather than retried, since the next pick would
    /// write the same output again): the store is poisoned.
    Poisons(EngineError),
}

/// What a step's writes came to ([`Merging::run`]).
pub(crate) struct MergeDone {
    /// The catalog version claiming the output, its bytes and its rows.
    outcome: Result<(Catalog, u64, u64), MergeError>,
    pick: Pick,
    name: FileName,
    manifest: ManifestWriter,
    version: u64,
}

impl std::fmt::Debug for Merging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Merging")
            .field("stream", &self.pick.stream)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for MergeDone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeDone")
            .field("ok", &self.outcome.is_ok())
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Merging {
    /// Merges the picked inputs (read through the snapshot), writes the output two-phase and
    /// appends the record that claims it. The snapshot is let go before this returns, so the
    /// inputs the record retires can be removed at once.
    pub(crate) fn run(mut self) -> MergeDone {
        let outcome = self.write();
        MergeDone {
            outcome,
            pick: self.pick,
            name: self.name,
            manifest: self.manifest,
            version: self.version,
        }
    }

    fn write(&mut self) -> Result<(Catalog, u64, u64), MergeError> {
        let snapshot = &self.snapshot;
        let pick = &self.pick;
        let name = self.name;
        let inputs = snapshot.merge_inputs(pick).map_err(MergeError::Read)?;
        let mut input_names: Vec<FileName> = pick.inputs.iter().map(|&(input, _)| input).collect();
        input_names.sort_unstable();
        // A handle of its own, so the synced temp does not borrow the snapshot.
        let vfs = Arc::clone(&snapshot.vfs);
        let input_bytes = pick.inputs.iter().map(|(_, e)| e.len).sum::<u64>();
        let record = |summary: &SegmentSummary| Record {
            entries: vec![
                Entry::Merge {
                    file: summary.claim(name),
                    inputs: input_names,
                },
                Entry::NameHigh(name),
            ],
        };
        let write = |sink: FileSink<'_>| {
            // The inputs are let go once the output is written, before it is synced.
            let inputs = inputs;
            match snapshot.write_merged(pick, &inputs, sink) {
                Ok(written) => Ok(written),
                Err(MergeFailure::Read(error)) => Err(Ok(error)),
                Err(MergeFailure::Write(source)) => Err(Err(source)),
            }
        };
        let committed = write_and_claim(
            vfs.as_ref(),
            &mut self.manifest,
            &snapshot.catalog,
            name,
            usize::try_from(input_bytes).unwrap_or(usize::MAX),
            write,
            record,
        );
        let (catalog, summary, n_rows) = committed.map_err(|error| match error {
            // Nothing was claimed, and the store is as it was.
            Committing::Content(error) => MergeError::Read(error),
            Committing::Write(error) | Committing::Claim { error, .. } => {
                MergeError::Poisons(EngineError::write(error))
            }
            Committing::Refused(reason) => MergeError::Poisons(EngineError::Internal {
                reason: format!("a compaction's own record was refused: {reason}"),
            }),
        })?;
        Ok((catalog, summary.len, n_rows))
    }
}

/// How many cells the output of merging `inputs` holds at each level to `top`, or more (never
/// fewer, so that the levels `stored_from` chooses by them cost no more than it reckons): at a
/// level an input stores, its stored cells (decoding nothing); above its top, its one cell;
/// beneath its lowest stored level, as many as its rows, or as its axis range spans cells,
/// whichever is fewer (exact for a regular axis); less the cells two consecutive inputs share.
/// Counting the inputs' axes row by row, as before, decoded every row of every merge for this
/// alone: a tenth of what compaction cost an ingest.
fn merged_cell_counts(
    inputs: &[MergeInput],
    ladder: &Ladder,
    top: u8,
    field: u16,
) -> Result<Vec<u64>, EngineError> {
    let mut counts = vec![0u64; usize::from(top) + 1];
    let mut before: Option<u64> = None;
    for input in inputs {
        let Some([lo, hi]) = input.entry.axis else {
            continue;
        };
        let stored = input
            .reader
            .stored_cell_counts(input.part_idx, field)
            .map_err(unreadable)?;
        let stored_from = input.reader.partitions()[input.part_idx].stored_from;
        for (level, count) in (0..=top).zip(counts.iter_mut()) {
            let [first, last] = [ladder.cell(lo, level), ladder.cell(hi, level)];
            let own = match stored.get(usize::from(level)) {
                None => 1,
                Some(&n) if level >= stored_from => n,
                Some(_) => input.entry.n_rows.min((last - first).saturating_add(1)),
            };
            let shared = before.is_some_and(|b| ladder.cell(b, level) == first);
            *count += own - u64::from(shared && own > 0);
        }
        before = Some(hi);
    }
    // Every merge a debug build runs (the property tests' generated spacings, gaps and
    // repeats among them) checks the reckoning against the cells the rows make.
    #[cfg(debug_assertions)]
    {
        let mut counter = strata_levels::CellCounter::new(*ladder);
        for input in inputs {
            if let Some(axis) = input.reader.axis(input.part_idx).map_err(unreadable)? {
                axis.uncached()
                    .for_each_chunk(|values| counter.feed(values))
                    .map_err(unreadable)?;
            }
        }
        let exact = counter.counts(top);
        assert!(
            exact.iter().zip(&counts).all(|(e, c)| e <= c),
            "merged cells reckoned {counts:?}, fewer than the rows make: {exact:?}"
        );
    }
    Ok(counts)
}

/// Every input's cells of `level`, as a read has them ([`cells_in`]: folded from its rows where
/// it does not store the level, lifted from its top above it, chains as stored), the inputs
/// oldest first: ascending by index but for the cells two inputs share, which follow one another
/// in input order. An input's rows are decoded at most once (`rows`, one entry an input) for
/// every level it folds.
fn merged_links(
    inputs: &[MergeInput],
    ladder: &Ladder,
    field: u16,
    level: u8,
    rows: &mut [Option<FoldRows>],
) -> Result<Vec<Cell>, EngineError> {
    let mut links = Vec::new();
    for (input, rows) in inputs.iter().zip(rows) {
        let stored_from = input.reader.partitions()[input.part_idx].stored_from;
        if level.min(input.entry.n_levels - 1) < stored_from && rows.is_none() {
            *rows = Some(file_rows(
                &input.reader,
                input.part_idx,
                ladder,
                field,
                [0, u64::MAX],
                false,
            )?);
        }
        links.extend(input.cells(ladder, field, level, [0, u64::MAX], rows.as_ref())?);
    }
    // Within a partition the axis never goes backwards, so this only checks; a stable sort
    // keeps input order among equal indexes whatever the inputs held.
    links.sort_by_key(|c| c.index);
    Ok(links)
}

/// The cells of `level` (one the output does not store whole) where a read of the output
/// folding the level from its rows (`survey::fold_decoded`: the pieces between its seams,
/// merged newest first but for its chained last cell) would not be the read of the inputs,
/// and so are stored, as that read (`merge_links`, a cell or a chain), in its place:
///
/// - a cell an input stored beneath its own `stored_from` (where its own merge met such a
///   case, or a merge of a build before seams, segment format 6);
/// - a cell shared by two inputs in which an input other than the last holds several
///   pieces merged into one (its own merge's cell, grouped `(p1 + p2) + ..` where the
///   output's pieces would fold `p1 + (p2 + ..)`), or, where the output keeps the cell as
///   a chain, any input does.
///
/// Anywhere else the inputs' pieces fold exactly as they were read, so nothing is decoded
/// to decide it: whether a cell holds several pieces of an input follows from its seams
/// and the axis before its last seam ([`Pieces`]).
#[expect(
    clippy::too_many_arguments,
    reason = "the merge, its inputs with their pieces and edges, the grid, and which cells: a struct of them would only rename them"
)]
fn merged_cells_differing(
    pick: &Pick,
    inputs: &[MergeInput],
    pieces: &[Pieces],
    edges: &mut [Edges],
    ladder: &Ladder,
    field: u16,
    level: u8,
    chained_from: Option<u8>,
) -> Result<Vec<Cell>, EngineError> {
    let (Some([lo, _]), Some([_, hi])) = (
        inputs.first().and_then(|i| i.entry.axis),
        inputs.last().and_then(|i| i.entry.axis),
    ) else {
        return Ok(Vec::new());
    };
    let top = ladder.top_level(lo, hi);
    let cell = |axis: u64| ladder.cell(axis, level);
    let mut candidates = std::collections::BTreeSet::new();
    for input in inputs {
        let input_top = input.entry.n_levels - 1;
        let stored = input
            .reader
            .cells_uncached(input.part_idx, field, level.min(input_top), 0..=u64::MAX)
            .map_err(unreadable)?;
        let up = level.saturating_sub(input_top);
        candidates.extend(stored.iter().map(|c| lift_index(ladder, c.index, up)));
    }
    let out_last = cell(hi);
    let out_chains = chained_from.is_some_and(|from| level >= from);
    let mut shared: Vec<u64> = inputs
        .windows(2)
        .filter_map(|pair| {
            let ([_, before], [after, _]) = (pair[0].entry.axis?, pair[1].entry.axis?);
            (cell(before) == cell(after)).then(|| cell(before))
        })
        .collect();
    if out_chains {
        shared.push(out_last);
    }
    for index in shared {
        let over: Vec<usize> = (0..inputs.len())
            .filter(|&i| {
                inputs[i]
                    .entry
                    .axis
                    .is_some_and(|[a, b]| cell(a) <= index && index <= cell(b))
            })
            .collect();
        let last = over.last().copied();
        let regrouped = over.iter().any(|&i| {
            (Some(i) != last || (out_chains && index == out_last))
                && pieces[i].merged_in(&inputs[i], ladder, level, index)
        });
        if regrouped {
            candidates.insert(index);
        }
    }
    let mut differing = Vec::new();
    for index in candidates {
        // The read of the inputs: their cells of this index, oldest first, folded newest
        // first, each merged in front; or kept as they are where a later segment's cell
        // will be folded in behind them.
        let links = links_at(inputs, edges, ladder, field, level, index)?;
        differing.extend(merge_links(&links, |i| pick.shares(ladder, level, i, top)));
    }
    Ok(differing)
}

/// The cells of `level` with index `index` of every input whose rows reach it, as a read has
/// them ([`cells_in`]), the inputs oldest first. `edges` holds, per input, the rows of its
/// first and last cell of the level beneath the output's `stored_from` (decoded once for all
/// the cells asked of it).
fn links_at(
    inputs: &[MergeInput],
    edges: &mut [Edges],
    ladder: &Ladder,
    field: u16,
    level: u8,
    index: u64,
) -> Result<Vec<Cell>, EngineError> {
    let Some([lo, hi]) = ladder.span(level, index) else {
        return Ok(Vec::new());
    };
    let mut links = Vec::new();
    for (input, edges) in inputs.iter().zip(edges) {
        let reaches = input.entry.axis.is_some_and(|[a, b]| a <= hi && b >= lo);
        if !reaches {
            continue;
        }
        // A cell the input stores at this index is its read (stored whole, or in place of the
        // fold beneath its `stored_from`): no row of it need be decoded. A read of the output
        // checks it against the rows as it checked it in the input.
        if level < input.entry.n_levels {
            let stored = input
                .reader
                .cells_uncached(input.part_idx, field, level, index..=index)
                .map_err(unreadable)?;
            if !stored.is_empty() {
                links.extend(stored);
                continue;
            }
            // Folded from its rows: the cell holds its first or its last rows (it reaches
            // another input's, or holds the input whole), which its edges hold.
            if let Some(rows) = edges.rows(input, ladder, field, [lo, hi])? {
                links.extend(fold_decoded(ladder, field, level, &rows));
                continue;
            }
        }
        links.extend(input.cells(ladder, field, level, [index, index], None)?);
    }
    Ok(links)
}

/// An input's rows at its two ends, decoded once for every cell a merge folds there: the rows
/// of the cell of level `level` holding its first row, and of the one holding its last.
struct Edges {
    level: u8,
    first: Option<FoldRows>,
    last: Option<FoldRows>,
}

impl Edges {
    fn new(level: u8) -> Edges {
        Edges {
            level,
            first: None,
            last: None,
        }
    }

    /// `input`'s rows with axis in `[lo, hi]` (a cell of a level at most `self.level`), if
    /// they lie in one of its edge cells; decoding the edge the first time it is asked.
    fn rows(
        &mut self,
        input: &MergeInput,
        ladder: &Ladder,
        field: u16,
        [lo, hi]: [u64; 2],
    ) -> Result<Option<FoldRows>, EngineError> {
        let Some([first, last]) = input.entry.axis else {
            return Ok(None);
        };
        for (end, slot) in [(first, &mut self.first), (last, &mut self.last)] {
            let Some(edge) = ladder.span(self.level, ladder.cell(end, self.level)) else {
                continue;
            };
            if edge[0] <= lo && hi <= edge[1] {
                if slot.is_none() {
                    *slot = Some(file_rows(
                        &input.reader,
                        input.part_idx,
                        ladder,
                        field,
                        edge,
                        false,
                    )?);
                }
                return Ok(slot.as_ref().map(|rows| rows.within([lo, hi])));
            }
        }
        Ok(None)
    }
}

/// What a merge needs to know of an input's pieces (the barriers merged into it, parted by its
/// seams) at a level it folds from its rows: whether it has seams, and the axis of the row
/// before its last one (so whether a cell holding its last row holds several of its pieces).
struct Pieces {
    has_seams: bool,
    before_last_seam: Option<u64>,
}

impl Pieces {
    /// Reads them off `input`'s seams, decoding at most the one axis chunk holding the row
    /// before its last seam.
    fn of(input: &MergeInput) -> Result<Pieces, EngineError> {
        let seams = input.reader.seams(input.part_idx).map_err(unreadable)?;
        let Some(last) = seams.last() else {
            return Ok(Pieces {
                has_seams: false,
                before_last_seam: None,
            });
        };
        // A seam lies inside the rows (checked with its block), so the row before it exists.
        let row = usize::try_from(last.get() - 1).unwrap_or(usize::MAX);
        let before = match input.reader.axis(input.part_idx).map_err(unreadable)? {
            Some(axis) if row < axis.len() => axis
                .values(row..row + 1)
                .map_err(unreadable)?
                .first()
                .copied(),
            _ => None,
        };
        Ok(Pieces {
            has_seams: true,
            before_last_seam: before,
        })
    }

    /// Whether `input`'s cell `index` of `level` holds several of its pieces merged into one
    /// (rather than one piece, or a chain of them): a merge of it would regroup them.
    fn merged_in(&self, input: &MergeInput, ladder: &Ladder, level: u8, index: u64) -> bool {
        let Some([lo, hi]) = input.entry.axis else {
            return false;
        };
        if !self.has_seams {
            return false;
        }
        let chained_from = input.reader.partitions()[input.part_idx].chained_from;
        let its_last = ladder.cell(hi, level) == index;
        if its_last && chained_from.is_some_and(|from| level >= from) {
            return false;
        }
        if !its_last || ladder.cell(lo, level) == index {
            // Wholly inside the cell, with seams: several pieces. (A cell holding an input's
            // first rows and not its last is never asked of an input other than the last.)
            return true;
        }
        // The cell holds the input's last rows: several pieces iff the row before its last
        // seam is among them.
        self.before_last_seam
            .is_none_or(|axis| ladder.cell(axis, level) == index)
    }
}

/// From which level the output's cell holding its last row is a chain of its pieces where it
/// folds a level from its rows: where the merge keeps it as a chain ([`Pick::shares`]), from the
/// level whose cell holds both its last row and the first of the segment after it, and at its
/// top (which reads lift to every level above it); never, for a merge of the newest segments.
fn chained_from_of(pick: &Pick, ladder: &Ladder, hi: u64, top: u8) -> Option<u8> {
    let next = pick.later.iter().map(|&[lo, _]| lo).min()?;
    Some(ladder.shared_level(hi, next).min(top))
}

/// The output's seams: each input's own, and the row where each input after the first begins,
/// wherever a level the output folds from its rows (one beneath `from`) has a cell on both
/// sides of it (the inputs' own seams were kept on the same rule for a `from` at least as
/// high, and cost a `u64` each, so they are kept as they are).
fn output_seams(inputs: &[MergeInput], ladder: &Ladder, from: u8) -> Result<Vec<u64>, EngineError> {
    let mut seams = Vec::new();
    let mut start = 0u64;
    let mut last_axis: Option<u64> = None;
    for input in inputs {
        if let (Some(before), Some([first, _])) = (last_axis, input.entry.axis)
            && ladder.shared_level(before, first) < from
        {
            seams.push(start);
        }
        let own = input.reader.seams(input.part_idx).map_err(unreadable)?;
        seams.extend(own.iter().map(|s| start + s.get()));
        start += input.entry.n_rows;
        last_axis = input.entry.axis.map(|[_, hi]| hi);
    }
    Ok(seams)
}
