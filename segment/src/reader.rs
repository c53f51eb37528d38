//! Reads a segment from a mapped file, verifying every checksum before handing out bytes.
//!
//! `open` checks the header, the footer and the directory (all small), and that every block the
//! directory names lies inside the file and belongs to exactly one partition. A block's own crc —
//! and every promise its contents make that a read relies on (see [`contents`]) — are checked the
//! first time the block is read, once per reader. Nothing is copied: columns come back as slices
//! of the map. A mismatch is an error naming the file and offset, never different data or a panic.

mod contents;

use std::collections::BTreeSet;
use std::ops::{Deref, Range, RangeInclusive};
use std::sync::{Arc, OnceLock};

use strata_index::{PartitionEntry, TrackKey};
use strata_levels::{Bucket, Cell, Num, NumKind, Point};
use zerocopy::little_endian::{F64, I64, U64};
use zerocopy::{FromBytes, IntoBytes};

use crate::cellpack;
use crate::error::SegmentError;
use crate::format::{
    BLOCK_CRC_LEN, BlockKind, BlockRecord, CHAINS_VERSION, CellChunkRecord, CellRecord, DirHeader,
    ENCODING_PACKED, ENCODING_PLAIN, FOOTER_MAGIC, Footer, Header, MeasuredRecord, PACK_ROWS,
    PACKED_CELLS_VERSION, PACKED_VERSION, PartitionRecord, PointRecord, RUNS_VERSION, RunRecord,
    SEAMS_VERSION, SEGMENT_MAGIC, SEGMENT_VERSION, SEGMENT_VERSION_MIN, STORED_FROM_VERSION,
    VALIDITY_VERSION,
};
use crate::packed::{self, ChunkCache, ChunkKey, Decoded, Packed};
use crate::runs::Sequence;
use crate::validity::{self, Nulls};

const HEADER_LEN: usize = size_of::<Header>();
const FOOTER_LEN: usize = size_of::<Footer>();

/// What the directory says of one partition: what the manifest records of it (the same
/// `PartitionEntry` the writer's claim carries), and where its measured fields and columns are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionInfo {
    /// Stream, track, rows, ranges, levels and byte extent, as the manifest records them.
    pub entry: PartitionEntry,
    /// The measured fields in answer order: (field index, kind).
    pub measured: Vec<(u16, NumKind)>,
    /// The stored columns: (field index, field kind code), in declaration order.
    pub columns: Vec<(u16, u8)>,
    /// The lowest level stored whole; a level beneath it is folded from the raw rows, and the
    /// file holds only the cells of it that differ from that fold. 0 before version 3.
    pub stored_from: u8,
    /// Whether a cell may be a chain of records (version 4 on): see [`CHAINS_VERSION`].
    pub chains: bool,
    /// From which level a level folded from the rows keeps the cell holding the partition's
    /// last row as a chain of its pieces (version 6 on; never before): a merge's output that
    /// had later segments when it was written. Every other cell's pieces fold into one.
    pub chained_from: Option<u8>,
    /// Whether a measured value may be missing (version 7 on): a column may have null rows
    /// (a validity block), an `f64` may be NaN or infinite, and a level folds only the values
    /// present, so its cells may hold fewer rows than the partition.
    pub holes: bool,
    blocks: Range<usize>,
}

#[derive(Clone, Copy, Debug)]
struct BlockInfo {
    kind: BlockKind,
    field_kind: u8,
    field: u16,
    /// Packed (pco chunks, version 5 on) rather than plain.
    packed: bool,
    offset: usize,
    len: usize,
    n_items: usize,
    /// The index of the one partition whose block range holds this block.
    partition: usize,
}

/// A variable-length column: value `i` is `heap[offsets[i]..offsets[i + 1]]`. The offsets were
/// checked (start at 0, non-decreasing, end at the heap's length) when the block was verified.
#[derive(Clone, Copy, Debug)]
pub struct VarColumn<'a> {
    pub(crate) offsets: &'a [U64],
    pub(crate) heap: &'a [u8],
}

impl<'a> VarColumn<'a> {
    /// Values in the column.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether the column has no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values of `rows` as a column of their own (the heap is shared, not copied);
    /// `None` if `rows` reaches past the end.
    pub fn slice(&self, rows: Range<usize>) -> Option<VarColumn<'a>> {
        Some(VarColumn {
            offsets: self.offsets.get(rows.start..=rows.end)?,
            heap: self.heap,
        })
    }

    /// Value `row_idx`'s bytes, or `None` past the end.
    pub fn get(&self, row_idx: usize) -> Option<&'a [u8]> {
        let start = usize::try_from(self.offsets.get(row_idx)?.get()).ok()?;
        let end = usize::try_from(self.offsets.get(row_idx + 1)?.get()).ok()?;
        self.heap.get(start..end)
    }
}

