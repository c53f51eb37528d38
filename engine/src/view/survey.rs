//! Display reads and statistics from the level ladder: `survey` (point-budgeted buckets) and
//! `fold` (one statistic per measured field).
//!
//! Both read stored cells only (percentiles excepted, which read the raw rows of the exact
//! range). A file is pruned by the axis range the manifest records for it, so no segment outside
//! the asked span is opened.

use std::ops::RangeBounds;
use std::sync::atomic::Ordering;

use serde::Serialize;
use strata_index::{FileName, PartitionEntry, StreamDecl, Tier, TrackKey};
use strata_levels::{
    Aggregate, Bucket, Cell, LEVELS_MAX, Ladder, Num, NumKind, Plan, plan, plan_with,
};
use strata_segment::vfs::Mapped;
use strata_segment::{Decoded, SegmentError, SegmentReader};

use crate::error::EngineError;
use crate::ladder::{ladder_of, num_kind};
use crate::view::View;
use crate::view::cells::{
    CellRun, Descending, FoldRows, cells_in, file_rows, merge_runs, regroup, rows_in,
};
use crate::view::floors::LevelFloors;
use crate::view::floors::beneath;
use crate::view::narrow::Reach;
use crate::view::open_segments::OpenSegment;
use crate::view::read::{highest, inclusive, lowest, refuse_inverted, unreadable};

/// One measured field's buckets, ascending by `first.axis`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldBuckets {
    /// The field's name.
    pub field: String,
    /// Its buckets: whole cells of the answering level, in axis order.
    pub buckets: Vec<Bucket>,
}

/// A budgeted display read: buckets grouped by field in declaration order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Survey {
    /// The level whose cells answer: the finest that fits the budget, or, with
    /// `SurveyFill::Spend`, a finer one whose cells are grouped.
    pub level: u8,
    /// Adjacent cells of `level` merged per answer bucket, anchored at 0 (cell `c` joins
    /// group `c / group`; 1: none merge).
    pub group: u128,
    /// The axis span answered: an end the read bounded as it was asked, an unbounded end
    /// clamped to the rows recorded. The span sets the grid: a survey of `0..=u64::MAX` over
    /// a day of data answers one bucket, as a chart of that viewport would draw it, where
    /// `..` answers the budget's worth over the day (docs/embedding.md, *Reads*).
    pub span: Option<[u64; 2]>,
    /// One entry per measured field, in declaration order.
    pub fields: Vec<FieldBuckets>,
}

/// One statistic of one measured field.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldStat {
    /// The field's name.
    pub field: String,
    /// The statistic; `None` when the range holds no rows (a `count` of no rows is `0`).
    pub value: Option<Num>,
}

impl View {
    /// Buckets of every measured field of `stream` under `selection` over the axis range, at the
    /// finest level whose cells over the span fit `budget` points (4 points a bucket), or as
    /// `Config::survey_fill` chooses. Whole cells answer, so a boundary bucket may fold rows
    /// just outside the range. The budget is a ceiling and is never exceeded. A bounded end
    /// is the span asked (a chart's viewport, whose buckets must map to its pixels whatever
    /// the data covers); an unbounded end is clamped to the rows recorded, so `..` surveys
    /// the data ([`Survey::span`] says which span answered).
    pub fn survey(
        &self,
        stream: &str,
        selection: &[&str],
        axis: impl RangeBounds<u64>,
        budget: u64,
    ) -> Result<Survey, EngineError> {
        let (decl, prefix) = self.axial(stream, selection)?;
        refuse_inverted(&axis, Reach::LevelAxis)?;
        let measured = decl.measured();
        let ladder = ladder_of(decl);
        // An unbounded start asks from the origin: beneath any floor above it, though the
        // range is clamped to what the live segments record.
        let from_origin = matches!(axis.start_bound(), std::ops::Bound::Unbounded);
        let asked = asked_span(&axis);
        let live = self.catalog.axis_range(stream, &prefix);
        let clamped = self.clamp(stream, &prefix, live, axis);
        // Where nothing live lies in the range, it may still reach beneath a floor: checked
        // over the range as asked, never answered empty beneath one.
        let level_floors = self.level_floors(stream, &prefix, &ladder);
        let check = clamped.or(asked.filter(|_| level_floors.any()));
        let Some([lo, hi]) = check else {
            // Nothing recorded (or an empty range): still refuse a budget that buys nothing.
            strata_levels::cells_per_field(budget, measured.len()).map_err(budget_error)?;
            let fields = measured
                .iter()
                .map(|&f| FieldBuckets {
                    field: field_name(decl, f),
                    buckets: Vec::new(),
                })
                .collect();
            return Ok(Survey {
                level: 0,
                group: 1,
                span: None,
                fields,
            });
        };
        let start = if from_origin { 0 } else { lo };
        let n_fields = measured.len();
        let plan =
            match self.survey_level(&level_floors, &ladder, [lo, hi], start, budget, n_fields)? {
                Ok(plan) => plan,
                Err(floor) => {
                    return Err(self.beneath_floor(
                        stream,
                        &prefix,
                        floor,
                        Reach::LevelAxis,
                        |key, span| {
                            let floors = self.level_floors(stream, key, &ladder);
                            self.survey_level(&floors, &ladder, span, span[0], budget, n_fields)
                                .ok()?
                                .err()
                        },
                    ));
                }
            };
        if clamped.is_none() {
            // Nothing live in the range, and nothing of it beneath a floor: no buckets.
            return Ok(Survey {
                level: 0,
                group: 1,
                span: None,
                fields: measured
                    .iter()
                    .map(|&f| FieldBuckets {
                        field: field_name(decl, f),
                        buckets: Vec::new(),
                    })
                    .collect(),
            });
        }
        let cells = [ladder.cell(lo, plan.level), ladder.cell(hi, plan.level)];
        // Every field's cells in one pass over the files: each file is resolved once.
        let runs: Vec<CellRun> = measured
            .iter()
            .map(|&field| CellRun {
                field,
                level: plan.level,
                cells,
            })
            .collect();
        let merged = self.selection_cells(stream, &prefix, &ladder, &runs)?;
        let mut fields = Vec::with_capacity(measured.len());
        for (&field, cells) in measured.iter().zip(merged) {
            let buckets = regroup(cells, plan.group);
            debug_assert!(buckets.len() as u64 <= plan.cells_per_field);
            fields.push(FieldBuckets {
                field: field_name(decl, field),
                buckets,
            });
        }
        Ok(Survey {
            level: plan.level,
            group: plan.group,
            span: Some([lo, hi]),
            fields,
        })
    }

