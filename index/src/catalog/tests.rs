use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::codec::{decode_frame, encode_frame};
use crate::lineage::{Holds, ManifestState, manifest_states};
use crate::record::{FieldDecl, FieldKind, LadderSpec};

// ---- fixtures ----

fn key(labels: &[&str]) -> TrackKey {
    TrackKey::encode(labels).unwrap()
}

/// Fields k0 (str), k1 (u64), t (u64), v (f64); the track is the first `depth` fields, the axis
/// is `t` if `axis`.
fn decl(id: &str, depth: usize, axis: bool) -> StreamDecl {
    let field = |name: &str, kind| FieldDecl {
        name: name.to_owned(),
        kind,
    };
    StreamDecl {
        id: id.to_owned(),
        fields: vec![
            field("k0", FieldKind::Str),
            field("k1", FieldKind::U64),
            field("t", FieldKind::U64),
            field("v", FieldKind::F64),
        ],
        track: (0..u16::try_from(depth).unwrap()).collect(),
        axis: axis.then_some(2),
        ladder: LadderSpec {
            base: 10,
            fanout: 4,
        },
        time: None,
    }
}

/// A partition whose positions and axis equal its ordinal range.
fn part(
    stream: &str,
    track: &[&str],
    ordinals: [u64; 2],
    n_rows: u64,
    n_levels: u8,
) -> PartitionEntry {
    PartitionEntry {
        stream: stream.to_owned(),
        track: key(track),
        n_rows,
        positions: ordinals,
        ordinals,
        axis: (stream == "s").then_some(ordinals),
        n_levels,
        offset: 0,
        len: 0,
    }
}

/// A file whose partitions are laid out 8 bytes each, back to back.
fn file(name: FileName, partitions: Vec<PartitionEntry>) -> FileEntry {
    let partitions: Vec<PartitionEntry> = partitions
        .into_iter()
        .zip(0u64..)
        .map(|(p, idx)| PartitionEntry {
            offset: idx * 8,
            len: 8,
            ..p
        })
        .collect();
    FileEntry {
        name,
        len: 8 * partitions.len() as u64,
        digest: 0xABCD,
        partitions,
    }
}

fn rec(entries: Vec<Entry>) -> Record {
    Record { entries }
}

fn retire(file: FileName, stream: &str, track: &[&str], tier: Tier) -> Entry {
    Entry::Retire(Retirement {
        file,
        stream: stream.to_owned(),
        track: key(track),
        tier,
    })
}

fn watermark(stream: &str, position: u64) -> Entry {
    Entry::Watermark {
        stream: stream.to_owned(),
        position,
    }
}

/// Streams `s` (track depth 2, axis) and `p` (root track, no axis); file 1 holds s/[a,x]
/// (ordinals 0 and 2, two levels) and s/[b,y] (ordinal 1) and p/[] (ordinal 0); s is
/// durable through 10; names issued through 3.
fn base() -> Catalog {
    let mut cat = Catalog::new();
    cat.apply(&rec(vec![
        Entry::Declare(decl("s", 2, true)),
        Entry::Declare(decl("p", 0, false)),
        Entry::AddFile(file(
            1,
            vec![
                part("s", &["a", "x"], [0, 2], 2, 2),
                part("s", &["b", "y"], [1, 1], 1, 0),
                part("p", &[], [0, 0], 1, 0),
            ],
        )),
        watermark("s", 10),
        Entry::NameHigh(3),
    ]))
    .unwrap();
    cat
}

/// Applies `entries` as one record, expects a refusal, and checks the catalog did not change.
/// A valid entry goes first so a half-applied record would show.
fn refuse(cat: &mut Catalog, entries: Vec<Entry>) -> ApplyError {
    let before = cat.clone();
    let mut all = vec![Entry::NameHigh(100)];
    all.extend(entries);
    let err = cat.apply(&rec(all)).unwrap_err();
    assert_eq!(
        *cat, before,
        "a refused record must leave the catalog unchanged"
    );
    err
}

fn refuse_reason(entries: Vec<Entry>) -> ApplyReason {
    let err = refuse(&mut base(), entries);
    assert!(err.entry_idx >= 1, "the leading NameHigh is valid: {err}");
    err.reason
}

// ---- Declare ----

#[test]
fn invalid_declaration_is_refused() {
    let mut bad = decl("q", 1, false);
    bad.ladder.fanout = 1;
    assert!(matches!(
        refuse_reason(vec![Entry::Declare(bad)]),
        ApplyReason::InvalidDecl { ref stream, error: DeclError::Ladder { .. } } if stream == "q"
    ));
}

#[test]
fn conflicting_redeclaration_is_refused() {
    assert_eq!(
        refuse_reason(vec![Entry::Declare(decl("s", 1, true))]),
        ApplyReason::DeclConflict {
            stream: "s".to_owned()
        }
    );
    // Also against a declaration earlier in the same record.
    assert_eq!(
        refuse_reason(vec![
            Entry::Declare(decl("q", 1, true)),
            Entry::Declare(decl("q", 0, true))
        ]),
        ApplyReason::DeclConflict {
            stream: "q".to_owned()
        }
    );
}

#[test]
fn identical_redeclaration_is_a_no_op() {
    let mut cat = base();
    let before = cat.clone();
    cat.apply(&rec(vec![Entry::Declare(decl("s", 2, true))]))
        .unwrap();
    assert_eq!(cat, before);
}

// ---- AddFile ----

#[test]
fn file_names_must_increase() {
    for name in [0, 1] {
        let f = file(name, vec![part("s", &["a", "x"], [3, 3], 1, 0)]);
        assert_eq!(
            refuse_reason(vec![Entry::AddFile(f)]),
            ApplyReason::NameNotIncreasing { name, max_added: 1 }
        );
    }
    // Against a file earlier in the same record too.
    let f5 = file(5, vec![part("s", &["a", "x"], [3, 3], 1, 0)]);
    let f4 = file(4, vec![part("s", &["a", "x"], [4, 4], 1, 0)]);
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(f5), Entry::AddFile(f4)]),
        ApplyReason::NameNotIncreasing {
            name: 4,
            max_added: 5
        }
    );
}

#[test]
fn name_u64_max_is_reserved() {
    let f = file(u64::MAX, vec![part("s", &["a", "x"], [3, 3], 1, 0)]);
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(f)]),
        ApplyReason::NameReserved { name: u64::MAX }
    );
    assert_eq!(
        refuse_reason(vec![Entry::NameHigh(u64::MAX)]),
        ApplyReason::NameReserved { name: u64::MAX }
    );
}

#[test]
fn empty_file_is_refused() {
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(file(4, vec![]))]),
        ApplyReason::EmptyFile { name: 4 }
    );
}

#[test]
fn partition_of_undeclared_stream_is_refused() {
    let f = file(
        4,
        vec![
            part("s", &["a", "x"], [3, 3], 1, 0),
            part("nope", &[], [0, 0], 1, 0),
        ],
    );
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(f)]),
        ApplyReason::UnknownStream {
            stream: "nope".to_owned(),
            partition_idx: Some(1)
        }
    );
}

#[test]
fn track_depth_must_match_the_declaration() {
    let f = file(4, vec![part("s", &["a"], [3, 3], 1, 0)]);
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(f)]),
        ApplyReason::TrackDepth {
            partition_idx: 0,
            depth: 1,
            declared: 2
        }
    );
}

#[test]
fn axis_presence_must_match_the_declaration() {
    let mut missing = part("s", &["a", "x"], [3, 3], 1, 0);
    missing.axis = None;
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(file(4, vec![missing]))]),
        ApplyReason::AxisPresence {
            partition_idx: 0,
            declared: true
        }
    );
    let mut extra = part("p", &[], [1, 1], 1, 0);
    extra.axis = Some([0, 0]);
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(file(4, vec![extra]))]),
        ApplyReason::AxisPresence {
            partition_idx: 0,
            declared: false
        }
    );
}

#[test]
fn inverted_ranges_are_refused() {
    let mut positions = part("s", &["a", "x"], [3, 3], 1, 0);
    positions.positions = [9, 8];
    let mut ordinals = part("s", &["a", "x"], [3, 3], 1, 0);
    ordinals.ordinals = [4, 3];
    let mut axis = part("s", &["a", "x"], [3, 3], 1, 0);
    axis.axis = Some([7, 6]);
    for (p, what, lo, hi) in [
        (positions, "positions", 9, 8),
        (ordinals, "ordinals", 4, 3),
        (axis, "axis", 7, 6),
    ] {
        assert_eq!(
            refuse_reason(vec![Entry::AddFile(file(4, vec![p]))]),
            ApplyReason::InvertedRange {
                partition_idx: 0,
                what,
                lo,
                hi
            }
        );
    }
}

#[test]
fn row_count_must_fit_the_ordinal_range() {
    for (n_rows, ordinals) in [(0, [3, 3]), (3, [3, 4])] {
        let f = file(4, vec![part("s", &["a", "x"], ordinals, n_rows, 0)]);
        assert_eq!(
            refuse_reason(vec![Entry::AddFile(f)]),
            ApplyReason::RowCount {
                partition_idx: 0,
                n_rows,
                ordinals
            }
        );
    }
}

