//! Streaming raw reads: a query as runs of rows — one partition's rows in one segment, with
//! their columns as slices of the mapped file — merged across partitions by ordinal a run at a
//! time, and rows on top of the runs.
//!
//! A run is resolved once: when a partition's cursor reaches a segment, every block the read
//! needs is verified and checked against the declaration (a damaged block is an `Err` item
//! there, never a wrong row), and the run's accessors then hand out slices with no lookup per
//! row. Each partition's files are opened as the merge reaches them, one map per partition at
//! a time, so a read holds what its open cursors hold — not the answer, and not every file.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::Arc;

use strata_index::{FieldKind, FileName, PartitionView, StreamDecl, TrackKey};
use strata_segment::{Axis, Column, Decoded, SegmentError};
use zerocopy::little_endian::U64;

use crate::error::EngineError;
use crate::value::Value;
use crate::view::View;
use crate::view::open_segments::OpenSegment;
use crate::view::read::{StoredRow, mismatch, unreadable};

/// Rows `QueryRows` builds at a time from a run: what rows on top of runs hold beyond the run.
const ROWS_PER_CHUNK: usize = 1024;

/// Consecutive rows of one partition in one segment, in publish order, with their columns as
/// slices of the mapped file (which the run keeps mapped while it lives). Every block was
/// verified when the run was made.
#[derive(Clone)]
pub struct ColumnRun {
    segment: Arc<OpenSegment>,
    part_idx: usize,
    rows: Range<usize>,
    track: Arc<TrackKey>,
    /// The partition's packed blocks (format 5) decoded for the rows from the first of the
    /// pair on, shared by every run the cursor makes inside that chunk (runs of interleaved
    /// partitions are often a row long): a run over packed blocks lies inside one chunk of
    /// them, so this holds at most `PACK_ROWS` rows a block.
    unpacked: Option<(usize, Arc<Unpacked>)>,
}

/// Decoded rows of a run's packed blocks.
#[derive(Debug, Default)]
struct Unpacked {
    axis: Option<Vec<U64>>,
    columns: Vec<(u16, Decoded)>,
}

impl Unpacked {
    /// Decodes rows `rows` of every packed block of partition `part_idx`; `None` if none is
    /// packed. `spare` is the cursor's last chunk when no run holds it any more: its memory
    /// takes the new chunk's values.
    fn of(
        segment: &OpenSegment,
        part_idx: usize,
        rows: Range<usize>,
        decl: &StreamDecl,
        spare: Option<Unpacked>,
    ) -> Result<Option<Unpacked>, EngineError> {
        let Unpacked {
            axis: spare_axis,
            columns: mut spare_columns,
        } = spare.unwrap_or_default();
        let mut unpacked = Unpacked {
            axis: None,
            columns: Vec::with_capacity(decl.fields.len()),
        };
        // A query streams through every chunk once: it neither reads nor fills the cache of
        // decoded chunks other reads come back to.
        if let Some(Axis::Packed(axis)) = verified(segment.axis(part_idx)) {
            let spare = spare_axis.map(Decoded::U64);
            let decoded = axis.uncached().decode_reusing(rows.clone(), spare);
            let Decoded::U64(values) = decoded.map_err(unreadable)? else {
                unreachable!("the axis decodes as u64");
            };
            unpacked.axis = Some(values);
        }
        for field_idx in 0..decl.fields.len() {
            let field_idx = u16::try_from(field_idx).expect("at most FIELDS_MAX fields");
            if let Ok(Some(Column::Packed(column))) = segment.column(part_idx, field_idx) {
                let spare = spare_columns
                    .iter()
                    .position(|(f, _)| *f == field_idx)
                    .map(|i| spare_columns.swap_remove(i).1);
                let decoded = column.uncached().decode_reusing(rows.clone(), spare);
                unpacked
                    .columns
                    .push((field_idx, decoded.map_err(unreadable)?));
            }
        }
        let any = unpacked.axis.is_some() || !unpacked.columns.is_empty();
        Ok(any.then_some(unpacked))
    }
}

impl ColumnRun {
    /// Rows in the run.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the run holds no row (a query never yields one).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The partition's track.
    pub fn track(&self) -> &TrackKey {
        &self.track
    }

