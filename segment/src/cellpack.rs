//! Packed Cells blocks (format version 8 on): a partition's level cells as columns, compressed
//! with pco, in chunks of at most [`CELLS_PER_CHUNK`] cells of one (field, level).
//!
//! ```text
//! payload = chunk bytes ... | CellChunkRecord × n | n as u64 LE
//! chunk   = 12 × u32 LE column lengths | 12 standalone pco files
//! ```
//!
//! A cell record takes 104 bytes; packed, a cell of a smooth series takes ~15, of white noise
//! ~40: its index climbs by one, its count barely changes, its points' offsets from its first
//! point are small, and its four values and two sums are near their neighbours'. That is what
//! lets a file store levels fine enough that a zoomed survey reads cells, not rows.
//!
//! The table is checked with the block's crc (order, chunk sizes, and the rows each (field,
//! level) folds, [`super::reader`]'s cell checks); a chunk's cells are checked as a plain
//! block's records are when the chunk is decoded, and that they are what its record says.

use zerocopy::little_endian::{F64, U32, U64};
use zerocopy::{FromBytes, IntoBytes};

use crate::format::{
    CELLS_PER_CHUNK, CHUNK_OF_RECORDS, CellChunkRecord, CellRecord, PACK_LEVEL, PointRecord,
    RECORD_CHUNK_CELLS,
};

/// Columns a chunk holds.
const COLUMNS: usize = 12;