#[test]
fn partition_extent_must_lie_inside_the_file() {
    let mut f = file(4, vec![part("s", &["a", "x"], [3, 3], 1, 0)]);
    f.partitions[0].offset = 1;
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(f.clone())]),
        ApplyReason::Extent {
            partition_idx: 0,
            offset: 1,
            len: 8,
            file_len: 8
        }
    );
    f.partitions[0].offset = u64::MAX;
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(f)]),
        ApplyReason::Extent {
            partition_idx: 0,
            offset: u64::MAX,
            len: 8,
            file_len: 8
        }
    );
}

#[test]
fn duplicate_partition_in_one_file_is_refused() {
    let f = file(
        4,
        vec![
            part("s", &["a", "x"], [3, 3], 1, 0),
            part("s", &["a", "x"], [4, 4], 1, 0),
        ],
    );
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(f)]),
        ApplyReason::DuplicatePartition {
            partition_idx: 1,
            first_idx: 0,
            stream: "s".to_owned(),
            track: key(&["a", "x"]),
        }
    );
}

#[test]
fn ordinals_must_start_at_the_next_ordinal() {
    // A gap (4 instead of 3) and an overlap with file 1 (2 instead of 3).
    for got in [4, 2] {
        let f = file(4, vec![part("s", &["a", "x"], [got, got], 1, 0)]);
        assert_eq!(
            refuse_reason(vec![Entry::AddFile(f)]),
            ApplyReason::OrdinalStart {
                stream: "s".to_owned(),
                expected: 3,
                got
            }
        );
    }
    // Against a file earlier in the same record: the next ordinal of s is then 4.
    let f4 = file(4, vec![part("s", &["a", "x"], [3, 3], 1, 0)]);
    let f5 = file(5, vec![part("s", &["a", "x"], [3, 3], 1, 0)]);
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(f4), Entry::AddFile(f5)]),
        ApplyReason::OrdinalStart {
            stream: "s".to_owned(),
            expected: 4,
            got: 3
        }
    );
}

#[test]
fn ordinals_of_a_file_must_be_dense_per_stream() {
    // Ordinals 3..=6 spanned, but only 3 rows: one ordinal is missing.
    let f = file(
        4,
        vec![
            part("s", &["a", "x"], [3, 5], 2, 0),
            part("s", &["b", "y"], [6, 6], 1, 0),
        ],
    );
    assert_eq!(
        refuse_reason(vec![Entry::AddFile(f)]),
        ApplyReason::OrdinalDensity {
            stream: "s".to_owned(),
            n_rows: 3,
            span: 4
        }
    );
}

#[test]
fn interleaved_partitions_are_accepted() {
    // s/[a,x] holds ordinals 3 and 5, s/[b,y] holds 4 and 6: ranges overlap, rows are dense.
    let mut cat = base();
    let f = file(
        4,
        vec![
            part("s", &["a", "x"], [3, 5], 2, 0),
            part("s", &["b", "y"], [4, 6], 2, 0),
        ],
    );
    cat.apply(&rec(vec![Entry::AddFile(f)])).unwrap();
    assert_eq!(cat.next_ordinal("s"), 7);
}

#[test]
fn ordinal_u64_max_is_refused() {
    let mut cat = Catalog::new();
    cat.apply(&rec(vec![Entry::Declare(decl("p", 0, false))]))
        .unwrap();
    let whole = PartitionEntry {
        n_rows: u64::MAX,
        ..part("p", &[], [0, u64::MAX - 1], 1, 0)
    };
    cat.apply(&rec(vec![Entry::AddFile(file(1, vec![whole]))]))
        .unwrap();
    assert_eq!(cat.next_ordinal("p"), u64::MAX);
    let err = refuse(
        &mut cat,
        vec![Entry::AddFile(file(
            2,
            vec![part("p", &[], [u64::MAX, u64::MAX], 1, 0)],
        ))],
    );
    assert_eq!(
        err.reason,
        ApplyReason::OrdinalExhausted {
            stream: "p".to_owned()
        }
    );
}

// ---- Retire ----

#[test]
fn retiring_an_unknown_file_is_refused() {
    assert_eq!(
        refuse_reason(vec![retire(9, "s", &["a", "x"], Tier::Raw)]),
        ApplyReason::UnknownFile { file: 9 }
    );
}

#[test]
fn retiring_in_a_wholly_retired_file_is_refused() {
    let mut cat = base();
    cat.apply(&rec(vec![
        retire(1, "s", &["a", "x"], Tier::Raw),
        retire(1, "s", &["a", "x"], Tier::Level(0)),
        retire(1, "s", &["a", "x"], Tier::Level(1)),
        retire(1, "s", &["b", "y"], Tier::Raw),
        retire(1, "p", &[], Tier::Raw),
    ]))
    .unwrap();
    assert_eq!(cat.retired_files().collect::<Vec<_>>(), vec![1]);
    assert_eq!(cat.live_files().count(), 0);
    let err = refuse(&mut cat, vec![retire(1, "s", &["a", "x"], Tier::Raw)]);
    assert_eq!(err.reason, ApplyReason::FileRetired { file: 1 });
}

#[test]
fn retiring_a_partition_the_file_does_not_hold_is_refused() {
    assert_eq!(
        refuse_reason(vec![retire(1, "s", &["a", "y"], Tier::Raw)]),
        ApplyReason::NoPartition {
            file: 1,
            stream: "s".to_owned(),
            track: key(&["a", "y"])
        }
    );
}

#[test]
fn retiring_a_level_not_stored_is_refused() {
    assert_eq!(
        refuse_reason(vec![retire(1, "s", &["a", "x"], Tier::Level(2))]),
        ApplyReason::NoTier {
            file: 1,
            stream: "s".to_owned(),
            track: key(&["a", "x"]),
            tier: Tier::Level(2),
            n_levels: 2,
        }
    );
}

#[test]
fn retiring_twice_is_refused() {
    let expected = ApplyReason::TierRetired {
        file: 1,
        stream: "s".to_owned(),
        track: key(&["a", "x"]),
        tier: Tier::Level(1),
    };
    // Twice in one record.
    assert_eq!(
        refuse_reason(vec![
            retire(1, "s", &["a", "x"], Tier::Level(1)),
            retire(1, "s", &["a", "x"], Tier::Level(1)),
        ]),
        expected
    );
    // Once before, once now.
    let mut cat = base();
    cat.apply(&rec(vec![retire(1, "s", &["a", "x"], Tier::Level(1))]))
        .unwrap();
    assert_eq!(
        refuse(&mut cat, vec![retire(1, "s", &["a", "x"], Tier::Level(1))]).reason,
        expected
    );
}

#[test]
fn a_file_added_and_retired_in_one_record() {
    let mut cat = base();
    let f = file(4, vec![part("s", &["a", "x"], [3, 3], 1, 1)]);
    cat.apply(&rec(vec![
        Entry::AddFile(f.clone()),
        retire(4, "s", &["a", "x"], Tier::Raw),
        retire(4, "s", &["a", "x"], Tier::Level(0)),
    ]))
    .unwrap();
    assert_eq!(cat.retired_files().collect::<Vec<_>>(), vec![4]);
    assert_eq!(cat.file(4), Some(&f));
    // And the errors for a file of the same record.
    let g = file(5, vec![part("s", &["a", "x"], [4, 4], 1, 0)]);
    assert_eq!(
        refuse(
            &mut cat,
            vec![
                Entry::AddFile(g.clone()),
                retire(5, "s", &["b", "y"], Tier::Raw)
            ]
        )
        .reason,
        ApplyReason::NoPartition {
            file: 5,
            stream: "s".to_owned(),
            track: key(&["b", "y"])
        }
    );
    assert!(matches!(
        refuse(
            &mut cat,
            vec![
                Entry::AddFile(g),
                retire(5, "s", &["a", "x"], Tier::Level(0))
            ]
        )
        .reason,
        ApplyReason::NoTier {
            file: 5,
            n_levels: 0,
            ..
        }
    ));
}

// ---- Watermark and NameHigh ----

#[test]
fn watermark_of_undeclared_stream_is_refused() {
    assert_eq!(
        refuse_reason(vec![watermark("nope", 1)]),
        ApplyReason::UnknownStream {
            stream: "nope".to_owned(),
            partition_idx: None
        }
    );
}

#[test]
fn watermark_must_not_go_backwards() {
    assert_eq!(
        refuse_reason(vec![watermark("s", 9)]),
        ApplyReason::WatermarkBackwards {
            stream: "s".to_owned(),
            current: 10,
            position: 9
        }
    );
    assert_eq!(
        refuse_reason(vec![watermark("s", 20), watermark("s", 15)]),
        ApplyReason::WatermarkBackwards {
            stream: "s".to_owned(),
            current: 20,
            position: 15
        }
    );
    let mut cat = base();
    cat.apply(&rec(vec![
        watermark("s", 10),
        watermark("p", 0),
        watermark("p", 0),
    ]))
    .unwrap();
    assert_eq!(
        (cat.watermark("s"), cat.watermark("p")),
        (Some(10), Some(0))
    );
}