/// One stored column, as slices of the mapped file.
#[derive(Clone, Copy, Debug)]
pub enum Column<'a> {
    /// A `u64` field.
    U64(&'a [U64]),
    /// An `i64` field.
    I64(&'a [I64]),
    /// An `f64` field.
    F64(&'a [F64]),
    /// A `str` field (each value was checked to be UTF-8 when the block was verified).
    Str(VarColumn<'a>),
    /// A `bytes` field.
    Bytes(VarColumn<'a>),
    /// A `u64`, `i64` or `f64` field packed in pco chunks (version 5 on), decoded a chunk at a
    /// time: [`Column::numbers`] or [`Packed::decode`].
    Packed(Packed<'a>),
}

impl Column<'_> {
    /// Values in the column.
    pub fn len(&self) -> usize {
        match self {
            Column::U64(c) => c.len(),
            Column::I64(c) => c.len(),
            Column::F64(c) => c.len(),
            Column::Str(c) | Column::Bytes(c) => c.len(),
            Column::Packed(c) => c.len(),
        }
    }

    /// Whether the column holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The field kind code of its values (1 u64, 2 i64, 3 f64, 4 str, 5 bytes).
    pub fn kind_code(&self) -> u8 {
        match self {
            Column::U64(_) => 1,
            Column::I64(_) => 2,
            Column::F64(_) => 3,
            Column::Str(_) => 4,
            Column::Bytes(_) => 5,
            Column::Packed(c) => c.kind,
        }
    }

    /// The column read without its file's chunk cache ([`Packed::uncached`]).
    #[must_use]
    pub fn uncached(self) -> Self {
        match self {
            Column::Packed(packed) => Column::Packed(packed.uncached()),
            other => other,
        }
    }

    /// Rows `rows` of a numeric column as values of their own: copied from a plain column,
    /// decoded from a packed one (only the chunks the rows touch). `None` for `str`/`bytes`.
    ///
    /// # Errors
    /// A packed chunk that does not decode ([`Packed::decode_chunk`]).
    ///
    /// # Panics
    /// If `rows` reaches past the column's end.
    pub fn numbers(&self, rows: Range<usize>) -> Result<Option<Decoded>, SegmentError> {
        Ok(Some(match self {
            Column::U64(c) => Decoded::U64(c[rows].to_vec()),
            Column::I64(c) => Decoded::I64(c[rows].to_vec()),
            Column::F64(c) => Decoded::F64(c[rows].to_vec()),
            Column::Packed(c) => c.decode(rows)?,
            Column::Str(_) | Column::Bytes(_) => return Ok(None),
        }))
    }
}

/// A partition's axis: plain, a slice of the map, or packed (version 5 on). Non-decreasing
/// either way, so a search for a value is a binary search (of the chunks' table, then of one
/// decoded chunk).
#[derive(Clone, Copy, Debug)]
pub enum Axis<'a> {
    /// As the file holds it.
    Plain(&'a [U64]),
    /// In pco chunks.
    Packed(Packed<'a>),
}

impl Axis<'_> {
    /// The axis read without its file's chunk cache ([`Packed::uncached`]).
    #[must_use]
    pub fn uncached(self) -> Self {
        match self {
            Axis::Packed(packed) => Axis::Packed(packed.uncached()),
            plain @ Axis::Plain(_) => plain,
        }
    }

    /// Rows.
    pub fn len(&self) -> usize {
        match self {
            Axis::Plain(a) => a.len(),
            Axis::Packed(p) => p.len(),
        }
    }

    /// Whether there are none (never, for a checked partition).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first row whose axis is at or above `value` (`len()` if none is).
    ///
    /// # Errors
    /// A packed chunk that does not decode.
    pub fn lower_bound(&self, value: u64) -> Result<usize, SegmentError> {
        self.bound(value, false)
    }

    /// The first row whose axis is above `value` (`len()` if none is).
    ///
    /// # Errors
    /// A packed chunk that does not decode.
    pub fn upper_bound(&self, value: u64) -> Result<usize, SegmentError> {
        self.bound(value, true)
    }

    fn bound(&self, value: u64, above: bool) -> Result<usize, SegmentError> {
        let past = |a: u64| if above { a <= value } else { a < value };
        match self {
            Axis::Plain(axis) => Ok(axis.partition_point(|a| past(a.get()))),
            Axis::Packed(packed) => {
                // The first chunk whose last value is not past `value` holds the bound.
                let chunk = packed.table.partition_point(|r| past(r.last.get()));
                if chunk == packed.chunks() {
                    return Ok(packed.len());
                }
                let decoded = packed.chunk(chunk)?;
                let Decoded::U64(values) = decoded.as_ref() else {
                    unreachable!("the axis decodes as u64");
                };
                Ok(packed.chunk_rows(chunk).start + values.partition_point(|a| past(a.get())))
            }
        }
    }

    /// Hands `f` every row's axis value in order, a piece at a time: a decoded chunk of a
    /// packed axis, at most `PACK_ROWS` values of a plain one. Memory stays one piece.
    ///
    /// # Errors
    /// A packed chunk that does not decode.
    pub fn for_each_chunk(&self, mut f: impl FnMut(&[u64])) -> Result<(), SegmentError> {
        match self {
            Axis::Plain(axis) => {
                let mut values = Vec::with_capacity(PACK_ROWS.min(axis.len()));
                for piece in axis.chunks(PACK_ROWS) {
                    values.clear();
                    values.extend(piece.iter().map(|a| a.get()));
                    f(&values);
                }
            }
            Axis::Packed(packed) => {
                for chunk in 0..packed.chunks() {
                    let Decoded::U64(decoded) = packed.decode_chunk(chunk)? else {
                        unreachable!("the axis decodes as u64");
                    };
                    let values: Vec<u64> = decoded.into_iter().map(U64::get).collect();
                    f(&values);
                }
            }
        }
        Ok(())
    }

    /// The axis of rows `rows`, as values of their own (decoding only the chunks they touch).
    ///
    /// # Errors
    /// A packed chunk that does not decode.
    ///
    /// # Panics
    /// If `rows` reaches past the end.
    pub fn values(&self, rows: Range<usize>) -> Result<Vec<u64>, SegmentError> {
        Ok(match self {
            Axis::Plain(axis) => axis[rows].iter().map(|a| a.get()).collect(),
            Axis::Packed(packed) => {
                let Decoded::U64(values) = packed.decode(rows)? else {
                    unreachable!("the axis decodes as u64");
                };
                values.into_iter().map(U64::get).collect()
            }
        })
    }
}

/// An open segment.
#[derive(Debug)]
pub struct SegmentReader<B> {
    path: String,
    bytes: B,
    digest: u32,
    partitions: Vec<PartitionInfo>,
    blocks: Vec<BlockInfo>,
    verified: Vec<OnceLock<Result<(), BlockFault>>>,
    /// Each validity block's runs, decoded on its first read (which checked them).
    nulls: Vec<OnceLock<Vec<Range<u64>>>>,
    /// Where its decoded column chunks are kept, and its number there. Without one, a chunk
    /// is decoded at each read.
    cache: Option<(Arc<dyn ChunkCache>, u64)>,
    /// Where its packed Cells blocks' decoded chunks (their records' words) are kept, and its
    /// number there: apart from the columns', whose bulkier chunks a zoomed read passes
    /// through, so that they do not push out the cells every survey comes back to. Without
    /// one, a chunk of cells is decoded at each read.
    cell_cache: Option<(Arc<dyn ChunkCache>, u64)>,
}

/// A decoded chunk of cells: its records' words, shared with the chunk cache or the read's own.
enum CellWords {
    Kept(Arc<Decoded>),
    Own(Vec<U64>),
}

impl CellWords {
    fn words(&self) -> &[U64] {
        match self {
            CellWords::Kept(decoded) => match &**decoded {
                Decoded::U64(words) => words,
                _ => unreachable!("only a chunk of words is taken as cells"),
            },
            CellWords::Own(words) => words,
        }
    }
}

/// Why a block failed its first read, remembered so later reads fail the same way.
#[derive(Clone, Debug)]
enum BlockFault {
    Checksum {
        expected: u32,
        got: u32,
    },
    /// A broken promise `at` bytes into the payload.
    Contents {
        at: usize,
        what: String,
    },
}

impl<B: Deref<Target = [u8]>> SegmentReader<B> {
    /// Opens the segment held in `bytes` (usually a [`crate::vfs::Mapped`] file); `path` names it
    /// in errors. Checks header, footer and directory; blocks are checked when first read.
    pub fn open(path: &str, bytes: B) -> Result<SegmentReader<B>, SegmentError> {
        let file: &[u8] = &bytes;
        let len = file.len();
        if len < HEADER_LEN + BLOCK_CRC_LEN + size_of::<DirHeader>() + FOOTER_LEN {
            return Err(SegmentError::malformed(
                path,
                0,
                format!("{len} bytes is too short"),
            ));
        }
        let version = check_header(path, file)?;
        let footer_at = len - FOOTER_LEN;
        let (dir_offset, dir_len, digest) = check_footer(path, file, footer_at)?;
        let directory = &file[dir_offset..dir_offset + dir_len];
        verify_crc(path, file, dir_offset, dir_len, "directory")?;
        let (partitions, blocks) = parse_directory(path, directory, dir_offset, version)?;
        let verified = blocks.iter().map(|_| OnceLock::new()).collect();
        let nulls = blocks.iter().map(|_| OnceLock::new()).collect();
        Ok(SegmentReader {
            path: path.to_owned(),
            bytes,
            digest,
            partitions,
            blocks,
            verified,
            nulls,
            cache: None,
            cell_cache: None,
        })
    }

    /// The reader, keeping the chunks its reads decode in `cache` under the number `file`
    /// (which no other bytes may ever be given in that cache).
    #[must_use]
    pub fn with_chunk_cache(mut self, cache: Arc<dyn ChunkCache>, file: u64) -> Self {
        self.cache = Some((cache, file));
        self
    }

    /// The reader, keeping the chunks of packed level cells its reads decode (segment format
    /// 8) in `cache` under the number `file` (which no other bytes may ever be given in that
    /// cache).
    #[must_use]
    pub fn with_cell_cache(mut self, cache: Arc<dyn ChunkCache>, file: u64) -> Self {
        self.cell_cache = Some((cache, file));
        self
    }

    /// The file's name, as given to `open`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The file's length in bytes.
    pub fn file_len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The digest recorded in the footer (crc32c of the file up to that field).
    pub fn digest(&self) -> u32 {
        self.digest
    }

    /// The partitions, in the order they were written.
    pub fn partitions(&self) -> &[PartitionInfo] {
        &self.partitions
    }

    /// Bytes partition `part_idx`'s Cells block takes (its crc included; 0 without one): what
    /// its level cells cost in the file.
    pub fn cells_len(&self, part_idx: usize) -> u64 {
        self.block_range(part_idx)
            .filter(|&b| self.blocks[b].kind == BlockKind::Cells)
            .map(|b| (self.blocks[b].len + BLOCK_CRC_LEN) as u64)
            .sum()
    }

    /// The seams of partition `part_idx` (version 6 on; none before, and none in a barrier's
    /// file): the rows at which a barrier merged into it began, strictly increasing, each
    /// inside the partition. A level folded from the rows is folded apart on either side of
    /// each.
    pub fn seams(&self, part_idx: usize) -> Result<&[U64], SegmentError> {
        let Some(block_idx) = self
            .block_range(part_idx)
            .find(|&b| self.blocks[b].kind == BlockKind::Seams)
        else {
            return Ok(&[]);
        };
        Ok(slice_of(self.verified_block(block_idx)?))
    }

    /// The index of the partition of `stream` with `track`.
    pub fn find(&self, stream: &str, track: &TrackKey) -> Option<usize> {
        self.partitions
            .iter()
            .position(|p| p.entry.stream == stream && p.entry.track == *track)
    }

    /// Recomputes the whole file's digest and every block's crc, and decodes and checks every
    /// chunk of a packed Cells block: what `engine-fsck --verify` runs. Reads the whole file
    /// once, through the map.
    ///
    pub fn verify_all(&self) -> Result<(), SegmentError> {
        let file: &[u8] = &self.bytes;
        let covered = file.len() - 8;
        let got = crc32c::crc32c(&file[..covered]);
        if got != self.digest {
            return Err(SegmentError::Checksum {
                path: self.path.clone(),
                offset: 0,
                what: "whole-file digest",
                expected: self.digest,
                got,
            });
        }
        for block_idx in 0..self.blocks.len() {
            let payload = self.verified_block(block_idx)?;
            // A packed Cells block's chunks too: each decoded and its cells checked.
            if self.blocks[block_idx].packed && self.blocks[block_idx].kind == BlockKind::Cells {
                // `verified_block` checked the table.
                let (data, table) = cellpack::split_checked(payload);
                for chunk in 0..table.len() {
                    self.cell_chunk(block_idx, data, table, chunk, false)?;
                }
            }
        }
        Ok(())
    }

    /// The positions of partition `part_idx`, in publish order, plain or run-encoded.
    pub fn positions(&self, part_idx: usize) -> Result<Sequence<'_>, SegmentError> {
        self.row_sequence(part_idx, BlockKind::Positions)
    }

    /// The ordinals of partition `part_idx`, plain or run-encoded.
    pub fn ordinals(&self, part_idx: usize) -> Result<Sequence<'_>, SegmentError> {
        self.row_sequence(part_idx, BlockKind::Ordinals)
    }

    /// The axis values of partition `part_idx`, if its stream has an axis.
    pub fn axis(&self, part_idx: usize) -> Result<Option<Axis<'_>>, SegmentError> {
        if self.partition(part_idx).entry.axis.is_none() {
            return Ok(None);
        }
        let block_idx = self.axis_block(part_idx);
        let payload = self.verified_block(block_idx)?;
        Ok(Some(match self.packed(block_idx, payload) {
            Some(packed) => Axis::Packed(packed),
            None => Axis::Plain(slice_of(payload)),
        }))
    }

    /// Where the packed chunk holding row `row` of partition `part_idx` ends: the least such
    /// end over the partition's packed blocks (the writer chunks them all alike), or the
    /// partition's row count if none is packed. A read that decodes a chunk at a time stops
    /// its runs there.
    ///
    /// # Errors
    /// A block that fails its checks.
    pub fn chunk_end(&self, part_idx: usize, row: usize) -> Result<usize, SegmentError> {
        let mut end = usize::try_from(self.partition(part_idx).entry.n_rows).unwrap_or(usize::MAX);
        for block_idx in self.block_range(part_idx) {
            if !self.blocks[block_idx].packed {
                continue;
            }
            let payload = self.verified_block(block_idx)?;
            if let Some(packed) = self.packed(block_idx, payload) {
                end = end.min(packed.chunk_rows(packed.chunk_of(row)).end);
            }
        }
        Ok(end)
    }

    /// The axis block of a partition whose stream has an axis.
    fn axis_block(&self, part_idx: usize) -> usize {
        self.block_range(part_idx)
            .find(|&b| self.blocks[b].kind == BlockKind::Axis)
            .expect("the directory parse checked a partition with an axis has its block")
    }

    /// Block `block_idx` as a packed column, if it is packed; `payload` is its verified bytes.
    fn packed<'s>(&'s self, block_idx: usize, payload: &'s [u8]) -> Option<Packed<'s>> {
        let block = self.blocks[block_idx];
        if !block.packed || block.kind == BlockKind::Cells {
            return None;
        }
        let part = self.partition(block.partition);
        let axis = block.kind == BlockKind::Axis;
        let (data, table) = packed::split(payload, block.n_items, None)
            .expect("the block's first read checked its chunk table");
        Some(Packed {
            path: &self.path,
            offset: block.offset,
            kind: if axis { 1 } else { block.field_kind },
            ordered: axis,
            finite: block.field_kind == 3
                && !part.holes
                && part.measured.iter().any(|&(f, _)| f == block.field),
            data,
            table,
            cache: self
                .cache
                .as_ref()
                .map(|(cache, file)| (cache.as_ref(), *file)),
        })
    }

    /// The rows of partition `part_idx` whose position lies in `[lo, hi]`, by binary search.
    pub fn position_range(
        &self,
        part_idx: usize,
        lo: u64,
        hi: u64,
    ) -> Result<Range<usize>, SegmentError> {
        let positions = self.positions(part_idx)?;
        let start = positions.lower_bound(lo);
        let end = positions.upper_bound(hi).max(start);
        Ok(start..end)
    }

    /// The stored column of `field` in partition `part_idx`; `None` if the partition stores no
    /// such column (a track component or the axis).
    pub fn column(&self, part_idx: usize, field: u16) -> Result<Option<Column<'_>>, SegmentError> {
        let Some(block_idx) = self
            .block_range(part_idx)
            .find(|&b| self.blocks[b].kind == BlockKind::Column && self.blocks[b].field == field)
        else {
            return Ok(None);
        };
        let payload = self.verified_block(block_idx)?;
        if let Some(packed) = self.packed(block_idx, payload) {
            return Ok(Some(Column::Packed(packed)));
        }
        let block = self.blocks[block_idx];
        let n = block.n_items;
        Ok(Some(match block.field_kind {
            1 => Column::U64(slice_of(payload)),
            2 => Column::I64(slice_of(payload)),
            3 => Column::F64(slice_of(payload)),
            kind => {
                let (offsets, heap) = payload.split_at((n + 1) * 8);
                let var = VarColumn {
                    offsets: slice_of(offsets),
                    heap,
                };
                if kind == 4 {
                    Column::Str(var)
                } else {
                    Column::Bytes(var)
                }
            }
        }))
    }

    /// The null rows of `field`'s column in partition `part_idx`: none if the column has no
    /// validity block (every file before version 7, and every column without a null).
    ///
    /// # Errors
    /// A validity block that fails its crc or its checks.
    ///
    /// # Panics
    /// Never: the block's first read checked what its decode relies on.
    pub fn nulls(&self, part_idx: usize, field: u16) -> Result<Nulls<'_>, SegmentError> {
        let Some(block_idx) = self
            .block_range(part_idx)
            .find(|&b| self.blocks[b].kind == BlockKind::Validity && self.blocks[b].field == field)
        else {
            return Ok(Nulls::NONE);
        };
        let payload = self.verified_block(block_idx)?;
        let block = self.blocks[block_idx];
        let n_rows = self.partition(part_idx).entry.n_rows;
        let runs = self.nulls[block_idx].get_or_init(|| {
            validity::decode(payload, n_rows, block.n_items)
                .expect("the block's first read checked its runs")
        });
        Ok(Nulls::new(runs))
    }

    /// The cells of `field` at `level` in partition `part_idx` whose index lies in `indexes`,
    /// ascending, found by binary search (no scan). From version 4 on an index may appear more
    /// than once: a chain of partial cells, oldest rows first, which a read folds in front of
    /// what follows link by link, last first ([`CHAINS_VERSION`]). A packed chunk of cells it
    /// decodes is kept in the reader's cell cache, if it has one, for the reads that come back.
    pub fn cells(
        &self,
        part_idx: usize,
        field: u16,
        level: u8,
        indexes: RangeInclusive<u64>,
    ) -> Result<Vec<Cell>, SegmentError> {
        self.cells_kept(part_idx, field, level, indexes, true)
    }

    /// How many cells of `field` partition `part_idx` stores at each level from 0 to its top
    /// (0 for a level it folds from its rows; a chain's links count one each), from its Cells
    /// block's chunk table or records, decoding nothing.
    pub fn stored_cell_counts(
        &self,
        part_idx: usize,
        field: u16,
    ) -> Result<Vec<u64>, SegmentError> {
        let n_levels = usize::from(self.partition(part_idx).entry.n_levels);
        let mut counts = vec![0u64; n_levels];
        let Some(block_idx) = self
            .block_range(part_idx)
            .find(|&b| self.blocks[b].kind == BlockKind::Cells)
        else {
            return Ok(counts);
        };
        let payload = self.verified_block(block_idx)?;
        let mut add = |f: u16, level: u8, n: u64| {
            if let (true, Some(count)) = (f == field, counts.get_mut(usize::from(level))) {
                *count += n;
            }
        };
        if self.blocks[block_idx].packed {
            let (_, table) = cellpack::split_checked(payload);
            for r in table {
                add(r.field.get(), r.level, u64::from(r.n_cells.get()));
            }
        } else {
            for r in slice_of::<CellRecord>(payload) {
                add(r.field.get(), r.level, 1);
            }
        }
        Ok(counts)
    }

    /// [`SegmentReader::cells`], neither taking the chunks it decodes from the cell cache nor
    /// offering them to it: for a read that passes once through a file's cells (a merge), which
    /// would only push out what other reads come back to.
    pub fn cells_uncached(
        &self,
        part_idx: usize,
        field: u16,
        level: u8,
        indexes: RangeInclusive<u64>,
    ) -> Result<Vec<Cell>, SegmentError> {
        self.cells_kept(part_idx, field, level, indexes, false)
    }

    fn cells_kept(
        &self,
        part_idx: usize,
        field: u16,
        level: u8,
        indexes: RangeInclusive<u64>,
        cached: bool,
    ) -> Result<Vec<Cell>, SegmentError> {
        let Some(block_idx) = self
            .block_range(part_idx)
            .find(|&b| self.blocks[b].kind == BlockKind::Cells)
        else {
            return Ok(Vec::new());
        };
        let payload = self.verified_block(block_idx)?;
        if !self.blocks[block_idx].packed {
            let records: &[CellRecord] = slice_of(payload);
            return Ok(self.decode_cells(records, part_idx, field, level, indexes));
        }
        // A packed block (version 8 on): the chunks of (`field`, `level`) that reach
        // `indexes`, each decoded (or taken from the chunk cache) and checked as a plain
        // block's records are.
        let (data, table) = cellpack::split_checked(payload);
        let key = |r: &CellChunkRecord| (r.field.get(), r.level);
        let start = table.partition_point(|r| {
            key(r) < (field, level)
                || key(r) == (field, level) && r.last_index.get() < *indexes.start()
        });
        let end = table.partition_point(|r| {
            key(r) < (field, level)
                || key(r) == (field, level) && r.first_index.get() <= *indexes.end()
        });
        let mut cells = Vec::new();
        for chunk in start..end.max(start) {
            let words = self.cell_chunk(block_idx, data, table, chunk, cached)?;
            let records = cellpack::records(words.words());
            cells.extend(self.decode_cells(records, part_idx, field, level, indexes.clone()));
        }
        Ok(cells)
    }

    /// Chunk `chunk` of packed Cells block `block_idx`, as its records' words: from the cell
    /// cache where `cached` and it keeps it, else decoded and checked (and offered to the
    /// cache where `cached`). A chunk that fails its checks fails alike at every read.
    fn cell_chunk(
        &self,
        block_idx: usize,
        data: &[u8],
        table: &[CellChunkRecord],
        chunk: usize,
        cached: bool,
    ) -> Result<CellWords, SegmentError> {
        let block = self.blocks[block_idx];
        let cache = self.cell_cache.as_ref().filter(|_| cached);
        let key = |file: u64| ChunkKey {
            file,
            block: block.offset as u64,
            chunk: chunk as u64,
        };
        if let Some((cache, file)) = cache
            && let Some(decoded) = cache.get(key(*file))
            && let Decoded::U64(_) = *decoded
        {
            return Ok(CellWords::Kept(decoded));
        }
        let decoded = cellpack::decode(data, table, chunk).and_then(|words| {
            let chunk_at = chunk
                .checked_sub(1)
                .map_or(0, |c| packed::table_index(table[c].end_byte));
            let part = &self.partitions[block.partition];
            contents::check_cell_chunk(cellpack::records(&words), chunk_at, part)?;
            Ok(words)
        });
        match decoded {
            Ok(words) => Ok(match cache {
                Some((cache, file)) => {
                    let decoded = Arc::new(Decoded::U64(words));
                    cache.put(key(*file), &decoded);
                    CellWords::Kept(decoded)
                }
                None => CellWords::Own(words),
            }),
            Err((at, what)) => Err(SegmentError::malformed(
                &self.path,
                (block.offset + at) as u64,
                what,
            )),
        }
    }

    /// The cells of `field` at `level` whose index lies in `indexes`, from checked records
    /// sorted by (field, level, index).
    fn decode_cells(
        &self,
        records: &[CellRecord],
        part_idx: usize,
        field: u16,
        level: u8,
        indexes: RangeInclusive<u64>,
    ) -> Vec<Cell> {
        let key = |r: &CellRecord| (r.field.get(), r.level, r.index.get());
        let start = records.partition_point(|r| key(r) < (field, level, *indexes.start()));
        let end = records.partition_point(|r| key(r) <= (field, level, *indexes.end()));
        let found = records.get(start..end.max(start)).unwrap_or_default();
        // The block's first read checked every record's kind code against the field's measured
        // kind, and that it folds at least one row: decoding is a plain copy, which the
        // compiler writes straight into the vector. (A fallible decode per cell, collected,
        // built each cell on the stack and copied it through a stalled load: most of a
        // survey's time, measured.)
        let Some(&(_, kind)) = self
            .partition(part_idx)
            .measured
            .iter()
            .find(|&&(f, _)| f == field)
        else {
            debug_assert!(
                found.is_empty(),
                "the block check refused cells of an unmeasured field"
            );
            return Vec::new();
        };
        found.iter().map(|r| decode_cell(kind, r)).collect()
    }

    fn partition(&self, part_idx: usize) -> &PartitionInfo {
        &self.partitions[part_idx]
    }

    fn block_range(&self, part_idx: usize) -> Range<usize> {
        self.partition(part_idx).blocks.clone()
    }

    /// The positions or ordinals (`role`) of a partition, whichever way the block encodes them.
    fn row_sequence(&self, part_idx: usize, role: BlockKind) -> Result<Sequence<'_>, SegmentError> {
        let block_idx = self
            .block_range(part_idx)
            .find(|&b| self.blocks[b].kind.row_role() == role)
            .expect("the directory parse checked every partition has its row blocks");
        let payload = self.verified_block(block_idx)?;
        Ok(if self.blocks[block_idx].kind == role {
            Sequence::plain(slice_of(payload))
        } else {
            // The block's first read ran `check_runs` over these runs.
            Sequence::checked_runs(slice_of::<RunRecord>(payload))
        })
    }

    /// The payload of block `block_idx`, after its crc and content checks (once per reader).
    fn verified_block(&self, block_idx: usize) -> Result<&[u8], SegmentError> {
        let block = self.blocks[block_idx];
        let payload = &self.bytes[block.offset..block.offset + block.len];
        let outcome = self.verified[block_idx].get_or_init(|| {
            let expected = read_crc(&self.bytes, block.offset + block.len);
            let got = crc32c::crc32c(payload);
            if expected != got {
                return Err(BlockFault::Checksum { expected, got });
            }
            let part = &self.partitions[block.partition];
            contents::check_block_contents(&block, payload, part)
                .map_err(|(at, what)| BlockFault::Contents { at, what })
        });
        match outcome {
            Ok(()) => Ok(payload),
            Err(BlockFault::Checksum { expected, got }) => Err(SegmentError::Checksum {
                path: self.path.clone(),
                offset: block.offset as u64,
                what: "block",
                expected: *expected,
                got: *got,
            }),
            Err(BlockFault::Contents { at, what }) => Err(SegmentError::malformed(
                &self.path,
                (block.offset + at) as u64,
                what.clone(),
            )),
        }
    }
}