/// One column's numbers, as the kind they are compressed as.
enum Col {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl Col {
    /// The column's pco file, delta-coded (`smooth`: an index, an axis, a value or a sum, each
    /// near the one before) or not (an offset or a count, near a constant). Told rather than
    /// detected: pco's detection was a third of packing a cell, and a merge packs every cell
    /// of its output.
    fn compress(&self, smooth: bool) -> Vec<u8> {
        let delta = if smooth {
            pco::DeltaSpec::TryConsecutive(1)
        } else {
            pco::DeltaSpec::NoOp
        };
        let config = pco::ChunkConfig::default()
            .with_compression_level(PACK_LEVEL)
            .with_delta_spec(delta);
        let packed = match self {
            Col::U64(v) => pco::standalone::simple_compress(v, &config),
            Col::I64(v) => pco::standalone::simple_compress(v, &config),
            Col::F64(v) => pco::standalone::simple_compress(v, &config),
        };
        packed.expect("pco compresses any numbers at a valid level")
    }
}

/// A value column of kind code `kind` from the records' points `point`.
fn values(records: &[CellRecord], kind: u8, point: impl Fn(&CellRecord) -> &PointRecord) -> Col {
    let bytes = records.iter().map(|r| point(r).value);
    match kind {
        1 => Col::U64(bytes.map(u64::from_le_bytes).collect()),
        2 => Col::I64(bytes.map(i64::from_le_bytes).collect()),
        _ => Col::F64(bytes.map(f64::from_le_bytes).collect()),
    }
}

/// The packed payload of `records` (sorted by field, level and index, as a plain block holds
/// them), or `None` where a chain would not fit one chunk. A chunk of fewer than
/// [`RECORD_CHUNK_CELLS`] cells, one that packs no smaller than its records, or one with a
/// point placed before its cell's first (a fold never makes one) holds its records
/// ([`CHUNK_OF_RECORDS`]).
pub(crate) fn pack(records: &[CellRecord]) -> Option<Vec<u8>> {
    let key = |r: &CellRecord| (r.field.get(), r.level);
    let mut payload = Vec::new();
    let mut table: Vec<CellChunkRecord> = Vec::new();
    let mut start = 0;
    while start < records.len() {
        let group = key(&records[start]);
        let mut end = start;
        while end < records.len() && end - start < CELLS_PER_CHUNK && key(&records[end]) == group {
            end += 1;
        }
        // A chain's links stay in one chunk: cut before the chain the limit split.
        if end < records.len()
            && key(&records[end]) == group
            && records[end].index == records[end - 1].index
        {
            let index = records[end].index.get();
            while end > start && records[end - 1].index.get() == index {
                end -= 1;
            }
            if end == start {
                return None;
            }
        }
        let chunk = &records[start..end];
        let packed = (chunk.len() >= RECORD_CHUNK_CELLS)
            .then(|| pack_chunk(chunk))
            .flatten()
            .filter(|p| p.len() < chunk.as_bytes().len());
        let first = &chunk[0];
        let kind = if let Some(packed) = packed {
            payload.extend_from_slice(&packed);
            first.kind
        } else {
            payload.extend_from_slice(chunk.as_bytes());
            first.kind | CHUNK_OF_RECORDS
        };
        table.push(CellChunkRecord {
            field: first.field,
            level: first.level,
            kind,
            n_cells: U32::new(u32::try_from(chunk.len()).expect("at most CELLS_PER_CHUNK")),
            first_index: first.index,
            last_index: chunk[chunk.len() - 1].index,
            rows: U64::new(chunk.iter().map(|r| r.count.get()).sum()),
            end_byte: U64::new(payload.len() as u64),
        });
        start = end;
    }
    payload.extend_from_slice(table.as_bytes());
    payload.extend_from_slice(&(table.len() as u64).to_le_bytes());
    Some(payload)
}

fn pack_chunk(chunk: &[CellRecord]) -> Option<Vec<u8>> {
    let u64s = |f: &dyn Fn(&CellRecord) -> u64| Col::U64(chunk.iter().map(f).collect());
    let offset = |r: &CellRecord, p: &PointRecord| p.axis.get().checked_sub(r.first.axis.get());
    let placed = chunk.iter().all(|r| {
        [&r.last, &r.min, &r.max]
            .iter()
            .all(|p| offset(r, p).is_some())
    });
    if !placed {
        return None;
    }
    let kind = chunk[0].kind;
    let columns: [Col; COLUMNS] = [
        u64s(&|r| r.index.get()),
        u64s(&|r| r.first.axis.get()),
        u64s(&|r| r.last.axis.get() - r.first.axis.get()),
        u64s(&|r| r.min.axis.get() - r.first.axis.get()),
        u64s(&|r| r.max.axis.get() - r.first.axis.get()),
        values(chunk, kind, |r| &r.first),
        values(chunk, kind, |r| &r.last),
        values(chunk, kind, |r| &r.min),
        values(chunk, kind, |r| &r.max),
        u64s(&|r| r.count.get()),
        Col::F64(chunk.iter().map(|r| r.sum.get()).collect()),
        Col::F64(chunk.iter().map(|r| r.sum_sq.get()).collect()),
    ];
    // Offsets from `first` (columns 2 to 4) and the count (9) are near a constant.
    let packed: Vec<Vec<u8>> = columns
        .iter()
        .enumerate()
        .map(|(i, column)| column.compress(!matches!(i, 2..=4 | 9)))
        .collect();
    let mut out = Vec::with_capacity(COLUMNS * 4 + packed.iter().map(Vec::len).sum::<usize>());
    for column in &packed {
        out.extend_from_slice(&u32::try_from(column.len()).ok()?.to_le_bytes());
    }
    for column in &packed {
        out.extend_from_slice(column);
    }
    Some(out)
}

/// A broken promise: where in the payload, and what.
pub(crate) type Fault = (usize, String);

/// Splits a packed Cells payload into its chunk bytes and table, checking what the table
/// alone promises: at least one chunk, each of 1 ..= [`CELLS_PER_CHUNK`] cells whose first
/// index is at or below its last, bytes strictly increasing to the data's end, `n_items` cells
/// in all, and chunks ordered by (field, level, index) with no index in two chunks.
pub(crate) fn split(payload: &[u8], n_items: usize) -> Result<(&[u8], &[CellChunkRecord]), Fault> {
    let count_at = payload.len().checked_sub(8).ok_or((
        0,
        "a packed Cells block too short for its chunk count".to_owned(),
    ))?;
    let count = u64::read_from_bytes(&payload[count_at..]).expect("8 bytes");
    let table_len = usize::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(size_of::<CellChunkRecord>()))
        .filter(|&l| count > 0 && l <= count_at)
        .ok_or((
            count_at,
            format!("{count} cell chunks do not fit the block"),
        ))?;
    let data_len = count_at - table_len;
    let table = <[CellChunkRecord]>::ref_from_bytes(&payload[data_len..count_at])
        .expect("the table's length is a multiple of its records");
    let (mut bytes, mut cells) = (0u64, 0u64);
    let mut before: Option<&CellChunkRecord> = None;
    for (i, r) in table.iter().enumerate() {
        let at = data_len + i * size_of::<CellChunkRecord>();
        let n = u64::from(r.n_cells.get());
        let end_byte = r.end_byte.get();
        if n == 0
            || n > CELLS_PER_CHUNK as u64
            || r.first_index.get() > r.last_index.get()
            || end_byte <= bytes
        {
            return Err((
                at,
                format!("cell chunk {i}'s cells or bytes do not follow the last"),
            ));
        }
        if let Some(b) = before {
            let ordered = (b.field.get(), b.level, b.last_index.get())
                < (r.field.get(), r.level, r.first_index.get());
            if !ordered {
                return Err((at, format!("cell chunk {i} is out of order")));
            }
        }
        before = Some(r);
        (bytes, cells) = (end_byte, cells + n);
    }
    if bytes != data_len as u64 || cells != n_items as u64 {
        return Err((
            count_at,
            format!(
                "the cell chunks hold {cells} cells in {bytes} bytes, not {n_items} in {data_len}"
            ),
        ));
    }
    Ok((&payload[..data_len], table))
}

