//! Packed blocks (format version 5 on): an axis or numeric column as pco chunks of at most
//! [`PACK_ROWS`] rows, each decoded on its own.
//!
//! ```text
//! payload = chunk bytes ... | ChunkRecord × n | n as u64 LE
//! ```
//!
//! The writer streams a packed block as it streams a plain one (a chunk compressed, put, then
//! the next), so the chunk table comes last and the reader finds it from the payload's end.
//! The block's crc covers every byte before any decoder sees one; what the table promises is
//! checked with the crc, once per reader, and what a chunk's bytes promise (as many values as
//! its rows, the first and last the table says, ordered for the axis, finite for a measured
//! `f64`) is checked each time the chunk is decoded. A chunk that breaks any of it is
//! `Unreadable` naming the file and the chunk's offset: pco's own errors on bytes it cannot
//! parse end the same way. A chunk decodes into a buffer of exactly its rows, never of a size
//! its bytes claim.

use std::ops::Range;
use std::sync::Arc;

use pco::ChunkConfig;
use pco::standalone::{simple_compress, simple_decompress_into};
use zerocopy::little_endian::{F64, I64, U64};
use zerocopy::{FromBytes, IntoBytes};

use crate::error::SegmentError;
use crate::format::{ChunkRecord, PACK_LEVEL, PACK_ROWS};

/// The numbers of one block the writer packs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Numbers<'a> {
    U64(&'a [u64]),
    I64(&'a [i64]),
    F64(&'a [f64]),
}

impl Numbers<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Numbers::U64(v) => v.len(),
            Numbers::I64(v) => v.len(),
            Numbers::F64(v) => v.len(),
        }
    }

    /// Value `row`'s 8 little-endian bytes, as a u64.
    fn bits(&self, row: usize) -> u64 {
        match self {
            Numbers::U64(v) => v[row],
            Numbers::I64(v) => u64::from_le_bytes(v[row].to_le_bytes()),
            Numbers::F64(v) => v[row].to_bits(),
        }
    }

    /// Rows `rows` as one pco chunk (a standalone pco file of one chunk).
    pub(crate) fn compress(&self, rows: Range<usize>) -> Vec<u8> {
        let config = ChunkConfig::default().with_compression_level(PACK_LEVEL);
        let packed = match self {
            Numbers::U64(v) => simple_compress(&v[rows], &config),
            Numbers::I64(v) => simple_compress(&v[rows], &config),
            Numbers::F64(v) => simple_compress(&v[rows], &config),
        };
        packed.expect("pco compresses any numbers at a valid level")
    }

    /// The table record of the chunk of `rows` whose bytes end at `end_byte`.
    pub(crate) fn record(&self, rows: Range<usize>, end_byte: usize) -> ChunkRecord {
        ChunkRecord {
            end_row: U64::new(rows.end as u64),
            end_byte: U64::new(end_byte as u64),
            first: U64::new(self.bits(rows.start)),
            last: U64::new(self.bits(rows.end - 1)),
        }
    }
}

/// A packed payload's chunk bytes and table.
pub(crate) type Split<'a> = (&'a [u8], &'a [ChunkRecord]);

/// A table value as an index: [`split`] checked it lies within the block's rows or bytes.
pub(crate) fn table_index(value: U64) -> usize {
    usize::try_from(value.get()).expect("checked against the block's length")
}

