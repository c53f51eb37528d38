use proptest::prelude::*;

use super::*;
use crate::lineage::{Lineage, LineageRun};
use crate::strategies::any_record;

/// Frames `body` with a correct length and checksum, so the body decoder itself is exercised.
fn frame_from_body(body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(body.len()).unwrap().to_le_bytes();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&len), body);
    [&len[..], &crc.to_le_bytes(), body].concat()
}

/// A log of `records`, and the offset at which each frame starts (plus the end).
fn log_of(records: &[Record]) -> (Vec<u8>, Vec<usize>) {
    let mut log = log_header().to_vec();
    let mut boundaries = vec![log.len()];
    for record in records {
        log.extend(encode_frame(record));
        boundaries.push(log.len());
    }
    (log, boundaries)
}

fn key(labels: &[&str]) -> TrackKey {
    TrackKey::encode(labels).unwrap()
}

/// The body of a frame holding `entries` raw entry bytes, count `n`.
fn body(n: u32, entries: &[u8]) -> Vec<u8> {
    [&[1][..], &n.to_le_bytes(), entries].concat()
}

fn malformed(frame: &[u8]) -> (usize, String) {
    match decode_frame(frame) {
        Err(FrameFault::Malformed {
            body_offset,
            detail,
        }) => (body_offset, detail),
        other => panic!("expected a malformed body, got {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let parsed = parse_log(&bytes);
        prop_assert!(parsed.trusted_len <= bytes.len() as u64);
        let _ = decode_frame(&bytes);
    }

    #[test]
    fn arbitrary_bytes_after_a_valid_header_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..256)
    ) {
        let log = [&log_header()[..], &tail].concat();
        let parsed = parse_log(&log);
        prop_assert!(parsed.trusted_len >= LOG_HEADER_LEN as u64);
        prop_assert_eq!(parsed.fault.is_none(), parsed.trusted_len == log.len() as u64);
    }

    #[test]
    fn arbitrary_bodies_behind_a_good_checksum_never_panic(
        entries in proptest::collection::vec(any::<u8>(), 0..256),
        n_entries in prop_oneof![0u32..4, any::<u32>()],
    ) {
        // Random frames almost never pass their checksum; this reaches the body decoder.
        let frame = frame_from_body(&body(n_entries, &entries));
        if let Ok((record, consumed)) = decode_frame(&frame) {
            prop_assert_eq!(consumed, frame.len());
            prop_assert_eq!(encode_frame(&record), frame);
        }
    }

    #[test]
    fn mutated_bodies_behind_a_good_checksum_never_panic(
        record in any_record(),
        idx in any::<prop::sample::Index>(),
        mask in 1u8..,
    ) {
        let frame = encode_frame(&record);
        let mut body = frame[FRAME_HEADER_LEN..].to_vec();
        let at = idx.index(body.len());
        body[at] ^= mask;
        let frame = frame_from_body(&body);
        if let Ok((decoded, _)) = decode_frame(&frame) {
            // Whatever decodes must be the record those bytes encode, not an approximation.
            prop_assert_eq!(encode_frame(&decoded), frame);
        }
    }

    #[test]
    fn records_round_trip(record in any_record(), trailing in proptest::collection::vec(any::<u8>(), 0..8)) {
        let frame = encode_frame(&record);
        let with_trailing = [&frame[..], &trailing].concat();
        prop_assert_eq!(decode_frame(&with_trailing), Ok((record, frame.len())));
    }

    #[test]
    fn garbage_after_a_valid_log_is_the_fault(
        records in proptest::collection::vec(any_record(), 0..4),
        garbage in proptest::collection::vec(any::<u8>(), 1..64),
    ) {
        let (mut log, boundaries) = log_of(&records);
        let valid_len = *boundaries.last().unwrap();
        log.extend(&garbage);
        let parsed = parse_log(&log);
        prop_assert_eq!(parsed.records, records);
        prop_assert_eq!(parsed.trusted_len, valid_len as u64);
        prop_assert_eq!(parsed.fault.map(|f| f.offset), Some(valid_len as u64));
    }

    #[test]
    fn a_valid_log_has_no_fault(records in proptest::collection::vec(any_record(), 0..4)) {
        let (log, _) = log_of(&records);
        let parsed = parse_log(&log);
        prop_assert_eq!(parsed.records, records);
        prop_assert_eq!(parsed.trusted_len, log.len() as u64);
        prop_assert_eq!(parsed.fault, None);
    }

    #[test]
    fn every_prefix_trusts_exactly_the_whole_frames(
        records in proptest::collection::vec(any_record(), 1..4)
    ) {
        let (log, boundaries) = log_of(&records);
        for cut in 0..log.len() {
            let parsed = parse_log(&log[..cut]);
            if cut < LOG_HEADER_LEN {
                prop_assert_eq!(parsed.trusted_len, 0);
                prop_assert_eq!(
                    parsed.fault,
                    Some(Fault { offset: 0, reason: FaultReason::ShortHeader { available: cut } })
                );
                continue;
            }
            let whole = boundaries.iter().filter(|&&b| b <= cut).count();
            let trusted = boundaries[whole - 1];
            prop_assert_eq!(&parsed.records[..], &records[..whole - 1]);
            prop_assert_eq!(parsed.trusted_len, trusted as u64);
            if cut == trusted {
                prop_assert_eq!(parsed.fault, None);
            } else {
                let fault = parsed.fault.unwrap();
                prop_assert_eq!(fault.offset, trusted as u64);
                prop_assert!(
                    matches!(&fault.reason, FaultReason::Frame(f) if f.is_truncation()),
                    "cut {} gave {:?}", cut, fault.reason
                );
            }
        }
    }

    #[test]
    fn any_flipped_byte_of_the_last_frame_faults_that_frame(
        records in proptest::collection::vec(any_record(), 1..4),
        mask in 1u8..,
    ) {
        let (log, boundaries) = log_of(&records);
        let last_start = boundaries[boundaries.len() - 2];
        for at in last_start..log.len() {
            let mut bad = log.clone();
            bad[at] ^= mask;
            let parsed = parse_log(&bad);
            prop_assert_eq!(&parsed.records[..], &records[..records.len() - 1]);
            prop_assert_eq!(parsed.trusted_len, last_start as u64);
            prop_assert_eq!(parsed.fault.map(|f| f.offset), Some(last_start as u64), "byte {}", at);
        }
    }
}

