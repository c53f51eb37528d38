//! Packed blocks (format 5): the axis and numeric columns in pco chunks, read back exactly,
//! decoded a chunk at a time, and never a panic on bytes that pass the checksum but do not
//! decode.

use strata_index::TrackKey;
use strata_segment::{Axis, Column, Decoded, SegmentError, SegmentReader, fuzzing};

use crate::generate::{Part, Values, build};
use crate::roundtrip::{assert_reads_back, write};

const PATH: &str = "seg/000000000007.seg";
/// Rows a chunk holds (`format::PACK_ROWS`), restated so the test fails if it changes unseen.
const CHUNK: usize = 10_000;

/// The sensor data set, `n` rows: `t` in µs at 1 kHz, `v` = 100 sin to 4 decimals,
/// `temp` a slow sine to 3 decimals, and a counter.
fn sensor(n: usize, with_axis: bool) -> Part {
    let t: Vec<u64> = (0..n as u64).map(|i| 1_000_000 + i * 1000).collect();
    let v: Vec<f64> = (0..n)
        .map(|i| (100.0 * (i as f64 / 50.0).sin() * 1e4).round() / 1e4)
        .collect();
    let temp: Vec<f64> = (0..n)
        .map(|i| (20.0 + 5.0 * (i as f64 / 5000.0).sin() * 1e3).round() / 1e3)
        .collect();
    let count: Vec<i64> = (0..i64::try_from(n).unwrap()).map(|i| i * 3 - 7).collect();
    build(
        "s".into(),
        TrackKey::encode(&["probe"]).unwrap(),
        (0..n as u64).map(|i| 10 + i / 100).collect(),
        (0..n as u64).collect(),
        with_axis.then_some(t),
        vec![
            (2, Values::F64(v)),
            (3, Values::F64(temp)),
            (4, Values::I64(count)),
        ],
    )
}

fn packed(column: Column<'_>) -> strata_segment::Packed<'_> {
    match column {
        Column::Packed(packed) => packed,
        other => panic!("a plain column where a packed one was due: {other:?}"),
    }
}

#[test]
fn packed_blocks_of_many_chunks_read_back_and_decode_only_the_chunks_a_range_touches() {
    let n = 2 * CHUNK + 3;
    let part = sensor(n, true);
    let parts = [part];
    let written = write(&parts);
    let reader = SegmentReader::open(PATH, written.bytes.clone()).unwrap();
    assert_reads_back(&reader, &parts);

    let Some(Axis::Packed(axis)) = reader.axis(0).unwrap() else {
        panic!("the axis is packed");
    };
    assert_eq!((axis.len(), axis.chunks()), (n, 3));
    assert_eq!(axis.chunk_rows(1), CHUNK..2 * CHUNK);
    let Values::F64(v) = &parts[0].columns[0].1 else {
        unreachable!()
    };
    let column = packed(reader.column(0, 2).unwrap().unwrap());
    for rows in [
        0..1,
        5..CHUNK + 5,
        CHUNK - 1..CHUNK + 1,
        2 * CHUNK..n,
        0..n,
        7..7,
    ] {
        let Decoded::F64(got) = column.decode(rows.clone()).unwrap() else {
            panic!("v decodes as f64");
        };
        let got: Vec<u64> = got.iter().map(|x| x.get().to_bits()).collect();
        let want: Vec<u64> = v[rows.clone()].iter().map(|x| x.to_bits()).collect();
        assert_eq!(got, want, "rows {rows:?}");
    }
    // Runs stop at a chunk's end, so a read decodes one chunk of each block at a time.
    for (row, end) in [
        (0, CHUNK),
        (CHUNK - 1, CHUNK),
        (CHUNK, 2 * CHUNK),
        (n - 1, n),
    ] {
        assert_eq!(reader.chunk_end(0, row).unwrap(), end, "row {row}");
    }
    // Searches of the packed axis answer as a search of the values does.
    let t = parts[0].axis.clone().unwrap();
    let axis = Axis::Packed(axis);
    for value in [
        0,
        t[0],
        t[0] + 1,
        t[CHUNK - 1],
        t[CHUNK],
        t[CHUNK] + 500,
        t[n - 1],
        u64::MAX,
    ] {
        assert_eq!(
            axis.lower_bound(value).unwrap(),
            t.partition_point(|&a| a < value)
        );
        assert_eq!(
            axis.upper_bound(value).unwrap(),
            t.partition_point(|&a| a <= value)
        );
    }
    assert_eq!(
        axis.values(CHUNK - 2..CHUNK + 2).unwrap(),
        t[CHUNK - 2..CHUNK + 2]
    );
}

#[test]
fn the_sensor_data_set_packs_under_a_tenth_of_its_plain_bytes() {
    // No axis, so no cells: the file is the rows' blocks and the directory.
    let n = 3 * CHUNK;
    let written = write(&[sensor(n, false)]);
    let plain = n * 8 * 3;
    let len = written.bytes.len();
    assert!(len * 10 < plain, "{len} bytes for {plain} bytes of values");
}

#[test]
fn a_block_of_few_rows_stays_plain() {
    let written = write(&[sensor(15, true)]);
    let reader = SegmentReader::open(PATH, written.bytes).unwrap();
    assert!(matches!(reader.axis(0).unwrap(), Some(Axis::Plain(_))));
    assert!(matches!(reader.column(0, 2).unwrap(), Some(Column::F64(_))));
}

/// Every byte of a packed segment flipped and every checksum recomputed: whatever the decoder
/// is handed, it answers or names the file, and never panics.
#[test]
fn packed_bytes_that_pass_their_checksum_but_do_not_decode_are_an_error_naming_the_file() {
    let written = write(&[sensor(200, true)]);
    let mut malformed = 0;
    for flip_at in 0..written.bytes.len() {
        let mut bytes = written.bytes.clone();
        bytes[flip_at] ^= 0x5a;
        fuzzing::reseal(&mut bytes);
        let Ok(reader) = SegmentReader::open(PATH, bytes) else {
            continue;
        };
        let mut reads: Vec<Result<(), SegmentError>> = Vec::new();
        reads.push(
            reader
                .axis(0)
                .and_then(|a| a.map(|a| a.values(0..a.len())).transpose().map(|_| ())),
        );
        for field in [2, 3, 4] {
            reads.push(
                reader
                    .column(0, field)
                    .and_then(|c| c.map(|c| c.numbers(0..c.len())).transpose().map(|_| ())),
            );
        }
        for error in reads.into_iter().filter_map(Result::err) {
            let text = error.to_string();
            assert!(text.contains(PATH), "{text}");
            if text.contains("packed chunk") || text.contains("chunk") {
                malformed += 1;
            }
        }
    }
    assert!(malformed > 0, "no flip reached a decoder");
}
