//! Run-encoded positions and ordinals: chosen when smaller, read back exactly, and every byte
//! of them guarded — by the crc, and behind it by the checks of their contents.

use strata_index::TrackKey;
use strata_segment::format::RunRecord;
use strata_segment::{SegmentError, SegmentReader, fuzzing};

use crate::corruption::check_every_flip;
use strata_levels::{Bucket, Cell, Num};

use crate::generate::{Part, Values, build};
use crate::roundtrip::{assert_reads_back, write};

const PATH: &str = "seg/000000000005.seg";

/// A partition as a store writes it: `n_batches` publish batches of `per_batch` rows of this
/// track, whose ordinals step by `n_tracks` (the tracks interleave row by row).
fn store_shaped(n_batches: u64, per_batch: u64, n_tracks: u64) -> Part {
    let n = n_batches * per_batch;
    let positions: Vec<u64> = (0..n).map(|i| 100 + i / per_batch).collect();
    let ordinals: Vec<u64> = (0..n).map(|i| 3 + i * n_tracks).collect();
    let axis: Vec<u64> = (0..n).collect();
    let values: Vec<f64> = (0..n).map(|i| (i as f64 * 0.1).sin()).collect();
    build(
        "s".into(),
        TrackKey::encode(&["a"]).unwrap(),
        positions,
        ordinals,
        Some(axis),
        vec![(2, Values::F64(values))],
    )
}

#[test]
fn a_store_shaped_partition_is_written_as_runs_and_reads_back() {
    let part = store_shaped(10, 100, 8);
    let parts = [part];
    let written = write(&parts);
    let reader = SegmentReader::open(PATH, written.bytes.clone()).unwrap();
    assert_reads_back(&reader, &parts);
    let positions = reader.positions(0).unwrap();
    let ordinals = reader.ordinals(0).unwrap();
    assert_eq!(positions.as_runs().map(<[RunRecord]>::len), Some(10));
    assert_eq!(ordinals.as_runs().map(<[RunRecord]>::len), Some(1));
    // 1,000 rows: axis and value 8 bytes a row each, the cells, 11 runs, and a few hundred
    // bytes of header, directory and crcs; plain positions and ordinals would add 16,000.
    let cells: usize = parts[0]
        .cells
        .iter()
        .flat_map(|(_, _, l)| l)
        .map(Vec::len)
        .sum();
    let len = written.bytes.len();
    let bound = 16 * 1000 + cells * 104 + size_of::<RunRecord>() * 11 + 600;
    assert!(len <= bound, "{len} bytes for 1,000 rows, above {bound}");
}

#[test]
fn runs_are_kept_only_where_they_are_smaller() {
    // Every row a new position, and ordinals that never keep a step: plain is smaller.
    let n = 300u64;
    let part = build(
        "s".into(),
        TrackKey::encode(&["a"]).unwrap(),
        (0..n).map(|i| i * i).collect(),
        (0..n).map(|i| i * i + i % 2).collect(),
        None,
        vec![],
    );
    let parts = [part];
    let written = write(&parts);
    let reader = SegmentReader::open(PATH, written.bytes.clone()).unwrap();
    assert_reads_back(&reader, &parts);
    assert!(reader.positions(0).unwrap().as_plain().is_some());
    assert!(reader.ordinals(0).unwrap().as_plain().is_some());
}

#[test]
fn flipping_any_byte_of_a_file_with_run_blocks_is_a_checksum_error() {
    let parts = [store_shaped(4, 5, 3), {
        let mut other = store_shaped(3, 7, 1);
        other.track = TrackKey::encode(&["b"]).unwrap();
        other
    }];
    let written = write(&parts);
    let reader = SegmentReader::open(PATH, written.bytes).unwrap();
    for idx in 0..2 {
        assert!(reader.positions(idx).unwrap().as_runs().is_some());
        assert!(reader.ordinals(idx).unwrap().as_runs().is_some());
    }
    for mask in [0x01, 0x80, 0xff] {
        check_every_flip(&parts, mask);
    }
}