#[test]
fn header_is_magic_version_reserved() {
    assert_eq!(&log_header(), b"STRATAMF\x04\x00\x00\x00\x00\x00\x00\x00");
    assert_eq!(
        &log_header_of(1),
        b"STRATAMF\x01\x00\x00\x00\x00\x00\x00\x00"
    );
    assert_eq!(LOG_HEADER_LEN, 16);
}

#[test]
fn header_only_log_is_clean_and_empty() {
    let parsed = parse_log(&log_header());
    assert_eq!(
        parsed,
        ParsedLog {
            records: vec![],
            trusted_len: 16,
            fault: None
        }
    );
}

#[test]
fn bad_headers_fault_at_zero() {
    let mut bad_magic = log_header();
    bad_magic[0] = b'X';
    let mut bad_version = log_header();
    bad_version[8] = 5;
    let mut zero_version = log_header();
    zero_version[8] = 0;
    let mut bad_reserved = log_header();
    bad_reserved[15] = 1;
    let cases = [
        (
            &log_header()[..15],
            FaultReason::ShortHeader { available: 15 },
        ),
        (&[][..], FaultReason::ShortHeader { available: 0 }),
        (&bad_magic[..], FaultReason::BadMagic { got: *b"XTRATAMF" }),
        (
            &bad_version[..],
            FaultReason::UnsupportedVersion { version: 5 },
        ),
        (
            &zero_version[..],
            FaultReason::UnsupportedVersion { version: 0 },
        ),
        (
            &bad_reserved[..],
            FaultReason::ReservedNotZero { got: 1 << 24 },
        ),
    ];
    for (bytes, reason) in cases {
        // A good frame after a bad header must not be read.
        let log = [bytes, &encode_frame(&Record::default())].concat();
        let parsed = parse_log(if bytes.len() < 16 { bytes } else { &log });
        assert_eq!(parsed.records, vec![]);
        assert_eq!(parsed.trusted_len, 0);
        assert_eq!(parsed.fault, Some(Fault { offset: 0, reason }));
    }
}