/// Splits a packed payload into its chunk bytes and table, checking what the table promises:
/// at least one chunk, rows and bytes strictly increasing up to `n_rows` and the bytes' end, and
/// for an `ordered` block (the axis) each chunk's first value at or below its last, which is at
/// or below the next chunk's first, from `range[0]` to `range[1]`.
pub(crate) fn split(
    payload: &[u8],
    n_rows: usize,
    ordered: Option<[u64; 2]>,
) -> Result<Split<'_>, (usize, String)> {
    let count_at = payload
        .len()
        .checked_sub(8)
        .ok_or((0, "a packed block too short for its chunk count".to_owned()))?;
    let count = u64::read_from_bytes(&payload[count_at..]).expect("8 bytes");
    let table_len = usize::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(size_of::<ChunkRecord>()))
        .filter(|&l| count > 0 && l <= count_at)
        .ok_or((count_at, format!("{count} chunks do not fit the block")))?;
    let data_len = count_at - table_len;
    let table = <[ChunkRecord]>::ref_from_bytes(&payload[data_len..count_at])
        .expect("the table's length is a multiple of its records");
    let (mut rows, mut bytes, mut value) = (0u64, 0u64, ordered.map(|[lo, _]| lo));
    for (i, record) in table.iter().enumerate() {
        let at = data_len + i * size_of::<ChunkRecord>();
        let (end_row, end_byte) = (record.end_row.get(), record.end_byte.get());
        if end_row <= rows || end_row - rows > PACK_ROWS as u64 || end_byte <= bytes {
            return Err((
                at,
                format!("chunk {i}'s rows or bytes do not follow the last"),
            ));
        }
        if let Some(before) = value {
            let (first, last) = (record.first.get(), record.last.get());
            if first < before || last < first {
                return Err((at, format!("chunk {i}'s axis goes backwards")));
            }
            value = Some(last);
        }
        (rows, bytes) = (end_row, end_byte);
    }
    if rows != n_rows as u64 || bytes != data_len as u64 {
        return Err((
            count_at,
            format!("the chunks hold {rows} rows in {bytes} bytes, not {n_rows} in {data_len}"),
        ));
    }
    let last = table.last().expect("at least one chunk").last.get();
    let first = table[0].first.get();
    if let Some([lo, hi]) = ordered
        && (first != lo || last != hi)
    {
        return Err((
            data_len,
            format!("the axis runs from {first} to {last}, not from {lo} to {hi}"),
        ));
    }
    Ok((&payload[..data_len], table))
}

/// Where decoded chunks are kept between reads (the engine's bounded cache): a read that comes
/// back to a chunk — a fold's or a survey's edge, a search of the axis — copies it out instead
/// of decoding it again. What it keeps was checked when it was decoded.
pub trait ChunkCache: Send + Sync + std::fmt::Debug {
    /// The chunk `key`, if kept.
    fn get(&self, key: ChunkKey) -> Option<Arc<Decoded>>;
    /// Offers the chunk `key`, just decoded and checked; the cache may keep it, evicting others.
    fn put(&self, key: ChunkKey, decoded: &Arc<Decoded>);
}

/// Names one decoded chunk: the file (a number the cache's owner gives each file it opens,
/// never reused for other bytes), the block's payload offset in it, and the chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkKey {
    /// The file.
    pub file: u64,
    /// The block's payload offset.
    pub block: u64,
    /// The chunk's index in the block.
    pub chunk: u64,
}

/// A packed column of a verified block: its chunks, decoded one at a time on demand.
#[derive(Clone, Copy, Debug)]
pub struct Packed<'a> {
    pub(crate) path: &'a str,
    /// The payload's offset in the file, for errors.
    pub(crate) offset: usize,
    /// The kind code of the numbers: 1 u64 (the axis too), 2 i64, 3 f64.
    pub(crate) kind: u8,
    /// The axis: each chunk non-decreasing.
    pub(crate) ordered: bool,
    /// A measured `f64`: each value finite.
    pub(crate) finite: bool,
    pub(crate) data: &'a [u8],
    pub(crate) table: &'a [ChunkRecord],
    /// Where decoded chunks are kept, and the file's number there.
    pub(crate) cache: Option<(&'a dyn ChunkCache, u64)>,
}

/// Numbers decoded from a packed block (or copied from a plain one), as the file's
/// little-endian types, so they read as a plain column does.
#[derive(Clone, Debug, PartialEq)]
pub enum Decoded {
    /// `u64` values.
    U64(Vec<U64>),
    /// `i64` values.
    I64(Vec<I64>),
    /// `f64` values.
    F64(Vec<F64>),
}