    /// Appends the positions of rows `rows` (run-relative) to `out`, a run of the file's
    /// encoding at a time: what `positions().skip(rows.start).take(rows.len())` yields.
    pub fn extend_positions(&self, rows: Range<usize>, out: &mut Vec<u64>) {
        let rows = rows.start.min(self.len())..rows.end.min(self.len());
        let positions = verified(self.segment.positions(self.part_idx));
        positions.extend_rows(
            self.rows.start + rows.start..self.rows.start + rows.end,
            out,
        );
    }

    /// The positions of the run's rows, in order.
    pub fn positions(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        let positions = verified(self.segment.positions(self.part_idx));
        positions.iter_from(self.rows.start).take(self.len())
    }

    /// The run narrowed to its rows whose axis value lies in `lo..=hi`, which are consecutive
    /// (the axis is non-decreasing within a partition); `None` if it holds none of them. A run
    /// of a stream without an axis is kept whole.
    fn within_axis(mut self, [lo, hi]: [u64; 2]) -> Option<ColumnRun> {
        let Some(axis) = self.axis() else {
            return Some(self);
        };
        let start = axis.partition_point(|a| a.get() < lo);
        let end = axis.partition_point(|a| a.get() <= hi);
        if start >= end {
            return None;
        }
        let first = self.rows.start;
        self.rows = first + start..first + end;
        Some(self)
    }

    /// The axis values of the run's rows; `None` if the stream has no axis.
    pub fn axis(&self) -> Option<&[U64]> {
        if let Some((from, unpacked)) = &self.unpacked
            && let Some(axis) = unpacked.axis.as_deref()
        {
            return Some(&axis[self.rows.start - from..self.rows.end - from]);
        }
        match verified(self.segment.axis(self.part_idx))? {
            Axis::Plain(axis) => Some(&axis[self.rows.clone()]),
            Axis::Packed(_) => unreachable!("a run holds its packed axis decoded"),
        }
    }

    /// The stored column of field `field_idx` (declaration order) for the run's rows; `None`
    /// for a field the partition stores no column of (a track field or the axis).
    ///
    /// # Panics
    ///
    /// Only if a column were shorter than the run, which the read checked of every column
    /// when it reached the segment (a file that breaks it is an `Err` item, never a run).
    pub fn column(&self, field_idx: u16) -> Option<Column<'_>> {
        if let Some((from, unpacked)) = &self.unpacked
            && let Some((_, decoded)) = unpacked.columns.iter().find(|(f, _)| *f == field_idx)
        {
            let rows = self.rows.start - from..self.rows.end - from;
            return Some(match decoded.column() {
                Column::U64(c) => Column::U64(&c[rows]),
                Column::I64(c) => Column::I64(&c[rows]),
                _ => {
                    let Decoded::F64(c) = decoded else {
                        unreachable!("a decoded column is a number")
                    };
                    Column::F64(&c[rows])
                }
            });
        }
        let column = verified(self.segment.column(self.part_idx, field_idx))?;
        let rows = self.rows.clone();
        Some(match column {
            Column::U64(c) => Column::U64(&c[rows]),
            Column::I64(c) => Column::I64(&c[rows]),
            Column::F64(c) => Column::F64(&c[rows]),
            Column::Str(c) => Column::Str(c.slice(rows).expect("lengths checked at resolve")),
            Column::Bytes(c) => Column::Bytes(c.slice(rows).expect("lengths checked at resolve")),
            Column::Packed(_) => unreachable!("a run holds its packed columns decoded"),
        })
    }

    /// Which of rows `rows` of the run (run-relative) hold no value in field `field_idx`: a
    /// flag per row, true where it is null (format 7); `None` if none is (every column of an
    /// earlier file, every field the partition stores no column of). An `f64` NaN is a value
    /// here, not null.
    pub fn null_mask(&self, field_idx: u16, rows: Range<usize>) -> Option<Vec<bool>> {
        let nulls = verified(self.segment.nulls(self.part_idx, field_idx));
        nulls.mask(self.rows.start + rows.start..self.rows.start + rows.end)
    }

    /// Appends rows `rows` of the run (run-relative) as rows of `decl`'s fields, resolving
    /// every column once for them all.
    fn rows_into(
        &self,
        decl: &StreamDecl,
        rows: Range<usize>,
        out: &mut Vec<StoredRow>,
    ) -> Result<(), EngineError> {
        let path = self.segment.path();
        let labels: Vec<&str> = self.track.labels().collect();
        let sources = decl
            .fields
            .iter()
            .enumerate()
            .map(|(field_idx, field)| {
                let field_idx = u16::try_from(field_idx).expect("at most FIELDS_MAX fields");
                if let Some(component) = decl.track.iter().position(|&t| t == field_idx) {
                    let label = labels.get(component).copied().unwrap_or_default();
                    return Value::from_label(field.kind, label)
                        .map(Source::Track)
                        .ok_or_else(|| {
                            mismatch(
                                path,
                                format!("track label is not {}", field.kind.with_article()),
                            )
                        });
                }
                if decl.axis == Some(field_idx) {
                    return self
                        .axis()
                        .map(Source::Axis)
                        .ok_or_else(|| mismatch(path, "no axis block"));
                }
                let nulls = self.null_mask(field_idx, rows.clone());
                self.column(field_idx)
                    .map(|column| Source::Column(column, field.kind, nulls))
                    .ok_or_else(|| mismatch(path, format!("no column for field {:?}", field.name)))
            })
            .collect::<Result<Vec<Source<'_>>, EngineError>>()?;
        let first = rows.start;
        let mut positions = verified(self.segment.positions(self.part_idx))
            .iter_from(self.rows.start + rows.start)
            .take(rows.len());
        for row_idx in rows {
            let mut values = Vec::with_capacity(sources.len());
            for (source, field) in sources.iter().zip(&decl.fields) {
                let value = match source {
                    Source::Track(value) => Some(value.clone()),
                    Source::Axis(axis) => axis.get(row_idx).map(|a| Value::U64(a.get())),
                    Source::Column(_, _, Some(nulls)) if nulls[row_idx - first] => {
                        Some(Value::Null)
                    }
                    Source::Column(column, kind, _) => column_value(*column, *kind, row_idx),
                };
                values.push(value.ok_or_else(|| {
                    mismatch(
                        path,
                        format!("field {:?} is stored as another kind", field.name),
                    )
                })?);
            }
            let position = positions
                .next()
                .ok_or_else(|| mismatch(path, "fewer positions than rows"))?;
            out.push(StoredRow { position, values });
        }
        Ok(())
    }
}

