//! Writes the store-v6 fixture: a small store as the engine of its day writes it (segment
//! format 6, manifest format 3), which `tests/it/fixture_v6.rs` opens with every later engine
//! and checks against the formulas of `tests/it/fixture_v6/data.rs` (issue #48: stores written
//! before a format change open and answer unchanged).
//!
//! `cargo run --example make_fixture_v6 -- tests/fixtures/store-v6` (a folder that does not
//! exist). Run once, by the build that wrote the committed fixture: a later build writes its own
//! formats, which is not what the fixture pins, and the test refuses such files by their headers.
//!
//! The schedule (data.rs): two streams, `probes` (axis, a track of two labels, f64, i64 and u64
//! measured fields, a str and a bytes column) and `events` (no axis); ten barriers, the first two
//! with plain columns and whole levels, the rest packed and adaptive; two compactions (merged
//! files with seams); a trim of both streams (raw floors) and the retirement of one track (raw
//! and level floors); a manifest rewritten (a generation above 1, with its preamble) and frames
//! appended after the rewrite. It checks those properties of what it wrote before it succeeds.

#[path = "../tests/it/fixture_v6/data.rs"]
#[allow(
    dead_code,
    reason = "the test reads all of it; this writes with part of it"
)]
mod data;

use std::error::Error;
use std::path::{Path, PathBuf};

use data::{
    BARRIERS, BATCHES_PER_BARRIER, COMPACT_AFTER, EVENTS, EVENTS_HORIZON, EventRow,
    MANIFEST_REWRITE_BYTES, PLAIN_BARRIERS, PROBES, PROBES_HORIZON, ProbeRow, RETIRE_AFTER,
    RETIRED, SOURCES, TRACKS, TRIM_AFTER, event_batch, event_position, probe_batch, probe_position,
};
use strata::segment::SegmentReader;
use strata::segment::names::parse_manifest_name;
use strata::{Config, FieldKind, LevelStorage, Row, Store, Stream, StreamDecl, Value};

/// The most bytes the fixture may take: it is committed.
const FIXTURE_BYTES_MAX: u64 = 400 << 10;

fn probes() -> Result<StreamDecl, Box<dyn Error>> {
    Ok(Stream::new(PROBES)
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("temp", FieldKind::F64)
        .field("delta", FieldKind::I64)
        .field("total", FieldKind::U64)
        .field("note", FieldKind::Str)
        .field("blob", FieldKind::Bytes)
        .track(["run", "probe"])
        .axis("t")
        .ladder(data::LADDER.0, data::LADDER.1)
        .build()?)
}

fn events() -> Result<StreamDecl, Box<dyn Error>> {
    Ok(Stream::new(EVENTS)
        .field("source", FieldKind::Str)
        .field("seq", FieldKind::U64)
        .field("level", FieldKind::I64)
        .field("msg", FieldKind::Str)
        .track(["source"])
        .build()?)
}

fn probe_values(row: &ProbeRow) -> Row {
    let (run, probe) = TRACKS[row.track];
    vec![
        Value::Str(run.to_owned()),
        Value::U64(probe),
        Value::U64(row.t),
        Value::F64(row.temp),
        Value::I64(row.delta),
        Value::U64(row.total),
        Value::Str(row.note.clone()),
        Value::Bytes(row.blob.clone()),
    ]
}

fn event_values(row: &EventRow) -> Row {
    vec![
        Value::Str(SOURCES[row.source].to_owned()),
        Value::U64(row.seq),
        Value::I64(row.level),
        Value::Str(row.msg.clone()),
    ]
}