#[test]
fn golden_frame_bytes() {
    let record = Record {
        entries: vec![
            Entry::Declare(StreamDecl {
                id: "s".to_owned(),
                fields: vec![
                    FieldDecl {
                        name: "k".to_owned(),
                        kind: FieldKind::Str,
                    },
                    FieldDecl {
                        name: "t".to_owned(),
                        kind: FieldKind::U64,
                    },
                ],
                track: vec![0],
                axis: Some(1),
                ladder: LadderSpec { base: 1, fanout: 2 },
                time: None,
            }),
            Entry::AddFile(FileEntry {
                name: 7,
                len: 100,
                digest: 0xDEAD_BEEF,
                partitions: vec![PartitionEntry {
                    stream: "s".to_owned(),
                    track: key(&["a"]),
                    n_rows: 2,
                    positions: [5, 6],
                    ordinals: [0, 1],
                    axis: Some([10, 20]),
                    n_levels: 1,
                    offset: 16,
                    len: 50,
                }],
            }),
            Entry::Retire(Retirement {
                file: 7,
                stream: "s".to_owned(),
                track: key(&["a"]),
                tier: Tier::Level(0),
            }),
            Entry::Retire(Retirement {
                file: 7,
                stream: "s".to_owned(),
                track: key(&["a"]),
                tier: Tier::Raw,
            }),
            Entry::Watermark {
                stream: "s".to_owned(),
                position: 6,
            },
            Entry::NameHigh(9),
        ],
    };
    #[rustfmt::skip]
    let body: Vec<u8> = [
        &[1u8][..], &[6, 0, 0, 0],                              // version, n_entries
        // Declare
        &[1], &[1, 0, 0, 0], b"s",                              // tag, id
        &[2, 0, 0, 0], &[1, 0, 0, 0], b"k", &[4], &[1, 0, 0, 0], b"t", &[1], // fields
        &[1, 0, 0, 0], &[0, 0],                                 // track
        &[1], &[1, 0],                                          // axis
        &[1, 0, 0, 0, 0, 0, 0, 0], &[2, 0, 0, 0, 0, 0, 0, 0],   // ladder
        // AddFile
        &[2], &[7, 0, 0, 0, 0, 0, 0, 0], &[100, 0, 0, 0, 0, 0, 0, 0], &[0xEF, 0xBE, 0xAD, 0xDE],
        &[1, 0, 0, 0],                                          // n_partitions
        &[1, 0, 0, 0], b"s", &[2, 0, 0, 0], b"a\x1f",           // stream, track
        &[2, 0, 0, 0, 0, 0, 0, 0],                              // n_rows
        &[5, 0, 0, 0, 0, 0, 0, 0], &[6, 0, 0, 0, 0, 0, 0, 0],   // positions
        &[0, 0, 0, 0, 0, 0, 0, 0], &[1, 0, 0, 0, 0, 0, 0, 0],   // ordinals
        &[1], &[10, 0, 0, 0, 0, 0, 0, 0], &[20, 0, 0, 0, 0, 0, 0, 0], // axis
        &[1],                                                   // n_levels
        &[16, 0, 0, 0, 0, 0, 0, 0], &[50, 0, 0, 0, 0, 0, 0, 0], // offset, len
        // Retire Level(0), Retire Raw
        &[3], &[7, 0, 0, 0, 0, 0, 0, 0], &[1, 0, 0, 0], b"s", &[2, 0, 0, 0], b"a\x1f", &[1, 0],
        &[3], &[7, 0, 0, 0, 0, 0, 0, 0], &[1, 0, 0, 0], b"s", &[2, 0, 0, 0], b"a\x1f", &[0],
        // Watermark
        &[4], &[1, 0, 0, 0], b"s", &[6, 0, 0, 0, 0, 0, 0, 0],
        // NameHigh
        &[5], &[9, 0, 0, 0, 0, 0, 0, 0],
    ]
    .concat();
    let frame = encode_frame(&record);
    assert_eq!(frame[FRAME_HEADER_LEN..], body[..]);
    assert_eq!(frame[..4], u32::try_from(body.len()).unwrap().to_le_bytes());
    let crc = crc32c::crc32c(&[&frame[..4], &body[..]].concat());
    assert_eq!(frame[4..8], crc.to_le_bytes());
    assert_eq!(decode_frame(&frame), Ok((record, frame.len())));
}

