//! Typed rows out: a `serde::Deserializer` over a stored row's values and the declaration, so a
//! `T` is built from the values themselves, field by field in declaration order.
//!
//! Each value is offered as its kind (`deserialize_any`): a u64 as a u64, an f64 as an f64, a
//! str as a string, bytes as a sequence of u8 (or as bytes, to a type that asks for bytes) — as
//! the former path through `serde_json::Value` offered them, so the same types read back.

use std::fmt;

use serde::de::value::{SeqDeserializer, StringDeserializer};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde::forward_to_deserialize_any;
use strata_index::{FieldDecl, StreamDecl};

use crate::value::{Row, Value};

/// A stored row as `T`.
pub(crate) fn from_row<T: DeserializeOwned>(decl: &StreamDecl, values: Row) -> Result<T, Fault> {
    assert_eq!(values.len(), decl.fields.len(), "a stored value per field");
    T::deserialize(RowDeserializer {
        fields: &decl.fields,
        values,
    })
}

/// Why a stored row does not make a `T`, and in which field.
#[derive(Debug)]
pub(crate) struct Fault {
    field: Option<String>,
    message: String,
}

impl Fault {
    fn in_field(mut self, field: &FieldDecl) -> Fault {
        self.field.get_or_insert_with(|| field.name.clone());
        self
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "field {field:?}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Fault {}

impl de::Error for Fault {
    fn custom<T: fmt::Display>(message: T) -> Fault {
        Fault {
            field: None,
            message: message.to_string(),
        }
    }
}

/// A whole row: a map of its fields by name, or a sequence of its values by place.
struct RowDeserializer<'d> {
    fields: &'d [FieldDecl],
    values: Row,
}

impl<'de> de::Deserializer<'de> for RowDeserializer<'_> {
    type Error = Fault;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        self.deserialize_map(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        visitor.visit_map(Fields {
            decls: self.fields.iter(),
            values: self.values.into_iter(),
            keyed: None,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Fault> {
        self.deserialize_map(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        let n_fields = self.fields.len();
        let mut places = Fields {
            decls: self.fields.iter(),
            values: self.values.into_iter(),
            keyed: None,
        };
        let typed = visitor.visit_seq(&mut places)?;
        let n_left = places.values.len();
        if n_left > 0 {
            return Err(de::Error::custom(format!(
                "the stream declares {n_fields} fields but the type reads {} of them by place",
                n_fields - n_left
            )));
        }
        Ok(typed)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Fault> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Fault> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Fault> {
        visitor.visit_newtype_struct(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct enum identifier ignored_any
    }
}

/// A row's fields in declaration order: as a map, each keyed by its name; as a sequence, by
/// place. Either way an error is told which field it came from.
struct Fields<'d> {
    decls: std::slice::Iter<'d, FieldDecl>,
    values: std::vec::IntoIter<Value>,
    /// The field whose name was last handed out, for the value that follows it.
    keyed: Option<&'d FieldDecl>,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = Fault;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Fault> {
        let Some(field) = self.decls.next() else {
            return Ok(None);
        };
        self.keyed = Some(field);
        let name: de::value::StrDeserializer<'_, Fault> = field.name.as_str().into_deserializer();
        seed.deserialize(name).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Fault> {
        // serde's contract asks a key before each value; a `Deserialize` of the caller's own
        // that breaks it is refused, not trusted.
        let field = self
            .keyed
            .take()
            .ok_or_else(|| de::Error::custom("a value was asked for without its key"))?;
        let value = self.values.next().expect("a stored value per field");
        seed.deserialize(ValueDeserializer(value))
            .map_err(|e| e.in_field(field))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.decls.len())
    }
}

impl<'de> SeqAccess<'de> for Fields<'_> {
    type Error = Fault;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Fault> {
        let (Some(field), Some(value)) = (self.decls.next(), self.values.next()) else {
            return Ok(None);
        };
        seed.deserialize(ValueDeserializer(value))
            .map(Some)
            .map_err(|e| e.in_field(field))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.values.len())
    }
}

/// One stored value, offered as its kind.
struct ValueDeserializer(Value);

impl<'de> de::Deserializer<'de> for ValueDeserializer {
    type Error = Fault;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        match self.0 {
            Value::U64(v) => visitor.visit_u64(v),
            Value::I64(v) => visitor.visit_i64(v),
            Value::F64(v) => visitor.visit_f64(v),
            Value::Str(v) => visitor.visit_string(v),
            Value::Bytes(v) => {
                let mut bytes = SeqDeserializer::<_, Fault>::new(v.into_iter());
                let typed = visitor.visit_seq(&mut bytes)?;
                bytes.end()?;
                Ok(typed)
            }
            Value::Null => visitor.visit_none(),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        match self.0 {
            Value::Bytes(v) => visitor.visit_byte_buf(v),
            other => ValueDeserializer(other).deserialize_any(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Fault> {
        visitor.visit_newtype_struct(self)
    }

    /// A unit variant is stored by its name in a `str` field (as `publish_as` writes it).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Fault> {
        match self.0 {
            Value::Str(v) => {
                let variant: StringDeserializer<Fault> = v.into_deserializer();
                visitor.visit_enum(variant)
            }
            other => ValueDeserializer(other).deserialize_any(visitor),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Fault> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        unit unit_struct seq tuple tuple_struct map struct identifier
    }
}
