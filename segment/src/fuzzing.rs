//! Entry points shared by the fuzz targets (`fuzz/`) and the corpus replay test, so that both
//! drive exactly the same code. Each takes arbitrary bytes and must never panic; each asserts the
//! invariants that must hold whatever the bytes were.

use strata_index::{Catalog, LOG_HEADER_LEN, encode_frame, parse_log};

use crate::reader::{Column, SegmentReader};
use crate::runs::Sequence;

/// Every file of the fuzz corpus folder `dir`, sorted by name, with its bytes: what the replay
/// tests feed the targets' entry points on stable, so a finding once saved stays fixed.
///
/// # Panics
/// If the folder cannot be read or holds no file (a replay over nothing would prove nothing).
pub fn corpus(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, bytes)
        })
        .collect()
}

/// Parses `bytes` as a whole manifest log and replays its trusted prefix into a catalog.
///
/// # Panics
/// If an invariant of the codec breaks: the trusted prefix is longer than the input, or the
/// trusted records do not re-encode to exactly the trusted bytes (the encoding is canonical).
pub fn manifest(bytes: &[u8]) {
    let parsed = parse_log(bytes);
    let trusted = usize::try_from(parsed.trusted_len).expect("trusted length fits usize");
    assert!(trusted <= bytes.len(), "trusted prefix past the end");
    match parsed.fault {
        None => assert_eq!(trusted, bytes.len(), "no fault, yet bytes are left over"),
        // A fault either leaves bytes over, or is a missing header (an empty file has no bytes
        // left over and still is not a manifest).
        Some(_) => assert!(
            trusted < bytes.len() || trusted == 0,
            "a fault with nothing left over"
        ),
    }
    if trusted >= LOG_HEADER_LEN {
        let reencoded: Vec<u8> = parsed.records.iter().flat_map(encode_frame).collect();
        assert_eq!(
            reencoded,
            bytes[LOG_HEADER_LEN..trusted],
            "frames re-encode differently"
        );
    }
    let mut catalog = Catalog::new();
    for record in &parsed.records {
        let before = catalog.clone();
        if catalog.apply(record).is_err() {
            assert_eq!(catalog, before, "a refused record changed the catalog");
        }
    }
    let snapshot = catalog.snapshot();
    let mut rebuilt = Catalog::new();
    rebuilt
        .apply(&snapshot)
        .expect("a snapshot applies to an empty catalog");
    // The rebuilt catalog forgets the files wholly retired, and nothing else.
    assert_eq!(
        rebuilt.snapshot(),
        snapshot,
        "the snapshot does not rebuild the catalog's live state"
    );
    assert!(
        rebuilt.live_files().eq(catalog.live_files()),
        "the snapshot does not rebuild the live files"
    );
}

/// Opens `bytes` as a segment and reads everything it claims to hold; then does the same with
/// every checksum recomputed over the bytes as they are (see [`reseal`]), so that mutations get
/// past the checksums into the directory parse and the content checks behind them.
///
/// # Panics
/// If a read answers data that contradicts the directory (lengths that differ from the row
/// count, cells outside the asked range).
pub fn segment(bytes: &[u8]) {
    read_all(bytes);
    let mut resealed = bytes.to_vec();
    reseal(&mut resealed);
    read_all(&resealed);
}

