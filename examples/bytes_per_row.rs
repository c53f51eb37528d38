//! Bytes on disk per row for a u64 axis and one f64 measured field, published in 10,000-row
//! batches and sealed after each, then compacted: the whole store, and the share of the level
//! cells (default ladder).
//!
//! `cargo run --release --example bytes_per_row -- ROWS TRACKS` (defaults 1000000 1). With one
//! track it publishes columns; with several, rows interleaved track by track, so a partition's
//! ordinals step by the number of tracks.

use std::path::Path;

use strata::segment::SegmentReader;
use strata::{Config, FieldKind, Store, Stream, Value, Values};

const BATCH_ROWS: u64 = 10_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n_rows: u64 = args.next().map_or(Ok(1_000_000), |a| a.parse())?;
    let n_tracks: u64 = args.next().map_or(Ok(1), |a| a.parse())?;
    let decl = Stream::new("s")
        .field("track", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["track"])
        .axis("t")
        .build()?;
    let dir = tempfile::tempdir()?;
    let mut store = Store::open_or_create(dir.path(), Config::default(), &[decl])?;
    let mut walk = 0.0f64;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for batch_idx in 0..n_rows / BATCH_ROWS {
        let first = batch_idx * BATCH_ROWS;
        let mut t = Vec::new();
        let mut v = Vec::new();
        let mut tracks = Vec::new();
        for row in first..first + BATCH_ROWS {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            walk += (state % 2001) as f64 / 1000.0 - 1.0;
            t.push(row / n_tracks);
            v.push(walk);
            tracks.push(row % n_tracks);
        }
        let position = batch_idx + 1;
        if n_tracks == 1 {
            store.publish_columns(
                "s",
                position,
                &["track_0"],
                &[Values::U64(&t), Values::F64(&v)],
            )?;
        } else {
            let rows: Vec<Vec<Value>> = (0..t.len())
                .map(|i| {
                    vec![
                        Value::Str(format!("track_{}", tracks[i])),
                        Value::U64(t[i]),
                        Value::F64(v[i]),
                    ]
                })
                .collect();
            store.publish("s", position, &rows)?;
        }
        store.seal()?;
    }
    let rows = (n_rows / BATCH_ROWS * BATCH_ROWS) as f64;
    report("sealed", dir.path(), rows)?;
    store.compact()?;
    report("compacted", dir.path(), rows)?;
    Ok(())
}

fn report(when: &str, dir: &Path, rows: f64) -> Result<(), Box<dyn std::error::Error>> {
    let all = store_bytes(dir)? as f64;
    let cells = cells_bytes(dir)? as f64;
    println!(
        "{when:>9}: {rows} rows, {:.2} B/row in all = {:.2} rows + {:.2} level cells ({:.1}%)",
        all / rows,
        (all - cells) / rows,
        cells / rows,
        100.0 * cells / all
    );
    Ok(())
}

fn store_bytes(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            store_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

/// The cells blocks' bytes (crcs included).
fn cells_bytes(dir: &Path) -> Result<u64, Box<dyn std::error::Error>> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir.join("seg"))? {
        let reader = SegmentReader::open("seg", std::fs::read(entry?.path())?)?;
        total += (0..reader.partitions().len())
            .map(|part_idx| reader.cells_len(part_idx))
            .sum::<u64>();
    }
    Ok(total)
}