/// A cell record of a verified block, whose field is of `kind`.
fn decode_cell(kind: NumKind, r: &CellRecord) -> Cell {
    let point = |p: &PointRecord| Point {
        axis: p.axis.get(),
        value: Num::from_le_bytes(kind, p.value),
    };
    Cell {
        index: r.index.get(),
        bucket: Bucket {
            field: r.field.get(),
            first: point(&r.first),
            last: point(&r.last),
            min: point(&r.min),
            max: point(&r.max),
            count: r.count.get(),
            sum: r.sum.get(),
            sum_sq: r.sum_sq.get(),
        },
    }
}

/// Checks the header; answers the file's format version.
fn check_header(path: &str, file: &[u8]) -> Result<u32, SegmentError> {
    let (header, _) = Header::ref_from_prefix(file)
        .map_err(|_| SegmentError::malformed(path, 0, "no room for a header"))?;
    let got = crc32c::crc32c(&header.as_bytes()[..28]);
    if got != header.crc.get() {
        return Err(SegmentError::Checksum {
            path: path.to_owned(),
            offset: 0,
            what: "header",
            expected: header.crc.get(),
            got,
        });
    }
    if header.magic != SEGMENT_MAGIC {
        return Err(SegmentError::malformed(
            path,
            0,
            "not a strata segment (bad magic)",
        ));
    }
    let version = header.version.get();
    if !(SEGMENT_VERSION_MIN..=SEGMENT_VERSION).contains(&version) {
        return Err(SegmentError::malformed(
            path,
            8,
            format!("unsupported version {version}"),
        ));
    }
    Ok(version)
}