/// Recomputes, in place, every checksum a segment carries — the header's, each block's the
/// directory locates, the directory's, the footer's digest and its own — wherever the bytes give
/// their positions. A fuzzer's mutation is otherwise stopped by the first checksum it breaks.
pub fn reseal(bytes: &mut [u8]) {
    use crate::format::{BLOCK_CRC_LEN, BlockRecord, DirHeader, Footer, Header, PartitionRecord};
    use zerocopy::FromBytes;

    let len = bytes.len();
    let (header_len, footer_len) = (size_of::<Header>(), size_of::<Footer>());
    if len < header_len + footer_len {
        return;
    }
    let crc = crc32c::crc32c(&bytes[..28]);
    bytes[28..32].copy_from_slice(&crc.to_le_bytes());
    let footer_at = len - footer_len;
    let Ok(footer) = Footer::read_from_bytes(&bytes[footer_at..]) else {
        return;
    };
    let dir_offset = usize::try_from(footer.dir_offset.get()).unwrap_or(usize::MAX);
    let dir_len = usize::try_from(footer.dir_len.get()).unwrap_or(usize::MAX);
    let dir_end = dir_offset.checked_add(dir_len);
    if let Some(dir_end) = dir_end.filter(|&e| {
        e.checked_add(BLOCK_CRC_LEN)
            .is_some_and(|crc_end| crc_end <= footer_at)
    }) {
        // Blocks first (their crcs lie outside the directory), then the directory itself.
        let directory = bytes[dir_offset..dir_end].to_vec();
        if let Ok((dir, rest)) = DirHeader::read_from_prefix(&directory) {
            let skip =
                (dir.n_partitions.get() as usize).saturating_mul(size_of::<PartitionRecord>());
            let records = rest.get(skip..).unwrap_or_default();
            for chunk in records
                .chunks_exact(size_of::<BlockRecord>())
                .take(dir.n_blocks.get() as usize)
            {
                let Ok(block) = BlockRecord::read_from_bytes(chunk) else {
                    break;
                };
                let start = usize::try_from(block.offset.get()).unwrap_or(usize::MAX);
                let end = start.checked_add(usize::try_from(block.len.get()).unwrap_or(usize::MAX));
                if let Some(end) = end.filter(|&e| {
                    e.checked_add(BLOCK_CRC_LEN)
                        .is_some_and(|crc_end| crc_end <= dir_offset)
                }) {
                    let crc = crc32c::crc32c(&bytes[start..end]);
                    bytes[end..end + BLOCK_CRC_LEN].copy_from_slice(&crc.to_le_bytes());
                }
            }
        }
        let crc = crc32c::crc32c(&bytes[dir_offset..dir_end]);
        bytes[dir_end..dir_end + BLOCK_CRC_LEN].copy_from_slice(&crc.to_le_bytes());
    }
    let digest = crc32c::crc32c(&bytes[..len - 8]);
    bytes[len - 8..len - 4].copy_from_slice(&digest.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[footer_at..footer_at + 28]);
    bytes[len - 4..].copy_from_slice(&crc.to_le_bytes());
}

/// The most rows a fuzzed packed block may claim: a table may claim far more than its bytes
/// hold, and a decode allocates each chunk's rows (at most `PACK_ROWS`), so past this the block
/// is not tried at all.
const PACKED_ROWS_MAX: u64 = 1 << 24;

/// A packed block's payload straight to its decoders, without a segment around it: byte 0
/// chooses what the block holds (`1 + b % 3` is the kind code: 1 `u64`, 2 `i64`, 3 `f64`; for
/// `u64`, bit 2 makes it an axis, which must be in order; for `f64`, bit 3 makes it a measured
/// field, which must be finite), the rest is the payload (chunks, table, count). The table is
/// split and checked as the reader checks it, then every chunk (up to a bound) is decoded.
///
/// # Panics
/// If a chunk that decodes breaks what the block promised: other than its rows, an axis out of
/// order or outside its range, a non-finite value of a measured field.
pub fn packed(bytes: &[u8]) {
    use zerocopy::FromBytes;
    use zerocopy::little_endian::U64;

    let Some((&selector, payload)) = bytes.split_first() else {
        return;
    };
    let kind = 1 + selector % 3;
    let ordered = kind == 1 && selector & 4 != 0;
    let finite = kind == 3 && selector & 8 != 0;
    // The rows the table claims, read from its last record, as a reader knows them from the
    // directory; and for an axis, the range the directory would promise.
    let record_at = |from_end: usize, field: usize| -> Option<u64> {
        let count_at = payload.len().checked_sub(8)?;
        // `from_end` is the chunk count the block claims: any u64, so checked.
        let at = count_at
            .checked_sub(from_end.checked_mul(32)?)?
            .checked_add(8 * field)?;
        payload
            .get(at..at + 8)
            .and_then(|b| U64::read_from_bytes(b).ok())
            .map(U64::get)
    };
    let Some(n_rows) = record_at(1, 0).filter(|&n| n <= PACKED_ROWS_MAX) else {
        return;
    };
    let n_chunks = payload
        .len()
        .checked_sub(8)
        .and_then(|at| U64::read_from_bytes(&payload[at..]).ok())
        .map_or(0, U64::get);
    let range = ordered.then(|| {
        let first = usize::try_from(n_chunks)
            .ok()
            .and_then(|n| record_at(n, 2))
            .unwrap_or(0);
        [first, record_at(1, 3).unwrap_or(0)]
    });
    let n_rows = usize::try_from(n_rows).expect("bounded above");
    let Ok((data, table)) = crate::packed::split(payload, n_rows, range) else {
        return;
    };
    let block = crate::Packed {
        path: "fuzz.seg",
        offset: 0,
        kind,
        ordered,
        finite,
        data,
        table,
        cache: None,
    };
    assert_eq!(block.len(), n_rows);
    check_packed(&block, range);
    for chunk in 0..block.chunks().min(PACKED_CHUNKS_MAX) {
        if let (true, Ok(crate::Decoded::F64(values))) = (finite, block.decode_chunk(chunk)) {
            assert!(values.iter().all(|v| v.get().is_finite()));
        }
    }
}

