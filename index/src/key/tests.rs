use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::strategies::{tuple, tuple_or_root};

/// Tuple order written independently of the encoding: component-wise `str::cmp`, and a proper
/// prefix sorts first.
fn cmp_tuples(a: &[String], b: &[String]) -> Ordering {
    let mut idx = 0;
    loop {
        match (a.get(idx), b.get(idx)) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => match x.as_str().cmp(y.as_str()) {
                Ordering::Equal => idx += 1,
                other => return other,
            },
        }
    }
}

/// Tuple prefix written independently of the encoding: component equality.
fn tuple_starts_with(tuple: &[String], prefix: &[String]) -> bool {
    prefix.len() <= tuple.len() && prefix.iter().zip(tuple).all(|(p, t)| p == t)
}

fn key(labels: &[&str]) -> TrackKey {
    TrackKey::encode(labels).unwrap()
}

/// Every tuple of `tuples` and every one of its prefixes (root included), deduplicated.
fn with_ancestors(tuples: &[Vec<String>]) -> BTreeSet<Vec<String>> {
    let mut all = BTreeSet::new();
    for t in tuples {
        for len in 0..=t.len() {
            all.insert(t[..len].to_vec());
        }
    }
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn order_law(a in tuple(), b in tuple()) {
        let (ka, kb) = (TrackKey::encode(&a).unwrap(), TrackKey::encode(&b).unwrap());
        prop_assert_eq!(ka.cmp(&kb), cmp_tuples(&a, &b));
    }

    #[test]
    fn descendants_directly_follow_their_ancestor(
        tuples in proptest::collection::vec(tuple(), 1..16)
    ) {
        let all: Vec<Vec<String>> = with_ancestors(&tuples).into_iter().collect();
        let mut keyed: Vec<(TrackKey, &Vec<String>)> =
            all.iter().map(|t| (TrackKey::encode(t).unwrap(), t)).collect();
        keyed.sort_by(|x, y| x.0.cmp(&y.0));
        for (idx, (_, ancestor)) in keyed.iter().enumerate() {
            let beneath: Vec<usize> = keyed
                .iter()
                .enumerate()
                .filter(|(j, (_, t))| *j != idx && tuple_starts_with(t, ancestor))
                .map(|(j, _)| j)
                .collect();
            let expected: Vec<usize> = (idx + 1..=idx + beneath.len()).collect();
            prop_assert_eq!(beneath, expected, "descendants of {:?}", ancestor);
        }
    }

    #[test]
    fn prefix_law(a in tuple(), p in tuple_or_root()) {
        let (ka, kp) = (TrackKey::encode(&a).unwrap(), TrackKey::encode(&p).unwrap());
        let expected = tuple_starts_with(&a, &p);
        prop_assert_eq!(ka.as_bytes().starts_with(kp.as_bytes()), expected);
        prop_assert_eq!(ka.starts_with(&kp), expected);
    }

    #[test]
    fn prefix_law_on_related_tuples(a in tuple(), cut in 0usize..=4) {
        // Independent tuples rarely share a prefix; cutting one guarantees the positive case.
        let p = a[..cut.min(a.len())].to_vec();
        let (ka, kp) = (TrackKey::encode(&a).unwrap(), TrackKey::encode(&p).unwrap());
        prop_assert!(ka.starts_with(&kp));
        prop_assert!(tuple_starts_with(&a, &p));
    }

    #[test]
    fn range_law(tuples in proptest::collection::vec(tuple(), 1..24), extra in tuple_or_root()) {
        let map: BTreeMap<TrackKey, usize> = tuples
            .iter()
            .enumerate()
            .map(|(idx, t)| (TrackKey::encode(t).unwrap(), idx))
            .collect();
        let mut prefixes = with_ancestors(&tuples);
        prefixes.insert(extra);
        for prefix in &prefixes {
            let kp = TrackKey::encode(prefix).unwrap();
            let by_range: Vec<&TrackKey> = map.range(kp.range()).map(|(k, _)| k).collect();
            let by_select: Vec<&TrackKey> = select(&map, &kp).map(|(k, _)| k).collect();
            let mut by_filter: Vec<(TrackKey, &Vec<String>)> = tuples
                .iter()
                .filter(|t| tuple_starts_with(t, prefix))
                .map(|t| (TrackKey::encode(t).unwrap(), t))
                .collect();
            by_filter.sort_by(|x, y| cmp_tuples(x.1, y.1));
            by_filter.dedup_by(|x, y| x.0 == y.0);
            let by_filter: Vec<&TrackKey> = by_filter.iter().map(|(k, _)| k).collect();
            prop_assert_eq!(&by_range, &by_filter, "prefix {:?}", prefix);
            prop_assert_eq!(&by_select, &by_filter, "prefix {:?}", prefix);
        }
    }

    #[test]
    fn decode_inverts_encode(t in tuple_or_root()) {
        let k = TrackKey::encode(&t).unwrap();
        let back = TrackKey::decode(k.as_bytes()).unwrap();
        prop_assert_eq!(&back, &k);
        prop_assert_eq!(back.labels().collect::<Vec<_>>(), t.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(back.depth(), t.len());
        prop_assert_eq!(back.is_root(), t.is_empty());
    }

    #[test]
    fn decode_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        if let Ok(k) = TrackKey::decode(&bytes) {
            prop_assert_eq!(k.as_bytes(), &bytes[..]);
            prop_assert_eq!(TrackKey::encode(&k.labels().collect::<Vec<_>>()).unwrap(), k);
        }
    }

    #[test]
    fn decode_never_panics_on_near_miss_bytes(
        bytes in proptest::collection::vec(
            proptest::sample::select(vec![0x00u8, 0x1F, 0x20, 0x7F, b'a', 0xC2, 0x85, 0xA0, 0xFF]),
            0..24,
        )
    ) {
        // Bytes around the separator and the C1 controls reach every refusal.
        if let Ok(k) = TrackKey::decode(&bytes) {
            prop_assert_eq!(k.as_bytes(), &bytes[..]);
            prop_assert!(k.labels().all(|l| validate_label(l).is_ok()));
            prop_assert!(k.depth() <= TRACK_DEPTH_MAX);
        }
    }

    #[test]
    fn deserialize_from_labels_inverts_labels(t in tuple_or_root()) {
        use serde::de::IntoDeserializer;
        let k = TrackKey::encode(&t).unwrap();
        let labels: Vec<String> = k.labels().map(str::to_owned).collect();
        let de: serde::de::value::SeqDeserializer<_, serde::de::value::Error> =
            labels.into_deserializer();
        prop_assert_eq!(<TrackKey as serde::Deserialize>::deserialize(de).unwrap(), k);
    }
}