#[test]
fn name_high_only_rises() {
    let mut cat = base();
    assert_eq!((cat.name_high(), cat.next_name()), (3, 4));
    cat.apply(&rec(vec![Entry::NameHigh(2)])).unwrap();
    assert_eq!(cat.name_high(), 3);
    cat.apply(&rec(vec![Entry::NameHigh(7)])).unwrap();
    assert_eq!((cat.name_high(), cat.next_name()), (7, 8));
    // An added name above every NameHigh raises it too.
    cat.apply(&rec(vec![Entry::AddFile(file(
        12,
        vec![part("p", &[], [1, 1], 1, 0)],
    ))]))
    .unwrap();
    assert_eq!(cat.name_high(), 12);
}

#[test]
fn a_late_bad_entry_undoes_nothing_because_nothing_was_done() {
    let mut cat = base();
    let before = cat.clone();
    let err = cat
        .apply(&rec(vec![
            Entry::Declare(decl("q", 0, false)),
            Entry::AddFile(file(4, vec![part("q", &[], [0, 0], 1, 0)])),
            retire(1, "p", &[], Tier::Raw),
            watermark("q", 5),
            Entry::NameHigh(50),
            watermark("q", 4),
        ]))
        .unwrap_err();
    assert_eq!(err.entry_idx, 5);
    assert_eq!(cat, before);
    assert_eq!(
        err.to_string(),
        "record entry 5: stream \"q\": watermark 4 is below the current 5"
    );
}

// ---- queries ----

#[test]
fn queries_of_the_base_catalog() {
    let cat = base();
    assert_eq!(
        cat.streams().map(|d| d.id.as_str()).collect::<Vec<_>>(),
        vec!["p", "s"]
    );
    assert_eq!(cat.stream("s"), Some(&decl("s", 2, true)));
    assert_eq!(cat.stream("nope"), None);
    assert_eq!(
        (
            cat.watermark("s"),
            cat.watermark("p"),
            cat.watermark("nope")
        ),
        (Some(10), None, None)
    );
    assert_eq!(
        (
            cat.next_ordinal("s"),
            cat.next_ordinal("p"),
            cat.next_ordinal("nope")
        ),
        (3, 1, 0)
    );
    assert_eq!(
        (cat.last_position("s"), cat.last_position("nope")),
        (Some(2), None)
    );
    assert_eq!(
        cat.live_files().map(|f| f.name).collect::<Vec<_>>(),
        vec![1]
    );
    assert_eq!(cat.retired_files().count(), 0);
    assert_eq!(cat.axis_range("s", &TrackKey::ROOT), Some([0, 2]));
    assert_eq!(cat.axis_range("s", &key(&["b"])), Some([1, 1]));
    assert_eq!(cat.axis_range("s", &key(&["c"])), None);
    assert_eq!(cat.axis_range("p", &TrackKey::ROOT), None);
}

/// (track, names of the live segments of `tier`) for each partition of `stream` beneath `prefix`.
fn live(
    cat: &Catalog,
    stream: &str,
    prefix: &TrackKey,
    tier: Tier,
) -> Vec<(TrackKey, Vec<FileName>)> {
    cat.partitions(stream, prefix)
        .map(|p| {
            (
                p.track().clone(),
                p.segments(tier).map(|(name, _)| name).collect(),
            )
        })
        .collect()
}

#[test]
fn partitions_are_in_key_order_with_segments_in_name_order() {
    let mut cat = base();
    cat.apply(&rec(vec![
        Entry::AddFile(file(
            4,
            vec![
                part("s", &["b", "y"], [3, 3], 1, 1),
                part("s", &["a", "x"], [4, 4], 1, 1),
            ],
        )),
        Entry::AddFile(file(
            5,
            vec![
                part("s", &["a", "x"], [5, 6], 2, 0),
                part("s", &["a b", "z"], [7, 7], 1, 0),
            ],
        )),
    ]))
    .unwrap();
    assert_eq!(
        live(&cat, "s", &TrackKey::ROOT, Tier::Raw),
        vec![
            (key(&["a", "x"]), vec![1, 4, 5]),
            (key(&["a b", "z"]), vec![5]),
            (key(&["b", "y"]), vec![1, 4])
        ]
    );
    // "a" selects a/x but not "a b"/z.
    assert_eq!(
        live(&cat, "s", &key(&["a"]), Tier::Raw),
        vec![(key(&["a", "x"]), vec![1, 4, 5])]
    );
    assert_eq!(
        live(&cat, "s", &key(&["a"]), Tier::Level(1)),
        vec![(key(&["a", "x"]), vec![1])]
    );
    let (name, entry) = cat
        .partitions("s", &key(&["b", "y"]))
        .next()
        .unwrap()
        .segments(Tier::Level(0))
        .last()
        .unwrap();
    assert_eq!((name, entry.ordinals), (4, [3, 3]));
    assert_eq!(cat.partitions("nope", &TrackKey::ROOT).count(), 0);
}

#[test]
fn retirement_removes_segments_from_their_tier_only() {
    let mut cat = base();
    cat.apply(&rec(vec![
        retire(1, "s", &["a", "x"], Tier::Raw),
        retire(1, "s", &["a", "x"], Tier::Level(1)),
    ]))
    .unwrap();
    assert_eq!(
        live(&cat, "s", &key(&["a"]), Tier::Raw),
        vec![(key(&["a", "x"]), vec![])]
    );
    assert_eq!(
        live(&cat, "s", &key(&["a"]), Tier::Level(0)),
        vec![(key(&["a", "x"]), vec![1])]
    );
    assert_eq!(
        live(&cat, "s", &key(&["a"]), Tier::Level(1)),
        vec![(key(&["a", "x"]), vec![])]
    );
    // Levels still hold the axis range.
    assert_eq!(cat.axis_range("s", &key(&["a"])), Some([0, 2]));
    cat.apply(&rec(vec![retire(1, "s", &["a", "x"], Tier::Level(0))]))
        .unwrap();
    assert_eq!(live(&cat, "s", &key(&["a"]), Tier::Raw), vec![]);
    assert_eq!(cat.axis_range("s", &key(&["a"])), None);
    assert_eq!(cat.axis_range("s", &TrackKey::ROOT), Some([1, 1]));
    // Everything ever added still counts for ordinals and positions.
    assert_eq!(
        (cat.next_ordinal("s"), cat.last_position("s")),
        (3, Some(2))
    );
}

/// What a snapshot keeps of `cat`: everything but the files wholly retired. A catalog rebuilt
/// from `cat`'s snapshot equals this, field for field.
fn without_retired(cat: &Catalog) -> Catalog {
    let mut kept = cat.clone();
    kept.files.retain(|_, f| f.live_tiers > 0);
    kept.retired_files.clear();
    kept
}

/// Applies `records` to an empty catalog.
fn rebuild(records: &[Record]) -> Catalog {
    let mut rebuilt = Catalog::new();
    for record in records {
        rebuilt.apply(record).unwrap();
    }
    rebuilt
}

#[test]
fn snapshot_of_the_base_catalog_rebuilds_it() {
    let mut cat = base();
    cat.apply(&rec(vec![retire(1, "s", &["a", "x"], Tier::Level(0))]))
        .unwrap();
    let snapshot = cat.snapshot();
    let rebuilt = rebuild(std::slice::from_ref(&snapshot));
    // Nothing is wholly retired here, so the rebuilt catalog is equal, whole.
    assert_eq!(rebuilt, cat);
    assert!(matches!(snapshot.entries.last(), Some(Entry::NameHigh(3))));
}

#[test]
fn partition_view_debug_is_short() {
    let cat = base();
    let view = cat.partitions("s", &key(&["a"])).next().unwrap();
    assert_eq!(
        format!("{view:?}"),
        r#"PartitionView { track: TrackKey["a", "x"], raw: [1], n_levels: 2 }"#
    );
}

// ---- merges (compaction records) ----

/// `base()` plus file 4 (s/[a,x] ordinals 3..=4 with one level, s/[b,y] ordinal 5) and file 5
/// (s/[a,x] ordinal 6); names issued through 5.
fn merge_base() -> Catalog {
    let mut cat = base();
    cat.apply(&rec(vec![
        Entry::AddFile(file(
            4,
            vec![
                part("s", &["a", "x"], [3, 4], 2, 1),
                part("s", &["b", "y"], [5, 5], 1, 0),
            ],
        )),
        Entry::AddFile(file(5, vec![part("s", &["a", "x"], [6, 6], 1, 0)])),
    ]))
    .unwrap();
    cat
}

fn merge(name: FileName, partitions: Vec<PartitionEntry>, inputs: &[FileName]) -> Entry {
    Entry::Merge {
        file: file(name, partitions),
        inputs: inputs.to_vec(),
    }
}