/// Checks the footer; answers the directory's offset and length, and the file digest.
fn check_footer(
    path: &str,
    file: &[u8],
    footer_at: usize,
) -> Result<(usize, usize, u32), SegmentError> {
    let footer = Footer::ref_from_bytes(&file[footer_at..])
        .map_err(|_| SegmentError::malformed(path, footer_at as u64, "no room for a footer"))?;
    let got = crc32c::crc32c(&footer.as_bytes()[..28]);
    if got != footer.crc.get() {
        return Err(SegmentError::Checksum {
            path: path.to_owned(),
            offset: footer_at as u64,
            what: "footer",
            expected: footer.crc.get(),
            got,
        });
    }
    if footer.magic != FOOTER_MAGIC {
        return Err(SegmentError::malformed(
            path,
            footer_at as u64,
            "bad footer magic",
        ));
    }
    let dir_offset = usize::try_from(footer.dir_offset.get()).unwrap_or(usize::MAX);
    let dir_len = usize::try_from(footer.dir_len.get()).unwrap_or(usize::MAX);
    // The directory block ends exactly where the footer starts.
    let fits = dir_offset >= HEADER_LEN
        && dir_len >= size_of::<DirHeader>()
        && dir_offset
            .checked_add(dir_len)
            .and_then(|e| e.checked_add(BLOCK_CRC_LEN))
            == Some(footer_at);
    if !fits {
        return Err(SegmentError::malformed(
            path,
            footer_at as u64,
            format!("directory at {dir_offset}+{dir_len} does not end at the footer"),
        ));
    }
    Ok((dir_offset, dir_len, footer.digest.get()))
}

