//! Typed rows in: a `serde::Serializer` that writes a row's fields straight into its values in
//! declaration order, checking each field's name and kind against the declaration as it goes.
//!
//! What it accepts is what the former path through `serde_json::Value` accepted (the tests keep
//! that path as an oracle), except where that path was wrong: a field given twice was taken
//! from its last value, a tuple row was refused, and a NaN was refused as "null" rather than
//! by publish's own check (CHANGELOG.md).

use std::fmt;

use serde::ser::{self, Impossible, Serialize};
use strata_index::{FieldDecl, FieldKind, StreamDecl};

use crate::value::{Row, Value};

/// The most bytes a `bytes` field's length hint may reserve up front; past it the vector grows
/// as the elements come, so a hostile hint (`usize::MAX`) costs nothing.
const BYTES_HINT_MAX: usize = 4096;

/// A typed row as values, in declaration order, or what is wrong with it.
pub(crate) fn to_row<T: Serialize + ?Sized>(decl: &StreamDecl, row: &T) -> Result<Row, Fault> {
    let values = row.serialize(RowSerializer { decl })?;
    assert_eq!(values.len(), decl.fields.len(), "a value for every field");
    Ok(values)
}

/// What is wrong with a typed row; its text is the reason a refusal gives.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Fault {
    /// The row names a field the stream does not declare.
    Unknown { field: String },
    /// The row leaves out a declared field.
    Missing { field: String, kind: FieldKind },
    /// The row gives one field twice (a map, or a flattened struct, can).
    Twice { field: String },
    /// The row gives a field a value its kind does not take.
    Kind {
        field: String,
        kind: FieldKind,
        given: String,
    },
    /// A tuple row holds more values than the stream declares fields.
    Extra { n_fields: usize },
    /// A map row has a key that cannot be a field's name.
    Key { given: String },
    /// The row is not a struct, map or tuple.
    NotARow { given: String },
    /// The row's own `Serialize` failed.
    Custom(String),
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Unknown { field } => {
                write!(f, "field {field:?} is not declared by the stream")
            }
            Fault::Missing { field, kind } => {
                write!(
                    f,
                    "field {field:?} (declared as {}) is missing",
                    kind.with_article()
                )
            }
            Fault::Twice { field } => write!(f, "field {field:?} is given twice"),
            Fault::Kind { field, kind, given } => {
                write!(
                    f,
                    "field {field:?} is declared as {} but the row gives {given}",
                    kind.with_article()
                )
            }
            Fault::Extra { n_fields } => write!(
                f,
                "the row gives more values than the stream's {n_fields} declared fields"
            ),
            Fault::Key { given } => {
                write!(f, "a key of the row is {given}, not a field's name")
            }
            Fault::NotARow { given } => write!(
                f,
                "the row is {given}, not a struct, map or tuple of the stream's fields"
            ),
            Fault::Custom(message) => write!(f, "the row does not serialize: {message}"),
        }
    }
}

impl std::error::Error for Fault {}

impl ser::Error for Fault {
    fn custom<T: fmt::Display>(message: T) -> Fault {
        Fault::Custom(message.to_string())
    }
}

/// The serializer of a whole row: a struct, map, tuple or tuple struct, or one wrapped in
/// `Some` or a newtype.
struct RowSerializer<'d> {
    decl: &'d StreamDecl,
}

impl RowSerializer<'_> {
    fn not_a_row<T>(given: impl Into<String>) -> Result<T, Fault> {
        Err(Fault::NotARow {
            given: given.into(),
        })
    }
}

impl<'d> ser::Serializer for RowSerializer<'d> {
    type Ok = Row;
    type Error = Fault;
    type SerializeSeq = Impossible<Row, Fault>;
    type SerializeTuple = Places<'d>;
    type SerializeTupleStruct = Places<'d>;
    type SerializeTupleVariant = Impossible<Row, Fault>;
    type SerializeMap = Names<'d>;
    type SerializeStruct = Names<'d>;
    type SerializeStructVariant = Impossible<Row, Fault>;