fn main() -> Result<(), Box<dyn Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: make_fixture_v6 FOLDER (a folder that does not exist)")?,
    );
    if dir.exists() {
        return Err(format!("{} exists: the fixture is written once", dir.display()).into());
    }
    let streams = [probes()?, events()?];
    let plain = Config::default()
        .pack_columns(false)
        .level_storage(LevelStorage::Whole)
        .manifest_rewrite_bytes(MANIFEST_REWRITE_BYTES);
    let packed = Config::default()
        .compact_inputs_min(2)
        .compact_files_max(2)
        .manifest_rewrite_bytes(MANIFEST_REWRITE_BYTES);
    let mut store = Store::create(&dir, plain, &streams)?;
    for barrier in 0..BARRIERS {
        if barrier == PLAIN_BARRIERS {
            drop(store);
            store = Store::open(&dir, packed.clone(), &streams)?;
        }
        for b in 0..BATCHES_PER_BARRIER {
            let batch = barrier * BATCHES_PER_BARRIER + b;
            let rows: Vec<Row> = probe_batch(batch).iter().map(probe_values).collect();
            store.publish(PROBES, probe_position(batch), &rows)?;
        }
        let rows: Vec<Row> = event_batch(barrier).iter().map(event_values).collect();
        store.publish(EVENTS, event_position(barrier), &rows)?;
        store.seal()?;
        if COMPACT_AFTER.contains(&barrier) {
            let steps = store.compact()?;
            if steps.is_empty() {
                return Err(
                    format!("the compaction after barrier {barrier} merged nothing").into(),
                );
            }
            println!("barrier {barrier}: {} compaction steps", steps.len());
        }
        if barrier == TRIM_AFTER {
            let trimmed = store.trim_to(PROBES, PROBES_HORIZON)?;
            println!("trimmed {PROBES}: {:?}", trimmed.floors);
            let trimmed = store.trim_to(EVENTS, EVENTS_HORIZON)?;
            println!("trimmed {EVENTS}: {:?}", trimmed.floors);
        }
        if barrier == RETIRE_AFTER {
            let (run, probe) = TRACKS[RETIRED];
            let swept = store.retire(PROBES, &[run, &probe.to_string()])?;
            println!("retired {run},{probe}: {} floors", swept.floors.len());
        }
    }
    drop(store);
    check(&dir)
}

/// Refuses a fixture that lacks what it is meant to hold.
fn check(dir: &Path) -> Result<(), Box<dyn Error>> {
    let mut seams = 0;
    let mut segments = 0;
    for entry in std::fs::read_dir(dir.join("seg"))? {
        let path = entry?.path();
        let bytes = std::fs::read(&path)?;
        if &bytes[..8] != b"STRATASG" || bytes[8..12] != 6u32.to_le_bytes() {
            return Err(format!("{}: not a segment of version 6", path.display()).into());
        }
        let name = path.display().to_string();
        let reader = SegmentReader::open(&name, bytes)?;
        for part_idx in 0..reader.partitions().len() {
            seams += reader.seams(part_idx)?.len();
        }
        segments += 1;
    }
    let mut generations: Vec<u32> = std::fs::read_dir(dir)?
        .filter_map(|e| parse_manifest_name(e.ok()?.file_name().to_str()?))
        .collect();
    generations.sort_unstable();
    let current = *generations.last().ok_or("no manifest")?;
    let manifest = std::fs::read(dir.join(strata::segment::names::manifest_name(current)))?;
    let whole_len = u64::from_le_bytes(manifest[30..38].try_into()?);
    let total: u64 = walk(dir)?;
    println!(
        "{}: {segments} segment files ({seams} seams), manifest generations {generations:?} \
         (the current {} bytes, {whole_len} written whole), {total} bytes in all",
        dir.display(),
        manifest.len()
    );
    let problems = [
        (segments < 4, "fewer than 4 segment files"),
        (seams == 0, "no merged file with seams"),
        (current < 2, "the manifest was never rewritten"),
        (
            manifest[8..12] != 3u32.to_le_bytes(),
            "manifest format is not 3",
        ),
        (manifest[24] != 3 || manifest[29] != 13, "no preamble"),
        (
            manifest.len() as u64 <= whole_len,
            "no frame appended after the rewrite",
        ),
        (total > FIXTURE_BYTES_MAX, "too large to commit"),
    ];
    for (bad, what) in problems {
        if bad {
            return Err(what.into());
        }
    }
    Ok(())
}

fn walk(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            walk(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}