/// Past the crc (every checksum recomputed over the flipped bytes, as a crafted file would
/// have them), a flipped run either breaks a promise — an error naming the file and the run —
/// or still reads as what the directory promises: the row count, the order, the ends.
#[test]
fn a_flipped_run_behind_a_good_crc_is_refused_or_still_in_order() {
    let part = store_shaped(6, 4, 2);
    let written = write(std::slice::from_ref(&part));
    let clean = SegmentReader::open(PATH, written.bytes.clone()).unwrap();
    let position_bytes = size_of_val(clean.positions(0).unwrap().as_runs().unwrap());
    let ordinal_bytes = size_of_val(clean.ordinals(0).unwrap().as_runs().unwrap());
    // The writer lays the partition's blocks out from the header on: positions, then ordinals.
    let positions_at = 32;
    let ordinals_at = positions_at + position_bytes + 4;
    let blocks = [
        (positions_at, position_bytes, true),
        (ordinals_at, ordinal_bytes, false),
    ];
    let (mut refused, mut read) = (0, 0);
    for (block_at, block_len, is_positions) in blocks {
        for at in block_at..block_at + block_len {
            for mask in [0x01u8, 0x10, 0x80, 0xff] {
                let mut bytes = written.bytes.clone();
                bytes[at] ^= mask;
                // With its crc as written, the flip is a checksum error at the block.
                let reader = SegmentReader::open(PATH, bytes.clone()).unwrap();
                let got = if is_positions {
                    reader.positions(0).map(|_| ())
                } else {
                    reader.ordinals(0).map(|_| ())
                };
                match got {
                    Err(SegmentError::Checksum { offset, .. }) => {
                        assert_eq!(offset, block_at as u64);
                    }
                    other => panic!("flip at {at}: {other:?}"),
                }
                fuzzing::reseal(&mut bytes);
                let reader = SegmentReader::open(PATH, bytes).unwrap();
                let sequence = if is_positions {
                    reader.positions(0)
                } else {
                    reader.ordinals(0)
                };
                match sequence {
                    Err(SegmentError::Malformed { path, offset, .. }) => {
                        assert_eq!(path, PATH);
                        let offset = usize::try_from(offset).unwrap();
                        assert!(
                            (block_at..block_at + block_len).contains(&offset),
                            "flip at {at} refused at {offset}"
                        );
                        refused += 1;
                    }
                    Ok(sequence) => {
                        let (want, strict) = if is_positions {
                            (&part.positions, false)
                        } else {
                            (&part.ordinals, true)
                        };
                        let values: Vec<u64> = sequence.iter().collect();
                        assert_eq!(values.len(), want.len(), "flip at {at}");
                        assert_eq!(values.first(), want.first());
                        assert_eq!(values.last(), want.last());
                        assert!(
                            values.windows(2).all(|w| if strict {
                                w[0] < w[1]
                            } else {
                                w[0] <= w[1]
                            }),
                            "flip at {at} reads out of order: {values:?}"
                        );
                        read += 1;
                    }
                    Err(other) => panic!("flip at {at}: {other:?}"),
                }
            }
        }
    }
    // Most flips break a promise; a flip of a run's interior start or step may not (a crc is
    // what catches those), and both kinds occur.
    assert!(refused > read && read > 0, "{refused} refused, {read} read");
}

#[test]
fn run_blocks_are_refused_in_a_version_1_file_and_unknown_versions_are_refused() {
    let written = write(&[store_shaped(3, 3, 1)]);
    for (version, opens) in [
        (1u32, false),
        (2, true),
        (3, true),
        (4, true),
        (5, true),
        (6, true),
        (7, true),
        (8, true),
        (9, false),
        (0, false),
    ] {
        let mut bytes = written.bytes.clone();
        bytes[8..12].copy_from_slice(&version.to_le_bytes());
        fuzzing::reseal(&mut bytes);
        match SegmentReader::open(PATH, bytes) {
            Ok(reader) => {
                assert!(opens, "version {version} opened");
                reader.verify_all().unwrap();
            }
            Err(SegmentError::Malformed { offset, what, .. }) => {
                assert!(!opens, "version {version}: {what}");
                if version == 1 {
                    // The first block record, after the directory's header and one partition.
                    assert!(what.contains("Runs"), "{what}");
                    assert!(offset > 32, "{offset}");
                } else {
                    assert_eq!(offset, 8, "{what}");
                }
            }
            Err(other) => panic!("version {version}: {other:?}"),
        }
    }
}