    /// The plan that answers a survey over `span` from `start` with `level_floors` in force,
    /// or the floor it is refused at. First the plan `Config::survey_fill` asks for; a spent
    /// plan whose level is retired beneath `start` gives way to the finest-level plan, which is
    /// then answered or refused on the floors exactly as the contract's rule does (never a short
    /// answer): moved to the finest level at or above it whose cells are whole from `start`
    /// (fewer, coarser cells fit the budget too), so a survey is never refused on a floor a
    /// level that outlives the finer ones still holds; refused with the least floor of those
    /// levels when none is.
    fn survey_level(
        &self,
        level_floors: &LevelFloors,
        ladder: &Ladder,
        span: [u64; 2],
        start: u64,
        budget: u64,
        n_fields: usize,
    ) -> Result<Result<Plan, u64>, EngineError> {
        let finest = plan(ladder, LEVELS_MAX, span, budget, n_fields).map_err(budget_error)?;
        let chosen = plan_with(
            self.config.survey_fill,
            ladder,
            LEVELS_MAX,
            span,
            budget,
            n_fields,
        )
        .map_err(budget_error)?;
        let retired = |level: u8| level_floors.at(level).is_some_and(|f| beneath(start, f));
        let mut plan = if chosen != finest && retired(chosen.level) {
            finest
        } else {
            chosen
        };
        if !level_floors.any() {
            return Ok(Ok(plan));
        }
        Ok(
            match (plan.level..=LEVELS_MAX).find(|&level| !retired(level)) {
                Some(level) => {
                    if level != plan.level {
                        plan.level = level;
                        plan.group = 1;
                    }
                    Ok(plan)
                }
                None => Err((plan.level..=LEVELS_MAX)
                    .filter_map(|level| level_floors.at(level))
                    .min()
                    .unwrap_or(u64::MAX)),
            },
        )
    }

    /// One statistic per measured field over the axis range. Level folds (`min max mean sum
    /// count`) come from stored cells covering the whole cells the range touches, reading
    /// O(levels x fanout) cells however long the range; percentiles scan the raw rows of the
    /// exact range (nearest rank).
    pub fn fold(
        &self,
        stream: &str,
        selection: &[&str],
        axis: impl RangeBounds<u64>,
        aggregate: Aggregate,
    ) -> Result<Vec<FieldStat>, EngineError> {
        let (decl, prefix) = self.axial(stream, selection)?;
        refuse_inverted(&axis, Reach::LevelAxis)?;
        if decl.measured().is_empty() {
            // An empty answer would read as "no rows"; `survey` refuses such a stream too.
            return Err(EngineError::BadRead {
                reason: format!(
                    "stream {stream:?} has no measured field to fold (a numeric field that is \
                     neither the axis nor a track field)"
                ),
            });
        }
        let ladder = ladder_of(decl);
        let from_origin = matches!(axis.start_bound(), std::ops::Bound::Unbounded);
        let asked = asked_span(&axis);
        let live = self.catalog.axis_range(stream, &prefix);
        let clamped = self.clamp(stream, &prefix, live, axis);
        let level_floors = self.level_floors(stream, &prefix, &ladder);
        // Where nothing live lies in the range, it may still reach beneath a floor: checked
        // over the range as asked, never answered empty beneath one.
        let check =
            clamped.or(asked.filter(|_| self.catalog.floors(stream, &prefix).next().is_some()));
        // A percentile reads raw rows: a range reaching beneath the raw floor's axis value of
        // any partition it covers is refused whole. Level folds read levels, which trim_to
        // keeps, so they answer beneath it.
        if let (Some([lo, _]), false) = (check, aggregate.folds_levels()) {
            let start = if from_origin { 0 } else { lo };
            self.refuse_beneath_raw_axis(stream, &prefix, start)?;
        }
        if let (Some([lo, hi]), true) = (check, aggregate.folds_levels())
            && let Some(floor) = fold_floor(&level_floors, &ladder, [lo, hi], from_origin)
        {
            return Err(self.beneath_floor(
                stream,
                &prefix,
                floor,
                Reach::LevelAxis,
                |key, span| {
                    fold_floor(
                        &self.level_floors(stream, key, &ladder),
                        &ladder,
                        span,
                        false,
                    )
                },
            ));
        }
        let measured = decl.measured();
        let mut folded = match clamped {
            Some(span) if aggregate.folds_levels() => {
                let span = self.widened(stream, &prefix, live, span);
                self.folded_buckets(stream, &prefix, &ladder, &measured, span)?
            }
            _ => vec![None; measured.len()],
        }
        .into_iter();
        measured
            .into_iter()
            .map(|field| {
                let bucket = folded.next().flatten();
                let value = match clamped {
                    None => None,
                    Some(_) if aggregate.folds_levels() => {
                        bucket.and_then(|b| aggregate.folded(&b))
                    }
                    Some(span) => {
                        let mut values = self.raw_values(stream, &prefix, field, span)?;
                        aggregate.scanned(&mut values)
                    }
                };
                Ok(FieldStat {
                    field: field_name(decl, field),
                    value: value.or_else(|| aggregate.of_no_rows()),
                })
            })
            .collect()
    }

