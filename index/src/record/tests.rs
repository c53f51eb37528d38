use super::*;

fn field(name: &str, kind: FieldKind) -> FieldDecl {
    FieldDecl {
        name: name.to_owned(),
        kind,
    }
}

/// run (str), probe (u64), t (u64 axis), v (f64), n (i64), blob (bytes), k (i64).
fn decl() -> StreamDecl {
    StreamDecl {
        id: "telemetry".to_owned(),
        fields: vec![
            field("run", FieldKind::Str),
            field("probe", FieldKind::U64),
            field("t", FieldKind::U64),
            field("v", FieldKind::F64),
            field("n", FieldKind::I64),
            field("blob", FieldKind::Bytes),
            field("k", FieldKind::I64),
        ],
        track: vec![0, 1, 6],
        axis: Some(2),
        ladder: LadderSpec { base: 1, fanout: 2 },
        time: None,
    }
}

fn refused(edit: impl FnOnce(&mut StreamDecl)) -> DeclError {
    let mut d = decl();
    edit(&mut d);
    d.validate().unwrap_err()
}

#[test]
fn a_good_declaration_passes() {
    assert_eq!(decl().validate(), Ok(()));
    let mut bare = decl();
    bare.track.clear();
    bare.axis = None;
    assert_eq!(bare.validate(), Ok(()));
}

#[test]
fn measured_excludes_axis_track_and_non_numeric_fields_in_order() {
    // v (3, f64) and n (4, i64) are measured; run/probe/k are track, t is axis, blob is bytes.
    assert_eq!(decl().measured(), vec![3, 4]);
    let mut no_coords = decl();
    no_coords.track.clear();
    no_coords.axis = None;
    assert_eq!(no_coords.measured(), vec![1, 2, 3, 4, 6]);
}

#[test]
fn field_kind_codes_are_1_to_5_and_invert() {
    let kinds = [
        FieldKind::U64,
        FieldKind::I64,
        FieldKind::F64,
        FieldKind::Str,
        FieldKind::Bytes,
    ];
    for (kind, code) in kinds.into_iter().zip(1u8..) {
        assert_eq!(kind.code(), code);
        assert_eq!(FieldKind::from_code(code), Some(kind));
    }
    assert_eq!(FieldKind::from_code(0), None);
    assert_eq!(FieldKind::from_code(6), None);
}

#[test]
fn id_must_be_a_label() {
    assert!(matches!(
        refused(|d| d.id = "a\nb".to_owned()),
        DeclError::Id { .. }
    ));
    assert!(matches!(
        refused(|d| d.id.clear()),
        DeclError::Id {
            error: LabelError::Empty
        }
    ));
}

#[test]
fn field_count_is_1_to_fields_max() {
    assert_eq!(
        refused(|d| {
            d.fields.clear();
            d.track.clear();
            d.axis = None;
        }),
        DeclError::FieldCount { n_fields: 0 }
    );
    assert_eq!(
        refused(|d| {
            d.fields = (0..=FIELDS_MAX)
                .map(|i| field(&format!("f{i}"), FieldKind::U64))
                .collect();
        }),
        DeclError::FieldCount {
            n_fields: FIELDS_MAX + 1
        }
    );
    let mut widest = decl();
    widest.fields = (0..FIELDS_MAX)
        .map(|i| field(&format!("f{i}"), FieldKind::U64))
        .collect();
    assert_eq!(widest.validate(), Ok(()));
}

#[test]
fn field_names_are_unique_labels() {
    assert!(matches!(
        refused(|d| d.fields[3].name = String::new()),
        DeclError::FieldName {
            field_idx: 3,
            error: LabelError::Empty
        }
    ));
    assert_eq!(
        refused(|d| d.fields[4].name = "v".to_owned()),
        DeclError::DuplicateField {
            name: "v".to_owned(),
            first_idx: 3,
            field_idx: 4
        }
    );
}

#[test]
fn track_rules() {
    assert_eq!(
        refused(|d| {
            d.track = vec![0, 1, 6, 4, 3];
        }),
        DeclError::TrackTooDeep { n_track: 5 }
    );
    assert_eq!(
        refused(|d| d.track = vec![0, 7]),
        DeclError::TrackOutOfRange {
            track_idx: 1,
            field_idx: 7,
            n_fields: 7
        }
    );
    assert_eq!(
        refused(|d| d.track = vec![0, 1, 0]),
        DeclError::TrackRepeated {
            track_idx: 2,
            field_idx: 0,
            name: "run".to_owned()
        }
    );
    assert_eq!(
        refused(|d| d.track = vec![3]),
        DeclError::TrackKind {
            track_idx: 0,
            field_idx: 3,
            name: "v".to_owned(),
            kind: FieldKind::F64
        }
    );
    assert_eq!(
        refused(|d| d.track = vec![0, 5]),
        DeclError::TrackKind {
            track_idx: 1,
            field_idx: 5,
            name: "blob".to_owned(),
            kind: FieldKind::Bytes
        }
    );
}