fn verify_crc(
    path: &str,
    file: &[u8],
    offset: usize,
    len: usize,
    what: &'static str,
) -> Result<(), SegmentError> {
    let got = crc32c::crc32c(&file[offset..offset + len]);
    let expected = read_crc(file, offset + len);
    if got == expected {
        Ok(())
    } else {
        Err(SegmentError::Checksum {
            path: path.to_owned(),
            offset: offset as u64,
            what,
            expected,
            got,
        })
    }
}

fn read_crc(file: &[u8], at: usize) -> u32 {
    let mut crc = [0u8; BLOCK_CRC_LEN];
    crc.copy_from_slice(&file[at..at + BLOCK_CRC_LEN]);
    u32::from_le_bytes(crc)
}

/// A partition's measured fields, in answer order: (field index, kind).
fn parse_measured(records: &[MeasuredRecord]) -> Result<Vec<(u16, NumKind)>, String> {
    records
        .iter()
        .map(|m| match m.kind {
            1 => Ok((m.field.get(), NumKind::U64)),
            2 => Ok((m.field.get(), NumKind::I64)),
            3 => Ok((m.field.get(), NumKind::F64)),
            other => Err(format!("measured kind code {other}")),
        })
        .collect()
}

/// What a partition record's `stored_from` promises (version 3 on; 0 before), and the Cells
/// block it calls for: levels stored whole need their cells, and beneath `stored_from` a level
/// may store none, so a partition storing no level whole may have a Cells block or not. Cells
/// only where there are levels and measured fields.
fn check_stored_from(
    r: &PartitionRecord,
    version: u32,
    n_measured: usize,
    has_cells: bool,
) -> Result<(), String> {
    if version < STORED_FROM_VERSION && r.stored_from != 0 {
        return Err(format!(
            "levels stored from {} in a file of version {version}",
            r.stored_from
        ));
    }
    if r.stored_from > r.n_levels {
        return Err(format!(
            "levels stored from {} of {}",
            r.stored_from, r.n_levels
        ));
    }
    let with_levels = r.n_levels > 0 && n_measured > 0;
    let stores_whole = with_levels && r.stored_from < r.n_levels;
    if (has_cells && !with_levels) || (stores_whole && !has_cells) {
        return Err("the partition's blocks do not match its rows".into());
    }
    Ok(())
}