/// The merge of s/[a,x] in files 1 and 4: rows at ordinals 0, 2, 3, 4.
fn ax_of_1_and_4(name: FileName) -> Entry {
    merge(name, vec![part("s", &["a", "x"], [0, 4], 4, 3)], &[1, 4])
}

fn refuse_merge(entries: Vec<Entry>) -> ApplyReason {
    let err = refuse(&mut merge_base(), entries);
    assert!(err.entry_idx >= 1, "the leading NameHigh is valid: {err}");
    err.reason
}

#[test]
fn a_merge_replaces_exactly_its_inputs_and_keeps_publish_order() {
    let mut cat = merge_base();
    cat.apply(&rec(vec![ax_of_1_and_4(6)])).unwrap();
    // The output holds older rows than file 5, so it comes first although named after it.
    assert_eq!(
        live(&cat, "s", &key(&["a"]), Tier::Raw),
        vec![(key(&["a", "x"]), vec![6, 5])]
    );
    assert_eq!(
        live(&cat, "s", &key(&["a"]), Tier::Level(2)),
        vec![(key(&["a", "x"]), vec![6])]
    );
    // Files 1 and 4 still hold other partitions; nothing about ordinals or positions moved.
    assert_eq!(
        cat.live_files().map(|f| f.name).collect::<Vec<_>>(),
        vec![1, 4, 5, 6]
    );
    assert_eq!(
        (
            cat.next_ordinal("s"),
            cat.last_position("s"),
            cat.next_name()
        ),
        (7, Some(6), 7)
    );
    assert_eq!(cat.axis_range("s", &key(&["a"])), Some([0, 6]));
    let whole = |cat: &Catalog| -> Vec<(FileName, bool)> {
        let view = cat.partitions("s", &key(&["a"])).next().unwrap();
        view.live_segments()
            .into_iter()
            .map(|(name, _, whole)| (name, whole))
            .collect()
    };
    assert_eq!(whole(&cat), vec![(6, true), (5, true)]);
    let mut partly = cat.clone();
    partly
        .apply(&rec(vec![retire(6, "s", &["a", "x"], Tier::Level(1))]))
        .unwrap();
    assert_eq!(whole(&partly), vec![(6, false), (5, true)]);
    assert!(!cat.is_retired(1) && !cat.is_retired(99));
    // Merging the rest of file 1 and 4 retires them whole.
    cat.apply(&rec(vec![
        merge(7, vec![part("s", &["b", "y"], [1, 5], 2, 0)], &[1, 4]),
        merge(8, vec![part("p", &[], [0, 0], 1, 0)], &[1]),
    ]))
    .unwrap();
    assert_eq!(cat.retired_files().collect::<Vec<_>>(), vec![1, 4]);
    assert!(cat.is_retired(1) && cat.is_retired(4) && !cat.is_retired(6));
    assert_eq!(
        live(&cat, "s", &TrackKey::ROOT, Tier::Raw),
        vec![(key(&["a", "x"]), vec![6, 5]), (key(&["b", "y"]), vec![7])]
    );
    // An output can itself be merged again, with newer files; and retired like any file.
    cat.apply(&rec(vec![
        merge(9, vec![part("s", &["a", "x"], [0, 6], 5, 1)], &[5, 6]),
        retire(9, "s", &["a", "x"], Tier::Level(0)),
    ]))
    .unwrap();
    assert_eq!(
        live(&cat, "s", &key(&["a"]), Tier::Raw),
        vec![(key(&["a", "x"]), vec![9])]
    );
    assert_eq!(cat.retired_files().collect::<Vec<_>>(), vec![1, 4, 5, 6]);
    // The snapshot lists only what is live (files 7, 8 and 9), even split one entry to a
    // frame, and forgets the four retired files but not what they assigned or weighed.
    let snapshot = cat.snapshot();
    let claimed: Vec<FileName> = snapshot
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Claim(file) => Some(file.name),
            _ => None,
        })
        .collect();
    assert_eq!(claimed, vec![7, 8, 9]);
    let parts = crate::codec::split_record(snapshot, 1);
    assert!(parts.iter().all(|p| p.entries.len() == 1));
    let rebuilt = rebuild(&parts);
    assert_eq!(rebuilt, without_retired(&cat));
    assert_eq!(rebuilt.retired_files().count(), 0);
    assert_eq!(rebuilt.file(1), None);
    assert_eq!(
        (rebuilt.next_ordinal("s"), rebuilt.last_position("s")),
        (cat.next_ordinal("s"), cat.last_position("s"))
    );
    assert_eq!(rebuilt.written(), cat.written());
    assert_eq!(rebuilt.snapshot(), cat.snapshot());
}

#[test]
fn merge_inputs_must_be_listed_in_increasing_order() {
    for inputs in [vec![], vec![4, 1], vec![1, 1, 4]] {
        let entry = merge(6, vec![part("s", &["a", "x"], [0, 4], 4, 0)], &inputs);
        assert_eq!(
            refuse_merge(vec![entry]),
            ApplyReason::MergeInputs { file: 6, inputs }
        );
    }
}

#[test]
fn a_merge_output_follows_the_file_rules() {
    assert_eq!(
        refuse_merge(vec![ax_of_1_and_4(5)]),
        ApplyReason::NameNotIncreasing {
            name: 5,
            max_added: 5
        }
    );
    assert_eq!(
        refuse_merge(vec![merge(6, vec![], &[1])]),
        ApplyReason::EmptyFile { name: 6 }
    );
    let mut deep = part("s", &["a", "x"], [0, 4], 4, 0);
    deep.track = key(&["a"]);
    assert!(matches!(
        refuse_merge(vec![merge(6, vec![deep], &[1, 4])]),
        ApplyReason::TrackDepth { .. }
    ));
}

#[test]
fn merge_inputs_must_exist_and_be_live() {
    assert_eq!(
        refuse_merge(vec![merge(
            6,
            vec![part("s", &["a", "x"], [0, 2], 2, 0)],
            &[1, 99]
        )]),
        ApplyReason::UnknownFile { file: 99 }
    );
    let mut cat = merge_base();
    cat.apply(&rec(vec![retire(5, "s", &["a", "x"], Tier::Raw)]))
        .unwrap();
    let err = refuse(
        &mut cat,
        vec![merge(6, vec![part("s", &["a", "x"], [6, 6], 1, 0)], &[5])],
    );
    assert_eq!(err.reason, ApplyReason::FileRetired { file: 5 });
}

#[test]
fn every_input_must_hold_every_output_partition() {
    // File 5 holds no s/[b,y].
    assert_eq!(
        refuse_merge(vec![merge(
            6,
            vec![part("s", &["b", "y"], [1, 5], 2, 0)],
            &[1, 4, 5]
        )]),
        ApplyReason::MergeInputLacks {
            file: 6,
            input: 5,
            partition_idx: 0
        }
    );
    // An output partition no input holds (here s/[c,z]) has nothing it could replace.
    assert_eq!(
        refuse_merge(vec![merge(
            6,
            vec![
                part("s", &["a", "x"], [0, 4], 4, 0),
                part("s", &["c", "z"], [5, 5], 1, 0),
            ],
            &[1, 4]
        )]),
        ApplyReason::MergeInputLacks {
            file: 6,
            input: 1,
            partition_idx: 1
        }
    );
}

#[test]
fn merge_inputs_must_be_whole() {
    let not_whole = |input, tier| ApplyReason::MergeInputNotWhole {
        file: 6,
        input,
        partition_idx: 0,
        tier,
    };
    // A level retired before the record, or earlier in it, or the raw rows.
    let mut cat = merge_base();
    cat.apply(&rec(vec![retire(1, "s", &["a", "x"], Tier::Level(1))]))
        .unwrap();
    assert_eq!(
        refuse(&mut cat, vec![ax_of_1_and_4(6)]).reason,
        not_whole(1, Tier::Level(1))
    );
    assert_eq!(
        refuse_merge(vec![
            retire(4, "s", &["a", "x"], Tier::Level(0)),
            ax_of_1_and_4(6)
        ]),
        not_whole(4, Tier::Level(0))
    );
    let mut cat = merge_base();
    cat.apply(&rec(vec![
        retire(1, "s", &["a", "x"], Tier::Raw),
        retire(1, "s", &["a", "x"], Tier::Level(0)),
        retire(1, "s", &["a", "x"], Tier::Level(1)),
    ]))
    .unwrap();
    assert_eq!(
        refuse(&mut cat, vec![ax_of_1_and_4(6)]).reason,
        not_whole(1, Tier::Raw)
    );
    // Nor can a tier the merge retired be retired again, or merged twice.
    assert!(matches!(
        refuse_merge(vec![
            ax_of_1_and_4(6),
            retire(4, "s", &["a", "x"], Tier::Raw)
        ]),
        ApplyReason::TierRetired { file: 4, .. }
    ));
    assert_eq!(
        refuse_merge(vec![
            ax_of_1_and_4(6),
            merge(7, vec![part("s", &["a", "x"], [3, 6], 3, 0)], &[4, 5]),
        ]),
        ApplyReason::MergeInputNotWhole {
            file: 7,
            input: 4,
            partition_idx: 0,
            tier: Tier::Raw
        }
    );
}