#[test]
fn known_answer_frame() {
    // The example in docs/manifest.md; its checksum was computed by an independent crc32c.
    let frame = encode_frame(&Record {
        entries: vec![Entry::NameHigh(9)],
    });
    let expected: [u8; 22] = [
        0x0e, 0x00, 0x00, 0x00, 0x23, 0xd0, 0x38, 0xd4, 0x01, 0x01, 0x00, 0x00, 0x00, 0x05, 0x09,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    assert_eq!(frame, expected);
}

#[test]
fn frame_header_faults() {
    assert_eq!(
        decode_frame(&[1, 2, 3]),
        Err(FrameFault::TruncatedHeader { available: 3 })
    );
    assert_eq!(
        decode_frame(&[0; 7]),
        Err(FrameFault::TruncatedHeader { available: 7 })
    );
    let over = u32::try_from(FRAME_BODY_MAX + 1).unwrap();
    let frame = [&over.to_le_bytes()[..], &[0; 64]].concat();
    assert_eq!(
        decode_frame(&frame),
        Err(FrameFault::BodyTooLong { declared: over })
    );
    let at_max = u32::try_from(FRAME_BODY_MAX).unwrap();
    let frame = [&at_max.to_le_bytes()[..], &[0; 64]].concat();
    assert_eq!(
        decode_frame(&frame),
        Err(FrameFault::TruncatedBody {
            declared: at_max,
            available: 60
        })
    );
    let frame = [&u32::MAX.to_le_bytes()[..], &[0; 4]].concat();
    assert_eq!(
        decode_frame(&frame),
        Err(FrameFault::BodyTooLong { declared: u32::MAX })
    );
}

#[test]
fn checksum_fault_names_expected_and_got() {
    let mut frame = encode_frame(&Record {
        entries: vec![Entry::NameHigh(3)],
    });
    let stored = u32::from_le_bytes(frame[4..8].try_into().unwrap());
    let last = frame.len() - 1;
    frame[last] ^= 0x40;
    let got = crc32c::crc32c(&[&frame[..4], &frame[8..]].concat());
    assert_eq!(
        decode_frame(&frame),
        Err(FrameFault::Checksum {
            expected: stored,
            got
        })
    );
    let shown = FrameFault::Checksum {
        expected: stored,
        got,
    }
    .to_string();
    assert!(shown.contains(&format!("{stored:#010x}")) && shown.contains(&format!("{got:#010x}")));
}

#[test]
fn unknown_body_version_and_empty_body() {
    for version in [0, 5, 255] {
        let frame = frame_from_body(&[version, 0, 0, 0, 0]);
        assert_eq!(
            decode_frame(&frame),
            Err(FrameFault::UnknownVersion { version })
        );
    }
    assert_eq!(malformed(&frame_from_body(&[])).0, 0);
}

#[test]
fn trailing_bytes_inside_a_body_are_malformed() {
    let frame = frame_from_body(&body(0, &[0xAA, 0xBB]));
    assert_eq!(
        malformed(&frame),
        (5, "2 trailing bytes after the last entry".to_owned())
    );
}

#[test]
fn unknown_tags_are_malformed_at_the_tag() {
    let frame = frame_from_body(&body(2, &[5, 1, 0, 0, 0, 0, 0, 0, 0, 15]));
    assert_eq!(
        malformed(&frame),
        (14, "entry 1: unknown entry tag 15".to_owned())
    );
    let frame = frame_from_body(&body(
        1,
        &[3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
    ));
    assert_eq!(
        malformed(&frame),
        (22, "entry 0: unknown tier kind 2".to_owned())
    );
}

#[test]
fn counts_larger_than_the_body_are_malformed_not_allocated() {
    let frame = frame_from_body(&body(u32::MAX, &[5]));
    let (at, detail) = malformed(&frame);
    assert_eq!(at, 6);
    assert_eq!(detail, "entry 0: name high: 8 bytes needed, 0 left");
    // A declared string length past the end of the body.
    let frame = frame_from_body(&body(1, &[4, 0xFF, 0xFF, 0xFF, 0xFF, b's']));
    assert_eq!(
        malformed(&frame),
        (
            10,
            "entry 0: watermark stream: 4294967295 bytes needed, 1 left".to_owned()
        )
    );
}

#[test]
fn bad_strings_keys_flags_and_kinds_are_malformed() {
    // Watermark stream "a\xFF": invalid UTF-8 at body offset 11.
    let frame = frame_from_body(&body(
        1,
        &[4, 2, 0, 0, 0, b'a', 0xFF, 0, 0, 0, 0, 0, 0, 0, 0],
    ));
    assert_eq!(
        malformed(&frame),
        (11, "entry 0: watermark stream: not UTF-8".to_owned())
    );
    // Retire with track "a" missing its separator.
    let retire = [
        &[3u8][..],
        &[0; 8],
        &[1, 0, 0, 0],
        b"s",
        &[1, 0, 0, 0],
        b"a",
        &[0],
    ]
    .concat();
    let (at, detail) = malformed(&frame_from_body(&body(1, &retire)));
    assert_eq!(at, 23);
    assert!(
        detail.starts_with("entry 0: retired track: track key of 1 bytes"),
        "{detail}"
    );
    // Declare with field kind 9.
    let declare = [
        &[1u8][..],
        &[1, 0, 0, 0],
        b"s",
        &[1, 0, 0, 0],
        &[1, 0, 0, 0],
        b"v",
        &[9],
    ]
    .concat();
    assert_eq!(
        malformed(&frame_from_body(&body(1, &declare))),
        (20, "entry 0: field 0 kind: unknown code 9".to_owned())
    );
    // Declare with axis option flag 2.
    let declare = [
        &[1u8][..],
        &[1, 0, 0, 0],
        b"s",
        &[1, 0, 0, 0],
        &[1, 0, 0, 0],
        b"v",
        &[1],
        &[0; 4],
        &[2],
    ]
    .concat();
    assert_eq!(
        malformed(&frame_from_body(&body(1, &declare))),
        (
            25,
            "entry 0: axis: option flag 2, expected 0 or 1".to_owned()
        )
    );
}

#[test]
fn parse_stops_at_the_first_bad_frame_and_reads_nothing_after() {
    let good = encode_frame(&Record {
        entries: vec![Entry::NameHigh(1)],
    });
    let mut bad = encode_frame(&Record {
        entries: vec![Entry::NameHigh(2)],
    });
    bad[9] ^= 1;
    let log = [&log_header()[..], &good, &bad, &good].concat();
    let parsed = parse_log(&log);
    assert_eq!(
        parsed.records,
        vec![Record {
            entries: vec![Entry::NameHigh(1)]
        }]
    );
    let offset = (LOG_HEADER_LEN + good.len()) as u64;
    assert_eq!(parsed.trusted_len, offset);
    let fault = parsed.fault.unwrap();
    assert_eq!(fault.offset, offset);
    assert!(matches!(
        fault.reason,
        FaultReason::Frame(FrameFault::Checksum { .. })
    ));
    assert!(
        fault
            .to_string()
            .starts_with(&format!("manifest fault at byte {offset}: frame checksum"))
    );
}

#[test]
fn fault_display() {
    let fault = Fault {
        offset: 40,
        reason: FaultReason::Frame(FrameFault::TruncatedBody {
            declared: 30,
            available: 4,
        }),
    };
    assert_eq!(
        fault.to_string(),
        "manifest fault at byte 40: frame body truncated: 30 bytes declared, 4 present"
    );
    assert_eq!(
        FaultReason::BadMagic {
            got: *b"STRATA\x00\x01"
        }
        .to_string(),
        "bad manifest magic \"STRATA\\x00\\x01\" (expected \"STRATAMF\")"
    );
    assert_eq!(
        FrameFault::Malformed {
            body_offset: 5,
            detail: "x".to_owned()
        }
        .to_string(),
        "malformed frame body at body offset 5: x"
    );
}

#[test]
#[should_panic(expected = "over FRAME_BODY_MAX")]
fn encoding_an_oversized_record_is_a_bug_not_a_fault() {
    // A caller must split such a record; this is our own invariant, not user input.
    let big = "x".repeat(FRAME_BODY_MAX);
    let _ = encode_frame(&Record {
        entries: vec![
            Entry::NameHigh(0),
            Entry::Watermark {
                stream: big,
                position: 0,
            },
        ],
    });
}

proptest! {
    /// Whatever byte of a frame is flipped, scanning from just past that frame's start finds
    /// exactly the frames after it, at their offsets: damage never hides later history.
    #[test]
    fn scan_finds_every_frame_after_a_flipped_one(
        records in proptest::collection::vec(any_record(), 2..5),
        pick in any::<proptest::sample::Index>(),
        xor in 1u8..=255,
    ) {
        let (mut log, boundaries) = log_of(&records);
        let damaged = pick.index(records.len() - 1);
        let start = boundaries[damaged];
        let at = start + pick.index(boundaries[damaged + 1] - start);
        log[at] ^= xor;
        let found = scan_frames(&log, start as u64 + 1);
        let expected: Vec<(u64, &Record)> = boundaries[damaged + 1..records.len()]
            .iter()
            .zip(&records[damaged + 1..])
            .map(|(&offset, record)| (offset as u64, record))
            .collect();
        let got: Vec<(u64, &Record)> = found.iter().map(|f| (f.offset, &f.record)).collect();
        prop_assert_eq!(got, expected);
    }
}

#[test]
fn scan_of_zeros_and_of_a_cut_frame_finds_nothing() {
    let record = Record {
        entries: vec![Entry::NameHigh(9)],
    };
    let frame = encode_frame(&record);
    assert!(scan_frames(&[0u8; 4096], 0).is_empty());
    assert!(scan_frames(&frame[..frame.len() - 1], 0).is_empty());
    assert_eq!(scan_frames(&frame, 0).len(), 1);
}

#[test]
fn a_fence_round_trips_through_a_frame() {
    let record = Record {
        entries: vec![Entry::Fence {
            stream: "cap".to_owned(),
            position: u64::MAX,
        }],
    };
    let (decoded, _) = decode_frame(&encode_frame(&record)).unwrap();
    assert_eq!(decoded, record);
}

#[test]
fn a_merge_is_tag_7_then_a_file_then_its_inputs() {
    let file = FileEntry {
        name: 9,
        len: 64,
        digest: 0xDEAD_BEEF,
        partitions: Vec::new(),
    };
    let record = Record {
        entries: vec![Entry::Merge {
            file: file.clone(),
            inputs: vec![3, 5],
        }],
    };
    let frame = encode_frame(&record);
    let body = &frame[FRAME_HEADER_LEN..];
    // A body holding no Lineage is written as version 1 (readable by a format-1 build).
    let mut expected = vec![1, 1, 0, 0, 0, 7];
    put_file(&mut expected, &file);
    expected.extend_from_slice(&[2, 0, 0, 0]);
    expected.extend_from_slice(&3u64.to_le_bytes());
    expected.extend_from_slice(&5u64.to_le_bytes());
    assert_eq!(body, expected.as_slice());
    let (decoded, _) = decode_frame(&frame).unwrap();
    assert_eq!(decoded, record);
    // Cut anywhere inside the inputs, the body is malformed, never a shorter merge.
    for cut in body.len() - 17..body.len() {
        assert!(decode_frame(&frame_from_body(&body[..cut])).is_err());
    }
}

#[test]
fn a_floors_presence_bytes_are_0_or_1() {
    let record = Record {
        entries: vec![Entry::Floor(Floor {
            stream: "s".to_owned(),
            track: TrackKey::ROOT,
            tier: Tier::Raw,
            position: Some(5),
            axis: Some(7),
        })],
    };
    let frame = encode_frame(&record);
    assert_eq!(decode_frame(&frame).unwrap().0, record);
    // The body ends: presence 1, position (8 bytes), presence 1, axis (8 bytes).
    let mut body = frame[FRAME_HEADER_LEN..].to_vec();
    let at = body.len() - 18;
    assert_eq!((body[at], body[at + 9]), (1, 1));
    body[at] = 2;
    let (offset, detail) = malformed(&frame_from_body(&body));
    assert_eq!(offset, at);
    assert!(
        detail.contains("floor position: presence byte 2"),
        "{detail}"
    );
}

/// Format 2's one addition: a `Lineage` entry, tag 12, only in a version-2 body, and a
/// version-2 body only in a format-2 manifest. Everything else is written as before.
#[test]
fn a_lineage_is_a_version_2_body_and_only_in_a_format_2_manifest() {
    let lineage = Lineage::from_runs(vec![LineageRun {
        generation: 3,
        states: vec![(16, 0xaabb_ccdd), (40, 7), (41, 8)],
    }])
    .unwrap();
    let record = Record {
        entries: vec![Entry::NameHigh(4), Entry::Lineage(lineage.clone())],
    };
    let frame = encode_frame(&record);
    let body = &frame[FRAME_HEADER_LEN..];
    let mut expected = vec![2, 2, 0, 0, 0, 5];
    expected.extend_from_slice(&4u64.to_le_bytes());
    expected.push(12);
    expected.extend_from_slice(&1u32.to_le_bytes()); // one run
    expected.extend_from_slice(&3u32.to_le_bytes()); // generation 3
    expected.extend_from_slice(&3u32.to_le_bytes()); // three states
    expected.extend_from_slice(&16u64.to_le_bytes());
    expected.extend_from_slice(&0xaabb_ccddu32.to_le_bytes());
    expected.extend_from_slice(&24u32.to_le_bytes()); // 40 - 16
    expected.extend_from_slice(&7u32.to_le_bytes());
    expected.extend_from_slice(&1u32.to_le_bytes()); // 41 - 40
    expected.extend_from_slice(&8u32.to_le_bytes());
    assert_eq!(body, expected.as_slice());
    assert_eq!(decode_frame(&frame), Ok((record.clone(), frame.len())));

    // In a format-2 manifest it is read; in a format-1 manifest the frame is refused.
    let v2 = [&log_header()[..], &frame].concat();
    assert_eq!(parse_log(&v2).records, vec![record.clone()]);
    let v1 = [&log_header_of(1)[..], &frame].concat();
    let parsed = parse_log(&v1);
    assert_eq!(parsed.trusted_len, 16);
    assert_eq!(
        parsed.fault.map(|f| f.reason),
        Some(FaultReason::Frame(FrameFault::VersionAboveLog {
            version: 2,
            log_version: 1
        }))
    );
    // A format-1 manifest of version-1 frames still reads.
    let plain = encode_frame(&Record {
        entries: vec![Entry::NameHigh(4)],
    });
    assert_eq!(plain[FRAME_HEADER_LEN], 1);
    assert_eq!(
        parse_log(&[&log_header_of(1)[..], &plain].concat()).fault,
        None
    );

    // A version-1 body holding tag 12 is malformed, at the entry.
    let mut v1_body = body.to_vec();
    v1_body[0] = 1;
    let (at, detail) = malformed(&frame_from_body(&v1_body));
    assert_eq!(at, 14);
    assert!(detail.contains("Lineage"), "{detail}");

    // A lineage that breaks its rules is malformed (ends not rising: growth 0).
    let mut flat = body.to_vec();
    let growth_at = flat.len() - 16;
    flat[growth_at..growth_at + 4].copy_from_slice(&0u32.to_le_bytes());
    let (_, detail) = malformed(&frame_from_body(&flat));
    assert!(detail.contains("after one ending at"), "{detail}");
    // A version-2 body holding no Lineage is not how this build writes one: refused, so that
    // every record has one encoding.
    let (_, detail) = malformed(&frame_from_body(&[2, 0, 0, 0, 0]));
    assert!(detail.contains("no Lineage"), "{detail}");
    // Cut anywhere inside it, never a shorter lineage.
    for cut in 15..body.len() {
        assert!(
            decode_frame(&frame_from_body(&body[..cut])).is_err(),
            "cut at {cut}"
        );
    }
}

/// Format 3's one addition: a `Preamble` entry, tag 13, the only entry of a version-3 body, in
/// a format-3 manifest only, and there only as the first frame (`generation.rs`).
#[test]
fn a_preamble_is_a_version_3_body_alone_and_only_in_a_format_3_manifest() {
    let preamble = Preamble {
        whole_len: 0x0102,
        replaces: Some(ManifestState {
            generation: 7,
            end: 0x0304,
            crc: 0xaabb_ccdd,
        }),
    };
    let record = Record {
        entries: vec![Entry::Preamble(preamble)],
    };
    let frame = encode_frame(&record);
    let body = &frame[FRAME_HEADER_LEN..];
    // Spelled out by hand: version 3, one entry, tag 13, then the fixed fields.
    let mut expected = vec![3, 1, 0, 0, 0, 13];
    expected.extend_from_slice(&0x0102u64.to_le_bytes());
    expected.extend_from_slice(&7u32.to_le_bytes());
    expected.extend_from_slice(&0x0304u64.to_le_bytes());
    expected.extend_from_slice(&0xaabb_ccddu32.to_le_bytes());
    assert_eq!(body, expected.as_slice());
    assert_eq!(frame.len(), 38);
    assert_eq!(decode_frame(&frame), Ok((record.clone(), frame.len())));

    // None is all zeros, and only all zeros.
    let none = encode_frame(&Record {
        entries: vec![Entry::Preamble(Preamble {
            whole_len: 0x0102,
            replaces: None,
        })],
    });
    assert_eq!(none.len(), 38);
    assert!(none[FRAME_HEADER_LEN + 14..].iter().all(|&b| b == 0));
    let mut half = none[FRAME_HEADER_LEN..].to_vec();
    half[20] = 1; // a length with no generation
    let (_, detail) = malformed(&frame_from_body(&half));
    assert!(detail.contains("replaces no generation"), "{detail}");

    // A whole length that ends inside the preamble itself says nothing true.
    let mut short = body.to_vec();
    short[6..14].copy_from_slice(&53u64.to_le_bytes());
    let (_, detail) = malformed(&frame_from_body(&short));
    assert!(detail.contains("inside the preamble"), "{detail}");

    // In a format-3 manifest it is read; in a format-2 one the frame is refused.
    assert_eq!(
        parse_log(&[&log_header()[..], &frame].concat()).records,
        vec![record.clone()]
    );
    let parsed = parse_log(&[&log_header_of(2)[..], &frame].concat());
    assert_eq!(parsed.trusted_len, 16);
    assert_eq!(
        parsed.fault.map(|f| f.reason),
        Some(FaultReason::Frame(FrameFault::VersionAboveLog {
            version: 3,
            log_version: 2
        }))
    );

    // A lower body version holding it, or another entry beside it, is malformed.
    let mut v2_body = body.to_vec();
    v2_body[0] = 2;
    let (_, detail) = malformed(&frame_from_body(&v2_body));
    assert!(
        detail.contains("Preamble (tag 13) in a version-2 body"),
        "{detail}"
    );
    let beside = [
        &[3u8, 2, 0, 0, 0][..],
        &body[5..],
        &[5u8, 9, 0, 0, 0, 0, 0, 0, 0][..],
    ]
    .concat();
    let (_, detail) = malformed(&frame_from_body(&beside));
    assert!(detail.contains("beside other entries"), "{detail}");
    // A version-3 body holding no Preamble is not how this build writes one.
    let (_, detail) = malformed(&frame_from_body(&[3, 0, 0, 0, 0]));
    assert!(detail.contains("no Preamble"), "{detail}");
    // Cut anywhere inside it, never a preamble.
    for cut in 0..body.len() {
        assert!(
            decode_frame(&frame_from_body(&body[..cut])).is_err(),
            "cut at {cut}"
        );
    }
}

/// Format 4's one addition: a declaration whose axis is time is tag 14, the declaration's bytes
/// then the unit's code, in a version-4 body, in a format-4 manifest only; one without a unit
/// keeps tag 1's bytes and body version 1, so an older build still reads it.
#[test]
fn a_time_declaration_is_tag_14_in_a_version_4_body_only_in_a_format_4_manifest() {
    let decl = |time| StreamDecl {
        id: "s".to_owned(),
        fields: vec![FieldDecl {
            name: "t".to_owned(),
            kind: FieldKind::U64,
        }],
        track: vec![],
        axis: Some(0),
        ladder: LadderSpec { base: 1, fanout: 2 },
        time,
    };
    #[rustfmt::skip]
    let payload: Vec<u8> = [
        &[1u8, 0, 0, 0][..], b"s",                                  // id
        &[1, 0, 0, 0], &[1, 0, 0, 0], b"t", &[1],               // fields
        &[0, 0, 0, 0],                                          // track
        &[1], &[0, 0],                                          // axis
        &[1, 0, 0, 0, 0, 0, 0, 0], &[2, 0, 0, 0, 0, 0, 0, 0],   // ladder
    ]
    .concat();
    for (unit, code) in [
        (TimeUnit::Seconds, 1u8),
        (TimeUnit::Millis, 2),
        (TimeUnit::Micros, 3),
        (TimeUnit::Nanos, 4),
    ] {
        let record = Record {
            entries: vec![Entry::Declare(decl(Some(unit)))],
        };
        let frame = encode_frame(&record);
        let expected = [&[4u8, 1, 0, 0, 0, 14][..], &payload, &[code]].concat();
        assert_eq!(&frame[FRAME_HEADER_LEN..], expected.as_slice(), "{unit}");
        assert_eq!(decode_frame(&frame), Ok((record.clone(), frame.len())));
        assert_eq!(format_of(std::slice::from_ref(&record)), 4);
        // Read in a format-4 manifest; refused by its body version in any older one.
        assert_eq!(
            parse_log(&[&log_header()[..], &frame].concat()).records,
            vec![record.clone()]
        );
        for older in 1..=3 {
            let parsed = parse_log(&[&log_header_of(older)[..], &frame].concat());
            assert_eq!(parsed.trusted_len, 16);
            assert_eq!(
                parsed.fault.map(|f| f.reason),
                Some(FaultReason::Frame(FrameFault::VersionAboveLog {
                    version: 4,
                    log_version: older
                }))
            );
        }
    }
    // Without a unit: tag 1, body version 1, readable in a format-1 manifest.
    let plain = Record {
        entries: vec![Entry::Declare(decl(None))],
    };
    let frame = encode_frame(&plain);
    let expected = [&[1u8, 1, 0, 0, 0, 1][..], &payload].concat();
    assert_eq!(&frame[FRAME_HEADER_LEN..], expected.as_slice());
    assert_eq!(format_of(std::slice::from_ref(&plain)), 1);
    assert_eq!(
        parse_log(&[&log_header_of(1)[..], &frame].concat()).records,
        vec![plain]
    );
    // An unknown unit code, a missing one, tag 14 in a lower body, and a version-4 body with
    // no time declaration are malformed.
    let bad_unit = [&[4u8, 1, 0, 0, 0, 14][..], &payload, &[5]].concat();
    let (at, detail) = malformed(&frame_from_body(&bad_unit));
    assert_eq!(at, bad_unit.len() - 1);
    assert!(detail.contains("time unit: unknown code 5"), "{detail}");
    let no_unit = [&[4u8, 1, 0, 0, 0, 14][..], &payload].concat();
    let (_, detail) = malformed(&frame_from_body(&no_unit));
    assert!(detail.contains("time unit"), "{detail}");
    let low = [&[1u8, 1, 0, 0, 0, 14][..], &payload, &[3]].concat();
    let (at, detail) = malformed(&frame_from_body(&low));
    assert_eq!(at, 5);
    assert!(detail.contains("DeclareTime (tag 14)"), "{detail}");
    let (_, detail) = malformed(&frame_from_body(&[4, 0, 0, 0, 0]));
    assert!(detail.contains("no DeclareTime"), "{detail}");
}