impl std::fmt::Debug for ColumnRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnRun")
            .field("segment", &self.segment.path())
            .field("part_idx", &self.part_idx)
            .field("rows", &self.rows)
            .field("track", &self.track)
            .field("unpacked", &self.unpacked.is_some())
            .finish()
    }
}

/// Where a field's values come from, resolved once for many rows.
enum Source<'a> {
    Track(Value),
    Axis(&'a [U64]),
    /// A stored column, its kind, and which of the rows being built are null.
    Column(Column<'a>, FieldKind, Option<Vec<bool>>),
}

fn column_value(column: Column<'_>, kind: FieldKind, row_idx: usize) -> Option<Value> {
    match (column, kind) {
        (Column::U64(c), FieldKind::U64) => Some(Value::U64(c.get(row_idx)?.get())),
        (Column::I64(c), FieldKind::I64) => Some(Value::I64(c.get(row_idx)?.get())),
        (Column::F64(c), FieldKind::F64) => Some(Value::F64(c.get(row_idx)?.get())),
        (Column::Str(c), FieldKind::Str) => Some(Value::Str(
            std::str::from_utf8(c.get(row_idx)?).ok()?.to_owned(),
        )),
        (Column::Bytes(c), FieldKind::Bytes) => Some(Value::Bytes(c.get(row_idx)?.to_vec())),
        _ => None,
    }
}

/// A block a run hands out was verified when the run was made, and a reader remembers each
/// block's verdict: asking again answers the same.
fn verified<T>(read: Result<T, SegmentError>) -> T {
    read.expect("a run's blocks were verified when it was made")
}

/// A query's runs, in publish order: see [`Store::query_runs`].
#[derive(Debug)]
pub struct QueryRuns<'s> {
    cursors: Vec<Cursor<'s>>,
    /// Each cursor with rows, by the ordinal of its next row.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// A cursor whose segment ran out with the last run: moved on before the next.
    exhausted: Option<usize>,
    /// An error was yielded: nothing follows it.
    failed: bool,
    /// The axis values the read wants, inclusive (`None`: every one): each run is narrowed to
    /// its rows within them, and a run holding none is skipped.
    axis: Option<[u64; 2]>,
}