#[test]
fn a_merge_output_must_say_exactly_what_its_inputs_hold() {
    let cover = |what, expected, got| ApplyReason::MergeCover {
        file: 6,
        partition_idx: 0,
        what,
        expected: Some(expected),
        got: Some(got),
    };
    let ax = |edit: fn(&mut PartitionEntry)| {
        let mut p = part("s", &["a", "x"], [0, 4], 4, 0);
        edit(&mut p);
        merge(6, vec![p], &[1, 4])
    };
    assert_eq!(
        refuse_merge(vec![ax(|p| p.n_rows = 3)]),
        cover("n_rows", [4, 4], [3, 3])
    );
    assert_eq!(
        refuse_merge(vec![ax(|p| p.ordinals = [0, 5])]),
        cover("ordinals", [0, 4], [0, 5])
    );
    assert_eq!(
        refuse_merge(vec![ax(|p| p.ordinals = [1, 4])]),
        cover("ordinals", [0, 4], [1, 4])
    );
    assert_eq!(
        refuse_merge(vec![ax(|p| p.positions = [0, 3])]),
        cover("positions", [0, 4], [0, 3])
    );
    assert_eq!(
        refuse_merge(vec![ax(|p| p.axis = Some([1, 4]))]),
        cover("axis", [0, 4], [1, 4])
    );
    // Fewer rows than the inputs: one input's rows would be lost.
    assert_eq!(
        refuse_merge(vec![merge(
            6,
            vec![part("s", &["a", "x"], [0, 2], 2, 0)],
            &[1, 4]
        )]),
        cover("n_rows", [4, 4], [2, 2])
    );
}

#[test]
fn a_merge_may_not_overlap_a_live_segment_it_does_not_replace() {
    // Files 1 and 5 without 4 span ordinals 0..=6, over file 4's 3..=4.
    assert_eq!(
        refuse_merge(vec![merge(
            6,
            vec![part("s", &["a", "x"], [0, 6], 3, 0)],
            &[1, 5]
        )]),
        ApplyReason::MergeOverlapsLive {
            file: 6,
            partition_idx: 0,
            live: 4
        }
    );
    // Retiring file 4's segment first is not enough while one tier of it stays live.
    assert_eq!(
        refuse_merge(vec![
            retire(4, "s", &["a", "x"], Tier::Raw),
            merge(6, vec![part("s", &["a", "x"], [0, 6], 3, 0)], &[1, 5]),
        ]),
        ApplyReason::MergeOverlapsLive {
            file: 6,
            partition_idx: 0,
            live: 4
        }
    );
    // Wholly retired, it no longer answers reads, so nothing overlaps: partly before the
    // record and the rest in it...
    let mut cat = merge_base();
    cat.apply(&rec(vec![retire(4, "s", &["a", "x"], Tier::Raw)]))
        .unwrap();
    cat.apply(&rec(vec![
        retire(4, "s", &["a", "x"], Tier::Level(0)),
        merge(6, vec![part("s", &["a", "x"], [0, 6], 3, 0)], &[1, 5]),
    ]))
    .unwrap();
    // ...or all of it in the record.
    let mut cat = merge_base();
    cat.apply(&rec(vec![
        retire(4, "s", &["a", "x"], Tier::Raw),
        retire(4, "s", &["a", "x"], Tier::Level(0)),
        merge(6, vec![part("s", &["a", "x"], [0, 6], 3, 0)], &[1, 5]),
    ]))
    .unwrap();
}

// ---- generated valid histories ----

const LABELS: [&str; 3] = ["a", "a b", "b"];

#[derive(Debug, Clone)]
struct StreamPlan {
    depth: usize,
    axis: bool,
}

#[derive(Debug, Clone)]
struct BarrierPlan {
    /// Rows in publish order: (stream pick, track pick, position step).
    rows: Vec<(usize, usize, u64)>,
    /// Level counts, cycled over the file's partitions.
    levels: Vec<u8>,
    /// 0: next name; 1: one name burnt by a crash; 2: also a NameHigh above the file.
    names: u8,
    /// Picks among the live tiers to retire (after this barrier's file is added).
    retire: Vec<usize>,
    /// (stream pick, bump) per watermark entry.
    watermarks: Vec<(usize, u64)>,
    redeclare: bool,
    /// (partition pick, inputs wanted, in a record of its own): merge a run of whole segments.
    merge: Option<(usize, usize, bool)>,
}

fn plan() -> impl Strategy<Value = (Vec<StreamPlan>, Vec<BarrierPlan>)> {
    let stream = (0usize..=2, any::<bool>()).prop_map(|(depth, axis)| StreamPlan { depth, axis });
    let barrier = (
        proptest::collection::vec((0usize..3, 0usize..9, 0u64..3), 0..10),
        proptest::collection::vec(0u8..3, 1..4),
        0u8..3,
        proptest::collection::vec(any::<usize>(), 0..4),
        proptest::collection::vec((0usize..3, 0u64..5), 0..3),
        any::<bool>(),
        proptest::option::of((any::<usize>(), 1usize..5, any::<bool>())),
    )
        .prop_map(
            |(rows, levels, names, retire, watermarks, redeclare, merge)| BarrierPlan {
                rows,
                levels,
                names,
                retire,
                watermarks,
                redeclare,
                merge,
            },
        );
    (
        proptest::collection::vec(stream, 1..=3),
        proptest::collection::vec(barrier, 0..8),
    )
}

/// What the generated history should leave behind, tracked independently of the catalog.
#[derive(Debug, Default)]
struct Model {
    next_ordinal: Vec<u64>,
    position: Vec<u64>,
    watermark: Vec<Option<u64>>,
    name_high: u64,
    /// (file, stream id, track, tier) of every live tier.
    live: Vec<(FileName, String, TrackKey, Tier)>,
    live_per_file: BTreeMap<FileName, usize>,
    retired_files: BTreeSet<FileName>,
    /// Every partition ever added.
    parts: BTreeMap<(FileName, String, TrackKey), PartitionEntry>,
}

impl Model {
    fn add(&mut self, name: FileName, p: &PartitionEntry) {
        let tiers = std::iter::once(Tier::Raw).chain((0..p.n_levels).map(Tier::Level));
        for tier in tiers {
            self.live
                .push((name, p.stream.clone(), p.track.clone(), tier));
        }
        *self.live_per_file.entry(name).or_default() += 1 + usize::from(p.n_levels);
        self.parts
            .insert((name, p.stream.clone(), p.track.clone()), p.clone());
    }

    fn retire_tier(&mut self, file: FileName) {
        let left = self.live_per_file.get_mut(&file).unwrap();
        *left -= 1;
        if *left == 0 {
            self.retired_files.insert(file);
        }
    }

    /// A merge of a run of whole segments (every tier live) of one partition, consecutive in
    /// ordinal order among its live segments; `None` if `pick` finds none.
    fn merge(&mut self, name: FileName, pick: usize, want: usize, n_levels: u8) -> Option<Entry> {
        let mut tracks: Vec<(String, TrackKey)> = self
            .live
            .iter()
            .map(|(_, s, t, _)| (s.clone(), t.clone()))
            .collect();
        tracks.sort();
        tracks.dedup();
        let (stream, track) = tracks.get(pick % tracks.len().max(1))?.clone();
        // Live segments of the track, in ordinal order, and whether each is whole.
        let mut segments: Vec<(u64, FileName, bool)> = Vec::new();
        for (&(file, ref s, ref t), p) in &self.parts {
            if *s != stream || *t != track {
                continue;
            }
            let n_live = self
                .live
                .iter()
                .filter(|(f, s2, t2, _)| *f == file && *s2 == stream && *t2 == track)
                .count();
            if n_live > 0 {
                segments.push((p.ordinals[0], file, n_live == 1 + usize::from(p.n_levels)));
            }
        }
        segments.sort_unstable();
        let start = segments.iter().position(|&(_, _, whole)| whole)?;
        let run: Vec<FileName> = segments[start..]
            .iter()
            .take_while(|&&(_, _, whole)| whole)
            .take(want)
            .map(|&(_, file, _)| file)
            .collect();
        let sources: Vec<PartitionEntry> = run
            .iter()
            .map(|&file| self.parts[&(file, stream.clone(), track.clone())].clone())
            .collect();
        let first = sources.first()?;
        let last = sources.last()?;
        let out = PartitionEntry {
            stream: stream.clone(),
            track: track.clone(),
            n_rows: sources.iter().map(|p| p.n_rows).sum(),
            positions: [first.positions[0], last.positions[1]],
            ordinals: [first.ordinals[0], last.ordinals[1]],
            axis: first.axis.map(|[lo, _]| [lo, last.axis.unwrap()[1]]),
            n_levels,
            offset: 0,
            len: 0,
        };
        for &file in &run {
            let before = self.live.len();
            self.live
                .retain(|(f, s, t, _)| !(*f == file && *s == stream && *t == track));
            for _ in 0..before - self.live.len() {
                self.retire_tier(file);
            }
        }
        self.add(name, &out);
        let mut inputs = run;
        inputs.sort_unstable();
        Some(Entry::Merge {
            file: file(name, vec![out]),
            inputs,
        })
    }
}

