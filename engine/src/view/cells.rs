//! A file's cells: the ones it stores, or a level folded from its rows where it stores none
//! (`LevelStorage::Adaptive`), and how a read merges them across a partition's segments as a
//! right fold, newest first. What `survey` and `fold` read through (`survey.rs`), and what a
//! compaction step merges (`compact.rs`).

use std::cell::RefCell;

use strata_index::PartitionEntry;
use strata_levels::{Bucket, Cell, Ladder, Num};
use strata_segment::vfs::Mapped;
use strata_segment::{Axis, Decoded, SegmentError, SegmentReader};

use crate::error::EngineError;
use crate::view::read::unreadable;

/// One run of cells a level read asks of every file: `field`'s cells of `level` with indexes
/// in `cells` (inclusive).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CellRun {
    pub field: u16,
    pub level: u8,
    pub cells: [u64; 2],
}

/// The cells of `run` that partition `part_idx` of `reader` stores (checked already against
/// `entry`), ascending by index, checked against the stream's grid. Above the segment's top
/// level, its single top cell is the cell, under a coarser index. `cached`: whether the packed
/// chunks of cells it decodes go through the chunk cache (a read's), or not (a merge's, which
/// passes once through its inputs' cells).
pub(crate) fn cells_in(
    reader: &SegmentReader<Mapped>,
    part_idx: usize,
    entry: &PartitionEntry,
    ladder: &Ladder,
    CellRun {
        field,
        level,
        cells,
    }: CellRun,
    rows: Option<&FoldRows>,
    cached: bool,
) -> Result<Vec<Cell>, EngineError> {
    let top = entry.n_levels - 1;
    let (stored_level, stored_cells) = if level <= top {
        (level, cells[0]..=cells[1])
    } else {
        (top, 0..=u64::MAX)
    };
    let stored = if cached {
        reader.cells(part_idx, field, stored_level, stored_cells.clone())
    } else {
        reader.cells_uncached(part_idx, field, stored_level, stored_cells.clone())
    }
    .map_err(unreadable)?;
    check_on_grid(reader, entry, ladder, stored_level, &stored)?;
    let stored_from = reader.partitions()[part_idx].stored_from;
    let stored = if stored_level < stored_from {
        // Not stored whole: folded from the rows, with the cells the file holds (a merge's,
        // where its inputs' partial cells met) in their place.
        let span = [
            ladder
                .span(stored_level, *stored_cells.start())
                .map_or(u64::MAX, |s| s[0]),
            ladder
                .span(stored_level, *stored_cells.end())
                .map_or(u64::MAX, |s| s[1]),
        ];
        let folded = match rows {
            // Every row of the partition, decoded already (a merge folds several levels).
            Some(rows) => fold_decoded(ladder, field, stored_level, rows)
                .into_iter()
                .filter(|c| stored_cells.contains(&c.index))
                .collect(),
            None => fold_file_rows(reader, part_idx, ladder, field, stored_level, span)?,
        };
        with_stored(reader, entry, stored_level, folded, stored)?
    } else {
        stored
    };
    Ok(if level <= top {
        stored
    } else {
        stored
            .into_iter()
            .map(|c| Cell {
                index: lift(ladder, c.index, level - top),
                bucket: c.bucket,
            })
            .filter(|c| (cells[0]..=cells[1]).contains(&c.index))
            .collect()
    })
}

/// The cells of `level` that partition `part_idx`'s raw rows with axis in `span` fold to, as a
/// level stored whole would hold them (bit for bit: `Ladder::fold_rows_to`). Where the file has
/// seams (a merge's, segment format 6), the rows on either side of each are folded apart, and a
/// cell they share comes back as a chain of the pieces, oldest first: what the barriers merged
/// into the file answered, which a read folds link by link.
pub(crate) fn fold_file_rows(
    reader: &SegmentReader<Mapped>,
    part_idx: usize,
    ladder: &Ladder,
    field: u16,
    level: u8,
    span: [u64; 2],
) -> Result<Vec<Cell>, EngineError> {
    let rows = file_rows(reader, part_idx, ladder, field, span, true)?;
    Ok(fold_decoded(ladder, field, level, &rows))
}