#[test]
fn levels_stored_from_a_level_are_read_from_version_3_on_and_held_to_the_levels() {
    let written = write(&[store_shaped(3, 3, 1)]);
    let n_levels = written.partitions[0].n_levels;
    assert!(n_levels >= 1, "the partition has levels");
    // The first partition record follows the directory's 16-byte header; `stored_from` is its
    // byte 90 (docs/format.md).
    let len = written.bytes.len();
    let dir_offset = u64::from_le_bytes(written.bytes[len - 32..len - 24].try_into().unwrap());
    let at = usize::try_from(dir_offset).unwrap() + 16 + 90;
    assert_eq!(
        written.bytes[at], 0,
        "a barrier written whole stores from level 0"
    );
    for (version, stored_from, opens) in [
        (3u32, 1u8, true),
        (3, n_levels, true),
        (3, n_levels + 1, false),
        (2, 1, false),
        (2, 0, true),
    ] {
        let mut bytes = written.bytes.clone();
        bytes[8..12].copy_from_slice(&version.to_le_bytes());
        bytes[at] = stored_from;
        fuzzing::reseal(&mut bytes);
        match SegmentReader::open(PATH, bytes) {
            Ok(reader) => {
                assert!(
                    opens,
                    "version {version}, stored from {stored_from}: opened"
                );
                assert_eq!(reader.partitions()[0].stored_from, stored_from);
                // Beneath `stored_from` a level's cells need not fold every row; above, they do.
                reader.verify_all().unwrap();
            }
            Err(SegmentError::Malformed { what, .. }) => {
                assert!(
                    !opens,
                    "version {version}, stored from {stored_from}: {what}"
                );
                assert!(what.contains("levels stored from"), "{what}");
            }
            Err(other) => panic!("version {version}: {other:?}"),
        }
    }
}

/// A chain — several records of one cell, a non-suffix merge's partial cells — is read back
/// link by link from version 4 on; a chain whose second link begins before the first ends is
/// malformed, and so is any repeated cell in a version 3 file.
#[test]
fn chains_are_read_from_version_4_on_in_axis_order_and_refused_before() {
    let mut part = store_shaped(3, 3, 1);
    let axis = part.axis.clone().unwrap();
    let Values::F64(values) = part.columns[0].1.clone() else {
        panic!("an f64 column");
    };
    let (field, _, levels) = &mut part.cells[0];
    let field = *field;
    // Nine rows on a 16-wide grid: one cell, level 0, which becomes two links.
    assert_eq!((levels.len(), levels[0].len()), (1, 1));
    let link = |rows: std::ops::Range<usize>| {
        rows.map(|i| Bucket::of_row(field, axis[i], Num::F64(values[i])))
            .reduce(|a, b| a.merge(&b))
            .unwrap()
    };
    let links = [link(0..4), link(4..9)];
    levels[0] = links
        .iter()
        .map(|&bucket| Cell { index: 0, bucket })
        .collect();
    let written = write(std::slice::from_ref(&part));
    let reader = SegmentReader::open(PATH, written.bytes.clone()).unwrap();
    reader.verify_all().unwrap();
    let read: Vec<Bucket> = reader
        .cells(0, field, 0, 0..=0)
        .unwrap()
        .into_iter()
        .map(|c| c.bucket)
        .collect();
    assert_eq!(read, links);
    // The first link's record: field, level 0, kind 3 (f64), reserved, index 0, then its first
    // point (axis 0, the first value).
    let mut head = Vec::new();
    head.extend(field.to_le_bytes());
    head.extend([0, 3, 0, 0, 0, 0]);
    head.extend(0u64.to_le_bytes());
    head.extend(0u64.to_le_bytes());
    head.extend(values[0].to_le_bytes());
    let at = written
        .bytes
        .windows(head.len())
        .position(|w| w == head.as_slice())
        .expect("the first link's record");
    let refused = |bytes: Vec<u8>, wanted: &str| match SegmentReader::open(PATH, bytes)
        .and_then(|reader| reader.verify_all())
    {
        Err(SegmentError::Malformed { what, .. }) => assert!(what.contains(wanted), "{what}"),
        other => panic!("opened: {other:?}"),
    };
    let mut swapped = written.bytes.clone();
    let (first, second) = swapped[at..at + 208].split_at_mut(104);
    first.swap_with_slice(second);
    fuzzing::reseal(&mut swapped);
    refused(swapped, "a chain's link begins before");
    let mut version_3 = written.bytes.clone();
    version_3[8..12].copy_from_slice(&3u32.to_le_bytes());
    fuzzing::reseal(&mut version_3);
    refused(version_3, "cells out of order");
}