impl QueryRuns<'_> {
    pub(crate) fn empty() -> Self {
        QueryRuns {
            cursors: Vec::new(),
            heap: BinaryHeap::new(),
            exhausted: None,
            failed: false,
            axis: None,
        }
    }
}

impl Iterator for QueryRuns<'_> {
    type Item = Result<ColumnRun, EngineError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match (self.next_whole()?, self.axis) {
                (Ok(run), Some(span)) => {
                    if let Some(run) = run.within_axis(span) {
                        return Some(Ok(run));
                    }
                }
                (item, _) => return Some(item),
            }
        }
    }
}

impl QueryRuns<'_> {
    /// The next run in publish order, whole: the heap's next cursor's run.
    fn next_whole(&mut self) -> Option<Result<ColumnRun, EngineError>> {
        if self.failed {
            return None;
        }
        if let Some(idx) = self.exhausted.take() {
            match self.cursors[idx].next_segment() {
                Ok(true) => self.heap.push(Reverse((self.cursors[idx].ordinal(), idx))),
                Ok(false) => {}
                Err(error) => {
                    self.failed = true;
                    return Some(Err(error));
                }
            }
        }
        let Reverse((_, idx)) = self.heap.pop()?;
        // The run goes up to the first row another partition publishes before.
        let bound = self.heap.peek().map_or(u64::MAX, |Reverse((o, _))| *o);
        let cursor = &mut self.cursors[idx];
        let run = match cursor.take_until(bound) {
            Ok(run) => run,
            Err(error) => {
                self.failed = true;
                return Some(Err(error));
            }
        };
        if cursor.is_done() {
            self.exhausted = Some(idx);
        } else {
            self.heap.push(Reverse((cursor.ordinal(), idx)));
        }
        Some(Ok(run))
    }
}

/// A query's rows, in publish order: see [`Store::query_iter`].
#[derive(Debug)]
pub struct QueryRows<'s> {
    decl: &'s StreamDecl,
    runs: QueryRuns<'s>,
    /// The run being read, and how many of its rows were built.
    run: Option<(ColumnRun, usize)>,
    /// Rows built and not yet handed out (at most `ROWS_PER_CHUNK`).
    built: std::vec::IntoIter<StoredRow>,
}

impl Iterator for QueryRows<'_> {
    type Item = Result<StoredRow, EngineError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(row) = self.built.next() {
                return Some(Ok(row));
            }
            match &mut self.run {
                Some((run, done)) if *done < run.len() => {
                    let end = (*done + ROWS_PER_CHUNK).min(run.len());
                    let mut rows = Vec::with_capacity(end - *done);
                    if let Err(error) = run.rows_into(self.decl, *done..end, &mut rows) {
                        self.runs.failed = true;
                        self.run = None;
                        return Some(Err(error));
                    }
                    *done = end;
                    self.built = rows.into_iter();
                }
                _ => {
                    // The finished run lets go of its segment before the next is reached, so
                    // the read holds one map per partition, as its cursors do.
                    self.run = None;
                    match self.runs.next()? {
                        Ok(run) => self.run = Some((run, 0)),
                        Err(error) => return Some(Err(error)),
                    }
                }
            }
        }
    }
}