#[test]
fn run_70_is_not_beneath_run_7() {
    let (run7, run70) = (key(&["run_7"]), key(&["run_70"]));
    assert!(!run70.starts_with(&run7));
    assert!(!run7.starts_with(&run70));
    let map: BTreeMap<TrackKey, u8> = [
        key(&["run_7"]),
        key(&["run_7", "x"]),
        key(&["run_70"]),
        key(&["run_"]),
    ]
    .into_iter()
    .map(|k| (k, 0))
    .collect();
    let selected: Vec<&TrackKey> = select(&map, &run7).map(|(k, _)| k).collect();
    assert_eq!(selected, vec![&key(&["run_7"]), &key(&["run_7", "x"])]);
}

#[test]
fn a_tuple_sorts_before_its_children_and_they_before_its_next_sibling() {
    let mut keys = vec![
        key(&["a", "b"]),
        key(&["a!"]),
        key(&["a"]),
        key(&["a "]),
        key(&["a", "a"]),
    ];
    keys.sort();
    assert_eq!(
        keys,
        vec![
            key(&["a"]),
            key(&["a", "a"]),
            key(&["a", "b"]),
            key(&["a "]),
            key(&["a!"])
        ]
    );
}

#[test]
fn encoding_is_labels_each_followed_by_0x1f() {
    assert_eq!(key(&["ab", "é"]).as_bytes(), b"ab\x1f\xc3\xa9\x1f");
    assert_eq!(TrackKey::default().as_bytes(), b"");
    assert_eq!(TrackKey::ROOT, TrackKey::default());
    assert_eq!(key(&[]), TrackKey::ROOT);
}

#[test]
fn control_chars_are_refused_with_their_position() {
    for (ch, name) in [
        ('\u{0}', "U+0000"),
        ('\u{1f}', "U+001F"),
        ('\u{7f}', "U+007F"),
        ('\u{85}', "U+0085"),
    ] {
        let bad = format!("é{ch}x");
        let err = TrackKey::encode(&["ok", bad.as_str()]).unwrap_err();
        assert_eq!(
            err,
            KeyError::Label {
                component_idx: 1,
                byte_offset: 3,
                error: LabelError::ControlChar {
                    label: bad.clone(),
                    char_idx: 1,
                    byte_offset: 2,
                    ch
                },
            }
        );
        assert!(err.to_string().contains(name), "{err}");
    }
}