    /// The cells of `field` (by name) at `level` over the axis range, merged across the
    /// selection's partitions and files: what a stored level holds. Mostly for checking levels.
    pub fn level_cells(
        &self,
        stream: &str,
        selection: &[&str],
        field: &str,
        level: u8,
        axis: impl RangeBounds<u64>,
    ) -> Result<Vec<Cell>, EngineError> {
        let (decl, prefix) = self.axial(stream, selection)?;
        let field_idx = decl
            .measured()
            .into_iter()
            .find(|&f| decl.fields[usize::from(f)].name == field)
            .ok_or_else(|| EngineError::BadRead {
                reason: format!("{field:?} is not a measured field of {stream:?}"),
            })?;
        let ladder = ladder_of(decl);
        refuse_inverted(&axis, Reach::LevelAxis)?;
        let Some((lo, hi)) = inclusive(axis) else {
            return Ok(Vec::new());
        };
        let floor_at = |key: &TrackKey, start: u64| {
            self.level_floors(stream, key, &ladder)
                .at(level)
                .filter(|&floor| beneath(start, floor))
        };
        if let Some(floor) = floor_at(&prefix, lo) {
            return Err(self.beneath_floor(
                stream,
                &prefix,
                floor,
                Reach::LevelAxis,
                |key, [start, _]| floor_at(key, start),
            ));
        }
        let run = CellRun {
            field: field_idx,
            level,
            cells: [ladder.cell(lo, level), ladder.cell(hi, level)],
        };
        let merged = self.selection_cells(stream, &prefix, &ladder, &[run])?;
        Ok(merged.into_iter().next().unwrap_or_default())
    }

    fn axial(
        &self,
        stream: &str,
        selection: &[&str],
    ) -> Result<(&StreamDecl, TrackKey), EngineError> {
        let prefix = self.selected(stream, selection)?;
        let decl = self.declaration(stream)?;
        if decl.axis.is_none() {
            return Err(EngineError::BadRead {
                reason: format!(
                    "stream {stream:?} declares no axis; only an axial stream has levels"
                ),
            });
        }
        Ok((decl, prefix))
    }

    /// The asked range with unbounded ends clamped to the selection's recorded axis range
    /// `live` (`Catalog::axis_range`, no read); `None` if nothing is recorded or the range is
    /// empty.
    fn clamp(
        &self,
        stream: &str,
        prefix: &TrackKey,
        live: Option<[u64; 2]>,
        axis: impl RangeBounds<u64>,
    ) -> Option<[u64; 2]> {
        // Nothing live, but something retired (a track retired whole, say): the range as
        // asked, so that a read of it answers the floor rather than an empty answer.
        let retired = || {
            self.catalog
                .floors(stream, prefix)
                .next()
                .map(|_| [0, u64::MAX])
        };
        let [rec_lo, rec_hi] = live.or_else(retired)?;
        let lo = match axis.start_bound() {
            std::ops::Bound::Unbounded => rec_lo,
            start => lowest(start)?,
        };
        let hi = match axis.end_bound() {
            std::ops::Bound::Unbounded => rec_hi,
            end => highest(end)?,
        };
        (lo <= hi).then_some([lo, hi])
    }

