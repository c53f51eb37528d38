//! Entry points shared by the fuzz targets (`fuzz/`) and the corpus replay test, so that both
//! drive exactly the same code. Each takes arbitrary bytes and must never panic; each asserts the
//! invariants that must hold whatever the bytes were.

use strata_index::{Catalog, LOG_HEADER_LEN, encode_frame, parse_log};

use crate::reader::{Column, SegmentReader};

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
    let mut rebuilt = Catalog::new();
    rebuilt
        .apply(&catalog.snapshot())
        .expect("a snapshot applies to an empty catalog");
    assert_eq!(
        rebuilt, catalog,
        "the snapshot does not rebuild the catalog"
    );
}

/// Opens `bytes` as a segment and reads everything it claims to hold.
///
/// # Panics
/// If a read answers data that contradicts the directory (lengths that differ from the row
/// count, cells outside the asked range).
pub fn segment(bytes: &[u8]) {
    let Ok(reader) = SegmentReader::open("fuzz.seg", bytes) else {
        return;
    };
    for (part_idx, info) in reader.partitions().iter().enumerate() {
        let n_rows = usize::try_from(info.n_rows).expect("row count fits usize");
        if let Ok(positions) = reader.positions(part_idx) {
            assert_eq!(positions.len(), n_rows);
            if let Ok(range) = reader.position_range(part_idx, info.positions[0], info.positions[1])
            {
                assert!(range.end <= n_rows);
            }
        }
        if let Ok(ordinals) = reader.ordinals(part_idx) {
            assert_eq!(ordinals.len(), n_rows);
        }
        if let Ok(Some(axis)) = reader.axis(part_idx) {
            assert_eq!(axis.len(), n_rows);
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
                };
                assert_eq!(len, n_rows);
            }
        }
        for &(field, _) in &info.measured {
            for level in 0..info.n_levels {
                if let Ok(cells) = reader.cells(part_idx, field, level, 3..=u64::MAX - 3) {
                    assert!(cells.iter().all(|c| (3..=u64::MAX - 3).contains(&c.index)));
                }
            }
        }
    }
    let _ = reader.verify_all();
}
