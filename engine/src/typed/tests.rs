//! The typed rows' laws, checked against the former conversion through `serde_json::Value`,
//! which is kept here (and only here) as the oracle: what it accepted, the serializer accepts
//! and makes the same values of; what it read back, the deserializer reads back the same.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Number, Value as Json};
use strata_index::{FieldDecl, FieldKind, StreamDecl};
use strata_segment::vfs::SimFs;

use super::{de, ser};
use crate::decl::DEFAULT_LADDER;
use crate::value::{Row, Value};
use crate::{Config, EngineError, Store, Stream};

// ---------------------------------------------------------------------------------------------
// The oracle: the conversion `publish_as` and `query_as` made before, unchanged but for names.

fn oracle_to_row<T: Serialize>(decl: &StreamDecl, row: &T) -> Result<Row, String> {
    let json = serde_json::to_value(row).map_err(|e| format!("does not serialize: {e}"))?;
    let Json::Object(mut object) = json else {
        return Err("is not a struct or map of named fields".into());
    };
    let mut values = Vec::with_capacity(decl.fields.len());
    for field in &decl.fields {
        let json = object
            .remove(&field.name)
            .ok_or_else(|| format!("has no field {:?}", field.name))?;
        let value = oracle_from_json(field.kind, &json)
            .ok_or_else(|| format!("field {:?} is not {:?}: {json}", field.name, field.kind))?;
        values.push(value);
    }
    if let Some(extra) = object.keys().next() {
        return Err(format!(
            "has field {extra:?}, which the stream does not declare"
        ));
    }
    Ok(values)
}

fn oracle_from_json(kind: FieldKind, json: &Json) -> Option<Value> {
    // A number field takes a missing value (#48); JSON spells it null. (NaN would too, but the
    // generated floats are finite.)
    if json.is_null() && matches!(kind, FieldKind::U64 | FieldKind::I64 | FieldKind::F64) {
        return Some(Value::Null);
    }
    match kind {
        FieldKind::U64 => json.as_u64().map(Value::U64),
        FieldKind::I64 => json.as_i64().map(Value::I64),
        FieldKind::F64 => json.as_f64().map(Value::F64),
        FieldKind::Str => json.as_str().map(|s| Value::Str(s.to_owned())),
        FieldKind::Bytes => json
            .as_array()?
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect::<Option<Vec<u8>>>()
            .map(Value::Bytes),
        _ => None,
    }
}

fn oracle_from_row<T: DeserializeOwned>(decl: &StreamDecl, values: Row) -> Result<T, String> {
    let object: Map<String, Json> = decl
        .fields
        .iter()
        .zip(values)
        .map(|(field, value)| (field.name.clone(), oracle_to_json(value)))
        .collect();
    serde_json::from_value(Json::Object(object)).map_err(|e| e.to_string())
}

fn oracle_to_json(value: Value) -> Json {
    match value {
        Value::U64(v) => Json::Number(v.into()),
        Value::I64(v) => Json::Number(v.into()),
        Value::F64(v) => Number::from_f64(v).map_or(Json::Null, Json::Number),
        Value::Str(v) => Json::String(v),
        Value::Bytes(v) => Json::Array(v.into_iter().map(|b| Json::Number(b.into())).collect()),
        Value::Null => Json::Null,
    }
}