impl Decoded {
    /// Values held.
    pub fn len(&self) -> usize {
        match self {
            Decoded::U64(v) => v.len(),
            Decoded::I64(v) => v.len(),
            Decoded::F64(v) => v.len(),
        }
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values as a plain column.
    pub fn column(&self) -> crate::Column<'_> {
        match self {
            Decoded::U64(v) => crate::Column::U64(v),
            Decoded::I64(v) => crate::Column::I64(v),
            Decoded::F64(v) => crate::Column::F64(v),
        }
    }

    /// The kind code of its numbers (1 u64, 2 i64, 3 f64).
    pub fn kind_code(&self) -> u8 {
        match self {
            Decoded::U64(_) => 1,
            Decoded::I64(_) => 2,
            Decoded::F64(_) => 3,
        }
    }

    /// No values yet, of kind code `kind` (1 u64, 2 i64, anything else f64), room for
    /// `capacity`.
    pub fn with_capacity(kind: u8, capacity: usize) -> Decoded {
        Decoded::empty(kind, capacity)
    }

    /// Appends `other`'s values of rows `rows`.
    ///
    /// # Panics
    /// If `other` holds another kind of number, or `rows` reaches past its end.
    pub fn append_rows(&mut self, other: &Decoded, rows: Range<usize>) {
        self.extend(other, rows);
    }

    /// Appends every value of `other`.
    ///
    /// # Panics
    /// If `other` holds another kind of number.
    pub fn append(&mut self, other: &Decoded) {
        self.extend(other, 0..other.len());
    }

    fn empty(kind: u8, capacity: usize) -> Decoded {
        match kind {
            1 => Decoded::U64(Vec::with_capacity(capacity)),
            2 => Decoded::I64(Vec::with_capacity(capacity)),
            _ => Decoded::F64(Vec::with_capacity(capacity)),
        }
    }

    fn extend(&mut self, other: &Decoded, rows: Range<usize>) {
        match (self, other) {
            (Decoded::U64(a), Decoded::U64(b)) => a.extend_from_slice(&b[rows]),
            (Decoded::I64(a), Decoded::I64(b)) => a.extend_from_slice(&b[rows]),
            (Decoded::F64(a), Decoded::F64(b)) => a.extend_from_slice(&b[rows]),
            _ => unreachable!("one block decodes to one kind"),
        }
    }

    pub(crate) fn bits(&self, row: usize) -> u64 {
        match self {
            Decoded::U64(v) => v[row].get(),
            Decoded::I64(v) => u64::from_le_bytes(v[row].get().to_le_bytes()),
            Decoded::F64(v) => v[row].get().to_bits(),
        }
    }
}

impl<'a> Packed<'a> {
    /// Rows in the block.
    pub fn len(&self) -> usize {
        self.table.last().map_or(0, |r| table_index(r.end_row))
    }

    /// Whether the block holds no row (a checked block never is).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Chunks in the block.
    pub fn chunks(&self) -> usize {
        self.table.len()
    }

    /// The rows of chunk `chunk`.
    ///
    /// # Panics
    /// If there is no such chunk.
    pub fn chunk_rows(&self, chunk: usize) -> Range<usize> {
        let start = chunk
            .checked_sub(1)
            .map_or(0, |c| table_index(self.table[c].end_row));
        start..table_index(self.table[chunk].end_row)
    }

    /// The chunk holding row `row` (the last chunk for a row past the end).
    pub fn chunk_of(&self, row: usize) -> usize {
        self.table
            .partition_point(|r| table_index(r.end_row) <= row)
            .min(self.table.len() - 1)
    }

    /// The first chunk whose last value is at or above `value` (for the axis: where a search
    /// for `value` goes on), or `chunks()` if none is.
    pub fn chunk_reaching(&self, value: u64) -> usize {
        self.table.partition_point(|r| r.last.get() < value)
    }

