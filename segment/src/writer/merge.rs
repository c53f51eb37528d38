//! A partition's rows merged from partitions of other segments (compaction), streamed from
//! their maps into the writer without gathering a column in memory.
//!
//! The inputs are partitions of one stream and track whose rows follow one another (each
//! input's ordinals above the last one's, positions and axis never going back). The output's
//! positions and ordinals are the inputs' concatenated (as runs where that is smaller, found as
//! the values stream by), `str` and `bytes` columns their offsets rebased and heaps
//! concatenated, and every axis and numeric column packed in chunks that are the inputs' own:
//!
//! - **Chunks move, they are not re-encoded.** The output's chunk boundaries are planned once
//!   for the partition ([`plan_groups`]), from the inputs' own chunk boundaries: an input chunk
//!   that cannot share a chunk of at most `PACK_ROWS` rows with its neighbours is an output
//!   chunk of its own, and its pco bytes are copied as they are (only the block's crc, which
//!   covers them in the output, is new). Runs of small chunks (barriers of a few rows each)
//!   are gathered into chunks of up to `PACK_ROWS` rows and encoded again, so an output does
//!   not keep a barrier's worth of pco headers per chunk.
//! - Every packed block of the output is chunked alike (the reader's `chunk_end` relies on it),
//!   since the plan is made of rows, not of any one block.
//!
//! Memory: one output chunk's values (at most `PACK_ROWS`), the chunk table of a block (32 bytes
//! per chunk), the plan (one entry per output chunk) and a bounded batch of rebased offsets.

use std::io;
use std::ops::{Deref, Range};

use strata_index::TrackKey;
use zerocopy::IntoBytes;
use zerocopy::little_endian::U64;

use super::{Out, RUNS_KEPT_MAX, RowsWritten, SegmentSink, SegmentWriter, put_u64s};
use crate::error::SegmentError;
use crate::format::{BlockKind, ChunkRecord, ENCODING_PACKED, PACK_MIN_ROWS, PACK_ROWS, RunRecord};
use crate::packed::{self, Decoded, Numbers};
use crate::reader::{Column, SegmentReader, VarColumn};
use crate::runs::{RunsBuilder, Sequence};

/// One input of a merge: partition `part_idx` of `reader`.
#[derive(Debug)]
pub struct MergeSource<'r, B> {
    /// The segment holding the input.
    pub reader: &'r SegmentReader<B>,
    /// The partition's index in it.
    pub part_idx: usize,
}

impl<B> Clone for MergeSource<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B> Copy for MergeSource<'_, B> {}

/// Why a merged partition's rows were not written.
#[derive(Debug)]
pub enum MergeWriteError {
    /// An input could not be read (bad bytes, or inputs that do not follow one another): the
    /// output is unfinished and nothing was claimed.
    Read(SegmentError),
    /// The sink failed.
    Write(io::Error),
}

impl From<io::Error> for MergeWriteError {
    fn from(error: io::Error) -> Self {
        MergeWriteError::Write(error)
    }
}

impl std::fmt::Display for MergeWriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MergeWriteError::Read(e) => write!(f, "reading a merge's input: {e}"),
            MergeWriteError::Write(e) => write!(f, "writing a merge's output: {e}"),
        }
    }
}

impl std::error::Error for MergeWriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MergeWriteError::Read(e) => Some(e),
            MergeWriteError::Write(e) => Some(e),
        }
    }
}

/// Rows `rows` of input `source`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Piece {
    source: usize,
    rows: Range<usize>,
}

/// One chunk of the output: the input rows it holds, in order (at most `PACK_ROWS`).
#[derive(Clone, Debug, Default)]
struct Group {
    pieces: Vec<Piece>,
    n_rows: usize,
}

/// One input's values of one block: an axis or numeric column, plain or packed.
type Values<'a> = Column<'a>;

