//! The segment file's fixed layouts, shared by [`crate::writer`] and [`crate::reader`].
//!
//! ```text
//! Header (32) | partition blocks ... | directory block | Footer (32)
//! block = payload | crc32c(payload) as u32 LE
//! ```
//!
//! Every byte of a segment is covered by exactly one checksum: the header's, a block's (the
//! directory is a block), or the footer's. `docs/format.md` has the byte-exact tables.

use zerocopy::little_endian::{F64, U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The first 8 bytes of every segment.
pub const SEGMENT_MAGIC: [u8; 8] = *b"STRATASG";
/// The segment format version this build writes.
///
/// Version 2 added the run-encoded row blocks ([`BlockKind::PositionRuns`],
/// [`BlockKind::OrdinalRuns`]); everything else is as in version 1. This build reads both: a
/// version 1 file never holds a run block (the reader refuses one there), and a build that only
/// knew version 1 refuses a version 2 file by its header rather than by an unknown block kind.
pub const SEGMENT_VERSION: u32 = 8;
/// The oldest segment format version this build still reads.
pub const SEGMENT_VERSION_MIN: u32 = 1;
/// The first version whose files may hold run-encoded row blocks.
pub const RUNS_VERSION: u32 = 2;
/// The first version whose partition records say from which level the levels are stored
/// whole (`stored_from`); beneath it a level is folded from the raw rows.
pub const STORED_FROM_VERSION: u32 = 3;
/// The first version whose Cells blocks may hold a **chain**: several records of one
/// `(field, level, index)`, consecutive, oldest rows first. A merge of segments that are not
/// the partition's newest keeps the partial cells of a cell it shares with a later segment as
/// such a chain, which a read folds into what follows link by link, last first: exactly the
/// fold the merged segments answered (docs/compaction.md).
pub const CHAINS_VERSION: u32 = 4;
/// The first version whose axis and numeric column blocks may be **packed**
/// ([`BlockRecord::encoding`] = [`ENCODING_PACKED`]): compressed with pco in chunks of at most
/// [`PACK_ROWS`] rows, each chunk decoded on its own, so a range read decodes only the chunks
/// it touches (docs/format.md, "Packed blocks").
pub const PACKED_VERSION: u32 = 5;
/// The first version whose partitions may hold a [`BlockKind::Seams`] block: the rows at
/// which a merge's inputs began, inside which a level folded from the rows is folded apart
/// (docs/format.md, "Version 6").
pub const SEAMS_VERSION: u32 = 6;
/// The first version whose partitions may hold [`BlockKind::Validity`] blocks (a measured
/// field's null rows), whose measured `f64` columns and cells may hold NaN and infinities, and
/// whose levels fold only the values present (not null, not NaN), so a field's cells may add
/// up to fewer than the partition's rows (docs/format.md, "Version 7").
pub const VALIDITY_VERSION: u32 = 7;
/// The first version whose Cells blocks may be **packed** ([`ENCODING_PACKED`]): the cells
/// of each (field, level) in chunks of at most [`CELLS_PER_CHUNK`], each chunk's twelve
/// columns compressed with pco and decoded on its own, then a [`CellChunkRecord`] per chunk
/// and the chunk count (docs/format.md, "Version 8"). A cell packs to ~15–40 bytes where its
/// record takes 104, so a file can afford its finer levels.
pub const PACKED_CELLS_VERSION: u32 = 8;
/// The most cells one packed chunk of cells holds: what one read of a few cells decodes at
/// most (tens of microseconds).
pub const CELLS_PER_CHUNK: usize = 1024;
/// A block's bytes as they are: 8 bytes a number, little-endian.
pub const ENCODING_PLAIN: u8 = 0;
/// A block's numbers as pco chunks followed by a [`ChunkRecord`] per chunk and the chunk count.
pub const ENCODING_PACKED: u8 = 1;
/// The most rows one packed chunk holds: a barrier's worth, what decoding one chunk costs a
/// range read at most (a chunk decodes in tens of microseconds).
pub const PACK_ROWS: usize = 10_000;
/// pco's compression level for packed chunks: within 2% of its default level's bytes at three
/// to four times its encode rate (the codec study in docs/format.md).
pub const PACK_LEVEL: usize = 4;
/// Blocks of fewer rows stay plain: pco's own header would cost more than it saves.
pub const PACK_MIN_ROWS: usize = 16;
/// A chunk of packed cells (version 8) with fewer cells holds them as records: twelve pco
/// files cost ~25 µs to write and as much to read whatever they hold, and for a handful of
/// cells their headers cost about what the records do. (A partition's coarse levels, of one to
/// a few cells each, were two thirds of what a barrier spent packing cells.)
pub const RECORD_CHUNK_CELLS: usize = 16;
/// The bit of a [`CellChunkRecord`]'s `kind` that says its chunk holds the cells' records as a
/// plain Cells block does (104 bytes a cell), not twelve pco columns.
pub const CHUNK_OF_RECORDS: u8 = 0x80;
/// The magic in the footer, so a file cut short is told from a complete one.
pub const FOOTER_MAGIC: [u8; 8] = *b"STRATAFT";
/// Bytes of the crc32c that follows every block's payload.
pub const BLOCK_CRC_LEN: usize = 4;

/// The whole-file digest a manifest records of a segment's bytes: crc32c of the file up to the
/// footer's digest field (everything but the footer's last 8 bytes, the digest and the footer's
/// own crc). A copy of a segment (strata-remote's upload and fetch) is checked against it.
pub fn file_digest(bytes: &[u8]) -> u32 {
    crc32c::crc32c(&bytes[..bytes.len().saturating_sub(8)])
}

/// The file header.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Header {
    /// [`SEGMENT_MAGIC`].
    pub magic: [u8; 8],
    /// [`SEGMENT_VERSION`].
    pub version: U32,
    /// Zero; reserved for flags.
    pub flags: U32,
    /// Zero.
    pub reserved: [u8; 12],
    /// crc32c of the 28 bytes before it.
    pub crc: U32,
}