    fn serialize_bool(self, _: bool) -> Result<Row, Fault> {
        Self::not_a_row("a bool")
    }
    fn serialize_i8(self, v: i8) -> Result<Row, Fault> {
        self.serialize_i128(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<Row, Fault> {
        self.serialize_i128(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<Row, Fault> {
        self.serialize_i128(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<Row, Fault> {
        self.serialize_i128(v.into())
    }
    fn serialize_i128(self, v: i128) -> Result<Row, Fault> {
        Self::not_a_row(format!("the integer {v}"))
    }
    fn serialize_u8(self, v: u8) -> Result<Row, Fault> {
        self.serialize_u128(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<Row, Fault> {
        self.serialize_u128(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<Row, Fault> {
        self.serialize_u128(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<Row, Fault> {
        self.serialize_u128(v.into())
    }
    fn serialize_u128(self, v: u128) -> Result<Row, Fault> {
        Self::not_a_row(format!("the integer {v}"))
    }
    fn serialize_f32(self, v: f32) -> Result<Row, Fault> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<Row, Fault> {
        Self::not_a_row(format!("the float {v}"))
    }
    fn serialize_char(self, _: char) -> Result<Row, Fault> {
        Self::not_a_row("a char")
    }
    fn serialize_str(self, _: &str) -> Result<Row, Fault> {
        Self::not_a_row("a string")
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<Row, Fault> {
        Self::not_a_row("bytes")
    }
    fn serialize_none(self) -> Result<Row, Fault> {
        Self::not_a_row("none")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, row: &T) -> Result<Row, Fault> {
        row.serialize(self)
    }
    fn serialize_unit(self) -> Result<Row, Fault> {
        Self::not_a_row("a unit")
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<Row, Fault> {
        Self::not_a_row(format!("the unit struct {name}"))
    }
    fn serialize_unit_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Row, Fault> {
        Self::not_a_row(format!("the enum variant {name}::{variant}"))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        row: &T,
    ) -> Result<Row, Fault> {
        row.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: &T,
    ) -> Result<Row, Fault> {
        Self::not_a_row(format!("the enum variant {name}::{variant}"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Fault> {
        Self::not_a_row("a sequence")
    }
    fn serialize_tuple(self, _: usize) -> Result<Places<'d>, Fault> {
        Ok(Places::new(self.decl))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Places<'d>, Fault> {
        Ok(Places::new(self.decl))
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Fault> {
        Self::not_a_row(format!("the enum variant {name}::{variant}"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Names<'d>, Fault> {
        Ok(Names::new(self.decl))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Names<'d>, Fault> {
        Ok(Names::new(self.decl))
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Fault> {
        Self::not_a_row(format!("the enum variant {name}::{variant}"))
    }
}

/// A row whose fields come by name (a struct or a map), in any order.
struct Names<'d> {
    fields: &'d [FieldDecl],
    /// One slot per declared field, filled as the row names them.
    slots: Vec<Option<Value>>,
    /// Where the next field is looked for first: rows mostly give their fields in declaration
    /// order, so this finds each without a search.
    next_idx: usize,
    /// The field a map's key named, awaiting its value.
    keyed_idx: Option<usize>,
}

impl<'d> Names<'d> {
    fn new(decl: &'d StreamDecl) -> Names<'d> {
        Names {
            fields: &decl.fields,
            slots: vec![None; decl.fields.len()],
            next_idx: 0,
            keyed_idx: None,
        }
    }

    /// The index of the declared field `name`, which the row has not given yet.
    fn index_of(&mut self, name: &str) -> Result<usize, Fault> {
        let field_idx = if self
            .fields
            .get(self.next_idx)
            .is_some_and(|f| f.name == name)
        {
            self.next_idx
        } else {
            self.fields
                .iter()
                .position(|f| f.name == name)
                .ok_or_else(|| Fault::Unknown {
                    field: name.to_owned(),
                })?
        };
        if self.slots[field_idx].is_some() {
            return Err(Fault::Twice {
                field: name.to_owned(),
            });
        }
        self.next_idx = field_idx + 1;
        Ok(field_idx)
    }

    fn put<T: Serialize + ?Sized>(&mut self, field_idx: usize, value: &T) -> Result<(), Fault> {
        let value = value.serialize(FieldSerializer::of(&self.fields[field_idx]))?;
        assert!(self.slots[field_idx].is_none(), "each field is put once");
        self.slots[field_idx] = Some(value);
        Ok(())
    }

    fn finish(self) -> Result<Row, Fault> {
        if let Some(field_idx) = self.slots.iter().position(Option::is_none) {
            let field = &self.fields[field_idx];
            return Err(Fault::Missing {
                field: field.name.clone(),
                kind: field.kind,
            });
        }
        Ok(self.slots.into_iter().flatten().collect())
    }
}

impl ser::SerializeStruct for Names<'_> {
    type Ok = Row;
    type Error = Fault;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Fault> {
        let field_idx = self.index_of(name)?;
        self.put(field_idx, value)
    }

    fn end(self) -> Result<Row, Fault> {
        self.finish()
    }
}

impl ser::SerializeMap for Names<'_> {
    type Ok = Row;
    type Error = Fault;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Fault> {
        let field_idx = key.serialize(KeySerializer { names: self })?;
        self.keyed_idx = Some(field_idx);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Fault> {
        // serde's contract puts a key before each value; a `Serialize` of the caller's own
        // that breaks it is refused, not trusted.
        let field_idx = self
            .keyed_idx
            .take()
            .ok_or_else(|| Fault::Custom("a map value came without its key".into()))?;
        self.put(field_idx, value)
    }

    fn end(self) -> Result<Row, Fault> {
        self.finish()
    }
}

/// A row whose fields come by place (a tuple or tuple struct), in declaration order.
struct Places<'d> {
    fields: &'d [FieldDecl],
    values: Row,
}

impl<'d> Places<'d> {
    fn new(decl: &'d StreamDecl) -> Places<'d> {
        Places {
            fields: &decl.fields,
            values: Vec::with_capacity(decl.fields.len()),
        }
    }

    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Fault> {
        let field = self.fields.get(self.values.len()).ok_or(Fault::Extra {
            n_fields: self.fields.len(),
        })?;
        self.values
            .push(value.serialize(FieldSerializer::of(field))?);
        Ok(())
    }

    fn finish(self) -> Result<Row, Fault> {
        if let Some(field) = self.fields.get(self.values.len()) {
            return Err(Fault::Missing {
                field: field.name.clone(),
                kind: field.kind,
            });
        }
        Ok(self.values)
    }
}

impl ser::SerializeTuple for Places<'_> {
    type Ok = Row;
    type Error = Fault;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Fault> {
        self.push(value)
    }

    fn end(self) -> Result<Row, Fault> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Places<'_> {
    type Ok = Row;
    type Error = Fault;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Fault> {
        self.push(value)
    }

    fn end(self) -> Result<Row, Fault> {
        self.finish()
    }
}

/// The serializer of a map's key: a field's name, as a string, a char, an integer in decimal
/// or a unit enum variant (as `serde_json` made keys of them).
struct KeySerializer<'a, 'd> {
    names: &'a mut Names<'d>,
}

impl KeySerializer<'_, '_> {
    fn bad<T>(given: impl Into<String>) -> Result<T, Fault> {
        Err(Fault::Key {
            given: given.into(),
        })
    }
}

impl ser::Serializer for KeySerializer<'_, '_> {
    type Ok = usize;
    type Error = Fault;
    type SerializeSeq = Impossible<usize, Fault>;
    type SerializeTuple = Impossible<usize, Fault>;
    type SerializeTupleStruct = Impossible<usize, Fault>;
    type SerializeTupleVariant = Impossible<usize, Fault>;
    type SerializeMap = Impossible<usize, Fault>;
    type SerializeStruct = Impossible<usize, Fault>;
    type SerializeStructVariant = Impossible<usize, Fault>;

    fn serialize_bool(self, _: bool) -> Result<usize, Fault> {
        Self::bad("a bool")
    }
    fn serialize_i8(self, v: i8) -> Result<usize, Fault> {
        self.serialize_i128(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<usize, Fault> {
        self.serialize_i128(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<usize, Fault> {
        self.serialize_i128(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<usize, Fault> {
        self.serialize_i128(v.into())
    }
    fn serialize_i128(self, v: i128) -> Result<usize, Fault> {
        self.names.index_of(&v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<usize, Fault> {
        self.serialize_u128(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<usize, Fault> {
        self.serialize_u128(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<usize, Fault> {
        self.serialize_u128(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<usize, Fault> {
        self.serialize_u128(v.into())
    }
    fn serialize_u128(self, v: u128) -> Result<usize, Fault> {
        self.names.index_of(&v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<usize, Fault> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<usize, Fault> {
        Self::bad(format!("the float {v}"))
    }
    fn serialize_char(self, v: char) -> Result<usize, Fault> {
        self.names.index_of(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<usize, Fault> {
        self.names.index_of(v)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<usize, Fault> {
        Self::bad("bytes")
    }
    fn serialize_none(self) -> Result<usize, Fault> {
        Self::bad("none")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<usize, Fault> {
        Self::bad("an option")
    }
    fn serialize_unit(self) -> Result<usize, Fault> {
        Self::bad("a unit")
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<usize, Fault> {
        Self::bad(format!("the unit struct {name}"))
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<usize, Fault> {
        self.names.index_of(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        key: &T,
    ) -> Result<usize, Fault> {
        key.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: &T,
    ) -> Result<usize, Fault> {
        Self::bad(format!("the enum variant {name}::{variant}"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Fault> {
        Self::bad("a sequence")
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Fault> {
        Self::bad("a tuple")
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Fault> {
        Self::bad(format!("the tuple struct {name}"))
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Fault> {
        Self::bad(format!("the enum variant {name}::{variant}"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Fault> {
        Self::bad("a map")
    }
    fn serialize_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Fault> {
        Self::bad(format!("the struct {name}"))
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Fault> {
        Self::bad(format!("the enum variant {name}::{variant}"))
    }
}

/// The serializer of one field's value, which its declared kind must take.
struct FieldSerializer<'d> {
    name: &'d str,
    kind: FieldKind,
}

impl<'d> FieldSerializer<'d> {
    fn of(field: &'d FieldDecl) -> FieldSerializer<'d> {
        FieldSerializer {
            name: &field.name,
            kind: field.kind,
        }
    }

    fn wrong<T>(&self, given: impl Into<String>) -> Result<T, Fault> {
        Err(Fault::Kind {
            field: self.name.to_owned(),
            kind: self.kind,
            given: given.into(),
        })
    }
}

impl<'d> ser::Serializer for FieldSerializer<'d> {
    type Ok = Value;
    type Error = Fault;
    type SerializeSeq = ByteSeq<'d>;
    type SerializeTuple = ByteSeq<'d>;
    type SerializeTupleStruct = ByteSeq<'d>;
    type SerializeTupleVariant = Impossible<Value, Fault>;
    type SerializeMap = Impossible<Value, Fault>;
    type SerializeStruct = Impossible<Value, Fault>;
    type SerializeStructVariant = Impossible<Value, Fault>;

    fn serialize_bool(self, _: bool) -> Result<Value, Fault> {
        self.wrong("a bool")
    }
    fn serialize_i8(self, v: i8) -> Result<Value, Fault> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<Value, Fault> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<Value, Fault> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<Value, Fault> {
        match self.kind {
            FieldKind::U64 => match u64::try_from(v) {
                Ok(v) => Ok(Value::U64(v)),
                Err(_) => self.wrong(format!("{v}, out of its range")),
            },
            FieldKind::I64 => Ok(Value::I64(v)),
            // As `serde_json` did: the nearest f64, exact up to 2^53.
            FieldKind::F64 => Ok(Value::F64(v as f64)),
            _ => self.wrong(format!("the integer {v}")),
        }
    }
    fn serialize_i128(self, v: i128) -> Result<Value, Fault> {
        if let Ok(v) = i64::try_from(v) {
            self.serialize_i64(v)
        } else if let Ok(v) = u64::try_from(v) {
            self.serialize_u64(v)
        } else {
            self.wrong(format!("{v}, beyond 64 bits"))
        }
    }
    fn serialize_u8(self, v: u8) -> Result<Value, Fault> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<Value, Fault> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<Value, Fault> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<Value, Fault> {
        match self.kind {
            FieldKind::U64 => Ok(Value::U64(v)),
            FieldKind::I64 => match i64::try_from(v) {
                Ok(v) => Ok(Value::I64(v)),
                Err(_) => self.wrong(format!("{v}, out of its range")),
            },
            FieldKind::F64 => Ok(Value::F64(v as f64)),
            _ => self.wrong(format!("the integer {v}")),
        }
    }
    fn serialize_u128(self, v: u128) -> Result<Value, Fault> {
        match u64::try_from(v) {
            Ok(v) => self.serialize_u64(v),
            Err(_) => self.wrong(format!("{v}, beyond 64 bits")),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<Value, Fault> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<Value, Fault> {
        // A NaN or an infinity passes here: publish refuses it, and says so.
        match self.kind {
            FieldKind::F64 => Ok(Value::F64(v)),
            _ => self.wrong(format!("the float {v}")),
        }
    }
    fn serialize_char(self, v: char) -> Result<Value, Fault> {
        match self.kind {
            FieldKind::Str => Ok(Value::Str(v.to_string())),
            _ => self.wrong("a char"),
        }
    }
    fn serialize_str(self, v: &str) -> Result<Value, Fault> {
        match self.kind {
            FieldKind::Str => Ok(Value::Str(v.to_owned())),
            _ => self.wrong("a string"),
        }
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, Fault> {
        match self.kind {
            FieldKind::Bytes => Ok(Value::Bytes(v.to_vec())),
            _ => self.wrong("bytes"),
        }
    }
    fn serialize_none(self) -> Result<Value, Fault> {
        // A missing value: publish takes it in a measured field and refuses it elsewhere.
        match self.kind {
            FieldKind::U64 | FieldKind::I64 | FieldKind::F64 => Ok(Value::Null),
            _ => self.wrong("none"),
        }
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, Fault> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, Fault> {
        self.wrong("a unit")
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<Value, Fault> {
        self.wrong(format!("the unit struct {name}"))
    }
    fn serialize_unit_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Value, Fault> {
        match self.kind {
            FieldKind::Str => Ok(Value::Str(variant.to_owned())),
            _ => self.wrong(format!("the enum variant {name}::{variant}")),
        }
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Value, Fault> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: &T,
    ) -> Result<Value, Fault> {
        self.wrong(format!("the enum variant {name}::{variant}"))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<ByteSeq<'d>, Fault> {
        self.bytes(len.unwrap_or(0), "a sequence")
    }
    fn serialize_tuple(self, len: usize) -> Result<ByteSeq<'d>, Fault> {
        self.bytes(len, "a tuple")
    }
    fn serialize_tuple_struct(self, name: &'static str, len: usize) -> Result<ByteSeq<'d>, Fault> {
        self.bytes(len, &format!("the tuple struct {name}"))
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Fault> {
        self.wrong(format!("the enum variant {name}::{variant}"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Fault> {
        self.wrong("a map")
    }
    fn serialize_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Fault> {
        self.wrong(format!("the struct {name}"))
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Fault> {
        self.wrong(format!("the enum variant {name}::{variant}"))
    }
}

impl<'d> FieldSerializer<'d> {
    /// A sequence is a `bytes` field's value when each of its elements is a byte.
    fn bytes(self, len: usize, given: &str) -> Result<ByteSeq<'d>, Fault> {
        match self.kind {
            FieldKind::Bytes => Ok(ByteSeq {
                name: self.name,
                // The length is the row's hint, not a fact: a hostile one must not size an
                // allocation (the bytes grow as they come).
                bytes: Vec::with_capacity(len.min(BYTES_HINT_MAX)),
            }),
            _ => self.wrong(given),
        }
    }
}

/// A sequence of integers 0..=255 becoming a `bytes` field's value.
struct ByteSeq<'d> {
    name: &'d str,
    bytes: Vec<u8>,
}

impl ByteSeq<'_> {
    fn push<T: Serialize + ?Sized>(&mut self, element: &T) -> Result<(), Fault> {
        let holding = |given: String| Fault::Kind {
            field: self.name.to_owned(),
            kind: FieldKind::Bytes,
            given: format!("a sequence holding {given}"),
        };
        // An element is read as a u64 field would read it, then narrowed to a byte.
        let as_u64 = FieldSerializer {
            name: self.name,
            kind: FieldKind::U64,
        };
        match element.serialize(as_u64) {
            Ok(Value::U64(v)) => {
                let byte = u8::try_from(v).map_err(|_| holding(format!("{v}, not a byte")))?;
                self.bytes.push(byte);
                Ok(())
            }
            Ok(other) => unreachable!("a u64 field's serializer made {other:?}"),
            Err(Fault::Kind { given, .. }) => Err(holding(given)),
            Err(other) => Err(other),
        }
    }
}

impl ser::SerializeSeq for ByteSeq<'_> {
    type Ok = Value;
    type Error = Fault;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, element: &T) -> Result<(), Fault> {
        self.push(element)
    }

    fn end(self) -> Result<Value, Fault> {
        Ok(Value::Bytes(self.bytes))
    }
}

impl ser::SerializeTuple for ByteSeq<'_> {
    type Ok = Value;
    type Error = Fault;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, element: &T) -> Result<(), Fault> {
        self.push(element)
    }

    fn end(self) -> Result<Value, Fault> {
        Ok(Value::Bytes(self.bytes))
    }
}

impl ser::SerializeTupleStruct for ByteSeq<'_> {
    type Ok = Value;
    type Error = Fault;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, element: &T) -> Result<(), Fault> {
        self.push(element)
    }

    fn end(self) -> Result<Value, Fault> {
        Ok(Value::Bytes(self.bytes))
    }
}