fn stream_id(idx: usize) -> String {
    format!("s{idx}")
}

fn track_of(depth: usize, pick: usize) -> TrackKey {
    let labels: Vec<&str> = (0..depth)
        .map(|j| LABELS[(pick / 3usize.pow(u32::try_from(j).unwrap())) % 3])
        .collect();
    TrackKey::encode(&labels).unwrap()
}

/// Turns a plan into valid records, and the model of what they leave.
fn build(streams: &[StreamPlan], barriers: &[BarrierPlan]) -> (Vec<Record>, Model) {
    let decls: Vec<StreamDecl> = streams
        .iter()
        .enumerate()
        .map(|(i, s)| decl(&stream_id(i), s.depth, s.axis))
        .collect();
    let n = streams.len();
    let mut model = Model {
        next_ordinal: vec![0; n],
        position: vec![0; n],
        watermark: vec![None; n],
        ..Model::default()
    };
    let mut records = vec![rec(decls.iter().cloned().map(Entry::Declare).collect())];
    for barrier in barriers {
        let mut entries = Vec::new();
        if barrier.redeclare {
            entries.push(Entry::Declare(decls[0].clone()));
        }
        // Partitions in first-row order; their ordinal ranges interleave.
        let mut parts: Vec<PartitionEntry> = Vec::new();
        for &(stream_pick, track_pick, step) in &barrier.rows {
            let s = stream_pick % n;
            let track = track_of(streams[s].depth, track_pick);
            let ordinal = model.next_ordinal[s];
            model.next_ordinal[s] += 1;
            model.position[s] += step;
            let position = model.position[s];
            let id = stream_id(s);
            let idx = parts
                .iter()
                .position(|p| p.stream == id && p.track == track)
                .unwrap_or_else(|| {
                    parts.push(PartitionEntry {
                        stream: id.clone(),
                        track: track.clone(),
                        n_rows: 0,
                        positions: [position, position],
                        ordinals: [ordinal, ordinal],
                        axis: streams[s].axis.then_some([position, position]),
                        n_levels: barrier.levels[parts.len() % barrier.levels.len()],
                        offset: 0,
                        len: 0,
                    });
                    parts.len() - 1
                });
            let p = &mut parts[idx];
            p.n_rows += 1;
            p.positions[1] = position;
            p.ordinals[1] = ordinal;
            if let Some(axis) = &mut p.axis {
                axis[1] = position;
            }
        }
        let name = model.name_high + 1 + u64::from(barrier.names.min(1));
        if !parts.is_empty() {
            let f = file(name, parts);
            for p in &f.partitions {
                model.add(name, p);
            }
            entries.push(Entry::AddFile(f));
            model.name_high = name;
        }
        for &pick in &barrier.retire {
            if model.live.is_empty() {
                break;
            }
            let (file, stream, track, tier) = model.live.swap_remove(pick % model.live.len());
            entries.push(Entry::Retire(Retirement {
                file,
                stream,
                track,
                tier,
            }));
            model.retire_tier(file);
        }
        for &(stream_pick, bump) in &barrier.watermarks {
            let s = stream_pick % n;
            let position = model.watermark[s].unwrap_or(0) + bump;
            model.watermark[s] = Some(position);
            entries.push(watermark(&stream_id(s), position));
        }
        if barrier.names == 2 {
            model.name_high = name.max(model.name_high) + 1;
            entries.push(Entry::NameHigh(model.name_high));
        }
        if let Some((pick, want, own_record)) = barrier.merge {
            let out = model.name_high + 1;
            if let Some(entry) = model.merge(out, pick, want, barrier.levels[0]) {
                model.name_high = out;
                if own_record {
                    records.push(rec(std::mem::take(&mut entries)));
                }
                entries.push(entry);
            }
        }
        records.push(rec(entries));
    }
    (records, model)
}

fn replay(records: &[Record]) -> Catalog {
    let mut cat = Catalog::new();
    for (idx, record) in records.iter().enumerate() {
        if let Err(err) = cat.apply(record) {
            panic!("generated record {idx} refused: {err}\n{record:?}");
        }
    }
    cat
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn snapshot_rebuilds_an_equal_catalog((streams, barriers) in plan()) {
        let (records, _) = build(&streams, &barriers);
        let cat = replay(&records);
        let snapshot = cat.snapshot();
        let rebuilt = rebuild(std::slice::from_ref(&snapshot));
        prop_assert_eq!(&rebuilt, &without_retired(&cat));
        // Through the codec too: what a manifest rewrite would write and boot would read.
        let frame = encode_frame(&snapshot);
        let (decoded, _) = decode_frame(&frame).unwrap();
        let booted = rebuild(&[decoded]);
        prop_assert_eq!(&booted, &without_retired(&cat));
        prop_assert_eq!(booted.snapshot(), snapshot);
    }

    /// A rewrite's snapshot carries the states of the manifest it replaces after the lineage
    /// before, the newest `states_max` of them; the catalog it rebuilds holds them, restates
    /// them in its own snapshot, and a second rewrite carries both generations.
    #[test]
    fn rewrites_carry_the_lineage_of_the_generations_they_replace(
        (streams, barriers) in plan(),
        states_max in 1usize..40,
    ) {
        let (records, _) = build(&streams, &barriers);
        let mut log1 = crate::codec::log_header().to_vec();
        for record in &records {
            log1.extend(encode_frame(record));
        }
        let cat = replay(&records);
        let snap2 = cat.snapshot_after(1, &log1, states_max);
        let gen2 = rebuild(std::slice::from_ref(&snap2));
        prop_assert_eq!(gen2.snapshot(), snap2.clone());
        let states1: Vec<ManifestState> = manifest_states(1, &log1).collect();
        prop_assert_eq!(states1.len(), records.len() + 1);
        prop_assert_eq!(gen2.lineage().len(), states1.len().min(states_max));
        let kept = states1.len().saturating_sub(states_max);
        for (i, &state) in states1.iter().enumerate() {
            let holds = gen2.lineage().holds(state);
            if i >= kept {
                prop_assert_eq!(holds, Holds::Yes);
                let forked = ManifestState { crc: !state.crc, ..state };
                prop_assert_eq!(gen2.lineage().holds(forked), Holds::Differs { crc: state.crc });
            } else {
                prop_assert!(matches!(holds, Holds::Older { .. }), "{:?}", holds);
            }
        }
        let mut log2 = crate::codec::log_header().to_vec();
        log2.extend(encode_frame(&snap2));
        let gen3 = rebuild(&[gen2.snapshot_after(2, &log2, states_max)]);
        let states2: Vec<ManifestState> = manifest_states(2, &log2).collect();
        prop_assert_eq!(gen3.lineage().len(), (states1.len() + states2.len()).min(states_max));
        prop_assert_eq!(gen3.lineage().holds(*states2.last().unwrap()), Holds::Yes);
        if states_max > states2.len() {
            prop_assert_eq!(gen3.lineage().holds(*states1.last().unwrap()), Holds::Yes);
        }
    }

    #[test]
    fn a_snapshot_split_into_small_frames_rebuilds_an_equal_catalog(
        (streams, barriers) in plan(),
        body_max in 1usize..400,
    ) {
        let (records, _) = build(&streams, &barriers);
        let cat = replay(&records);
        let snapshot = cat.snapshot();
        let parts = crate::codec::split_record(snapshot.clone(), body_max);
        // Every frame but those holding one oversized entry stays within the bound, and the
        // entries are the snapshot's, in order.
        for part in &parts {
            let body = encode_frame(part).len() - crate::codec::FRAME_HEADER_LEN;
            prop_assert!(body <= body_max.max(5) || part.entries.len() == 1, "{} > {}", body, body_max);
        }
        let entries: Vec<_> = parts.iter().flat_map(|p| p.entries.clone()).collect();
        prop_assert_eq!(&entries, &snapshot.entries);
        prop_assert_eq!(&rebuild(&parts), &without_retired(&cat));
    }

    #[test]
    fn catalog_agrees_with_the_model((streams, barriers) in plan()) {
        let (records, model) = build(&streams, &barriers);
        let cat = replay(&records);
        prop_assert_eq!(cat.name_high(), model.name_high);
        prop_assert_eq!(cat.next_name(), model.name_high + 1);
        prop_assert_eq!(cat.retired_files().collect::<BTreeSet<_>>(), model.retired_files.clone());
        let live_files: BTreeSet<FileName> =
            model.live_per_file.keys().copied().filter(|f| !model.retired_files.contains(f)).collect();
        prop_assert_eq!(cat.live_files().map(|f| f.name).collect::<BTreeSet<_>>(), live_files);
        for (s, stream) in streams.iter().enumerate() {
            let id = stream_id(s);
            prop_assert_eq!(cat.next_ordinal(&id), model.next_ordinal[s]);
            prop_assert_eq!(cat.watermark(&id), model.watermark[s]);
            // Live tiers beneath each prefix, by range scan vs by filtering the model.
            let mut prefixes = vec![TrackKey::ROOT];
            prefixes.extend((0..3).map(|pick| track_of(stream.depth.min(1), pick)));
            for prefix in &prefixes {
                let mut from_catalog = BTreeSet::new();
                let mut keys = Vec::new();
                for view in cat.partitions(&id, prefix) {
                    keys.push(view.track().clone());
                    let tiers = std::iter::once(Tier::Raw).chain((0..3).map(Tier::Level));
                    for tier in tiers {
                        let los: Vec<u64> = view.segments(tier).map(|(_, e)| e.ordinals[0]).collect();
                        prop_assert!(
                            view.segments(tier).zip(view.segments(tier).skip(1)).all(|((_, a), (_, b))| a.ordinals[1] < b.ordinals[0]),
                            "segments in ordinal order, never overlapping: {:?}", los
                        );
                        for (name, entry) in view.segments(tier) {
                            prop_assert_eq!(&entry.track, view.track());
                            from_catalog.insert((name, id.clone(), view.track().clone(), tier));
                        }
                    }
                }
                let from_model: BTreeSet<_> = model
                    .live
                    .iter()
                    .filter(|(_, stream, track, _)| *stream == id && track.starts_with(prefix))
                    .cloned()
                    .collect();
                prop_assert_eq!(&from_catalog, &from_model);
                let mut sorted = keys.clone();
                sorted.sort();
                sorted.dedup();
                prop_assert_eq!(keys, sorted, "partitions come once each, in key order");
            }
        }
    }

    #[test]
    fn one_record_or_many_give_the_same_catalog((streams, barriers) in plan()) {
        let (records, _) = build(&streams, &barriers);
        let cat = replay(&records);
        let all = rec(records.iter().flat_map(|r| r.entries.iter().cloned()).collect());
        let mut at_once = Catalog::new();
        at_once.apply(&all).unwrap();
        prop_assert_eq!(at_once, cat);
    }

    #[test]
    fn a_refused_record_changes_nothing_and_the_history_goes_on(
        (streams, barriers) in plan(),
        poison in 0usize..4,
    ) {
        let (records, _) = build(&streams, &barriers);
        let mut cat = Catalog::new();
        for record in &records {
            let bad = match poison {
                0 => retire(u64::MAX - 1, "s0", &[], Tier::Raw),
                1 => watermark("undeclared", 0),
                2 => Entry::AddFile(file(0, vec![])),
                _ => Entry::Declare(decl("s0", 3, false)),
            };
            let mut poisoned = record.clone();
            poisoned.entries.push(bad);
            let before = cat.clone();
            let err = cat.apply(&poisoned).unwrap_err();
            prop_assert_eq!(err.entry_idx, record.entries.len());
            prop_assert_eq!(&cat, &before);
            cat.apply(record).unwrap();
        }
        prop_assert_eq!(cat, replay(&records));
    }
}