/// The file footer: where the directory is, and the whole file's digest.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Footer {
    /// Offset of the directory block's payload.
    pub dir_offset: U64,
    /// Length of the directory block's payload (its crc follows it).
    pub dir_len: U64,
    /// [`FOOTER_MAGIC`].
    pub magic: [u8; 8],
    /// crc32c of every byte of the file before this field: the digest the manifest records.
    pub digest: U32,
    /// crc32c of the 28 bytes of the footer before it.
    pub crc: U32,
}

/// The start of the directory block's payload.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct DirHeader {
    /// Partition records that follow.
    pub n_partitions: U32,
    /// Block records that follow the partition records.
    pub n_blocks: U32,
    /// Bytes of the heap that follows the block records (names, keys, measured-field lists).
    pub heap_len: U32,
    /// Zero.
    pub reserved: U32,
}

/// One partition: its identity, ranges, and where its blocks are.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct PartitionRecord {
    /// The stream id, UTF-8, in the heap.
    pub stream_offset: U32,
    /// Its length.
    pub stream_len: U32,
    /// The encoded track key, in the heap.
    pub track_offset: U32,
    /// Its length.
    pub track_len: U32,
    /// The measured fields in order, in the heap, as [`MeasuredRecord`]s.
    pub measured_offset: U32,
    /// How many.
    pub n_measured: U32,
    /// Index of the partition's first block record.
    pub first_block: U32,
    /// How many block records are the partition's (consecutive).
    pub n_blocks: U32,
    /// Rows in the partition (>= 1).
    pub n_rows: U64,
    /// Inclusive lo and hi of the positions.
    pub positions: [U64; 2],
    /// Inclusive lo and hi of the ordinals.
    pub ordinals: [U64; 2],
    /// Inclusive lo and hi of the axis (zero when there is none).
    pub axis: [U64; 2],
    /// 1 if the stream declares an axis, else 0.
    pub has_axis: u8,
    /// Levels answered for every measured field: `Level(0) .. Level(n_levels - 1)`.
    pub n_levels: u8,
    /// The lowest level stored whole (version 3 on; 0 before). A level beneath it is folded
    /// from the raw rows at read, and the file stores only those of its cells that differ
    /// from that fold (a merge's cells that straddle its inputs).
    pub stored_from: u8,
    /// Version 6 on: from which level a level folded from the rows keeps the cell holding the
    /// partition's last row as a chain of its pieces (a merge's output that had later segments
    /// when it was written: the cells it shared with them), `n_levels` for none. Zero before.
    pub chained_from: u8,
    /// Zero.
    pub reserved: [u8; 4],
    /// Where the partition's blocks start in the file.
    pub extent_offset: U64,
    /// How many bytes they span (payloads and crcs).
    pub extent_len: U64,
}

