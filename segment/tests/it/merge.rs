//! A partition merged from other segments (`SegmentWriter::write_merged_rows`, compaction's
//! writer) reads back as the rows of its inputs one after the other, whatever cuts the inputs
//! had; packed chunks an input holds whole move into the output byte for byte; small chunks are
//! gathered; and inputs that do not follow one another, or do not read, are an error, never a
//! panic or a wrong file.

use proptest::prelude::*;
use strata_index::TrackKey;
use strata_segment::{
    Axis, Column, MergeSource, MergeWriteError, SegmentError, SegmentReader, SegmentWriter,
    WrittenSegment, fuzzing,
};

use crate::generate::{Part, Values, build};
use crate::roundtrip::{assert_reads_back, write};

/// Rows a chunk holds (`format::PACK_ROWS`), restated so the test fails if it changes unseen.
const CHUNK: usize = 10_000;

/// xorshift64*: rows from a seed, so a case is a few numbers and shrinks as such.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// One partition of `n` rows with every column kind: an axis of irregular steps, a rounded
/// f64 walk and an i64 counter (both pack), a random u64 (stays plain), text and bytes.
fn whole(n: usize, seed: u64) -> Part {
    let mut rng = Rng(seed | 1);
    let (mut axis_now, mut walk) = (1_000u64, 0.0f64);
    let mut axis = Vec::with_capacity(n);
    let mut positions = Vec::with_capacity(n);
    let mut walks = Vec::with_capacity(n);
    let mut randoms = Vec::with_capacity(n);
    let mut texts = Vec::with_capacity(n);
    let mut bytes = Vec::with_capacity(n);
    let mut position = 5;
    for row in 0..n {
        axis_now += rng.next() % 3 * 500;
        axis.push(axis_now);
        if rng.next().is_multiple_of(64) {
            position += 1 + rng.next() % 3;
        }
        positions.push(position);
        walk += (rng.next() % 2001) as f64 / 1000.0 - 1.0;
        walks.push((walk * 100.0).round() / 100.0);
        randoms.push(rng.next());
        texts.push(format!("r{}", row % 7));
        bytes.push(vec![0u8, 0xff, (row % 251) as u8]);
    }
    let counter: Vec<i64> = (0..i64::try_from(n).unwrap())
        .map(|i| 3 * i - 1_000)
        .collect();
    build(
        "s".into(),
        TrackKey::encode(&["probe", "7"]).unwrap(),
        positions,
        (0..n as u64).map(|i| 2 * i + 1).collect(),
        Some(axis),
        vec![
            (2, Values::F64(walks)),
            (3, Values::I64(counter)),
            (4, Values::U64(randoms)),
            (5, Values::Str(texts)),
            (6, Values::Bytes(bytes)),
        ],
    )
}

/// Rows `rows` of `part`, as a partition of their own (its cells folded from those rows).
fn slice(part: &Part, rows: std::ops::Range<usize>) -> Part {
    let columns = part
        .columns
        .iter()
        .map(|(field, values)| {
            let values = match values {
                Values::U64(v) => Values::U64(v[rows.clone()].to_vec()),
                Values::I64(v) => Values::I64(v[rows.clone()].to_vec()),
                Values::F64(v) => Values::F64(v[rows.clone()].to_vec()),
                Values::Str(v) => Values::Str(v[rows.clone()].to_vec()),
                Values::Bytes(v) => Values::Bytes(v[rows.clone()].to_vec()),
            };
            (*field, values)
        })
        .collect();
    build(
        part.stream.clone(),
        part.track.clone(),
        part.positions[rows.clone()].to_vec(),
        part.ordinals[rows.clone()].to_vec(),
        part.axis.as_ref().map(|a| a[rows].to_vec()),
        columns,
    )
}

/// Each input written to a segment of its own, then merged into one (with `cells_of`'s cells).
fn merge(inputs: &[Part], cells_of: &Part, packing: bool) -> WrittenSegment {
    let files: Vec<WrittenSegment> = inputs
        .iter()
        .map(|p| write(std::slice::from_ref(p)))
        .collect();
    let readers: Vec<SegmentReader<Vec<u8>>> = files
        .iter()
        .enumerate()
        .map(|(i, f)| SegmentReader::open(&format!("seg/{i}.seg"), f.bytes.clone()).unwrap())
        .collect();
    merge_readers(&readers, cells_of, packing).unwrap()
}

