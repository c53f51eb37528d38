//! Bad bytes are an error naming the file and offset — never different data, never a panic.

use proptest::prelude::*;
use strata_segment::{SegmentError, SegmentReader};

use crate::generate::{Part, parts};
use crate::roundtrip::write;

const PATH: &str = "seg/000000000003.seg";

/// Every read the reader offers over every partition, as comparable text or the error.
fn read_everything(
    reader: &SegmentReader<Vec<u8>>,
    parts: &[Part],
) -> Vec<Result<String, SegmentError>> {
    let mut out = Vec::new();
    for (idx, part) in parts.iter().enumerate() {
        out.push(reader.positions(idx).map(|v| format!("{v:?}")));
        out.push(reader.ordinals(idx).map(|v| format!("{v:?}")));
        // Packed blocks are decoded, so what is compared is the values (a chunk that did not
        // decode would be an error here).
        out.push(
            reader
                .axis(idx)
                .and_then(|a| a.map(|a| a.values(0..a.len())).transpose())
                .map(|v| format!("{v:?}")),
        );
        for (field, _) in &part.columns {
            out.push(reader.column(idx, *field).and_then(|c| {
                let numbers = c.map(|c| c.numbers(0..c.len())).transpose()?;
                Ok(match numbers.flatten() {
                    Some(numbers) => format!("{numbers:?}"),
                    None => format!("{c:?}"),
                })
            }));
        }
        for (field, _, levels) in &part.cells {
            for level in 0..levels.len() {
                out.push(
                    reader
                        .cells(idx, *field, level as u8, 0..=u64::MAX)
                        .map(|c| format!("{c:?}")),
                );
            }
        }
    }
    out
}

pub fn check_every_flip(parts: &[Part], mask: u8) {
    let written = write(parts);
    let clean_reader = SegmentReader::open(PATH, written.bytes.clone()).unwrap();
    let clean: Vec<String> = read_everything(&clean_reader, parts)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    for flip_at in 0..written.bytes.len() {
        let mut bytes = written.bytes.clone();
        bytes[flip_at] ^= mask;
        let reader = match SegmentReader::open(PATH, bytes) {
            Err(error) => {
                assert_checksum_at(&error, flip_at);
                continue;
            }
            Ok(reader) => reader,
        };
        let mut failed = 0;
        for (got, want) in read_everything(&reader, parts).into_iter().zip(&clean) {
            match got {
                Ok(text) => assert_eq!(&text, want, "byte {flip_at} changed data"),
                Err(error) => {
                    assert_checksum_at(&error, flip_at);
                    failed += 1;
                }
            }
        }
        // Every byte is covered: if open passed, some read of the block holding it failed, and
        // so does a full verification.
        assert!(
            failed > 0,
            "flipping byte {flip_at} went unnoticed by every read"
        );
        assert_checksum_at(&reader.verify_all().unwrap_err(), flip_at);
    }
}

fn assert_checksum_at(error: &SegmentError, flip_at: usize) {
    match error {
        SegmentError::Checksum {
            path,
            offset,
            expected,
            got,
            ..
        } => {
            assert_eq!(path, PATH);
            assert!(
                *offset <= flip_at as u64,
                "error at {offset} for a flip at {flip_at}"
            );
            assert_ne!(expected, got);
            let text = error.to_string();
            assert!(
                text.contains(PATH) && text.contains(&offset.to_string()),
                "{text}"
            );
        }
        other => panic!("flipping byte {flip_at} gave {other:?}, not a checksum error"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn flipping_any_byte_is_a_checksum_error(parts in parts(), mask in 1u8..=255) {
        check_every_flip(&parts, mask);
    }

    #[test]
    fn truncating_at_any_length_is_an_error(parts in parts()) {
        let written = write(&parts);
        for len in 0..written.bytes.len() {
            let cut = written.bytes[..len].to_vec();
            prop_assert!(SegmentReader::open(PATH, cut).is_err(), "a file cut at {} opened", len);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = SegmentReader::open(PATH, bytes);
    }
}