/// A measured field, in the order buckets answer: field index and numeric kind code.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct MeasuredRecord {
    /// The field's index in the stream declaration.
    pub field: U16,
    /// The field's kind code (1 u64, 2 i64, 3 f64).
    pub kind: u8,
    /// Zero.
    pub reserved: u8,
}

/// What a block holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockKind {
    /// The rows' positions, u64 each.
    Positions = 1,
    /// The rows' ordinals, u64 each.
    Ordinals = 2,
    /// The rows' axis values, u64 each.
    Axis = 3,
    /// One declared field: 8 bytes a row for numbers; for `str` and `bytes`, `n + 1` u64
    /// offsets then the bytes they index.
    Column = 4,
    /// Level cells, [`CellRecord`]s sorted by (field, level, cell index).
    Cells = 5,
    /// The rows' positions as arithmetic runs, [`RunRecord`]s (version 2 on): the writer's
    /// choice over [`BlockKind::Positions`] when it is smaller.
    PositionRuns = 6,
    /// The rows' ordinals as arithmetic runs, [`RunRecord`]s (version 2 on).
    OrdinalRuns = 7,
    /// Seams (version 6 on): a `u64` row index per seam, strictly increasing, each inside the
    /// partition (`1 ..= n_rows - 1`). A seam is a row at which one of the barriers merged into
    /// the partition began; a level the file folds from its rows is folded apart on either
    /// side of each seam, each piece a link of a chain, so that it answers what the barriers
    /// answered before they were merged, bit for bit (docs/compaction.md).
    Seams = 8,
    /// Validity (version 7 on): the null rows of one measured field's column, as runs of
    /// LEB128 varints (`crate::validity`); `n_items` is the number of null rows. Only a column
    /// with a null row has one.
    Validity = 9,
}

impl BlockKind {
    /// The kind for an on-disk code.
    pub fn from_code(code: u8) -> Option<BlockKind> {
        match code {
            1 => Some(BlockKind::Positions),
            2 => Some(BlockKind::Ordinals),
            3 => Some(BlockKind::Axis),
            4 => Some(BlockKind::Column),
            5 => Some(BlockKind::Cells),
            6 => Some(BlockKind::PositionRuns),
            7 => Some(BlockKind::OrdinalRuns),
            8 => Some(BlockKind::Seams),
            9 => Some(BlockKind::Validity),
            _ => None,
        }
    }

    /// The row column a row block holds, whichever its encoding: `Positions` for
    /// [`BlockKind::PositionRuns`], `Ordinals` for [`BlockKind::OrdinalRuns`], itself otherwise.
    #[must_use]
    pub fn row_role(self) -> BlockKind {
        match self {
            BlockKind::PositionRuns => BlockKind::Positions,
            BlockKind::OrdinalRuns => BlockKind::Ordinals,
            other => other,
        }
    }
}

/// One arithmetic run of a run-encoded row block: the rows from the previous run's `end` (0 for
/// the first run) up to `end`, exclusive, hold `start`, `start + step`, `start + 2 * step`, ...
///
/// `end` is cumulative rather than a count so that row `i`'s run is a binary search of the
/// records straight from the map, with nothing decoded into memory.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct RunRecord {
    /// The run's first value.
    pub start: U64,
    /// What each row adds to the one before it in the run.
    pub step: U64,
    /// One past the run's last row index in the partition; strictly increasing across runs,
    /// the last equal to the partition's row count.
    pub end: U64,
}