    /// The pco bytes of chunk `chunk`, as the file holds them (a standalone pco file of one
    /// chunk): what a merge moves into its output without decoding.
    ///
    /// # Panics
    /// If there is no such chunk.
    pub fn chunk_pco_bytes(&self, chunk: usize) -> &'a [u8] {
        let start = chunk
            .checked_sub(1)
            .map_or(0, |c| table_index(self.table[c].end_byte));
        &self.data[start..table_index(self.table[chunk].end_byte)]
    }

    /// Decodes chunk `chunk`.
    ///
    /// # Errors
    /// `Malformed`, naming the file and the chunk's offset, if its bytes are not pco, or hold
    /// other than its rows, or break what the block promises of its values.
    ///
    /// # Panics
    /// If there is no such chunk.
    pub fn decode_chunk(&self, chunk: usize) -> Result<Decoded, SegmentError> {
        Ok(Arc::unwrap_or_clone(self.chunk(chunk)?))
    }

    /// Chunk `chunk` decoded, shared: from the file's chunk cache if it keeps it (no copy),
    /// else decoded and checked ([`Packed::decode_chunk`]) and offered to the cache.
    ///
    /// # Errors
    /// As [`Packed::decode_chunk`].
    ///
    /// # Panics
    /// If there is no such chunk.
    pub fn chunk(&self, chunk: usize) -> Result<Arc<Decoded>, SegmentError> {
        let key = |file| ChunkKey {
            file,
            block: self.offset as u64,
            chunk: chunk as u64,
        };
        if let Some((cache, file)) = self.cache
            && let Some(decoded) = cache.get(key(file))
        {
            return Ok(decoded);
        }
        let decoded = Arc::new(self.decode_chunk_afresh(chunk, None)?);
        if let Some((cache, file)) = self.cache {
            cache.put(key(file), &decoded);
        }
        Ok(decoded)
    }

    /// This block read without its file's chunk cache: for a read that streams through every
    /// chunk once (a query), which would only push out what other reads come back to.
    #[must_use]
    pub fn uncached(self) -> Self {
        Packed {
            cache: None,
            ..self
        }
    }

    /// Decodes chunk `chunk` from its bytes and checks it ([`Packed::decode_chunk`]), into
    /// `spare`'s memory if it is given and of this block's kind.
    fn decode_chunk_afresh(
        &self,
        chunk: usize,
        spare: Option<Decoded>,
    ) -> Result<Decoded, SegmentError> {
        let start = chunk
            .checked_sub(1)
            .map_or(0, |c| table_index(self.table[c].end_byte));
        let end = table_index(self.table[chunk].end_byte);
        let rows = self.chunk_rows(chunk).len();
        let bytes = &self.data[start..end];
        let bad =
            |what: String| SegmentError::malformed(self.path, (self.offset + start) as u64, what);
        let decoded = match (self.kind, spare) {
            (1, Some(Decoded::U64(spare))) => {
                Decoded::U64(decode_le(bytes, rows, spare, U64::new).map_err(bad)?)
            }
            (1, _) => Decoded::U64(decode_le(bytes, rows, Vec::new(), U64::new).map_err(bad)?),
            (2, Some(Decoded::I64(spare))) => {
                Decoded::I64(decode_le(bytes, rows, spare, I64::new).map_err(bad)?)
            }
            (2, _) => Decoded::I64(decode_le(bytes, rows, Vec::new(), I64::new).map_err(bad)?),
            (_, Some(Decoded::F64(spare))) => {
                Decoded::F64(decode_le(bytes, rows, spare, F64::new).map_err(bad)?)
            }
            _ => Decoded::F64(decode_le(bytes, rows, Vec::new(), F64::new).map_err(bad)?),
        };
        let record = &self.table[chunk];
        if decoded.bits(0) != record.first.get() || decoded.bits(rows - 1) != record.last.get() {
            return Err(bad(format!(
                "chunk {chunk}'s values are not those its record says"
            )));
        }
        // Each check a pass that does not stop early, which the compiler vectorises; where it
        // fails, a second pass finds the row.
        match &decoded {
            Decoded::U64(v) if self.ordered => {
                let ordered = non_decreasing(v);
                if !ordered {
                    let i = v.windows(2).position(|w| w[1].get() < w[0].get());
                    return Err(bad(format!(
                        "the axis goes backwards at row {} of chunk {chunk}",
                        i.unwrap_or(0)
                    )));
                }
            }
            Decoded::F64(v) if self.finite => {
                let finite = v.iter().fold(true, |ok, x| ok & x.get().is_finite());
                if !finite {
                    let i = v.iter().position(|x| !x.get().is_finite());
                    return Err(bad(format!(
                        "a measured f64 value is not finite at row {} of chunk {chunk}",
                        i.unwrap_or(0)
                    )));
                }
            }
            _ => {}
        }
        Ok(decoded)
    }

    /// Decodes rows `rows`, a chunk at a time: only the chunks they touch are decoded, and the
    /// answer holds exactly those rows.
    ///
    /// # Errors
    /// As [`Packed::decode_chunk`], for any chunk the rows touch.
    ///
    /// # Panics
    /// If `rows` reaches past the block's end.
    pub fn decode(&self, rows: Range<usize>) -> Result<Decoded, SegmentError> {
        self.decode_reusing(rows, None)
    }

    /// [`Packed::decode`], reusing `spare`'s memory (a buffer a read has finished with) when
    /// the rows are one whole chunk and the block is read without the cache: a read that
    /// streams through the chunks one at a time writes each into the memory the last one
    /// left, warm in the core's cache, instead of memory freshly zeroed (glibc gives a freed
    /// chunk's pages back and faults them in again: in a scratch loop decoding and summing an
    /// axis and a value column, 9.8 ns a row into fresh memory, 7.5 into reused).
    ///
    /// # Errors
    /// As [`Packed::decode`].
    ///
    /// # Panics
    /// If `rows` reaches past the block's end.
    pub fn decode_reusing(
        &self,
        rows: Range<usize>,
        spare: Option<Decoded>,
    ) -> Result<Decoded, SegmentError> {
        assert!(rows.end <= self.len(), "rows past the block's end");
        if rows.is_empty() {
            return Ok(Decoded::empty(self.kind, 0));
        }
        let first = self.chunk_of(rows.start);
        if self.chunk_rows(first) == rows {
            // One whole chunk (what a query's runs ask, a chunk at a time): as it decodes.
            if self.cache.is_none() {
                return self.decode_chunk_afresh(first, spare);
            }
            return self.decode_chunk(first);
        }
        let mut out = Decoded::empty(self.kind, rows.len());
        for chunk in self.chunk_of(rows.start)..=self.chunk_of(rows.end - 1) {
            let span = self.chunk_rows(chunk);
            let decoded = self.chunk(chunk)?;
            let from = rows.start.max(span.start) - span.start;
            let to = rows.end.min(span.end) - span.start;
            out.extend(&decoded, from..to);
        }
        Ok(out)
    }
}