    /// `[lo, hi]` for a level fold, an end widened to the axis's end where that adds no row:
    /// past the lowest (highest) axis value any live file of the selection holds (`live`,
    /// `Catalog::axis_range`), when the
    /// selection has no floor (so every stored cell holds only live files' rows). The fold then
    /// reads the few coarse cells that hold those rows instead of fine cells at that end,
    /// which a file whose levels are stored from a coarse level (packed columns) answers by
    /// folding up to a cell's worth of its rows. The answer folds the same rows: a fold of
    /// the whole range went from 13 µs to a few on a packed store (`cargo bench --bench survey
    /// -- packed_against_plain`); its sums add the same values grouped otherwise, so they may
    /// differ in the last bits from a fold of the narrower range.
    fn widened(
        &self,
        stream: &str,
        prefix: &TrackKey,
        live: Option<[u64; 2]>,
        [lo, hi]: [u64; 2],
    ) -> [u64; 2] {
        let Some([live_lo, live_hi]) = live else {
            return [lo, hi];
        };
        if self.catalog.floors(stream, prefix).next().is_some() {
            return [lo, hi];
        }
        [
            if lo <= live_lo { 0 } else { lo },
            if hi >= live_hi { u64::MAX } else { hi },
        ]
    }

    /// The cells each of `runs` asks for, merged: within a partition across its files oldest
    /// rows first, as a right fold (`s1 + (s2 + (.. + sn))`), then across partitions in
    /// track-key order, cell by cell. One answer per run, ascending by index.
    ///
    /// The right fold is what lets compaction merge the *newest* segments of a partition without
    /// changing an answer by a bit: an output merged from a suffix `sk..sn` holds exactly the
    /// inner term `sk + (.. + sn)`, so a read of `s1 .. sk-1, output` is the same expression. A
    /// left fold would be regrouped by such a merge, and an `f64` sum could round differently
    /// (docs/compaction.md). A merge behind the newest segments keeps the cells it shares with
    /// them as chains, and [`Descending::prepend`] folds a chain's links one by one, last first,
    /// so the expression is again the one before the merge.
    ///
    /// Files are visited once each, for every run at once: a file's reader is resolved (one
    /// lock of the reader cache) and its partition checked once, at the index the catalog
    /// records for it, never found by searching the file. Runs come back from a file sorted,
    /// so merging is a linear pass over two sorted runs, with no map per cell.
    fn selection_cells(
        &self,
        stream: &str,
        prefix: &TrackKey,
        ladder: &Ladder,
        runs: &[CellRun],
    ) -> Result<Vec<Vec<Cell>>, EngineError> {
        let spans: Vec<[u64; 2]> = runs
            .iter()
            .map(|run| {
                [
                    ladder
                        .span(run.level, run.cells[0])
                        .map_or(u64::MAX, |s| s[0]),
                    ladder
                        .span(run.level, run.cells[1])
                        .map_or(u64::MAX, |s| s[1]),
                ]
            })
            .collect();
        let mut merged: Vec<Vec<Cell>> = vec![Vec::new(); runs.len()];
        let mut partition: Vec<Descending> = vec![Descending::default(); runs.len()];
        let mut wanted: Vec<bool> = vec![false; runs.len()];
        let mut n_cells_read = 0u64;
        // One read lock over the cached readers for the whole read, rather than a lock and a
        // count taken and let go for each file: two threads reading one opening then share no
        // write to memory per file (#49). Let go only to open a reader missing from the cache;
        // nothing in the loop takes the lock again while it is held.
        let mut cached = self.open_readers();
        for view in self.catalog.partitions(stream, prefix) {
            // Without a level floor nothing retired a level tier here (a merge retires whole
            // segments, `trim_to` raw tiers only): the segments with a live level 0 are the
            // ones with every level live, already in order.
            let retired_levels = self
                .catalog
                .floors_of(stream, view.track())
                .is_some_and(|f| !f.levels.is_empty());
            let segments: Vec<(FileName, &PartitionEntry)> = if retired_levels {
                view.live_segments()
                    .into_iter()
                    .map(|(name, entry, _)| (name, entry))
                    .collect()
            } else {
                view.segments(Tier::Level(0)).collect()
            };
            for (name, entry) in segments.into_iter().rev() {
                let Some([axis_lo, axis_hi]) = entry.axis else {
                    continue;
                };
                if entry.n_levels == 0 {
                    continue;
                }
                // The tier that answers a run's level here: the level itself, or the
                // segment's top (whose single cell a read lifts) above it. Retired: beneath
                // the level's floor, which the read was checked against.
                for ((want, run), span) in wanted.iter_mut().zip(runs).zip(&spans) {
                    *want = axis_hi >= span[0]
                        && axis_lo <= span[1]
                        && view.is_live(name, Tier::Level(run.level.min(entry.n_levels - 1)));
                }
                if !wanted.contains(&true) {
                    continue;
                }
                let part_idx = view
                    .part_idx(name)
                    .expect("a live segment of a partition has its index");
                let opened = if self.is_cached(&cached, name) {
                    None
                } else {
                    drop(cached);
                    let opened = self.reader(name);
                    cached = self.open_readers();
                    Some(opened?)
                };
                let reader: &OpenSegment = match &opened {
                    Some(opened) => opened,
                    None => cached
                        .get_ref(name)
                        .expect("found under the read lock held since"),
                };
                self.check_partition(reader, part_idx, entry)?;
                let decoded = edge_rows(reader, part_idx, entry, ladder, runs, &spans, &wanted)?;
                for (i, run) in runs.iter().enumerate() {
                    if !wanted[i] {
                        continue;
                    }
                    let rows = decoded
                        .iter()
                        .find(|(field, [lo, hi], _)| {
                            *field == run.field && *lo <= spans[i][0] && spans[i][1] <= *hi
                        })
                        .map(|(_, _, rows)| rows.within(spans[i]));
                    let found =
                        cells_in(reader, part_idx, entry, ladder, *run, rows.as_ref(), true)?;
                    n_cells_read += found.len() as u64;
                    partition[i].prepend(found);
                }
            }
            for (into, cells) in merged.iter_mut().zip(&mut partition) {
                *into = merge_runs(std::mem::take(into), std::mem::take(cells).into_ascending());
            }
        }
        self.cells_read.fetch_add(n_cells_read, Ordering::Relaxed);
        Ok(merged)
    }