/// Where one block is and what it holds.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct BlockRecord {
    /// A [`BlockKind`] code.
    pub kind: u8,
    /// For a column, the field's kind code (1..=5); zero otherwise.
    pub field_kind: u8,
    /// For a column, the field's index in the declaration; zero otherwise.
    pub field: U16,
    /// How the payload holds its items: [`ENCODING_PLAIN`], or (version 5 on, axis and
    /// numeric columns only) [`ENCODING_PACKED`].
    pub encoding: u8,
    /// Zero.
    pub reserved: [u8; 3],
    /// Offset of the payload.
    pub offset: U64,
    /// Length of the payload (its crc follows it).
    pub len: U64,
    /// Rows (for row blocks) or cells (for the cells block).
    pub n_items: U64,
}

/// One chunk of a packed block. A packed payload is the chunks' pco bytes back to back, then a
/// record per chunk, then the number of chunks as a u64: written as it streams, read from the
/// end. `end_row` and `end_byte` are cumulative, so the chunk holding a row is a binary search.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ChunkRecord {
    /// One past the chunk's last row; strictly increasing, the last equal to the block's rows.
    pub end_row: U64,
    /// One past the chunk's last byte among the chunks' bytes; strictly increasing, the last
    /// equal to their length.
    pub end_byte: U64,
    /// The chunk's first value, as its 8 little-endian bytes (for the axis: what a search of
    /// the chunks compares).
    pub first: U64,
    /// The chunk's last value, likewise.
    pub last: U64,
}

/// One stored level cell of one field.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct CellRecord {
    /// The field's index in the declaration.
    pub field: U16,
    /// The level.
    pub level: u8,
    /// The field's numeric kind code (1 u64, 2 i64, 3 f64): how to read the value bytes.
    pub kind: u8,
    /// Zero.
    pub reserved: [u8; 4],
    /// The cell's index on its level's grid.
    pub index: U64,
    /// `first`: axis, then the value's 8 bytes.
    pub first: PointRecord,
    /// `last`.
    pub last: PointRecord,
    /// `min`.
    pub min: PointRecord,
    /// `max`.
    pub max: PointRecord,
    /// Rows folded.
    pub count: U64,
    /// Sum of values.
    pub sum: F64,
    /// Sum of squared values.
    pub sum_sq: F64,
}

/// One chunk of a packed Cells block: cells of one (field, level), consecutive on its grid.
/// A packed Cells payload is the chunks' bytes back to back, then a record per chunk, then the
/// number of chunks as a u64. A chunk's bytes are twelve `u32` lengths, then as many
/// standalone pco files, one a column: index, first's axis, last's, min's and max's axis less
/// first's, the four values (of the field's kind), count, sum, sum of squares. A chain's links
/// never straddle two chunks.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct CellChunkRecord {
    /// The field's index in the declaration.
    pub field: U16,
    /// The level.
    pub level: u8,
    /// The field's numeric kind code (1 u64, 2 i64, 3 f64), with [`CHUNK_OF_RECORDS`] set
    /// where the chunk holds the cells' records rather than their packed columns.
    pub kind: u8,
    /// Cells in the chunk, 1 ..= [`CELLS_PER_CHUNK`].
    pub n_cells: U32,
    /// The first cell's index on the level's grid.
    pub first_index: U64,
    /// The last cell's index.
    pub last_index: U64,
    /// The rows its cells fold, together.
    pub rows: U64,
    /// One past the chunk's last byte among the chunks' bytes; strictly increasing, the last
    /// equal to their length.
    pub end_byte: U64,
}

/// A placed point: axis and the value's little-endian bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct PointRecord {
    /// Where the value occurred.
    pub axis: U64,
    /// The value, read by the cell's kind.
    pub value: [u8; 8],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_have_their_documented_sizes() {
        assert_eq!(size_of::<Header>(), 32);
        assert_eq!(size_of::<Footer>(), 32);
        assert_eq!(size_of::<DirHeader>(), 16);
        assert_eq!(size_of::<PartitionRecord>(), 112);
        assert_eq!(size_of::<MeasuredRecord>(), 4);
        assert_eq!(size_of::<BlockRecord>(), 32);
        assert_eq!(size_of::<PointRecord>(), 16);
        assert_eq!(size_of::<CellRecord>(), 104);
        assert_eq!(size_of::<RunRecord>(), 24);
        assert_eq!(size_of::<ChunkRecord>(), 32);
        assert_eq!(size_of::<CellChunkRecord>(), 40);
    }
}