/// A partition's blocks hold its rows: one positions and one ordinals block (plain or runs),
/// an axis block iff it has an axis, at most one cells and one seams block, and every row block
/// of `n_rows` (at least one).
fn check_blocks(own: &[BlockInfo], n_rows: u64, has_axis: bool) -> Result<(), String> {
    // Positions and ordinals count as one whether plain or run-encoded.
    let count = |kind: BlockKind| own.iter().filter(|b| b.kind.row_role() == kind).count();
    let rows_ok = own
        .iter()
        .filter(|b| {
            !matches!(
                b.kind,
                BlockKind::Cells | BlockKind::Seams | BlockKind::Validity
            )
        })
        .all(|b| b.n_items as u64 == n_rows);
    let nulls_ok = own
        .iter()
        .filter(|b| b.kind == BlockKind::Validity)
        .all(|b| b.n_items as u64 <= n_rows);
    if n_rows == 0
        || !rows_ok
        || !nulls_ok
        || count(BlockKind::Positions) != 1
        || count(BlockKind::Ordinals) != 1
        || count(BlockKind::Axis) != usize::from(has_axis)
        || count(BlockKind::Cells) > 1
        || count(BlockKind::Seams) > 1
    {
        return Err("the partition's blocks do not match its rows".into());
    }
    Ok(())
}

