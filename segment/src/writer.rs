//! Writes a segment: one file holding every partition a barrier touches.
//!
//! The writer assembles the file in memory (a barrier's bytes are bounded by what was staged,
//! which is already in memory), computing each block's crc as it goes and the whole file's digest
//! at the end. [`WrittenSegment::claim`] turns the result into the manifest entry that will claim
//! it, so boot never has to open a segment.

use strata_index::{FileEntry, FileName, PartitionEntry, TrackKey};
use strata_levels::{Cell, NumKind};
use zerocopy::IntoBytes;
use zerocopy::little_endian::{F64, U16, U32, U64};

use crate::format::{
    BLOCK_CRC_LEN, BlockKind, BlockRecord, CellRecord, DirHeader, FOOTER_MAGIC, Footer, Header,
    MeasuredRecord, PartitionRecord, PointRecord, RunRecord, SEGMENT_MAGIC, SEGMENT_VERSION,
};
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

/// One measured field's level cells: `levels[k]` holds level `k`'s cells, ascending by index.
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
}

/// A finished segment, ready for the two-phase write.
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

/// Builds one segment file from many partitions.
#[derive(Debug)]
pub struct SegmentWriter {
    bytes: Vec<u8>,
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
    /// An empty segment (the header is written now; the footer at [`SegmentWriter::finish`]).
    pub fn new() -> SegmentWriter {
        let mut header = Header {
            magic: SEGMENT_MAGIC,
            version: U32::new(SEGMENT_VERSION),
            flags: U32::new(0),
            reserved: [0; 12],
            crc: U32::new(0),
        };
        header.crc = U32::new(crc32c::crc32c(&header.as_bytes()[..28]));
        SegmentWriter {
            bytes: header.as_bytes().to_vec(),
            blocks: Vec::new(),
            partitions: Vec::new(),
            heap: Vec::new(),
            summaries: Vec::new(),
        }
    }

    /// Adds one partition's blocks.
    ///
    /// # Panics
    /// If the input breaks what staging guarantees: no rows, columns of different lengths,
    /// positions or axis going backwards, ordinals not increasing, cells out of order, or a
    /// (stream, track) already in this segment. These are bugs of the caller, not bad input.
    pub fn add_partition(&mut self, input: &PartitionInput<'_>) {
        let n_rows = input.positions.len();
        assert!(n_rows > 0, "a partition holds at least one row");
        assert_eq!(input.ordinals.len(), n_rows, "ordinals column length");
        assert!(input.positions.is_sorted(), "positions go backwards");
        assert!(
            input.ordinals.windows(2).all(|w| w[0] < w[1]),
            "ordinals not increasing"
        );
        assert!(
            !self
                .summaries
                .iter()
                .any(|s| s.stream == input.stream && s.track == *input.track),
            "partition added twice"
        );
        let extent_offset = self.bytes.len() as u64;
        let first_block = self.blocks.len();

        self.push_row_block(BlockKind::Positions, input.positions);
        self.push_row_block(BlockKind::Ordinals, input.ordinals);
        let axis = input.axis.map(|axis| {
            assert_eq!(axis.len(), n_rows, "axis column length");
            assert!(axis.is_sorted(), "axis goes backwards");
            self.push_block(BlockKind::Axis, 0, 0, n_rows, u64s(axis).as_bytes());
            [axis[0], axis[n_rows - 1]]
        });
        for (field, column) in &input.columns {
            assert_eq!(column.n_rows(), n_rows, "column {field} length");
            let payload = column_payload(column);
            self.push_block(
                BlockKind::Column,
                column.kind_code(),
                *field,
                n_rows,
                &payload,
            );
        }
        let n_levels = self.push_cells(&input.cells);

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
        let extent_len = self.bytes.len() as u64 - extent_offset;
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
            reserved: [0; 6],
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
    }