// ---------------------------------------------------------------------------------------------
// Generated rows: a struct of every shape a field takes, and maps of loose values.

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
enum Tag {
    Calm,
    Storm,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Probe(u64);

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Reading {
    run: String,
    probe: u32,
    t: u64,
    value: f64,
    delta: i16,
    ratio: f32,
    blob: Vec<u8>,
    tag: Tag,
    wrapped: Probe,
    maybe: Option<i64>,
    letter: char,
}

/// `Reading`'s fields, each with the kind it reads back from.
const READING: [(&str, FieldKind); 11] = [
    ("run", FieldKind::Str),
    ("probe", FieldKind::U64),
    ("t", FieldKind::U64),
    ("value", FieldKind::F64),
    ("delta", FieldKind::I64),
    ("ratio", FieldKind::F64),
    ("blob", FieldKind::Bytes),
    ("tag", FieldKind::Str),
    ("wrapped", FieldKind::U64),
    ("maybe", FieldKind::I64),
    ("letter", FieldKind::Str),
];

fn decl(fields: &[(&str, FieldKind)]) -> StreamDecl {
    StreamDecl {
        id: "s".into(),
        fields: fields
            .iter()
            .map(|&(name, kind)| FieldDecl {
                name: name.into(),
                kind,
            })
            .collect(),
        track: Vec::new(),
        axis: None,
        ladder: DEFAULT_LADDER,
        time: None,
    }
}

fn any_kind() -> impl Strategy<Value = FieldKind> {
    prop_oneof![
        Just(FieldKind::U64),
        Just(FieldKind::I64),
        Just(FieldKind::F64),
        Just(FieldKind::Str),
        Just(FieldKind::Bytes),
    ]
}

/// A declaration of `fields` in a shuffled order; with `loose`, some fields are dropped, some
/// take another kind, and one the row lacks may be added, so most rows are refused somewhere.
fn shuffled(
    fields: &'static [(&'static str, FieldKind)],
    loose: bool,
) -> impl Strategy<Value = StreamDecl> {
    let n_fields = fields.len();
    (
        Just(fields.to_vec()).prop_shuffle(),
        // About one field in two rows is dropped or given another kind: refusals and
        // acceptances both come often.
        proptest::collection::vec((0..4 * n_fields, any_kind()), n_fields),
        any::<bool>(),
    )
        .prop_map(move |(order, picks, extra)| {
            let mut kept = Vec::new();
            for ((name, natural), (pick, other)) in order.into_iter().zip(picks) {
                match pick {
                    0 if loose => {}
                    1 if loose => kept.push((name, other)),
                    _ => kept.push((name, natural)),
                }
            }
            if loose && extra {
                kept.push(("extra", FieldKind::U64));
            }
            decl(&kept)
        })
}

fn finite_f64() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("finite", |v| v.is_finite())
}

fn reading(maybe_none: bool) -> impl Strategy<Value = Reading> {
    let maybe = if maybe_none {
        proptest::option::of(any::<i64>()).boxed()
    } else {
        any::<i64>().prop_map(Some).boxed()
    };
    (
        ("\\PC{0,6}", any::<u32>(), any::<u64>(), finite_f64()),
        (
            any::<i16>(),
            any::<f32>().prop_filter("finite", |v| v.is_finite()),
        ),
        proptest::collection::vec(any::<u8>(), 0..6),
        prop_oneof![Just(Tag::Calm), Just(Tag::Storm)],
        (any::<u64>(), maybe, any::<char>()),
    )
        .prop_map(
            |((run, probe, t, value), (delta, ratio), blob, tag, (wrapped, maybe, letter))| {
                Reading {
                    run,
                    probe,
                    t,
                    value,
                    delta,
                    ratio,
                    blob,
                    tag,
                    wrapped: Probe(wrapped),
                    maybe,
                    letter,
                }
            },
        )
}

/// A loose value, serialized as its content (untagged): every shape a map row may give.
#[derive(Serialize, Debug, Clone)]
#[serde(untagged)]
enum Loose {
    U(u64),
    I(i64),
    Small(u8),
    Wide(i128),
    F(f64),
    F32(f32),
    S(String),
    C(char),
    B(Vec<u8>),
    Shorts(Vec<u16>),
    Words(Vec<String>),
    Flag(bool),
    Maybe(Option<i32>),
    Tagged(Tag),
}