/// Rows of one partition decoded for a fold: the axis, one field's values, where the rows are
/// parted (seams, as indexes into these rows, each inside them), and from which level the cell
/// holding the partition's last row (its axis value) stays a chain of its pieces.
pub(crate) struct FoldRows {
    pub axis: Vec<u64>,
    /// `Ladder::shared_levels` of the axis, computed once for every level folded.
    pub shared: Vec<u8>,
    pub numbers: Decoded,
    pub cuts: Vec<usize>,
    pub chained: Option<(u8, u64)>,
    /// The last level [`fold_decoded`] folded these rows to, and each piece's cells there
    /// (before pieces are merged): a fold to a level above it folds those cells up
    /// (`Ladder::fold_level`, the same cells bit for bit as folding the rows) instead of the
    /// rows again. A merge folds an input's rows to every level from the output's lowest
    /// stored one up to the input's, in ascending order.
    pub folded: RefCell<Option<(u8, Vec<Vec<Cell>>)>>,
}

impl FoldRows {
    /// These rows with axis in `[lo, hi]`, as rows of their own (seams among them kept).
    pub(crate) fn within(&self, [lo, hi]: [u64; 2]) -> FoldRows {
        let start = self.axis.partition_point(|&a| a < lo);
        let end = self.axis.partition_point(|&a| a <= hi).max(start);
        let mut numbers = Decoded::with_capacity(self.numbers.kind_code(), end - start);
        numbers.append_rows(&self.numbers, start..end);
        FoldRows {
            axis: self.axis[start..end].to_vec(),
            shared: self.shared[start.min(self.shared.len())
                ..end.saturating_sub(1).max(start).min(self.shared.len())]
                .to_vec(),
            numbers,
            cuts: self
                .cuts
                .iter()
                .filter(|&&c| c > start && c < end)
                .map(|&c| c - start)
                .collect(),
            chained: self.chained,
            folded: RefCell::new(None),
        }
    }
}

/// The axis and `field`'s values of partition `part_idx`'s rows with axis in `[lo, hi]`,
/// decoded (only the chunks they lie in), and the file's seams among them. `cached`: whether
/// the chunks go through the chunk cache (a read's), or not (a merge's, which reads them once).
pub(crate) fn file_rows(
    reader: &SegmentReader<Mapped>,
    part_idx: usize,
    ladder: &Ladder,
    field: u16,
    [lo, hi]: [u64; 2],
    cached: bool,
) -> Result<FoldRows, EngineError> {
    let axis = reader
        .axis(part_idx)
        .map_err(unreadable)?
        .map(|axis| if cached { axis } else { axis.uncached() });
    let (start, end) = match &axis {
        Some(axis) => rows_of(axis, [lo, hi])?,
        None => (0, 0),
    };
    let seams = reader.seams(part_idx).map_err(unreadable)?;
    let first = seams.partition_point(|s| s.get() <= start as u64);
    let cuts: Vec<usize> = seams[first..]
        .iter()
        .map(|s| usize::try_from(s.get()).unwrap_or(usize::MAX))
        .take_while(|&s| s < end)
        .map(|s| s - start)
        .collect();
    let axis: Vec<u64> = match axis {
        Some(axis) => axis.values(start..end).map_err(unreadable)?,
        None => Vec::new(),
    };
    let column = reader.column(part_idx, field).map_err(unreadable)?;
    let numbers = match column.map(|c| if cached { c } else { c.uncached() }) {
        Some(column) => column.numbers(start..end).map_err(unreadable)?,
        None => None,
    };
    let numbers = numbers.ok_or_else(|| {
        unreadable(SegmentError::mismatch(
            reader.path(),
            format!("field {field} is not a stored number"),
        ))
    })?;
    let info = &reader.partitions()[part_idx];
    let chained = info.chained_from.zip(info.entry.axis.map(|[_, last]| last));
    let nulls = reader.nulls(part_idx, field).map_err(unreadable)?;
    let (axis, numbers, cuts) = present_rows(axis, numbers, cuts, nulls.mask(start..end));
    Ok(FoldRows {
        shared: ladder.shared_levels(&axis),
        axis,
        numbers,
        cuts,
        chained,
        folded: RefCell::new(None),
    })
}