/// The seeds of the `packed` target: each kind of packed block as the writer writes it, with a
/// selector byte in front ([`packed`]).
pub fn packed_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use crate::packed::Numbers;

    let block = |selector: u8, numbers: Numbers<'_>| {
        let mut payload = vec![selector];
        let mut table = Vec::new();
        let mut end_byte = 0;
        for start in (0..numbers.len()).step_by(crate::format::PACK_ROWS) {
            let rows = start..(start + crate::format::PACK_ROWS).min(numbers.len());
            let bytes = numbers.compress(rows.clone());
            end_byte += bytes.len();
            payload.extend_from_slice(&bytes);
            table.push(numbers.record(rows, end_byte));
        }
        payload.extend_from_slice(crate::packed::table_bytes(&table));
        payload.extend_from_slice(&(table.len() as u64).to_le_bytes());
        payload
    };
    let axis: Vec<u64> = (0..300).map(|i| 1_000 * i + 17).collect();
    let long_axis: Vec<u64> = (0..10_050).map(|i| 3 * i + i % 2).collect();
    let deltas: Vec<i64> = (0..300).map(|i| (i % 7) - 3).collect();
    let values: Vec<f64> = (0..300)
        .map(|i| (f64::from(i) / 20.0).sin().mul_add(100.0, 0.0).round() / 100.0)
        .collect();
    vec![
        ("axis.bin", block(1 | 4, Numbers::U64(&axis))),
        (
            "axis-two-chunks.bin",
            block(1 | 4, Numbers::U64(&long_axis)),
        ),
        ("i64.bin", block(1, Numbers::I64(&deltas))),
        ("f64-measured.bin", block(2 | 8, Numbers::F64(&values))),
    ]
}

/// Rows a fuzzed sequence is walked through one by one; a run block may claim far more rows
/// than it has bytes, and past this the ends and the searches are checked instead.
const SEQUENCE_WALK_MAX: usize = 1 << 16;

/// What a sequence the reader handed out promises, whatever bytes it came from: it runs from
/// the directory's lo to its hi, in order (strictly for ordinals), and agrees with itself.
fn check_sequence(seq: &Sequence<'_>, [lo, hi]: [u64; 2], strict: bool) {
    let n = seq.len();
    assert_eq!((seq.first(), seq.last()), (Some(lo), Some(hi)));
    assert_eq!(seq.get(0), Some(lo));
    assert_eq!(seq.get(n - 1), Some(hi));
    assert_eq!(seq.get(n), None);
    assert_eq!(seq.lower_bound(lo), 0);
    assert_eq!(seq.upper_bound(hi), n);
    assert_eq!(seq.iter().len(), n);
    if n <= SEQUENCE_WALK_MAX {
        let mut previous: Option<u64> = None;
        for (row_idx, value) in seq.iter().enumerate() {
            assert!(
                previous.is_none_or(|p| if strict { p < value } else { p <= value }),
                "row {row_idx} out of order"
            );
            assert_eq!(seq.get(row_idx), Some(value));
            previous = Some(value);
        }
    }
}

/// Chunks of a fuzzed packed block decoded one by one (past this many, not decoded at all: a
/// table may claim far more chunks than the bytes hold).
const PACKED_CHUNKS_MAX: usize = 64;