fn loose() -> impl Strategy<Value = Loose> {
    prop_oneof![
        any::<u64>().prop_map(Loose::U),
        any::<i64>().prop_map(Loose::I),
        (-300..300i64).prop_map(Loose::I),
        any::<u8>().prop_map(Loose::Small),
        (-(1i128 << 70)..(1i128 << 70)).prop_map(Loose::Wide),
        finite_f64().prop_map(Loose::F),
        any::<f32>()
            .prop_filter("finite", |v| v.is_finite())
            .prop_map(Loose::F32),
        "[a-c]{0,3}".prop_map(Loose::S),
        any::<char>().prop_map(Loose::C),
        proptest::collection::vec(any::<u8>(), 0..4).prop_map(Loose::B),
        proptest::collection::vec(0..300u16, 0..4).prop_map(Loose::Shorts),
        proptest::collection::vec("[a-c]{0,2}", 0..2).prop_map(Loose::Words),
        any::<bool>().prop_map(Loose::Flag),
        proptest::option::of(any::<i32>()).prop_map(Loose::Maybe),
        prop_oneof![Just(Tag::Calm), Just(Tag::Storm)].prop_map(Loose::Tagged),
    ]
}

const KEYS: [(&str, FieldKind); 5] = [
    ("a", FieldKind::U64),
    ("b", FieldKind::I64),
    ("c", FieldKind::F64),
    ("d", FieldKind::Str),
    ("e", FieldKind::Bytes),
];

/// A value a field of `kind` takes as it is.
fn fitting(kind: FieldKind) -> BoxedStrategy<Loose> {
    match kind {
        FieldKind::U64 => any::<u64>().prop_map(Loose::U).boxed(),
        FieldKind::I64 => any::<i64>().prop_map(Loose::I).boxed(),
        FieldKind::F64 => finite_f64().prop_map(Loose::F).boxed(),
        FieldKind::Str => "[a-c]{0,3}".prop_map(Loose::S).boxed(),
        _ => proptest::collection::vec(any::<u8>(), 0..4)
            .prop_map(Loose::B)
            .boxed(),
    }
}

/// A map row for `decl`: each declared field mostly given, half the time a value of its kind
/// and otherwise any loose value; now and then a key the stream does not declare.
fn map_row(decl: &StreamDecl) -> BoxedStrategy<BTreeMap<String, Loose>> {
    let entries: Vec<_> = decl
        .fields
        .iter()
        .map(|field| {
            let value = prop_oneof![fitting(field.kind), loose()];
            (
                Just(field.name.clone()),
                proptest::option::weighted(0.9, value),
            )
        })
        .collect();
    let stray = proptest::option::weighted(0.1, loose());
    (entries, stray)
        .prop_map(|(entries, stray)| {
            let mut row: BTreeMap<String, Loose> = entries
                .into_iter()
                .filter_map(|(name, value)| Some((name, value?)))
                .collect();
            if let Some(value) = stray {
                row.insert("stray".into(), value);
            }
            row
        })
        .boxed()
}

/// A stored value of `kind`, leaning to values that fit narrower types and variant names.
fn stored(kind: FieldKind) -> BoxedStrategy<Value> {
    match kind {
        FieldKind::U64 => prop_oneof![any::<u64>(), 0..70_000u64]
            .prop_map(Value::U64)
            .boxed(),
        FieldKind::I64 => prop_oneof![any::<i64>(), -70_000..70_000i64]
            .prop_map(Value::I64)
            .boxed(),
        FieldKind::F64 => prop_oneof![finite_f64(), (-9..9i32).prop_map(f64::from)]
            .prop_map(Value::F64)
            .boxed(),
        FieldKind::Str => prop_oneof![
            "[a-c]{0,2}".prop_map(String::from),
            Just("Calm".to_owned()),
            Just("Storm".to_owned())
        ]
        .prop_map(Value::Str)
        .boxed(),
        _ => proptest::collection::vec(any::<u8>(), 0..4)
            .prop_map(Value::Bytes)
            .boxed(),
    }
}

fn stored_row(decl: &StreamDecl) -> BoxedStrategy<Row> {
    decl.fields
        .iter()
        .map(|field| stored(field.kind))
        .collect::<Vec<_>>()
        .boxed()
}