/// The rows a level folds: those whose value is present, neither null (`nulls`, a flag per
/// row) nor an `f64` NaN. Answers their axis, their values and the cuts moved to the rows
/// that remain (a piece whose rows are all missing becomes empty, and folds to no cell). As it
/// was given when every value is present.
pub(crate) fn present_rows(
    axis: Vec<u64>,
    numbers: Decoded,
    cuts: Vec<usize>,
    nulls: Option<Vec<bool>>,
) -> (Vec<u64>, Decoded, Vec<usize>) {
    let nan = |row: usize| matches!(&numbers, Decoded::F64(c) if c[row].get().is_nan());
    let missing = |row: usize| nulls.as_ref().is_some_and(|n| n[row]) || nan(row);
    if !(0..axis.len()).any(missing) {
        return (axis, numbers, cuts);
    }
    let keep: Vec<usize> = (0..axis.len()).filter(|&row| !missing(row)).collect();
    let mut kept = Decoded::with_capacity(numbers.kind_code(), keep.len());
    for &row in &keep {
        kept.append_rows(&numbers, row..row + 1);
    }
    // A cut that falls at either end of the rows kept, or on another, parts nothing now (the
    // piece on one side is empty), and is dropped: `fold_decoded` takes each cut inside.
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|&cut| keep.partition_point(|&row| row < cut))
        .filter(|&cut| cut > 0 && cut < keep.len())
        .collect();
    cuts.dedup();
    (keep.iter().map(|&row| axis[row]).collect(), kept, cuts)
}

/// The cells of `level` that `rows` fold to, each piece between two cuts (seams) folded apart,
/// and the pieces of a cell then merged into one, newest first (`p1 + (p2 + (.. + pn))`, the
/// right fold a read took of the barriers before they were merged) — but for the cell holding
/// the partition's last row from the level it is chained (`FoldRows::chained`), whose pieces
/// stay a chain, for a read to fold in front of what follows. Bit for bit what the merge that
/// wrote the file would have stored, had it stored the level (`compact.rs`).
pub(crate) fn fold_decoded(ladder: &Ladder, field: u16, level: u8, rows: &FoldRows) -> Vec<Cell> {
    let FoldRows {
        axis,
        shared,
        numbers,
        cuts,
        chained,
        folded,
    } = rows;
    let mut memo = folded.borrow_mut();
    let pieces: Vec<Vec<Cell>> = match memo.take() {
        // Folded to a level at or beneath this one already: its cells, folded up.
        Some((below, mut pieces)) if below <= level => {
            for _ in below..level {
                for piece in &mut pieces {
                    *piece = ladder.fold_level(piece);
                }
            }
            pieces
        }
        _ => {
            let mut pieces = Vec::with_capacity(cuts.len() + 1);
            let ends = cuts.iter().copied().chain(std::iter::once(axis.len()));
            let mut start = 0;
            for end in ends {
                let (piece, piece_shared) =
                    (&axis[start..end], &shared[start..end.max(start + 1) - 1]);
                let fold = |value: &dyn Fn(usize) -> Num| {
                    ladder.fold_rows_to(field, piece, piece_shared, value, level)
                };
                pieces.push(match numbers {
                    Decoded::U64(c) => fold(&|i| Num::U64(c[start + i].get())),
                    Decoded::I64(c) => fold(&|i| Num::I64(c[start + i].get())),
                    Decoded::F64(c) => {
                        let values: Vec<f64> = c[start..end].iter().map(|v| v.get()).collect();
                        ladder.fold_f64_rows_to(field, piece, piece_shared, &values, level)
                    }
                });
                start = end;
            }
            pieces
        }
    };
    let flat: Vec<Cell> = pieces.iter().flatten().copied().collect();
    *memo = Some((level, pieces));
    drop(memo);
    let pieces = flat;
    if cuts.is_empty() {
        return pieces;
    }
    let chained_cell = chained
        .filter(|&(from, _)| level >= from)
        .map(|(_, last)| ladder.cell(last, level));
    merge_links(&pieces, |index| Some(index) == chained_cell)
}

/// Cells from `links` (ascending by index, an index's links oldest rows first): where
/// `keep(index)`, the links as they are, a chain a read folds in front of a later segment's cell
/// (one link is a plain cell); elsewhere one cell, the links folded newest first, each merged in
/// front — the right fold a read of them takes. A merge's output cells from its inputs' cells;
/// a level folded from a file's rows, from the pieces between its seams.
pub(crate) fn merge_links(links: &[Cell], keep: impl Fn(u64) -> bool) -> Vec<Cell> {
    let mut out = Vec::with_capacity(links.len());
    let mut at = 0;
    while at < links.len() {
        let index = links[at].index;
        let end = at + links[at..].iter().take_while(|c| c.index == index).count();
        if keep(index) {
            out.extend_from_slice(&links[at..end]);
        } else {
            let newest = links[end - 1].bucket;
            let bucket = links[at..end - 1]
                .iter()
                .rev()
                .fold(newest, |newer, link| link.bucket.merge(&newer));
            out.push(Cell { index, bucket });
        }
        at = end;
    }
    out
}

