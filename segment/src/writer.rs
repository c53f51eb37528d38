//! Writes a segment: one file holding every partition a barrier touches.
//!
//! The writer streams: each block goes to a [`SegmentSink`] as it is produced (a file through a
//! bounded buffer, or memory), its crc32c computed in the one pass that hands its bytes on, and
//! the whole file's digest combined from the blocks' crcs (`crc32c_combine`) rather than read
//! again. Columns go out as the caller's own bytes where the host is little-endian, as the file
//! is: nothing the size of a column or of the file is copied or held. What the writer keeps is
//! the directory (a record per partition and per block) until [`SegmentWriter::finish_streamed`]
//! writes it and the footer; [`SegmentSummary::claim`] then turns what it learned into the
//! manifest entry that will claim the file, so boot never has to open a segment.

mod sink;

use std::io;

use strata_index::{FileEntry, FileName, PartitionEntry, TrackKey};
use strata_levels::{Cell, NumKind};
use zerocopy::IntoBytes;
use zerocopy::little_endian::{F64, U16, U32, U64};

pub use self::sink::{
    CountingSink, FileSink, SegmentSink, WRITE_CHUNK_BYTES, WRITE_CHUNK_MIN_BYTES,
    WRITE_DIRECT_BYTES,
};
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
    /// Level cells, one entry per measured field in declaration order (empty without levels).
    pub cells: Vec<FieldCells<'a>>,
    /// The lowest level stored whole: levels beneath it hold only the cells that differ from
    /// the fold of the raw rows (none, for a barrier). 0 stores every level whole.
    pub stored_from: u8,
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
/// written and the digest of everything before it. Each byte is read once, for the block's crc;
/// the digest takes the block's crc with `crc32c_combine`.
#[derive(Debug)]
struct Out<S> {
    sink: S,
    /// Bytes put so far: the offset of the next byte in the file.
    offset: u64,
    /// crc32c of every byte before the current block.
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
        self.sink.put(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Closes the block with its crc; answers its payload's offset and length.
    fn end_block(&mut self) -> io::Result<(u64, u64)> {
        let (start, crc) = self.block.take().expect("a block to end");
        let len = self.offset - start;
        let len_usize = usize::try_from(len).expect("a block written from memory fits usize");
        self.digest = crc32c::crc32c_combine(self.digest, crc, len_usize);
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
        })
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.out.offset
    }

    /// Whether nothing is written yet (never: the header is written at once).
    pub fn is_empty(&self) -> bool {
        self.out.offset == 0
    }

    /// Writes one partition's blocks to the sink. A sink's error is returned as it is; the
    /// file is then unfinished and the writer must be dropped.
    ///
    /// # Panics
    /// If the input breaks what staging guarantees: no rows, columns of different lengths,
    /// positions or axis going backwards, ordinals not increasing, cells out of order, or a
    /// (stream, track) already in this segment. These are bugs of the caller, not bad input.
    pub fn write_partition(&mut self, input: &PartitionInput<'_>) -> io::Result<()> {
        let n_rows = input.positions.len();
        assert!(n_rows > 0, "a partition holds at least one row");
        assert_eq!(input.ordinals.len(), n_rows, "ordinals column length");
        // The order of positions and ordinals is asserted where their blocks are made.
        assert!(
            !self
                .summaries
                .iter()
                .any(|s| s.stream == input.stream && s.track == *input.track),
            "partition added twice"
        );
        let extent_offset = self.out.offset;
        let first_block = self.blocks.len();

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
            let numbers = match *column {
                ColumnData::U64(v) => Numbers::U64(v),
                ColumnData::I64(v) => Numbers::I64(v),
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
        let n_levels = self.push_cells(&input.cells)?;
        assert!(
            input.stored_from <= n_levels,
            "levels stored from {} of {n_levels}",
            input.stored_from
        );

        let measured: Vec<MeasuredRecord> = input
            .cells
            .iter()
            .map(|f| MeasuredRecord {
                field: U16::new(f.field),
                kind: num_code(f.kind),
                reserved: 0,
            })
            .collect();
        let stream_offset = self.push_heap(input.stream.as_bytes());
        let track_offset = self.push_heap(input.track.as_bytes());
        let measured_offset = self.push_heap(measured.as_bytes());
        let extent_len = self.out.offset - extent_offset;
        let positions = [input.positions[0], input.positions[n_rows - 1]];
        let ordinals = [input.ordinals[0], input.ordinals[n_rows - 1]];
        self.partitions.push(PartitionRecord {
            stream_offset,
            stream_len: u32_of(input.stream.len()),
            track_offset,
            track_len: u32_of(input.track.as_bytes().len()),
            measured_offset,
            n_measured: u32_of(measured.len()),
            first_block: u32_of(first_block),
            n_blocks: u32_of(self.blocks.len() - first_block),
            n_rows: U64::new(n_rows as u64),
            positions: positions.map(U64::new),
            ordinals: ordinals.map(U64::new),
            axis: axis.unwrap_or([0, 0]).map(U64::new),
            has_axis: u8::from(axis.is_some()),
            n_levels,
            stored_from: input.stored_from,
            reserved: [0; 5],
            extent_offset: U64::new(extent_offset),
            extent_len: U64::new(extent_len),
        });
        self.summaries.push(PartitionEntry {
            stream: input.stream.to_owned(),
            track: input.track.clone(),
            n_rows: n_rows as u64,
            positions,
            ordinals,
            axis,
            n_levels,
            offset: extent_offset,
            len: extent_len,
        });
        Ok(())
    }

    /// Writes the directory and the footer, and flushes the sink; answers what was written and
    /// the sink (a file sink's file still wants its sync).
    pub fn finish_streamed(mut self) -> io::Result<(SegmentSummary, S)> {
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
            self.push_block(BlockKind::Cells, 0, 0, n_cells, |out| {
                // Record by record: a cell's record is its own bytes, and the sink gathers them.
                for field in fields {
                    for (level, cells) in field.levels.iter().enumerate() {
                        let level = u8::try_from(level).expect("at most 65 levels");
                        for cell in cells {
                            out.put(cell_record(field, level, cell).as_bytes())?;
                        }
                    }
                }
                Ok(())
            })?;
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
        let first = (n >= PACK_MIN_ROWS)
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
