//! Validity blocks (format 7): a column's null rows written, read back, merged, and refused by
//! name when their bytes say something a writer never writes.

use std::ops::Range;

use proptest::prelude::*;
use strata_index::TrackKey;
use strata_segment::format::{BlockKind, BlockRecord, DirHeader, Footer, PartitionRecord};
use strata_segment::{
    ColumnData, MergeSource, PartitionInput, SegmentError, SegmentReader, SegmentWriter, fuzzing,
};
use zerocopy::FromBytes;

/// The runs of `true` flags, found here with a plain loop.
fn runs_of(flags: &[bool]) -> Vec<Range<u64>> {
    let mut runs = Vec::new();
    let mut row = 0;
    while row < flags.len() {
        if flags[row] {
            let start = row;
            while row < flags.len() && flags[row] {
                row += 1;
            }
            runs.push(start as u64..row as u64);
        } else {
            row += 1;
        }
    }
    runs
}

/// One partition of `flags.len()` rows whose f64 column (field 2) is null where `flags` says,
/// its rows starting at ordinal `first`.
fn segment(flags: &[bool], first: u64, packing: bool) -> Vec<u8> {
    let n = flags.len() as u64;
    let track = TrackKey::encode(&["a"]).unwrap();
    let positions: Vec<u64> = (first..first + n).collect();
    let axis: Vec<u64> = (first..first + n).map(|i| i * 3).collect();
    let values: Vec<f64> = (first..first + n).map(|i| (i % 17) as f64).collect();
    let runs = runs_of(flags);
    let mut writer = SegmentWriter::new().packing(packing);
    writer.add_partition(&PartitionInput {
        stream: "s",
        track: &track,
        positions: &positions,
        ordinals: &positions,
        axis: Some(&axis),
        columns: vec![(2, ColumnData::F64(&values))],
        nulls: vec![(2, &runs)],
        cells: Vec::new(),
        stored_from: 0,
    });
    writer.finish().bytes
}

fn read_nulls(bytes: Vec<u8>) -> Result<Vec<Range<u64>>, SegmentError> {
    let reader = SegmentReader::open("seg/1.seg", bytes)?;
    let nulls = reader.nulls(0, 2)?;
    Ok(nulls.runs().to_vec())
}

/// Where the partition's validity block's payload lies in `bytes`.
fn validity_payload(bytes: &[u8]) -> Option<Range<usize>> {
    let footer = Footer::read_from_bytes(&bytes[bytes.len() - 32..]).ok()?;
    let dir = footer.dir_offset.get() as usize;
    let (header, rest) = DirHeader::read_from_prefix(&bytes[dir..]).ok()?;
    let records = &rest[header.n_partitions.get() as usize * size_of::<PartitionRecord>()..];
    records
        .chunks_exact(size_of::<BlockRecord>())
        .take(header.n_blocks.get() as usize)
        .filter_map(|r| BlockRecord::read_from_bytes(r).ok())
        .find(|r| r.kind == BlockKind::Validity as u8)
        .map(|r| r.offset.get() as usize..(r.offset.get() + r.len.get()) as usize)
}

proptest! {
    #[test]
    fn null_rows_come_back_as_written_and_a_merge_moves_them_past_the_rows_before(
        a in prop::collection::vec(prop::bool::weighted(0.2), 1..300),
        b in prop::collection::vec(prop::bool::weighted(0.2), 1..300),
        packing in any::<bool>(),
    ) {
        prop_assert_eq!(read_nulls(segment(&a, 0, packing)).unwrap(), runs_of(&a));
        let files = [segment(&a, 0, packing), segment(&b, a.len() as u64, packing)];
        let readers: Vec<SegmentReader<Vec<u8>>> = files
            .iter()
            .enumerate()
            .map(|(i, f)| SegmentReader::open(&format!("seg/{i}.seg"), f.clone()).unwrap())
            .collect();
        let sources: Vec<MergeSource<'_, Vec<u8>>> =
            readers.iter().map(|reader| MergeSource { reader, part_idx: 0 }).collect();
        let mut writer = SegmentWriter::new().packing(packing);
        writer.write_merged_rows(&sources).unwrap();
        writer.write_cells(&[], 0).unwrap();
        let merged = writer.finish().bytes;
        let both: Vec<bool> = a.iter().chain(&b).copied().collect();
        prop_assert_eq!(read_nulls(merged).unwrap(), runs_of(&both));
    }

    /// Every byte of a validity block changed (its checksums made good again, as a fuzzer
    /// does) reads as the same nulls or is refused naming the file: never other nulls that
    /// the block's own checks could have caught, and never a panic.
    #[test]
    fn a_changed_validity_byte_is_refused_or_reads_as_runs_inside_the_rows(
        flags in prop::collection::vec(prop::bool::weighted(0.3), 2..200),
        at in any::<prop::sample::Index>(),
        to in any::<u8>(),
    ) {
        prop_assume!(flags.iter().any(|&f| f));
        let mut bytes = segment(&flags, 0, false);
        let payload = validity_payload(&bytes).unwrap();
        let at = payload.start + at.index(payload.len());
        prop_assume!(bytes[at] != to);
        bytes[at] = to;
        fuzzing::reseal(&mut bytes);
        match read_nulls(bytes) {
            Ok(runs) => {
                prop_assert!(runs.iter().all(|r| r.start < r.end && r.end <= flags.len() as u64));
                prop_assert!(runs.windows(2).all(|w| w[0].end < w[1].start));
                let held: u64 = runs.iter().map(|r| r.end - r.start).sum();
                prop_assert_eq!(held, flags.iter().filter(|&&f| f).count() as u64);
            }
            Err(SegmentError::Malformed { path, what, .. }) => {
                prop_assert_eq!(path, "seg/1.seg");
                prop_assert!(what.contains("validity"), "{}", what);
            }
            Err(other) => prop_assert!(false, "{other}"),
        }
    }
}

#[test]
fn a_column_without_a_null_has_no_validity_block() {
    let bytes = segment(&[false; 50], 0, true);
    assert_eq!(validity_payload(&bytes), None);
    assert_eq!(read_nulls(bytes).unwrap(), Vec::<Range<u64>>::new());
}