/// The rows `start..end` of partition `part_idx` whose axis lies in `[lo, hi]`: the axis is
/// non-decreasing within a partition, so the range is a binary search.
pub(crate) fn rows_in(
    reader: &SegmentReader<Mapped>,
    part_idx: usize,
    [lo, hi]: [u64; 2],
) -> Result<(usize, usize), EngineError> {
    match reader.axis(part_idx).map_err(unreadable)? {
        Some(axis) => rows_of(&axis, [lo, hi]),
        None => Ok((0, 0)),
    }
}

/// The rows `start..end` of `axis` that lie in `[lo, hi]`.
fn rows_of(axis: &Axis<'_>, [lo, hi]: [u64; 2]) -> Result<(usize, usize), EngineError> {
    let start = axis.lower_bound(lo).map_err(unreadable)?;
    let end = axis.upper_bound(hi).map_err(unreadable)?.max(start);
    Ok((start, end))
}

/// `folded` (ascending; an index several times where seams part its rows) with each of
/// `stored` (ascending, its indexes among `folded`'s) in place of the folded cell or links of its
/// index; an index `stored` holds several times is a chain of partial cells
/// (`CHAINS_VERSION`), which takes the place whole. A stored cell (or chain) of a level
/// folded from the rows must stand where the rows put a cell, and fold as many of them:
/// anything else is bad bytes.
pub(crate) fn with_stored(
    reader: &SegmentReader<Mapped>,
    entry: &PartitionEntry,
    level: u8,
    folded: Vec<Cell>,
    stored: Vec<Cell>,
) -> Result<Vec<Cell>, EngineError> {
    if stored.is_empty() {
        return Ok(folded);
    }
    let mut out = Vec::with_capacity(folded.len() + stored.len());
    let mut folded = folded.into_iter().peekable();
    let mut at = 0;
    while at < stored.len() {
        let index = stored[at].index;
        let end = at + stored[at..].iter().take_while(|c| c.index == index).count();
        let count = stored[at..end]
            .iter()
            .fold(0u64, |n, c| n.saturating_add(c.bucket.count));
        while let Some(cell) = folded.next_if(|c| c.index < index) {
            out.push(cell);
        }
        // The folded cell of this index, or its links where seams part it.
        let mut slot = None;
        while let Some(link) = folded.next_if(|c| c.index == index) {
            slot = Some(slot.unwrap_or(0u64).saturating_add(link.bucket.count));
        }
        match slot {
            Some(folded_count) if folded_count == count => {
                out.extend_from_slice(&stored[at..end]);
            }
            _ => {
                return Err(unreadable(SegmentError::Malformed {
                    path: reader.path().to_owned(),
                    offset: entry.offset,
                    what: format!(
                        "cell {index} of level {level} of field {} does not fold the rows it lies \
                         over",
                        stored[at].bucket.field
                    ),
                }));
            }
        }
        at = end;
    }
    out.extend(folded);
    Ok(out)
}

/// Two runs of cells, each ascending by index, merged into one: where both hold an index, the
/// cell is `earlier.merge(later)` (older rows, or an earlier partition, on the left). The step
/// of both folds a read takes, as a linear pass. `earlier` may hold chains (an index several
/// times, oldest rows first): each link is merged in front of what follows it, last first, as
/// the segments it was merged from would be; `later` holds each index once.
pub(crate) fn merge_runs(earlier: Vec<Cell>, later: Vec<Cell>) -> Vec<Cell> {
    if earlier.is_empty() {
        return later;
    }
    debug_assert!(later.windows(2).all(|w| w[0].index < w[1].index));
    let mut out = Vec::with_capacity(earlier.len() + later.len());
    let mut later = later.into_iter().peekable();
    let mut at = 0;
    while at < earlier.len() {
        let index = earlier[at].index;
        let end = at
            + earlier[at..]
                .iter()
                .take_while(|c| c.index == index)
                .count();
        while let Some(next) = later.next_if(|c| c.index < index) {
            out.push(next);
        }
        let newer = later.next_if(|c| c.index == index).map(|c| c.bucket);
        let bucket = earlier[at..end]
            .iter()
            .rev()
            .fold(newer, |acc, link| {
                Some(acc.map_or(link.bucket, |b| link.bucket.merge(&b)))
            })
            .expect("a run of one index holds a cell");
        out.push(Cell { index, bucket });
        at = end;
    }
    out.extend(later);
    debug_assert!(out.windows(2).all(|w| w[0].index < w[1].index));
    out
}

