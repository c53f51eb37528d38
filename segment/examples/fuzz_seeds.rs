//! Writes the fuzz seed corpus: valid manifests and segments the fuzzers mutate from.
//!
//! `cargo run -p strata-segment --example fuzz_seeds -- fuzz/corpus`
//!
//! A seed already present is kept as it is: seeds written by an older format version are the
//! fixtures that prove this build still reads that version (`two-partitions.seg` and the
//! manifests claiming it are segment version 1).

use std::path::PathBuf;

use strata_index::{
    Entry, FieldDecl, FieldKind, LadderSpec, Lineage, Record, StreamDecl, TrackKey, encode_frame,
    generation_bytes, log_header, whole_state,
};
use strata_levels::{Ladder, Num, NumKind};
use strata_segment::{ColumnData, FieldCells, PartitionInput, SegmentWriter, VarData};

fn main() -> std::io::Result<()> {
    let root = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/corpus".into()),
    );
    std::fs::create_dir_all(root.join("manifest"))?;
    std::fs::create_dir_all(root.join("segment"))?;

    let write_new = |path: PathBuf, bytes: &[u8]| -> std::io::Result<()> {
        if path.exists() {
            return Ok(());
        }
        std::fs::write(path, bytes)
    };
    write_new(root.join("segment/run-blocks.seg"), &runs_segment().bytes)?;
    write_new(
        root.join("segment/packed-blocks.seg"),
        &packed_segment().bytes,
    )?;
    write_new(
        root.join("segment/merged-seams.seg"),
        &merged_segment().bytes,
    )?;
    write_new(
        root.join("segment/validity-v7.seg"),
        &validity_segment().bytes,
    )?;
    write_new(root.join("manifest/lineage-v2.log"), &lineage_manifest())?;
    write_new(root.join("manifest/preamble-v3.log"), &preamble_manifest())?;
    std::fs::create_dir_all(root.join("packed"))?;
    for (name, bytes) in strata_segment::fuzzing::packed_seeds() {
        write_new(root.join("packed").join(name), &bytes)?;
    }
    if root.join("segment/two-partitions.seg").exists() {
        return Ok(());
    }
    let segment = seed_segment();
    std::fs::write(root.join("segment/two-partitions.seg"), &segment.bytes)?;
    let decl = StreamDecl {
        id: "capture".into(),
        fields: vec![
            FieldDecl {
                name: "run".into(),
                kind: FieldKind::Str,
            },
            FieldDecl {
                name: "t".into(),
                kind: FieldKind::U64,
            },
            FieldDecl {
                name: "value".into(),
                kind: FieldKind::F64,
            },
            FieldDecl {
                name: "note".into(),
                kind: FieldKind::Str,
            },
        ],
        track: vec![0],
        axis: Some(1),
        ladder: LadderSpec { base: 4, fanout: 4 },
        time: None,
    };
    let records = [
        Record {
            entries: vec![Entry::Declare(decl)],
        },
        Record {
            entries: vec![
                Entry::AddFile(segment.claim(1)),
                Entry::Watermark {
                    stream: "capture".into(),
                    position: 9,
                },
                Entry::NameHigh(1),
            ],
        },
    ];
    let mut log = log_header().to_vec();
    std::fs::write(root.join("manifest/empty.log"), &log)?;
    for record in &records {
        log.extend_from_slice(&encode_frame(record));
    }
    std::fs::write(root.join("manifest/declare-and-add.log"), &log)?;
    log.truncate(log.len() - 7);
    std::fs::write(root.join("manifest/torn-tail.log"), &log)?;
    Ok(())
}

/// A manifest of format 2 as a rewrite writes it: a generation whose snapshot ends with the
/// lineage of the two generations before (the fixture of format 2).
fn lineage_manifest() -> Vec<u8> {
    let mut before = log_header().to_vec();
    before.extend_from_slice(&encode_frame(&Record {
        entries: vec![Entry::NameHigh(3)],
    }));
    let lineage = Lineage::default()
        .extended(1, &before, 16)
        .extended(2, &before, 16);
    let mut log = log_header().to_vec();
    log.extend_from_slice(&encode_frame(&Record {
        entries: vec![Entry::NameHigh(3), Entry::Lineage(lineage)],
    }));
    log.extend_from_slice(&encode_frame(&Record {
        entries: vec![Entry::NameHigh(4)],
    }));
    log
}

/// A manifest of format 3 as a rewrite writes it, then appended to: generation 2, beginning with
/// the preamble that names generation 1 (its length and crc32c) and says where the part
/// written whole ends, a snapshot frame, and one frame appended after it (the fixture of
/// format 3).
fn preamble_manifest() -> Vec<u8> {
    let mut before = log_header().to_vec();
    before.extend_from_slice(&encode_frame(&Record {
        entries: vec![Entry::NameHigh(3)],
    }));
    let lineage = Lineage::default().extended(1, &before, 16);
    let mut log = generation_bytes(
        2,
        Some(whole_state(1, &before)),
        &[Record {
            entries: vec![Entry::NameHigh(3), Entry::Lineage(lineage)],
        }],
    );
    log.extend_from_slice(&encode_frame(&Record {
        entries: vec![Entry::NameHigh(4)],
    }));
    log
}

