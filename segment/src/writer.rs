//! Writes a segment: one file holding every partition a barrier touches.
//!
//! The writer streams: each block goes to a [`SegmentSink`] as it is produced (a file through a
//! bounded buffer, or memory), its crc32c and the whole file's digest computed as its bytes are
//! handed on. Columns go out as the caller's own bytes where the host is little-endian, as the file
//! is: nothing the size of a column or of the file is copied or held. What the writer keeps is
//! the directory (a record per partition and per block) until [`SegmentWriter::finish_streamed`]
//! writes it and the footer; [`SegmentSummary::claim`] then turns what it learned into the
//! manifest entry that will claim the file, so boot never has to open a segment.

mod merge;
mod sink;

use std::io;
use std::ops::Range;

use strata_index::{FileEntry, FileName, PartitionEntry, TrackKey};
use strata_levels::{Cell, NumKind};
use zerocopy::IntoBytes;
use zerocopy::little_endian::{F64, U16, U32, U64};

pub use self::merge::{MergeSource, MergeWriteError};
pub use self::sink::{
    CountingSink, FileSink, SegmentSink, WRITE_CHUNK_BYTES, WRITE_CHUNK_MIN_BYTES,
    WRITE_DIRECT_BYTES,
};
use crate::cellpack;
use crate::format::{
    BLOCK_CRC_LEN, BlockKind, BlockRecord, CellRecord, DirHeader, ENCODING_PACKED, ENCODING_PLAIN,
    FOOTER_MAGIC, Footer, Header, MeasuredRecord, PACK_MIN_ROWS, PACK_ROWS, PartitionRecord,
    PointRecord, RunRecord, SEGMENT_MAGIC, SEGMENT_VERSION,
};
use crate::packed::{self, Numbers};
use crate::runs;

/// A variable-length column (`str` or `bytes`): value `i` is `heap[offsets[i]..offsets[i + 1]]`.
#[derive(Clone, Copy, Debug)]
pub struct VarData<'a> {
    /// `n + 1` non-decreasing offsets, starting at 0 and ending at `heap.len()`.
    pub offsets: &'a [u64],
    /// The values' bytes, back to back.
    pub heap: &'a [u8],
}