#[test]
fn decode_refuses_a_control_char_inside_a_label() {
    let err = TrackKey::decode(b"ok\x1fa\x7fb\x1f").unwrap_err();
    assert_eq!(
        err,
        KeyError::Label {
            component_idx: 1,
            byte_offset: 3,
            error: LabelError::ControlChar {
                label: "a\u{7f}b".to_owned(),
                char_idx: 1,
                byte_offset: 1,
                ch: '\u{7f}'
            },
        }
    );
}

#[test]
fn empty_label_is_refused() {
    let err = TrackKey::encode(&["a", ""]).unwrap_err();
    assert_eq!(
        err,
        KeyError::Label {
            component_idx: 1,
            byte_offset: 2,
            error: LabelError::Empty
        }
    );
    let err = TrackKey::decode(b"a\x1f\x1f").unwrap_err();
    assert_eq!(
        err,
        KeyError::Label {
            component_idx: 1,
            byte_offset: 2,
            error: LabelError::Empty
        }
    );
    let err = TrackKey::decode(b"\x1f").unwrap_err();
    assert_eq!(
        err,
        KeyError::Label {
            component_idx: 0,
            byte_offset: 0,
            error: LabelError::Empty
        }
    );
}

#[test]
fn five_components_are_refused() {
    assert_eq!(
        TrackKey::encode(&["a", "b", "c", "d", "e"]).unwrap_err(),
        KeyError::TooDeep { component_idx: 4 }
    );
    assert_eq!(
        TrackKey::decode(b"a\x1fb\x1fc\x1fd\x1fe\x1f").unwrap_err(),
        KeyError::TooDeep { component_idx: 4 }
    );
    assert_eq!(key(&["a", "b", "c", "d"]).depth(), 4);
}

#[test]
fn decode_refuses_bad_utf8_and_a_missing_separator() {
    assert_eq!(
        TrackKey::decode(b"ab\xff\x1f").unwrap_err(),
        KeyError::NotUtf8 { byte_offset: 2 }
    );
    assert_eq!(
        TrackKey::decode(b"a\x1fb").unwrap_err(),
        KeyError::MissingSeparator { len: 3 }
    );
    assert_eq!(TrackKey::decode(b"").unwrap(), TrackKey::ROOT);
}

#[test]
fn root_range_is_unbounded_and_selects_everything() {
    assert_eq!(TrackKey::ROOT.range(), (Bound::Unbounded, Bound::Unbounded));
    let map: BTreeMap<TrackKey, u8> = [key(&["a"]), key(&["b", "c"])]
        .into_iter()
        .map(|k| (k, 0))
        .collect();
    assert_eq!(select(&map, &TrackKey::ROOT).count(), 2);
}

#[test]
fn range_bounds_are_the_key_and_its_0x20_sentinel() {
    let (lo, hi) = key(&["a", "b"]).range();
    assert_eq!(lo, Bound::Included(key(&["a", "b"])));
    let Bound::Excluded(hi) = hi else {
        panic!("upper bound must be excluded: {hi:?}")
    };
    assert_eq!(hi.as_bytes(), b"a\x1fb ");
}

#[test]
fn deserialize_refuses_an_illegal_label() {
    use serde::de::IntoDeserializer;
    let labels = vec!["a".to_owned(), "b\u{0}".to_owned()];
    let de: serde::de::value::SeqDeserializer<_, serde::de::value::Error> =
        labels.into_deserializer();
    let err = <TrackKey as serde::Deserialize>::deserialize(de).unwrap_err();
    assert!(err.to_string().contains("U+0000"), "{err}");
}

#[test]
fn debug_prints_labels() {
    assert_eq!(
        format!("{:?}", key(&["run_7", "日"])),
        r#"TrackKey["run_7", "日"]"#
    );
    assert_eq!(format!("{:?}", TrackKey::ROOT), "TrackKey[]");
}

#[test]
fn display_of_errors_counts_labels_from_one() {
    let err = TrackKey::encode(&["a", "b", "c", "d", "e"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "track label 5 is past the limit: a track has at most 4 labels"
    );
    let err = TrackKey::encode(&["a", ""]).unwrap_err();
    assert_eq!(err.to_string(), "track label 2: label is empty");
    let err = TrackKey::decode(b"a\x1fb").unwrap_err();
    assert_eq!(
        err.to_string(),
        "track key of 3 bytes does not end with the separator 0x1F"
    );
}
