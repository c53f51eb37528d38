//! A minimal barrier over the real write path, and ways to look at a store's files.
//!
//! Shared with strata-cli's tests (`cli/tests/it/main.rs` includes this file), and each test
//! crate uses only part of it.
#![allow(dead_code, reason = "shared by two test crates, each using a part")]

use std::collections::BTreeMap;
use std::path::Path;

use strata_index::{Entry, FieldDecl, FieldKind, LadderSpec, Record, StreamDecl, TrackKey};
use strata_recover::{Booted, boot};
use strata_segment::vfs::{SimFs, Vfs};
use strata_segment::{
    Column, ColumnData, PartitionInput, SegmentReader, SegmentWriter, write_two_phase,
};

pub const STREAM: &str = "capture";

pub fn decl() -> StreamDecl {
    StreamDecl {
        id: STREAM.into(),
        fields: vec![
            FieldDecl {
                name: "run".into(),
                kind: FieldKind::Str,
            },
            FieldDecl {
                name: "value".into(),
                kind: FieldKind::I64,
            },
        ],
        track: vec![0],
        axis: None,
        ladder: LadderSpec { base: 1, fanout: 4 },
        time: None,
    }
}

/// A new store holding the `capture` stream's declaration.
pub fn new_store() -> (SimFs, Booted) {
    let fs = SimFs::new();
    let mut booted = boot(&fs, true).unwrap();
    let record = Record {
        entries: vec![Entry::Declare(decl())],
    };
    booted.catalog.apply(&record).unwrap();
    booted.manifest.append(&record).unwrap();
    (fs, booted)
}

/// What one barrier writes: its segment's name and bytes, and the record that claims it.
pub struct Barrier {
    pub name: u64,
    pub file: String,
    pub bytes: Vec<u8>,
    pub record: Record,
}

/// Builds barrier `seq` of `n_rows` rows in two runs, continuing the stream's ordinals.
pub fn barrier(booted: &Booted, seq: u64, n_rows: u64) -> Barrier {
    let name = booted.next_name;
    let first_ordinal = booted.catalog.next_ordinal(STREAM);
    let first_position = booted.catalog.last_position(STREAM).map_or(0, |p| p + 1);
    let mut writer = SegmentWriter::new();
    for (run_idx, run) in ["run_7", "run_70"].iter().enumerate() {
        let track = TrackKey::encode(&[run]).unwrap();
        let rows: Vec<u64> = (0..n_rows).filter(|r| r % 2 == run_idx as u64).collect();
        if rows.is_empty() {
            continue;
        }
        let positions: Vec<u64> = rows.iter().map(|r| first_position + r).collect();
        let ordinals: Vec<u64> = rows.iter().map(|r| first_ordinal + r).collect();
        let values: Vec<i64> = rows
            .iter()
            .map(|r| i64::try_from(seq * 100 + r).unwrap())
            .collect();
        writer.add_partition(&PartitionInput {
            stream: STREAM,
            track: &track,
            positions: &positions,
            ordinals: &ordinals,
            axis: None,
            columns: vec![(1, ColumnData::I64(&values))],
            nulls: Vec::new(),
            cells: Vec::new(),
            stored_from: 0,
        });
    }
    let written = writer.finish();
    let record = Record {
        entries: vec![
            Entry::AddFile(written.claim(name)),
            Entry::Watermark {
                stream: STREAM.into(),
                position: first_position + n_rows - 1,
            },
            Entry::NameHigh(name),
        ],
    };
    Barrier {
        name,
        file: format!("{name:012}.seg"),
        bytes: written.bytes,
        record,
    }
}

/// A compaction step of track `run` over segments `inputs` (ascending names, made by
/// [`barrier`]): their rows read back and written into one new segment, claimed by a `Merge`
/// record that retires what it replaces. Written with [`seal`], like a barrier.
pub fn merge(fs: &SimFs, booted: &Booted, run: &str, inputs: &[u64]) -> Barrier {
    let track = TrackKey::encode(&[run]).unwrap();
    let (mut positions, mut ordinals, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for input in inputs {
        let path = format!("seg/{input:012}.seg");
        let reader = SegmentReader::open(&path, fs.live_bytes(&path).unwrap()).unwrap();
        let idx = reader.find(STREAM, &track).unwrap();
        positions.extend(reader.positions(idx).unwrap().iter());
        ordinals.extend(reader.ordinals(idx).unwrap().iter());
        let Some(Column::I64(column)) = reader.column(idx, 1).unwrap() else {
            panic!("field 1 is an i64 column");
        };
        values.extend(column.iter().map(|v| v.get()));
    }
    let mut writer = SegmentWriter::new();
    writer.add_partition(&PartitionInput {
        stream: STREAM,
        track: &track,
        positions: &positions,
        ordinals: &ordinals,
        axis: None,
        columns: vec![(1, ColumnData::I64(&values))],
        nulls: Vec::new(),
        cells: Vec::new(),
        stored_from: 0,
    });
    let written = writer.finish();
    let name = booted.next_name;
    let record = Record {
        entries: vec![
            Entry::Merge {
                file: written.claim(name),
                inputs: inputs.to_vec(),
            },
            Entry::NameHigh(name),
        ],
    };
    Barrier {
        name,
        file: format!("{name:012}.seg"),
        bytes: written.bytes,
        record,
    }
}

/// Writes `barrier` the way a seal does: the segment two-phase, then the claiming frame.
pub fn seal(fs: &SimFs, booted: &mut Booted, barrier: &Barrier) -> std::io::Result<()> {
    write_two_phase(fs, "seg", &barrier.file, &barrier.bytes).map_err(std::io::Error::other)?;
    booted
        .manifest
        .append(&barrier.record)
        .map_err(std::io::Error::other)?;
    booted.catalog.apply(&barrier.record).unwrap();
    booted.next_name = barrier.name + 1;
    Ok(())
}

/// Every file of a (live) image, path -> bytes.
pub fn files(fs: &SimFs) -> BTreeMap<String, Vec<u8>> {
    fs.paths()
        .into_iter()
        .filter(|p| p != "LOCK")
        .map(|p| {
            let bytes = fs.live_bytes(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// The quarantine's contents, name -> bytes.
pub fn quarantine(fs: &SimFs) -> BTreeMap<String, Vec<u8>> {
    files(fs)
        .into_iter()
        .filter_map(|(p, b)| p.strip_prefix("quarantine/").map(|n| (n.to_owned(), b)))
        .collect()
}

/// Writes a simulated store's live image to a real folder, for tests of the real binary. The
/// image itself was produced by crashing the real write path in the simulation.
pub fn materialize(fs: &SimFs, root: &Path) {
    for dir in ["seg", "tmp", "quarantine"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for (path, bytes) in files(fs) {
        let target = root.join(&path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, bytes).unwrap();
    }
}

/// Lists a store folder (live image).
pub fn list(fs: &SimFs, dir: &str) -> Vec<String> {
    fs.list(dir)
        .map(|v| v.into_iter().map(|e| e.name).collect())
        .unwrap_or_default()
}
