//! Bytes on disk under continuous ingest with retention: raw rows and levels kept for 10% of the
//! axis span the run covers, ingested in barriers of 10,000 rows over 4 tracks, each barrier
//! followed by the compaction steps `Served` takes after it (which sweep first). At intervals it
//! prints the bytes the store holds on disk (segments and manifest) beside the bytes of the
//! retained rows: those rows (every row within the lifetime of the newest axis value) written
//! once into a fresh store, in one barrier, and compacted. Their ratio is the plateau; issue #12
//! asks for at most 2.
//!
//! `TMPDIR=/dev/shm cargo run --release --example retention_plateau` (10^7 rows);
//! `cargo run --release --example retention_plateau -- ROWS` for another count.

use std::collections::BTreeMap;
use std::path::Path;

use strata::{Config, FieldKind, Lifetime, Retention, Row, Store, Stream, StreamDecl, Value};

/// Steps taken after each barrier, as `Served` does by default.
const STEPS_PER_BARRIER: usize = 4;
const ROWS_PER_BARRIER: u64 = 10_000;
const TRACKS: u64 = 4;
/// `TRACKS`, as an array length.
const N_TRACKS: usize = 4;
/// Axis units per row of one track: a row every 10 units in each track.
const STEP: u64 = 10;

fn decl() -> Result<StreamDecl, Box<dyn std::error::Error>> {
    Ok(Stream::new("s")
        .field("probe", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["probe"])
        .axis("t")
        .build()?)
}

/// Row `i` of the run: track `i % TRACKS`, axis `(i / TRACKS) * STEP`, a random walk's value.
fn row(i: u64, walk: &mut [f64; N_TRACKS], seed: &mut u64) -> Row {
    let probe = i % TRACKS;
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    let step = (*seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    walk[usize::try_from(probe).expect("a track index")] += step;
    vec![
        Value::U64(probe),
        Value::U64((i / TRACKS) * STEP),
        Value::F64(walk[usize::try_from(probe).expect("a track index")]),
    ]
}

fn dir_bytes(path: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

/// The bytes a store holding only rows `first..end` takes, written in one barrier.
fn retained_bytes(first: u64, end: u64) -> Result<u64, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("store");
    let mut store = Store::open_or_create(&path, Config::default(), &[decl()?])?;
    let mut walk = [0.0; N_TRACKS];
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let mut batch = Vec::new();
    for i in first..end {
        batch.push(row(i, &mut walk, &mut seed));
        if batch.len() as u64 == ROWS_PER_BARRIER {
            store.publish("s", i, &batch)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        store.publish("s", end, &batch)?;
    }
    store.seal()?;
    store.compact()?;
    drop(store);
    Ok(dir_bytes(&path)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n_rows: u64 = match std::env::args().nth(1) {
        Some(arg) => arg.parse()?,
        None => 10_000_000,
    };
    let span = (n_rows / TRACKS) * STEP;
    let lifetime = Lifetime::AxisSpan(span / 10);
    let retention = Retention::raw(lifetime).levels_from(0, lifetime);
    let config = Config::default().retention(BTreeMap::from([("s".to_owned(), retention)]));
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("store");
    let mut store = Store::open_or_create(&path, config, &[decl()?])?;
    let mut walk = [0.0; N_TRACKS];
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let mut batch = Vec::new();
    let report_every = n_rows / 20;
    let mut worst: f64 = 0.0;
    println!(
        "{:>10} {:>12} {:>14} {:>14} {:>7} {:>6}",
        "rows", "floor axis", "bytes on disk", "retained bytes", "ratio", "files"
    );
    for i in 0..n_rows {
        batch.push(row(i, &mut walk, &mut seed));
        if batch.len() as u64 == ROWS_PER_BARRIER || i + 1 == n_rows {
            store.publish("s", i, &batch)?;
            batch.clear();
            store.seal()?;
            for _ in 0..STEPS_PER_BARRIER {
                if store.compact_step()?.is_none() {
                    break;
                }
            }
        }
        let done = i + 1;
        if done % report_every == 0 && done as f64 >= n_rows as f64 * 0.2 {
            let newest = (i / TRACKS) * STEP;
            // Rows within the lifetime of the newest axis value: axis >= newest - span / 10.
            let cut = newest.saturating_sub(span / 10);
            let first = (cut / STEP) * TRACKS;
            let on_disk = dir_bytes(&path)?;
            let retained = retained_bytes(first, done)?;
            let ratio = on_disk as f64 / retained as f64;
            // Past the first lifetime, the store holds a lifetime and sheds the rest.
            if newest > span / 5 {
                worst = worst.max(ratio);
            }
            println!(
                "{done:>10} {cut:>12} {on_disk:>14} {retained:>14} {ratio:>7.2} {:>6}",
                store.catalog().live_files().count()
            );
        }
    }
    println!("plateau: at most {worst:.2}x the retained rows' bytes");
    Ok(())
}