/// Whether `values` never go down. The test `x <= y` is the borrow of `y - x` not being set,
/// computed with bit operations and a subtraction (the top bit of `(!y & x) | (!(y ^ x) &
/// (y - x))`) and gathered by OR, which the compiler vectorises with the baseline x86-64 SIMD;
/// the plain comparison has no 64-bit unsigned SIMD form there and ran a row at a time, 6% of
/// a packed query.
fn non_decreasing(values: &[U64]) -> bool {
    let Some(rest) = values.get(1..) else {
        return true;
    };
    let borrows = values.iter().zip(rest).fold(0u64, |acc, (x, y)| {
        let (x, y) = (x.get(), y.get());
        acc | (!y & x) | (!(y ^ x) & y.wrapping_sub(x))
    });
    borrows >> 63 == 0
}

/// One pco chunk of `rows` values of `T` straight into a vector of the file's little-endian
/// type `L` (what a plain column is read as), of exactly `rows`: on a little-endian host,
/// decoded in place where the vector's memory is aligned for `T` (as allocations are in
/// practice), so the values are written once; else decoded aside and converted with `to_le`.
fn decode_le<T, L>(
    bytes: &[u8],
    rows: usize,
    mut out: Vec<L>,
    to_le: impl Fn(T) -> L,
) -> Result<Vec<L>, String>
where
    T: pco::data_types::Number + Default + FromBytes + IntoBytes + zerocopy::KnownLayout,
    L: zerocopy::FromZeros + IntoBytes + FromBytes + Copy,
{
    // The file's values are little-endian: a big-endian host's native ones are not its bytes.
    if cfg!(target_endian = "big") {
        return Ok(decode::<T>(bytes, rows)?.into_iter().map(to_le).collect());
    }
    // What `out` held is overwritten; only rows beyond its length are zeroed first.
    out.resize(rows, L::new_zeroed());
    let Ok(native) = <[T]>::mut_from_bytes(out.as_mut_bytes()) else {
        return Ok(decode::<T>(bytes, rows)?.into_iter().map(to_le).collect());
    };
    decode_into(bytes, native)?;
    Ok(out)
}

