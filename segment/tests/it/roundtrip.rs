//! Everything written comes back exactly, through the same reader the engine uses.

use proptest::prelude::*;
use strata_segment::vfs::{RealFs, Vfs};
use strata_segment::{Column, SegmentReader, SegmentWriter, WrittenSegment, write_two_phase};

use crate::generate::{Part, Values, parts};

pub fn write(parts: &[Part]) -> WrittenSegment {
    let mut writer = SegmentWriter::new();
    for part in parts {
        writer.add_partition(&part.input());
    }
    writer.finish()
}

/// Reads every column and cell of every partition and checks it against what was written.
pub fn assert_reads_back<B: std::ops::Deref<Target = [u8]>>(
    reader: &SegmentReader<B>,
    parts: &[Part],
) {
    assert_eq!(reader.partitions().len(), parts.len());
    for part in parts {
        let idx = reader
            .find(&part.stream, &part.track)
            .expect("partition present");
        let info = &reader.partitions()[idx];
        assert_eq!(info.entry.n_rows, part.positions.len() as u64);
        assert_eq!(
            info.entry.positions,
            [part.positions[0], *part.positions.last().unwrap()]
        );
        assert_eq!(
            info.entry.ordinals,
            [part.ordinals[0], *part.ordinals.last().unwrap()]
        );
        let got: Vec<u64> = reader.positions(idx).unwrap().iter().collect();
        assert_eq!(got, part.positions);
        let got: Vec<u64> = reader.ordinals(idx).unwrap().iter().collect();
        assert_eq!(got, part.ordinals);
        let got = reader
            .axis(idx)
            .unwrap()
            .map(|a| a.values(0..a.len()).unwrap());
        assert_eq!(got, part.axis);
        for (field, values) in &part.columns {
            let column = reader.column(idx, *field).unwrap().expect("column present");
            // Packed or plain, a numeric column reads back as the same numbers.
            let decoded = column.numbers(0..column.len()).unwrap();
            let column = decoded
                .as_ref()
                .map_or(column, strata_segment::Decoded::column);
            match (column, values) {
                (Column::U64(c), Values::U64(v)) => {
                    assert_eq!(c.iter().map(|x| x.get()).collect::<Vec<_>>(), *v);
                }
                (Column::I64(c), Values::I64(v)) => {
                    assert_eq!(c.iter().map(|x| x.get()).collect::<Vec<_>>(), *v);
                }
                (Column::F64(c), Values::F64(v)) => {
                    let bits: Vec<u64> = c.iter().map(|x| x.get().to_bits()).collect();
                    assert_eq!(bits, v.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
                }
                (Column::Str(c), Values::Str(v)) => {
                    let got: Vec<&[u8]> = (0..c.len()).map(|i| c.get(i).unwrap()).collect();
                    assert_eq!(got, v.iter().map(String::as_bytes).collect::<Vec<_>>());
                }
                (Column::Bytes(c), Values::Bytes(v)) => {
                    let got: Vec<&[u8]> = (0..c.len()).map(|i| c.get(i).unwrap()).collect();
                    assert_eq!(got, v.iter().map(Vec::as_slice).collect::<Vec<_>>());
                }
                (column, values) => panic!("kind mismatch: {column:?} vs {values:?}"),
            }
        }
        assert_eq!(
            info.measured,
            part.cells
                .iter()
                .map(|(f, k, _)| (*f, *k))
                .collect::<Vec<_>>()
        );
        for (field, _, levels) in &part.cells {
            for (level, cells) in levels.iter().enumerate() {
                let level = level as u8;
                assert_eq!(
                    &reader.cells(idx, *field, level, 0..=u64::MAX).unwrap(),
                    cells
                );
                // A sub-range by binary search equals the filter of the full list.
                if let (Some(first), Some(last)) = (cells.first(), cells.last()) {
                    let (lo, hi) = (
                        first.index + 1,
                        last.index.saturating_sub(1).max(first.index + 1),
                    );
                    let want: Vec<_> = cells
                        .iter()
                        .filter(|c| (lo..=hi).contains(&c.index))
                        .copied()
                        .collect();
                    assert_eq!(reader.cells(idx, *field, level, lo..=hi).unwrap(), want);
                }
            }
            // A level beyond the stored ones has no cells.
            assert!(
                reader
                    .cells(idx, *field, levels.len() as u8, 0..=u64::MAX)
                    .unwrap()
                    .is_empty()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn segments_round_trip(parts in parts()) {
        let written = write(&parts);
        let claim = written.claim(9);
        let bytes = written.bytes.clone();
        let reader = SegmentReader::open("seg/000000000009.seg", bytes).unwrap();
        assert_reads_back(&reader, &parts);
        reader.verify_all().unwrap();
        prop_assert_eq!(reader.digest(), written.digest);
        // The claim describes the file as the reader sees it.
        prop_assert_eq!(claim.len, written.bytes.len() as u64);
        prop_assert_eq!(claim.digest, crc32c::crc32c(&written.bytes[..written.bytes.len() - 8]));
        for (entry, info) in claim.partitions.iter().zip(reader.partitions()) {
            prop_assert_eq!(entry, &info.entry);
        }
    }

    #[test]
    fn position_ranges_by_binary_search_match_a_filter(parts in parts(), lo in 0u64..1_000_200, width in 0u64..3000) {
        let written = write(&parts);
        let reader = SegmentReader::open("x.seg", written.bytes).unwrap();
        for (idx, part) in parts.iter().enumerate() {
            let idx = reader.find(&part.stream, &part.track).unwrap_or(idx);
            let hi = lo.saturating_add(width);
            let range = reader.position_range(idx, lo, hi).unwrap();
            let want: Vec<usize> = (0..part.positions.len())
                .filter(|&i| (lo..=hi).contains(&part.positions[i]))
                .collect();
            prop_assert_eq!(range.collect::<Vec<_>>(), want);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// The same round trip through the real file system: two-phase write, then a memory map.
    #[test]
    fn segments_round_trip_through_a_real_mapped_file(parts in parts()) {
        let dir = tempfile::tempdir().unwrap();
        let fs = RealFs::open(dir.path()).unwrap();
        for sub in ["seg", "tmp"] {
            fs.create_dir(sub).unwrap();
        }
        let written = write(&parts);
        let path = write_two_phase(&fs, "seg", "000000000001.seg", &written.bytes).unwrap();
        let reader = SegmentReader::open(&path, fs.map(&path).unwrap()).unwrap();
        assert_reads_back(&reader, &parts);
        reader.verify_all().unwrap();
        prop_assert!(!fs.exists("tmp/000000000001.seg").unwrap());
    }
}
