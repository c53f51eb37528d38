//! Bytes on disk per row, for the shape the segment format is tuned for: a u64 axis and one f64
//! measured field, published in 10,000-row batches and sealed after each. The raw fields are 16
//! bytes a row; the target is 1.25x that, 20 bytes, for everything the store holds (rows, level
//! cells under the default ladder, directories, the manifest), after the barriers and again after
//! compaction. Positions and ordinals cost next to nothing once they are run-encoded (they were
//! 16 bytes a row stored plain), so a regression to plain blocks fails here.

use std::path::Path;

use strata::segment::SegmentReader;
use strata::{Config, FieldKind, Row, Store, Stream, StreamDecl, Value};

const BATCH_ROWS: u64 = 10_000;
const N_BATCHES: u64 = 20;
const RAW_FIELD_BYTES: f64 = 16.0;

fn decl() -> StreamDecl {
    Stream::new("s")
        .field("track", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["track"])
        .axis("t")
        .build()
        .unwrap()
}

/// A batch of `BATCH_ROWS` rows over `n_tracks` tracks interleaved row by row, each track's axis
/// advancing by one a row, values a random walk.
fn batch(batch_idx: u64, n_tracks: u64, walk: &mut u64) -> Vec<Row> {
    (0..BATCH_ROWS)
        .map(|i| {
            let row = batch_idx * BATCH_ROWS + i;
            // A xorshift step: deterministic, and no two values alike.
            *walk ^= *walk << 13;
            *walk ^= *walk >> 7;
            *walk ^= *walk << 17;
            vec![
                Value::Str(format!("track_{}", row % n_tracks)),
                Value::U64(row / n_tracks),
                Value::F64((*walk % 2001) as f64 / 1000.0 - 1.0),
            ]
        })
        .collect()
}

/// Every file's bytes under `dir`.
fn store_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                store_bytes(&entry.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

/// The bytes of the level cells blocks in the store's segments (records and crcs).
fn cells_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir.join("seg")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let reader = SegmentReader::open("seg", bytes).unwrap();
        for (part_idx, part) in reader.partitions().iter().enumerate() {
            let mut n_cells = 0;
            for &(field, _) in &part.measured {
                for level in 0..part.entry.n_levels {
                    n_cells += reader
                        .cells(part_idx, field, level, 0..=u64::MAX)
                        .unwrap()
                        .len();
                }
            }
            if n_cells > 0 {
                total += n_cells as u64 * 104 + 4;
            }
        }
    }
    total
}

/// Bytes a row, in all and without the cells, as the barriers left the store and after it
/// compacted.
fn measure(n_tracks: u64) -> [(f64, f64); 2] {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open_or_create(dir.path(), Config::default(), &[decl()]).unwrap();
    let mut walk = 0x9e37_79b9_7f4a_7c15;
    let n_rows = (N_BATCHES * BATCH_ROWS) as f64;
    let per_row = |dir: &Path| {
        let (all, cells) = (store_bytes(dir) as f64, cells_bytes(dir) as f64);
        (all / n_rows, (all - cells) / n_rows)
    };
    for batch_idx in 0..N_BATCHES {
        store
            .publish("s", batch_idx + 1, &batch(batch_idx, n_tracks, &mut walk))
            .unwrap();
        store.seal().unwrap();
    }
    let sealed = per_row(dir.path());
    store.compact().unwrap();
    let compacted = per_row(dir.path());
    [sealed, compacted]
}

#[test]
fn a_row_of_a_u64_axis_and_an_f64_costs_at_most_twenty_bytes_on_disk() {
    for n_tracks in [1, 8] {
        for (when, (all, without_cells)) in ["sealed", "compacted"].iter().zip(measure(n_tracks)) {
            eprintln!(
                "{n_tracks} track(s), {when}: {all:.2} B/row, {without_cells:.2} B/row without \
                 the level cells"
            );
            assert!(
                all <= RAW_FIELD_BYTES * 1.25,
                "{n_tracks} track(s), {when}: {all:.2} bytes a row"
            );
            // Rows alone: the two raw columns, and within 5% of them positions, ordinals, the
            // directories and the manifest (a few hundred bytes per partition per barrier: 1,250
            // rows each with 8 tracks).
            assert!(
                without_cells <= RAW_FIELD_BYTES * 1.05,
                "{n_tracks} track(s), {when}: {without_cells:.2} bytes a row besides the cells"
            );
        }
    }
}