    /// The level fold of each of `fields` over the whole level-0 cells `span` touches, from
    /// the fewest stored cells: coarse cells inside, fine cells at the edges. Each piece of the
    /// decomposition is a run of cells of one level, read by one binary search per file, so the
    /// cost follows the cells stored in the runs, never the fanout (a run may span 2^64 cells).
    /// Every field's runs are read in one pass over the files.
    fn folded_buckets(
        &self,
        stream: &str,
        prefix: &TrackKey,
        ladder: &Ladder,
        fields: &[u16],
        [lo, hi]: [u64; 2],
    ) -> Result<Vec<Option<Bucket>>, EngineError> {
        let pieces = decompose(ladder.cell(lo, 0), ladder.cell(hi, 0), ladder.fanout());
        let runs: Vec<CellRun> = fields
            .iter()
            .flat_map(|&field| {
                pieces.iter().map(move |&(level, cells)| CellRun {
                    field,
                    level,
                    cells,
                })
            })
            .collect();
        let cells = self.selection_cells(stream, prefix, ladder, &runs)?;
        assert_eq!(cells.len(), fields.len() * pieces.len());
        Ok(cells
            .chunks(pieces.len().max(1))
            .map(|field_runs| {
                // In decomposition order, which is axis order: the fold of the rows in order.
                let mut total: Option<Bucket> = None;
                for cell in field_runs.iter().flatten() {
                    match &mut total {
                        Some(t) => t.absorb(&cell.bucket),
                        None => total = Some(cell.bucket),
                    }
                }
                total
            })
            .collect())
    }

    /// Checks what the level reads assume of a partition beyond what its file promises itself
    /// (the reader checks that): that the file describes it as the manifest does, and that it
    /// measures the declared fields, each with cells and a column of the declared kind. Cells
    /// of two kinds would otherwise meet in `Bucket::absorb`, and percentiles would sort values
    /// of two kinds, both of which panic.
    pub(crate) fn check_partition(
        &self,
        reader: &SegmentReader<Mapped>,
        part_idx: usize,
        entry: &PartitionEntry,
    ) -> Result<(), EngineError> {
        let Some(info) = reader.partitions().get(part_idx) else {
            return Err(unreadable(SegmentError::Malformed {
                path: reader.path().to_owned(),
                offset: entry.offset,
                what: format!(
                    "no partition {part_idx} (of {:?} {:?}, as the manifest records)",
                    entry.stream, entry.track
                ),
            }));
        };
        let bad = |what: String| {
            unreadable(SegmentError::Malformed {
                path: reader.path().to_owned(),
                offset: info.entry.offset,
                what,
            })
        };
        if info.entry != *entry {
            return Err(bad(format!(
                "partition {:?} of {:?} differs from the manifest's record of it",
                entry.track, entry.stream
            )));
        }
        let decl = self.declaration(&entry.stream)?;
        let declared: Vec<(u16, NumKind)> = decl
            .measured()
            .into_iter()
            .filter_map(|f| Some((f, num_kind(decl.fields[usize::from(f)].kind)?)))
            .collect();
        if entry.n_levels > 0 && info.measured != declared {
            return Err(bad(format!(
                "the partition measures {:?}, the declaration {declared:?}",
                info.measured
            )));
        }
        let code = |kind: NumKind| match kind {
            NumKind::U64 => 1,
            NumKind::I64 => 2,
            NumKind::F64 => 3,
        };
        if let Some(&(field, kind)) = declared
            .iter()
            .find(|&&(f, kind)| !info.columns.contains(&(f, code(kind))))
        {
            return Err(bad(format!(
                "no {kind:?} column for measured field {field}"
            )));
        }
        Ok(())
    }