#[test]
fn a_fence_holds_for_declared_and_undeclared_streams_and_survives_a_snapshot() {
    let mut cat = Catalog::new();
    cat.apply(&rec(vec![Entry::Declare(decl("cap", 1, true))]))
        .unwrap();
    let fence = |stream: &str, position| Entry::Fence {
        stream: stream.to_owned(),
        position,
    };
    cat.apply(&rec(vec![fence("cap", 40), fence("gone", 7)]))
        .unwrap();
    // A lower fence is accepted and changes nothing.
    cat.apply(&rec(vec![fence("cap", 3)])).unwrap();
    assert_eq!(cat.fence("cap"), Some(40));
    assert_eq!(cat.fence("gone"), Some(7));
    assert_eq!(cat.fence("other"), None);
    let rebuilt = rebuild(&[cat.snapshot()]);
    assert_eq!(rebuilt, cat);
    assert_eq!(rebuilt.fence("gone"), Some(7));
    // A fence names a legal stream id, declared or not.
    let bad = cat.apply(&rec(vec![fence("bad\u{1}", 1)]));
    assert!(bad.is_err(), "{bad:?}");
}

#[test]
fn written_tells_merge_outputs_from_barrier_files_and_survives_a_snapshot() {
    let mut cat = merge_base();
    // Files 1, 4 and 5 are barriers' (24, 16 and 8 bytes); nothing was merged yet.
    let barriers = Written {
        barrier_files: 3,
        barrier_bytes: 48,
        merge_files: 0,
        merge_bytes: 0,
    };
    assert_eq!(cat.written(), barriers);
    assert_eq!(cat.written().write_amplification(), Some(0.0));
    cat.apply(&rec(vec![ax_of_1_and_4(6)])).unwrap();
    cat.apply(&rec(vec![merge(
        7,
        vec![part("s", &["a", "x"], [0, 6], 5, 0)],
        &[5, 6],
    )]))
    .unwrap();
    // File 6 is wholly retired now, and still counts: it was written.
    assert!(cat.is_retired(6));
    let merged = Written {
        merge_files: 2,
        merge_bytes: 16,
        ..barriers
    };
    assert_eq!(cat.written(), merged);
    assert_eq!(cat.written().write_amplification(), Some(16.0 / 48.0));
    // The snapshot no longer lists file 6 (nor 5), yet the counts survive it, and a second
    // rewrite (claims count nothing) keeps them the same.
    let rebuilt = rebuild(&[cat.snapshot()]);
    assert!(rebuilt.file(6).is_none());
    assert_eq!(rebuilt.written(), merged);
    let twice = rebuild(&[rebuilt.snapshot()]);
    assert_eq!(twice.written(), merged);
    assert_eq!(Catalog::new().written().write_amplification(), None);
}

// ---- the snapshot's summary entries: Assigned, Claim, History ----

fn claim(name: FileName, partitions: Vec<PartitionEntry>) -> Entry {
    Entry::Claim(file(name, partitions))
}

fn assigned(stream: &str, next_ordinal: u64, last_position: u64) -> Entry {
    Entry::Assigned {
        stream: stream.to_owned(),
        next_ordinal,
        last_position,
    }
}

#[test]
fn a_claim_restates_only_what_was_assigned_and_is_not_live() {
    // base(): s assigned ordinals 0..=2 and positions up to 2; file 1 live; names up to 1 added.
    let beyond = refuse_reason(vec![claim(4, vec![part("s", &["c", "z"], [3, 3], 1, 0)])]);
    assert!(
        matches!(
            beyond,
            ApplyReason::ClaimBeyondAssigned {
                file: 4,
                what: "ordinal",
                got: 3,
                assigned: Some(2),
                ..
            }
        ),
        "{beyond}"
    );
    let mut high_position = part("s", &["c", "z"], [2, 2], 1, 0);
    high_position.positions = [2, 9];
    let beyond = refuse_reason(vec![claim(4, vec![high_position])]);
    assert!(
        matches!(
            beyond,
            ApplyReason::ClaimBeyondAssigned {
                what: "position",
                got: 9,
                ..
            }
        ),
        "{beyond}"
    );
    // Ordinal 2 of s/[a,x] is live in file 1.
    let overlap = refuse_reason(vec![claim(4, vec![part("s", &["a", "x"], [2, 2], 1, 0)])]);
    assert!(
        matches!(overlap, ApplyReason::ClaimOverlapsLive { live: 1, .. }),
        "{overlap}"
    );
    // Names increase over claims as over any file, and over a History's highest name.
    let reused = refuse_reason(vec![claim(1, vec![part("p", &[], [0, 0], 1, 0)])]);
    assert!(
        matches!(reused, ApplyReason::NameNotIncreasing { .. }),
        "{reused}"
    );
    let history = Entry::History(History {
        max_added: 7,
        ..History::default()
    });
    let below = refuse_reason(vec![
        history.clone(),
        Entry::AddFile(file(6, vec![part("p", &[], [1, 1], 1, 0)])),
    ]);
    assert!(
        matches!(
            below,
            ApplyReason::NameNotIncreasing {
                name: 6,
                max_added: 7
            }
        ),
        "{below}"
    );
    // An Assigned names a declared stream; a lower one changes nothing.
    let unknown = refuse_reason(vec![assigned("nope", 5, 5)]);
    assert!(
        matches!(unknown, ApplyReason::UnknownStream { .. }),
        "{unknown}"
    );
    let mut cat = base();
    cat.apply(&rec(vec![assigned("s", 1, 1)])).unwrap();
    assert_eq!(
        (cat.next_ordinal("s"), cat.last_position("s")),
        (3, Some(2))
    );
    // Raised, it lets a claim of old ordinals through, and the next AddFile follows on.
    cat.apply(&rec(vec![
        assigned("s", 10, 20),
        claim(4, vec![part("s", &["c", "z"], [5, 6], 2, 0)]),
    ]))
    .unwrap();
    assert_eq!(
        (cat.next_ordinal("s"), cat.last_position("s")),
        (10, Some(20))
    );
    let gap = refuse(
        &mut cat,
        vec![Entry::AddFile(file(
            5,
            vec![part("s", &["c", "z"], [7, 7], 1, 0)],
        ))],
    );
    assert!(
        matches!(gap.reason, ApplyReason::OrdinalStart { expected: 10, .. }),
        "{gap}"
    );
}