/// How a level folded from the rows is read (version 6 on): seams only where there are levels
/// (an axis and measured fields), and the chained level at most `n_levels` (which is none).
fn check_folding(
    r: &PartitionRecord,
    version: u32,
    n_measured: usize,
    has_axis: bool,
    has_seams: bool,
) -> Result<(), String> {
    if has_seams && (r.n_levels == 0 || n_measured == 0 || !has_axis) {
        return Err("seams in a partition without levels".into());
    }
    if version >= SEAMS_VERSION && r.chained_from > r.n_levels {
        return Err(format!(
            "chained from level {} of {}",
            r.chained_from, r.n_levels
        ));
    }
    Ok(())
}

/// Parses and bounds-checks the directory. Everything here is untrusted until proven in range.
fn parse_directory(
    path: &str,
    directory: &[u8],
    dir_offset: usize,
    version: u32,
) -> Result<(Vec<PartitionInfo>, Vec<BlockInfo>), SegmentError> {
    let bad =
        |at: usize, what: String| SegmentError::malformed(path, (dir_offset + at) as u64, what);
    let (header, rest) = DirHeader::ref_from_prefix(directory)
        .map_err(|_| bad(0, "directory header cut short".into()))?;
    let n_partitions = header.n_partitions.get() as usize;
    let n_blocks = header.n_blocks.get() as usize;
    let heap_len = header.heap_len.get() as usize;
    let expected = n_partitions
        .checked_mul(size_of::<PartitionRecord>())
        .and_then(|p| {
            n_blocks
                .checked_mul(size_of::<BlockRecord>())
                .map(|b| (p, b))
        })
        .and_then(|(p, b)| p.checked_add(b)?.checked_add(heap_len));
    if expected != Some(rest.len()) {
        return Err(bad(
            0,
            format!("directory sizes do not add up to {} bytes", rest.len()),
        ));
    }
    let (part_records, rest) = <[PartitionRecord]>::ref_from_prefix_with_elems(rest, n_partitions)
        .map_err(|_| bad(16, "partition records cut short".into()))?;
    let (block_records, heap) = <[BlockRecord]>::ref_from_prefix_with_elems(rest, n_blocks)
        .map_err(|_| bad(16, "block records cut short".into()))?;
    let blocks_at = 16 + n_partitions * size_of::<PartitionRecord>();
    let mut blocks = block_records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            parse_block(r, dir_offset, version)
                .map_err(|what| bad(blocks_at + i * size_of::<BlockRecord>(), what))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let partitions = part_records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            parse_partition(r, heap, &blocks, version)
                .map_err(|what| bad(16 + i * size_of::<PartitionRecord>(), what))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Each block is checked against its partition's promises, so it must have exactly one: the
    // partitions' block ranges follow each other and cover every block (as the writer lays them).
    let mut next_block = 0;
    let mut keys = BTreeSet::new();
    for (part_idx, part) in partitions.iter().enumerate() {
        let at = 16 + part_idx * size_of::<PartitionRecord>();
        if part.blocks.start != next_block {
            return Err(bad(
                at,
                format!(
                    "the partition's blocks start at {}, not at {next_block}",
                    part.blocks.start
                ),
            ));
        }
        if !keys.insert((&part.entry.stream, &part.entry.track)) {
            return Err(bad(at, "a second partition of one stream and track".into()));
        }
        for block in &mut blocks[part.blocks.clone()] {
            block.partition = part_idx;
        }
        next_block = part.blocks.end;
    }
    if next_block != blocks.len() {
        return Err(bad(
            blocks_at,
            format!(
                "{} blocks belong to no partition",
                blocks.len() - next_block
            ),
        ));
    }
    Ok((partitions, blocks))
}

fn parse_block(r: &BlockRecord, data_end: usize, version: u32) -> Result<BlockInfo, String> {
    let kind = BlockKind::from_code(r.kind).ok_or_else(|| format!("block kind code {}", r.kind))?;
    let offset = usize::try_from(r.offset.get()).map_err(|_| "block offset".to_owned())?;
    let len = usize::try_from(r.len.get()).map_err(|_| "block length".to_owned())?;
    let n_items = usize::try_from(r.n_items.get()).map_err(|_| "block item count".to_owned())?;
    let end = offset
        .checked_add(len)
        .and_then(|e| e.checked_add(BLOCK_CRC_LEN));
    if offset < HEADER_LEN || end.is_none_or(|e| e > data_end) {
        return Err(format!(
            "block at {offset}+{len} lies outside the data region"
        ));
    }
    let packed = match r.encoding {
        ENCODING_PLAIN => false,
        ENCODING_PACKED
            if version >= PACKED_VERSION
                && (kind == BlockKind::Axis && r.field_kind == 0
                    || kind == BlockKind::Column && (1..=3).contains(&r.field_kind))
                || version >= PACKED_CELLS_VERSION
                    && kind == BlockKind::Cells
                    && r.field_kind == 0 =>
        {
            true
        }
        other => return Err(format!("block of kind {kind:?} in encoding {other}")),
    };
    let fixed_len = |size: usize| n_items.checked_mul(size) == Some(len);
    // A packed block's chunk table is checked with its crc, when first read.
    let sized = packed && len >= 8 && n_items > 0;
    let sized = sized
        || !packed
            && match (kind, r.field_kind) {
                (BlockKind::Positions | BlockKind::Ordinals | BlockKind::Axis, 0)
                | (BlockKind::Column, 1..=3) => fixed_len(8),
                (BlockKind::Column, 4 | 5) => n_items
                    .checked_add(1)
                    .and_then(|n| n.checked_mul(8))
                    .is_some_and(|o| o <= len),
                (BlockKind::Cells, 0) => fixed_len(size_of::<CellRecord>()) && n_items > 0,
                (BlockKind::Seams, 0) => version >= SEAMS_VERSION && fixed_len(8) && n_items > 0,
                // A run takes two bytes at least and holds a row at least.
                (BlockKind::Validity, 1..=3) => {
                    version >= VALIDITY_VERSION && len >= 2 && n_items > 0
                }
                // At least one run, and no more runs than rows (each run holds one at least).
                (BlockKind::PositionRuns | BlockKind::OrdinalRuns, 0) => {
                    let run = size_of::<RunRecord>();
                    version >= RUNS_VERSION && len > 0 && len % run == 0 && len / run <= n_items
                }
                _ => false,
            };
    if !sized {
        return Err(format!(
            "block of kind {kind:?} has {len} bytes for {n_items} items"
        ));
    }
    Ok(BlockInfo {
        kind,
        field_kind: r.field_kind,
        field: r.field.get(),
        packed,
        offset,
        len,
        n_items,
        // Set once the partitions are parsed.
        partition: usize::MAX,
    })
}