fn merge_readers(
    readers: &[SegmentReader<Vec<u8>>],
    cells_of: &Part,
    packing: bool,
) -> Result<WrittenSegment, MergeWriteError> {
    let sources: Vec<MergeSource<'_, Vec<u8>>> = readers
        .iter()
        .map(|reader| MergeSource {
            reader,
            part_idx: 0,
        })
        .collect();
    let mut writer = SegmentWriter::new().packing(packing);
    let rows = writer.write_merged_rows(&sources)?;
    assert_eq!(rows.n_rows, cells_of.positions.len() as u64);
    writer
        .write_cells(&cells_of.input().cells, 0)
        .map_err(MergeWriteError::Write)?;
    Ok(writer.finish())
}

/// The input cut at `cuts` (row indexes, any order, repeats and ends ignored).
fn cut(part: &Part, cuts: &[usize]) -> Vec<Part> {
    let n = part.positions.len();
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % n).filter(|&c| c > 0).collect();
    bounds.push(0);
    bounds.push(n);
    bounds.sort_unstable();
    bounds.dedup();
    bounds.windows(2).map(|w| slice(part, w[0]..w[1])).collect()
}

/// The chunk row ranges of every packed block of partition 0: they must agree.
fn chunking(reader: &SegmentReader<Vec<u8>>) -> Option<Vec<std::ops::Range<usize>>> {
    let mut seen: Option<Vec<std::ops::Range<usize>>> = None;
    let mut packed = Vec::new();
    if let Some(Axis::Packed(p)) = reader.axis(0).unwrap() {
        packed.push(p);
    }
    for &(field, _) in &reader.partitions()[0].columns {
        if let Some(Column::Packed(p)) = reader.column(0, field).unwrap() {
            packed.push(p);
        }
    }
    for p in packed {
        let rows: Vec<_> = (0..p.chunks()).map(|c| p.chunk_rows(c)).collect();
        assert!(rows.iter().all(|r| r.len() <= CHUNK));
        if let Some(seen) = &seen {
            assert_eq!(*seen, rows, "packed blocks of one partition chunked alike");
        }
        seen = Some(rows);
    }
    seen
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_merge_reads_back_as_its_inputs_one_after_the_other(
        n in prop_oneof![1usize..40, 40usize..3 * CHUNK],
        seed in any::<u64>(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        packing in prop_oneof![4 => Just(true), 1 => Just(false)],
    ) {
        let part = whole(n, seed);
        let inputs = cut(&part, &cuts);
        let merged = merge(&inputs, &part, packing);
        let reader = SegmentReader::open("seg/merged.seg", merged.bytes.clone()).unwrap();
        assert_reads_back(&reader, std::slice::from_ref(&part));
        let chunks = chunking(&reader);
        prop_assert_eq!(chunks.is_some(), packing && n >= 16, "packed iff packing");
        // What the fuzz target checks of any segment holds of a merged one.
        fuzzing::segment(&merged.bytes);
    }
}

#[test]
fn whole_chunks_move_byte_for_byte_and_small_ones_are_gathered() {
    let part = whole(3 * CHUNK + 500, 42);
    // Two inputs of whole chunks (10,000 and 10,000 + 10,000 + 500 rows), then the last 500
    // rows as 50 barriers of 10 rows.
    let mut inputs = vec![slice(&part, 0..CHUNK), slice(&part, CHUNK..3 * CHUNK)];
    for start in (3 * CHUNK..3 * CHUNK + 500).step_by(10) {
        inputs.push(slice(&part, start..start + 10));
    }
    let merged = merge(&inputs, &part, true);
    let reader = SegmentReader::open("seg/merged.seg", merged.bytes.clone()).unwrap();
    assert_reads_back(&reader, std::slice::from_ref(&part));
    let chunks = chunking(&reader).unwrap();
    // The three whole chunks stay as they were; the fifty barriers of 10 rows become one.
    assert_eq!(
        chunks,
        vec![
            0..CHUNK,
            CHUNK..2 * CHUNK,
            2 * CHUNK..3 * CHUNK,
            3 * CHUNK..3 * CHUNK + 500
        ]
    );
    // Every whole input chunk's pco bytes are in the output as they were in the input.
    let first = write(std::slice::from_ref(&inputs[0]));
    let input_reader = SegmentReader::open("seg/in.seg", first.bytes.clone()).unwrap();
    for field in [2u16, 3] {
        let Some(Column::Packed(p)) = input_reader.column(0, field).unwrap() else {
            panic!("field {field} packs");
        };
        assert_eq!(p.chunks(), 1);
        let block_bytes = p.chunk_pco_bytes(0);
        assert!(
            merged
                .bytes
                .windows(block_bytes.len())
                .any(|w| w == block_bytes),
            "field {field}'s chunk moved as it was"
        );
    }
    // The output costs less than its inputs did: chunks moved, fifty small ones made one.
    let column_bytes = |bytes: &[u8]| {
        let reader = SegmentReader::open("seg/y.seg", bytes.to_vec()).unwrap();
        let info = &reader.partitions()[0];
        info.entry.len
    };
    let inputs_total: u64 = inputs
        .iter()
        .map(|p| column_bytes(&write(std::slice::from_ref(p)).bytes))
        .sum();
    assert!(column_bytes(&merged.bytes) < inputs_total);
}

#[test]
fn inputs_that_do_not_follow_one_another_are_refused_not_merged() {
    let part = whole(300, 9);
    let a = write(&[slice(&part, 0..100)]);
    let b = write(&[slice(&part, 100..300)]);
    let readers = [
        SegmentReader::open("seg/1.seg", b.bytes.clone()).unwrap(),
        SegmentReader::open("seg/2.seg", a.bytes.clone()).unwrap(),
    ];
    let refused = merge_readers(&readers, &part, true).unwrap_err();
    match refused {
        MergeWriteError::Read(SegmentError::Mismatch { path, what }) => {
            assert_eq!(path, "seg/2.seg");
            assert!(what.contains("does not follow"), "{what}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_input_chunk_that_does_not_decode_is_a_read_error_naming_its_file() {
    let part = whole(2 * CHUNK, 3);
    // Small inputs, so that their chunks are decoded to be gathered.
    let inputs: Vec<Part> = (0..4).map(|i| slice(&part, i * 50..(i + 1) * 50)).collect();
    let mut files: Vec<Vec<u8>> = inputs
        .iter()
        .map(|p| write(std::slice::from_ref(p)).bytes)
        .collect();
    // Break the f64 column's pco header in the third input, then reseal every checksum, so the
    // damage passes them and reaches the decoder.
    let target = {
        let reader = SegmentReader::open("seg/2.seg", files[2].clone()).unwrap();
        let Some(Column::Packed(p)) = reader.column(0, 2).unwrap() else {
            panic!("packed");
        };
        let pco = p.chunk_pco_bytes(0);
        // The chunk's first bytes, pco's own header: changed values in its middle would still
        // be numbers (the crc is what catches those, and this test resealed it on purpose).
        files[2].windows(pco.len()).position(|w| w == pco).unwrap()
    };
    for delta in 0..8 {
        files[2][target + delta] ^= 0x5a;
    }
    fuzzing::reseal(&mut files[2]);
    let readers: Vec<SegmentReader<Vec<u8>>> = files
        .iter()
        .enumerate()
        .map(|(i, f)| SegmentReader::open(&format!("seg/{i}.seg"), f.clone()).unwrap())
        .collect();
    let whole_inputs = slice(&part, 0..200);
    match merge_readers(&readers, &whole_inputs, true) {
        Err(MergeWriteError::Read(e)) => assert!(e.to_string().contains("seg/2.seg"), "{e}"),
        Ok(_) => panic!("damaged pco bytes merged as if they were data"),
        Err(other) => panic!("{other:?}"),
    }
}