#[test]
fn a_snapshot_follows_the_live_state_not_the_history() {
    // 2,000 barriers of one row each into s/[a,x], each followed by a merge of the partition's
    // two segments into one: 4,000 files added, all but the last output wholly retired.
    let mut cat = base();
    let mut live: FileName = 1;
    let mut next_name = 4;
    for ordinal in 3..2003 {
        let added = next_name;
        cat.apply(&rec(vec![Entry::AddFile(file(
            added,
            vec![part("s", &["a", "x"], [ordinal, ordinal], 1, 0)],
        ))]))
        .unwrap();
        let output = added + 1;
        // File 1 holds two rows of it (ordinals 0 and 2); every later ordinal is one row.
        let rows = ordinal;
        cat.apply(&rec(vec![merge(
            output,
            vec![part("s", &["a", "x"], [0, ordinal], rows, 0)],
            &[live, added],
        )]))
        .unwrap();
        live = output;
        next_name += 2;
    }
    assert_eq!(cat.retired_files().count(), 3999);
    let snapshot = cat.snapshot();
    // Two declarations, two Assigned, two claims (file 1 for s/[b,y] and p, the last output),
    // the retirements of file 1's merged s/[a,x] tiers (raw and two levels), History,
    // the watermark, NameHigh.
    assert_eq!(
        snapshot.entries.len(),
        2 + 2 + 2 + 3 + 1 + 1 + 1,
        "{snapshot:?}"
    );
    let rebuilt = rebuild(&[snapshot]);
    assert_eq!(rebuilt, without_retired(&cat));
    assert_eq!(rebuilt.next_name(), cat.next_name());
    // The rebuilt catalog takes the next barrier where the history left off.
    let mut next = rebuilt.clone();
    next.apply(&rec(vec![Entry::AddFile(file(
        cat.next_name(),
        vec![part("s", &["a", "x"], [2003, 2003], 1, 0)],
    ))]))
    .unwrap();
}

// ---- floors ----

fn floor(track: &[&str], tier: Tier, position: Option<u64>, axis: Option<u64>) -> Entry {
    Entry::Floor(Floor {
        stream: "s".to_owned(),
        track: key(track),
        tier,
        position,
        axis,
    })
}

#[test]
fn a_floor_must_fit_its_stream() {
    // base(): s has a depth-2 track and an axis; positions up to 2 assigned.
    let cases: Vec<(Entry, &str)> = vec![
        (floor(&["a"], Tier::Raw, Some(1), Some(1)), "1 components"),
        (
            floor(&["a", "x"], Tier::Raw, None, Some(1)),
            "without a position",
        ),
        (
            floor(&["a", "x"], Tier::Level(0), Some(1), Some(1)),
            "with a position",
        ),
        (
            floor(&["a", "x"], Tier::Raw, Some(1), None),
            "no axis value",
        ),
        (
            floor(&["a", "x"], Tier::Level(1), None, None),
            "no axis value",
        ),
        (
            floor(&["a", "x"], Tier::Raw, Some(4), Some(1)),
            "beyond every position",
        ),
    ];
    for (entry, what) in cases {
        let reason = refuse_reason(vec![entry.clone()]);
        assert!(
            matches!(reason, ApplyReason::InvalidFloor { .. }),
            "{entry:?}: {reason}"
        );
        assert!(reason.to_string().contains(what), "{entry:?}: {reason}");
    }
    let unknown = refuse_reason(vec![Entry::Floor(Floor {
        stream: "nope".to_owned(),
        track: key(&[]),
        tier: Tier::Raw,
        position: Some(0),
        axis: None,
    })]);
    assert!(
        matches!(unknown, ApplyReason::UnknownStream { .. }),
        "{unknown}"
    );
    // Stream p has no axis and a root track: a raw floor with no axis fits it.
    let mut cat = base();
    cat.apply(&rec(vec![Entry::Floor(Floor {
        stream: "p".to_owned(),
        track: key(&[]),
        tier: Tier::Raw,
        position: Some(1),
        axis: None,
    })]))
    .unwrap();
    assert_eq!(
        cat.floors_of("p", &key(&[])).and_then(|f| f.raw),
        Some(RawFloor {
            position: 1,
            axis: None
        })
    );
}

#[test]
fn floors_only_rise_outlive_their_track_and_survive_a_snapshot() {
    let mut cat = base();
    // One past everything assigned is the highest a raw floor may be: all of it retired.
    cat.apply(&rec(vec![
        floor(&["a", "x"], Tier::Raw, Some(2), Some(5)),
        floor(&["a", "x"], Tier::Level(1), None, Some(40)),
        floor(&["b", "y"], Tier::Raw, Some(3), Some(2)),
    ]))
    .unwrap();
    // Lower values are accepted and ignored, component by component.
    cat.apply(&rec(vec![
        floor(&["a", "x"], Tier::Raw, Some(1), Some(9)),
        floor(&["a", "x"], Tier::Level(1), None, Some(8)),
        floor(&["a", "x"], Tier::Level(0), None, Some(8)),
    ]))
    .unwrap();
    let ax = cat.floors_of("s", &key(&["a", "x"])).unwrap().clone();
    assert_eq!(
        ax.raw,
        Some(RawFloor {
            position: 2,
            axis: Some(9)
        })
    );
    assert_eq!(ax.levels, BTreeMap::from([(0, 8), (1, 40)]));
    // s/[b,y] retired whole: nothing of it is live, and its floor still answers.
    cat.apply(&rec(vec![retire(1, "s", &["b", "y"], Tier::Raw)]))
        .unwrap();
    assert!(cat.partitions("s", &key(&["b"])).next().is_none());
    let by = cat.floors_of("s", &key(&["b", "y"])).unwrap().raw.unwrap();
    assert_eq!(by.position, 3);
    // A prefix scan finds every floor beneath it, in track order.
    let tracks: Vec<&TrackKey> = cat.floors("s", &TrackKey::ROOT).map(|(t, _)| t).collect();
    assert_eq!(tracks, vec![&key(&["a", "x"]), &key(&["b", "y"])]);
    assert_eq!(cat.floors("s", &key(&["b"])).count(), 1);
    assert_eq!(cat.floors("p", &TrackKey::ROOT).count(), 0);
    // The snapshot keeps them, split one entry to a frame too.
    let parts = crate::codec::split_record(cat.snapshot(), 1);
    let rebuilt = rebuild(&parts);
    assert_eq!(rebuilt, without_retired(&cat));
    assert_eq!(rebuilt.floors_of("s", &key(&["a", "x"])), Some(&ax));
}

/// The index `part_idx` gives partition `track` of stream `s` in file `name`.
fn idx_of(cat: &Catalog, track: &[&str], name: FileName) -> Option<usize> {
    let view = cat.partitions("s", &key(track)).next().unwrap();
    assert_eq!(view.track(), &key(track));
    view.part_idx(name)
}

#[test]
fn a_partition_knows_its_index_in_each_file_that_holds_it() {
    let mut cat = base();
    // File 4 lists s/[b,y] first and s/[a,x] second: the index is the file's, not the track's.
    cat.apply(&rec(vec![Entry::AddFile(file(
        4,
        vec![
            part("s", &["b", "y"], [3, 3], 1, 0),
            part("s", &["a", "x"], [4, 4], 1, 1),
        ],
    ))]))
    .unwrap();
    assert_eq!(idx_of(&cat, &["a", "x"], 1), Some(0));
    assert_eq!(idx_of(&cat, &["b", "y"], 1), Some(1));
    assert_eq!(idx_of(&cat, &["b", "y"], 4), Some(0));
    assert_eq!(idx_of(&cat, &["a", "x"], 4), Some(1));
    // A file that does not hold the partition has no index for it.
    assert_eq!(idx_of(&cat, &["a", "x"], 2), None);
    // Nor does one whose every tier of it is retired.
    cat.apply(&rec(vec![
        retire(4, "s", &["b", "y"], Tier::Raw),
        retire(4, "s", &["b", "y"], Tier::Level(0)),
    ]))
    .unwrap_err();
    cat.apply(&rec(vec![retire(4, "s", &["b", "y"], Tier::Raw)]))
        .unwrap();
    assert_eq!(idx_of(&cat, &["b", "y"], 4), None);
    assert_eq!(idx_of(&cat, &["a", "x"], 4), Some(1));
}