/// A partition as a store writes it, so its positions and ordinals are run blocks: three publish
/// batches of four rows, ordinals stepping by 2 (two tracks interleaved), no axis.
fn runs_segment() -> strata_segment::WrittenSegment {
    let mut writer = SegmentWriter::new();
    let track = TrackKey::encode(&["run_7"]).expect("a valid key");
    let positions: Vec<u64> = (0..12).map(|i| 40 + i / 4).collect();
    let ordinals: Vec<u64> = (0..12).map(|i| 7 + 2 * i).collect();
    let values: Vec<u64> = (0..12).map(|i| i * i).collect();
    writer.add_partition(&PartitionInput {
        stream: "capture",
        track: &track,
        positions: &positions,
        ordinals: &ordinals,
        axis: None,
        columns: vec![(2, ColumnData::U64(&values))],
        nulls: Vec::new(),
        cells: Vec::new(),
        stored_from: 0,
    });
    writer.finish()
}

/// A partition whose axis and numeric columns are packed (format 5): two pco chunks' worth of
/// rows would make a seed too big to mutate well, so one chunk of 300 rows of each kind.
fn packed_segment() -> strata_segment::WrittenSegment {
    let mut writer = SegmentWriter::new();
    let track = TrackKey::encode(&["probe_2"]).expect("a valid key");
    let positions: Vec<u64> = (0..300).map(|i| 1 + i / 50).collect();
    let ordinals: Vec<u64> = (0..300).collect();
    let axis: Vec<u64> = (0..300).map(|i| 1_000 * i + 17).collect();
    let counts: Vec<u64> = (0..300).map(|i| i * 3).collect();
    let deltas: Vec<i64> = (0..300).map(|i| (i % 7) - 3).collect();
    let values: Vec<f64> = (0..300)
        .map(|i| (f64::from(i) / 20.0).sin().mul_add(100.0, 0.0).round() / 100.0)
        .collect();
    writer.add_partition(&PartitionInput {
        stream: "sensor",
        track: &track,
        positions: &positions,
        ordinals: &ordinals,
        axis: Some(&axis),
        columns: vec![
            (2, ColumnData::U64(&counts)),
            (3, ColumnData::I64(&deltas)),
            (4, ColumnData::F64(&values)),
        ],
        nulls: Vec::new(),
        cells: Vec::new(),
        stored_from: 0,
    });
    writer.finish()
}

/// A partition with missing values (format 7): a packed `f64` column with NaN, infinities and
/// two runs of null rows, a plain `i64` column with one null row, and a `u64` column without
/// any (which has no validity block).
fn validity_segment() -> strata_segment::WrittenSegment {
    let mut writer = SegmentWriter::new();
    let track = TrackKey::encode(&["probe_4"]).expect("a valid key");
    let n = 200u64;
    let positions: Vec<u64> = (0..n).map(|i| 1 + i / 40).collect();
    let ordinals: Vec<u64> = (0..n).collect();
    let axis: Vec<u64> = (0..n).map(|i| 10 * i).collect();
    let counts: Vec<u64> = (0..n).map(|i| i % 5).collect();
    let deltas: Vec<i64> = (0..12).map(|i| i - 6).collect();
    let values: Vec<f64> = (0..n)
        .map(|i| match i {
            17 => f64::NAN,
            18 => f64::INFINITY,
            19 => f64::NEG_INFINITY,
            i => (f64::from(u32::try_from(i).unwrap_or(0)) / 13.0)
                .sin()
                .round(),
        })
        .collect();
    let value_nulls: &[std::ops::Range<u64>] = &[3..4, 100..160];
    writer.add_partition(&PartitionInput {
        stream: "sensor",
        track: &track,
        positions: &positions,
        ordinals: &ordinals,
        axis: Some(&axis),
        columns: vec![(2, ColumnData::U64(&counts)), (4, ColumnData::F64(&values))],
        nulls: vec![(4, value_nulls)],
        cells: Vec::new(),
        stored_from: 0,
    });
    let short_track = TrackKey::encode(&["probe_5"]).expect("a valid key");
    let short: Vec<u64> = (0..12).collect();
    // One null row, the last: a run of one.
    let delta_nulls: Vec<std::ops::Range<u64>> = std::iter::once(11..12).collect();
    writer.add_partition(&PartitionInput {
        stream: "sensor",
        track: &short_track,
        positions: &short,
        ordinals: &short.iter().map(|o| o + n).collect::<Vec<_>>(),
        axis: None,
        columns: vec![(3, ColumnData::I64(&deltas))],
        nulls: vec![(3, &delta_nulls)],
        cells: Vec::new(),
        stored_from: 0,
    });
    writer.finish()
}