/// A packed Cells payload's chunk bytes and table, as [`split`] answers them, without its
/// checks: for a block whose first read ran them (a read's hot path, where checking the
/// whole table again cost an eighth of a fold's time).
pub(crate) fn split_checked(payload: &[u8]) -> (&[u8], &[CellChunkRecord]) {
    let count_at = payload.len() - 8;
    let count = u64::read_from_bytes(&payload[count_at..]).expect("8 bytes");
    let data_len =
        count_at - crate::packed::table_index(U64::new(count)) * size_of::<CellChunkRecord>();
    let table = <[CellChunkRecord]>::ref_from_bytes(&payload[data_len..count_at])
        .expect("the table's length is a multiple of its records");
    (&payload[..data_len], table)
}

/// Decodes chunk `chunk` of a split payload into its cells' records (as the `u64` words of
/// their bytes, the way the chunk cache keeps numbers), from its columns or, for a chunk of
/// records ([`CHUNK_OF_RECORDS`]), copied, checking that they are what its record says: as many
/// cells of its field, level and kind, first and last index, ascending, and the rows they fold. What each
/// record promises on its own is for the caller to check, as for a plain block.
pub(crate) fn decode(
    data: &[u8],
    table: &[CellChunkRecord],
    chunk: usize,
) -> Result<Vec<U64>, Fault> {
    let record = &table[chunk];
    let start = chunk
        .checked_sub(1)
        .map_or(0, |c| crate::packed::table_index(table[c].end_byte));
    let end = crate::packed::table_index(record.end_byte);
    let bytes = &data[start..end];
    let bad = |what: String| (start, format!("cell chunk {chunk}: {what}"));
    let n = record.n_cells.get() as usize;
    let words = if record.kind & CHUNK_OF_RECORDS == 0 {
        decode_columns(bytes, record, &bad)?
    } else {
        // The cells' records as a plain block holds them, each of the chunk's (field, level,
        // kind).
        if bytes.len() != n * size_of::<CellRecord>() {
            return Err(bad(format!("{} bytes for {n} cells' records", bytes.len())));
        }
        let mut words = vec![U64::ZERO; n * size_of::<CellRecord>() / 8];
        words.as_mut_bytes().copy_from_slice(bytes);
        let kind = record.kind & !CHUNK_OF_RECORDS;
        let ours =
            |r: &CellRecord| (r.field, r.level, r.kind) == (record.field, record.level, kind);
        if !records(&words).iter().all(ours) {
            return Err(bad("a cell of another field, level or kind".into()));
        }
        words
    };
    let records = self::records(&words);
    let index = |r: &CellRecord| r.index.get();
    let rows = records
        .iter()
        .fold(0u64, |rows, r| rows.saturating_add(r.count.get()));
    if records.first().map(index) != Some(record.first_index.get())
        || records.last().map(index) != Some(record.last_index.get())
        || !records.is_sorted_by_key(index)
        || rows != record.rows.get()
    {
        return Err(bad("its cells are not those its record says".into()));
    }
    Ok(words)
}