#[test]
fn axis_rules() {
    assert_eq!(
        refused(|d| d.axis = Some(9)),
        DeclError::AxisOutOfRange {
            field_idx: 9,
            n_fields: 7
        }
    );
    assert_eq!(
        refused(|d| d.axis = Some(4)),
        DeclError::AxisKind {
            field_idx: 4,
            name: "n".to_owned(),
            kind: FieldKind::I64
        }
    );
    assert_eq!(
        refused(|d| d.axis = Some(1)),
        DeclError::AxisIsTrack {
            field_idx: 1,
            name: "probe".to_owned()
        }
    );
}

#[test]
fn ladder_rules() {
    let bad_base = LadderSpec { base: 0, fanout: 4 };
    assert_eq!(
        refused(|d| d.ladder = bad_base),
        DeclError::Ladder { ladder: bad_base }
    );
    let bad_fanout = LadderSpec {
        base: 10,
        fanout: 1,
    };
    assert_eq!(
        refused(|d| d.ladder = bad_fanout),
        DeclError::Ladder { ladder: bad_fanout }
    );
}

/// One change to the good declaration.
type Edit = dyn Fn(&mut StreamDecl);

#[test]
fn decl_errors_name_fields_and_count_from_one() {
    // Each refusal in the words a user reads: a field by its name where it has one, any number
    // counted from 1, and no 0-based index anywhere.
    let cases: [(&Edit, &str); 10] = [
        (
            &|d| d.fields[3].name = String::new(),
            "field 4 (counting from 1) has no legal name: label is empty",
        ),
        (
            &|d| d.fields[4].name = "v".to_owned(),
            "fields 4 and 5 are both named \"v\" (counting from 1)",
        ),
        (
            &|d| d.track = vec![0, 1, 6, 4, 3],
            "the track names 5 fields; a track has at most 4",
        ),
        (
            &|d| d.track = vec![0, 7],
            "the track names field 8 (counting from 1), but the stream has 7 fields",
        ),
        (
            &|d| d.track = vec![0, 1, 0],
            "the track names field \"run\" twice",
        ),
        (
            &|d| d.track = vec![3],
            "track field \"v\" is an f64; a track field is a u64, an i64 or a str",
        ),
        (
            &|d| d.track = vec![5],
            "track field \"blob\" is a bytes; a track field is a u64, an i64 or a str",
        ),
        (
            &|d| d.axis = Some(9),
            "the axis is field 10 (counting from 1), but the stream has 7 fields",
        ),
        (
            &|d| d.axis = Some(4),
            "axis field \"n\" is an i64; the axis is a u64",
        ),
        (
            &|d| d.axis = Some(1),
            "field \"probe\" is both the axis and a track field",
        ),
    ];
    for (edit, expected) in cases {
        assert_eq!(refused(edit).to_string(), expected);
    }
    // One field is singular.
    let mut one = decl();
    one.fields.truncate(1);
    one.track = vec![0];
    one.axis = Some(1);
    assert_eq!(
        one.validate().unwrap_err().to_string(),
        "the axis is field 2 (counting from 1), but the stream has 1 field"
    );
}

#[test]
fn kinds_take_their_article() {
    let said: Vec<&str> = [
        FieldKind::U64,
        FieldKind::I64,
        FieldKind::F64,
        FieldKind::Str,
        FieldKind::Bytes,
    ]
    .into_iter()
    .map(FieldKind::with_article)
    .collect();
    assert_eq!(said, ["a u64", "an i64", "an f64", "a str", "a bytes"]);
}

#[test]
fn a_time_unit_needs_an_axis() {
    let mut timed = decl();
    timed.time = Some(TimeUnit::Micros);
    assert_eq!(timed.validate(), Ok(()));
    timed.axis = None;
    assert_eq!(
        timed.validate(),
        Err(DeclError::TimeWithoutAxis {
            unit: TimeUnit::Micros
        })
    );
    assert_eq!(
        timed.validate().unwrap_err().to_string(),
        "a time unit (us) is declared but no axis: the unit says what the axis counts"
    );
}

#[test]
fn time_unit_codes_names_and_scales() {
    let table = [
        (TimeUnit::Seconds, 1, "s", 1),
        (TimeUnit::Millis, 2, "ms", 1_000),
        (TimeUnit::Micros, 3, "us", 1_000_000),
        (TimeUnit::Nanos, 4, "ns", 1_000_000_000),
    ];
    for (unit, code, name, per_second) in table {
        assert_eq!(unit.code(), code);
        assert_eq!(TimeUnit::from_code(code), Some(unit));
        assert_eq!(unit.name(), name);
        assert_eq!(TimeUnit::parse(name), Some(unit));
        assert_eq!(unit.per_second(), per_second);
    }
    assert_eq!(TimeUnit::parse("µs"), Some(TimeUnit::Micros));
    for code in [0, 5, 255] {
        assert_eq!(TimeUnit::from_code(code), None);
    }
    assert_eq!(TimeUnit::parse("sec"), None);
}