/// One pco chunk of `rows` values of `T`, into a buffer of exactly `rows`.
pub(crate) fn decode<T: pco::data_types::Number + Default>(
    bytes: &[u8],
    rows: usize,
) -> Result<Vec<T>, String> {
    let mut out = vec![T::default(); rows];
    decode_into(bytes, &mut out)?;
    Ok(out)
}

/// One pco chunk into `out`, which it must fill exactly.
fn decode_into<T: pco::data_types::Number>(bytes: &[u8], out: &mut [T]) -> Result<(), String> {
    let rows = out.len();
    let progress =
        simple_decompress_into(bytes, out).map_err(|e| format!("a packed chunk: {e}"))?;
    if progress.n_processed != rows || !progress.finished {
        return Err(format!(
            "a packed chunk of {rows} rows holds {}{}",
            progress.n_processed,
            if progress.finished { "" } else { " and more" }
        ));
    }
    Ok(())
}

/// Writes `IntoBytes` records; a helper so the writer's packed table goes out as it is laid out.
pub(crate) fn table_bytes(table: &[ChunkRecord]) -> &[u8] {
    table.as_bytes()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use zerocopy::little_endian::U64;

    use super::non_decreasing;

    /// Values spread over the whole u64 range, so the top bit and the borrows at the range's
    /// ends are reached, and runs of equal values.
    fn values() -> impl Strategy<Value = Vec<u64>> {
        prop::collection::vec(
            prop_oneof![
                any::<u64>(),
                0u64..4,
                (u64::MAX - 3)..=u64::MAX,
                Just(1u64 << 63),
                Just((1u64 << 63) - 1),
            ],
            0..40,
        )
    }

    proptest! {
        #[test]
        fn non_decreasing_is_the_pairwise_comparison(mut v in values(), sort in any::<bool>()) {
            if sort {
                v.sort_unstable();
            }
            let expected = v.windows(2).all(|w| w[0] <= w[1]);
            let le: Vec<U64> = v.iter().map(|&x| U64::new(x)).collect();
            prop_assert_eq!(non_decreasing(&le), expected);
        }
    }

    #[test]
    fn non_decreasing_sees_a_step_down_across_the_top_bit() {
        let le = |v: &[u64]| v.iter().map(|&x| U64::new(x)).collect::<Vec<_>>();
        assert!(!non_decreasing(&le(&[1 << 63, (1 << 63) - 1])));
        assert!(non_decreasing(&le(&[(1 << 63) - 1, 1 << 63])));
        assert!(!non_decreasing(&le(&[u64::MAX, 0])));
        assert!(non_decreasing(&le(&[0, 0, u64::MAX, u64::MAX])));
        assert!(!non_decreasing(&le(&[5, 5, 4])));
    }
}