fn parse_partition(
    r: &PartitionRecord,
    heap: &[u8],
    blocks: &[BlockInfo],
    version: u32,
) -> Result<PartitionInfo, String> {
    let heap_slice = |offset: u32, len: usize| {
        let start = offset as usize;
        start
            .checked_add(len)
            .and_then(|end| heap.get(start..end))
            .ok_or_else(|| "a name outside the heap".to_owned())
    };
    let stream = heap_slice(r.stream_offset.get(), r.stream_len.get() as usize)?;
    let stream = std::str::from_utf8(stream).map_err(|_| "stream id is not UTF-8".to_owned())?;
    let track = heap_slice(r.track_offset.get(), r.track_len.get() as usize)?;
    let track = TrackKey::decode(track).map_err(|e| format!("track key: {e}"))?;
    let n_measured = r.n_measured.get() as usize;
    let measured_bytes = heap_slice(
        r.measured_offset.get(),
        n_measured
            .checked_mul(size_of::<MeasuredRecord>())
            .ok_or("measured count")?,
    )?;
    let measured_records = <[MeasuredRecord]>::ref_from_bytes(measured_bytes)
        .map_err(|_| "measured fields".to_owned())?;
    let measured = parse_measured(measured_records)?;
    let first = r.first_block.get() as usize;
    let range = first
        ..first
            .checked_add(r.n_blocks.get() as usize)
            .ok_or("block range")?;
    let own = blocks
        .get(range.clone())
        .ok_or("block range outside the directory")?;
    let n_rows = r.n_rows.get();
    let has_axis = match r.has_axis {
        0 => false,
        1 => true,
        other => return Err(format!("axis flag {other}")),
    };
    check_blocks(own, n_rows, has_axis)?;
    let count = |kind: BlockKind| own.iter().filter(|b| b.kind == kind).count();
    check_folding(
        r,
        version,
        n_measured,
        has_axis,
        count(BlockKind::Seams) == 1,
    )?;
    check_stored_from(r, version, n_measured, count(BlockKind::Cells) == 1)?;
    let extent_offset = r.extent_offset.get();
    let extent_len = r.extent_len.get();
    let extent_end = extent_offset.checked_add(extent_len).ok_or("extent")?;
    let inside = own.iter().all(|b| {
        b.offset as u64 >= extent_offset && (b.offset + b.len + BLOCK_CRC_LEN) as u64 <= extent_end
    });
    if !inside {
        return Err("a block lies outside its partition's extent".into());
    }
    let columns: Vec<(u16, u8)> = own
        .iter()
        .filter(|b| b.kind == BlockKind::Column)
        .map(|b| (b.field, b.field_kind))
        .collect();
    check_fields(&measured, &columns)?;
    check_validity(own, &columns)?;
    if count(BlockKind::Cells) == 1 && !has_axis {
        return Err("cells in a partition without an axis".into());
    }
    let pair = |p: [U64; 2]| [p[0].get(), p[1].get()];
    let ordered = |p: [u64; 2]| p[0] <= p[1];
    if !ordered(pair(r.positions))
        || !ordered(pair(r.ordinals))
        || (has_axis && !ordered(pair(r.axis)))
    {
        return Err("a range whose lo is above its hi".into());
    }
    Ok(PartitionInfo {
        entry: PartitionEntry {
            stream: stream.to_owned(),
            track,
            n_rows,
            positions: pair(r.positions),
            ordinals: pair(r.ordinals),
            axis: has_axis.then(|| pair(r.axis)),
            n_levels: r.n_levels,
            offset: extent_offset,
            len: extent_len,
        },
        measured,
        columns,
        stored_from: r.stored_from,
        chains: version >= CHAINS_VERSION,
        chained_from: (version >= SEAMS_VERSION && r.chained_from < r.n_levels)
            .then_some(r.chained_from),
        holes: version >= VALIDITY_VERSION,
        blocks: range,
    })
}

/// Validity blocks (version 7 on; their kind is refused before): in strictly increasing field
/// order, each of a number column the partition stores, of the column's kind.
fn check_validity(own: &[BlockInfo], columns: &[(u16, u8)]) -> Result<(), String> {
    let mut before: Option<u16> = None;
    for block in own.iter().filter(|b| b.kind == BlockKind::Validity) {
        let field = block.field;
        if before.is_some_and(|b| b >= field) {
            return Err(format!("validity of field {field} out of order or twice"));
        }
        before = Some(field);
        // A stream without an axis stores no levels, so its partitions list no measured
        // fields: a validity block needs only the number column it qualifies.
        let column = columns.iter().find(|&&(f, _)| f == field);
        if column.is_none_or(|&(_, kind)| kind != block.field_kind) {
            return Err(format!(
                "validity of field {field}, which has no number column of kind {}",
                block.field_kind
            ));
        }
    }
    Ok(())
}

/// Columns in strictly increasing field order (one per field), measured fields likewise, and each
/// measured field stored as a column of its own kind: reads fold cells and scan that column as one
/// kind of number.
fn check_fields(measured: &[(u16, NumKind)], columns: &[(u16, u8)]) -> Result<(), String> {
    if !columns.windows(2).all(|w| w[0].0 < w[1].0) {
        return Err("columns out of field order, or a field stored twice".into());
    }
    if !measured.windows(2).all(|w| w[0].0 < w[1].0) {
        return Err("measured fields out of order, or a field measured twice".into());
    }
    for &(field, kind) in measured {
        let code = match kind {
            NumKind::U64 => 1,
            NumKind::I64 => 2,
            NumKind::F64 => 3,
        };
        if !columns.contains(&(field, code)) {
            return Err(format!("measured field {field} has no {kind:?} column"));
        }
    }
    Ok(())
}

/// Views a payload as a slice of 8-byte (or cell-sized) little-endian records.
///
/// # Panics
/// If the payload's length is not a multiple of the record size: the directory parse checked
/// every block's length against its item count, so this is a broken invariant.
fn slice_of<T: FromBytes + zerocopy::Immutable + zerocopy::KnownLayout + zerocopy::Unaligned>(
    payload: &[u8],
) -> &[T] {
    <[T]>::ref_from_bytes(payload).expect("block lengths were checked at open")
}