impl View {
    /// The rows [`Store::query`] answers, as runs: each run one partition's consecutive rows in
    /// one segment with their columns as slices of the mapped file, in publish order (runs of
    /// several partitions are merged by ordinal, a run at a time). The selection and the floor
    /// are checked before any run (as `query` checks them); a block found damaged on the way
    /// is an `Err` item, after which the iterator ends. Files are opened as the read reaches
    /// them, so memory does not grow with the rows read.
    pub fn query_runs<'s>(
        &'s self,
        stream: &str,
        selection: &[&str],
        positions: impl std::ops::RangeBounds<u64>,
    ) -> Result<QueryRuns<'s>, EngineError> {
        let Some((decl, prefix, lo, hi)) = self.query_bounds(stream, selection, positions)? else {
            return Ok(QueryRuns::empty());
        };
        self.runs_over(decl, &prefix, lo, hi, None)
    }

    /// The runs of `decl`'s partitions under `prefix` holding positions `lo..=hi`, merged in
    /// publish order; with `only`, of that one segment file alone, each partition from above
    /// its own raw floor (what a trim retired is never handed out).
    pub(crate) fn runs_over<'s>(
        &'s self,
        decl: &'s StreamDecl,
        prefix: &TrackKey,
        lo: u64,
        hi: u64,
        only: Option<FileName>,
    ) -> Result<QueryRuns<'s>, EngineError> {
        self.runs_within(decl, prefix, [lo, hi], only, None)
    }

    /// [`Store::runs_over`] of the rows whose axis value also lies in `axis` (inclusive), when
    /// given: a segment whose axis range misses it is never opened, and each run is narrowed
    /// to its rows inside it.
    pub(crate) fn runs_within<'s>(
        &'s self,
        decl: &'s StreamDecl,
        prefix: &TrackKey,
        [lo, hi]: [u64; 2],
        only: Option<FileName>,
        axis: Option<[u64; 2]>,
    ) -> Result<QueryRuns<'s>, EngineError> {
        let mut cursors = Vec::new();
        let views: Vec<_> = self
            .catalog
            .partitions(&decl.id, prefix)
            .filter(|view| only.is_none_or(|name| view.part_idx(name).is_some()))
            .collect();
        // One partition's runs need no merge, and so no ordinals.
        let merging = views.len() > 1;
        for view in views {
            // A floor is the lowest position a partition still holds (`u64::MAX`: none).
            let lo = match (only, self.raw_floor(&decl.id, view.track(), false)) {
                (Some(_), Some(u64::MAX)) => continue,
                (Some(_), Some(floor)) => lo.max(floor),
                _ => lo,
            };
            let files: Vec<FileName> = view
                .segments(strata_index::Tier::Raw)
                .filter(|(_, entry)| entry.positions[1] >= lo && entry.positions[0] <= hi)
                .filter(|(_, entry)| match (axis, entry.axis) {
                    (Some([from, to]), Some([first, last])) => last >= from && first <= to,
                    _ => true,
                })
                .map(|(name, _)| name)
                .filter(|&name| only.is_none_or(|only| only == name))
                .collect();
            let mut cursor = Cursor {
                store: self,
                decl,
                track: Arc::new(view.track().clone()),
                lo,
                hi,
                merging,
                view,
                files: files.into_iter(),
                segment: None,
                ordinals: Vec::new(),
                at: 0,
                unpacked: None,
            };
            if cursor.next_segment()? {
                cursors.push(cursor);
            }
        }
        let heap = cursors
            .iter()
            .enumerate()
            .map(|(idx, c)| Reverse((c.ordinal(), idx)))
            .collect();
        Ok(QueryRuns {
            cursors,
            heap,
            exhausted: None,
            failed: false,
            axis,
        })
    }

    /// The rows [`Store::query`] answers, one at a time, built from [`Store::query_runs`] a
    /// bounded number at a time: memory does not grow with the rows read.
    pub fn query_iter<'s>(
        &'s self,
        stream: &str,
        selection: &[&str],
        positions: impl std::ops::RangeBounds<u64>,
    ) -> Result<QueryRows<'s>, EngineError> {
        let runs = self.query_runs(stream, selection, positions)?;
        self.rows_of(stream, runs)
    }

    /// The rows of `runs`, a read of `stream`'s, one at a time.
    pub(crate) fn rows_of<'s>(
        &'s self,
        stream: &str,
        runs: QueryRuns<'s>,
    ) -> Result<QueryRows<'s>, EngineError> {
        let decl = self.declaration(stream)?;
        Ok(QueryRows {
            decl,
            runs,
            run: None,
            built: Vec::new().into_iter(),
        })
    }
}

/// A partition's rows, a segment at a time, opening each file as it is reached.
struct Cursor<'s> {
    store: &'s View,
    decl: &'s StreamDecl,
    track: Arc<TrackKey>,
    /// The positions the read wants, inclusive.
    lo: u64,
    hi: u64,
    /// Whether other partitions merge with this one (then the ordinals are kept).
    merging: bool,
    /// The partition, as the catalog the read began at holds it.
    view: PartitionView<'s>,
    /// The partition's files not yet reached, in ordinal order.
    files: std::vec::IntoIter<FileName>,
    /// The segment being read, the partition's index in it and the rows the read wants.
    segment: Option<(Arc<OpenSegment>, usize, Range<usize>)>,
    /// The ordinals of those rows, when merging.
    ordinals: Vec<u64>,
    /// Rows of them already handed out.
    at: usize,
    /// The rows of the segment (absolute) whose packed blocks are decoded, and those blocks'
    /// values there (`None` if the partition packs none): the chunk the next run starts in.
    unpacked: Option<(Range<usize>, Option<Arc<Unpacked>>)>,
}