proptest! {
    /// The serializer accepts exactly the struct rows the old path accepted, in any declared
    /// order and with any kinds declared, and makes the same values of them.
    #[test]
    fn struct_rows_serialize_as_the_json_path_did(
        decl in shuffled(&READING, true),
        row in reading(true),
    ) {
        let old = oracle_to_row(&decl, &row);
        let new = ser::to_row(&decl, &row);
        match (&old, &new) {
            (Ok(old), Ok(new)) => prop_assert_eq!(old, new),
            (Err(_), Err(_)) => {}
            _ => prop_assert!(false, "the json path gave {old:?}, the serializer {new:?}"),
        }
    }

    /// So do map rows of loose values, under any declaration of their keys.
    #[test]
    fn map_rows_serialize_as_the_json_path_did(
        (decl, row) in shuffled(&KEYS, true).prop_flat_map(|decl| {
            let row = map_row(&decl);
            (Just(decl), row)
        }),
    ) {
        let old = oracle_to_row(&decl, &row);
        let new = ser::to_row(&decl, &row);
        match (&old, &new) {
            (Ok(old), Ok(new)) => prop_assert_eq!(old, new),
            (Err(_), Err(_)) => {}
            _ => prop_assert!(false, "the json path gave {old:?}, the serializer {new:?}"),
        }
    }

    /// The deserializer reads every stored row into a `Reading` just as the old path did, and
    /// refuses the rows it refused.
    #[test]
    fn stored_rows_deserialize_as_the_json_path_did(
        (decl, values) in shuffled(&READING, true)
            .prop_flat_map(|decl| { let row = stored_row(&decl); (Just(decl), row) }),
    ) {
        let old: Result<Reading, String> = oracle_from_row(&decl, values.clone());
        let new: Result<Reading, _> = de::from_row(&decl, values);
        match (&old, &new) {
            (Ok(old), Ok(new)) => prop_assert_eq!(old, new),
            (Err(_), Err(_)) => {}
            _ => prop_assert!(false, "the json path gave {old:?}, the deserializer {new:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// publish_as, a seal and query_as give back exactly the rows published, whatever order
    /// the stream declares their fields in.
    #[test]
    fn typed_rows_round_trip_through_a_store(
        decl in shuffled(&READING, false),
        rows in proptest::collection::vec(reading(false), 0..20),
    ) {
        let mut store = store_of(&decl);
        store.publish_as("s", 1, &rows).unwrap();
        store.seal().unwrap();
        let back: Vec<(u64, Reading)> = store.query_as("s", &[], ..).unwrap();
        prop_assert!(back.iter().all(|&(position, _)| position == 1));
        let back: Vec<Reading> = back.into_iter().map(|(_, row)| row).collect();
        prop_assert_eq!(back, rows);
    }
}

fn store_of(decl: &StreamDecl) -> Store {
    let stream = decl
        .fields
        .iter()
        .fold(Stream::new(decl.id.clone()), |stream, field| {
            stream.field(field.name.clone(), field.kind)
        })
        .build()
        .unwrap();
    Store::create_in(Arc::new(SimFs::new()), Config::default(), &[stream]).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Each refusal, by its words.

#[derive(Serialize)]
struct Weather {
    station: String,
    temp: f64,
}

fn weather() -> StreamDecl {
    decl(&[("station", FieldKind::Str), ("temp", FieldKind::F64)])
}

fn refusal<T: Serialize + ?Sized>(decl: &StreamDecl, row: &T) -> String {
    ser::to_row(decl, row).unwrap_err().to_string()
}

/// A map row given as pairs, so one key can come twice.
struct Pairs<'a>(&'a [(&'a str, f64)]);

impl Serialize for Pairs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}

#[test]
fn a_field_of_the_wrong_kind_is_named_with_both_kinds() {
    #[derive(Serialize)]
    struct Worded {
        station: String,
        temp: &'static str,
    }
    let row = Worded {
        station: "north".into(),
        temp: "warm",
    };
    assert_eq!(
        refusal(&weather(), &row),
        "field \"temp\" is declared as an f64 but the row gives a string"
    );
}

#[test]
fn an_unknown_field_is_named() {
    #[derive(Serialize)]
    struct Windy {
        station: String,
        temp: f64,
        wind: f64,
    }
    let row = Windy {
        station: "north".into(),
        temp: 1.0,
        wind: 2.0,
    };
    assert_eq!(
        refusal(&weather(), &row),
        "field \"wind\" is not declared by the stream"
    );
}

#[test]
fn a_missing_field_is_named_with_its_kind() {
    #[derive(Serialize)]
    struct Bare {
        station: String,
    }
    let row = Bare {
        station: "north".into(),
    };
    assert_eq!(
        refusal(&weather(), &row),
        "field \"temp\" (declared as an f64) is missing"
    );
}

#[test]
fn a_field_given_twice_is_refused() {
    let decl = decl(&[("a", FieldKind::F64), ("b", FieldKind::F64)]);
    let row = Pairs(&[("a", 1.0), ("b", 2.0), ("a", 3.0)]);
    assert_eq!(refusal(&decl, &row), "field \"a\" is given twice");
    // The old path kept the last of them; the new one accepts each field once.
    assert!(oracle_to_row(&decl, &row).is_ok());
}

#[test]
fn an_integer_out_of_its_fields_range_is_refused() {
    let decl = decl(&[("n", FieldKind::U64), ("m", FieldKind::I64)]);
    let mut row = BTreeMap::new();
    row.insert("n", -3i64);
    row.insert("m", 0);
    assert_eq!(
        refusal(&decl, &row),
        "field \"n\" is declared as a u64 but the row gives -3, out of its range"
    );
    let mut row = BTreeMap::new();
    row.insert("n", 0u64);
    row.insert("m", u64::MAX);
    assert_eq!(
        refusal(&decl, &row),
        format!(
            "field \"m\" is declared as an i64 but the row gives {}, out of its range",
            u64::MAX
        )
    );
    let mut row = BTreeMap::new();
    row.insert("n", 1u128 << 64);
    row.insert("m", 0);
    assert_eq!(
        refusal(&decl, &row),
        format!(
            "field \"n\" is declared as a u64 but the row gives {}, beyond 64 bits",
            1u128 << 64
        )
    );
}

#[test]
fn none_is_a_missing_number_and_refused_for_text() {
    let decl = decl(&[("n", FieldKind::U64), ("x", FieldKind::F64)]);
    let mut row = BTreeMap::new();
    row.insert("n", None::<u64>);
    row.insert("x", None::<u64>);
    assert_eq!(
        ser::to_row(&decl, &row).unwrap(),
        vec![Value::Null, Value::Null]
    );
    for kind in [FieldKind::Str, FieldKind::Bytes] {
        let decl = self::decl(&[("n", kind)]);
        let mut row = BTreeMap::new();
        row.insert("n", None::<u64>);
        let words = if kind == FieldKind::Str {
            "a str"
        } else {
            "a bytes"
        };
        assert_eq!(
            refusal(&decl, &row),
            format!("field \"n\" is declared as {words} but the row gives none")
        );
    }
}

#[test]
fn a_bytes_field_takes_a_sequence_of_bytes_only() {
    let decl = decl(&[("b", FieldKind::Bytes)]);
    let mut row = BTreeMap::new();
    row.insert("b", vec![1u16, 300]);
    assert_eq!(
        refusal(&decl, &row),
        "field \"b\" is declared as a bytes but the row gives a sequence holding 300, not a byte"
    );
    let mut row = BTreeMap::new();
    row.insert("b", vec![0.5f64]);
    assert_eq!(
        refusal(&decl, &row),
        "field \"b\" is declared as a bytes but the row gives a sequence holding the float 0.5"
    );
    let mut row = BTreeMap::new();
    row.insert("b", [7u8, 255]);
    assert_eq!(
        ser::to_row(&decl, &row).unwrap(),
        vec![Value::Bytes(vec![7, 255])]
    );
}

/// A row whose `bytes` field claims `usize::MAX` elements and gives two: the hint reserved
/// `usize::MAX` bytes and panicked ("capacity overflow"); the value is what was given.
#[test]
fn a_hostile_length_hint_does_not_size_an_allocation() {
    struct Liar(u8);
    impl serde::Serialize for Liar {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeSeq as _;
            let mut seq = serializer.serialize_seq(Some(usize::MAX))?;
            for byte in 1..=self.0 {
                seq.serialize_element(&byte)?;
            }
            seq.end()
        }
    }
    let decl = decl(&[("b", FieldKind::Bytes)]);
    let mut row = BTreeMap::new();
    row.insert("b", Liar(2));
    assert_eq!(
        ser::to_row(&decl, &row).unwrap(),
        vec![Value::Bytes(vec![1, 2])]
    );
}

/// A name that needs escaping is escaped in the refusal, as every other message does.
#[test]
fn a_field_name_in_a_refusal_is_escaped() {
    let decl = decl(&[("b", FieldKind::U64)]);
    let mut row = BTreeMap::new();
    row.insert("we\"ird\nkey", 1u64);
    assert_eq!(
        refusal(&decl, &row),
        "field \"we\\\"ird\\nkey\" is not declared by the stream"
    );
}

#[test]
fn a_tuple_row_gives_every_field_by_place() {
    let decl = weather();
    assert_eq!(
        ser::to_row(&decl, &("north", 1.5f32)).unwrap(),
        vec![Value::Str("north".into()), Value::F64(1.5)]
    );
    assert_eq!(
        refusal(&decl, &("north",)),
        "field \"temp\" (declared as an f64) is missing"
    );
    assert_eq!(
        refusal(&decl, &("north", 1.5, 2.5)),
        "the row gives more values than the stream's 2 declared fields"
    );
    assert_eq!(
        refusal(&decl, &(1.5, "north")),
        "field \"station\" is declared as a str but the row gives the float 1.5"
    );
}

#[test]
fn a_row_that_is_no_struct_map_or_tuple_is_refused() {
    assert_eq!(
        refusal(&weather(), &7u8),
        "the row is the integer 7, not a struct, map or tuple of the stream's fields"
    );
    assert_eq!(
        refusal(&weather(), &vec![1.0, 2.0]),
        "the row is a sequence, not a struct, map or tuple of the stream's fields"
    );
}

#[test]
fn a_map_key_that_cannot_name_a_field_is_refused() {
    let decl = decl(&[("1", FieldKind::U64)]);
    let mut row = BTreeMap::new();
    row.insert(1u8, 2u64);
    // An integer key names a field by its decimal text, as serde_json made it.
    assert_eq!(ser::to_row(&decl, &row).unwrap(), vec![Value::U64(2)]);
    let mut row = BTreeMap::new();
    row.insert(vec![1u8], 2u64);
    assert_eq!(
        refusal(&decl, &row),
        "a key of the row is a sequence, not a field's name"
    );
}

#[test]
fn a_failing_serialize_is_reported_in_its_own_words() {
    struct Broken;
    impl Serialize for Broken {
        fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("the sensor is unplugged"))
        }
    }
    assert_eq!(
        refusal(&weather(), &Broken),
        "the row does not serialize: the sensor is unplugged"
    );
}

#[test]
fn a_refused_row_refuses_its_batch_and_stages_nothing() {
    let mut store = store_of(&weather());
    let good = Weather {
        station: "north".into(),
        temp: 1.0,
    };
    store.publish_as("s", 1, &[good]).unwrap();
    let batch = vec![
        BTreeMap::from([
            ("station", Loose::S("south".into())),
            ("temp", Loose::F(2.0)),
        ]),
        BTreeMap::from([
            ("station", Loose::S("east".into())),
            ("temp", Loose::Flag(true)),
        ]),
    ];
    let error = store.publish_as("s", 2, &batch).unwrap_err();
    assert!(
        matches!(&error, EngineError::Refused { row_idx: 1, reason, .. }
            if reason == "field \"temp\" is declared as an f64 but the row gives a bool"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("nothing of the batch was staged"),
        "{error}"
    );
    store.seal().unwrap();
    let back: Vec<(u64, (String, f64))> = store.query_as("s", &[], ..).unwrap();
    assert_eq!(back, vec![(1, ("north".to_owned(), 1.0))]);
}

#[test]
fn a_row_publish_refuses_refuses_its_batch_and_stages_nothing() {
    #[derive(Serialize)]
    struct Timed {
        t: Option<u64>,
        temp: Option<f64>,
    }
    // The serializer takes a missing axis (None is a missing number); publish itself refuses
    // it, in its words, and the batch with it.
    let stream = Stream::new("s")
        .field("t", FieldKind::U64)
        .field("temp", FieldKind::F64)
        .axis("t")
        .build()
        .unwrap();
    let mut store = Store::create_in(Arc::new(SimFs::new()), Config::default(), &[stream]).unwrap();
    let batch = [
        Timed {
            t: Some(1),
            temp: None,
        },
        Timed {
            t: None,
            temp: Some(2.0),
        },
    ];
    let error = store.publish_as("s", 1, &batch).unwrap_err();
    assert!(
        matches!(&error, EngineError::Refused { row_idx: 1, reason, .. }
            if reason == "field \"t\" is missing, and it is the axis: every row needs one"),
        "{error}"
    );
    store.publish_as("s", 1, &batch[..1]).unwrap();
    store.seal().unwrap();
    let back: Vec<(u64, (u64, Option<f64>))> = store.query_as("s", &[], ..).unwrap();
    assert_eq!(back, vec![(1, (1, None))]);
}

// ---------------------------------------------------------------------------------------------
// Reading back.

#[test]
fn a_stored_row_that_does_not_fit_names_the_field() {
    #[derive(Deserialize, Debug)]
    struct Counted {
        #[expect(dead_code, reason = "read only to be refused")]
        temp: u8,
    }
    let decl = weather();
    let values = vec![Value::Str("north".into()), Value::F64(1.5)];
    let error = de::from_row::<Counted>(&decl, values).unwrap_err();
    assert_eq!(
        error.to_string(),
        "field \"temp\": invalid type: floating point `1.5`, expected u8"
    );
}

#[test]
fn a_type_may_read_some_fields_by_name_or_all_by_place() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Temp {
        temp: f64,
    }
    let decl = weather();
    let values = || vec![Value::Str("north".into()), Value::F64(1.5)];
    assert_eq!(
        de::from_row::<Temp>(&decl, values()).unwrap(),
        Temp { temp: 1.5 }
    );
    assert_eq!(
        de::from_row::<(String, f64)>(&decl, values()).unwrap(),
        ("north".to_owned(), 1.5)
    );
    let error = de::from_row::<(String,)>(&decl, values()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the stream declares 2 fields but the type reads 1 of them by place"
    );
    let as_map: BTreeMap<String, serde_json::Value> = de::from_row(&decl, values()).unwrap();
    assert_eq!(as_map["temp"], serde_json::json!(1.5));
}

#[test]
fn a_query_as_that_does_not_fit_is_a_bad_read_naming_position_and_field() {
    let mut store = store_of(&weather());
    let row = Weather {
        station: "north".into(),
        temp: 1.5,
    };
    store.publish_as("s", 4, &[row]).unwrap();
    store.seal().unwrap();
    let error = store.query_as::<(String, u8)>("s", &[], ..).unwrap_err();
    assert!(matches!(error, EngineError::BadRead { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        "cannot read: the stored row at position 4 does not deserialize: field \"temp\": \
         invalid type: floating point `1.5`, expected u8"
    );
}