    /// Writes the directory and the footer.
    pub fn finish(mut self) -> WrittenSegment {
        let dir_header = DirHeader {
            n_partitions: u32_of(self.partitions.len()),
            n_blocks: u32_of(self.blocks.len()),
            heap_len: u32_of(self.heap.len()),
            reserved: U32::new(0),
        };
        let mut directory = dir_header.as_bytes().to_vec();
        directory.extend_from_slice(self.partitions.as_bytes());
        directory.extend_from_slice(self.blocks.as_bytes());
        directory.extend_from_slice(&self.heap);
        let dir_offset = self.bytes.len() as u64;
        self.append_block_bytes(&directory);

        let mut footer = Footer {
            dir_offset: U64::new(dir_offset),
            dir_len: U64::new(directory.len() as u64),
            magic: FOOTER_MAGIC,
            digest: U32::new(0),
            crc: U32::new(0),
        };
        let mut digest = crc32c::crc32c(&self.bytes);
        digest = crc32c::crc32c_append(digest, &footer.as_bytes()[..24]);
        footer.digest = U32::new(digest);
        footer.crc = U32::new(crc32c::crc32c(&footer.as_bytes()[..28]));
        self.bytes.extend_from_slice(footer.as_bytes());
        WrittenSegment {
            bytes: self.bytes,
            digest,
            partitions: self.summaries,
        }
    }

    fn push_cells(&mut self, fields: &[FieldCells<'_>]) -> u8 {
        let Some(first) = fields.first() else {
            return 0;
        };
        let n_levels = first.levels.len();
        let mut records: Vec<CellRecord> = Vec::new();
        let mut previous: Option<u16> = None;
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
            for (level, cells) in field.levels.iter().enumerate() {
                let level = u8::try_from(level).expect("at most 65 levels");
                assert!(
                    cells.windows(2).all(|w| w[0].index < w[1].index),
                    "cells out of order"
                );
                records.extend(cells.iter().map(|cell| cell_record(field, level, cell)));
            }
        }
        if !records.is_empty() {
            self.push_block(BlockKind::Cells, 0, 0, records.len(), records.as_bytes());
        }
        u8::try_from(n_levels).expect("at most 65 levels")
    }

    /// Positions or ordinals, as runs when they take fewer bytes than a plain `u64` a row (a
    /// tie stays plain: plain is read with no arithmetic at all).
    fn push_row_block(&mut self, role: BlockKind, values: &[u64]) {
        let n_rows = values.len();
        let n_runs = runs::count_runs(values);
        if n_runs * size_of::<RunRecord>() < size_of_val(values) {
            let kind = match role {
                BlockKind::Positions => BlockKind::PositionRuns,
                BlockKind::Ordinals => BlockKind::OrdinalRuns,
                other => unreachable!("{other:?} is not run-encoded"),
            };
            let records: Vec<RunRecord> = runs::runs_of(values).collect();
            debug_assert_eq!(records.len(), n_runs);
            self.push_block(kind, 0, 0, n_rows, records.as_bytes());
        } else {
            self.push_block(role, 0, 0, n_rows, u64s(values).as_bytes());
        }
    }

    fn push_block(
        &mut self,
        kind: BlockKind,
        field_kind: u8,
        field: u16,
        n: usize,
        payload: &[u8],
    ) {
        let offset = self.bytes.len() as u64;
        self.append_block_bytes(payload);
        self.blocks.push(BlockRecord {
            kind: kind as u8,
            field_kind,
            field: U16::new(field),
            reserved: U32::new(0),
            offset: U64::new(offset),
            len: U64::new(payload.len() as u64),
            n_items: U64::new(n as u64),
        });
    }

    fn append_block_bytes(&mut self, payload: &[u8]) {
        self.bytes.extend_from_slice(payload);
        let crc = crc32c::crc32c(payload);
        self.bytes.extend_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(BLOCK_CRC_LEN, 4);
    }

    fn push_heap(&mut self, bytes: &[u8]) -> U32 {
        let offset = u32_of(self.heap.len());
        self.heap.extend_from_slice(bytes);
        offset
    }
}

fn u64s(values: &[u64]) -> Vec<U64> {
    values.iter().copied().map(U64::new).collect()
}

fn column_payload(column: &ColumnData<'_>) -> Vec<u8> {
    match column {
        ColumnData::U64(v) => u64s(v).as_bytes().to_vec(),
        ColumnData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        ColumnData::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        ColumnData::Str(var) | ColumnData::Bytes(var) => {
            assert_eq!(var.offsets.first(), Some(&0), "offsets start at 0");
            assert_eq!(
                var.offsets.last().copied(),
                Some(var.heap.len() as u64),
                "offsets end at the heap's length"
            );
            assert!(var.offsets.is_sorted(), "offsets go backwards");
            let mut payload = u64s(var.offsets).as_bytes().to_vec();
            payload.extend_from_slice(var.heap);
            payload
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