impl std::fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("track", &self.track)
            .field(
                "segment",
                &self.segment.as_ref().map(|(s, _, r)| (s.path(), r)),
            )
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl Cursor<'_> {
    /// Moves to the next file with rows the read wants, resolving its blocks; false when there
    /// is none.
    fn next_segment(&mut self) -> Result<bool, EngineError> {
        // The finished segment's reader is let go before the next is opened, so a cursor
        // holds one map at a time.
        self.segment = None;
        self.unpacked = None;
        for name in self.files.by_ref() {
            let (reader, part_idx) = self.store.partition_in(&self.view, name, &self.decl.id)?;
            let rows = reader
                .position_range(part_idx, self.lo, self.hi)
                .map_err(unreadable)?;
            if rows.is_empty() {
                continue;
            }
            resolve(self.decl, &reader, part_idx)?;
            let ordinals = reader.ordinals(part_idx).map_err(unreadable)?;
            self.ordinals.clear();
            if self.merging {
                self.ordinals
                    .extend(ordinals.iter_from(rows.start).take(rows.len()));
            }
            self.at = 0;
            self.segment = Some((reader, part_idx, rows));
            return Ok(true);
        }
        Ok(false)
    }

    /// The ordinal of the next row (0 when not merging: one partition needs no order).
    fn ordinal(&self) -> u64 {
        self.ordinals.get(self.at).copied().unwrap_or(0)
    }

    fn is_done(&self) -> bool {
        self.segment
            .as_ref()
            .is_none_or(|(_, _, rows)| self.at == rows.len())
    }

    /// The rows from the next up to (not including) the first whose ordinal is `bound` or
    /// above, at least one, and no further than the end of the packed chunk the first is in
    /// (whose rows of each packed block the run decodes).
    fn take_until(&mut self, bound: u64) -> Result<ColumnRun, EngineError> {
        let (segment, part_idx, rows) = self.segment.as_ref().expect("a cursor in the heap");
        let n_rows = if bound == u64::MAX || !self.merging {
            rows.len() - self.at
        } else {
            first_at_least(&self.ordinals[self.at..], bound)
        };
        assert!(
            n_rows > 0,
            "a cursor's next row comes before every other head"
        );
        let start = rows.start + self.at;
        // The chunk's rows the read wants, decoded once for every run inside them.
        let span = match &self.unpacked {
            Some((span, _)) if span.contains(&start) => span.clone(),
            _ => {
                let end = verified(segment.chunk_end(*part_idx, start)).min(rows.end);
                // The last chunk's memory, if every run made from it has been let go.
                let spare = self
                    .unpacked
                    .take()
                    .and_then(|(_, unpacked)| Arc::into_inner(unpacked?));
                let unpacked = Unpacked::of(segment, *part_idx, start..end, self.decl, spare)?;
                self.unpacked = Some((start..end, unpacked.map(Arc::new)));
                start..end
            }
        };
        let n_rows = n_rows.min(span.end - start);
        self.at += n_rows;
        let unpacked = self
            .unpacked
            .as_ref()
            .and_then(|(span, u)| Some((span.start, Arc::clone(u.as_ref()?))));
        Ok(ColumnRun {
            segment: Arc::clone(segment),
            part_idx: *part_idx,
            rows: start..start + n_rows,
            track: Arc::clone(&self.track),
            unpacked,
        })
    }
}

/// The index of the first value at or above `bound` in ascending `values` whose first value is
/// below it, by a galloping search (runs are often short when partitions interleave).
fn first_at_least(values: &[u64], bound: u64) -> usize {
    debug_assert!(values.first().is_some_and(|&v| v < bound));
    let mut below = 0;
    let mut step = 1;
    while below + step < values.len() && values[below + step] < bound {
        below += step;
        step *= 2;
    }
    let end = (below + step).min(values.len());
    below + 1 + values[below + 1..end].partition_point(|&v| v < bound)
}