/// One stored column's values, in publish order.
#[derive(Clone, Copy, Debug)]
pub enum ColumnData<'a> {
    /// A `u64` field.
    U64(&'a [u64]),
    /// An `i64` field.
    I64(&'a [i64]),
    /// An `f64` field.
    F64(&'a [f64]),
    /// A `str` field (UTF-8 is the caller's promise; the reader checks it).
    Str(VarData<'a>),
    /// A `bytes` field.
    Bytes(VarData<'a>),
}

impl ColumnData<'_> {
    /// The field kind code this column is stored under.
    pub fn kind_code(&self) -> u8 {
        match self {
            ColumnData::U64(_) => 1,
            ColumnData::I64(_) => 2,
            ColumnData::F64(_) => 3,
            ColumnData::Str(_) => 4,
            ColumnData::Bytes(_) => 5,
        }
    }

    fn n_rows(&self) -> usize {
        match self {
            ColumnData::U64(v) => v.len(),
            ColumnData::I64(v) => v.len(),
            ColumnData::F64(v) => v.len(),
            ColumnData::Str(v) | ColumnData::Bytes(v) => v.offsets.len().saturating_sub(1),
        }
    }
}

/// One measured field's level cells: `levels[k]` holds level `k`'s cells, ascending by index
/// (an index held more than once is a chain, `CHAINS_VERSION`).
#[derive(Clone, Copy, Debug)]
pub struct FieldCells<'a> {
    /// The field's index in the declaration.
    pub field: u16,
    /// The field's numeric kind.
    pub kind: NumKind,
    /// Cells per level, level 0 first. Every measured field of a partition has as many levels.
    pub levels: &'a [Vec<Cell>],
}

/// One partition's rows and cells, as staged by a barrier.
#[derive(Clone, Debug)]
pub struct PartitionInput<'a> {
    /// The stream id.
    pub stream: &'a str,
    /// The partition's full track tuple.
    pub track: &'a TrackKey,
    /// Positions, non-decreasing.
    pub positions: &'a [u64],
    /// Ordinals, strictly increasing.
    pub ordinals: &'a [u64],
    /// Axis values, non-decreasing; `Some` iff the stream declares an axis.
    pub axis: Option<&'a [u64]>,
    /// The stored columns: every field that is neither a track component (the key carries
    /// those) nor the axis (stored above), as `(field index, values)`, in declaration order.
    pub columns: Vec<(u16, ColumnData<'a>)>,
    /// The null rows of measured columns that have any, as [`RowsInput::nulls`].
    pub nulls: Vec<(u16, &'a [Range<u64>])>,
    /// Level cells, one entry per measured field in declaration order (empty without levels).
    pub cells: Vec<FieldCells<'a>>,
    /// The lowest level stored whole: levels beneath it hold only the cells that differ from
    /// the fold of the raw rows (none, for a barrier). 0 stores every level whole.
    pub stored_from: u8,
}

/// One partition's rows, without its cells: what [`SegmentWriter::write_rows`] writes first,
/// so that the caller can choose which levels to store knowing what the rows cost.
#[derive(Clone, Debug)]
pub struct RowsInput<'a> {
    /// The stream id.
    pub stream: &'a str,
    /// The partition's full track tuple.
    pub track: &'a TrackKey,
    /// Positions, non-decreasing.
    pub positions: &'a [u64],
    /// Ordinals, strictly increasing.
    pub ordinals: &'a [u64],
    /// Axis values, non-decreasing; `Some` iff the stream declares an axis.
    pub axis: Option<&'a [u64]>,
    /// The stored columns, as [`PartitionInput::columns`].
    pub columns: Vec<(u16, ColumnData<'a>)>,
    /// The null rows of each measured column that has any, as `(field index, runs)`: runs of
    /// row indexes, ascending, disjoint and not touching, in field order. The column holds a
    /// placeholder in each null row (format 7: a validity block per such column).
    pub nulls: Vec<(u16, &'a [Range<u64>])>,
}

impl<'a> PartitionInput<'a> {
    /// The rows of the partition, without its cells.
    pub fn rows(&self) -> RowsInput<'a> {
        RowsInput {
            stream: self.stream,
            track: self.track,
            positions: self.positions,
            ordinals: self.ordinals,
            axis: self.axis,
            columns: self.columns.clone(),
            nulls: self.nulls.clone(),
        }
    }
}

/// What a partition's rows came to in the file ([`SegmentWriter::write_rows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowsWritten {
    /// Rows written.
    pub n_rows: u64,
    /// Payload bytes of the axis block and the stored columns, as written (packed or plain):
    /// what the rows the levels summarise cost. Positions and ordinals are left out; they are
    /// mostly runs of a few bytes.
    pub column_bytes: u64,
}

/// A partition whose rows are written and whose cells are not yet: what the writer keeps of it
/// in between.
#[derive(Clone, Debug)]
struct OpenPartition {
    stream: String,
    track: TrackKey,
    extent_offset: u64,
    first_block: usize,
    n_rows: u64,
    positions: [u64; 2],
    ordinals: [u64; 2],
    axis: Option<[u64; 2]>,
    /// Whether a seams block was written (then the partition must have levels).
    seams: bool,
    /// From which level the cell holding the last row is a chain of its pieces, if any.
    chained_from: Option<u8>,
}

/// What a segment written to a sink is: its length, digest and partitions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentSummary {
    /// The file's length in bytes.
    pub len: u64,
    /// crc32c of the file up to the footer's digest field.
    pub digest: u32,
    /// What the manifest needs of each partition, in the order they were added.
    pub partitions: Vec<PartitionEntry>,
}

impl SegmentSummary {
    /// The manifest entry that claims this file under `name`.
    pub fn claim(&self, name: FileName) -> FileEntry {
        FileEntry {
            name,
            len: self.len,
            digest: self.digest,
            partitions: self.partitions.clone(),
        }
    }
}

/// A finished segment held in memory (tests, fuzz seeds, tools): the bytes and the summary.
#[derive(Debug)]
pub struct WrittenSegment {
    /// The whole file.
    pub bytes: Vec<u8>,
    /// crc32c of the file up to the footer's digest field.
    pub digest: u32,
    /// What the manifest needs of each partition, in the order they were added.
    pub partitions: Vec<PartitionEntry>,
}

impl WrittenSegment {
    /// The manifest entry that claims this file under `name`.
    pub fn claim(&self, name: FileName) -> FileEntry {
        FileEntry {
            name,
            len: self.bytes.len() as u64,
            digest: self.digest,
            partitions: self.partitions.clone(),
        }
    }
}

/// The bytes on their way to the sink, and the checksums they make: the crc of the block being
/// written and the digest of everything so far. A block's bytes go into both, each with
/// `crc32c_append` while they are in the cache: reading a byte twice costs less than
/// `crc32c_combine` does per block (11-35 µs whatever the block's length, against 0.05 µs to
/// append 500 bytes and 4 µs for 60,000, measured; a file is dozens of blocks).
#[derive(Debug)]
struct Out<S> {
    sink: S,
    /// Bytes put so far: the offset of the next byte in the file.
    offset: u64,
    /// crc32c of every byte put so far.
    digest: u32,
    /// The current block's offset and the crc of its bytes so far.
    block: Option<(u64, u32)>,
}

impl<S: SegmentSink> Out<S> {
    /// Bytes outside any block (the header, the footer): they go into the digest directly.
    fn put_unblocked(&mut self, bytes: &[u8]) -> io::Result<()> {
        assert!(self.block.is_none(), "bytes between blocks inside a block");
        self.digest = crc32c::crc32c_append(self.digest, bytes);
        self.sink.put(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn begin_block(&mut self) {
        assert!(self.block.is_none(), "a block inside a block");
        self.block = Some((self.offset, 0));
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        let (_, crc) = self
            .block
            .as_mut()
            .expect("payload bytes belong to a block");
        *crc = crc32c::crc32c_append(*crc, bytes);
        self.digest = crc32c::crc32c_append(self.digest, bytes);
        self.sink.put(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Closes the block with its crc; answers its payload's offset and length.
    fn end_block(&mut self) -> io::Result<(u64, u64)> {
        let (start, crc) = self.block.take().expect("a block to end");
        let len = self.offset - start;
        self.put_unblocked(&crc.to_le_bytes())?;
        debug_assert_eq!(BLOCK_CRC_LEN, 4);
        Ok((start, len))
    }
}

/// Builds one segment file from many partitions, streaming it to a sink.
#[derive(Debug)]
pub struct SegmentWriter<S = Vec<u8>> {
    out: Out<S>,
    blocks: Vec<BlockRecord>,
    partitions: Vec<PartitionRecord>,
    heap: Vec<u8>,
    summaries: Vec<PartitionEntry>,
    /// The partition whose rows are written and whose cells are not, if any.
    open: Option<OpenPartition>,
    /// Whether axis and numeric blocks are packed where that makes them smaller.
    packing: bool,
}

impl Default for SegmentWriter {
    fn default() -> Self {
        SegmentWriter::new()
    }
}

impl SegmentWriter {
    /// A segment written in memory.
    ///
    /// # Panics
    /// Never: a `Vec` takes every byte.
    pub fn new() -> SegmentWriter {
        SegmentWriter::to_sink(Vec::new()).expect("writing to memory does not fail")
    }

    /// Adds one partition's blocks (see [`SegmentWriter::write_partition`]).
    ///
    /// # Panics
    /// As [`SegmentWriter::write_partition`].
    pub fn add_partition(&mut self, input: &PartitionInput<'_>) {
        self.write_partition(input)
            .expect("writing to memory does not fail");
    }

    /// Writes the directory and the footer; answers the whole file.
    ///
    /// # Panics
    /// Never: a `Vec` takes every byte.
    pub fn finish(self) -> WrittenSegment {
        let (summary, bytes) = self
            .finish_streamed()
            .expect("writing to memory does not fail");
        debug_assert_eq!(summary.len, bytes.len() as u64);
        WrittenSegment {
            bytes,
            digest: summary.digest,
            partitions: summary.partitions,
        }
    }
}

impl<S: SegmentSink> SegmentWriter<S> {
    /// A segment streamed to `sink`; the header goes to it now, the footer at
    /// [`SegmentWriter::finish_streamed`].
    pub fn to_sink(sink: S) -> io::Result<SegmentWriter<S>> {
        let mut header = Header {
            magic: SEGMENT_MAGIC,
            version: U32::new(SEGMENT_VERSION),
            flags: U32::new(0),
            reserved: [0; 12],
            crc: U32::new(0),
        };
        header.crc = U32::new(crc32c::crc32c(&header.as_bytes()[..28]));
        let mut out = Out {
            sink,
            offset: 0,
            digest: 0,
            block: None,
        };
        out.put_unblocked(header.as_bytes())?;
        Ok(SegmentWriter {
            out,
            blocks: Vec::new(),
            partitions: Vec::new(),
            heap: Vec::new(),
            summaries: Vec::new(),
            open: None,
            packing: true,
        })
    }

    /// Whether axis and numeric blocks are packed where that makes them smaller (the default),
    /// or always written plain.
    #[must_use]
    pub fn packing(mut self, packing: bool) -> Self {
        self.packing = packing;
        self
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.out.offset
    }

    /// Whether nothing is written yet (never: the header is written at once).
    pub fn is_empty(&self) -> bool {
        self.out.offset == 0
    }

    /// Writes one partition's blocks to the sink: [`SegmentWriter::write_rows`], then
    /// [`SegmentWriter::write_cells`]. A sink's error is returned as it is; the file is then
    /// unfinished and the writer must be dropped.
    ///
    /// # Panics
    /// If the input breaks what staging guarantees: no rows, columns of different lengths,
    /// positions or axis going backwards, ordinals not increasing, cells out of order, or a
    /// (stream, track) already in this segment. These are bugs of the caller, not bad input.
    pub fn write_partition(&mut self, input: &PartitionInput<'_>) -> io::Result<()> {
        self.write_rows(&input.rows())?;
        self.write_cells(&input.cells, input.stored_from)
    }

    /// Writes a partition's row blocks (positions, ordinals, axis, stored columns) and answers
    /// what they cost; the partition is complete once [`SegmentWriter::write_cells`] follows.
    /// Axis and numeric columns are packed where that makes them smaller
    /// ([`SegmentWriter::push_numbers`]).
    ///
    /// # Panics
    /// As [`SegmentWriter::write_partition`], or if the last partition's cells are not written.
    pub fn write_rows(&mut self, input: &RowsInput<'_>) -> io::Result<RowsWritten> {
        let n_rows = input.positions.len();
        assert!(n_rows > 0, "a partition holds at least one row");
        assert_eq!(input.ordinals.len(), n_rows, "ordinals column length");
        // The order of positions and ordinals is asserted where their blocks are made.
        self.open_partition(input.stream, input.track);
        let blocks_before = self.blocks.len();
        self.push_row_block(BlockKind::Positions, input.positions)?;
        self.push_row_block(BlockKind::Ordinals, input.ordinals)?;
        let axis = match input.axis {
            Some(axis) => {
                assert_eq!(axis.len(), n_rows, "axis column length");
                assert!(axis.is_sorted(), "axis goes backwards");
                self.push_numbers(BlockKind::Axis, 0, 0, Numbers::U64(axis))?;
                Some([axis[0], axis[n_rows - 1]])
            }
            None => None,
        };
        for (field, column) in &input.columns {
            assert_eq!(column.n_rows(), n_rows, "column {field} length");
            let runs = input
                .nulls
                .iter()
                .find(|(f, _)| f == field)
                .map_or(&[][..], |(_, runs)| *runs);
            let filled: Vec<f64>;
            let numbers = match *column {
                ColumnData::U64(v) => Numbers::U64(v),
                ColumnData::I64(v) => Numbers::I64(v),
                ColumnData::F64(v) if !runs.is_empty() && self.packing => {
                    filled = fill_nulls(v, runs);
                    Numbers::F64(&filled)
                }
                ColumnData::F64(v) => Numbers::F64(v),
                ColumnData::Str(_) | ColumnData::Bytes(_) => {
                    self.push_block(
                        BlockKind::Column,
                        column.kind_code(),
                        *field,
                        n_rows,
                        |out| put_column(out, column),
                    )?;
                    continue;
                }
            };
            self.push_numbers(BlockKind::Column, column.kind_code(), *field, numbers)?;
        }
        for &(field, runs) in &input.nulls {
            let Some((_, column)) = input.columns.iter().find(|(f, _)| *f == field) else {
                panic!("null rows of field {field}, which has no column");
            };
            self.push_validity(field, column.kind_code(), runs, n_rows)?;
        }
        let open = self.open.as_mut().expect("opened above");
        open.n_rows = n_rows as u64;
        open.positions = [input.positions[0], input.positions[n_rows - 1]];
        open.ordinals = [input.ordinals[0], input.ordinals[n_rows - 1]];
        open.axis = axis;
        Ok(RowsWritten {
            n_rows: n_rows as u64,
            column_bytes: self.column_bytes_since(blocks_before),
        })
    }

    /// Begins a partition of `stream` and `track`.
    ///
    /// # Panics
    /// If a partition is open already, or this one is in the segment already.
    fn open_partition(&mut self, stream: &str, track: &TrackKey) {
        assert!(
            self.open.is_none(),
            "a partition's rows written before the last one's cells"
        );
        assert!(
            !self
                .summaries
                .iter()
                .any(|s| s.stream == stream && s.track == *track),
            "partition added twice"
        );
        self.open = Some(OpenPartition {
            stream: stream.to_owned(),
            track: track.clone(),
            extent_offset: self.out.offset,
            first_block: self.blocks.len(),
            n_rows: 0,
            positions: [0, 0],
            ordinals: [0, 0],
            axis: None,
            seams: false,
            chained_from: None,
        });
    }

    /// Payload bytes of the axis and column blocks written since block `first`.
    fn column_bytes_since(&self, first: usize) -> u64 {
        self.blocks[first..]
            .iter()
            .filter(|b| b.kind == BlockKind::Axis as u8 || b.kind == BlockKind::Column as u8)
            .map(|b| b.len.get())
            .sum()
    }

    /// Writes how a level folded from the rows of the partition just written is read
    /// (segment format 6): its `seams`, the rows at which the barriers merged into it began
    /// (strictly increasing, each inside its rows; none: no block is written), each piece
    /// between them folded apart; and `chained_from`, the level from which the cell holding
    /// its last row stays a chain of its pieces (a merge's output that had later segments),
    /// where every other cell's pieces are merged into one. Only a partition with levels has
    /// seams; its cells follow ([`SegmentWriter::write_cells`]).
    ///
    /// # Panics
    /// If no partition's rows are written, a seam is out of order or outside its rows, or this
    /// is called twice for a partition.
    pub fn write_folding(&mut self, seams: &[u64], chained_from: Option<u8>) -> io::Result<()> {
        let open = self
            .open
            .as_mut()
            .expect("seams after their partition's rows");
        let n_rows = open.n_rows;
        assert!(
            !open.seams && open.chained_from.is_none(),
            "a partition's folding written twice"
        );
        open.chained_from = chained_from;
        if seams.is_empty() {
            return Ok(());
        }
        assert!(
            seams.windows(2).all(|w| w[0] < w[1])
                && seams[0] > 0
                && seams[seams.len() - 1] < n_rows,
            "seams out of order or outside {n_rows} rows"
        );
        open.seams = true;
        self.push_block(BlockKind::Seams, 0, 0, seams.len(), |out| {
            put_u64s(out, seams)
        })
    }

    /// Writes the cells of the partition whose rows [`SegmentWriter::write_rows`] (or
    /// [`SegmentWriter::write_merged_rows`]) wrote, levels `stored_from ..` stored whole, and
    /// completes it.
    ///
    /// # Panics
    /// If no partition's rows are written, cells are out of order, or `stored_from` is above
    /// the levels.
    pub fn write_cells(&mut self, cells: &[FieldCells<'_>], stored_from: u8) -> io::Result<()> {
        assert!(self.open.is_some(), "cells before their partition's rows");
        let n_levels = self.push_cells(cells)?;
        assert!(
            stored_from <= n_levels,
            "levels stored from {stored_from} of {n_levels}"
        );
        let open = self.open.take().expect("checked above");
        assert!(
            !open.seams || n_levels > 0,
            "seams in a partition without levels"
        );
        let chained_from = match open.chained_from {
            Some(level) => {
                assert!(level < n_levels, "chained from level {level} of {n_levels}");
                level
            }
            None => n_levels,
        };
        let measured: Vec<MeasuredRecord> = cells
            .iter()
            .map(|f| MeasuredRecord {
                field: U16::new(f.field),
                kind: num_code(f.kind),
                reserved: 0,
            })
            .collect();
        let stream_offset = self.push_heap(open.stream.as_bytes());
        let track_offset = self.push_heap(open.track.as_bytes());
        let measured_offset = self.push_heap(measured.as_bytes());
        let extent_len = self.out.offset - open.extent_offset;
        self.partitions.push(PartitionRecord {
            stream_offset,
            stream_len: u32_of(open.stream.len()),
            track_offset,
            track_len: u32_of(open.track.as_bytes().len()),
            measured_offset,
            n_measured: u32_of(measured.len()),
            first_block: u32_of(open.first_block),
            n_blocks: u32_of(self.blocks.len() - open.first_block),
            n_rows: U64::new(open.n_rows),
            positions: open.positions.map(U64::new),
            ordinals: open.ordinals.map(U64::new),
            axis: open.axis.unwrap_or([0, 0]).map(U64::new),
            has_axis: u8::from(open.axis.is_some()),
            n_levels,
            stored_from,
            chained_from,
            reserved: [0; 4],
            extent_offset: U64::new(open.extent_offset),
            extent_len: U64::new(extent_len),
        });
        self.summaries.push(PartitionEntry {
            stream: open.stream,
            track: open.track,
            n_rows: open.n_rows,
            positions: open.positions,
            ordinals: open.ordinals,
            axis: open.axis,
            n_levels,
            offset: open.extent_offset,
            len: extent_len,
        });
        Ok(())
    }

    /// Writes the directory and the footer, and flushes the sink; answers what was written and
    /// the sink (a file sink's file still wants its sync).
    ///
    /// # Panics
    /// If the last partition's rows were written and its cells not.
    pub fn finish_streamed(mut self) -> io::Result<(SegmentSummary, S)> {
        assert!(
            self.open.is_none(),
            "a segment finished with a partition's cells unwritten"
        );
        let dir_header = DirHeader {
            n_partitions: u32_of(self.partitions.len()),
            n_blocks: u32_of(self.blocks.len()),
            heap_len: u32_of(self.heap.len()),
            reserved: U32::new(0),
        };
        self.out.begin_block();
        self.out.put(dir_header.as_bytes())?;
        self.out.put(self.partitions.as_bytes())?;
        self.out.put(self.blocks.as_bytes())?;
        self.out.put(&self.heap)?;
        let (dir_offset, dir_len) = self.out.end_block()?;

        let mut footer = Footer {
            dir_offset: U64::new(dir_offset),
            dir_len: U64::new(dir_len),
            magic: FOOTER_MAGIC,
            digest: U32::new(0),
            crc: U32::new(0),
        };
        let digest = crc32c::crc32c_append(self.out.digest, &footer.as_bytes()[..24]);
        footer.digest = U32::new(digest);
        footer.crc = U32::new(crc32c::crc32c(&footer.as_bytes()[..28]));
        self.out.sink.put(footer.as_bytes())?;
        self.out.offset += footer.as_bytes().len() as u64;
        self.out.sink.flush()?;
        let summary = SegmentSummary {
            len: self.out.offset,
            digest,
            partitions: self.summaries,
        };
        Ok((summary, self.out.sink))
    }

    fn push_cells(&mut self, fields: &[FieldCells<'_>]) -> io::Result<u8> {
        let Some(first) = fields.first() else {
            return Ok(0);
        };
        let n_levels = first.levels.len();
        let mut previous: Option<u16> = None;
        let mut n_cells = 0;
        for field in fields {
            assert_eq!(
                field.levels.len(),
                n_levels,
                "every measured field has as many levels"
            );
            assert!(
                previous.is_none_or(|f| f < field.field),
                "measured fields out of order"
            );
            previous = Some(field.field);
            for cells in field.levels {
                // Equal indexes are a chain (`CHAINS_VERSION`), links in axis order.
                assert!(
                    cells.windows(2).all(|w| w[0].index < w[1].index
                        || (w[0].index == w[1].index
                            && w[0].bucket.last.axis <= w[1].bucket.first.axis)),
                    "cells out of order"
                );
                n_cells += cells.len();
            }
        }
        if n_cells > 0 {
            let mut records = Vec::with_capacity(n_cells);
            for field in fields {
                for (level, cells) in field.levels.iter().enumerate() {
                    let level = u8::try_from(level).expect("at most 65 levels");
                    records.extend(cells.iter().map(|cell| cell_record(field, level, cell)));
                }
            }
            // Packed where it is smaller, as a column is (a few cells pack larger than plain:
            // pco's headers).
            let packed = self
                .packing
                .then(|| cellpack::pack(&records))
                .flatten()
                .filter(|p| p.len() < records.as_bytes().len());
            match packed {
                Some(payload) => {
                    self.push_encoded(BlockKind::Cells, 0, 0, n_cells, ENCODING_PACKED, |out| {
                        out.put(&payload)
                    })?;
                }
                None => self.push_block(BlockKind::Cells, 0, 0, n_cells, |out| {
                    out.put(records.as_bytes())
                })?,
            }
        }
        Ok(u8::try_from(n_levels).expect("at most 65 levels"))
    }

    /// Positions or ordinals, as runs when they take fewer bytes than a plain `u64` a row (a
    /// tie stays plain: plain is read with no arithmetic at all).
    ///
    /// One pass over the values finds their runs; the staging invariant (positions never go
    /// back, ordinals always climb) is then asserted over the runs, as the reader checks them,
    /// rather than in passes of its own. Only a column of very many runs is read again.
    ///
    /// # Panics
    /// If the values break that invariant.
    fn push_row_block(&mut self, role: BlockKind, values: &[u64]) -> io::Result<()> {
        let (kind, order) = match role {
            BlockKind::Positions => (BlockKind::PositionRuns, runs::Order::NonDecreasing),
            BlockKind::Ordinals => (BlockKind::OrdinalRuns, runs::Order::Increasing),
            other => unreachable!("{other:?} is not run-encoded"),
        };
        let n_rows = values.len();
        let ends = [values[0], values[n_rows - 1]];
        let scan = runs::scan_runs(values, RUNS_KEPT_MAX);
        let use_runs = scan.n_runs * size_of::<RunRecord>() < size_of_val(values);
        if scan.runs.len() == scan.n_runs {
            let checked = runs::check_runs(&scan.runs, n_rows as u64, order, ends);
            assert!(checked.is_ok(), "{role:?} out of order: {checked:?}");
        } else {
            let ordered = match order {
                runs::Order::NonDecreasing => values.is_sorted(),
                runs::Order::Increasing => values.windows(2).all(|w| w[0] < w[1]),
            };
            assert!(ordered, "{role:?} out of order");
        }
        if !use_runs {
            return self.push_block(role, 0, 0, n_rows, |out| put_u64s(out, values));
        }
        self.push_block(kind, 0, 0, n_rows, |out| {
            if scan.runs.len() == scan.n_runs {
                return out.put(scan.runs.as_bytes());
            }
            let mut written = 0;
            for run in runs::runs_of(values) {
                out.put(run.as_bytes())?;
                written += 1;
            }
            assert_eq!(
                written, scan.n_runs,
                "the runs counted are the runs written"
            );
            Ok(())
        })
    }

    /// Writes an axis or numeric column block, packed (pco chunks of at most `PACK_ROWS` rows)
    /// when its first chunk packs smaller than it is plain, else plain. One chunk's bytes are
    /// held at a time, and the chunk table (a record per `PACK_ROWS` rows).
    fn push_numbers(
        &mut self,
        kind: BlockKind,
        field_kind: u8,
        field: u16,
        numbers: Numbers<'_>,
    ) -> io::Result<()> {
        let n = numbers.len();
        let first_rows = 0..n.min(PACK_ROWS);
        let first = (self.packing && n >= PACK_MIN_ROWS)
            .then(|| numbers.compress(first_rows.clone()))
            .filter(|bytes| bytes.len() < first_rows.len() * 8);
        let Some(first) = first else {
            return self.push_block(kind, field_kind, field, n, |out| match numbers {
                Numbers::U64(v) => put_u64s(out, v),
                Numbers::I64(v) => put_words(out, v, i64::to_le_bytes),
                Numbers::F64(v) => put_words(out, v, f64::to_le_bytes),
            });
        };
        self.push_encoded(kind, field_kind, field, n, ENCODING_PACKED, |out| {
            let mut table = Vec::with_capacity(n.div_ceil(PACK_ROWS));
            let mut end_byte = 0;
            let mut first = Some(first);
            for start in (0..n).step_by(PACK_ROWS) {
                let rows = start..(start + PACK_ROWS).min(n);
                let bytes = first
                    .take()
                    .unwrap_or_else(|| numbers.compress(rows.clone()));
                out.put(&bytes)?;
                end_byte += bytes.len();
                table.push(numbers.record(rows, end_byte));
            }
            out.put(packed::table_bytes(&table))?;
            out.put(&(table.len() as u64).to_le_bytes())
        })
    }

    /// Writes one block: its payload through `payload`, then its crc; records it.
    fn push_block(
        &mut self,
        kind: BlockKind,
        field_kind: u8,
        field: u16,
        n: usize,
        payload: impl FnOnce(&mut Out<S>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.push_encoded(kind, field_kind, field, n, ENCODING_PLAIN, payload)
    }

    /// Writes the validity block of `field`'s column (kind `kind_code`): its null rows, as
    /// runs, in a partition of `n_rows` rows. No block for a column without a null row.
    ///
    /// # Panics
    /// If the runs are out of order, touch, or end past the rows, or the column is not a number.
    pub(crate) fn push_validity(
        &mut self,
        field: u16,
        kind_code: u8,
        runs: &[Range<u64>],
        n_rows: usize,
    ) -> io::Result<()> {
        if runs.is_empty() {
            return Ok(());
        }
        assert!((1..=3).contains(&kind_code), "only a number may be null");
        assert!(
            runs.last().is_some_and(|r| r.end <= n_rows as u64),
            "null rows past the partition's"
        );
        let n_nulls: u64 = runs.iter().map(|r| r.end - r.start).sum();
        let mut payload = Vec::new();
        crate::validity::encode(runs, &mut payload);
        self.push_block(
            BlockKind::Validity,
            kind_code,
            field,
            usize::try_from(n_nulls).expect("at most the rows"),
            |out| out.put(&payload),
        )
    }

    /// Writes one block whose payload is in `encoding`.
    fn push_encoded(
        &mut self,
        kind: BlockKind,
        field_kind: u8,
        field: u16,
        n: usize,
        encoding: u8,
        payload: impl FnOnce(&mut Out<S>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.out.begin_block();
        payload(&mut self.out)?;
        let (offset, len) = self.out.end_block()?;
        self.blocks.push(BlockRecord {
            kind: kind as u8,
            field_kind,
            field: U16::new(field),
            encoding,
            reserved: [0; 3],
            offset: U64::new(offset),
            len: U64::new(len),
            n_items: U64::new(n as u64),
        });
        Ok(())
    }

    fn push_heap(&mut self, bytes: &[u8]) -> U32 {
        let offset = u32_of(self.heap.len());
        self.heap.extend_from_slice(bytes);
        offset
    }
}

/// The most runs of one column the writer keeps from its counting pass (24 KiB of them): more
/// are counted, then written in a second pass, so no column's runs cost more memory than this.
const RUNS_KEPT_MAX: usize = 1024;

/// How many values are converted at a time where the host's byte order is not the file's.
#[cfg(not(target_endian = "little"))]
const SWAP_BATCH: usize = 4096;

/// Puts 8-byte numbers as the file holds them, little-endian: on a little-endian host their
/// memory already is those bytes, and goes out as it is (no copy); elsewhere they are converted
/// a batch at a time.
fn put_words<S: SegmentSink, T: IntoBytes + zerocopy::Immutable + Copy>(
    out: &mut Out<S>,
    values: &[T],
    #[cfg_attr(
        target_endian = "little",
        expect(unused_variables, reason = "no swap here")
    )]
    to_le: impl Fn(T) -> [u8; 8],
) -> io::Result<()> {
    #[cfg(target_endian = "little")]
    {
        out.put(values.as_bytes())
    }
    #[cfg(not(target_endian = "little"))]
    {
        let mut batch = Vec::with_capacity(SWAP_BATCH * 8);
        for chunk in values.chunks(SWAP_BATCH) {
            batch.clear();
            batch.extend(chunk.iter().flat_map(|&v| to_le(v)));
            out.put(&batch)?;
        }
        Ok(())
    }
}

fn put_u64s<S: SegmentSink>(out: &mut Out<S>, values: &[u64]) -> io::Result<()> {
    put_words(out, values, u64::to_le_bytes)
}

/// An `f64` column with each null row's placeholder (which no read hands out) chosen to pack
/// smallest, a chunk of [`PACK_ROWS`] rows at a time: the value before it (what a flat, stepped
/// or noisy column packs best) or the value a quadratic through the three before it predicts
/// (what a smooth one does: a 1 kHz sine with 1% of its rows null packs 0.15 B/row larger with
/// the first, 0.03 with the second), whichever chunk packs smaller. Measured in
/// `compare/benches/dense.rs` (*missing values*).
fn fill_nulls(values: &[f64], runs: &[Range<u64>]) -> Vec<f64> {
    let mut out = values.to_vec();
    let null = crate::validity::Nulls::new(runs);
    for start in (0..values.len()).step_by(PACK_ROWS) {
        let rows = start..(start + PACK_ROWS).min(values.len());
        if null.count_in(rows.clone()) == 0 {
            continue;
        }
        let fill = |out: &mut [f64], quadratic: bool| {
            for row in rows.clone().filter(|&row| null.contains(row)) {
                out[row] = match row {
                    0 => 0.0,
                    1 | 2 => out[row - 1],
                    _ if quadratic => 3.0 * out[row - 1] - 3.0 * out[row - 2] + out[row - 3],
                    _ => out[row - 1],
                };
            }
        };
        let mut quadratic = out.clone();
        fill(&mut out, false);
        fill(&mut quadratic, true);
        let size = |v: &[f64]| Numbers::F64(v).compress(rows.clone()).len();
        if size(&quadratic) < size(&out) {
            out[rows.clone()].copy_from_slice(&quadratic[rows]);
        }
    }
    out
}

fn put_column<S: SegmentSink>(out: &mut Out<S>, column: &ColumnData<'_>) -> io::Result<()> {
    match column {
        ColumnData::U64(v) => put_u64s(out, v),
        ColumnData::I64(v) => put_words(out, v, i64::to_le_bytes),
        ColumnData::F64(v) => put_words(out, v, f64::to_le_bytes),
        ColumnData::Str(var) | ColumnData::Bytes(var) => {
            assert_eq!(var.offsets.first(), Some(&0), "offsets start at 0");
            assert_eq!(
                var.offsets.last().copied(),
                Some(var.heap.len() as u64),
                "offsets end at the heap's length"
            );
            assert!(var.offsets.is_sorted(), "offsets go backwards");
            put_u64s(out, var.offsets)?;
            out.put(var.heap)
        }
    }
}

fn cell_record(field: &FieldCells<'_>, level: u8, cell: &Cell) -> CellRecord {
    let b = &cell.bucket;
    assert_eq!(b.field, field.field, "a cell of another field");
    let point = |p: strata_levels::Point| {
        assert_eq!(p.value.kind(), field.kind, "a value of another kind");
        PointRecord {
            axis: U64::new(p.axis),
            value: p.value.to_le_bytes(),
        }
    };
    CellRecord {
        field: U16::new(field.field),
        level,
        kind: num_code(field.kind),
        reserved: [0; 4],
        index: U64::new(cell.index),
        first: point(b.first),
        last: point(b.last),
        min: point(b.min),
        max: point(b.max),
        count: U64::new(b.count),
        sum: F64::new(b.sum),
        sum_sq: F64::new(b.sum_sq),
    }
}

/// The field kind code of a numeric kind (the same codes the manifest uses).
pub(crate) fn num_code(kind: NumKind) -> u8 {
    match kind {
        NumKind::U64 => 1,
        NumKind::I64 => 2,
        NumKind::F64 => 3,
    }
}

fn u32_of(n: usize) -> U32 {
    // Directory offsets are u32: a segment's directory heap past 4 GiB is not a barrier.
    U32::new(u32::try_from(n).expect("directory quantities fit u32"))
}