/// A partition's cells of one run, gathered newest segment first (the right fold a read takes),
/// held in descending index order: an older segment's cells lie below the newer ones' (a barrier
/// boundary shares at most the cells at the seam), so they go on the end rather than in front,
/// and gathering over many segments costs the cells, not the cells times the segments.
#[derive(Clone, Debug, Default)]
pub(crate) struct Descending(Vec<Cell>);

impl Descending {
    /// Merges `older` (ascending by index, chains allowed) in front of what this holds: where
    /// both hold an index, the cell is `older.merge(newer)`, exactly as [`merge_runs`] makes
    /// it, and a chain's links are merged in one by one, last first.
    pub(crate) fn prepend(&mut self, older: Vec<Cell>) {
        if let (Some(lowest), Some(highest)) = (self.0.last(), older.last())
            && highest.index > lowest.index
        {
            // Runs that overlap by more than a seam: the general merge, in ascending order.
            let newer = std::mem::take(self).into_ascending();
            self.0 = merge_runs(older, newer);
            self.0.reverse();
            return;
        }
        for cell in older.into_iter().rev() {
            match self.0.last_mut() {
                Some(lowest) if lowest.index == cell.index => {
                    lowest.bucket = cell.bucket.merge(&lowest.bucket);
                }
                _ => self.0.push(cell),
            }
        }
    }

    /// The cells, ascending by index.
    pub(crate) fn into_ascending(self) -> Vec<Cell> {
        let mut cells = self.0;
        cells.reverse();
        cells
    }
}

/// The index at `up` levels higher of the cell `index`.
pub(crate) fn lift(ladder: &Ladder, index: u64, up: u8) -> u64 {
    (0..up).fold(index, |i, _| ladder.parent(i))
}

/// Merges adjacent cells into groups of `group`, anchored at 0 (cell `c` joins group `c / group`).
pub(crate) fn regroup(cells: Vec<Cell>, group: u128) -> Vec<Bucket> {
    if group == 1 {
        return cells.into_iter().map(|c| c.bucket).collect();
    }
    let mut out: Vec<(u128, Bucket)> = Vec::new();
    for Cell { index, bucket } in cells {
        let g = u128::from(index) / group;
        match out.last_mut() {
            Some((last, merged)) if *last == g => merged.absorb(&bucket),
            _ => out.push((g, bucket)),
        }
    }
    out.into_iter().map(|(_, b)| b).collect()
}

/// Every point of every cell lies in its cell's span on the stream's grid: the promise that
/// lets a read answer a range from cell indexes alone. The file cannot check it (it does not
/// know the ladder), so the read that pairs the two does, for the cells it reads.
pub(crate) fn check_on_grid(
    reader: &SegmentReader<Mapped>,
    entry: &PartitionEntry,
    ladder: &Ladder,
    level: u8,
    cells: &[Cell],
) -> Result<(), EngineError> {
    // `Ladder::span` of each cell, with the width taken once. A width of 2^64 (saturated) has
    // one cell, cell 0, holding every axis; otherwise the span is `index * width` onwards,
    // clamped to the axis, and a cell that starts beyond the axis holds nothing.
    let width = u64::try_from(ladder.width(level)).ok();
    for cell in cells {
        let b = &cell.bucket;
        let span = match width {
            None => (cell.index == 0).then_some([0, u64::MAX]),
            Some(width) => cell
                .index
                .checked_mul(width)
                .map(|start| [start, start.saturating_add(width - 1)]),
        };
        // The reader's block check placed `min` and `max` between `first` and `last` on the
        // axis, so the two ends decide it.
        debug_assert!(
            [b.min.axis, b.max.axis]
                .iter()
                .all(|a| (b.first.axis..=b.last.axis).contains(a))
        );
        let inside = span.is_some_and(|[lo, hi]| lo <= b.first.axis && b.last.axis <= hi);
        if !inside {
            return Err(unreadable(SegmentError::Malformed {
                path: reader.path().to_owned(),
                offset: entry.offset,
                what: format!(
                    "cell {} of level {level} of field {} holds a point outside it on the grid \
                     of ladder {}x{}",
                    cell.index,
                    b.field,
                    ladder.base(),
                    ladder.fanout()
                ),
            }));
        }
    }
    Ok(())
}