/// A packed chunk's twelve columns decoded into its cells' records (as words).
fn decode_columns(
    bytes: &[u8],
    record: &CellChunkRecord,
    bad: &dyn Fn(String) -> Fault,
) -> Result<Vec<U64>, Fault> {
    let n = record.n_cells.get() as usize;
    let Some((lengths, mut rest)) = bytes.split_at_checked(COLUMNS * 4) else {
        return Err(bad("too short for its column lengths".into()));
    };
    let mut column = |i: usize| -> Result<&[u8], Fault> {
        let len = u32::from_le_bytes(lengths[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
        let (this, after) = rest
            .split_at_checked(len as usize)
            .ok_or_else(|| bad(format!("column {i} reaches past the chunk")))?;
        rest = after;
        Ok(this)
    };
    let u64s = |bytes: &[u8]| crate::packed::decode::<u64>(bytes, n).map_err(&bad);
    let index = u64s(column(0)?)?;
    let first_at = u64s(column(1)?)?;
    let [last_off, min_off, max_off] = [u64s(column(2)?)?, u64s(column(3)?)?, u64s(column(4)?)?];
    let value = |bytes: &[u8]| -> Result<Vec<[u8; 8]>, Fault> {
        Ok(match record.kind {
            1 => u64s(bytes)?.into_iter().map(u64::to_le_bytes).collect(),
            2 => crate::packed::decode::<i64>(bytes, n)
                .map_err(&bad)?
                .into_iter()
                .map(i64::to_le_bytes)
                .collect(),
            _ => crate::packed::decode::<f64>(bytes, n)
                .map_err(&bad)?
                .into_iter()
                .map(f64::to_le_bytes)
                .collect(),
        })
    };
    let [first, last, min, max] = [
        value(column(5)?)?,
        value(column(6)?)?,
        value(column(7)?)?,
        value(column(8)?)?,
    ];
    let count = u64s(column(9)?)?;
    let f64s = |bytes: &[u8]| crate::packed::decode::<f64>(bytes, n).map_err(&bad);
    let sum = f64s(column(10)?)?;
    let sum_sq = f64s(column(11)?)?;
    if !rest.is_empty() {
        return Err(bad(format!("{} bytes after its columns", rest.len())));
    }
    let mut words = vec![U64::ZERO; n * size_of::<CellRecord>() / 8];
    let records =
        <[CellRecord]>::mut_from_bytes(words.as_mut_bytes()).expect("a cell record is 13 words");
    for (i, out) in records.iter_mut().enumerate() {
        let placed = |off: u64, value: [u8; 8]| {
            first_at[i]
                .checked_add(off)
                .map(|axis| PointRecord {
                    axis: U64::new(axis),
                    value,
                })
                .ok_or_else(|| bad(format!("cell {i}'s point lies past the axis's end")))
        };
        *out = CellRecord {
            field: record.field,
            level: record.level,
            kind: record.kind,
            reserved: [0; 4],
            index: U64::new(index[i]),
            first: PointRecord {
                axis: U64::new(first_at[i]),
                value: first[i],
            },
            last: placed(last_off[i], last[i])?,
            min: placed(min_off[i], min[i])?,
            max: placed(max_off[i], max[i])?,
            count: U64::new(count[i]),
            sum: F64::new(sum[i]),
            sum_sq: F64::new(sum_sq[i]),
        };
    }
    Ok(words)
}

/// The records a decoded chunk's words hold.
pub(crate) fn records(words: &[U64]) -> &[CellRecord] {
    <[CellRecord]>::ref_from_bytes(words.as_bytes()).expect("a decoded chunk holds whole records")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use zerocopy::little_endian::U16;

    use super::*;

    /// Records as a fold writes them: sorted by (field, level, index), an index repeated for a
    /// chain, points placed at or after `first`, values of any bits (pco is lossless).
    fn records() -> impl Strategy<Value = Vec<CellRecord>> {
        let cell = (
            0u64..3,
            0u64..1 << 20,
            [0u64..1 << 16, 0u64..1 << 16, 0u64..1 << 16],
            [any::<u64>(); 4],
            1u64..1000,
            [any::<u64>(); 2],
        );
        (
            1u8..=3,
            prop::collection::vec((0u16..3, 0u8..4, cell), 1..4000),
        )
            .prop_map(|(kind, mut cells)| {
                cells.sort_by_key(|c| (c.0, c.1));
                let mut index = 0u64;
                let mut before = None;
                cells
                    .into_iter()
                    .map(
                        |(field, level, (step, first_at, offs, values, count, sums))| {
                            if before != Some((field, level)) {
                                index = 0;
                            }
                            before = Some((field, level));
                            index += step;
                            let point = |off: u64, value: u64| PointRecord {
                                axis: U64::new(first_at + off),
                                value: value.to_le_bytes(),
                            };
                            CellRecord {
                                field: U16::new(field),
                                level,
                                kind,
                                reserved: [0; 4],
                                index: U64::new(index),
                                first: point(0, values[0]),
                                last: point(offs[0], values[1]),
                                min: point(offs[1], values[2]),
                                max: point(offs[2], values[3]),
                                count: U64::new(count),
                                sum: F64::new(f64::from_bits(sums[0])),
                                sum_sq: F64::new(f64::from_bits(sums[1])),
                            }
                        },
                    )
                    .collect()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Packed and decoded chunk by chunk, the records come back byte for byte, each chunk
        /// of one (field, level), no chain split between two.
        #[test]
        fn packed_cells_decode_to_the_records_packed(records in records()) {
            let payload = pack(&records).expect("placed points pack");
            let (data, table) = split(&payload, records.len()).expect("a table the packer wrote");
            let (unchecked_data, unchecked_table) = split_checked(&payload);
            prop_assert_eq!((unchecked_data, unchecked_table.as_bytes()), (data, table.as_bytes()));
            let mut back: Vec<u8> = Vec::new();
            for chunk in 0..table.len() {
                let words = decode(data, table, chunk).expect("a chunk the packer wrote");
                let decoded = super::records(&words);
                prop_assert!(decoded.len() <= CELLS_PER_CHUNK);
                prop_assert!(decoded.iter().all(|r| (r.field, r.level) == (decoded[0].field, decoded[0].level)));
                back.extend_from_slice(decoded.as_bytes());
            }
            prop_assert_eq!(back, records.as_bytes());
        }

        /// Any byte of a packed payload changed: the table or a chunk is refused, or the chunk
        /// still decodes to records it promises (what the reader then checks one by one) —
        /// never a panic.
        #[test]
        fn a_changed_byte_never_panics(records in records(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut payload = pack(&records).expect("placed points pack");
            let i = at.index(payload.len());
            payload[i] ^= 1 << bit;
            if let Ok((data, table)) = split(&payload, records.len()) {
                for chunk in 0..table.len() {
                    let _ = decode(data, table, chunk);
                }
            }
        }
    }

    /// A chunk of a few cells, or one whose `min` lies before its `first` (not what a fold
    /// makes), holds its records; a run of a smooth level's cells packs into columns; both
    /// decode to the records given. A chunk of records whose cell names another level than
    /// the chunk's is refused.
    #[test]
    fn few_or_unplaced_cells_are_kept_as_records() {
        let cell = |level: u8, index: u64, first: u64, min: u64| CellRecord {
            field: U16::new(0),
            level,
            kind: 3,
            reserved: [0; 4],
            index: U64::new(index),
            first: PointRecord {
                axis: U64::new(first),
                value: (index as f64).to_le_bytes(),
            },
            last: PointRecord {
                axis: U64::new(first + 2),
                value: 1.0f64.to_le_bytes(),
            },
            min: PointRecord {
                axis: U64::new(min),
                value: 0.5f64.to_le_bytes(),
            },
            max: PointRecord {
                axis: U64::new(first + 1),
                value: 2.0f64.to_le_bytes(),
            },
            count: U64::new(3),
            sum: F64::new(3.5),
            sum_sq: F64::new(5.25),
        };
        // Level 0: 200 smooth cells; level 1: a handful; level 2: enough, but one unplaced.
        let mut records: Vec<CellRecord> = (0..200).map(|i| cell(0, i, 10 * i, 10 * i)).collect();
        records.extend((0..RECORD_CHUNK_CELLS as u64 - 1).map(|i| cell(1, i, 20 * i, 20 * i)));
        records.extend((0..40).map(|i| cell(2, i, 40 * i, 40 * i + u64::from(i != 7))));
        records[200 + RECORD_CHUNK_CELLS - 1 + 7].min.axis = U64::new(40 * 7 - 1);
        let payload = pack(&records).expect("no chain to split");
        let (data, table) = split(&payload, records.len()).expect("a table the packer wrote");
        let of_records: Vec<(u8, bool)> = table
            .iter()
            .map(|r| (r.level, r.kind & CHUNK_OF_RECORDS != 0))
            .collect();
        assert_eq!(of_records, [(0, false), (1, true), (2, true)]);
        let mut back = Vec::new();
        for chunk in 0..table.len() {
            back.extend_from_slice(super::records(&decode(data, table, chunk).unwrap()).as_bytes());
        }
        assert_eq!(back, records.as_bytes());
        // A records chunk's cell of another level than its record's.
        let mut bent = payload.clone();
        let level_at = usize::try_from(table[0].end_byte.get()).unwrap() + 2;
        bent[level_at] = 0;
        let (data, table) = split(&bent, records.len()).unwrap();
        assert!(decode(data, table, 1).is_err());
    }

    /// A cell whose `min` lies before its `first` is not what a fold makes: it is not packed
    /// into columns (its chunk holds the records).
    #[test]
    fn a_point_before_first_is_not_packed() {
        let point = |axis: u64| PointRecord {
            axis: U64::new(axis),
            value: 1.0f64.to_le_bytes(),
        };
        let record = CellRecord {
            field: U16::new(0),
            level: 0,
            kind: 3,
            reserved: [0; 4],
            index: U64::new(5),
            first: point(10),
            last: point(12),
            min: point(9),
            max: point(11),
            count: U64::new(3),
            sum: F64::new(3.0),
            sum_sq: F64::new(3.0),
        };
        assert!(pack_chunk(&[record]).is_none());
    }
}