    /// Every value of `field` whose row's axis lies in `[lo, hi]`, from the raw rows.
    fn raw_values(
        &self,
        stream: &str,
        prefix: &TrackKey,
        field: u16,
        [lo, hi]: [u64; 2],
    ) -> Result<Vec<Num>, EngineError> {
        let mut values = Vec::new();
        for view in self.catalog.partitions(stream, prefix) {
            for (name, entry) in view.segments(Tier::Raw) {
                let Some([axis_lo, axis_hi]) = entry.axis else {
                    continue;
                };
                if axis_hi < lo || axis_lo > hi {
                    continue;
                }
                let (reader, part_idx) = self.partition_in(&view, name, stream)?;
                self.check_partition(&reader, part_idx, entry)?;
                let (start, end) = rows_in(&reader, part_idx, [lo, hi])?;
                let numbers = match reader.column(part_idx, field).map_err(unreadable)? {
                    Some(column) => column.numbers(start..end).map_err(unreadable)?,
                    None => None,
                };
                // Percentiles rank the values present: not null, not NaN.
                let nulls = reader.nulls(part_idx, field).map_err(unreadable)?;
                let nulls = nulls.mask(start..end);
                let present = |i: &usize| nulls.as_ref().is_none_or(|n| !n[*i]);
                match numbers {
                    Some(Decoded::U64(c)) => {
                        values.extend((0..c.len()).filter(present).map(|i| Num::U64(c[i].get())));
                    }
                    Some(Decoded::I64(c)) => {
                        values.extend((0..c.len()).filter(present).map(|i| Num::I64(c[i].get())));
                    }
                    Some(Decoded::F64(c)) => values.extend(
                        (0..c.len())
                            .filter(present)
                            .map(|i| c[i].get())
                            .filter(|v| !v.is_nan())
                            .map(Num::F64),
                    ),
                    None => {
                        return Err(EngineError::Unreadable {
                            source: strata_segment::SegmentError::mismatch(
                                reader.path(),
                                format!("field {field} is not a stored number"),
                            ),
                        });
                    }
                }
            }
        }
        Ok(values)
    }
}

/// The level-0 cells `a..=b` as the fewest aligned cells of any level, ascending by axis, given
/// as runs `(level, [first, last])` of consecutive cells of one level: at each level, the partial
/// runs at both ends stay, the fully covered parents go up. At most two runs a level (each of at
/// most `fanout - 1` cells) and one more at the top, so at most `2 * LEVELS_MAX + 1` runs: the
/// decomposition costs O(levels) whatever the fanout, and a reader finds the cells a run holds by
/// binary search.
pub(crate) fn decompose(a: u64, b: u64, fanout: u64) -> Vec<(u8, [u64; 2])> {
    let f = u128::from(fanout);
    let (mut lo, mut hi) = (u128::from(a), u128::from(b));
    let mut left: Vec<(u8, [u64; 2])> = Vec::new();
    let mut right: Vec<(u8, [u64; 2])> = Vec::new();
    let mut level = 0u8;
    // Every bound below lies within `a..=b` scaled down by a power of the fanout: it fits u64.
    let index = |i: u128| u64::try_from(i).expect("cell indexes come from u64 axes");
    while lo <= hi {
        let parents_lo = lo.div_ceil(f);
        let parents_end = (hi + 1) / f;
        if parents_lo >= parents_end || level == LEVELS_MAX {
            left.push((level, [index(lo), index(hi)]));
            break;
        }
        if lo < parents_lo * f {
            left.push((level, [index(lo), index(parents_lo * f - 1)]));
        }
        if parents_end * f <= hi {
            right.push((level, [index(parents_end * f), index(hi)]));
        }
        lo = parents_lo;
        hi = parents_end - 1;
        level += 1;
    }
    assert!(left.len() + right.len() <= 2 * usize::from(LEVELS_MAX) + 1);
    left.extend(right.into_iter().rev());
    left
}

/// The axis range as asked, its open ends the whole axis (`None`: it holds no value).
fn asked_span(axis: &impl RangeBounds<u64>) -> Option<[u64; 2]> {
    let lo = match axis.start_bound() {
        std::ops::Bound::Unbounded => 0,
        start => lowest(start)?,
    };
    let hi = match axis.end_bound() {
        std::ops::Bound::Unbounded => u64::MAX,
        end => highest(end)?,
    };
    (lo <= hi).then_some([lo, hi])
}

fn field_name(decl: &StreamDecl, field: u16) -> String {
    decl.fields[usize::from(field)].name.clone()
}

fn budget_error(error: strata_levels::BudgetError) -> EngineError {
    EngineError::BadRead {
        reason: error.to_string(),
    }
}

/// The floor a level fold over `[lo, hi]` is refused at, if any: the fold reads whole cells of
/// several levels (coarse inside, fine at the edges), and each must start at or above its
/// level's folded floor (from 0 for a range from the origin). Narrowed to at or above the
/// highest floor of the levels it reads, every run of the fold is whole.
fn fold_floor(
    level_floors: &LevelFloors,
    ladder: &Ladder,
    [lo, hi]: [u64; 2],
    from_origin: bool,
) -> Option<u64> {
    if !level_floors.any() {
        return None;
    }
    let runs = decompose(ladder.cell(lo, 0), ladder.cell(hi, 0), ladder.fanout());
    let top = runs.iter().map(|&(level, _)| level).max().unwrap_or(0);
    let refused = runs.iter().any(|&(level, [first, _])| {
        let start = ladder.span(level, first).map_or(u64::MAX, |[s, _]| s);
        let start = if from_origin { 0 } else { start };
        level_floors
            .at(level)
            .is_some_and(|floor| beneath(start, floor))
    });
    refused.then(|| {
        (0..=top)
            .filter_map(|level| level_floors.at(level))
            .max()
            .unwrap_or(0)
    })
}