/// A partition merged from three packed ones (format 6): chunks moved as they were, seams
/// where each input began, the cell holding its last row chained from level 2, and its levels
/// stored from level 1 over a 4 x 4 grid.
fn merged_segment() -> strata_segment::WrittenSegment {
    let ladder = Ladder::new(4, 4).expect("a valid ladder");
    let track = TrackKey::encode(&["probe_3"]).expect("a valid key");
    let n = 120u64;
    let axis: Vec<u64> = (0..n).map(|i| 7 * i + i % 3).collect();
    let values: Vec<f64> = (0..n)
        .map(|i| {
            (f64::from(u32::try_from(i).unwrap_or(0)) / 9.0)
                .cos()
                .mul_add(50.0, 0.0)
                .round()
                / 10.0
        })
        .collect();
    let inputs: Vec<Vec<u8>> = [0..40u64, 40..90, 90..120]
        .into_iter()
        .map(|rows| {
            let range =
                usize::try_from(rows.start).unwrap_or(0)..usize::try_from(rows.end).unwrap_or(0);
            let positions: Vec<u64> = rows.clone().map(|i| i / 10).collect();
            let ordinals: Vec<u64> = rows.collect();
            let mut writer = SegmentWriter::new();
            writer.add_partition(&PartitionInput {
                stream: "sensor",
                track: &track,
                positions: &positions,
                ordinals: &ordinals,
                axis: Some(&axis[range.clone()]),
                columns: vec![(2, ColumnData::F64(&values[range]))],
                nulls: Vec::new(),
                cells: Vec::new(),
                stored_from: 0,
            });
            writer.finish().bytes
        })
        .collect();
    let readers: Vec<strata_segment::SegmentReader<&[u8]>> = inputs
        .iter()
        .map(|bytes| {
            strata_segment::SegmentReader::open("input", bytes.as_slice()).expect("an input")
        })
        .collect();
    let sources: Vec<strata_segment::MergeSource<'_, &[u8]>> = readers
        .iter()
        .map(|reader| strata_segment::MergeSource {
            reader,
            part_idx: 0,
        })
        .collect();
    let rows = axis
        .iter()
        .copied()
        .zip(values.iter().map(|&v| Num::F64(v)));
    let mut levels = vec![ladder.fold_rows(2, rows)];
    let top = ladder.top_level(axis[0], axis[axis.len() - 1]);
    for _ in 0..top {
        let next = ladder.fold_level(levels.last().expect("level 0 exists"));
        levels.push(next);
    }
    levels[0].clear();
    let mut writer = SegmentWriter::new();
    writer
        .write_merged_rows(&sources)
        .expect("the inputs follow one another");
    writer.write_folding(&[40, 90], Some(2)).expect("in memory");
    writer
        .write_cells(
            &[FieldCells {
                field: 2,
                kind: NumKind::F64,
                levels: &levels,
            }],
            1,
        )
        .expect("in memory");
    writer.finish()
}

fn seed_segment() -> strata_segment::WrittenSegment {
    let ladder = Ladder::new(4, 4).expect("a valid ladder");
    let mut writer = SegmentWriter::new();
    for (run, base) in [("run_7", 0u64), ("run_70", 5)] {
        let track = TrackKey::encode(&[run]).expect("a valid key");
        let positions: Vec<u64> = (0..5).map(|i| base + i).collect();
        let ordinals: Vec<u64> = (0..5).map(|i| base + i).collect();
        let axis: Vec<u64> = (0..5).map(|i| 10 * i + base).collect();
        let values: Vec<f64> = (0..5).map(|i| f64::from(i) * 1.5 - 2.0).collect();
        let notes = ["a", "", "bc", "日本", "z"];
        let mut offsets = vec![0u64];
        let mut heap = Vec::new();
        for note in notes {
            heap.extend_from_slice(note.as_bytes());
            offsets.push(heap.len() as u64);
        }
        let rows = axis
            .iter()
            .copied()
            .zip(values.iter().map(|&v| Num::F64(v)));
        let mut levels = vec![ladder.fold_rows(2, rows)];
        for _ in 0..2 {
            let next = ladder.fold_level(levels.last().expect("level 0 exists"));
            levels.push(next);
        }
        writer.add_partition(&PartitionInput {
            stream: "capture",
            track: &track,
            positions: &positions,
            ordinals: &ordinals,
            axis: Some(&axis),
            columns: vec![
                (2, ColumnData::F64(&values)),
                (
                    3,
                    ColumnData::Str(VarData {
                        offsets: &offsets,
                        heap: &heap,
                    }),
                ),
            ],
            nulls: Vec::new(),
            cells: vec![FieldCells {
                field: 2,
                kind: NumKind::F64,
                levels: &levels,
            }],
            stored_from: 0,
        });
    }
    writer.finish()
}