/// Checks, once per segment a read reaches, every block the read's runs hand out: verified
/// (crc and contents), present, of the declared kind and as long as the partition's rows. An
/// error names the file; a run made after this never fails.
fn resolve(decl: &StreamDecl, reader: &OpenSegment, part_idx: usize) -> Result<(), EngineError> {
    let path = reader.path();
    let n_rows = reader.positions(part_idx).map_err(unreadable)?.len();
    reader.ordinals(part_idx).map_err(unreadable)?;
    for (field_idx, field) in decl.fields.iter().enumerate() {
        let field_idx = u16::try_from(field_idx).expect("at most FIELDS_MAX fields");
        if decl.track.contains(&field_idx) {
            continue;
        }
        let len = if decl.axis == Some(field_idx) {
            reader
                .axis(part_idx)
                .map_err(unreadable)?
                .ok_or_else(|| mismatch(path, "no axis block"))?
                .len()
        } else {
            let column = reader
                .column(part_idx, field_idx)
                .map_err(unreadable)?
                .ok_or_else(|| mismatch(path, format!("no column for field {:?}", field.name)))?;
            reader.nulls(part_idx, field_idx).map_err(unreadable)?;
            if column.kind_code() == field.kind.code() {
                column.len()
            } else {
                usize::MAX
            }
        };
        if len != n_rows {
            return Err(mismatch(
                path,
                format!("field {:?} is stored as another kind", field.name),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod galloping {
    use super::first_at_least;

    #[test]
    fn galloping_finds_the_first_value_at_or_above_the_bound() {
        let values: Vec<u64> = (0..100).map(|v| v * 2).collect();
        for bound in 1..=201 {
            let expected = values.iter().position(|&v| v >= bound).unwrap_or(100);
            assert_eq!(first_at_least(&values, bound), expected, "bound {bound}");
        }
        assert_eq!(first_at_least(&[5], 6), 1);
        assert_eq!(first_at_least(&[5, 6], 6), 1);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};
    use std::path::Path;
    use std::sync::Arc;

    use strata_index::{FieldKind, StreamDecl, Tier, TrackKey};
    use strata_segment::names::{NumberedName, SEG_DIR};

    use super::ColumnRun;
    use crate::view::open_segments::OpenSegment;
    use crate::{Config, Store, StoredRow, Stream, Value};

    const TRACKS: [&str; 2] = ["r0", "r1"];
    const N_BARRIERS: u64 = 40;
    const ROWS_PER_TRACK: u64 = 5;

    /// A store in `dir` holding `N_BARRIERS` barrier files, each with rows of both tracks, that
    /// keeps at most 4 segment readers open; with its declaration and the rows published, by
    /// track.
    fn sealed(dir: &Path) -> (Store, StreamDecl, BTreeMap<&'static str, Vec<StoredRow>>) {
        let decl = Stream::new("c")
            .field("run", FieldKind::Str)
            .field("t", FieldKind::U64)
            .field("v", FieldKind::F64)
            .field("n", FieldKind::I64)
            .track(["run"])
            .axis("t")
            .build()
            .unwrap();
        let config = Config {
            open_segments_max: 4,
            ..Config::default()
        };
        let mut store = Store::create(dir, config, std::slice::from_ref(&decl)).unwrap();
        let mut published: BTreeMap<&str, Vec<StoredRow>> = BTreeMap::new();
        let mut t = 0u64;
        for barrier in 0..N_BARRIERS {
            let position = barrier + 1;
            let mut rows = Vec::new();
            for track in TRACKS {
                for _ in 0..ROWS_PER_TRACK {
                    t += 1;
                    let values = vec![
                        Value::Str(track.to_owned()),
                        Value::U64(t),
                        Value::F64(t as f64 / 10.0 + 1.0 / 3.0),
                        Value::I64(500 - i64::try_from(t * 7919 % 1000).unwrap()),
                    ];
                    published.entry(track).or_default().push(StoredRow {
                        position,
                        values: values.clone(),
                    });
                    rows.push(values);
                }
            }
            store.publish("c", position, &rows).unwrap();
            store.seal().unwrap();
        }
        (store, decl, published)
    }

    /// A read holds the store's own segment readers across compaction steps that retire and
    /// remove every file it holds, on the real file system, and reads exactly what was
    /// published through them afterwards.
    ///
    /// The read is built as `Cursor` builds it — one `ColumnRun` per segment of each partition,
    /// each holding the `Arc` of the reader `Store::partition_in` hands out (the cached one, or
    /// mapped now) — and finished with the runs' own `rows_into`. A `Cursor` borrows the store,
    /// so the public API cannot hold one across `&mut self` compaction; this is the same
    /// `Arc<OpenSegment>` a cursor holds, and what it proves is what the cursor relies on: the
    /// store lets go of a retired input's reader and unlinks the file, and a map still held
    /// keeps answering, checksums and all, from the unlinked file's pages. With the cache
    /// capped at 4, each held reader was evicted before the next partition's were opened, so
    /// the read holds one map per run, and compaction maps most inputs anew: most held maps
    /// of the second half are read (and their blocks verified) for the first time after their
    /// file is gone.
    ///
    /// It fails if an input were truncated or rewritten in place instead of unlinked (checked
    /// by hand: with `remove_retired` truncating each input to 0 bytes before removing it, this
    /// test dies of SIGBUS reading the first row after compaction), and if the store kept a
    /// retired reader cached or the file on disk.
    #[test]
    fn a_read_holding_inputs_reads_them_whole_after_compaction_removes_them() {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, decl, published) = sealed(dir.path());

        // The read: every segment of every partition, held as a cursor holds them.
        let mut runs: Vec<(TrackKey, u64, ColumnRun)> = Vec::new();
        for view in store.catalog.partitions("c", &TrackKey::ROOT) {
            for (name, _) in view.segments(Tier::Raw) {
                let (reader, part_idx) = store.partition_in(&view, name, "c").unwrap();
                super::resolve(&decl, &reader, part_idx).unwrap();
                let n_rows = reader.positions(part_idx).unwrap().len();
                assert_eq!(reader.chunk_end(part_idx, 0).unwrap(), n_rows, "one chunk");
                let unpacked =
                    super::Unpacked::of(&reader, part_idx, 0..n_rows, &decl, None).unwrap();
                let run = ColumnRun {
                    segment: reader,
                    part_idx,
                    rows: 0..n_rows,
                    track: Arc::new(view.track().clone()),
                    unpacked: unpacked.map(|u| (0, Arc::new(u))),
                };
                runs.push((view.track().clone(), name, run));
            }
        }
        let held: HashSet<*const OpenSegment> = runs
            .iter()
            .map(|(_, _, run)| Arc::as_ptr(&run.segment))
            .collect();
        let held = held.len() as u64;
        assert_eq!(held, N_BARRIERS * TRACKS.len() as u64, "a map per run");
        // Part-way: the first half of each partition's barriers is read before compaction.
        let mut read: BTreeMap<TrackKey, Vec<StoredRow>> = BTreeMap::new();
        let mut read_runs = |runs: &[(TrackKey, u64, ColumnRun)],
                             barriers: std::ops::Range<u64>| {
            for (track, _, run) in runs {
                let barrier = run.positions().next().unwrap() - 1;
                if barriers.contains(&barrier) {
                    let rows = read.entry(track.clone()).or_default();
                    run.rows_into(&decl, 0..run.len(), rows).unwrap();
                }
            }
        };
        read_runs(&runs, 0..N_BARRIERS / 2);

        let steps = store.compact().unwrap();
        let removed: Vec<u64> = steps.iter().flat_map(|s| s.removed.clone()).collect();
        for (_, name, _) in &runs {
            assert!(
                removed.contains(name),
                "input {name} was removed: {steps:?}"
            );
            let path = NumberedName::segment(*name).path_in(SEG_DIR);
            assert!(!dir.path().join(&path).exists(), "{path} is gone from disk");
            let cached = store
                .readers
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(*name);
            assert!(cached.is_none(), "the store let go of {path}'s reader");
        }
        // The rest of the read, through maps of files that no longer exist.
        read_runs(&runs, N_BARRIERS / 2..N_BARRIERS);
        for track in TRACKS {
            let key = TrackKey::encode(&[track]).unwrap();
            assert!(
                read[&key] == published[track],
                "the rows of {track} read through removed inputs differ from those published"
            );
        }
        // And the compacted store answers the same, from its outputs.
        for track in TRACKS {
            assert!(store.query("c", &[track], ..).unwrap() == published[track]);
        }
        // Only the maps held here keep the removed inputs alive: the store's are its outputs.
        let alive = store.live_maps.now();
        assert!(alive > held, "{alive} maps alive, {held} held by the read");
        drop(runs);
        assert_eq!(
            store.live_maps.now(),
            alive - held,
            "the maps of removed inputs lived only as long as the read held them"
        );
    }
}