/// What a packed block the reader handed out promises of each chunk that decodes: exactly its
/// rows, and for the axis in order inside `axis`.
fn check_packed(packed: &crate::Packed<'_>, axis: Option<[u64; 2]>) {
    for chunk in 0..packed.chunks().min(PACKED_CHUNKS_MAX) {
        let Ok(decoded) = packed.decode_chunk(chunk) else {
            continue;
        };
        assert_eq!(decoded.len(), packed.chunk_rows(chunk).len());
        if let (Some([lo, hi]), crate::Decoded::U64(values)) = (axis, &decoded) {
            assert!(
                values.is_sorted_by_key(|v| v.get()),
                "a decoded axis out of order"
            );
            assert!(values.iter().all(|v| (lo..=hi).contains(&v.get())));
        }
    }
}

fn read_all(bytes: &[u8]) {
    let Ok(reader) = SegmentReader::open("fuzz.seg", bytes) else {
        return;
    };
    for (part_idx, info) in reader.partitions().iter().enumerate() {
        let n_rows = usize::try_from(info.entry.n_rows).expect("row count fits usize");
        if let Ok(positions) = reader.positions(part_idx) {
            assert_eq!(positions.len(), n_rows);
            check_sequence(&positions, info.entry.positions, false);
            if let Ok(range) =
                reader.position_range(part_idx, info.entry.positions[0], info.entry.positions[1])
            {
                assert_eq!(range, 0..n_rows, "the directory's range holds every row");
            }
        }
        if let Ok(ordinals) = reader.ordinals(part_idx) {
            assert_eq!(ordinals.len(), n_rows);
            check_sequence(&ordinals, info.entry.ordinals, true);
        }
        if let Ok(Some(axis)) = reader.axis(part_idx) {
            assert_eq!(axis.len(), n_rows);
            let [lo, hi] = info.entry.axis.expect("an axis block means an axis range");
            if let Ok(start) = axis.lower_bound(lo) {
                assert_eq!(start, 0, "the directory's lo is the first row's");
            }
            if let Ok(end) = axis.upper_bound(hi) {
                assert_eq!(end, n_rows, "the directory's hi is the last row's");
            }
            if let crate::Axis::Packed(packed) = axis {
                check_packed(&packed, Some([lo, hi]));
            }
        }
        for &(field, _) in &info.columns {
            if let Ok(Some(column)) = reader.column(part_idx, field) {
                let len = match column {
                    Column::U64(v) => v.len(),
                    Column::I64(v) => v.len(),
                    Column::F64(v) => v.len(),
                    Column::Str(v) | Column::Bytes(v) => {
                        assert!(
                            (0..v.len()).all(|i| v.get(i).is_some()),
                            "a value out of range"
                        );
                        v.len()
                    }
                    Column::Packed(packed) => {
                        check_packed(&packed, None);
                        packed.len()
                    }
                };
                assert_eq!(len, n_rows);
            }
        }
        if let Ok(seams) = reader.seams(part_idx) {
            assert!(
                seams.windows(2).all(|w| w[0].get() < w[1].get())
                    && seams
                        .iter()
                        .all(|s| (1..info.entry.n_rows).contains(&s.get())),
                "seams out of order or outside the rows"
            );
        }
        for &(field, _) in &info.measured {
            if let Ok(nulls) = reader.nulls(part_idx, field) {
                let runs = nulls.runs();
                assert!(
                    runs.iter()
                        .all(|r| r.start < r.end && r.end <= info.entry.n_rows)
                        && runs.windows(2).all(|w| w[0].end < w[1].start),
                    "null runs empty, out of order, touching or past the rows"
                );
                assert_eq!(
                    nulls.count_in(0..n_rows),
                    runs.iter()
                        .map(|r| usize::try_from(r.end - r.start).unwrap_or(usize::MAX))
                        .sum::<usize>()
                );
            }
            for level in 0..info.entry.n_levels {
                if let Ok(cells) = reader.cells(part_idx, field, level, 3..=u64::MAX - 3) {
                    assert!(cells.iter().all(|c| (3..=u64::MAX - 3).contains(&c.index)));
                }
            }
        }
    }
    let _ = reader.verify_all();
}
