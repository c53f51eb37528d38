//! Proptest strategies shared by the test modules of this crate.

use proptest::prelude::*;

use crate::key::TrackKey;
use crate::lineage::{Lineage, LineageRun};
use crate::record::{
    Entry, FieldDecl, FieldKind, FileEntry, Floor, History, LadderSpec, PartitionEntry, Record,
    Retirement, StreamDecl, Tier, TimeUnit,
};

/// Labels that share prefixes, cross the separator's neighbourhood, and use multi-byte scripts,
/// mixed with short random strings over a small alphabet so prefixes of one another are common.
pub fn label() -> impl Strategy<Value = String> {
    const FIXED: &[&str] = &[
        "run_7", "run_70", "run_", "r", "a", "ab", "abc", "é", "ß", "日本", "日", "😀", "~", " ",
        "!", "\u{a0}",
    ];
    const ALPHABET: &[char] = &['a', 'b', '_', '7', ' ', '!', '~', 'é', '日', '\u{a0}', '😀'];
    prop_oneof![
        proptest::sample::select(FIXED).prop_map(str::to_owned),
        proptest::collection::vec(proptest::sample::select(ALPHABET), 1..=4)
            .prop_map(|chars| chars.into_iter().collect()),
    ]
}

/// Tuples of 1..=4 labels.
pub fn tuple() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(label(), 1..=4)
}

/// Tuples of 0..=4 labels (the root included).
pub fn tuple_or_root() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(label(), 0..=4)
}

/// Valid track keys of any depth.
pub fn track_key() -> impl Strategy<Value = TrackKey> {
    tuple_or_root().prop_map(|t| TrackKey::encode(&t).unwrap())
}

/// Any string, control characters included: the codec carries what it is given.
pub fn any_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<char>(), 0..8).prop_map(String::from_iter)
}

fn field_kind() -> impl Strategy<Value = FieldKind> {
    proptest::sample::select(vec![
        FieldKind::U64,
        FieldKind::I64,
        FieldKind::F64,
        FieldKind::Str,
        FieldKind::Bytes,
    ])
}

fn range() -> impl Strategy<Value = [u64; 2]> {
    any::<[u64; 2]>()
}

fn tier() -> impl Strategy<Value = Tier> {
    prop_oneof![Just(Tier::Raw), any::<u8>().prop_map(Tier::Level)]
}

/// Declarations with arbitrary content, valid or not (the codec does not judge them).
pub fn any_decl() -> impl Strategy<Value = StreamDecl> {
    (
        any_text(),
        proptest::collection::vec((any_text(), field_kind()), 0..4),
        proptest::collection::vec(any::<u16>(), 0..6),
        any::<Option<u16>>(),
        any::<(u64, u64)>(),
        proptest::option::of(proptest::sample::select(TimeUnit::ALL.to_vec())),
    )
        .prop_map(
            |(id, fields, track, axis, (base, fanout), time)| StreamDecl {
                id,
                fields: fields
                    .into_iter()
                    .map(|(name, kind)| FieldDecl { name, kind })
                    .collect(),
                track,
                axis,
                ladder: LadderSpec { base, fanout },
                time,
            },
        )
}

fn any_partition() -> impl Strategy<Value = PartitionEntry> {
    (
        (any_text(), track_key(), any::<u64>(), range(), range()),
        (
            proptest::option::of(range()),
            any::<u8>(),
            any::<u64>(),
            any::<u64>(),
        ),
    )
        .prop_map(
            |((stream, track, n_rows, positions, ordinals), (axis, n_levels, offset, len))| {
                PartitionEntry {
                    stream,
                    track,
                    n_rows,
                    positions,
                    ordinals,
                    axis,
                    n_levels,
                    offset,
                    len,
                }
            },
        )
}

/// Entries with arbitrary content.
pub fn any_entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        any_decl().prop_map(Entry::Declare),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            proptest::collection::vec(any_partition(), 0..4)
        )
            .prop_map(|(name, len, digest, partitions)| {
                Entry::AddFile(FileEntry {
                    name,
                    len,
                    digest,
                    partitions,
                })
            }),
        (any::<u64>(), any_text(), track_key(), tier()).prop_map(|(file, stream, track, tier)| {
            Entry::Retire(Retirement {
                file,
                stream,
                track,
                tier,
            })
        }),
        (any_text(), any::<u64>())
            .prop_map(|(stream, position)| Entry::Watermark { stream, position }),
        any::<u64>().prop_map(Entry::NameHigh),
        (any_text(), any::<u64>()).prop_map(|(stream, position)| Entry::Fence { stream, position }),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            proptest::collection::vec(any_partition(), 0..4),
            proptest::collection::vec(any::<u64>(), 0..4)
        )
            .prop_map(|(name, len, digest, partitions, inputs)| Entry::Merge {
                file: FileEntry {
                    name,
                    len,
                    digest,
                    partitions,
                },
                inputs,
            }),
        (any_text(), any::<u64>(), any::<u64>()).prop_map(
            |(stream, next_ordinal, last_position)| Entry::Assigned {
                stream,
                next_ordinal,
                last_position,
            }
        ),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            proptest::collection::vec(any_partition(), 0..4)
        )
            .prop_map(|(name, len, digest, partitions)| {
                Entry::Claim(FileEntry {
                    name,
                    len,
                    digest,
                    partitions,
                })
            }),
        any::<[u64; 5]>().prop_map(|[a, b, c, d, e]| Entry::History(History {
            barrier_files: a,
            barrier_bytes: b,
            merge_files: c,
            merge_bytes: d,
            max_added: e,
        })),
        (
            any_text(),
            track_key(),
            tier(),
            any::<Option<u64>>(),
            any::<Option<u64>>()
        )
            .prop_map(|(stream, track, tier, position, axis)| {
                Entry::Floor(Floor {
                    stream,
                    track,
                    tier,
                    position,
                    axis,
                })
            }),
        any_lineage().prop_map(Entry::Lineage),
    ]
}

/// Lineages as `Lineage::from_runs` accepts them: rising generations, each run's ends rising
/// from the header's end on, growths that fit a `u32`.
pub fn any_lineage() -> impl Strategy<Value = Lineage> {
    proptest::collection::vec(
        (
            1u32..4,
            16u64..u64::MAX / 2,
            proptest::collection::vec((1u64..=u64::from(u32::MAX), any::<u32>()), 1..5),
        ),
        0..4,
    )
    .prop_map(|runs| {
        let mut generation = 0u32;
        let runs = runs
            .into_iter()
            .map(|(step, first, states)| {
                generation += step;
                let mut end = first;
                let states = states
                    .into_iter()
                    .enumerate()
                    .map(|(i, (growth, crc))| {
                        if i > 0 {
                            end += growth;
                        }
                        (end, crc)
                    })
                    .collect();
                LineageRun { generation, states }
            })
            .collect();
        Lineage::from_runs(runs).expect("built within the rules")
    })
}

/// Records with arbitrary content, the empty record included.
pub fn any_record() -> impl Strategy<Value = Record> {
    proptest::collection::vec(any_entry(), 0..6).prop_map(|entries| Record { entries })
}