impl<S: SegmentSink> SegmentWriter<S> {
    /// Writes the row blocks of one partition merged from `sources` (oldest rows first), as
    /// [`SegmentWriter::write_rows`] writes a partition's rows: the partition is complete once
    /// [`SegmentWriter::write_cells`] follows. See the module's documentation for what moves
    /// and what is encoded again.
    ///
    /// # Errors
    /// `Read` if an input does not read, or the inputs are not one partition's consecutive
    /// rows (other stream, track or columns; ordinals, positions or axis going back across
    /// them); `Write` if the sink fails. Either way the file is unfinished and the writer must
    /// be dropped.
    ///
    /// # Panics
    /// If `sources` is empty, or the partition is in this segment already.
    pub fn write_merged_rows<B: Deref<Target = [u8]>>(
        &mut self,
        sources: &[MergeSource<'_, B>],
    ) -> Result<RowsWritten, MergeWriteError> {
        let first = sources.first().expect("a merge has inputs");
        let info = &first.reader.partitions()[first.part_idx];
        check_sources(sources)?;
        let last = sources[sources.len() - 1];
        let last_entry = &last.reader.partitions()[last.part_idx].entry;
        let (stream, track): (String, TrackKey) =
            (info.entry.stream.clone(), info.entry.track.clone());
        let n_rows: u64 = sources.iter().map(|s| entry_rows(s)).sum();
        let n_rows_usize = usize::try_from(n_rows).map_err(|_| {
            MergeWriteError::Read(SegmentError::mismatch(
                first.reader.path(),
                format!("a merge of {n_rows} rows"),
            ))
        })?;
        self.open_partition(&stream, &track);
        let blocks_before = self.blocks.len();

        let positions = sequences(sources, SegmentReader::positions)?;
        self.push_merged_sequence(BlockKind::Positions, &positions, n_rows_usize)?;
        let ordinals = sequences(sources, SegmentReader::ordinals)?;
        self.push_merged_sequence(BlockKind::Ordinals, &ordinals, n_rows_usize)?;

        let groups = plan_groups(sources)?;
        let axis = if info.entry.axis.is_some() {
            let mut axes = Vec::with_capacity(sources.len());
            for s in sources {
                let axis = s.reader.axis(s.part_idx).map_err(MergeWriteError::Read)?;
                // A merge streams through every chunk once: not through the chunk cache.
                axes.push(match axis {
                    Some(crate::Axis::Plain(values)) => Column::U64(values),
                    Some(crate::Axis::Packed(packed)) => Column::Packed(packed.uncached()),
                    None => unreachable!("check_sources: every input has an axis"),
                });
            }
            self.push_merged_numbers(BlockKind::Axis, 0, 0, &axes, &groups, n_rows_usize)?;
            Some([
                info.entry.axis.map_or(0, |a| a[0]),
                last_entry.axis.map_or(0, |a| a[1]),
            ])
        } else {
            None
        };
        for &(field, kind) in &info.columns {
            let mut columns = Vec::with_capacity(sources.len());
            for s in sources {
                let column = s
                    .reader
                    .column(s.part_idx, field)
                    .map_err(MergeWriteError::Read)?
                    .expect("check_sources: every input stores the same columns");
                columns.push(column.uncached());
            }
            if kind <= 3 {
                self.push_merged_numbers(
                    BlockKind::Column,
                    kind,
                    field,
                    &columns,
                    &groups,
                    n_rows_usize,
                )?;
            } else {
                let vars: Vec<VarColumn<'_>> = columns
                    .iter()
                    .map(|c| match c {
                        Column::Str(v) | Column::Bytes(v) => *v,
                        _ => unreachable!("check_sources: a column of kind {kind} is str or bytes"),
                    })
                    .collect();
                self.push_block(BlockKind::Column, kind, field, n_rows_usize, |out| {
                    put_merged_var(out, &vars)
                })?;
            }
        }
        // Each numeric column's null rows: the inputs' runs, each moved past the rows before
        // it, joined where one input's last rows and the next one's first are null.
        for &(field, kind) in info.columns.iter().filter(|&&(_, kind)| kind <= 3) {
            let mut runs: Vec<Range<u64>> = Vec::new();
            let mut before = 0u64;
            for s in sources {
                let nulls = s
                    .reader
                    .nulls(s.part_idx, field)
                    .map_err(MergeWriteError::Read)?;
                for run in nulls.runs() {
                    crate::validity::push_run(&mut runs, run.start + before..run.end + before);
                }
                before += entry_rows(s);
            }
            self.push_validity(field, kind, &runs, n_rows_usize)?;
        }
        let open = self.open.as_mut().expect("opened above");
        open.n_rows = n_rows;
        open.positions = [info.entry.positions[0], last_entry.positions[1]];
        open.ordinals = [info.entry.ordinals[0], last_entry.ordinals[1]];
        open.axis = axis;
        Ok(RowsWritten {
            n_rows,
            column_bytes: self.column_bytes_since(blocks_before),
        })
    }

    /// Positions or ordinals concatenated from the inputs: as runs when they take fewer bytes
    /// than a plain `u64` a row, as [`SegmentWriter::push_row_block`] decides for one slice.
    /// Found in one pass over the values, written in a second only if they are plain or too
    /// many runs to keep.
    fn push_merged_sequence(
        &mut self,
        role: BlockKind,
        sequences: &[Sequence<'_>],
        n_rows: usize,
    ) -> io::Result<()> {
        let kind = match role {
            BlockKind::Positions => BlockKind::PositionRuns,
            BlockKind::Ordinals => BlockKind::OrdinalRuns,
            other => unreachable!("{other:?} is not run-encoded"),
        };
        let values = || sequences.iter().flat_map(Sequence::iter);
        let (mut n_runs, mut kept) = (0usize, Vec::new());
        let mut keep = |run: RunRecord| {
            n_runs += 1;
            if n_runs <= RUNS_KEPT_MAX {
                kept.push(run);
            } else if !kept.is_empty() {
                kept = Vec::new();
            }
        };
        feed_runs(sequences, &mut keep);
        if n_runs * size_of::<RunRecord>() >= n_rows * 8 {
            return self.push_block(role, 0, 0, n_rows, |out| {
                let mut batch = Vec::with_capacity(VALUES_BATCH);
                for value in values() {
                    batch.push(value);
                    if batch.len() == VALUES_BATCH {
                        put_u64s(out, &batch)?;
                        batch.clear();
                    }
                }
                put_u64s(out, &batch)
            });
        }
        self.push_block(kind, 0, 0, n_rows, |out| {
            if kept.len() == n_runs {
                return out.put(kept.as_bytes());
            }
            let mut written = Ok(());
            feed_runs(sequences, &mut |run: RunRecord| {
                if written.is_ok() {
                    written = out.put(run.as_bytes());
                }
            });
            written
        })
    }

    /// An axis or numeric column merged from the inputs' `columns`, chunked by `groups`: packed
    /// if any input's block is (copying each chunk an input holds as an output chunk, encoding
    /// the others), or if its first chunk packs smaller than plain; else plain, the inputs'
    /// bytes one after the other.
    fn push_merged_numbers(
        &mut self,
        kind: BlockKind,
        field_kind: u8,
        field: u16,
        columns: &[Values<'_>],
        groups: &[Group],
        n_rows: usize,
    ) -> Result<(), MergeWriteError> {
        let code = if kind == BlockKind::Axis {
            1
        } else {
            field_kind
        };
        let any_packed = columns.iter().any(|c| matches!(c, Column::Packed(_)));
        let mut first = None;
        if !any_packed || !self.packing {
            // As the writer decides for one slice: packed if the first chunk packs smaller.
            let group = &groups[0];
            let values = gather(columns, group, code).map_err(MergeWriteError::Read)?;
            let bytes = (self.packing && group.n_rows >= PACK_MIN_ROWS)
                .then(|| numbers_of(&values).compress(0..group.n_rows))
                .filter(|b| b.len() < group.n_rows * 8);
            let Some(bytes) = bytes else {
                return self.push_merged_plain(kind, field_kind, field, columns, n_rows);
            };
            first = Some((bytes, values));
        }
        let mut failed = None;
        let written = self.push_encoded(kind, field_kind, field, n_rows, ENCODING_PACKED, |out| {
            let mut table: Vec<ChunkRecord> = Vec::with_capacity(groups.len());
            let (mut end_row, mut end_byte) = (0u64, 0u64);
            for (group_idx, group) in groups.iter().enumerate() {
                let (bytes, first_bits, last_bits) = match (group_idx, first.take()) {
                    (0, Some((bytes, values))) => {
                        let ends = ends_of(&values);
                        (std::borrow::Cow::Owned(bytes), ends.0, ends.1)
                    }
                    _ => {
                        if let Some((bytes, record)) = chunk_to_copy(columns, group) {
                            (
                                std::borrow::Cow::Borrowed(bytes),
                                record.first.get(),
                                record.last.get(),
                            )
                        } else {
                            let values = match gather(columns, group, code) {
                                Ok(values) => values,
                                Err(e) => {
                                    failed = Some(e);
                                    return Err(io::Error::other("an input did not read"));
                                }
                            };
                            let ends = ends_of(&values);
                            let bytes = numbers_of(&values).compress(0..group.n_rows);
                            (std::borrow::Cow::Owned(bytes), ends.0, ends.1)
                        }
                    }
                };
                out.put(&bytes)?;
                end_row += group.n_rows as u64;
                end_byte += bytes.len() as u64;
                table.push(ChunkRecord {
                    end_row: U64::new(end_row),
                    end_byte: U64::new(end_byte),
                    first: U64::new(first_bits),
                    last: U64::new(last_bits),
                });
            }
            out.put(packed::table_bytes(&table))?;
            out.put(&(table.len() as u64).to_le_bytes())
        });
        match (written, failed) {
            (_, Some(e)) => Err(MergeWriteError::Read(e)),
            (Err(e), None) => Err(MergeWriteError::Write(e)),
            (Ok(()), None) => Ok(()),
        }
    }
}

impl<S: SegmentSink> SegmentWriter<S> {
    /// An axis or numeric column merged plain: plain inputs' bytes as they are, packed ones
    /// decoded a chunk at a time.
    fn push_merged_plain(
        &mut self,
        kind: BlockKind,
        field_kind: u8,
        field: u16,
        columns: &[Values<'_>],
        n_rows: usize,
    ) -> Result<(), MergeWriteError> {
        let mut failed = None;
        let written = self.push_block(kind, field_kind, field, n_rows, |out| {
            for column in columns {
                let Column::Packed(packed) = column else {
                    out.put(plain_bytes(column))?;
                    continue;
                };
                for chunk in 0..packed.chunks() {
                    match packed.decode_chunk(chunk) {
                        Ok(decoded) => out.put(decoded_bytes(&decoded))?,
                        Err(e) => {
                            failed = Some(e);
                            return Err(io::Error::other("an input did not read"));
                        }
                    }
                }
            }
            Ok(())
        });
        match (written, failed) {
            (_, Some(e)) => Err(MergeWriteError::Read(e)),
            (Err(e), None) => Err(MergeWriteError::Write(e)),
            (Ok(()), None) => Ok(()),
        }
    }
}

/// Decoded values' bytes as a plain block holds them (the `Decoded` types are the file's
/// little-endian ones).
fn decoded_bytes(decoded: &Decoded) -> &[u8] {
    match decoded {
        Decoded::U64(v) => v.as_bytes(),
        Decoded::I64(v) => v.as_bytes(),
        Decoded::F64(v) => v.as_bytes(),
    }
}

/// The greedy runs of `sequences`' values one after the other, each handed to `ended`: a run
/// block's runs are fed whole (constant time each), a plain block's values one by one.
fn feed_runs(sequences: &[Sequence<'_>], ended: &mut impl FnMut(RunRecord)) {
    let mut builder = RunsBuilder::default();
    for sequence in sequences {
        if let Some(runs) = sequence.as_runs() {
            let mut row = 0;
            for run in runs {
                let end = run.end.get();
                builder.push_run(run.start.get(), run.step.get(), end - row, &mut *ended);
                row = end;
            }
        } else {
            for value in sequence {
                if let Some(run) = builder.push(value) {
                    ended(run);
                }
            }
        }
    }
    if let Some(run) = builder.finish() {
        ended(run);
    }
}

/// Values gathered into memory at a time when a sequence is written plain.
const VALUES_BATCH: usize = 4096;

/// Rows of input `source` as its directory records them.
fn entry_rows<B: Deref<Target = [u8]>>(source: &MergeSource<'_, B>) -> u64 {
    source.reader.partitions()[source.part_idx].entry.n_rows
}

fn sequences<'r, B: Deref<Target = [u8]>>(
    sources: &[MergeSource<'r, B>],
    read: impl Fn(&'r SegmentReader<B>, usize) -> Result<Sequence<'r>, SegmentError>,
) -> Result<Vec<Sequence<'r>>, MergeWriteError> {
    sources
        .iter()
        .map(|s| read(s.reader, s.part_idx).map_err(MergeWriteError::Read))
        .collect()
}

/// Checks that `sources` are one partition's consecutive rows, from what their directories
/// say (which every block's contents were or will be checked against): one stream and track,
/// the same columns and axis, ordinals climbing and positions and axis never going back from
/// one input to the next.
fn check_sources<B: Deref<Target = [u8]>>(
    sources: &[MergeSource<'_, B>],
) -> Result<(), MergeWriteError> {
    let first = &sources[0].reader.partitions()[sources[0].part_idx];
    for pair in sources.windows(2) {
        let (a, b) = (
            &pair[0].reader.partitions()[pair[0].part_idx],
            &pair[1].reader.partitions()[pair[1].part_idx],
        );
        let path = pair[1].reader.path();
        let refuse = |what: String| Err(MergeWriteError::Read(SegmentError::mismatch(path, what)));
        if (&b.entry.stream, &b.entry.track) != (&first.entry.stream, &first.entry.track)
            || b.columns != first.columns
            || b.entry.axis.is_some() != first.entry.axis.is_some()
        {
            return refuse(format!(
                "partition {:?} of {:?} is not the partition {:?} of {:?} it is merged with",
                b.entry.track, b.entry.stream, first.entry.track, first.entry.stream
            ));
        }
        let axis_back = matches!((a.entry.axis, b.entry.axis), (Some(x), Some(y)) if y[0] < x[1]);
        if b.entry.ordinals[0] <= a.entry.ordinals[1]
            || b.entry.positions[0] < a.entry.positions[1]
            || axis_back
        {
            return refuse(format!(
                "partition {:?} does not follow the rows of {} it is merged after",
                b.entry.track,
                pair[0].reader.path()
            ));
        }
    }
    Ok(())
}

/// Where each input's chunks end, in its own rows: the chunks of its packed blocks (the writer
/// chunks every packed block of a partition alike), or every `PACK_ROWS` rows if none is packed.
fn chunk_ends<B: Deref<Target = [u8]>>(
    source: &MergeSource<'_, B>,
) -> Result<Vec<usize>, MergeWriteError> {
    let n_rows = usize::try_from(entry_rows(source)).unwrap_or(usize::MAX);
    let mut ends = Vec::new();
    let mut row = 0;
    while row < n_rows {
        let end = source
            .reader
            .chunk_end(source.part_idx, row)
            .map_err(MergeWriteError::Read)?;
        let end = if end <= row || end - row > PACK_ROWS {
            (row + PACK_ROWS).min(n_rows)
        } else {
            end
        };
        ends.push(end);
        row = end;
    }
    Ok(ends)
}

/// The output's chunks: the inputs' chunks in order, each kept whole (never split), and
/// consecutive ones gathered while they fit `PACK_ROWS` rows together, so a chunk that fills
/// more than half of one is always an output chunk of its own and can be copied.
fn plan_groups<B: Deref<Target = [u8]>>(
    sources: &[MergeSource<'_, B>],
) -> Result<Vec<Group>, MergeWriteError> {
    let mut groups = Vec::new();
    let mut group = Group::default();
    for (source_idx, source) in sources.iter().enumerate() {
        let mut start = 0;
        for end in chunk_ends(source)? {
            let n = end - start;
            if group.n_rows + n > PACK_ROWS {
                groups.push(std::mem::take(&mut group));
            }
            group.pieces.push(Piece {
                source: source_idx,
                rows: start..end,
            });
            group.n_rows += n;
            start = end;
        }
    }
    if group.n_rows > 0 {
        groups.push(group);
    }
    Ok(groups)
}

/// The pco bytes and record of the input chunk `group` is, if it is exactly one chunk of a
/// packed input block: what the output holds as it is.
fn chunk_to_copy<'a>(columns: &[Values<'a>], group: &Group) -> Option<(&'a [u8], ChunkRecord)> {
    let [piece] = &group.pieces[..] else {
        return None;
    };
    let Column::Packed(packed) = columns[piece.source] else {
        return None;
    };
    let chunk = packed.chunk_of(piece.rows.start);
    (packed.chunk_rows(chunk) == piece.rows)
        .then(|| (packed.chunk_pco_bytes(chunk), packed.table[chunk]))
}

/// A group's values, decoded (only the chunks it touches) or copied from plain inputs.
fn gather(columns: &[Values<'_>], group: &Group, code: u8) -> Result<Decoded, SegmentError> {
    let mut out = Decoded::with_capacity(code, group.n_rows);
    for piece in &group.pieces {
        let column = &columns[piece.source];
        match column {
            Column::Packed(packed) => out.append(&packed.decode(piece.rows.clone())?),
            plain => out.append(
                &plain
                    .numbers(piece.rows.clone())?
                    .expect("an axis or numeric column"),
            ),
        }
    }
    Ok(out)
}

/// Decoded values as the numbers the packer takes. The `Decoded` types are the file's
/// little-endian ones; on a little-endian host the conversion is a copy the compiler elides.
fn numbers_of(values: &Decoded) -> Owned {
    match values {
        Decoded::U64(v) => Owned::U64(v.iter().map(|x| x.get()).collect()),
        Decoded::I64(v) => Owned::I64(v.iter().map(|x| x.get()).collect()),
        Decoded::F64(v) => Owned::F64(v.iter().map(|x| x.get()).collect()),
    }
}

/// Numbers of one chunk, owned.
enum Owned {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl Owned {
    fn compress(&self, rows: Range<usize>) -> Vec<u8> {
        match self {
            Owned::U64(v) => Numbers::U64(v).compress(rows),
            Owned::I64(v) => Numbers::I64(v).compress(rows),
            Owned::F64(v) => Numbers::F64(v).compress(rows),
        }
    }
}

/// The first and last value of a chunk, as their 8 little-endian bytes read as a u64 (what a
/// chunk record holds).
fn ends_of(values: &Decoded) -> (u64, u64) {
    let n = values.len();
    (values.bits(0), values.bits(n - 1))
}

/// A plain input column's bytes as the file holds them.
fn plain_bytes<'a>(column: &Values<'a>) -> &'a [u8] {
    match column {
        Column::U64(v) => v.as_bytes(),
        Column::I64(v) => v.as_bytes(),
        Column::F64(v) => v.as_bytes(),
        _ => unreachable!("only called when no input is packed, for numbers"),
    }
}

/// A `str` or `bytes` column merged: `rows + 1` offsets, each input's rebased onto the heaps
/// before it, then the heaps one after the other.
fn put_merged_var<S: SegmentSink>(out: &mut Out<S>, vars: &[VarColumn<'_>]) -> io::Result<()> {
    let mut batch: Vec<u64> = Vec::with_capacity(VALUES_BATCH);
    batch.push(0);
    let mut base = 0u64;
    for var in vars {
        for offset in &var.offsets[1..] {
            batch.push(base + offset.get());
            if batch.len() == VALUES_BATCH {
                put_u64s(out, &batch)?;
                batch.clear();
            }
        }
        base += var.heap.len() as u64;
    }
    put_u64s(out, &batch)?;
    vars.iter().try_for_each(|var| out.put(var.heap))
}