/// The rows of partition `part_idx` that the wanted `runs` it answers from its rows (levels
/// beneath the ones it stores whole) fold, decoded once for each field and each stretch of
/// runs side by side — a fold's edge pieces, one a level, lie side by side — rather than once
/// a run: `(field, span, rows)`. Empty where fewer than two runs fold rows. A run's rows are
/// then `rows.within(its span)`, the rows `file_rows` would decode for it alone.
fn edge_rows(
    reader: &SegmentReader<Mapped>,
    part_idx: usize,
    entry: &PartitionEntry,
    ladder: &Ladder,
    runs: &[CellRun],
    spans: &[[u64; 2]],
    wanted: &[bool],
) -> Result<Vec<(u16, [u64; 2], FoldRows)>, EngineError> {
    let stored_from = reader.partitions()[part_idx].stored_from;
    let top = entry.n_levels - 1;
    let mut folded: Vec<(u16, [u64; 2])> = (0..runs.len())
        .filter(|&i| wanted[i] && runs[i].level < stored_from && runs[i].level <= top)
        .map(|i| (runs[i].field, spans[i]))
        .collect();
    if folded.len() < 2 {
        return Ok(Vec::new());
    }
    folded.sort_unstable();
    let mut stretches: Vec<(u16, [u64; 2])> = Vec::new();
    for (field, [lo, hi]) in folded {
        match stretches.last_mut() {
            Some((f, [_, end])) if *f == field && lo <= end.saturating_add(1) => {
                *end = (*end).max(hi);
            }
            _ => stretches.push((field, [lo, hi])),
        }
    }
    stretches
        .into_iter()
        .map(|(field, span)| {
            Ok((
                field,
                span,
                file_rows(reader, part_idx, ladder, field, span, true)?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use strata_levels::{Bucket, Cell, Num};

    use proptest::prelude::*;

    use super::{Descending, decompose, merge_runs};

    proptest! {
        /// Gathering segments' cells newest first into a `Descending` gives what the right fold
        /// of `merge_runs` gives (the code it replaced), cell for cell, whether the runs meet at
        /// a seam, lie apart or overlap. Values of very different sizes make a regrouped `f64`
        /// sum show.
        #[test]
        fn gathering_newest_first_is_the_right_fold_of_merge_runs(
            runs in prop::collection::vec(
                prop::collection::btree_map(0u64..16, prop::sample::select(vec![0.1, 1e16, -1e16, 3.0, -0.0]), 0..8),
                1..7,
            )
        ) {
            let cells: Vec<Vec<Cell>> = runs
                .iter()
                .map(|run| {
                    run.iter()
                        .map(|(&index, &v)| Cell { index, bucket: Bucket::of_row(0, index * 10, Num::F64(v)) })
                        .collect()
                })
                .collect();
            // Oldest first in `cells`; a read takes them newest first.
            let mut reference: Vec<Cell> = Vec::new();
            let mut gathered = Descending::default();
            for run in cells.iter().rev() {
                reference = merge_runs(run.clone(), reference);
                gathered.prepend(run.clone());
            }
            prop_assert_eq!(gathered.into_ascending(), reference);
        }

        /// Segments merged into one that keeps their cells as chains (a non-suffix merge's
        /// output: each index's cells in segment order) gather, newest first, to exactly what
        /// the segments gathered apart do: each link is merged in front of what follows it,
        /// last first. The reference is the right fold taken cell by cell over the segments.
        #[test]
        fn chains_gather_as_the_segments_they_were_merged_from(
            runs in prop::collection::vec(
                prop::collection::btree_map(0u64..12, prop::sample::select(vec![0.1, 1e16, -1e16, 3.0, -0.0, 7.7]), 0..6),
                1..8,
            ),
            joins in prop::collection::vec(any::<bool>(), 8),
        ) {
            let cells: Vec<Vec<Cell>> = runs
                .iter()
                .enumerate()
                .map(|(at, run)| {
                    let axis = |index: u64| index * 100 + at as u64;
                    run.iter()
                        .map(|(&index, &v)| Cell { index, bucket: Bucket::of_row(0, axis(index), Num::F64(v)) })
                        .collect()
                })
                .collect();
            let mut reference: BTreeMap<u64, Bucket> = BTreeMap::new();
            for run in cells.iter().rev() {
                for cell in run {
                    reference
                        .entry(cell.index)
                        .and_modify(|newer| *newer = cell.bucket.merge(newer))
                        .or_insert(cell.bucket);
                }
            }
            let mut groups: Vec<Vec<Cell>> = Vec::new();
            for (at, run) in cells.into_iter().enumerate() {
                match groups.last_mut() {
                    Some(group) if at > 0 && joins[at - 1] => {
                        group.extend(run);
                        group.sort_by_key(|c| c.index);
                    }
                    _ => groups.push(run),
                }
            }
            let mut gathered = Descending::default();
            for group in groups.iter().rev() {
                gathered.prepend(group.clone());
            }
            let got: Vec<(u64, Bucket)> =
                gathered.into_ascending().into_iter().map(|c| (c.index, c.bucket)).collect();
            prop_assert_eq!(got, reference.into_iter().collect::<Vec<_>>());
            // And as the earlier run of a merge across partitions.
            if let Some(first) = groups.first() {
                let mut apart: BTreeMap<u64, Bucket> = BTreeMap::new();
                for cell in first.iter().rev() {
                    apart
                        .entry(cell.index)
                        .and_modify(|newer| *newer = cell.bucket.merge(newer))
                        .or_insert(cell.bucket);
                }
                let merged: Vec<(u64, Bucket)> =
                    merge_runs(first.clone(), Vec::new()).into_iter().map(|c| (c.index, c.bucket)).collect();
                prop_assert_eq!(merged, apart.into_iter().collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn merging_two_sorted_runs_is_the_merge_of_each_index_earlier_first() {
        // Runs drawn from a small pattern: each index present in the earlier run, the later,
        // both or neither. Both runs place their row at the same axis, with the run as its
        // value: on that axis tie `first` keeps the earlier row and `last` the later, so the
        // order of a merge shows.
        let bucket = |index: u64, run: u64| Bucket::of_row(0, index * 10, Num::U64(run));
        for pattern in 0u32..4u32.pow(6) {
            let (mut earlier, mut later) = (Vec::new(), Vec::new());
            let mut reference: BTreeMap<u64, Bucket> = BTreeMap::new();
            let mut p = pattern;
            for index in 0..6 {
                let (in_earlier, in_later) = match p % 4 {
                    0 => (true, false),
                    1 => (false, true),
                    2 => (true, true),
                    _ => (false, false),
                };
                p /= 4;
                if in_earlier {
                    earlier.push(Cell {
                        index,
                        bucket: bucket(index, 1),
                    });
                    reference.insert(index, bucket(index, 1));
                }
                if in_later {
                    later.push(Cell {
                        index,
                        bucket: bucket(index, 2),
                    });
                    reference
                        .entry(index)
                        .and_modify(|b| b.absorb(&bucket(index, 2)))
                        .or_insert(bucket(index, 2));
                }
            }
            let merged = merge_runs(earlier, later);
            let got: Vec<(u64, Bucket)> = merged.iter().map(|c| (c.index, c.bucket)).collect();
            let want: Vec<(u64, Bucket)> = reference.into_iter().collect();
            assert_eq!(got, want, "pattern {pattern}");
        }
        // Where both hold a cell, the earlier one's point comes first.
        let both = merge_runs(
            vec![Cell {
                index: 7,
                bucket: bucket(7, 1),
            }],
            vec![Cell {
                index: 7,
                bucket: bucket(7, 2),
            }],
        );
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].bucket.first.value, Num::U64(1));
        assert_eq!(both[0].bucket.last.value, Num::U64(2));
        assert_eq!(both[0].bucket.count, 2);
    }

    /// The level-0 cells a cell covers, computed here.
    fn covered(level: u8, index: u64, fanout: u64) -> (u128, u128) {
        let width = u128::from(fanout).pow(u32::from(level));
        (
            u128::from(index) * width,
            (u128::from(index) + 1) * width - 1,
        )
    }

    #[test]
    fn decomposition_tiles_the_range_in_order_with_few_cells() {
        for fanout in [2u64, 3, 8] {
            for a in 0..70 {
                for b in a..140 {
                    let runs = decompose(a, b, fanout);
                    let mut next = u128::from(a);
                    let mut n_cells = 0;
                    for &(level, [first, last]) in &runs {
                        assert!(first <= last);
                        let (start, _) = covered(level, first, fanout);
                        let (_, end) = covered(level, last, fanout);
                        assert_eq!(start, next, "{a}..={b} f{fanout}: a gap or overlap");
                        next = end + 1;
                        n_cells += last - first + 1;
                    }
                    assert_eq!(next, u128::from(b) + 1, "{a}..={b} f{fanout}: not covered");
                    let levels = u64::from(runs.iter().map(|p| p.0).max().unwrap_or(0)) + 1;
                    assert!(n_cells <= 2 * levels * (fanout - 1) + 1);
                }
            }
        }
        assert_eq!(decompose(0, u64::MAX, 2), vec![(64, [0, 0])]);
        assert_eq!(
            decompose(u64::MAX, u64::MAX, 16),
            vec![(0, [u64::MAX, u64::MAX])]
        );
    }

    #[test]
    fn a_fanout_near_the_top_of_u64_decomposes_into_a_few_runs() {
        // The fold of issue 10 item 3: base 1, fanout u64::MAX, cells 1..=u64::MAX - 1. Before
        // runs, this listed every one of those cells.
        let runs = decompose(1, u64::MAX - 1, u64::MAX);
        assert_eq!(runs, vec![(0, [1, u64::MAX - 1])]);
        let runs = decompose(0, u64::MAX, u64::MAX);
        assert_eq!(runs, vec![(1, [0, 0]), (0, [u64::MAX, u64::MAX])]);
        for fanout in [1 << 24, 1 << 32, u64::MAX - 1] {
            assert!(decompose(0, u64::MAX, fanout).len() <= 2 * 64 + 1);
        }
    }
}
